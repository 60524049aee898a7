/* grammar_impl.h - the compiled form of a grammar, shared by the compiler
 * (ebnf_parse.c) and the matcher (matcher.c, dfa.c).
 *
 * Every alternative of every rule is a run of elements ended by an END
 * element, all in one array:
 *
 *   elems: [BYTES 3][REF 1][END] [BYTES 5][END] [END] ...
 *           ^ rule 0, alt 0        ^ alt 1      ^ rule 1, alt 0 (empty)
 *
 * An element is a uint32: the kind in the top two bits, the argument below
 * (a byte-set index for BYTES, a rule index for REF). A BYTES element matches
 * one byte of its 256-bit set; characters beyond ASCII were split into UTF-8
 * byte sequences at compile time, so the matcher never decodes UTF-8. */
#ifndef ENC_GRAMMAR_GRAMMAR_IMPL_H
#define ENC_GRAMMAR_GRAMMAR_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "grammar/grammar.h"

enum { GR_END = 0u, GR_BYTES = 1u, GR_REF = 2u };
#define GR_KIND(e) ((uint32_t)(e) >> 30)
#define GR_ARG(e) ((uint32_t)(e)&0x3fffffffu)
#define GR_ELEM(kind, arg) (((uint32_t)(kind) << 30) | (uint32_t)(arg))

typedef struct grammar_byteset {
    uint32_t bits[8]; /* bit b: byte b matches */
} grammar_byteset;

static inline int grammar_byteset_has(const grammar_byteset *s, uint8_t b)
{
    return (int)((s->bits[b >> 5] >> (b & 31)) & 1u);
}

typedef struct grammar_dfa grammar_dfa; /* dfa.c: the lazily built state tables */

struct grammar {
    uint32_t *elems; /* [n_elems] */
    uint32_t n_elems;
    uint32_t *alts; /* [n_alts]: the first element of each alternative */
    uint32_t
        *rule_alt; /* [n_rules + 1]: rule r's alternatives are alts[rule_alt[r] .. rule_alt[r+1]) */
    uint32_t n_rules;
    grammar_byteset *sets; /* [n_sets] */
    uint32_t n_sets;
    uint32_t root;
    /* The state tables are built lazily and shared by every matcher of this
     * grammar over the same vocabulary (the first one used); the lock makes
     * that safe from several threads. */
    pthread_mutex_t lock;
    grammar_dfa *dfa; /* NULL until the first matcher */
};

#endif
