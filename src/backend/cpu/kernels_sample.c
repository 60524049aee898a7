/* kernels_sample.c - the device sampler on the CPU (GRAPH_OP_SAMPLE): each
 * row's token under its own parameters (graph/sample_row.h), with the
 * rules, the order and the arithmetic of the host sampler (engine/sampler.h),
 * so that both choose the same token bit for bit.
 *
 * One row, in its worker's scratch slice ([V] doubles w, [V] candidates
 * {w, id} twice (the second for a merge), [V] i32 cnt, [V] floats raw, the
 * row's state, and a chunk record per 256 ids):
 *
 *   logprobs    (rows that ask) log_softmax of the raw row and its n_top
 *               best ids, in the host sampler's arithmetic; the raw row is
 *               kept for the chosen id's
 *   logit bias  x[id] += bias for each of the row's entries, in order
 *   penalties   cnt[t] = output count of t, | PROMPT_BIT when t is in the
 *               prompt; each distinct id of the history is changed once
 *   min_tokens  mask ids -> -inf while n_output < min_tokens
 *   token mask  (GRAPH_SAMPLE_MASKED rows) ids whose bit is 0 -> -inf; no
 *               finite logit left: GRAPH_SAMPLE_NO_TOKEN
 *   greedy      T = 0: the first id of the largest logit
 *   weights     w = smath_exp((l - max) x (1 / T)) (base/sample_math.h;
 *               four at a time on AVX2, eight on AVX-512, the same bits);
 *               min_p zeroes w < min_p;
 *               each 256-id chunk's record (each id's bin, the part and
 *               count of each bin: smath_chunk, a lane a bin where the ISA
 *               has them) while its weights are in L1; the records added in
 *               chunk order give the masses by bin
 *   top-k/p     the kept set as a cut over weights binned by exponent, one
 *               boundary bin's members (in cnt) sorted, its chunks' records
 *               summed anew (base/sample_select.h)
 *   draw        u = philox_uniform(seed, position) x the kept mass, walked
 *               bin, chunk record, id (smath_draw)
 *
 * Rows are independent and a row's result depends on nothing else. The op
 * is three calls (phases), each finished before the next starts:
 *
 *   rows >= threads   phase 0: worker ith of min(nth, n_workers) takes rows
 *                     ith, ith + n, ... whole; phases 1 and 2 do nothing
 *   rows <  threads   phase 0: share r takes row r up to its draw (logprobs,
 *                     penalties, masks, the max; greedy rows end here)
 *                     phase 1: share i takes a contiguous range of row
 *                     i % rows' 256-id chunks: their weights and records
 *                     phase 2: share r adds row r's records in chunk order
 *                     (as the one-thread row does), then top-k / top-p and
 *                     the draw
 *
 * so the bits are the same for every thread count and batch. A row's state
 * between phases lives in its slice's extra words (sample__state). */
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
    int32_t *cnt;            /* [V] the penalties' counts, then a boundary bin's ids */
    float *raw;              /* [V] the raw row, kept for its logprobs */
    smath_chunk *chunks;     /* [V / SMATH_CHUNK rounded up] the row's chunk records */
} sample__scratch;
_Static_assert(sizeof(smath_chunk) <= GRAPH_SAMPLE_CHUNK_WORDS * sizeof(int32_t) &&
                   (int)SMATH_CHUNK == (int)GRAPH_SAMPLE_CHUNK_IDS,
               "a chunk record fits its words in the scratch slice");

/* --- logit bias, penalties and masks ----------------------------------------- */

/* x[id] += bias for each entry, in entry order (a repeated id adds up). */
static void sample__bias(float *x, const graph_sample_row *p)
{
    for (int i = 0; i < p->n_bias && i < GRAPH_SAMPLE_MAX_BIAS; i++)
        if (p->bias[i].id >= 0 && p->bias[i].id < p->n_sample) x[p->bias[i].id] += p->bias[i].bias;
}

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

/* The host sampler's argmax: the first index of the largest, NaNs passed
 * over (the kernel table's argmax), but a NaN at 0 is kept, as its loop
 * keeps it. */
static int32_t sample__argmax(const float *x, int64_t n)
{
    return isnan(x[0]) ? 0 : (int32_t)cpu__kernels()->argmax(x, n);
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
    smath_masses_all(w, n, cpu__kernels()->sample_chunk, all.count, all.mass);
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

/* What a row carries from one phase to the next, in the words of its scratch
 * slice past the [V]-sized arrays (GRAPH_SAMPLE_SCRATCH_EXTRA). */
typedef struct sample__state {
    double max, lse;          /* the largest logit after masks; the raw row's log-normaliser */
    int32_t draw, want_lp;    /* the row is still to be drawn; it writes its logprobs */
    graph_sample_logprobs lp; /* its record, without the chosen id until the end */
} sample__state;
_Static_assert(sizeof(sample__state) <= GRAPH_SAMPLE_SCRATCH_EXTRA * sizeof(int32_t),
               "a row's state fits the scratch slice's extra words");

static graph_sample_row sample__params(const cpu_sample_args *a, int64_t r)
{
    graph_sample_row p;
    memcpy(&p, a->params + r * GRAPH_SAMPLE_ROW_WORDS, sizeof p);
    return p;
}

static int64_t sample__pos(const cpu_sample_args *a, int64_t r)
{
    return (int64_t)a->positions[r] + 1; /* the token being chosen */
}

/* The chosen id into out, history and (rows that ask) the logprobs record. */
static void sample__finish(const cpu_sample_args *a, int64_t r, const sample__scratch *sc,
                           sample__state *st, int32_t id)
{
    int64_t pos = sample__pos(a, r);
    a->out[r] = id;
    if (pos < a->hist_len) a->history[r * a->hist_len + pos] = id;
    st->draw = 0;
    if (!st->want_lp || id < 0) return;
    st->lp.id = id;
    st->lp.logprob = (float)((double)sc->raw[id] - st->lse);
    memcpy(a->logprobs + r * GRAPH_SAMPLE_LP_WORDS, &st->lp, sizeof st->lp);
}

/* Row r up to its draw: logprobs of the raw row, penalties, masks, the
 * largest logit. A greedy, masked-out or padding row is finished here;
 * otherwise st->draw is set. */
static void sample__begin(const cpu_sample_args *a, int64_t r, const sample__scratch *sc,
                          sample__state *st)
{
    graph_sample_row p = sample__params(a, r);
    memset(st, 0, sizeof *st); /* the record whole: no stale bytes past n_top */
    if (p.n_sample <= 0 || p.n_sample > a->n_vocab) { /* padding */
        a->out[r] = 0;
        return;
    }
    float *x = a->logits + r * a->n_vocab;
    int32_t *hist = a->history + r * a->hist_len;
    int64_t pos = sample__pos(a, r), n_hist = pos < a->hist_len ? pos : a->hist_len;
    st->want_lp = (p.flags & GRAPH_SAMPLE_LOGPROBS) && a->logprobs;
    if (st->want_lp) { /* of the raw row: before the bias, penalties and masks change it */
        st->lse = sample__logprobs(x, p.n_sample, p.n_top, &st->lp, sc->w);
        memcpy(sc->raw, x, (size_t)p.n_sample * sizeof *x);
    }
    sample__bias(x, &p);
    if (p.flags & GRAPH_SAMPLE_PENALTIES) sample__penalize(x, &p, hist, n_hist, sc->cnt);
    sample__mask(x, &p, pos - p.n_prompt);
    const uint32_t *mask = a->mask ? a->mask + r * GRAPH_SAMPLE_MASK_WORDS(a->n_vocab) : NULL;
    if ((p.flags & GRAPH_SAMPLE_MASKED) && !(mask && sample__allow(x, mask, p.n_sample))) {
        sample__finish(a, r, sc, st, GRAPH_SAMPLE_NO_TOKEN);
        return;
    }
    int32_t best = sample__argmax(x, p.n_sample);
    if (p.temperature == 0.0) {
        sample__finish(a, r, sc, st, best);
        return;
    }
    st->max = x[best];
    st->draw = 1;
}

/* Part `part` of n_parts of row r's weights: those of its contiguous range
 * of 256-id chunks, and each chunk's record (smath_chunk_of under the cut
 * {0, -1}: every positive weight's part and count by bin). */
static void sample__weights(const cpu_sample_args *a, int64_t r, const sample__scratch *sc,
                            const sample__state *st, int part, int n_parts)
{
    graph_sample_row p = sample__params(a, r);
    int64_t n = p.n_sample, n_chunks = (n + SMATH_CHUNK - 1) / SMATH_CHUNK;
    const float *x = a->logits + r * a->n_vocab;
    for (int64_t c = n_chunks * part / n_parts; c < n_chunks * (part + 1) / n_parts; c++) {
        int64_t c0 = c * SMATH_CHUNK, c1 = c0 + SMATH_CHUNK < n ? c0 + SMATH_CHUNK : n;
        cpu__kernels()->sample_weights(x + c0, c1 - c0, st->max, 1.0 / p.temperature, p.min_p,
                                       sc->w + c0);
        cpu__kernels()->sample_chunk(sc->w, c0, c1, &sc->chunks[c]);
    }
}

/* Row r's draw once its weights and chunk records are made: the records
 * added bin by bin in chunk order (every positive weight's count and mass),
 * the top-k / top-p cut, then philox_uniform(seed, position). */
static void sample__draw(const cpu_sample_args *a, int64_t r, const sample__scratch *sc,
                         sample__state *st)
{
    graph_sample_row p = sample__params(a, r);
    int64_t n = p.n_sample, n_chunks = (n + SMATH_CHUNK - 1) / SMATH_CHUNK;
    sample_kept k;
    smath_chunks_fold(sc->chunks, n_chunks, k.count, k.mass);
    sample_work wk = {sc->cand, sc->tmp, sc->cnt, sc->chunks};
    sample_select_cut(sc->w, n, p.top_k, p.top_p, &wk, &k);
    int64_t id =
        sample_select_draw(sc->w, n, &k, sc->chunks, philox_uniform(p.seed, sample__pos(a, r)));
    if (id < 0) id = sample__argmax(a->logits + r * a->n_vocab, n);
    sample__finish(a, r, sc, st, (int32_t)id);
}

/* Row r whole, on one thread. */
static void sample__row(const cpu_sample_args *a, int64_t r, const sample__scratch *sc,
                        sample__state *st)
{
    sample__begin(a, r, sc, st);
    if (!st->draw) return;
    sample__weights(a, r, sc, st, 0, 1);
    sample__draw(a, r, sc, st);
}

/* --- the phases ------------------------------------------------------------------ */

static sample__scratch sample__slice(const cpu_sample_args *a, int64_t slot, sample__state **st)
{
    int64_t V = a->n_vocab;
    int32_t *base = a->scratch + slot * a->scratch_stride;
    *st = (sample__state *)(void *)(base + GRAPH_SAMPLE_SCRATCH_WORDS * V);
    return (sample__scratch){(double *)(void *)base,
                             (sample_cand *)(void *)(base + 2 * V),
                             (sample_cand *)(void *)(base + 6 * V),
                             base + 10 * V,
                             (float *)(void *)(base + 11 * V),
                             (smath_chunk *)(void *)(base + GRAPH_SAMPLE_SCRATCH_WORDS * V +
                                                     GRAPH_SAMPLE_SCRATCH_EXTRA)};
}

/* Are the rows split over the threads? When there are fewer rows than
 * threads and a scratch slice for each (slice r is row r's). */
static bool sample__split(const cpu_sample_args *a, int nth)
{
    return a->n_rows < nth && a->n_rows <= a->n_workers;
}

void cpu_sample(const cpu_sample_args *a, int ith, int nth)
{
    sample__state *st;
    if (!sample__split(a, nth)) { /* rows whole: worker ith of min(nth, n_workers) takes rows ith, ith + n, ... */
        int64_t n_workers = nth < a->n_workers ? nth : a->n_workers;
        if (a->phase != 0 || ith >= n_workers) return;
        sample__scratch sc = sample__slice(a, ith, &st);
        for (int64_t r = ith; r < a->n_rows; r += n_workers)
            sample__row(a, r, &sc, st);
        return;
    }
    if (a->phase == 1) { /* share ith: part ith / n_rows of row ith % n_rows */
        int64_t r = ith % a->n_rows;
        sample__scratch sc = sample__slice(a, r, &st);
        if (st->draw)
            sample__weights(a, r, &sc, st, (int)(ith / a->n_rows),
                            (int)((nth - 1 - r) / a->n_rows + 1));
        return;
    }
    if (ith >= a->n_rows) return; /* phases 0 and 2: share r does row r */
    sample__scratch sc = sample__slice(a, ith, &st);
    if (a->phase == 0) sample__begin(a, ith, &sc, st);
    else if (st->draw)
        sample__draw(a, ith, &sc, st);
}
