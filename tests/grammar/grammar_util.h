/* grammar_util.h - helpers of the grammar tests: a byte vocabulary (id b is
 * the byte b, id 256 the end), whole-string matching. */
#ifndef ENC_TESTS_GRAMMAR_UTIL_H
#define ENC_TESTS_GRAMMAR_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"

#define GT_END 256

static inline grammar_vocab *gt_byte_vocab(void)
{
    static uint8_t bytes[256];
    const uint8_t *tb[257];
    size_t lens[257];
    for (int i = 0; i < 256; i++)
        bytes[i] = (uint8_t)i, tb[i] = &bytes[i], lens[i] = 1;
    tb[256] = NULL, lens[256] = 0;
    grammar_vocab *v = NULL;
    if (grammar_vocab_new(tb, lens, 257, &v) != ENC_OK) {
        fprintf(stderr, "byte vocab: %s\n", enc_last_error());
        exit(1);
    }
    return v;
}

static inline grammar *gt_compile(const char *ebnf)
{
    grammar *g = NULL;
    if (grammar_compile(ebnf, strlen(ebnf), NULL, &g) != ENC_OK) {
        fprintf(stderr, "compile failed: %s\n--- grammar:\n%s\n", enc_last_error(), ebnf);
        exit(1);
    }
    return g;
}

/* 1: s (n bytes) is a sentence of g; 0: not. */
static inline int gt_matches(const grammar *g, const grammar_vocab *v, const char *s, size_t n)
{
    int32_t end = GT_END;
    grammar_matcher *m = NULL;
    if (grammar_matcher_new(g, v, &end, 1, &m) != ENC_OK) {
        fprintf(stderr, "matcher: %s\n", enc_last_error());
        exit(1);
    }
    int ok =
        grammar_matcher_accept_bytes(m, (const uint8_t *)s, n) && grammar_matcher_accept(m, GT_END);
    grammar_matcher_free(m);
    return ok;
}

#endif
