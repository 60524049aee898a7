/* sample_select.h - the kept set of top-k and top-p over a row of sampling
 * weights, in the arithmetic of base/sample_math.h, shared by the CPU
 * sample kernel and the host sampler (a shader follows the same steps).
 *
 *   every id of weight > 0            masses by bin (sample_math.h)
 *   top-k   the bin where the running count reaches k is sorted (weight
 *           descending, id ascending); its k-th weight is the cut, and every
 *           id of that weight stays (ties kept)
 *   top-p   need = top_p x the kept mass; the first bin whose running mass
 *           (bins in order) reaches need is sorted, and its ids are walked
 *           in that order, adding to the mass of the bins before, until the
 *           sum reaches need; the last one walked is the cut
 *
 * The kept set is always a prefix of the ids sorted by (weight desc, id
 * asc), so it is given by one cut. Only a boundary bin is ever sorted, and of
 * it only the buckets (by the top mantissa bits) that the count or the walk
 * reaches: the same order as sorting the whole bin. The boundary bin's
 * members are listed once, in id order (the chunk records say which chunks
 * have any), and its new mass under the cut is summed over them alone: the
 * other ids would add +0.0, which changes no sum. */
#ifndef ENC_BASE_SAMPLE_SELECT_H
#define ENC_BASE_SAMPLE_SELECT_H

#include <stdint.h>

#include "base/sample_math.h"

/* A weight beside its id, so that sorting reads memory in order. */
typedef struct sample_cand {
    double w;
    int32_t id, pad;
} sample_cand;

/* A kept set: its cut, and its count and mass by bin. */
typedef struct sample_kept {
    smath_cut cut;
    int64_t count[SMATH_BINS];
    double mass[SMATH_BINS];
} sample_kept;

/* Where a selection over n ids works: cand and tmp [n] each, ids [n], and
 * the row's chunk records ([(n + SMATH_CHUNK - 1) / SMATH_CHUNK]), which
 * the selection keeps true for its cut and the draw reads. */
typedef struct sample_work {
    sample_cand *cand, *tmp;
    int32_t *ids;
    smath_chunk *chunks;
} sample_work;

/* The kept set of w[0..n) under top_k (<= 0 or >= n: off) and top_p (0 or
 * >= 1: off); makes wk's chunk records first. */
void sample_select(const double *w, int64_t n, int64_t top_k, double top_p, const sample_work *wk,
                   sample_kept *out);

/* sample_select where wk's chunk records are already made under the cut
 * {0, -1} and io holds their fold (smath_chunks_fold: every positive
 * weight's count and mass by bin); io->cut is set here. */
void sample_select_cut(const double *w, int64_t n, int64_t top_k, double top_p,
                       const sample_work *wk, sample_kept *io);

/* The id the uniform u01 in [0, 1) draws from the kept set (smath_draw of
 * u01 x its mass, over the chunk records the selection left); -1 when
 * nothing is kept. */
int64_t sample_select_draw(const double *w, int64_t n, const sample_kept *k,
                           const smath_chunk *chunks, double u01);

#endif
