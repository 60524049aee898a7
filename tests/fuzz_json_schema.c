/* fuzz_json_schema.c - libFuzzer target for the JSON Schema compiler.
 *
 * Each input is a schema. One that compiles to EBNF must give text that the
 * grammar compiler accepts (anything else is a bug of the schema compiler),
 * and a matcher over a byte vocabulary must then take a few steps of the
 * masks' first allowed byte without failing. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static grammar_vocab *fuzz_vocab(void) {
    static grammar_vocab *v;
    if (v) return v;
    static uint8_t bytes[256];
    const uint8_t *tb[257];
    size_t lens[257];
    for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i, tb[i] = &bytes[i], lens[i] = 1;
    tb[256] = NULL, lens[256] = 0;
    if (grammar_vocab_new(tb, lens, 257, &v) != ENC_OK) abort();
    return v;
}

static void walk(const grammar *g) {
    int32_t end = 256;
    grammar_matcher *m = NULL;
    if (grammar_matcher_new(g, fuzz_vocab(), &end, 1, &m) != ENC_OK) abort();
    uint32_t mask[9];
    for (int step = 0; step < 64; step++) {
        if (grammar_matcher_fill_mask(m, mask) != ENC_OK) abort();
        int id = -1;
        for (int b = 0; b < 257 && id < 0; b++)
            if ((mask[b >> 5] >> (b & 31)) & 1) id = b;
        if (id < 0) break; /* only after the end: the grammar never dead-ends */
        if (!grammar_matcher_accept(m, id)) abort();
        if (id == end) break;
    }
    grammar_matcher_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *ebnf = NULL;
    if (grammar_json_schema_to_ebnf((const char *)data, size, "f-", &ebnf) != ENC_OK) return 0;
    grammar *g = NULL;
    if (grammar_compile(ebnf, strlen(ebnf), "f-root", &g) != ENC_OK) {
        fprintf(stderr, "schema compiled to EBNF the grammar compiler refuses: %s\n%s\n", enc_last_error(), ebnf);
        abort();
    }
    walk(g);
    grammar_free(g);
    free(ebnf);
    return 0;
}
