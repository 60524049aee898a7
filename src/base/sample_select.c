/* sample_select.c - top-k / top-p as a cut over binned weights (see
 * sample_select.h): count and mass by bin, then one bin sorted where a
 * count or a running mass crosses its bound. */
#include "base/sample_select.h"

#include <stdbool.h>
#include <string.h>

/* Does a come before b: weight descending, then id ascending? */
static bool sample_select__before(const sample_cand *a, const sample_cand *b)
{
    return a->w != b->w ? a->w > b->w : a->id < b->id;
}

/* Bottom-up merge sort of c[0..n) by sample_select__before, through tmp. */
static void sample_select__sort(sample_cand *c, sample_cand *tmp, int64_t n)
{
    sample_cand *src = c, *dst = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n,
                    hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = sample_select__before(&src[b], &src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        sample_cand *t = src;
        src = dst;
        dst = t;
    }
    if (src != c) memcpy(c, src, (size_t)n * sizeof *c);
}

/* A cut inside bin b changed only b's mass: the bins before keep theirs,
 * those after are emptied. */
static void sample_select__recut(const double *w, int64_t n, int b, sample_kept *out)
{
    for (int j = b + 1; j < SMATH_BINS; j++) {
        out->count[j] = 0;
        out->mass[j] = 0.0;
    }
    smath_bin_mass(w, n, out->cut, b, &out->count[b], &out->mass[b]);
}

enum { SAMPLE_SELECT__BUCKETS = 256 };

/* The kept ids of bin b in out[], counted into buckets by the top 8 bits of
 * the mantissa, largest first, ids ascending within a bucket (bin 63 mixes
 * exponents: one bucket); bucket j is out[start[j] .. start[j + 1]). Once a
 * bucket is sorted (sample_select__sort_bucket) it reads as that stretch of
 * the whole bin sorted, so only the buckets a walk reaches are sorted.
 * Returns the count. cand and tmp: scratch, [n] each; out is tmp. */
static int64_t sample_select__bucket(const double *w, int64_t n, smath_cut cut, int b,
                                     sample_cand *cand, sample_cand *tmp, int64_t *start)
{
    int64_t m = 0, count[SAMPLE_SELECT__BUCKETS] = {0};
    int shift = b == SMATH_BINS - 1 ? 63 : 44;
    for (int64_t i = 0; i < n; i++) { /* written always, kept when of the bin: no branch */
        bool in = (int)smath_kept(w, i, cut) & (int)(smath_bin(w[i]) == b); /* no branch: & of two ints */
        cand[m] = (sample_cand){w[i], (int32_t)i, 0};
        count[255 - (int)((smath__bits(w[i]) >> shift) & 255)] += in;
        m += in;
    }
    start[0] = 0;
    for (int j = 0; j < SAMPLE_SELECT__BUCKETS; j++)
        start[j + 1] = start[j] + count[j];
    int64_t at[SAMPLE_SELECT__BUCKETS];
    memcpy(at, start, sizeof at);
    for (int64_t i = 0; i < m; i++)
        tmp[at[255 - (int)((smath__bits(cand[i].w) >> shift) & 255)]++] = cand[i];
    return m;
}

/* Sort bucket j of out (sample_select__bucket's), through cand. */
static void sample_select__sort_bucket(sample_cand *out, sample_cand *cand, const int64_t *start,
                                       int j)
{
    sample_select__sort(out + start[j], cand + start[j], start[j + 1] - start[j]);
}

static void sample_select__top_k(const double *w, int64_t n, int64_t k, sample_cand *cand,
                                 sample_cand *tmp, sample_kept *out)
{
    int64_t before = 0;
    int b = 0;
    while (b < SMATH_BINS && before + out->count[b] < k)
        before += out->count[b++];
    if (b == SMATH_BINS) return; /* fewer than k ids have weight */
    int64_t start[SAMPLE_SELECT__BUCKETS + 1], at = k - before - 1;
    sample_select__bucket(w, n, out->cut, b, cand, tmp, start);
    int j = 0;
    while (start[j + 1] <= at)
        j++;
    sample_select__sort_bucket(tmp, cand, start, j);
    out->cut = (smath_cut){tmp[at].w, INT64_MAX};
    sample_select__recut(w, n, b, out);
}

static void sample_select__top_p(const double *w, int64_t n, double top_p, sample_cand *cand,
                                 sample_cand *tmp, sample_kept *out)
{
    double need = top_p * smath_total(out->mass), acc = 0.0;
    int b = 0, last = -1;
    for (; b < SMATH_BINS; b++) {
        if (out->count[b] == 0) continue;
        last = b;
        double next = acc + out->mass[b];
        if (next >= need) break;
        acc = next;
    }
    if (last < 0) return;        /* nothing kept */
    if (b == SMATH_BINS) return; /* rounding: every bin stays */
    int64_t start[SAMPLE_SELECT__BUCKETS + 1], r = 0;
    sample_select__bucket(w, n, out->cut, b, cand, tmp, start);
    for (int j = 0; j < SAMPLE_SELECT__BUCKETS && (r == 0 || acc < need); j++) {
        if (start[j + 1] == start[j]) continue;
        sample_select__sort_bucket(tmp, cand, start, j);
        do
            acc += tmp[r++].w;
        while (r < start[j + 1] && acc < need);
    }
    out->cut = (smath_cut){tmp[r - 1].w, tmp[r - 1].id};
    sample_select__recut(w, n, b, out);
}

void sample_select_cut(const double *w, int64_t n, int64_t top_k, double top_p, sample_cand *cand,
                       sample_cand *tmp, sample_kept *io)
{
    io->cut = (smath_cut){0.0, -1};
    if (top_k > 0 && top_k < n) sample_select__top_k(w, n, top_k, cand, tmp, io);
    if (top_p > 0.0 && top_p < 1.0) sample_select__top_p(w, n, top_p, cand, tmp, io);
}

void sample_select(const double *w, int64_t n, int64_t top_k, double top_p, sample_cand *cand,
                   sample_cand *tmp, sample_kept *out)
{
    smath_masses(w, n, (smath_cut){0.0, -1}, out->count, out->mass);
    sample_select_cut(w, n, top_k, top_p, cand, tmp, out);
}

int64_t sample_select_draw(const double *w, int64_t n, const sample_kept *k, double u01)
{
    return smath_draw(w, n, k->cut, k->mass, u01 * smath_total(k->mass));
}
