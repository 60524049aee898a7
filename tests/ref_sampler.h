/* ref_sampler.h - the tests' reference picker: the rules of engine/sampler.h
 * written plainly from their definitions, for one row of logits and a
 * graph_sample_row (graph/sample_row.h). Penalties are computed id by id by
 * scanning the history; top-k / top-p sort the whole vocabulary (qsort by
 * weight descending, id ascending); the draw is philox_uniform(seed,
 * position) over the kept weights in the order the rules walk them (id
 * order without top-k / top-p, sorted order with). A GRAPH_SAMPLE_MASKED
 * row's disallowed ids (bit id % 32 of mask word id / 32 clear) are -inf
 * after the min_tokens mask; with no finite logit left the pick is -1. No
 * scratch is shared with the code under test. */
#ifndef ENC_TESTS_REF_SAMPLER_H
#define ENC_TESTS_REF_SAMPLER_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/philox.h"
#include "graph/sample_row.h"

typedef struct ref_w {
    double w;
    int32_t id;
} ref_w;

static int ref_cmp(const void *a, const void *b)
{
    const ref_w *x = a, *y = b;
    if (x->w != y->w) return x->w > y->w ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static bool ref_penalties_on(const graph_sample_row *p)
{
    return (p->flags & GRAPH_SAMPLE_PENALTIES) != 0;
}

/* The row after penalties, the min_tokens mask and the token mask, from the
 * definitions. */
static void ref_process(const float *logits, const graph_sample_row *p, const int32_t *hist,
                        int64_t pos, const uint32_t *mask, float *x)
{
    int64_t n = p->n_sample;
    memcpy(x, logits, (size_t)n * sizeof *x);
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

static int32_t ref_argmax(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* The kept set by a full sort: it[0..return), in the order the draw walks. */
static int64_t ref_kept(const float *x, const graph_sample_row *p, ref_w *it)
{
    int64_t n = p->n_sample;
    double max = x[ref_argmax(x, n)], total = 0.0;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = exp(((double)x[i] - max) / p->temperature);
        if (w < p->min_p) w = 0.0;
        total += w;
        if (w > 0.0) it[m++] = (ref_w){w, (int32_t)i};
    }
    bool k_on = p->top_k > 0 && p->top_k<n, p_on = p->top_p> 0.0 && p->top_p < 1.0;
    if (!k_on && !p_on) return m; /* id order */
    qsort(it, (size_t)m, sizeof *it, ref_cmp);
    double mass = total;
    if (k_on && m > p->top_k) {
        int64_t k = p->top_k;
        while (k < m && it[k].w == it[p->top_k - 1].w)
            k++;
        m = k;
    }
    if (k_on) {
        mass = 0.0;
        for (int64_t i = 0; i < m; i++)
            mass += it[i].w;
    }
    if (!p_on) return m;
    int64_t r = 0;
    double cum = 0.0;
    while (r < m && cum < p->top_p * mass)
        cum += it[r++].w;
    return r;
}

/* The pick of a row under its token mask (read when the row is
 * GRAPH_SAMPLE_MASKED). */
static int32_t ref_pick_masked(const float *logits, const graph_sample_row *p, const int32_t *hist,
                               int64_t pos, const uint32_t *mask, float *x, ref_w *it)
{
    ref_process(logits, p, hist, pos, mask, x);
    bool finite = false;
    for (int64_t t = 0; t < p->n_sample; t++)
        finite |= isfinite(x[t]) != 0;
    if ((p->flags & GRAPH_SAMPLE_MASKED) && !finite) return -1;
    if (p->temperature == 0.0) return ref_argmax(x, p->n_sample);
    int64_t m = ref_kept(x, p, it);
    double sum = 0.0, acc = 0.0;
    for (int64_t i = 0; i < m; i++)
        sum += it[i].w;
    double u = philox_uniform(p->seed, pos) * sum;
    for (int64_t i = 0; i < m; i++) {
        acc += it[i].w;
        if (u < acc) return it[i].id;
    }
    return it[m - 1].id;
}

static int32_t ref_pick(const float *logits, const graph_sample_row *p, const int32_t *hist,
                        int64_t pos, float *x, ref_w *it)
{
    return ref_pick_masked(logits, p, hist, pos, NULL, x, it);
}

#endif
