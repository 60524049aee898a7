/* token_mask.c - allowed_token_ids as a constraint (see token_mask.h).
 *
 *   api_token_mask { inner: the structured constraint or none,
 *                    allowed[(n_vocab + 31) / 32]: bit id % 32 of word id / 32 }
 *
 * fill_mask copies `allowed` (or ANDs it into the inner constraint's mask),
 * so it changes no state and a retried step gets the same mask. */
#include "api/token_mask.h"

#include <stdlib.h>
#include <string.h>

#include "graph/sample_row.h"

typedef struct api_token_mask {
    engine_constraint inner; /* fill_mask NULL: none */
    uint32_t *allowed;       /* [n_words] */
    size_t n_words;
} api_token_mask;

static void token_mask__fill(void *state, uint32_t *allowed, int32_t n_vocab)
{
    api_token_mask *m = state;
    if (!m->inner.fill_mask) {
        memcpy(allowed, m->allowed, m->n_words * sizeof *allowed);
        return;
    }
    m->inner.fill_mask(m->inner.state, allowed, n_vocab);
    for (size_t i = 0; i < m->n_words; i++)
        allowed[i] &= m->allowed[i];
}

static bool token_mask__accept(void *state, int32_t id)
{
    api_token_mask *m = state;
    return m->inner.accept ? m->inner.accept(m->inner.state, id) : true;
}

static void token_mask__destroy(void *state)
{
    api_token_mask *m = state;
    if (m->inner.destroy) m->inner.destroy(m->inner.state);
    free(m->allowed);
    free(m);
}

enc_status api_token_mask_wrap(const int32_t *ids, size_t n, int32_t n_vocab, engine_constraint *c)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                            "request: sampling.allowed_token_ids[%zu] is %d, outside the "
                            "vocabulary [0, %d)",
                            i, ids[i], n_vocab);
    api_token_mask *m = calloc(1, sizeof *m);
    size_t n_words = (size_t)GRAPH_SAMPLE_MASK_WORDS(n_vocab);
    if (m) m->allowed = calloc(n_words, sizeof *m->allowed);
    if (!m || !m->allowed) {
        free(m);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request: allowed_token_ids mask");
    }
    m->n_words = n_words;
    for (size_t i = 0; i < n; i++)
        m->allowed[ids[i] / 32] |= 1u << (ids[i] % 32);
    m->inner = *c;
    *c = (engine_constraint){.state = m,
                             .fill_mask = token_mask__fill,
                             .accept = token_mask__accept,
                             .destroy = token_mask__destroy};
    return ENC_OK;
}
