/* bad_words.c - bad_words as a constraint (see bad_words.h).
 *
 *   api_bad_words { inner: the constraint wrapped, or none,
 *                   ids: every sequence's ids one after another, start[n_seqs + 1],
 *                   history: the last ids generated, at most the longest sequence less one }
 *
 * fill_mask reads the history and changes nothing, so a retried step gets
 * the same mask; accept appends to it. */
#include "api/bad_words.h"

#include <stdlib.h>
#include <string.h>

typedef struct api_bad_words {
    engine_constraint inner; /* fill_mask NULL: none */
    int32_t *ids;
    size_t *start;
    size_t n_seqs;
    int32_t *history; /* [cap_hist], oldest first */
    size_t n_hist, cap_hist;
} api_bad_words;

/* Whether sequence s's ids but its last are the last ids generated. */
static bool bad_words__armed(const api_bad_words *b, size_t s)
{
    size_t prefix = b->start[s + 1] - b->start[s] - 1;
    if (!prefix) return true; /* (history may be NULL then) */
    return prefix <= b->n_hist &&
           !memcmp(b->ids + b->start[s], b->history + b->n_hist - prefix, prefix * sizeof *b->ids);
}

static void bad_words__fill(void *state, uint32_t *allowed, int32_t n_vocab)
{
    api_bad_words *b = state;
    if (b->inner.fill_mask) {
        b->inner.fill_mask(b->inner.state, allowed, n_vocab);
    } else { /* every id */
        size_t full = (size_t)n_vocab / 32;
        memset(allowed, 0xff, full * sizeof *allowed);
        if (n_vocab % 32) allowed[full] = (1u << (n_vocab % 32)) - 1;
    }
    for (size_t s = 0; s < b->n_seqs; s++) {
        if (!bad_words__armed(b, s)) continue;
        int32_t last = b->ids[b->start[s + 1] - 1];
        allowed[last / 32] &= ~(1u << (last % 32));
    }
}

static bool bad_words__accept(void *state, int32_t id)
{
    api_bad_words *b = state;
    if (b->cap_hist) {
        if (b->n_hist == b->cap_hist) {
            memmove(b->history, b->history + 1, (b->n_hist - 1) * sizeof *b->history);
            b->n_hist--;
        }
        b->history[b->n_hist++] = id;
    }
    return b->inner.accept ? b->inner.accept(b->inner.state, id) : true;
}

static void bad_words__free(api_bad_words *b)
{
    free(b->ids);
    free(b->start);
    free(b->history);
    free(b);
}

static void bad_words__destroy(void *state)
{
    api_bad_words *b = state;
    if (b->inner.destroy) b->inner.destroy(b->inner.state);
    bad_words__free(b);
}

/* Append ids[0..n) as the next sequence of b. */
static enc_status bad_words__add(api_bad_words *b, const int32_t *ids, size_t n, size_t *cap_ids)
{
    size_t end = b->start[b->n_seqs];
    if (end + n > *cap_ids) {
        size_t cap = (end + n) * 2;
        int32_t *grown = realloc(b->ids, cap * sizeof *grown);
        if (!grown) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request: bad_words");
        b->ids = grown;
        *cap_ids = cap;
    }
    memcpy(b->ids + end, ids, n * sizeof *ids);
    b->start[++b->n_seqs] = end + n;
    if (n - 1 > b->cap_hist) b->cap_hist = n - 1;
    return ENC_OK;
}

/* text[0..len) encoded under tok_mu. */
static enc_status bad_words__encode(tokenizer *tok, pthread_mutex_t *tok_mu, const char *text,
                                    size_t len, int32_t **ids, size_t *n)
{
    pthread_mutex_lock(tok_mu);
    enc_status s = tokenizer_encode(tok, text, len, ids, n);
    pthread_mutex_unlock(tok_mu);
    return s;
}

/* Word i's sequences into b: as it stands, and with a leading space where
 * vLLM keeps that spelling. */
static enc_status bad_words__word(api_bad_words *b, tokenizer *tok, pthread_mutex_t *tok_mu,
                                  const char *word, size_t i, size_t *cap_ids)
{
    const char *w = word + strspn(word, " \t\n\r\f\v");
    size_t len = strlen(w);
    if (!len)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: sampling.bad_words[%zu] is empty or only whitespace", i);
    char *spaced = malloc(len + 2);
    int32_t *plain = NULL, *lead = NULL;
    size_t n_plain = 0, n_lead = 0;
    enc_status s = spaced ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "request: bad_words");
    if (s == ENC_OK) {
        spaced[0] = ' ';
        memcpy(spaced + 1, w, len + 1);
        s = bad_words__encode(tok, tok_mu, w, len, &plain, &n_plain);
    }
    if (s == ENC_OK) s = bad_words__encode(tok, tok_mu, spaced, len + 1, &lead, &n_lead);
    if (s == ENC_OK && n_plain) s = bad_words__add(b, plain, n_plain, cap_ids);
    if (s == ENC_OK && n_plain && n_lead == n_plain && lead[0] != plain[0])
        s = bad_words__add(b, lead, n_lead, cap_ids);
    free(spaced);
    free(plain);
    free(lead);
    return s == ENC_OK ? ENC_OK : enc_fail_context(s, "request: sampling.bad_words[%zu]", i);
}

enc_status api_bad_words_wrap(tokenizer *tok, pthread_mutex_t *tok_mu, const char *const *words,
                              size_t n, int32_t n_vocab, engine_constraint *c)
{
    api_bad_words *b = calloc(1, sizeof *b);
    if (b) b->start = calloc(2 * n + 1, sizeof *b->start);
    if (!b || !b->start) {
        free(b);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request: bad_words");
    }
    size_t cap_ids = 0;
    enc_status s = ENC_OK;
    for (size_t i = 0; i < n && s == ENC_OK; i++)
        s = words[i]
                ? bad_words__word(b, tok, tok_mu, words[i], i, &cap_ids)
                : enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: sampling.bad_words[%zu] is NULL", i);
    for (size_t k = 0; s == ENC_OK && k < b->start[b->n_seqs]; k++)
        if (b->ids[k] < 0 || b->ids[k] >= n_vocab)
            s = enc_fail(ENC_ERR_INVALID_ARGUMENT,
                         "request: bad_words: token %d is outside the vocabulary [0, %d)",
                         b->ids[k], n_vocab);
    if (s == ENC_OK && b->cap_hist && !(b->history = malloc(b->cap_hist * sizeof *b->history)))
        s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "request: bad_words");
    if (s != ENC_OK) {
        bad_words__free(b);
        return s;
    }
    b->inner = *c;
    *c = (engine_constraint){.state = b,
                             .fill_mask = bad_words__fill,
                             .accept = bad_words__accept,
                             .destroy = bad_words__destroy};
    return ENC_OK;
}
