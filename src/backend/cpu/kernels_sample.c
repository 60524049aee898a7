/* kernels_sample.c - the device sampler on the CPU (GRAPH_OP_SAMPLE): each
 * row's token under its own parameters (graph/sample_row.h), with the
 * rules, the order and the arithmetic of the host sampler (engine/sampler.h),
 * so that both choose the same token bit for bit.
 *
 * One row, in its worker's scratch slice ([V] doubles w, [V] candidates
 * {w, id} twice (the second for the merge), [V] i32 cnt and [V] floats raw):
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
 *   weights     w = exp((l - max) / T) in double; min_p zeroes w < min_p
 *   top-k/p     the kept set is a prefix of the ids sorted by (w desc, id
 *               asc). Ids are binned by the binary exponent of w (64 bins)
 *               with counts and masses; only the bins that reach k ids and
 *               (with a margin) top_p of the mass are collected and merge
 *               sorted, and the prefix sums run in that order. When the
 *               sorted candidates fall short of top_p's mass after all, the
 *               next bin joins: exact, with no sort of the whole vocabulary.
 *   draw        u = philox_uniform(seed, position) x the kept mass; the
 *               first kept id whose running sum exceeds u
 *
 * Rows are independent and a row's result depends on nothing else: worker
 * ith of min(nth, n_workers) takes rows ith, ith + n, ... (batch and thread
 * invariant). */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "base/philox.h"
#include "graph/sample_row.h"

enum { SAMPLE__BINS = 64 };
#define SAMPLE__PROMPT_BIT 0x40000000

/* A candidate of top-k / top-p: its weight beside its id, so that sorting
 * reads memory in order (an index into w would miss the cache per compare). */
typedef struct sample__cand {
    double w;
    int32_t id, pad;
} sample__cand;
_Static_assert(sizeof(sample__cand) == 16, "a candidate is four scratch words");

typedef struct sample__scratch {
    double *w;                /* [V] */
    sample__cand *cand, *tmp; /* [V] each */
    int32_t *cnt;             /* [V] */
    float *raw;               /* [V] the raw row, kept for its logprobs */
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

/* --- the kept set ------------------------------------------------------------- */

/* The bin of a weight in (0, 1]: 0 for [1/2, 1], b for [2^-b-1, 2^-b). */
static int sample__bin(double w)
{
    int e;
    frexp(w, &e);
    int b = 1 - e;
    return b < SAMPLE__BINS - 1 ? b : SAMPLE__BINS - 1;
}

/* Does id a come before id b: weight descending, then id ascending? */
static bool sample__before(const sample__cand *a, const sample__cand *b)
{
    return a->w != b->w ? a->w > b->w : a->id < b->id;
}

/* Bottom-up merge sort of c[0..n) by sample__before, through tmp. */
static void sample__sort(sample__cand *c, sample__cand *tmp, int64_t n)
{
    sample__cand *src = c, *dst = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n,
                    hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = sample__before(&src[b], &src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        sample__cand *t = src;
        src = dst;
        dst = t;
    }
    if (src != c) memcpy(c, src, (size_t)n * sizeof *c);
}

/* The first bin such that bins [0, B] hold k ids (top-k on) or, top-k off,
 * a little more than `need` of the mass (the bins' sums are not in the
 * sorted order, hence the margin; the caller checks exactly). */
static int sample__cut_bin(const int64_t *count, const double *mass, bool k_on, int64_t k,
                           double need)
{
    int64_t c = 0;
    double m = 0.0;
    for (int b = 0; b < SAMPLE__BINS; b++) {
        c += count[b];
        m += mass[b];
        if (k_on ? c >= k : m >= need * (1.0 + 0x1p-20)) return b;
    }
    return SAMPLE__BINS - 1;
}

/* The ids of the kept set, in cand[0..return) sorted, for top-k / top-p over
 * weights w[0..n) whose sum in id order is `total`. */
static int64_t sample__top_k_top_p(const graph_sample_row *p, const sample__scratch *sc, int64_t n,
                                   double total)
{
    bool k_on = p->top_k > 0 && p->top_k<n, p_on = p->top_p> 0.0 && p->top_p < 1.0;
    int64_t count[SAMPLE__BINS] = {0};
    double mass[SAMPLE__BINS] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (sc->w[i] <= 0.0) continue;
        int b = sample__bin(sc->w[i]);
        count[b]++;
        mass[b] += sc->w[i];
    }
    for (int cut = sample__cut_bin(count, mass, k_on, p->top_k, p->top_p * total);; cut++) {
        int64_t nc = 0;
        for (int64_t i = 0; i < n; i++)
            if (sc->w[i] > 0.0 && sample__bin(sc->w[i]) <= cut)
                sc->cand[nc++] = (sample__cand){sc->w[i], (int32_t)i, 0};
        sample__sort(sc->cand, sc->tmp, nc);
        double kept_mass = total;
        if (k_on && nc > p->top_k) {
            int64_t kk = p->top_k; /* ties with the k-th weight stay */
            while (kk < nc && sc->cand[kk].w == sc->cand[p->top_k - 1].w)
                kk++;
            nc = kk;
        }
        if (k_on) {
            kept_mass = 0.0;
            for (int64_t i = 0; i < nc; i++)
                kept_mass += sc->cand[i].w;
        }
        if (!p_on) return nc;
        double need = p->top_p * kept_mass, cum = 0.0;
        int64_t r = 0;
        while (r < nc && cum < need)
            cum += sc->cand[r++].w;
        if (cum >= need || k_on || cut == SAMPLE__BINS - 1) return r;
    }
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
static double sample__logprobs(const float *x, int64_t n, int n_top, graph_sample_logprobs *lp)
{
    double max = x[sample__argmax(x, n)], sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += exp((double)x[i] - max);
    double lse = max + log(sum);
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

static int32_t sample__draw(const float *x, const graph_sample_row *p, const sample__scratch *sc,
                            int64_t pos)
{
    int64_t n = p->n_sample;
    double max = x[sample__argmax(x, n)], total = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double w = exp(((double)x[i] - max) / p->temperature);
        sc->w[i] = w < p->min_p ? 0.0 : w;
        total += sc->w[i];
    }
    int64_t nc = 0;
    if ((p->top_k > 0 && p->top_k < n) || (p->top_p > 0.0 && p->top_p < 1.0)) {
        nc = sample__top_k_top_p(p, sc, n, total);
    } else {
        for (int64_t i = 0; i < n; i++)
            if (sc->w[i] > 0.0) sc->cand[nc++] = (sample__cand){sc->w[i], (int32_t)i, 0};
    }
    double sum = 0.0;
    for (int64_t i = 0; i < nc; i++)
        sum += sc->cand[i].w;
    double u = philox_uniform(p->seed, pos) * sum, acc = 0.0;
    for (int64_t i = 0; i < nc; i++) {
        acc += sc->cand[i].w;
        if (u < acc) return sc->cand[i].id;
    }
    for (int64_t i = nc - 1; i >= 0; i--) /* rounding left u at the sum */
        if (sc->cand[i].w > 0.0) return sc->cand[i].id;
    return sample__argmax(x, n);
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
    graph_sample_logprobs lp;
    double lse = 0.0, raw = 0.0;
    bool want_lp = (p.flags & GRAPH_SAMPLE_LOGPROBS) && a->logprobs;
    if (want_lp) { /* of the raw row: before penalties and masks change it */
        lse = sample__logprobs(x, p.n_sample, p.n_top, &lp);
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
    sample__scratch sc = {(double *)(void *)base, (sample__cand *)(void *)(base + 2 * V),
                          (sample__cand *)(void *)(base + 6 * V), base + 10 * V,
                          (float *)(void *)(base + 11 * V)};
    for (int64_t r = ith; r < a->n_rows; r += n_workers)
        a->out[r] = sample__row(a, r, &sc);
}
