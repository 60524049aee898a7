/* text_out.c - a request's output text: streamed detokenization and stop
 * strings held back until they match or cannot (see text_out.h). */
#include "api/text_out.h"

#include <stdlib.h>
#include <string.h>

static enc_status text_out__reserve(char **p, size_t *cap, size_t need)
{
    if (need <= *cap) return ENC_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    char *q = realloc(*p, c);
    if (!q) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "output text of %zu bytes", need);
    *p = q;
    *cap = c;
    return ENC_OK;
}

enc_status text_out_init(text_out *t, const tokenizer *tok, int skip_special,
                         const char *const *stop, size_t n_stop)
{
    memset(t, 0, sizeof *t);
    t->matched = -1;
    t->tok = tok;
    size_t bytes = n_stop * (sizeof *t->stop + sizeof *t->stop_len);
    for (size_t i = 0; i < n_stop; i++) bytes += strlen(stop[i]) + 1;
    if (n_stop) {
        /* [stop pointers][stop lengths][the strings, each NUL-terminated] */
        t->stop = malloc(bytes);
        if (!t->stop) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%zu stop strings", n_stop);
        t->stop_len = (size_t *)(t->stop + n_stop);
        char *chars = (char *)(t->stop_len + n_stop);
        for (size_t i = 0; i < n_stop; i++) {
            t->stop_len[i] = strlen(stop[i]);
            t->stop[i] = memcpy(chars, stop[i], t->stop_len[i] + 1);
            chars += t->stop_len[i] + 1;
        }
        t->n_stop = n_stop;
    }
    enc_status s = tok ? tokenizer_stream_create(tok, skip_special, &t->stream) : ENC_OK;
    if (s != ENC_OK) text_out_free(t);
    return s;
}

void text_out_free(text_out *t)
{
    tokenizer_stream_destroy(t->stream);
    free(t->stop);
    free(t->held);
    free(t->out);
    memset(t, 0, sizeof *t);
    t->matched = -1;
}

/* Move held[0..n) to the end of out. */
static enc_status text_out__release(text_out *t, size_t n)
{
    ENC_TRY(text_out__reserve(&t->out, &t->cap_out, t->n_out + n + 1));
    if (n) { /* held is NULL until the first text */
        memcpy(t->out + t->n_out, t->held, n);
        memmove(t->held, t->held + n, t->n_held - n);
    }
    t->n_out += n;
    t->out[t->n_out] = '\0';
    t->n_held -= n;
    return ENC_OK;
}

/* The earliest stop string in held that ends past held[from] (ties: the
 * first given); its index and start, or -1. */
static int text_out__find(const text_out *t, size_t from, size_t *at)
{
    int best = -1;
    for (size_t i = 0; i < t->n_stop; i++) {
        size_t len = t->stop_len[i];
        if (len == 0 || len > t->n_held) continue;
        size_t p = from + 1 > len ? from + 1 - len : 0;
        for (; p + len <= t->n_held && (best < 0 || p < *at); p++) {
            if (memcmp(t->held + p, t->stop[i], len) == 0) {
                best = (int)i;
                *at = p;
                break;
            }
        }
    }
    return best;
}

/* Length of the longest tail of held that is a proper prefix of a stop string. */
static size_t text_out__hold_len(const text_out *t)
{
    size_t best = 0;
    for (size_t i = 0; i < t->n_stop; i++) {
        if (t->stop_len[i] == 0) continue;
        size_t k = t->stop_len[i] - 1 < t->n_held ? t->stop_len[i] - 1 : t->n_held;
        for (; k > best; k--) {
            if (memcmp(t->held + t->n_held - k, t->stop[i], k) == 0) {
                best = k;
                break;
            }
        }
    }
    return best;
}

enc_status text_out_put_text(text_out *t, const char *s, size_t len, bool check_stop)
{
    if (t->matched >= 0 || len == 0) return ENC_OK;
    ENC_TRY(text_out__reserve(&t->held, &t->cap_held, t->n_held + len));
    size_t from = t->n_held;
    memcpy(t->held + t->n_held, s, len);
    t->n_held += len;
    size_t at = 0;
    int hit = check_stop ? text_out__find(t, from, &at) : -1;
    if (hit >= 0) {
        ENC_TRY(text_out__release(t, at + (t->include_stop ? t->stop_len[hit] : 0)));
        t->n_held = 0; /* the match and what follows it are dropped */
        t->matched = hit;
        return ENC_OK;
    }
    return text_out__release(t, t->n_held - text_out__hold_len(t));
}

enc_status text_out_put_id(text_out *t, int32_t id, bool check_stop)
{
    size_t n;
    if (!t->stream || t->matched >= 0 || !tokenizer_token_bytes(t->tok, id, &n)) return ENC_OK;
    const char *s;
    ENC_TRY(tokenizer_stream_put(t->stream, id, &s, &n));
    return text_out_put_text(t, s, n, check_stop);
}

enc_status text_out_finish(text_out *t, bool check_stop)
{
    if (t->stream && t->matched < 0) {
        const char *s;
        size_t n;
        ENC_TRY(tokenizer_stream_flush(t->stream, &s, &n));
        ENC_TRY(text_out_put_text(t, s, n, check_stop));
    }
    return text_out__release(t, t->n_held);
}

const char *text_out_take(text_out *t, size_t *len)
{
    *len = t->n_out;
    t->n_out = 0; /* the bytes stay until the next put overwrites them */
    return t->out ? t->out : "";
}
