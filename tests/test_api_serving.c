/* test_api_serving.c - the serving half of the public API: the engine
 * thread, submit from many threads, streamed text, stop strings, cancel,
 * bad requests, destroy with requests in flight, logprobs, a logit bias,
 * allowed_token_ids (alone and with a structured output), a prompt scored
 * with max_tokens 0 (its logprobs in its one, last call).
 *
 * usage: test_api_serving TOKENIZER_MODEL_DIR IDS_ONLY_MODEL_DIR
 * (tiny-qwen3vocab, which has the real Qwen3 tokenizer, and a tiny
 * checkpoint without tokenizer.json.)
 *
 * The references are independent of the API: greedy ids from the engine
 * (engine.h) driven directly, one request at a time; text from a full
 * tokenizer decode of the ids. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/text_out.h"
#include "check.h"
#include "encore.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

enum { MAX_IDS = 1024, MAX_TEXT = 16384, WAIT_SECONDS = 120 };

/* --- collecting one request's outputs --------------------------------------- */

typedef struct collector {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    encore_engine *e;
    int64_t id;           /* set by encore_submit before the first callback */
    int32_t ids[MAX_IDS];
    size_t n_ids;
    char text[MAX_TEXT];
    size_t n_text;
    int n_calls, n_final, n_bad;
    char finish[16];
    char stop_string[64];
    int32_t stop_token_id; /* of the final call */
    size_t n_prompt_tokens;
    size_t cancel_after;  /* > 0: cancel itself from the callback once it has this many ids */
    int64_t cancel_other; /* > 0: and cancel this request too */
    bool cancelled;
    long sleep_us;        /* slow the engine thread down (to cancel mid-stream) */
    int top_logprobs;     /* >= 0: logprobs asked for, with this many alternatives */
    float lp[MAX_IDS];    /* each id's logprob, then its alternatives */
    encore_logprob top[MAX_IDS][4];
} collector;

static void collector_init(collector *c, encore_engine *e)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->e = e;
    c->top_logprobs = -1;
}

/* Logprobs come when asked for, with the alternatives asked for. */
static void collector_logprobs(collector *c, const encore_output *o)
{
    if (c->top_logprobs < 0 || o->n_ids == 0) {
        c->n_bad += o->logprobs != NULL;
        return;
    }
    if (!o->logprobs || o->n_top != c->top_logprobs || (o->n_top && !o->top)) {
        c->n_bad++;
        return;
    }
    for (size_t i = 0; i < o->n_ids && c->n_ids + i < MAX_IDS; i++) {
        c->lp[c->n_ids + i] = o->logprobs[i];
        for (int j = 0; j < o->n_top && j < 4; j++) c->top[c->n_ids + i][j] = o->top[i * (size_t)o->n_top + (size_t)j];
    }
}

static void collector_free(collector *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

static void sleep_us(long us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void on_output(void *user, const encore_output *o)
{
    collector *c = user;
    pthread_mutex_lock(&c->mu);
    c->n_calls++;
    /* the contract: ids known at once, never a call after the last, counts add up */
    if (o->request_id != c->id || c->n_final) c->n_bad++;
    if (o->n_ids && !o->ids) c->n_bad++;
    collector_logprobs(c, o);
    for (size_t i = 0; i < o->n_ids && c->n_ids < MAX_IDS; i++) c->ids[c->n_ids++] = o->ids[i];
    if (o->n_output_tokens != c->n_ids || !o->text) c->n_bad++;
    if (c->n_text + o->text_len < MAX_TEXT) {
        memcpy(c->text + c->n_text, o->text, o->text_len);
        c->n_text += o->text_len;
        c->text[c->n_text] = '\0';
    }
    c->n_prompt_tokens = o->n_prompt_tokens;
    if (o->finished) {
        c->n_final++;
        snprintf(c->finish, sizeof c->finish, "%s", o->finish_reason ? o->finish_reason : "(null)");
        snprintf(c->stop_string, sizeof c->stop_string, "%s", o->stop_string ? o->stop_string : "");
        c->stop_token_id = o->stop_token_id;
    } else if (o->finish_reason || o->stop_string || o->stop_token_id != -1) {
        c->n_bad++;
    }
    if (!o->finished && c->cancel_after && c->n_ids >= c->cancel_after && !c->cancelled) {
        c->cancelled = true;
        if (encore_cancel(c->e, c->id) != ENCORE_OK) c->n_bad++;
        if (c->cancel_other > 0) encore_cancel(c->e, c->cancel_other);
    }
    long pause = o->finished ? 0 : c->sleep_us;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu); /* after the last call, c may be reused at once */
    if (pause) sleep_us(pause);
}

/* Wait until c has min_ids ids or finished (finished: wait for the end). */
static bool collector_wait(collector *c, size_t min_ids, bool finished)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_SECONDS;
    bool ok = true;
    pthread_mutex_lock(&c->mu);
    while (ok && (finished ? !c->n_final : c->n_ids < min_ids && !c->n_final))
        ok = pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT;
    pthread_mutex_unlock(&c->mu);
    if (!ok) fprintf(stderr, "timed out waiting for request %lld\n", (long long)c->id);
    return ok;
}

static encore_sampling greedy(int64_t max_tokens)
{
    encore_sampling s = encore_sampling_default();
    s.max_tokens = max_tokens;
    s.ignore_eos = 1;
    return s;
}

static encore_engine *open_engine(const char *dir, int max_num_seqs)
{
    encore_options opt = encore_options_default();
    opt.model_dir = dir;
    opt.n_threads = 1;
    opt.max_num_seqs = max_num_seqs;
    encore_engine *e = NULL;
    if (encore_engine_create(&opt, &e) != ENCORE_OK) fprintf(stderr, "engine: %s\n", encore_last_error());
    return e;
}

/* Wait until the stats show n finished requests, then return them: a
 * snapshot is made after the finished requests were released. */
static encore_stats stats_after(encore_engine *e, int64_t n_finished)
{
    encore_stats st = {0};
    for (int i = 0; i < WAIT_SECONDS * 1000; i++) {
        encore_get_stats(e, &st);
        if (st.n_finished >= n_finished && st.n_running == 0 && st.n_waiting == 0) break;
        sleep_us(1000);
    }
    return st;
}

/* --- the reference: the engine alone ---------------------------------------- */

/* An engine with the engine_config encore_engine_create makes from
 * open_engine's options (sampling bounded to the tokenizer's ids). */
static engine *reference_engine(const char *dir)
{
    engine_config cfg = {.model_dir = dir, .n_threads = 1};
    tokenizer *tok = NULL;
    if (tokenizer_load(dir, &tok) == ENC_OK) cfg.sample_vocab = tokenizer_vocab_size(tok);
    tokenizer_free(tok);
    engine *eng = NULL;
    CHECK(engine_create(&cfg, &eng) == ENC_OK);
    return eng;
}

/* Greedy ids of each prompt run alone through engine.h. */
static void reference_ids(const char *dir, int n, int32_t *const *prompts, const size_t *n_prompts,
                          const int64_t *max_tokens, int32_t (*out)[MAX_IDS], size_t *n_out)
{
    engine *eng = reference_engine(dir);
    for (int i = 0; eng && i < n; i++) {
        engine_request_params p = {.prompt_ids = prompts[i], .n_prompt = (int64_t)n_prompts[i],
                                   .max_tokens = max_tokens[i], .ignore_eos = true};
        int64_t id = -1;
        CHECK(engine_add_request(eng, &p, &id) == ENC_OK);
        const int32_t *ids = NULL;
        int64_t n_ids = 0;
        engine_finish fin = ENGINE_NOT_FINISHED;
        while (fin == ENGINE_NOT_FINISHED && engine_step(eng, NULL) == ENC_OK)
            CHECK(engine_request_output(eng, id, &ids, &n_ids, &fin) == ENC_OK);
        n_out[i] = (size_t)n_ids;
        memcpy(out[i], ids, (size_t)n_ids * sizeof *ids);
        engine_release_request(eng, id);
    }
    engine_destroy(eng);
}

/* The full decode of ids, malloc'd. */
static char *decode(encore_engine *e, const int32_t *ids, size_t n, int skip_special)
{
    char *text = NULL;
    size_t len = 0;
    if (encore_detokenize(e, ids, n, skip_special, &text, &len) != ENCORE_OK) {
        fprintf(stderr, "detokenize: %s\n", encore_last_error());
        return NULL;
    }
    return text;
}

/* --- concurrent submission ----------------------------------------------------- */

enum { N_THREADS = 4, PER_THREAD = 2, N_REQ = N_THREADS * PER_THREAD + 2 };

typedef struct submitter {
    encore_engine *e;
    collector *c;          /* [PER_THREAD] */
    encore_request *req;   /* [PER_THREAD] */
    int failures;
} submitter;

/* Submit the first request, wait until it streams, then submit the second:
 * it joins a running engine. */
static void *submit_thread(void *arg)
{
    submitter *s = arg;
    for (int k = 0; k < PER_THREAD; k++) {
        if (encore_submit(s->e, &s->req[k], on_output, &s->c[k], &s->c[k].id) != ENCORE_OK) {
            fprintf(stderr, "submit: %s\n", encore_last_error());
            s->failures++;
            continue;
        }
        if (k + 1 < PER_THREAD && !collector_wait(&s->c[k], 1, false)) s->failures++;
    }
    return NULL;
}

static uint32_t lcg(uint32_t *x) { return (*x = *x * 1664525u + 1013904223u) >> 8; }

static void test_concurrent(const char *dir)
{
    encore_engine *e = open_engine(dir, 4); /* fewer slots than requests: some wait */
    if (!e) return;
    static int32_t prompt_store[N_REQ][64];
    static int32_t ref[N_REQ][MAX_IDS];
    static collector cs[N_REQ];
    int32_t *prompts[N_REQ];
    size_t n_prompts[N_REQ], n_ref[N_REQ];
    int64_t max_tokens[N_REQ];
    encore_request req[N_REQ];
    uint32_t seed = 12345;
    /* request 0 is a text prompt: its reference prompt is its encoding */
    int32_t *text_ids = NULL;
    size_t n_text_ids = 0;
    const char *text_prompt = "The capital of France is";
    CHECK(encore_tokenize(e, text_prompt, strlen(text_prompt), &text_ids, &n_text_ids) == ENCORE_OK);
    for (int i = 0; i < N_REQ; i++) {
        n_prompts[i] = 3 + lcg(&seed) % 60;
        for (size_t j = 0; j < n_prompts[i]; j++) prompt_store[i][j] = (int32_t)(lcg(&seed) % 150000);
        prompts[i] = prompt_store[i];
        max_tokens[i] = 20 + lcg(&seed) % 50;
        req[i] = (encore_request){.prompt_ids = prompts[i], .n_prompt_ids = n_prompts[i],
                                  .sampling = greedy(max_tokens[i])};
        collector_init(&cs[i], e);
    }
    if (text_ids && n_text_ids <= 64) {
        memcpy(prompt_store[0], text_ids, n_text_ids * sizeof *text_ids);
        n_prompts[0] = n_text_ids;
        req[0] = (encore_request){.prompt = text_prompt, .sampling = greedy(max_tokens[0])};
    }
    encore_free(text_ids);
    reference_ids(dir, N_REQ, prompts, n_prompts, max_tokens, ref, n_ref);

    /* two from this thread, the rest from N_THREADS threads */
    for (int i = 0; i < 2; i++) CHECK(encore_submit(e, &req[i], on_output, &cs[i], &cs[i].id) == ENCORE_OK);
    pthread_t th[N_THREADS];
    submitter sub[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        sub[t] = (submitter){.e = e, .c = &cs[2 + t * PER_THREAD], .req = &req[2 + t * PER_THREAD]};
        CHECK(pthread_create(&th[t], NULL, submit_thread, &sub[t]) == 0);
    }
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(sub[t].failures == 0);
    }
    int64_t total = 0;
    for (int i = 0; i < N_REQ; i++) {
        CHECK(collector_wait(&cs[i], 0, true));
        CHECK(cs[i].n_final == 1 && cs[i].n_bad == 0);
        CHECK(!strcmp(cs[i].finish, "length"));
        CHECK(cs[i].n_prompt_tokens == n_prompts[i]);
        CHECK(cs[i].n_ids == n_ref[i] && n_ref[i] == (size_t)max_tokens[i]);
        CHECK(memcmp(cs[i].ids, ref[i], n_ref[i] * sizeof *ref[i]) == 0);
        for (size_t k = 0; k < n_ref[i]; k++) { /* no id past the tokenizer's is sampled */
            char *one = NULL;
            CHECK(encore_detokenize(e, &ref[i][k], 1, 1, &one, NULL) == ENCORE_OK);
            encore_free(one);
        }
        char *full = decode(e, ref[i], n_ref[i], 1);
        CHECK(full && strlen(full) == cs[i].n_text && !strcmp(full, cs[i].text));
        free(full);
        total += (int64_t)cs[i].n_ids;
    }
    for (int i = 0; i < N_REQ; i++) /* ids are unique */
        for (int j = 0; j < i; j++) CHECK(cs[i].id != cs[j].id && cs[i].id > 0);
    encore_stats st = stats_after(e, N_REQ);
    CHECK(st.n_finished == N_REQ && st.output_tokens == total);
    CHECK(st.n_running == 0 && st.n_waiting == 0);
    CHECK(st.kv_blocks_used == 0 && st.kv_blocks_total > 0);
    CHECK(st.n_steps > 0 && st.prompt_tokens > 0);
    encore_engine_destroy(e);
    for (int i = 0; i < N_REQ; i++) collector_free(&cs[i]);
}

/* --- stop strings and stop ids ------------------------------------------------- */

static bool char_start(const char *s, size_t i) { return ((unsigned char)s[i] & 0xC0) != 0x80; }

/* Run one request and collect it (c is initialised here). */
static void run_one(encore_engine *e, const encore_request *r, collector *c)
{
    collector_init(c, e);
    CHECK(encore_submit(e, r, on_output, c, &c->id) == ENCORE_OK);
    CHECK(collector_wait(c, 0, true));
    CHECK(c->n_final == 1 && c->n_bad == 0);
}

static void test_stops(const char *dir)
{
    encore_engine *e = open_engine(dir, 4);
    if (!e) return;
    enum { N = 60 };
    static const int32_t prompt[] = {785, 6722, 315, 9625, 374, 12095, 13, 576};
    static collector c;
    int32_t ids[N];
    size_t n = 0;
    int stopped = -1;
    int64_t n_runs = 1;
    encore_sampling s = greedy(N);
    CHECK(encore_generate_ids(e, prompt, 8, &s, ids, N, &n, &stopped) == ENCORE_OK && n == N && stopped == 0);
    char *full = decode(e, ids, n, 1);
    CHECK(full != NULL); /* a prompt whose greedy ids all have tokens */
    if (!full) return;
    size_t full_len = strlen(full);

    /* A stop string across the boundary between two tokens, taken from the
     * middle of the output: its first occurrence must be that one. */
    char stop[64] = "";
    size_t at = 0, k_end = 0;
    for (size_t i = n / 3; i < n && !stop[0]; i++) {
        char *head = decode(e, ids, i, 1);
        size_t b = head ? strlen(head) : 0;
        bool prefix = head && b >= 2 && b + 2 <= full_len && !strncmp(head, full, b) && char_start(full, b);
        free(head);
        if (!prefix) continue;
        size_t lo = b - 1, hi = b + 1;
        while (lo > 0 && !char_start(full, lo)) lo--;
        while (hi < full_len && !char_start(full, hi)) hi++;
        if (hi - lo >= sizeof stop) continue;
        memcpy(stop, full + lo, hi - lo);
        stop[hi - lo] = '\0';
        if (strstr(full, stop) != full + lo || strstr(stop, "\xEF\xBF\xBD")) {
            stop[0] = '\0';
            continue;
        }
        at = lo;
        fprintf(stderr, "stop string: bytes [%zu, %zu) of the output, across the token boundary at byte %zu\n",
                lo, hi, b);
        for (k_end = 1; k_end <= n; k_end++) { /* the token that completes the match */
            char *t = decode(e, ids, k_end, 1);
            bool hit = t && strstr(t, stop);
            free(t);
            if (hit) break;
        }
    }
    CHECK(stop[0] != '\0');
    if (stop[0]) {
        const char *stops[] = {"\x01never", stop};
        encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 8, .sampling = s};
        r.sampling.stop = stops;
        r.sampling.n_stop = 2;
        run_one(e, &r, &c);
        n_runs++;
        CHECK(!strcmp(c.finish, "stop") && !strcmp(c.stop_string, stop) && c.stop_token_id == -1);
        CHECK(c.n_text == at && !strncmp(c.text, full, at)); /* exactly the text before the match */
        CHECK(c.n_ids == k_end && memcmp(c.ids, ids, k_end * sizeof *ids) == 0);
        collector_free(&c);

        /* min_tokens up to the match: not looked for then, so it runs to length */
        if (!strstr(full + at + 1, stop)) {
            r.sampling.min_tokens = (int64_t)k_end;
            run_one(e, &r, &c);
            n_runs++;
            CHECK(!strcmp(c.finish, "length") && c.n_ids == n && !strcmp(c.text, full) && c.stop_token_id == -1);
            collector_free(&c);
        }

        /* a string whose start appears but which never matches: held, then released */
        char never[80];
        snprintf(never, sizeof never, "%.*s\x02", (int)(strlen(stop) - 1), stop);
        const char *stops2[] = {never};
        r.sampling.min_tokens = 0;
        r.sampling.stop = stops2;
        r.sampling.n_stop = 1;
        run_one(e, &r, &c);
        n_runs++;
        CHECK(!strcmp(c.finish, "length") && c.n_ids == n && c.n_text == full_len && !strcmp(c.text, full));
        CHECK(c.stop_string[0] == '\0');
        collector_free(&c);
    }

    /* A stop id: the ids end with it, the text leaves it out (even a text
     * that keeps special tokens). */
    size_t k = n / 2;
    for (bool earlier = true; earlier && k > 0; k -= earlier) {
        earlier = false;
        for (size_t j = 0; j < k; j++) earlier |= ids[j] == ids[k];
    }
    encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 8, .sampling = s};
    r.sampling.stop_token_ids = &ids[k];
    r.sampling.n_stop_token_ids = 1;
    r.sampling.skip_special_tokens = 0;
    run_one(e, &r, &c);
    n_runs++;
    CHECK(!strcmp(c.finish, "stop") && c.stop_string[0] == '\0');
    CHECK(c.stop_token_id == ids[k]); /* the stop_reason vLLM gives */
    CHECK(c.n_ids == k + 1 && memcmp(c.ids, ids, (k + 1) * sizeof *ids) == 0);
    char *head = decode(e, ids, k, 0);
    CHECK(head && !strcmp(c.text, head));
    free(head);
    collector_free(&c);

    encore_stats st = stats_after(e, n_runs);
    CHECK(st.n_finished == n_runs);
    CHECK(st.kv_blocks_used == 0);
    free(full);
    encore_engine_destroy(e);
}

/* The text_out rules on their own: hold-back, earliest match, min_tokens. */
static const char *put_all(text_out *t, const char *const *pieces, size_t n, bool check, char *buf)
{
    size_t len = 0, got;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        CHECK(text_out_put_text(t, pieces[i], strlen(pieces[i]), check) == ENC_OK);
        const char *s = text_out_take(t, &got);
        memcpy(buf + len, s, got);
        len += got;
    }
    if (t->matched < 0) {
        CHECK(text_out_finish(t, check) == ENC_OK);
        const char *s = text_out_take(t, &got);
        memcpy(buf + len, s, got);
        len += got;
    }
    buf[len] = '\0';
    return buf;
}

static void test_text_out(void)
{
    char buf[256];
    text_out t;
    const char *stop[] = {"STOP", "ab", "xyz"};
    CHECK(text_out_init(&t, NULL, 1, stop, 3) == ENC_OK); /* no tokenizer: text pieces only */
    const char *p1[] = {"hello S", "TO", "P world"};
    size_t got;
    CHECK(text_out_put_text(&t, p1[0], strlen(p1[0]), true) == ENC_OK);
    CHECK(!strcmp(text_out_take(&t, &got), "hello ") && got == 6); /* "S" held */
    CHECK(text_out_put_text(&t, p1[1], strlen(p1[1]), true) == ENC_OK);
    CHECK(text_out_take(&t, &got) && got == 0); /* "STO" held */
    CHECK(text_out_put_text(&t, p1[2], strlen(p1[2]), true) == ENC_OK);
    CHECK(t.matched == 0 && text_out_take(&t, &got) && got == 0);
    t.matched = -1;
    const char *p2[] = {"a", "a", "b", "c"};
    CHECK(!strcmp(put_all(&t, p2, 4, true, buf), "a") && t.matched == 1);
    t.matched = -1;
    const char *p3[] = {"xSTOxy", "zSTOP"}; /* earliest match wins */
    CHECK(!strcmp(put_all(&t, p3, 2, true, buf), "xSTO") && t.matched == 2);
    t.matched = -1;
    const char *p4[] = {"a", "b", "STO"}; /* not looking: released at the end */
    CHECK(!strcmp(put_all(&t, p4, 3, false, buf), "abSTO") && t.matched == -1);
    t.include_stop = true; /* the match stays, what follows it goes */
    const char *p5[] = {"xSTOxy", "zSTOP tail"};
    CHECK(!strcmp(put_all(&t, p5, 2, true, buf), "xSTOxyz") && t.matched == 2);
    text_out_free(&t);
}

/* --- cancel ------------------------------------------------------------------- */

static void test_cancel(const char *dir)
{
    encore_engine *e = open_engine(dir, 4);
    if (!e) return;
    static const int32_t prompt[] = {9707, 11, 847, 829, 374};
    static collector a, b, c, d;
    encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 5, .sampling = greedy(1000)};

    /* from another thread, mid-stream: within one step */
    collector_init(&a, e);
    a.sleep_us = 2000;
    CHECK(encore_submit(e, &r, on_output, &a, &a.id) == ENCORE_OK);
    CHECK(collector_wait(&a, 8, false));
    pthread_mutex_lock(&a.mu); /* no callback of a runs meanwhile */
    int calls_before = a.n_calls;
    CHECK(encore_cancel(e, a.id) == ENCORE_OK);
    pthread_mutex_unlock(&a.mu);
    CHECK(collector_wait(&a, 0, true));
    CHECK(!strcmp(a.finish, "abort") && a.n_bad == 0 && a.n_ids < 1000);
    CHECK(a.n_calls <= calls_before + 2); /* a step under way, then the last call */
    CHECK(encore_cancel(e, a.id) == ENCORE_OK);   /* finished: ignored */
    CHECK(encore_cancel(e, 987654) == ENCORE_OK); /* unknown: ignored */
    encore_stats st = stats_after(e, 1);
    CHECK(st.kv_blocks_used == 0 && st.n_running == 0);

    /* from inside the callback: itself, and another request */
    collector_init(&b, e);
    collector_init(&c, e);
    collector_init(&d, e);
    c.sleep_us = d.sleep_us = 1000;
    CHECK(encore_submit(e, &r, on_output, &c, &c.id) == ENCORE_OK);
    encore_request short_r = r;
    short_r.sampling.max_tokens = 300;
    CHECK(encore_submit(e, &short_r, on_output, &d, &d.id) == ENCORE_OK);
    b.cancel_after = 3;
    b.cancel_other = c.id;
    CHECK(encore_submit(e, &r, on_output, &b, &b.id) == ENCORE_OK);
    CHECK(collector_wait(&b, 0, true) && collector_wait(&c, 0, true));
    CHECK(!strcmp(b.finish, "abort") && b.n_bad == 0 && b.n_ids >= 3 && b.n_ids < 1000);
    CHECK(!strcmp(c.finish, "abort") && c.n_bad == 0);
    CHECK(collector_wait(&d, 0, true) && !strcmp(d.finish, "length") && d.n_ids == 300);
    st = stats_after(e, 4);
    CHECK(st.n_finished == 4 && st.kv_blocks_used == 0);
    encore_engine_destroy(e);
    collector_free(&a);
    collector_free(&b);
    collector_free(&c);
    collector_free(&d);
}

/* Destroy while requests run and wait: each gets exactly one last call. */
static void test_destroy_in_flight(const char *dir)
{
    encore_engine *e = open_engine(dir, 2);
    if (!e) return;
    enum { N_FLIGHT = 5 };
    static const int32_t prompt[] = {9707, 11, 847, 829, 374};
    static collector cs[N_FLIGHT];
    encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 5, .sampling = greedy(1000)};
    for (int i = 0; i < N_FLIGHT; i++) {
        collector_init(&cs[i], e);
        cs[i].sleep_us = 1000;
        CHECK(encore_submit(e, &r, on_output, &cs[i], &cs[i].id) == ENCORE_OK);
    }
    CHECK(collector_wait(&cs[0], 4, false));
    encore_engine_destroy(e);
    for (int i = 0; i < N_FLIGHT; i++) {
        CHECK(cs[i].n_final == 1 && cs[i].n_bad == 0 && !strcmp(cs[i].finish, "abort"));
        collector_free(&cs[i]);
    }
}

/* --- bad requests ------------------------------------------------------------ */

static int n_refused_calls;
static void on_refused(void *user, const encore_output *o) { n_refused_calls++; }

/* Submit r; it must be refused with a message containing `what`. */
static void refused(encore_engine *e, const encore_request *r, const char *what, int line)
{
    int64_t id = -7;
    encore_status s = encore_submit(e, r, on_refused, NULL, &id);
    if (s != ENCORE_ERR_INVALID_ARGUMENT || !strstr(encore_last_error(), what) || id != -7) {
        fprintf(stderr, "line %d: status %d, message \"%s\" (wanted \"%s\")\n", line, s, encore_last_error(), what);
        check_failures++;
    }
}

static void *refused_thread(void *arg)
{
    encore_engine *e = arg;
    encore_request r = {.prompt_ids = NULL, .n_prompt_ids = 0, .sampling = greedy(4)};
    bool ok = encore_submit(e, &r, on_refused, NULL, NULL) == ENCORE_ERR_INVALID_ARGUMENT &&
              strstr(encore_last_error(), "empty");
    return ok ? arg : NULL;
}

static void test_bad_requests(const char *tok_dir, const char *ids_dir)
{
    encore_engine *e = open_engine(tok_dir, 4);
    encore_engine *n = open_engine(ids_dir, 4);
    if (!e || !n) return;
    static const int32_t prompt[] = {9707, 11, 847};
    encore_request r;
#define BAD(field, value, what)                                                       \
    do {                                                                              \
        r = (encore_request){.prompt_ids = prompt, .n_prompt_ids = 3, .sampling = greedy(8)}; \
        r.field = value;                                                              \
        refused(e, &r, what, __LINE__);                                               \
    } while (0)
    BAD(n_prompt_ids, 0, "empty");
    BAD(prompt, "", "empty");
    BAD(sampling.max_tokens, 0, "max_tokens");
    BAD(sampling.max_tokens, 1 << 20, "max_model_len");
    BAD(sampling.temperature, -1.0, "temperature");
    BAD(sampling.top_p, 1.5, "top_p");
    BAD(sampling.min_p, -0.1, "min_p");
    BAD(sampling.repetition_penalty, -2.0, "repetition_penalty");
    BAD(sampling.presence_penalty, 3.0, "presence_penalty");
    BAD(sampling.frequency_penalty, -2.5, "frequency_penalty");
    BAD(sampling.min_tokens, 9, "min_tokens");
    BAD(sampling.top_logprobs, 21, "top_logprobs");
    BAD(sampling.n_stop, 1, "stop");
    BAD(sampling.n_stop_token_ids, 17, "stop_token_ids");
    static const char *empty_stop[] = {"x", ""};
    r = (encore_request){.prompt_ids = prompt, .n_prompt_ids = 3, .sampling = greedy(8)};
    r.sampling.stop = empty_stop;
    r.sampling.n_stop = 2;
    refused(e, &r, "stop[1] is empty", __LINE__);
    static const int32_t bad_ids[] = {5, 200000};
    r.sampling.n_stop = 0;
    r.sampling.stop_token_ids = bad_ids;
    r.sampling.n_stop_token_ids = 2;
    refused(e, &r, "stop_token_ids[1]", __LINE__);
    r = (encore_request){.prompt_ids = bad_ids, .n_prompt_ids = 2, .sampling = greedy(8)};
    refused(e, &r, "vocabulary", __LINE__);
    CHECK(encore_submit(e, &r, NULL, NULL, NULL) == ENCORE_ERR_INVALID_ARGUMENT);
    CHECK(encore_submit(e, NULL, on_refused, NULL, NULL) == ENCORE_ERR_INVALID_ARGUMENT);

    /* without a tokenizer: no text prompts, no stop strings, no text functions */
    r = (encore_request){.prompt = "hello", .sampling = greedy(8)};
    refused(n, &r, "tokenizer", __LINE__);
    static const char *stops[] = {"a"};
    r = (encore_request){.prompt_ids = prompt, .n_prompt_ids = 2, .sampling = greedy(8)};
    r.prompt_ids = (const int32_t[]){1, 2};
    r.sampling.stop = stops;
    r.sampling.n_stop = 1;
    refused(n, &r, "tokenizer", __LINE__);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    char *text = NULL;
    CHECK(encore_tokenize(n, "a", 1, &ids, &n_ids) == ENCORE_ERR_INVALID_ARGUMENT && !ids);
    CHECK(encore_detokenize(n, prompt, 1, 1, &text, NULL) == ENCORE_ERR_INVALID_ARGUMENT && !text);
    encore_model_info info;
    CHECK(encore_get_model_info(n, &info) == ENCORE_OK && !info.has_tokenizer && !info.has_chat_template);

    /* the message is the submitting thread's */
    pthread_t th;
    void *ok = NULL;
    CHECK(pthread_create(&th, NULL, refused_thread, e) == 0 && pthread_join(th, &ok) == 0 && ok == e);
    CHECK(n_refused_calls == 0);

    /* and the engines still serve */
    static collector c;
    r = (encore_request){.prompt_ids = prompt, .n_prompt_ids = 3, .sampling = greedy(6)};
    run_one(e, &r, &c);
    CHECK(!strcmp(c.finish, "length") && c.n_ids == 6);
    collector_free(&c);
    r.prompt_ids = (const int32_t[]){1, 2, 3};
    run_one(n, &r, &c);
    CHECK(!strcmp(c.finish, "length") && c.n_ids == 6 && c.n_text == 0);
    collector_free(&c);
    encore_engine_destroy(e);
    encore_engine_destroy(n);

    /* options */
    encore_options opt = encore_options_default();
    opt.model_dir = tok_dir;
    opt.device = "no-such-device";
    encore_engine *v = NULL;
    CHECK(encore_engine_create(&opt, &v) != ENCORE_OK && !v && strstr(encore_last_error(), "no-such-device"));

    /* the engine as created: the options given, and the defaults resolved */
    opt = encore_options_default();
    opt.model_dir = tok_dir;
    opt.n_threads = 1;
    opt.block_size = 32;
    opt.n_kv_blocks = 40;
    opt.kv_cache_dtype = "f32";
    opt.max_num_seqs = 3;
    opt.max_model_len = 256;
    opt.decode_steps = 8;
    opt.no_prefix_caching = 1;
    encore_engine_info ei;
    CHECK(encore_engine_create(&opt, &v) == ENCORE_OK &&
          encore_get_engine_info(v, &ei) == ENCORE_OK);
    CHECK(!strcmp(ei.device, "cpu") && strstr(ei.device_description, "kernels, 1 thread)") &&
          ei.n_threads == 1 && ei.block_size == 32 && ei.n_kv_blocks == 40);
    CHECK(!strcmp(ei.kv_cache_dtype, "F32") && ei.kv_bytes_per_token > 0 && ei.max_num_seqs == 3);
    CHECK(ei.max_model_len == 256 && ei.max_num_batched_tokens == 2048 && !ei.eager);
    CHECK(ei.decode_steps == 8 && !ei.prefix_caching);
    encore_engine_destroy(v);
    v = NULL;
    opt = encore_options_default();
    opt.model_dir = tok_dir;
    opt.eager = 1;
    CHECK(encore_engine_create(&opt, &v) == ENCORE_OK &&
          encore_get_engine_info(v, &ei) == ENCORE_OK);
    CHECK(ei.block_size == 16 && ei.max_num_seqs == 64 && ei.eager && ei.decode_steps == 4 &&
          ei.prefix_caching);
    CHECK(encore_get_engine_info(v, NULL) == ENCORE_ERR_INVALID_ARGUMENT);
    encore_engine_destroy(v);
}

/* --- model info and text ----------------------------------------------------- */

static void test_text(const char *dir)
{
    encore_engine *e = open_engine(dir, 4);
    if (!e) return;
    encore_model_info info;
    CHECK(encore_get_model_info(e, &info) == ENCORE_OK);
    CHECK(!strcmp(info.name, "tiny-qwen3vocab") && info.has_tokenizer && info.has_chat_template);
    CHECK(info.vocab_size == 151936 && info.max_model_len > 0);
    encore_sampling d = encore_sampling_default();
    CHECK(d.max_tokens == 16 && d.temperature == 0 && d.top_p == 1 && d.repetition_penalty == 1);
    CHECK(d.skip_special_tokens == 1 && d.top_k == 0 && d.n_stop == 0 && d.logprobs == 0);

    encore_chat_message msgs[] = {{.role = "user", .content = "Hi"}};
    char *prompt = NULL;
    CHECK(encore_chat_prompt(e, msgs, 1, 0, &prompt) == ENCORE_OK);
    CHECK(prompt && !strcmp(prompt, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    encore_free(prompt);
    prompt = NULL;
    CHECK(encore_chat_prompt(e, msgs, 0, 1, &prompt) == ENCORE_ERR_INVALID_ARGUMENT && !prompt);

    const char *s = "Hello, world! \xE4\xBD\xA0\xE5\xA5\xBD";
    int32_t *ids = NULL;
    size_t n = 0;
    char *back = NULL;
    size_t len = 0;
    CHECK(encore_tokenize(e, s, strlen(s), &ids, &n) == ENCORE_OK && n > 0);
    CHECK(encore_detokenize(e, ids, n, 1, &back, &len) == ENCORE_OK && len == strlen(s) && !strcmp(back, s));
    /* the embedding's padding rows (151669..151935 of Qwen3) decode to
     * nothing, as in Hugging Face's decode; past the model's vocabulary is
     * refused naming the id */
    int32_t padded[] = {ids[0], 151669, ids[1], 151935};
    char *want = NULL, *got = NULL;
    CHECK(encore_detokenize(e, ids, 2, 1, &want, NULL) == ENCORE_OK);
    CHECK(encore_detokenize(e, padded, 4, 1, &got, &len) == ENCORE_OK && want && got &&
          !strcmp(got, want) && len == strlen(want));
    encore_free(want);
    encore_free(got);
    got = NULL;
    padded[3] = 151936;
    CHECK(encore_detokenize(e, padded, 4, 1, &got, NULL) == ENCORE_ERR_INVALID_ARGUMENT && !got &&
          strstr(encore_last_error(), "ids[3] = 151936"));
    encore_free(ids);
    encore_free(back);
    CHECK(encore_tokenize(e, "\xFF", 1, &ids, &n) == ENCORE_ERR_INVALID_ARGUMENT);
    encore_engine_destroy(e);
}

/* Logprobs through the API equal the engine's own for the same request,
 * and for greedy tokens the chosen id is the first alternative. */
static void test_logprobs(const char *dir)
{
    encore_engine *e = open_engine(dir, 4);
    if (!e) return;
    static const int32_t prompt[] = {785, 6722, 315, 9625, 374};
    enum { N = 12, TOP = 3 };
    collector c;
    collector_init(&c, e);
    c.top_logprobs = TOP;
    encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 5, .sampling = greedy(N)};
    r.sampling.logprobs = 1;
    r.sampling.top_logprobs = TOP;
    CHECK(encore_submit(e, &r, on_output, &c, &c.id) == ENCORE_OK);
    CHECK(collector_wait(&c, 0, true) && c.n_bad == 0 && c.n_ids == N);

    engine *eng = reference_engine(dir);
    engine_request_params p = {.prompt_ids = prompt, .n_prompt = 5, .max_tokens = N, .ignore_eos = true,
                               .sampling = {.logprobs = true, .top_logprobs = TOP}};
    int64_t id = -1;
    CHECK(eng && engine_add_request(eng, &p, &id) == ENC_OK);
    while (eng && engine_has_unfinished(eng) && engine_step(eng, NULL) == ENC_OK) {}
    const engine_token_logprob *lp = NULL;
    int64_t n_lp = 0;
    CHECK(eng && engine_request_logprobs(eng, id, &lp, &n_lp) == ENC_OK && n_lp == N);
    for (int64_t i = 0; lp && i < n_lp && i < (int64_t)c.n_ids; i++) {
        CHECK(lp[i].id == c.ids[i] && lp[i].logprob == c.lp[i] && c.lp[i] <= 0.0f);
        CHECK(c.top[i][0].id == c.ids[i] && c.top[i][0].logprob == c.lp[i]);
        for (int j = 0; j < TOP; j++)
            CHECK(c.top[i][j].id == lp[i].top_ids[j] && c.top[i][j].logprob == lp[i].top_logprobs[j]);
        CHECK(c.top[i][1].logprob <= c.top[i][0].logprob && c.top[i][2].logprob <= c.top[i][1].logprob);
    }
    engine_destroy(eng);
    collector_free(&c);
    encore_engine_destroy(e);
}

/* allowed_token_ids on e: one id makes every token that id, two keep every
 * token among them (and the first is the better of the two the unmasked
 * greedy request scores, read from its top logprobs); with a structured
 * output both masks apply; an id outside the vocabulary, or NULL ids, are
 * refused. */
static void check_allowed_ids(encore_engine *e, const int32_t *prompt, int n)
{
    collector plain, one, two;
    encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 5, .sampling = greedy(n)};
    r.sampling.logprobs = 1;
    r.sampling.top_logprobs = 4;
    collector_init(&plain, e);
    plain.top_logprobs = 4;
    CHECK(encore_submit(e, &r, on_output, &plain, &plain.id) == ENCORE_OK);
    CHECK(collector_wait(&plain, 0, true) && plain.n_ids == (size_t)n);
    /* the second and third of the unmasked first token's alternatives: the second wins */
    int32_t pair[2] = {plain.top[0][2].id, plain.top[0][1].id}, single[1] = {9625};
    r = (encore_request){.prompt_ids = prompt, .n_prompt_ids = 5, .sampling = greedy(n)};
    r.sampling.allowed_token_ids = single;
    r.sampling.n_allowed_token_ids = 1;
    run_one(e, &r, &one);
    r.sampling.allowed_token_ids = pair;
    r.sampling.n_allowed_token_ids = 2;
    run_one(e, &r, &two);
    int n_one = 0, n_two = 0;
    for (int i = 0; i < n; i++) {
        n_one += one.ids[i] == 9625;
        n_two += two.ids[i] == pair[0] || two.ids[i] == pair[1];
    }
    CHECK(one.n_ids == (size_t)n && n_one == n && two.n_ids == (size_t)n && n_two == n &&
          two.ids[0] == pair[1]);
    collector both;
    r.json_object = 1; /* '{' is not allowed: the grammar's first token must be; none left */
    run_one(e, &r, &both);
    CHECK(!strcmp(both.finish, "error") && both.n_ids == 0);
    r.json_object = 0;
    int32_t outside[2] = {5, 151936};
    r.sampling.allowed_token_ids = outside;
    refused(e, &r, "allowed_token_ids[1]", __LINE__);
    r.sampling.allowed_token_ids = NULL;
    refused(e, &r, "allowed_token_ids is NULL", __LINE__);
    printf("ok allowed_token_ids: {9625}: %d of %d; {%d, %d}: %d of %d, first %d\n", n_one, n,
           pair[0], pair[1], n_two, n, two.ids[0]);
    collector_free(&plain);
    collector_free(&one);
    collector_free(&two);
    collector_free(&both);
}

/* A logit bias reaches the sampler: -100 on the greedy first token turns
 * the first token away from it, +100 on an id makes every token that id;
 * the engine driven directly with the same bias gives the same tokens; an id
 * outside the vocabulary is refused. Then allowed_token_ids on the same
 * engine (check_allowed_ids). */
static void test_logit_bias(const char *dir)
{
    encore_engine *e = open_engine(dir, 4);
    if (!e) return;
    static const int32_t prompt[] = {785, 6722, 315, 9625, 374};
    enum { N = 8 };
    collector plain, banned, forced;
    encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 5, .sampling = greedy(N)};
    run_one(e, &r, &plain);
    CHECK(plain.n_ids == N);
    encore_logit_bias ban[] = {{plain.ids[0], -100.0f}}, force[] = {{9625, 100.0f}},
                      outside[] = {{1 << 30, 1.0f}};
    r.sampling.logit_bias = ban;
    r.sampling.n_logit_bias = 1;
    run_one(e, &r, &banned);
    CHECK(banned.n_ids == N && banned.ids[0] != plain.ids[0]);
    r.sampling.logit_bias = force;
    run_one(e, &r, &forced);
    int n_forced = 0;
    for (size_t i = 0; i < forced.n_ids; i++)
        n_forced += forced.ids[i] == 9625;
    CHECK(forced.n_ids == N && n_forced == N);

    engine *eng = reference_engine(dir);
    graph_sample_bias eban = {ban[0].id, ban[0].bias};
    engine_request_params p = {.prompt_ids = prompt,
                               .n_prompt = 5,
                               .max_tokens = N,
                               .ignore_eos = true,
                               .sampling = {.logit_bias = &eban, .n_logit_bias = 1}};
    int64_t id = -1;
    const int32_t *out = NULL;
    int64_t n_out = 0;
    engine_finish f;
    CHECK(eng && engine_add_request(eng, &p, &id) == ENC_OK);
    while (eng && engine_has_unfinished(eng) && engine_step(eng, NULL) == ENC_OK) {}
    CHECK(eng && engine_request_output(eng, id, &out, &n_out, &f) == ENC_OK && n_out == N);
    CHECK(out && !memcmp(out, banned.ids, N * sizeof *out));
    engine_destroy(eng);

    r.sampling.logit_bias = outside;
    int64_t rid;
    CHECK(encore_submit(e, &r, on_output, &plain, &rid) != ENCORE_OK);
    printf("ok logit_bias: first token %d banned -> %d; %d of %d tokens forced\n", plain.ids[0],
           banned.ids[0], n_forced, N);
    collector_free(&plain);
    collector_free(&banned);
    collector_free(&forced);
    check_allowed_ids(e, prompt, N);
    encore_engine_destroy(e);
}

/* max_tokens 0 with prompt_logprobs: one call, finished "length", no ids,
 * the prompt's logprobs (the first NAN) equal to those a max_tokens 1
 * request gets with its first ids. */
typedef struct prompt_only {
    int n_calls, n_final;
    size_t n_ids, n_prompt_lps;
    float lps[8];
    int32_t ranks[8];
    int n_prompt_top;
    float top1[8]; /* the most likely alternative's logprob */
    char finish[16];
} prompt_only;

static void on_prompt_only(void *user, const encore_output *o)
{
    prompt_only *p = user;
    p->n_calls++;
    p->n_ids += o->n_ids;
    if (o->prompt_logprobs && !p->n_prompt_lps) {
        p->n_prompt_lps = o->n_prompt_logprobs;
        p->n_prompt_top = o->n_prompt_top;
        for (size_t i = 0; i < o->n_prompt_logprobs && i < 8; i++) {
            p->lps[i] = o->prompt_logprobs[i];
            p->ranks[i] = o->prompt_ranks[i];
            p->top1[i] = o->n_prompt_top ? o->prompt_top[i * (size_t)o->n_prompt_top].logprob : 0;
        }
    }
    if (o->finished) {
        snprintf(p->finish, sizeof p->finish, "%s", o->finish_reason);
        __atomic_store_n(&p->n_final, 1, __ATOMIC_RELEASE);
    }
}

static void test_prompt_only(const char *dir)
{
    encore_engine *e = open_engine(dir, 4);
    if (!e) return;
    static const int32_t prompt[] = {785, 6722, 315, 9625, 374};
    prompt_only got[2];
    memset(got, 0, sizeof got);
    for (int k = 0; k < 2; k++) {
        encore_request r = {.prompt_ids = prompt, .n_prompt_ids = 5, .sampling = greedy(k)};
        r.sampling.logprobs = 1;
        r.sampling.prompt_logprobs = 1;
        r.sampling.prompt_top_logprobs = 2 + k;
        CHECK(encore_submit(e, &r, on_prompt_only, &got[k], NULL) == ENCORE_OK);
        for (int t = 0;
             t < WAIT_SECONDS * 1000 && !__atomic_load_n(&got[k].n_final, __ATOMIC_ACQUIRE); t++)
            sleep_us(1000);
    }
    CHECK(got[0].n_final && got[0].n_calls == 1 && got[0].n_ids == 0 &&
          !strcmp(got[0].finish, "length"));
    CHECK(got[0].n_prompt_lps == 5 && got[1].n_prompt_lps == 5 && got[1].n_ids == 1 &&
          isnan(got[0].lps[0]));
    for (int i = 1; i < 5; i++)
        CHECK(got[0].lps[i] == got[1].lps[i] && got[0].lps[i] < 0.0f);
    /* ranks: 0 for the first token, else 1 exactly when no alternative is likelier */
    CHECK(got[0].n_prompt_top == 2 && got[1].n_prompt_top == 3 && got[0].ranks[0] == 0);
    for (int i = 1; i < 5; i++)
        CHECK(got[0].ranks[i] == got[1].ranks[i] && got[0].ranks[i] >= 1 &&
              (got[0].ranks[i] == 1) == (got[0].lps[i] >= got[0].top1[i]));
    encore_engine_destroy(e);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_api_serving TOKENIZER_MODEL_DIR IDS_ONLY_MODEL_DIR\n");
        return 2;
    }
    test_text_out();
    test_text(argv[1]);
    test_bad_requests(argv[1], argv[2]);
    test_concurrent(argv[1]);
    test_stops(argv[1]);
    test_cancel(argv[1]);
    test_destroy_in_flight(argv[1]);
    test_logprobs(argv[1]);
    test_logit_bias(argv[1]);
    test_prompt_only(argv[1]);
    if (check_failures) fprintf(stderr, "test_api_serving: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
