/* vocab.c - the vocabulary as a byte trie, for computing token masks.
 *
 * Tokens are sorted by their bytes and inserted in that order, so the trie's
 * nodes come out in depth-first preorder: node i's subtree is the index range
 * [i, subtree_end[i]). A mask walk visits nodes in index order and skips a
 * dead node's whole subtree with one jump; it needs no explicit child lists.
 *
 *   node:  0(root) 1"a" 2"ab" 3"abc" 4"b" ...   depth: 0 1 2 3 1
 *   tok_first[i] .. tok_first[i+1]: the ids whose bytes end at node i */
#include <stdlib.h>
#include <string.h>

#include "grammar/vocab_impl.h"

static const grammar_vocab *vocab__sort_v; /* qsort has no context argument */

static int vocab__cmp(const void *a, const void *b)
{
    const grammar_vocab *v = vocab__sort_v;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    size_t lx = v->lens[x], ly = v->lens[y];
    int c = memcmp(v->bytes[x], v->bytes[y], lx < ly ? lx : ly);
    if (c) return c;
    if (lx != ly) return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

static enc_status vocab__copy(grammar_vocab *v, const uint8_t *const *token_bytes,
                              const size_t *token_lens)
{
    size_t total = 0;
    for (int32_t i = 0; i < v->n_vocab; i++)
        if (token_bytes[i] && token_lens[i]) {
            if (token_lens[i] > 0xFFFF)
                return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                                "grammar vocab: token %d is %zu bytes long (max 65535)", i,
                                token_lens[i]);
            total += token_lens[i];
        }
    v->store = malloc(total ? total : 1);
    v->bytes = calloc((size_t)v->n_vocab, sizeof *v->bytes);
    v->lens = calloc((size_t)v->n_vocab, sizeof *v->lens);
    if (!v->store || !v->bytes || !v->lens)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar vocab: out of memory");
    size_t off = 0;
    for (int32_t i = 0; i < v->n_vocab; i++)
        if (token_bytes[i] && token_lens[i]) {
            memcpy(v->store + off, token_bytes[i], token_lens[i]);
            v->bytes[i] = v->store + off;
            v->lens[i] = (uint32_t)token_lens[i];
            off += token_lens[i];
        }
    return ENC_OK;
}

/* Inserts the sorted ids; node arrays are sized for the worst case (every
 * byte a new node) and trimmed by the count. */
static enc_status vocab__build_trie(grammar_vocab *v, const int32_t *sorted, int32_t n_sorted,
                                    size_t total)
{
    size_t cap = total + 1;
    v->byte = malloc(cap);
    v->depth = malloc(cap * sizeof *v->depth);
    v->subtree_end = malloc(cap * sizeof *v->subtree_end);
    uint32_t *tok_node = malloc(((size_t)n_sorted + 1) * sizeof *tok_node);
    uint32_t *path = malloc((65536 + 1) * sizeof *path);
    if (!v->byte || !v->depth || !v->subtree_end || !tok_node || !path) {
        free(tok_node);
        free(path);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar vocab: out of memory");
    }
    uint32_t n = 1, depth = 0; /* path[0..depth]: the nodes of the previous token */
    v->byte[0] = 0, v->depth[0] = 0, path[0] = 0;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    for (int32_t k = 0; k < n_sorted; k++) {
        const uint8_t *b = v->bytes[sorted[k]];
        uint32_t len = v->lens[sorted[k]], lcp = 0;
        while (lcp < len && lcp < prev_len && b[lcp] == prev[lcp])
            lcp++;
        for (; depth > lcp; depth--)
            v->subtree_end[path[depth]] = n;
        for (; depth < len; depth++) {
            v->byte[n] = b[depth];
            v->depth[n] = (uint16_t)(depth + 1);
            path[depth + 1] = n++;
        }
        tok_node[k] = path[len];
        if (len > v->max_depth) v->max_depth = len;
        prev = b, prev_len = len;
    }
    for (; depth > 0; depth--)
        v->subtree_end[path[depth]] = n;
    v->subtree_end[0] = n;
    v->n_nodes = n;
    free(path);
    v->tok_first = calloc((size_t)n + 1, sizeof *v->tok_first);
    v->tok_ids = malloc(((size_t)n_sorted + 1) * sizeof *v->tok_ids);
    if (!v->tok_first || !v->tok_ids) {
        free(tok_node);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar vocab: out of memory");
    }
    for (int32_t k = 0; k < n_sorted; k++)
        v->tok_first[tok_node[k] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        v->tok_first[i + 1] += v->tok_first[i];
    for (int32_t k = 0; k < n_sorted; k++)
        v->tok_ids[k] = sorted[k]; /* already in node order */
    free(tok_node);
    return ENC_OK;
}

enc_status grammar_vocab_new(const uint8_t *const *token_bytes, const size_t *token_lens,
                             int32_t n_vocab, grammar_vocab **out)
{
    *out = NULL;
    if (n_vocab <= 0 || !token_bytes || !token_lens)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar vocab: %d ids (need at least one)",
                        n_vocab);
    grammar_vocab *v = calloc(1, sizeof *v);
    if (!v) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar vocab: out of memory");
    v->n_vocab = n_vocab;
    enc_status st = vocab__copy(v, token_bytes, token_lens);
    int32_t *sorted = NULL, n_sorted = 0;
    size_t total = 0;
    if (st == ENC_OK) {
        sorted = malloc((size_t)n_vocab * sizeof *sorted);
        if (!sorted) st = enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar vocab: out of memory");
    }
    if (st == ENC_OK) {
        for (int32_t i = 0; i < n_vocab; i++)
            if (v->bytes[i]) sorted[n_sorted++] = i, total += v->lens[i];
        vocab__sort_v = v;
        qsort(sorted, (size_t)n_sorted, sizeof *sorted, vocab__cmp);
        st = vocab__build_trie(v, sorted, n_sorted, total);
    }
    free(sorted);
    if (st != ENC_OK) {
        grammar_vocab_free(v);
        return st;
    }
    *out = v;
    return ENC_OK;
}

void grammar_vocab_free(grammar_vocab *v)
{
    if (!v) return;
    free(v->store);
    free(v->bytes);
    free(v->lens);
    free(v->byte);
    free(v->depth);
    free(v->subtree_end);
    free(v->tok_first);
    free(v->tok_ids);
    free(v);
}

int32_t grammar_vocab_size(const grammar_vocab *v)
{
    return v->n_vocab;
}
