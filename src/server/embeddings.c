/* embeddings.c - POST /v1/embeddings (OpenAI's and vLLM's): each input, a
 * text or token ids or a batch of up to 2048 of them, through an embedding
 * model (encore serve --runner pooling), answered with one vector per input
 * in input order.
 *
 * A text is tokenized with the tokenizer's special tokens unless
 * add_special_tokens is false (Qwen3-Embedding's tokenizer appends the
 * <|endoftext|> whose hidden state is the embedding); ids go as given.
 * truncate_prompt_tokens keeps an input's last tokens (the special ones
 * included); an input longer than max_model_len is a 400 naming it. Every
 * input is an engine request of its own, submitted together, so continuous
 * batching packs them with everyone else's; the whole request counts as one
 * in --max-queue (as /tokenize does), whatever its inputs. The
 * vector is the last token's final hidden state, cut to `dimensions` when
 * given (Matryoshka), then scaled to unit length unless normalize is false
 * (vLLM's defaults); encoding_format "base64" sends its little-endian
 * float32 bytes, as OpenAI's clients ask by default. A client that hangs up
 * cancels its inputs. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_out.h"
#include "server_impl.h"

enum { EMB_POLL_MS = 50 };

typedef struct emb_item {
    struct emb_job *job;
    int32_t *ids; /* the input's tokens, until submitted */
    size_t n_ids;
    float *vec; /* [dims] once done and embedded */
    size_t n_prompt_tokens;
    int done;
    char finish[16]; /* its finish_reason */
} emb_item;

typedef struct emb_job {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    size_t dims; /* floats kept per vector */
    int normalize;
    size_t n, n_done;
    emb_item *items; /* [n] */
} emb_job;

/* The engine thread's call: keep the vector of a finished input. */
static void emb__on_output(void *user, const encore_output *o)
{
    emb_item *it = user;
    if (!o->finished) return;
    emb_job *j = it->job;
    float *v = NULL;
    if (o->embedding && o->n_embedding >= j->dims && (v = malloc(j->dims * sizeof *v))) {
        memcpy(v, o->embedding, j->dims * sizeof *v);
        if (j->normalize) encore_embedding_normalize(v, j->dims);
    }
    pthread_mutex_lock(&j->mu);
    it->vec = v;
    it->n_prompt_tokens = o->n_prompt_tokens;
    snprintf(it->finish, sizeof it->finish, "%s", o->finish_reason ? o->finish_reason : "error");
    it->done = 1;
    j->n_done++;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
}

/* Input i's tokens into it: tokenized text (checked for length first) or
 * a copy of the ids, truncated as asked, at most max_model_len. 0 with err
 * filled when refused. */
static int emb__tokens(http_server *s, const oai_request *req, size_t i, emb_item *it,
                       oai_error *err)
{
    const oai_prompt *p = &req->prompts[i];
    char label[OAI_PROMPT_LABEL_MAX];
    oai_prompt_label(req, i, label, sizeof label);
    if (p->text) {
        if (!http_check_text(s, "input", strlen(p->text), err)) return 0;
        encore_status st = encore_tokenize_special(s->engine, p->text, strlen(p->text),
                                                   req->add_special_tokens, &it->ids, &it->n_ids);
        if (st != ENCORE_OK) {
            http_error_from_encore(err, st, "cannot tokenize");
            return 0;
        }
    } else {
        for (size_t k = 0; k < p->n_ids; k++)
            if (p->ids[k] < 0 || p->ids[k] >= s->vocab_size)
                return oai_error_set(err, 400, "input",
                                     "%s: token %d is outside the vocabulary [0, %lld)", label,
                                     p->ids[k], (long long)s->vocab_size);
        it->ids = malloc(p->n_ids * sizeof *it->ids);
        if (!it->ids) return oai_error_set(err, 503, NULL, "out of memory");
        memcpy(it->ids, p->ids, p->n_ids * sizeof *it->ids);
        it->n_ids = p->n_ids;
    }
    int64_t keep = req->truncate_prompt_tokens < 0 ? s->max_model_len : req->truncate_prompt_tokens;
    if (keep > 0 && (int64_t)it->n_ids > keep) {
        memmove(it->ids, it->ids + it->n_ids - (size_t)keep, (size_t)keep * sizeof *it->ids);
        it->n_ids = (size_t)keep;
    }
    if (it->n_ids == 0) return oai_error_set(err, 400, "input", "%s gives no tokens", label);
    if ((int64_t)it->n_ids > s->max_model_len)
        return oai_error_set(err, 400, "input",
                             "This model's maximum context length is %lld tokens. However, %s "
                             "has %zu tokens. Please reduce the length of the input (or set "
                             "truncate_prompt_tokens).",
                             (long long)s->max_model_len, label, it->n_ids);
    return 1;
}

static emb_job *emb__job_new(size_t n, size_t dims, int normalize)
{
    emb_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->items = calloc(n, sizeof *j->items);
    if (!j->items) {
        free(j);
        return NULL;
    }
    pthread_mutex_init(&j->mu, NULL);
    http_cond_init(&j->cond);
    j->n = n;
    j->dims = dims;
    j->normalize = normalize;
    for (size_t i = 0; i < n; i++)
        j->items[i].job = j;
    return j;
}

static void emb__job_free(emb_job *j)
{
    if (!j) return;
    for (size_t i = 0; i < j->n; i++) {
        free(j->items[i].ids);
        free(j->items[i].vec);
    }
    free(j->items);
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* Submit every input; those not submitted count as done. 0 with err filled
 * when one is refused (the ones before it are cancelled: their last calls
 * still come). ids[i] gets each request's id. */
static int emb__submit(http_server *s, emb_job *j, int64_t *ids, oai_error *err)
{
    size_t i = 0;
    encore_status st = ENCORE_OK;
    for (; i < j->n; i++) {
        emb_item *it = &j->items[i];
        encore_request r = {.prompt_ids = it->ids, .n_prompt_ids = it->n_ids};
        st = encore_submit(s->engine, &r, emb__on_output, it, &ids[i]);
        free(it->ids);
        it->ids = NULL;
        if (st != ENCORE_OK) break;
    }
    if (i == j->n) return 1;
    http_error_from_encore(err, st, "cannot embed");
    pthread_mutex_lock(&j->mu);
    j->n_done += j->n - i; /* the refused one and those after it never run */
    pthread_mutex_unlock(&j->mu);
    for (size_t k = 0; k < i; k++)
        encore_cancel(s->engine, ids[k]);
    return 0;
}

/* Wait for every submitted input's last call, cancelling all when the
 * client hangs up or the server stops; 1 when the client is still there. */
static int emb__wait(http_server *s, emb_job *j, const int64_t *ids, int fd)
{
    int alive = 1;
    pthread_mutex_lock(&j->mu);
    while (j->n_done < j->n) {
        http_cond_wait_ms(&j->cond, &j->mu, EMB_POLL_MS);
        if (!alive || j->n_done == j->n) continue;
        if (!atomic_load(&s->stopping) && !http_client_gone(fd)) continue;
        alive = 0;
        pthread_mutex_unlock(&j->mu);
        for (size_t i = 0; i < j->n; i++)
            encore_cancel(s->engine, ids[i]);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return alive;
}

/* Byte k of v's little-endian float32 bytes. */
static unsigned emb__byte(const float *v, size_t k)
{
    uint32_t u;
    memcpy(&u, &v[k / 4], 4);
    return u >> (8 * (k % 4)) & 0xff;
}

/* v[0..n) as base64 of its little-endian float32 bytes into w. */
static void emb__base64(json_out *w, const float *v, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n_bytes = n * 4, o = 0;
    char *out = malloc((n_bytes + 2) / 3 * 4 + 1);
    if (!out) {
        w->oom = 1; /* the reply is lost, as when the writer itself runs out */
        return;
    }
    for (size_t i = 0; i < n_bytes; i += 3) {
        uint32_t x = emb__byte(v, i) << 16;
        if (i + 1 < n_bytes) x |= emb__byte(v, i + 1) << 8;
        if (i + 2 < n_bytes) x |= emb__byte(v, i + 2);
        out[o++] = digits[x >> 18 & 63];
        out[o++] = digits[x >> 12 & 63];
        out[o++] = i + 1 < n_bytes ? digits[x >> 6 & 63] : '=';
        out[o++] = i + 2 < n_bytes ? digits[x & 63] : '=';
    }
    out[o] = '\0';
    json_out_string(w, out);
    free(out);
}

/* One vector as numbers: each float32 with the 9 digits that give it back. */
static void emb__floats(json_out *w, const float *v, size_t n)
{
    json_out_begin_array(w);
    for (size_t i = 0; i < n; i++) {
        char buf[32];
        if (!isfinite(v[i])) { /* an overflowed state: JSON has no such number */
            json_out_null(w);
            continue;
        }
        snprintf(buf, sizeof buf, "%.9g", (double)v[i]);
        json_out_raw(w, buf);
    }
    json_out_end_array(w);
}

static char *emb__body(http_server *s, const emb_job *j, int base64)
{
    char id[48];
    size_t n_tokens = 0;
    http_new_id(s, "embd-", id, sizeof id);
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_member_string(&w, "id", id);
    json_out_member_string(&w, "object", "list");
    json_out_member_number(&w, "created", (double)time(NULL));
    json_out_member_string(&w, "model", s->model_name);
    json_out_key(&w, "data");
    json_out_begin_array(&w);
    for (size_t i = 0; i < j->n; i++) {
        json_out_begin_object(&w);
        json_out_member_number(&w, "index", (double)i);
        json_out_member_string(&w, "object", "embedding");
        json_out_key(&w, "embedding");
        if (base64)
            emb__base64(&w, j->items[i].vec, j->dims);
        else
            emb__floats(&w, j->items[i].vec, j->dims);
        json_out_end_object(&w);
        n_tokens += j->items[i].n_prompt_tokens;
    }
    json_out_end_array(&w);
    json_out_key(&w, "usage");
    json_out_begin_object(&w);
    json_out_member_number(&w, "prompt_tokens", (double)n_tokens);
    json_out_member_number(&w, "total_tokens", (double)n_tokens);
    json_out_end_object(&w);
    json_out_end_object(&w);
    return json_out_finish(&w);
}

/* The error of an input that has no vector: cancelled, failed, or out of
 * memory for it. 0 when every input has one. */
static int emb__failed(const emb_job *j, oai_error *err)
{
    for (size_t i = 0; i < j->n; i++) {
        const emb_item *it = &j->items[i];
        if (it->vec) continue;
        if (!strcmp(it->finish, "length"))
            return !oai_error_set(err, 503, NULL, "out of memory for input %zu's embedding", i);
        return !oai_error_set(err, 500, NULL, "input %zu ended with \"%s\" (the log says why)", i,
                              it->finish);
    }
    return 0;
}

/* The checks that need no tokens: the model, the dimensions. */
static int emb__check(const http_server *s, const oai_request *req, oai_error *err)
{
    if (req->model && strcmp(req->model, s->model_name)) {
        http_error_no_model(s, req->model, err);
        return 0;
    }
    if (req->truncate_prompt_tokens > s->max_model_len)
        return oai_error_set(err, 400, "truncate_prompt_tokens",
                             "'truncate_prompt_tokens' (%lld) is more than max_model_len (%lld)",
                             (long long)req->truncate_prompt_tokens, (long long)s->max_model_len);
    if (req->dimensions > s->hidden_size)
        return oai_error_set(err, 400, "dimensions",
                             "'dimensions' (%lld) is more than the model's embedding width "
                             "(%lld)",
                             (long long)req->dimensions, (long long)s->hidden_size);
    return 1;
}

/* Tokenize, admit, submit and wait; the reply. */
static enum MHD_Result emb__run(http_server *s, struct MHD_Connection *conn, const oai_request *req,
                                int fd, const char *client, emb_job *j, int64_t *ids)
{
    oai_error err;
    if (!emb__check(s, req, &err)) return http_reply_error(s, conn, &err);
    for (size_t i = 0; i < j->n; i++)
        if (!emb__tokens(s, req, i, &j->items[i], &err)) return http_reply_error(s, conn, &err);
    if (!http_admit(s, client, 1, 0, NULL, &err)) return http_reply_error(s, conn, &err);
    int submitted = emb__submit(s, j, ids, &err);
    int alive = emb__wait(s, j, ids, fd);
    http_admit_release(s, client, 1, 0);
    if (!alive) return MHD_NO; /* nobody to answer */
    if (!submitted || emb__failed(j, &err)) return http_reply_error(s, conn, &err);
    char *body = emb__body(s, j, req->base64);
    return body ? http_reply_json(conn, MHD_HTTP_OK, body) : MHD_NO;
}

enum MHD_Result emb_handle(http_server *s, struct MHD_Connection *conn, oai_request *req, int fd,
                           const char *client)
{
    if (req->ignored[0])
        encore_log_warning("/v1/embeddings: the following fields were present in the request "
                           "but ignored: %s",
                           req->ignored);
    size_t dims = (size_t)(req->dimensions ? req->dimensions : s->hidden_size);
    emb_job *j = emb__job_new(req->n_prompts, dims, req->normalize);
    int64_t *ids = calloc(req->n_prompts, sizeof *ids);
    enum MHD_Result r = MHD_NO; /* out of memory: the connection closes unanswered */
    if (j && ids) r = emb__run(s, conn, req, fd, client, j, ids);
    emb__job_free(j);
    free(ids);
    oai_request_free(req);
    return r;
}
