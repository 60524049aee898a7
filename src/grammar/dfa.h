/* dfa.h - a grammar's matcher states, built lazily as a DFA over bytes.
 *
 * A matcher state is the set of the pushdown stacks still alive. Stacks are
 * hash-consed nodes (element position, parent node), so a set is a sorted
 * array of node ids, interned: equal sets get equal ids. Each set keeps its
 * byte transitions once computed and, when asked, the token mask of that
 * state (computed by walking the vocabulary trie, cached). Not thread-safe:
 * the caller locks (matcher.c). */
#ifndef ENC_GRAMMAR_DFA_H
#define ENC_GRAMMAR_DFA_H

#include <stdint.h>

#include "grammar/grammar_impl.h"
#include "grammar/vocab_impl.h"

#define GD_DEAD (-1)  /* no stack survives */
#define GD_ERROR (-2) /* out of memory or over the table limits (last error set) */

enc_status grammar_dfa_new(const grammar *g, const grammar_vocab *v, grammar_dfa **out);
void grammar_dfa_free(grammar_dfa *d);
const grammar_vocab *grammar_dfa_vocab(const grammar_dfa *d);

/* The state at the start of the text. */
int32_t grammar_dfa_start(grammar_dfa *d);
/* The state after one more byte, GD_DEAD or GD_ERROR. */
int32_t grammar_dfa_step(grammar_dfa *d, int32_t state, uint8_t byte);
/* Whether the text so far is a complete sentence in this state. */
int grammar_dfa_can_end(const grammar_dfa *d, int32_t state);
/* Whether no byte can follow in this state. */
int grammar_dfa_is_final(const grammar_dfa *d, int32_t state);
/* The tokens allowed in this state, [(n_vocab+31)/32] words, owned by d and
 * valid until the next call into d; NULL on error. */
const uint32_t *grammar_dfa_mask(grammar_dfa *d, int32_t state);

#endif
