/* vocab_sampler.h - the real Qwen3 vocabulary as a grammar_vocab (added
 * tokens never allowed, end ids = the tokenizer's stop ids) and a seeded
 * draw from a token mask that ends sequences; shared by the schema property
 * test (sample_schemas.c) and the mask benchmark (bench/bench_grammar.c). */
#ifndef ENC_TESTS_VOCAB_SAMPLER_H
#define ENC_TESTS_VOCAB_SAMPLER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

static uint64_t vs_rng;
static inline uint32_t vs_rnd(uint32_t n)
{
    vs_rng = vs_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)((vs_rng >> 33) % n);
}

static inline double vs_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct vs_vocab {
    grammar_vocab *v;
    int32_t n_vocab;
    int32_t end_ids[8];
    int n_end;
    const char **bytes;
    size_t *lens;
    int32_t one_byte[256]; /* the one-byte tokens */
    int n_one_byte;
} vs_vocab;

static inline int vs_load(const char *dir, vs_vocab *vi)
{
    tokenizer *t = NULL;
    if (tokenizer_load(dir, &t) != ENC_OK) {
        fprintf(stderr, "%s\n", enc_last_error());
        return -1;
    }
    vi->n_vocab = tokenizer_vocab_size(t);
    vi->bytes = calloc((size_t)vi->n_vocab, sizeof *vi->bytes);
    vi->lens = calloc((size_t)vi->n_vocab, sizeof *vi->lens);
    for (int32_t i = 0; i < vi->n_vocab; i++) {
        size_t n = 0;
        const char *b = tokenizer_is_added(t, i) ? NULL : tokenizer_token_bytes(t, i, &n);
        if (b) {
            char *copy = malloc(n + 1);
            memcpy(copy, b, n);
            vi->bytes[i] = copy, vi->lens[i] = n;
        }
    }
    for (int32_t i = 0; i < vi->n_vocab && vi->n_one_byte < 256; i++)
        if (vi->bytes[i] && vi->lens[i] == 1) vi->one_byte[vi->n_one_byte++] = i;
    vi->n_end = (int)tokenizer_stop_ids(t, vi->end_ids, 8);
    if (vi->n_end > 8) vi->n_end = 8;
    tokenizer_free(t);
    return grammar_vocab_new((const uint8_t *const *)vi->bytes, vi->lens, vi->n_vocab, &vi->v) ==
                   ENC_OK
               ? 0
               : -1;
}

static inline int vs_is_end(const vs_vocab *vi, int32_t id)
{
    for (int i = 0; i < vi->n_end; i++)
        if (vi->end_ids[i] == id) return 1;
    return 0;
}

static inline int vs_allowed_bit(const uint32_t *mask, int32_t id)
{
    return (int)((mask[id >> 5] >> (id & 31)) & 1);
}

/* The k-th allowed id (0-based). */
static inline int32_t vs_nth_allowed(const vs_vocab *vi, const uint32_t *mask, uint32_t k)
{
    for (int32_t w = 0; w < (vi->n_vocab + 31) / 32; w++) {
        uint32_t c = (uint32_t)__builtin_popcount(mask[w]);
        if (k >= c) {
            k -= c;
            continue;
        }
        uint32_t bits = mask[w];
        while (k--)
            bits &= bits - 1;
        return w * 32 + __builtin_ctz(bits);
    }
    return -1;
}

/* The next id: uniform among the allowed ones; late (after the length the
 * caller drew), an end id when allowed, else '"', else (half the time) ']'
 * or '}', else any one-byte token, so that sequences end. */
static inline int32_t vs_pick(const vs_vocab *vi, const uint32_t *mask, int late)
{
    const int32_t *one_byte = vi->one_byte;
    int n_one_byte = vi->n_one_byte;
    uint32_t n = 0;
    for (int32_t w = 0; w < (vi->n_vocab + 31) / 32; w++)
        n += (uint32_t)__builtin_popcount(mask[w]);
    if (!n) return -1;
    if (!late || vs_rnd(10) == 0) return vs_nth_allowed(vi, mask, vs_rnd(n));
    for (int i = 0; i < vi->n_end; i++)
        if (vs_allowed_bit(mask, vi->end_ids[i])) return vi->end_ids[i];
    int32_t close[256], one[256], quote = -1;
    int n_close = 0, n_one = 0;
    for (int i = 0; i < n_one_byte; i++) {
        int32_t id = one_byte[i];
        if (!vs_allowed_bit(mask, id)) continue;
        one[n_one++] = id;
        if (vi->bytes[id][0] == '"') quote = id;
        if (vi->bytes[id][0] == ']' || vi->bytes[id][0] == '}') close[n_close++] = id;
    }
    if (quote >= 0) return quote; /* a string ends first */
    if (n_close && vs_rnd(2)) return close[vs_rnd((uint32_t)n_close)];
    if (n_one) return one[vs_rnd((uint32_t)n_one)];
    return vs_nth_allowed(vi, mask, vs_rnd(n));
}

static inline void vs_free(vs_vocab *vi)
{
    for (int32_t i = 0; i < vi->n_vocab; i++)
        free((void *)vi->bytes[i]);
    free(vi->bytes);
    free(vi->lens);
    grammar_vocab_free(vi->v);
}

#endif
