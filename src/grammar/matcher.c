/* matcher.c - one request's position in a grammar: token masks and accepts.
 *
 * The state tables (dfa.c) belong to the grammar and are shared by all its
 * matchers over the same vocabulary, under the grammar's lock, so that a
 * mask computed for one request serves the next; a matcher over another
 * vocabulary builds private tables. A matcher itself is a state id. */
#include <stdlib.h>
#include <string.h>

#include "grammar/dfa.h"

struct grammar_matcher {
    grammar_dfa *dfa;
    pthread_mutex_t *lock; /* the grammar's, or NULL for private tables */
    int own_dfa;
    int32_t state;
    int32_t *end_ids;
    int n_end;
    bool ended; /* an end id was accepted */
};

void grammar_free(grammar *g)
{
    if (!g) return;
    grammar_dfa_free(g->dfa);
    pthread_mutex_destroy(&g->lock);
    free(g->elems);
    free(g->alts);
    free(g->rule_alt);
    free(g->sets);
    free(g);
}

enc_status grammar_matcher_new(const grammar *cg, const grammar_vocab *v, const int32_t *end_ids,
                               int n_end, grammar_matcher **out)
{
    *out = NULL;
    if (!cg || !v || n_end < 0 || (n_end && !end_ids))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "grammar matcher: a grammar, a vocabulary and end ids needed");
    for (int i = 0; i < n_end; i++)
        if (end_ids[i] < 0 || end_ids[i] >= v->n_vocab)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                            "grammar matcher: end id %d outside the vocabulary [0, %d)", end_ids[i],
                            v->n_vocab);
    grammar *g =
        (grammar *)cg; /* the lazy tables are behind the lock; the grammar itself never changes */
    grammar_matcher *m = calloc(1, sizeof *m);
    if (!m) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar matcher: out of memory");
    m->end_ids = malloc(((size_t)n_end + 1) * sizeof *m->end_ids);
    if (!m->end_ids) {
        free(m);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar matcher: out of memory");
    }
    if (n_end) memcpy(m->end_ids, end_ids, (size_t)n_end * sizeof *end_ids);
    m->n_end = n_end;
    enc_status st = ENC_OK;
    pthread_mutex_lock(&g->lock);
    if (!g->dfa) st = grammar_dfa_new(g, v, &g->dfa);
    if (st == ENC_OK && grammar_dfa_vocab(g->dfa) == v) {
        m->dfa = g->dfa;
        m->lock = &g->lock;
    }
    pthread_mutex_unlock(&g->lock);
    if (st == ENC_OK && !m->dfa) {
        st = grammar_dfa_new(g, v, &m->dfa);
        m->own_dfa = 1;
    }
    if (st != ENC_OK) {
        grammar_matcher_free(m);
        return st;
    }
    m->state = grammar_dfa_start(m->dfa);
    *out = m;
    return ENC_OK;
}

void grammar_matcher_free(grammar_matcher *m)
{
    if (!m) return;
    if (m->own_dfa) grammar_dfa_free(m->dfa);
    free(m->end_ids);
    free(m);
}

static void matcher__lock(grammar_matcher *m)
{
    if (m->lock) pthread_mutex_lock(m->lock);
}
static void matcher__unlock(grammar_matcher *m)
{
    if (m->lock) pthread_mutex_unlock(m->lock);
}

enc_status grammar_matcher_fill_mask(grammar_matcher *m, uint32_t *allowed)
{
    const grammar_vocab *v = grammar_dfa_vocab(m->dfa);
    size_t words = ((size_t)v->n_vocab + 31) / 32;
    if (m->ended) {
        memset(allowed, 0, words * sizeof *allowed);
        return ENC_OK;
    }
    matcher__lock(m);
    const uint32_t *mask = grammar_dfa_mask(m->dfa, m->state);
    if (mask) memcpy(allowed, mask, words * sizeof *allowed);
    int can_end = grammar_dfa_can_end(m->dfa, m->state);
    matcher__unlock(m);
    if (!mask) {
        memset(allowed, 0, words * sizeof *allowed);
        return enc_fail_context(ENC_ERR_OUT_OF_MEMORY, "token mask");
    }
    for (int i = 0; i < m->n_end; i++)
        allowed[m->end_ids[i] >> 5] &= ~(1u << (m->end_ids[i] & 31));
    if (can_end)
        for (int i = 0; i < m->n_end; i++)
            allowed[m->end_ids[i] >> 5] |= 1u << (m->end_ids[i] & 31);
    return ENC_OK;
}

/* The state after bytes, or a negative value (dead or error). Lock held. */
static int32_t matcher__walk(grammar_matcher *m, const uint8_t *bytes, size_t n)
{
    int32_t s = m->state;
    for (size_t i = 0; i < n && s >= 0; i++)
        s = grammar_dfa_step(m->dfa, s, bytes[i]);
    return s;
}

bool grammar_matcher_accept_bytes(grammar_matcher *m, const uint8_t *bytes, size_t n)
{
    if (m->ended) return n == 0;
    matcher__lock(m);
    int32_t s = matcher__walk(m, bytes, n);
    matcher__unlock(m);
    if (s < 0) return false;
    m->state = s;
    return true;
}

bool grammar_matcher_accept(grammar_matcher *m, int32_t id)
{
    const grammar_vocab *v = grammar_dfa_vocab(m->dfa);
    if (m->ended || id < 0 || id >= v->n_vocab) return false;
    for (int i = 0; i < m->n_end; i++)
        if (m->end_ids[i] == id) {
            if (!grammar_matcher_can_end(m)) return false;
            m->ended = true;
            return true;
        }
    if (!v->bytes[id]) return false;
    return grammar_matcher_accept_bytes(m, v->bytes[id], v->lens[id]);
}

bool grammar_matcher_can_end(const grammar_matcher *m)
{
    if (m->ended) return false;
    grammar_matcher *mm = (grammar_matcher *)m; /* locking only */
    matcher__lock(mm);
    int r = grammar_dfa_can_end(m->dfa, m->state);
    matcher__unlock(mm);
    return r;
}

bool grammar_matcher_is_complete(const grammar_matcher *m)
{
    if (m->ended) return true;
    grammar_matcher *mm = (grammar_matcher *)m;
    matcher__lock(mm);
    int r = grammar_dfa_is_final(m->dfa, m->state);
    matcher__unlock(mm);
    return r;
}
