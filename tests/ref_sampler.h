/* ref_sampler.h - the tests' reference picker: the rules of engine/sampler.h
 * written plainly from their definitions, for one row of logits and a
 * graph_sample_row (graph/sample_row.h). Penalties are computed id by id by
 * scanning the history; top-k / top-p sort the whole vocabulary (qsort by
 * weight descending, id ascending). The arithmetic is base/sample_math.h's
 * definition: its exp (shared), masses summed bin by bin, chunk by chunk,
 * in id order (written again here, with frexp for the bin), top-p's running
 * sum over whole bins and then the sorted ids of the last one, and the draw
 * philox_uniform(seed, position) x the kept mass walked bin, chunk, id. A
 * GRAPH_SAMPLE_MASKED row's disallowed ids (bit id % 32 of mask word id / 32
 * clear) are -inf after the min_tokens mask; with no finite logit left the
 * pick is -1. A row's logit bias is added first, entry by entry (f32 sums).
 * No code or scratch of the selection is shared with the code
 * under test. */
#ifndef ENC_TESTS_REF_SAMPLER_H
#define ENC_TESTS_REF_SAMPLER_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/philox.h"
#include "base/sample_math.h"
#include "graph/sample_row.h"

typedef struct ref_w {
    double w;
    int32_t id;
} ref_w;

static inline int ref_cmp(const void *a, const void *b)
{
    const ref_w *x = a, *y = b;
    if (x->w != y->w) return x->w > y->w ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static inline bool ref_penalties_on(const graph_sample_row *p)
{
    return (p->flags & GRAPH_SAMPLE_PENALTIES) != 0;
}

/* The row after penalties, the min_tokens mask and the token mask, from the
 * definitions. */
static inline void ref_process(const float *logits, const graph_sample_row *p, const int32_t *hist,
                               int64_t pos, const uint32_t *mask, float *x)
{
    int64_t n = p->n_sample;
    memcpy(x, logits, (size_t)n * sizeof *x);
    for (int i = 0; i < p->n_bias; i++)
        if (p->bias[i].id < n) x[p->bias[i].id] = x[p->bias[i].id] + p->bias[i].bias;
    for (int64_t t = 0; ref_penalties_on(p) && t < n; t++) {
        bool in_prompt = false;
        int64_t c = 0;
        for (int64_t j = 0; j < pos; j++) {
            if (hist[j] != t) continue;
            if (j < p->n_prompt)
                in_prompt = true;
            else
                c++;
        }
        if (!in_prompt && c == 0) continue;
        double l = x[t], r = p->repetition_penalty;
        if (r != 0.0 && r != 1.0) l = l > 0.0 ? l / r : l * r;
        l -= p->frequency_penalty * (double)c + p->presence_penalty * (c > 0);
        x[t] = (float)l;
    }
    if (pos - p->n_prompt < p->min_tokens)
        for (int i = 0; i < p->n_mask; i++)
            if (p->mask_ids[i] < n) x[p->mask_ids[i]] = -INFINITY;
    for (int64_t t = 0; (p->flags & GRAPH_SAMPLE_MASKED) && t < n; t++) {
        uint32_t word = mask[t / 32], bit = (uint32_t)1 << (t % 32);
        if ((word & bit) == 0) x[t] = -INFINITY;
    }
}

/* A logit bias for the tests' rows (row r, a vocabulary of v ids): a boost
 * given in two entries that add up, a ban, ids below 64 (the tests'
 * histories: the bias meets the penalties) and v - 1 (past n_sample on rows
 * that stop short of the vocabulary: ignored there). */
static inline void ref_bias_fixture(graph_sample_row *p, int64_t r, int64_t v)
{
    const graph_sample_bias b[] = {
        {(int32_t)((r * 53 + 11) % v), 2.5f},    {(int32_t)((r * 29 + 3) % v), -100.0f},
        {(int32_t)((r * 7) % 64 % v), -0.37f},   {(int32_t)((r * 53 + 11) % v), 1.75f},
        {(int32_t)((r * 5 + 1) % 64 % v), 0.8f}, {(int32_t)(v - 1), 3.0f},
    };
    p->n_bias = (int32_t)(sizeof b / sizeof b[0]);
    memcpy(p->bias, b, sizeof b);
}

static inline int32_t ref_argmax(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* The bin of a weight w in (0, 1]: 1 - its frexp exponent, at most 63. */
static inline int ref_bin(double w)
{
    int e;
    frexp(w, &e);
    return 1 - e < 63 ? 1 - e : 63;
}

/* mass[b] of the ids with keep[i] (weights w), by the definition: chunks of
 * 256 ids, each chunk's ids of bin b added in id order, the chunks' sums
 * added in order. Returns the total, bins in order. */
static inline double ref_masses(const double *w, const bool *keep, int64_t n, double mass[64])
{
    for (int b = 0; b < 64; b++) {
        mass[b] = 0.0;
        for (int64_t c = 0; c < n; c += 256) {
            double part = 0.0;
            for (int64_t i = c; i < n && i < c + 256; i++)
                if (keep[i] && ref_bin(w[i]) == b) part += w[i];
            mass[b] += part;
        }
    }
    double total = 0.0;
    for (int b = 0; b < 64; b++)
        total += mass[b];
    return total;
}

/* The draw of u by the definition: bin, then chunk, then id. */
static inline int32_t ref_walk(const double *w, const bool *keep, int64_t n, const double mass[64],
                               double u)
{
    double acc = 0.0;
    int bin = -1, last = -1;
    for (int b = 0; b < 64 && bin < 0; b++) {
        if (mass[b] <= 0.0) continue;
        if (u < acc + mass[b]) {
            bin = b;
            u = u - acc;
        }
        acc = acc + mass[b];
        last = b;
    }
    if (bin < 0) {
        bin = last;
        u = INFINITY;
    }
    int64_t chunk = -1, last_chunk = -1;
    acc = 0.0;
    for (int64_t c = 0; c < n && chunk < 0; c += 256) {
        double part = 0.0;
        for (int64_t i = c; i < n && i < c + 256; i++)
            if (keep[i] && ref_bin(w[i]) == bin) part += w[i];
        if (part <= 0.0) continue;
        if (u < acc + part) {
            chunk = c;
            u = u - acc;
        }
        acc = acc + part;
        last_chunk = c;
    }
    if (chunk < 0) {
        chunk = last_chunk;
        u = INFINITY;
    }
    int32_t pick = -1;
    acc = 0.0;
    for (int64_t i = chunk; i < n && i < chunk + 256; i++) {
        if (!keep[i] || ref_bin(w[i]) != bin) continue;
        acc += w[i];
        pick = (int32_t)i;
        if (u < acc) break;
    }
    return pick;
}

/* The kept set by a full sort of it[0..m) (keep[] marks it by id); returns
 * the kept mass. */
static inline double ref_kept(const float *x, const graph_sample_row *p, ref_w *it, double *w,
                              bool *keep, double mass[64])
{
    int64_t n = p->n_sample;
    double max = x[ref_argmax(x, n)];
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        w[i] = smath_exp(((double)x[i] - max) * (1.0 / p->temperature));
        if (w[i] < p->min_p) w[i] = 0.0;
        keep[i] = w[i] > 0.0;
        if (keep[i]) it[m++] = (ref_w){w[i], (int32_t)i};
    }
    qsort(it, (size_t)m, sizeof *it, ref_cmp);
    double total = ref_masses(w, keep, n, mass);
    if (p->top_k > 0 && p->top_k < n && m > p->top_k) { /* ties with the k-th weight stay */
        double wk = it[p->top_k - 1].w;
        while (m > 0 && it[m - 1].w < wk)
            keep[it[--m].id] = false;
        total = ref_masses(w, keep, n, mass);
    }
    if (!(p->top_p > 0.0 && p->top_p < 1.0)) return total;
    double need = p->top_p * total, acc = 0.0;
    int64_t r = 0; /* whole bins while their running mass stays below need */
    for (int b = 0; b < 64; b++) {
        int64_t in_bin = 0;
        while (r + in_bin < m && ref_bin(it[r + in_bin].w) == b)
            in_bin++;
        if (in_bin == 0) continue;
        if (acc + mass[b] >= need) break;
        acc = acc + mass[b];
        r += in_bin;
    }
    if (r >= m) return total; /* rounding: everything stays */
    do
        acc += it[r++].w;
    while (r < m && acc < need);
    while (m > r)
        keep[it[--m].id] = false;
    return ref_masses(w, keep, n, mass);
}

/* The pick of a row under its token mask (read when the row is
 * GRAPH_SAMPLE_MASKED); x, it, w and keep: [n_sample] scratch. */
static inline int32_t ref_pick_masked(const float *logits, const graph_sample_row *p,
                                      const int32_t *hist, int64_t pos, const uint32_t *mask,
                                      float *x, ref_w *it, double *w, bool *keep)
{
    ref_process(logits, p, hist, pos, mask, x);
    bool finite = false;
    for (int64_t t = 0; t < p->n_sample; t++)
        finite |= isfinite(x[t]) != 0;
    if ((p->flags & GRAPH_SAMPLE_MASKED) && !finite) return -1;
    if (p->temperature == 0.0) return ref_argmax(x, p->n_sample);
    double mass[64];
    double total = ref_kept(x, p, it, w, keep, mass);
    return ref_walk(w, keep, p->n_sample, mass, philox_uniform(p->seed, pos) * total);
}

static inline int32_t ref_pick(const float *logits, const graph_sample_row *p, const int32_t *hist,
                               int64_t pos, float *x, ref_w *it, double *w, bool *keep)
{
    return ref_pick_masked(logits, p, hist, pos, NULL, x, it, w, keep);
}

#endif
