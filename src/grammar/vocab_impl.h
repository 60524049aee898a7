/* vocab_impl.h - the vocabulary trie's layout (vocab.c builds it, dfa.c
 * walks it). */
#ifndef ENC_GRAMMAR_VOCAB_IMPL_H
#define ENC_GRAMMAR_VOCAB_IMPL_H

#include <stdint.h>

#include "grammar/grammar.h"

struct grammar_vocab {
    int32_t n_vocab;
    uint8_t *store;        /* every token's bytes, back to back */
    const uint8_t **bytes; /* [n_vocab]: into store, NULL for a never-allowed id */
    uint32_t *lens;        /* [n_vocab] */
    uint32_t n_nodes;      /* trie nodes, the root (0) included */
    uint32_t max_depth;    /* the longest token, in bytes */
    uint8_t *byte;         /* [n_nodes]: the byte on the edge into the node */
    uint16_t *depth;       /* [n_nodes] */
    uint32_t *subtree_end; /* [n_nodes]: one past the node's last descendant */
    int32_t *tok_first;    /* [n_nodes + 1]: CSR offsets into tok_ids */
    int32_t *tok_ids;      /* ids grouped by the node their bytes end at */
};

#endif
