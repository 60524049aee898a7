/* serve.c - requests answered by the engine thread.
 *
 * encore_submit checks and encodes a request on the caller's thread, then
 * puts it in the inbox; encore_cancel puts an id in the cancel list. The
 * engine thread (started by the first submit) loops:
 *
 *   take the inbox and the cancels (under mu)
 *   add the new requests to the engine; abort the cancelled ones
 *   engine_step while any request is in the engine
 *   for each request with new ids or finished: text, stop strings, callback;
 *     a finished one is released from the engine (its KV blocks return)
 *   publish the stats snapshot (under mu)
 *
 * and sleeps on `wake` when it has nothing to do. A failed step ends every
 * request in the engine with "error" (a cancel or shutdown gives "abort").
 * ENCORE_FAULT_STEPS=N (tests) makes the thread's first N steps fail as a
 * failing backend would; ENCORE_STEP_DELAY_MS=MS (tests) makes every step
 * sleep MS first, as a slow backend would. Callbacks run without mu,
 * so they may call encore_cancel; a cancel takes effect before the next step.
 * encore_generate_ids is a submit and a wait on the caller's thread. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_impl.h"
#include "api/bad_words.h"
#include "api/text_out.h"
#include "api/token_mask.h"
#include "base/log.h"
#include "base/random_seed.h"

struct api_request {
    int64_t id;                   /* the API's id */
    int64_t engine_id;            /* the engine's, once added */
    encore_output_fn fn;
    void *user;
    engine_request_params params; /* prompt_ids = prompt until the engine copies it */
    int32_t *prompt;              /* [params.n_prompt], freed once added */
    int32_t stop_ids[ENGINE_MAX_STOP_IDS];
    graph_sample_bias *logit_bias; /* [params.sampling.n_logit_bias] the request's copy */
    int64_t min_tokens;           /* no stop string matches before this many tokens */
    text_out text;
    int64_t n_seen;               /* generated ids already delivered */
    engine_constraint constraint; /* structured output: params.constraint points here */
    bool owns_constraint;         /* its state is still ours (not yet the engine's) */
    api_request *next;
};

static void serve__request_free(api_request *r)
{
    if (!r) return;
    if (r->owns_constraint && r->constraint.destroy) r->constraint.destroy(r->constraint.state);
    free(r->prompt);
    free(r->logit_bias);
    text_out_free(&r->text);
    free(r);
}

/* --- submitting (any thread) ------------------------------------------------ */

/* What engine_check_request does not check: stop strings and the range of
 * stop ids. Messages name the field. */
static enc_status serve__check_sampling(const encore_sampling *s, int64_t vocab)
{
    if (s->n_stop && !s->stop)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: sampling.stop is NULL with n_stop %zu", s->n_stop);
    for (size_t i = 0; i < s->n_stop; i++)
        if (!s->stop[i] || !s->stop[i][0])
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: sampling.stop[%zu] is empty", i);
    if (s->n_stop_token_ids > ENGINE_MAX_STOP_IDS || (s->n_stop_token_ids && !s->stop_token_ids))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: %zu sampling.stop_token_ids (at most %d)",
                        s->n_stop_token_ids, ENGINE_MAX_STOP_IDS);
    for (size_t i = 0; i < s->n_stop_token_ids; i++)
        if (s->stop_token_ids[i] < 0 || s->stop_token_ids[i] >= vocab)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                            "request: sampling.stop_token_ids[%zu] is %d, outside the vocabulary [0, %lld)", i,
                            s->stop_token_ids[i], (long long)vocab);
    if (s->n_logit_bias && !s->logit_bias)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: sampling.logit_bias is NULL with n_logit_bias %zu",
                        s->n_logit_bias);
    if (s->n_logit_bias > ENCORE_MAX_LOGIT_BIAS)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: %zu sampling.logit_bias entries (at most %d)", s->n_logit_bias,
                        ENCORE_MAX_LOGIT_BIAS);
    return ENC_OK;
}

/* The request's logit bias in the engine's form (ids and ranges are checked
 * by engine_check_request). */
static enc_status serve__logit_bias(const encore_sampling *s, graph_sample_bias **out)
{
    _Static_assert(ENCORE_MAX_LOGIT_BIAS == (int)ENGINE_MAX_LOGIT_BIAS,
                   "the API's and the engine's limits");
    *out = NULL;
    if (!s->n_logit_bias) return ENC_OK;
    graph_sample_bias *b = malloc(s->n_logit_bias * sizeof *b);
    if (!b) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request: logit_bias");
    for (size_t i = 0; i < s->n_logit_bias; i++)
        b[i] = (graph_sample_bias){s->logit_bias[i].id, s->logit_bias[i].bias};
    *out = b;
    return ENC_OK;
}

/* The prompt as ids: encoded text, or a copy of the ids. */
static enc_status serve__prompt(encore_engine *e, const encore_request *r, int32_t **ids, size_t *n)
{
    if (r->prompt) {
        if (!e->tok)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: a text prompt needs a tokenizer, and the model %s "
                            "has no tokenizer.json (give prompt_ids)", e->name);
        pthread_mutex_lock(&e->tok_mu);
        enc_status s = tokenizer_encode(e->tok, r->prompt, strlen(r->prompt), ids, n);
        pthread_mutex_unlock(&e->tok_mu);
        return s == ENC_OK ? ENC_OK : enc_fail_context(s, "request: prompt");
    }
    if (!r->prompt_ids || r->n_prompt_ids == 0)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: the prompt is empty (neither prompt nor prompt_ids)");
    *n = r->n_prompt_ids;
    *ids = malloc(*n * sizeof **ids);
    if (!*ids) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request: prompt of %zu ids", *n);
    memcpy(*ids, r->prompt_ids, *n * sizeof **ids);
    return ENC_OK;
}

/* A pooling engine's request: its prompt, nothing to generate (the
 * sampling and constraints are not read). */
static enc_status serve__pooling_request_create(encore_engine *e, const encore_request *r,
                                                api_request **out)
{
    api_request *q = calloc(1, sizeof *q);
    if (!q) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request");
    q->text.matched = -1;
    size_t n_prompt = 0;
    enc_status s = serve__prompt(e, r, &q->prompt, &n_prompt);
    q->params = (engine_request_params){.prompt_ids = q->prompt, .n_prompt = (int64_t)n_prompt};
    if (s == ENC_OK) s = engine_check_request(e->eng, &q->params);
    if (s == ENC_OK) s = text_out_init(&q->text, e->tok, 1, NULL, 0);
    if (s != ENC_OK) {
        serve__request_free(q);
        return s;
    }
    *out = q;
    return ENC_OK;
}

/* A checked request, ready for the inbox; on failure nothing is allocated. */
static enc_status serve__request_create(encore_engine *e, const encore_request *r, api_request **out)
{
    const encore_sampling *sp = &r->sampling;
    *out = NULL;
    if (engine_get_config(e->eng)->pooling) return serve__pooling_request_create(e, r, out);
    ENC_TRY(serve__check_sampling(sp, engine_model_config(e->eng)->vocab_size));
    api_request *q = calloc(1, sizeof *q);
    if (!q) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request");
    q->text.matched = -1;
    size_t n_prompt = 0;
    enc_status s = serve__prompt(e, r, &q->prompt, &n_prompt);
    if (s == ENC_OK) s = serve__logit_bias(sp, &q->logit_bias);
    if (s == ENC_OK) {
        if (sp->n_stop_token_ids) memcpy(q->stop_ids, sp->stop_token_ids, sp->n_stop_token_ids * sizeof *q->stop_ids);
        q->min_tokens = sp->min_tokens;
        q->params = (engine_request_params){
            .prompt_ids = q->prompt,
            .n_prompt = (int64_t)n_prompt,
            .max_tokens = sp->max_tokens,
            .sampling =
                {
                    .temperature = sp->temperature,
                    .top_k = sp->top_k,
                    .top_p = sp->top_p,
                    .min_p = sp->min_p,
                    .repetition_penalty = sp->repetition_penalty,
                    .presence_penalty = sp->presence_penalty,
                    .frequency_penalty = sp->frequency_penalty,
                    .seed = sp->seed == ENCORE_SEED_RANDOM ? enc_random_seed() : sp->seed,
                    .min_tokens = sp->min_tokens,
                    .logprobs = sp->logprobs != 0,
                    .top_logprobs = sp->top_logprobs,
                    .logit_bias = q->logit_bias,
                    .n_logit_bias = (int)sp->n_logit_bias,
                },
            .ignore_eos = sp->ignore_eos != 0,
            .prompt_logprobs = sp->prompt_logprobs != 0,
            .prompt_top_logprobs = sp->prompt_top_logprobs,
            .stop_ids = q->stop_ids,
            .n_stop_ids = (int)sp->n_stop_token_ids,
        };
        s = engine_check_request(e->eng, &q->params);
    }
    int constrained = 0;
    if (s == ENC_OK) s = api_structured_wanted(r, &constrained);
    if (s == ENC_OK && constrained) {
        const qwen3_config *mc = engine_model_config(e->eng);
        s = api_structured_constraint(e->structured, r, mc->eos_token_ids, mc->n_eos, &q->constraint);
        q->owns_constraint = s == ENC_OK;
        if (s == ENC_OK) q->params.constraint = &q->constraint;
    }
    /* allowed_token_ids: a mask of its own, or ANDed into the structured one */
    if (s == ENC_OK && sp->n_allowed_token_ids && !sp->allowed_token_ids) {
        s = enc_fail(ENC_ERR_INVALID_ARGUMENT,
                     "request: sampling.allowed_token_ids is NULL with n_allowed_token_ids %zu",
                     sp->n_allowed_token_ids);
    } else if (s == ENC_OK && sp->n_allowed_token_ids) {
        s = api_token_mask_wrap(sp->allowed_token_ids, sp->n_allowed_token_ids,
                                (int32_t)engine_model_config(e->eng)->vocab_size, &q->constraint);
        if (s == ENC_OK) {
            q->owns_constraint = true;
            q->params.constraint = &q->constraint;
        }
    }
    if (s == ENC_OK && sp->n_bad_words) {
        if (!sp->bad_words)
            s = enc_fail(ENC_ERR_INVALID_ARGUMENT,
                         "request: sampling.bad_words is NULL with n_bad_words %zu",
                         sp->n_bad_words);
        else if (!e->tok)
            s = enc_fail(ENC_ERR_INVALID_ARGUMENT,
                         "request: bad_words need a tokenizer, and the model %s has no "
                         "tokenizer.json",
                         e->name);
        else
            s = api_bad_words_wrap(e->tok, &e->tok_mu, sp->bad_words, sp->n_bad_words,
                                   (int32_t)engine_model_config(e->eng)->vocab_size,
                                   &q->constraint);
        if (s == ENC_OK) {
            q->owns_constraint = true;
            q->params.constraint = &q->constraint;
        }
    }
    if (s == ENC_OK && sp->n_stop && !e->tok)
        s = enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: stop strings need a tokenizer, and the model %s has no "
                     "tokenizer.json", e->name);
    if (s == ENC_OK) s = text_out_init(&q->text, e->tok, sp->skip_special_tokens, sp->stop, sp->n_stop);
    q->text.include_stop = sp->include_stop_str_in_output != 0;
    if (s != ENC_OK) {
        serve__request_free(q);
        return s;
    }
    *out = q;
    return ENC_OK;
}

static void *serve__thread(void *arg);

encore_status encore_submit(encore_engine *e, const encore_request *r, encore_output_fn fn, void *user,
                            int64_t *request_id)
{
    if (!e || !r || !fn)
        return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_submit: the engine, the request and the "
                                       "callback must not be NULL");
    api_request *q;
    enc_status s = serve__request_create(e, r, &q);
    if (s != ENC_OK) return (encore_status)s;
    q->fn = fn;
    q->user = user;
    pthread_mutex_lock(&e->mu);
    if (e->shutdown) {
        s = enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_submit: the engine is being destroyed");
    } else if (!e->thread_started) {
        int rc = pthread_create(&e->thread, NULL, serve__thread, e);
        if (rc) s = enc_fail(ENC_ERR_INTERNAL, "encore_submit: cannot start the engine thread (error %d)", rc);
        e->thread_started = rc == 0;
    }
    if (s != ENC_OK) {
        pthread_mutex_unlock(&e->mu);
        serve__request_free(q);
        return (encore_status)s;
    }
    q->id = e->next_id++;
    if (e->inbox_tail) e->inbox_tail->next = q;
    else e->inbox_head = q;
    e->inbox_tail = q;
    e->n_inbox++;
    if (request_id) *request_id = q->id; /* before the engine thread can see q */
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    return ENCORE_OK;
}

encore_status encore_cancel(encore_engine *e, int64_t request_id)
{
    if (!e) return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_cancel: no engine");
    enc_status s = ENC_OK;
    pthread_mutex_lock(&e->mu);
    if (e->n_cancels == e->cap_cancels) {
        size_t cap = e->cap_cancels ? e->cap_cancels * 2 : 16;
        int64_t *c = realloc(e->cancels, cap * sizeof *c);
        if (c) e->cancels = c, e->cap_cancels = cap;
        else s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "encore_cancel: %zu pending cancellations", cap);
    }
    if (s == ENC_OK) {
        e->cancels[e->n_cancels++] = request_id;
        pthread_cond_signal(&e->wake);
    }
    pthread_mutex_unlock(&e->mu);
    return (encore_status)s;
}

encore_status encore_get_stats(encore_engine *e, encore_stats *out)
{
    if (!e || !out) return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_get_stats: NULL argument");
    pthread_mutex_lock(&e->mu);
    *out = e->stats;
    out->n_waiting += e->n_inbox;
    pthread_mutex_unlock(&e->mu);
    return ENCORE_OK;
}

/* --- the engine thread --------------------------------------------------------- */

/* Room for the logprobs of n ids in b. */
static bool serve__reserve_logprobs(api_logprobs_buf *b, size_t n)
{
    if (n <= b->cap) return true;
    size_t cap = n > 2 * b->cap ? n : 2 * b->cap;
    int32_t *ids = realloc(b->ids, cap * sizeof *ids);
    if (ids) b->ids = ids;
    float *lp = realloc(b->lp, cap * sizeof *lp);
    if (lp) b->lp = lp;
    encore_logprob *top = realloc(b->top, cap * ENGINE_MAX_TOP_LOGPROBS * sizeof *top);
    if (top) b->top = top;
    int32_t *rank = realloc(b->rank, cap * sizeof *rank);
    if (rank) b->rank = rank;
    if (!ids || !lp || !top || !rank) return false;
    b->cap = cap;
    return true;
}

static void serve__free_logprobs(api_logprobs_buf *b)
{
    free(b->ids);
    free(b->lp);
    free(b->top);
    free(b->rank);
}

/* The engine's records t[0..n) into b, n_top alternatives each (id -1 past
 * a record's own); false (logged) when memory for them ran out. */
static bool serve__copy_logprobs(api_logprobs_buf *b, const engine_token_logprob *t, size_t n,
                                 int n_top, int64_t request_id)
{
    if (!serve__reserve_logprobs(b, n)) {
        enc_log_warn("serve: no memory for the logprobs of request %lld", (long long)request_id);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        b->ids[i] = t[i].id;
        b->lp[i] = t[i].logprob;
        b->rank[i] = t[i].rank;
        for (int j = 0; j < n_top; j++)
            b->top[i * (size_t)n_top + (size_t)j] = (encore_logprob){
                .id = j < t[i].n_top ? t[i].top_ids[j] : -1,
                .logprob = j < t[i].n_top ? t[i].top_logprobs[j] : -INFINITY,
            };
    }
    return true;
}

/* The log-probabilities of r's ids [from, from + n) when it asked for them
 * (NULL otherwise, or if memory for them ran out: logged); with its
 * prompt's, in its first call, when it asked for those: the call with its
 * first ids, or for a max_tokens 0 request, the one that finishes it with
 * "length" (the prompt scored). */
static void serve__logprobs(encore_engine *e, const api_request *r, int64_t from, size_t n,
                            const char *finish_reason, encore_output *o)
{
    const engine_token_logprob *lp;
    int64_t n_lp;
    int n_top = r->params.sampling.top_logprobs;
    if (r->params.sampling.logprobs && n &&
        engine_request_logprobs(e->eng, r->engine_id, &lp, &n_lp) == ENC_OK &&
        from + (int64_t)n <= n_lp && serve__copy_logprobs(&e->lp, lp + from, n, n_top, r->id)) {
        o->logprobs = e->lp.lp;
        o->top = n_top ? e->lp.top : NULL;
        o->n_top = n_top;
    }
    bool scored = r->params.max_tokens == 0 && finish_reason && !strcmp(finish_reason, "length");
    if (!r->params.prompt_logprobs || from != 0 || (!n && !scored)) return;
    int n_prompt_top = r->params.prompt_top_logprobs;
    if (engine_request_prompt_logprobs(e->eng, r->engine_id, &lp, &n_lp) == ENC_OK && n_lp &&
        serve__copy_logprobs(&e->prompt_lp, lp, (size_t)n_lp, n_prompt_top, r->id)) {
        o->prompt_ids = e->prompt_lp.ids;
        o->prompt_logprobs = e->prompt_lp.lp;
        o->prompt_ranks = e->prompt_lp.rank;
        o->prompt_top = n_prompt_top ? e->prompt_lp.top : NULL;
        o->n_prompt_top = n_prompt_top;
        o->n_prompt_logprobs = (size_t)n_lp;
    }
}

/* r's callback with ids[0..n) (its ids from n_seen - n on) and the text
 * released since the last one; finish_reason NULL while it runs. */
static void serve__call(encore_engine *e, api_request *r, const int32_t *ids, size_t n, const char *finish_reason)
{
    encore_output o = {
        .request_id = r->id,
        .ids = ids,
        .n_ids = n,
        .finished = finish_reason != NULL,
        .finish_reason = finish_reason,
        .stop_string = r->text.matched >= 0 ? r->text.stop[r->text.matched] : NULL,
        .stop_token_id = finish_reason && r->text.matched < 0 ? engine_request_stop_token(e->eng, r->engine_id) : -1,
        .n_prompt_tokens = (size_t)r->params.n_prompt,
        .n_cached_prompt_tokens = (size_t)engine_request_cached_tokens(e->eng, r->engine_id),
        .n_output_tokens = (size_t)r->n_seen,
    };
    serve__logprobs(e, r, r->n_seen - (int64_t)n, n, finish_reason, &o);
    int64_t n_embedding = 0;
    if (finish_reason && !strcmp(finish_reason, "length") &&
        engine_request_embedding(e->eng, r->engine_id, &o.embedding, &n_embedding) == ENC_OK)
        o.n_embedding = (size_t)n_embedding;
    o.text = text_out_take(&r->text, &o.text_len);
    e->n_output_tokens += (int64_t)n;
    e->n_finished += finish_reason != NULL;
    r->fn(r->user, &o);
}

/* Unlink r from the active list (prev: the pointer that points at it),
 * release it from the engine (its blocks return at once) and free it. */
static void serve__retire(encore_engine *e, api_request **prev)
{
    api_request *r = *prev;
    *prev = r->next;
    if (e->active_tail == r) {
        e->active_tail = NULL;
        for (api_request *p = e->active_head; p; p = p->next) e->active_tail = p;
    }
    engine_release_request(e->eng, r->engine_id);
    serve__request_free(r);
}

/* The last callback of a request ended before its time, `reason` "abort"
 * or "error": what it held back, no new ids. */
static void serve__abort(encore_engine *e, api_request *r, const char *reason)
{
    if (text_out_finish(&r->text, false) != ENC_OK) enc_log_warn("request %lld: %s", (long long)r->id, enc_last_error());
    serve__call(e, r, NULL, 0, reason);
}

/* Put the new requests into the engine, in order, behind the active ones. */
static void serve__admit(encore_engine *e, api_request *fresh)
{
    while (fresh) {
        api_request *r = fresh;
        fresh = r->next;
        r->next = NULL;
        enc_status s = engine_add_request(e->eng, &r->params, &r->engine_id);
        if (s == ENC_OK) r->owns_constraint = false; /* the engine's now */
        free(r->prompt); /* the engine has its copies */
        free(r->logit_bias);
        r->prompt = NULL;
        r->logit_bias = NULL;
        r->params.prompt_ids = NULL;
        r->params.sampling.logit_bias = NULL;
        r->params.sampling.n_logit_bias = 0;
        if (s != ENC_OK) {
            enc_log_error("request %lld: %s", (long long)r->id, enc_last_error());
            serve__abort(e, r, "error");
            serve__request_free(r);
            continue;
        }
        if (e->active_tail) e->active_tail->next = r;
        else e->active_head = r;
        e->active_tail = r;
    }
}

static void serve__cancel(encore_engine *e, int64_t id)
{
    for (api_request **p = &e->active_head; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            serve__abort(e, *p, "abort");
            serve__retire(e, p);
            return;
        }
    }
}

static void serve__abort_all(encore_engine *e, const char *reason)
{
    while (e->active_head) {
        serve__abort(e, e->active_head, reason);
        serve__retire(e, &e->active_head);
    }
}

/* After a step: r's new ids through the text and its stop strings, then its
 * callback. Returns whether r finished. */
static bool serve__update(encore_engine *e, api_request *r)
{
    const int32_t *ids;
    int64_t n = 0;
    engine_finish fin = ENGINE_NOT_FINISHED;
    enc_status s = engine_request_output(e->eng, r->engine_id, &ids, &n, &fin);
    if (s == ENC_OK && n == r->n_seen && fin == ENGINE_NOT_FINISHED) return false;
    int64_t from = r->n_seen, k = from;
    while (s == ENC_OK && k < n && r->text.matched < 0) {
        /* An EOS or stop id that ended the request gives no text, unless
         * include_stop_str_in_output (vLLM's detokenizer) */
        bool stop_token = k == n - 1 && fin == ENGINE_FINISH_STOP && !r->text.include_stop;
        k++;
        if (!stop_token) s = text_out_put_id(&r->text, ids[k - 1], k > r->min_tokens);
    }
    r->n_seen = k;
    bool ending = s != ENC_OK || r->text.matched >= 0 || fin != ENGINE_NOT_FINISHED;
    if (ending && s == ENC_OK) s = text_out_finish(&r->text, k > r->min_tokens);
    const char *reason = NULL;
    if (s != ENC_OK) {
        enc_log_error("request %lld: %s", (long long)r->id, enc_last_error());
        reason = "error";
    } else if (r->text.matched >= 0) {
        reason = "stop"; /* a stop string: the engine stops it when it is released */
    } else if (fin != ENGINE_NOT_FINISHED) {
        reason = engine_finish_name(fin);
    }
    serve__call(e, r, k > from ? ids + from : NULL, (size_t)(k - from), reason);
    return reason != NULL;
}

/* engine_step, or the failure ENCORE_FAULT_STEPS asks for; after the
 * sleep ENCORE_STEP_DELAY_MS asks for. */
static enc_status serve__engine_step(encore_engine *e)
{
    if (e->step_delay_ms > 0) {
        struct timespec ts = {.tv_sec = (time_t)(e->step_delay_ms / 1000),
                              .tv_nsec = (long)(e->step_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (e->n_fault_steps > 0) {
        e->n_fault_steps--;
        return enc_fail(ENC_ERR_INTERNAL, "a step failed on purpose (ENCORE_FAULT_STEPS)");
    }
    return engine_step(e->eng, NULL);
}

static void serve__step(encore_engine *e)
{
    if (serve__engine_step(e) != ENC_OK) {
        enc_log_error("engine step failed: %s; ending every request", enc_last_error());
        e->n_step_failures++;
        e->n_step_failures_in_a_row++;
        serve__abort_all(e, "error");
        return;
    }
    e->n_step_failures_in_a_row = 0;
    api_request **p = &e->active_head;
    while (*p) {
        if (serve__update(e, *p)) serve__retire(e, p);
        else p = &(*p)->next;
    }
}

static void serve__publish_stats(encore_engine *e)
{
    engine_stats es = engine_get_stats(e->eng);
    encore_stats st = {
        .kv_blocks_total = engine_kv_total_blocks(e->eng),
        .prompt_tokens = es.n_prefill_tokens,
        .output_tokens = e->n_output_tokens,
        .n_finished = e->n_finished,
        .n_steps = es.n_steps,
        .n_eager_steps = es.n_eager_steps,
        .n_captures = es.n_captures,
        .n_replays = es.n_replays,
        .n_multi_round_trips = es.n_multi_round_trips,
        .prefix_queries_tokens = es.n_prefix_cache_queries,
        .prefix_hit_tokens = es.n_prefix_cache_hits,
        .n_step_failures = e->n_step_failures,
        .n_step_failures_in_a_row = e->n_step_failures_in_a_row,
    };
    st.kv_blocks_used = st.kv_blocks_total - engine_kv_free_blocks(e->eng);
    engine_count_requests(e->eng, &st.n_running, &st.n_waiting);
    pthread_mutex_lock(&e->mu);
    e->stats = st;
    pthread_mutex_unlock(&e->mu);
}

static void *serve__thread(void *arg)
{
    encore_engine *e = arg;
    for (bool running = true; running;) {
        pthread_mutex_lock(&e->mu);
        while (!e->shutdown && !e->inbox_head && !e->n_cancels && !e->active_head)
            pthread_cond_wait(&e->wake, &e->mu);
        api_request *fresh = e->inbox_head;
        e->inbox_head = e->inbox_tail = NULL;
        e->n_inbox = 0;
        int64_t *taken = e->cancels; /* swap the lists: no allocation under mu */
        size_t n_taken = e->n_cancels, cap_taken = e->cap_cancels;
        e->cancels = e->cancels_taken;
        e->cap_cancels = e->cap_cancels_taken;
        e->n_cancels = 0;
        e->cancels_taken = taken;
        e->cap_cancels_taken = cap_taken;
        running = !e->shutdown;
        pthread_mutex_unlock(&e->mu);

        serve__admit(e, fresh);
        for (size_t i = 0; i < n_taken; i++) serve__cancel(e, taken[i]);
        if (!running) serve__abort_all(e, "abort");
        else if (e->active_head) serve__step(e);
        serve__publish_stats(e);
    }
    return NULL;
}

/* --- set-up, tear-down --------------------------------------------------------- */

enc_status serve_init(encore_engine *e)
{
    e->next_id = 1;
    const char *fault = getenv("ENCORE_FAULT_STEPS");
    e->n_fault_steps = fault ? strtoll(fault, NULL, 10) : 0;
    const char *delay = getenv("ENCORE_STEP_DELAY_MS");
    e->step_delay_ms = delay ? strtoll(delay, NULL, 10) : 0;
    if (e->step_delay_ms > 60000) e->step_delay_ms = 60000;
    if (pthread_mutex_init(&e->mu, NULL)) return enc_fail(ENC_ERR_INTERNAL, "encore: mutex");
    if (pthread_mutex_init(&e->tok_mu, NULL)) {
        pthread_mutex_destroy(&e->mu);
        return enc_fail(ENC_ERR_INTERNAL, "encore: mutex");
    }
    if (pthread_cond_init(&e->wake, NULL)) {
        pthread_mutex_destroy(&e->tok_mu);
        pthread_mutex_destroy(&e->mu);
        return enc_fail(ENC_ERR_INTERNAL, "encore: condition variable");
    }
    return ENC_OK;
}

void serve_shutdown(encore_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->shutdown = true;
    bool join = e->thread_started;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    if (join) pthread_join(e->thread, NULL); /* it aborts every request on its way out */
    free(e->cancels);
    free(e->cancels_taken);
    serve__free_logprobs(&e->lp);
    serve__free_logprobs(&e->prompt_lp);
    pthread_cond_destroy(&e->wake);
    pthread_mutex_destroy(&e->tok_mu);
    pthread_mutex_destroy(&e->mu);
}

/* --- generate: submit and wait ------------------------------------------------- */

typedef struct serve_wait {
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    bool done, stopped, aborted;
    int32_t *out;
    size_t cap, n;
} serve_wait;

static void serve__wait_output(void *user, const encore_output *o)
{
    serve_wait *w = user;
    for (size_t i = 0; i < o->n_ids && w->n < w->cap; i++) w->out[w->n++] = o->ids[i];
    if (!o->finished) return;
    pthread_mutex_lock(&w->mu);
    w->stopped = !strcmp(o->finish_reason, "stop");
    w->aborted = !strcmp(o->finish_reason, "abort") || !strcmp(o->finish_reason, "error");
    w->done = true;
    pthread_cond_signal(&w->done_cv);
    pthread_mutex_unlock(&w->mu);
}

encore_status encore_generate_ids(encore_engine *e, const int32_t *prompt, size_t n_prompt,
                                  const encore_sampling *sampling, int32_t *out, size_t cap,
                                  size_t *n_out, int *stopped)
{
    if (!e || !sampling || !n_out || (!out && cap))
        return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_generate_ids: NULL argument");
    serve_wait w = {.out = out, .cap = cap};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.done_cv, NULL);
    encore_request r = {.prompt_ids = prompt, .n_prompt_ids = n_prompt, .sampling = *sampling};
    encore_status s = encore_submit(e, &r, serve__wait_output, &w, NULL);
    if (s == ENCORE_OK) {
        pthread_mutex_lock(&w.mu);
        while (!w.done) pthread_cond_wait(&w.done_cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        *n_out = w.n;
        if (stopped) *stopped = w.stopped;
        if (w.aborted)
            s = (encore_status)enc_fail(ENC_ERR_INTERNAL, "encore_generate_ids: the request was aborted "
                                        "(the engine failed or is being destroyed; see the log)");
    }
    pthread_cond_destroy(&w.done_cv);
    pthread_mutex_destroy(&w.mu);
    return s;
}
