/* kernels_sample.c - the device sampler on the CPU (GRAPH_OP_SAMPLE): each
 * row's token under its own parameters (graph/sample_row.h), with the
 * rules, the order and the arithmetic of the host sampler (engine/sampler.h),
 * so that both choose the same token bit for bit.
 *
 * One row, in its worker's scratch slice ([V] doubles w, [V] candidates
 * {w, id} twice (the second for a merge), [V] i32 cnt and [V] floats raw):
 *
 *   logprobs    (rows that ask) log_softmax of the raw row and its n_top
 *               best ids, in the host sampler's arithmetic; the raw row is
 *               kept for the chosen id's
 *   penalties   cnt[t] = output count of t, | PROMPT_BIT when t is in the
 *               prompt; each distinct id of the history is changed once
 *   min_tokens  mask ids -> -inf while n_output < min_tokens
 *   token mask  (GRAPH_SAMPLE_MASKED rows) ids whose bit is 0 -> -inf; no
 *               finite logit left: GRAPH_SAMPLE_NO_TOKEN
 *   greedy      T = 0: the first id of the largest logit
 *   weights     w = smath_exp((l - max) x (1 / T)) (base/sample_math.h;
 *               four at a time on AVX2, the same bits); min_p zeroes w < min_p;
 *               each 256-id chunk's bin masses while its weights are in L1
 *   top-k/p     the kept set as a cut over weights binned by exponent, one
 *               boundary bin sorted (base/sample_select.h)
 *   draw        u = philox_uniform(seed, position) x the kept mass, walked
 *               bin, chunk, id (smath_draw)
 *
 * Rows are independent and a row's result depends on nothing else: worker
 * ith of min(nth, n_workers) takes rows ith, ith + n, ... (batch and thread
 * invariant). */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "base/philox.h"
#include "base/sample_select.h"
#include "graph/sample_row.h"

#define SAMPLE__PROMPT_BIT 0x40000000
_Static_assert(sizeof(sample_cand) == 16, "a candidate is four scratch words");

typedef struct sample__scratch {
    double *w;               /* [V] */
    sample_cand *cand, *tmp; /* [V] each */
    int32_t *cnt;            /* [V] */
    float *raw;              /* [V] the raw row, kept for its logprobs */
} sample__scratch;

/* --- penalties and masks ------------------------------------------------------ */

static void sample__penalize(float *x, const graph_sample_row *p, const int32_t *hist, int64_t pos,
                             int32_t *cnt)
{
    int64_t n = p->n_sample;
    memset(cnt, 0, (size_t)n * sizeof *cnt);
    for (int64_t j = 0; j < pos; j++) {
        int32_t t = hist[j];
        if (t < 0 || t >= n) continue;
        if (j < p->n_prompt)
            cnt[t] |= SAMPLE__PROMPT_BIT;
        else
            cnt[t]++;
    }
    bool rep = p->repetition_penalty != 0.0 && p->repetition_penalty != 1.0;
    for (int64_t j = 0; j < pos; j++) {
        int32_t t = hist[j];
        if (t < 0 || t >= n || cnt[t] == 0) continue;
        int32_t c = cnt[t] & ~SAMPLE__PROMPT_BIT;
        cnt[t] = 0; /* once per id */
        double l = x[t];
        if (rep) l = l > 0.0 ? l / p->repetition_penalty : l * p->repetition_penalty;
        l -= p->frequency_penalty * c + p->presence_penalty * (c > 0);
        x[t] = (float)l;
    }
}

static void sample__mask(float *x, const graph_sample_row *p, int64_t n_output)
{
    if (n_output >= p->min_tokens) return;
    for (int i = 0; i < p->n_mask && i < GRAPH_SAMPLE_MAX_MASK; i++)
        if (p->mask_ids[i] >= 0 && p->mask_ids[i] < p->n_sample) x[p->mask_ids[i]] = -INFINITY;
}

/* Ids of x[0..n) whose mask bit is 0 -> -inf. Returns whether an id with a
 * finite logit is left. */
static bool sample__allow(float *x, const uint32_t *mask, int64_t n)
{
    bool any = false;
    for (int64_t i = 0; i < n; i++) {
        if (!graph_sample_allowed(mask, i)) x[i] = -INFINITY;
        any |= x[i] > -INFINITY;
    }
    return any;
}

static int32_t sample__argmax(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* --- logprobs ------------------------------------------------------------------- */

/* Where id x[i] goes among the n best so far (raw logit descending, ties:
 * lower id first, and i comes after every id already there). */
static int sample__top_slot(const float *x, const int32_t *top, int n, int64_t i)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (x[top[mid]] >= x[i])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The raw row's log-normaliser and n_top best ids into lp; the chosen id's
 * logprob is added once it is known (sample__logprob_of). */
static double sample__logprobs(const float *x, int64_t n, int n_top, graph_sample_logprobs *lp,
                               double *w)
{
    double max = x[sample__argmax(x, n)];
    cpu__kernels()->sample_weights(x, n, max, 1.0, 0.0, w);
    sample_kept all;
    smath_masses(w, n, (smath_cut){0.0, -1}, all.count, all.mass);
    double lse = max + smath_log(smath_total(all.mass));
    if (n_top > n) n_top = (int)n;
    if (n_top > GRAPH_SAMPLE_MAX_TOP) n_top = GRAPH_SAMPLE_MAX_TOP;
    int have = 0;
    for (int64_t i = 0; i < n && n_top > 0; i++) {
        int at = sample__top_slot(x, lp->top_ids, have, i);
        if (at >= n_top) continue;
        int last = have < n_top ? have++ : have - 1; /* the worst falls off when full */
        memmove(&lp->top_ids[at + 1], &lp->top_ids[at], (size_t)(last - at) * sizeof *lp->top_ids);
        lp->top_ids[at] = (int32_t)i;
    }
    lp->n_top = have;
    for (int j = 0; j < have; j++)
        lp->top_logprobs[j] = (float)((double)x[lp->top_ids[j]] - lse);
    return lse;
}

/* --- one row ------------------------------------------------------------------ */

/* The weights of x[0..n) into w and every positive one's count and mass by
 * bin into k (smath_weights then smath_masses under the cut {0, -1}, the
 * same bits), a chunk at a time while its weights are in the L1 cache. */
static void sample__weights_masses(const float *x, int64_t n, double max, double inv_t, double min_p,
                                   double *w, sample_kept *k)
{
    double part[SMATH_BINS] = {0};
    memset(k->count, 0, sizeof k->count);
    memset(k->mass, 0, sizeof k->mass);
    for (int64_t c0 = 0; c0 < n; c0 += SMATH_CHUNK) {
        int64_t c1 = c0 + SMATH_CHUNK < n ? c0 + SMATH_CHUNK : n;
        cpu__kernels()->sample_weights(x + c0, c1 - c0, max, inv_t, min_p, w + c0);
        smath_masses_chunk(w, c0, c1, (smath_cut){0.0, -1}, k->count, k->mass, part);
    }
}

static int32_t sample__draw(const float *x, const graph_sample_row *p, const sample__scratch *sc,
                            int64_t pos)
{
    int64_t n = p->n_sample;
    double max = x[sample__argmax(x, n)];
    sample_kept kept;
    sample__weights_masses(x, n, max, 1.0 / p->temperature, p->min_p, sc->w, &kept);
    sample_select_cut(sc->w, n, p->top_k, p->top_p, sc->cand, sc->tmp, &kept);
    int64_t id = sample_select_draw(sc->w, n, &kept, philox_uniform(p->seed, pos));
    return id >= 0 ? (int32_t)id : sample__argmax(x, n);
}

static int32_t sample__row(const cpu_sample_args *a, int64_t r, const sample__scratch *sc)
{
    graph_sample_row p;
    memcpy(&p, a->params + r * GRAPH_SAMPLE_ROW_WORDS, sizeof p);
    if (p.n_sample <= 0 || p.n_sample > a->n_vocab) return 0; /* padding */
    float *x = a->logits + r * a->n_vocab;
    int32_t *hist = a->history + r * a->hist_len;
    int64_t pos = (int64_t)a->positions[r] + 1; /* the token being chosen */
    int64_t n_hist = pos < a->hist_len ? pos : a->hist_len;
    graph_sample_logprobs lp = {0}; /* whole, so the record read back holds no stale bytes past n_top */
    double lse = 0.0, raw = 0.0;
    bool want_lp = (p.flags & GRAPH_SAMPLE_LOGPROBS) && a->logprobs;
    if (want_lp) { /* of the raw row: before penalties and masks change it */
        lse = sample__logprobs(x, p.n_sample, p.n_top, &lp, sc->w);
        memcpy(sc->raw, x, (size_t)p.n_sample * sizeof *x);
    }
    if (p.flags & GRAPH_SAMPLE_PENALTIES) sample__penalize(x, &p, hist, n_hist, sc->cnt);
    sample__mask(x, &p, pos - p.n_prompt);
    int32_t id = GRAPH_SAMPLE_NO_TOKEN;
    const uint32_t *mask = a->mask ? a->mask + r * GRAPH_SAMPLE_MASK_WORDS(a->n_vocab) : NULL;
    if (!(p.flags & GRAPH_SAMPLE_MASKED) || (mask && sample__allow(x, mask, p.n_sample)))
        id = p.temperature == 0.0 ? sample__argmax(x, p.n_sample) : sample__draw(x, &p, sc, pos);
    if (pos < a->hist_len) hist[pos] = id;
    if (want_lp && id >= 0) {
        raw = sc->raw[id];
        lp.id = id;
        lp.logprob = (float)(raw - lse);
        memcpy(a->logprobs + r * GRAPH_SAMPLE_LP_WORDS, &lp, sizeof lp);
    }
    return id;
}

void cpu_sample(const cpu_sample_args *a, int ith, int nth)
{
    int64_t n_workers = nth < a->n_workers ? nth : a->n_workers;
    if (ith >= n_workers) return;
    int64_t V = a->n_vocab;
    int32_t *base = a->scratch + ith * V * GRAPH_SAMPLE_SCRATCH_WORDS;
    sample__scratch sc = {(double *)(void *)base, (sample_cand *)(void *)(base + 2 * V),
                          (sample_cand *)(void *)(base + 6 * V), base + 10 * V,
                          (float *)(void *)(base + 11 * V)};
    for (int64_t r = ith; r < a->n_rows; r += n_workers)
        a->out[r] = sample__row(a, r, &sc);
}
