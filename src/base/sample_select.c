/* sample_select.c - top-k / top-p as a cut over binned weights (see
 * sample_select.h): count and mass by bin; where a count or a running mass
 * crosses its bound, that bin's members listed in id order, bucketed, the
 * buckets the count or the walk reaches sorted, and the bin's mass summed
 * anew over its members alone. */
#include "base/sample_select.h"

#include <stdbool.h>
#include <string.h>

/* Does a come before b: weight descending, then id ascending? */
static bool sample_select__before(const sample_cand *a, const sample_cand *b)
{
    return a->w != b->w ? a->w > b->w : a->id < b->id;
}

enum { SAMPLE_SELECT__SMALL = 16 }; /* runs sorted by insertion before merging */

static void sample_select__insertion(sample_cand *c, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        sample_cand x = c[i];
        int64_t j = i;
        for (; j > 0 && sample_select__before(&x, &c[j - 1]); j--)
            c[j] = c[j - 1];
        c[j] = x;
    }
}

/* Merge sort of c[0..n) by sample_select__before, through tmp: runs of
 * SAMPLE_SELECT__SMALL by insertion, then merged bottom-up. */
static void sample_select__sort(sample_cand *c, sample_cand *tmp, int64_t n)
{
    for (int64_t lo = 0; lo < n; lo += SAMPLE_SELECT__SMALL)
        sample_select__insertion(c + lo,
                                 n - lo < SAMPLE_SELECT__SMALL ? n - lo : SAMPLE_SELECT__SMALL);
    sample_cand *src = c, *dst = tmp;
    for (int64_t width = SAMPLE_SELECT__SMALL; width < n; width *= 2) {
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

/* The kept ids of bin b in id order into ids[], from the chunk records
 * (true for b); returns their count. */
static int64_t sample_select__members(int64_t n, int b, const smath_chunk *ch, int32_t *ids)
{
    int64_t m = 0;
    for (int64_t c0 = 0; c0 < n; c0 += SMATH_CHUNK) {
        const smath_chunk *r = &ch[c0 / SMATH_CHUNK];
        if (!(r->seen >> b & 1)) continue;
        int64_t len = c0 + SMATH_CHUNK < n ? SMATH_CHUNK : n - c0;
        for (int64_t j = 0; j < len; j++) { /* written always, kept when of the bin: no branch */
            ids[m] = (int32_t)(c0 + j);
            m += r->bin[j] == b;
        }
    }
    return m;
}

enum { SAMPLE_SELECT__BUCKET_BITS = 12, SAMPLE_SELECT__BUCKETS = 1 << SAMPLE_SELECT__BUCKET_BITS };

/* A weight's bucket within its bin: the top mantissa bits, the largest
 * weights first (bin 63 mixes exponents: one bucket, shift 63). */
static int sample_select__bucket_of(double w, int shift)
{
    return SAMPLE_SELECT__BUCKETS - 1 -
           (int)((smath__bits(w) >> shift) & (SAMPLE_SELECT__BUCKETS - 1));
}

/* Bin b's members ids[0..m) into out[] by bucket, ids ascending within a
 * bucket; bucket j is out[start[j] .. start[j + 1]). Once a bucket is
 * sorted (sample_select__sort_bucket) it reads as that stretch of the whole
 * bin sorted, so only the buckets a walk reaches are sorted. */
static void sample_select__bucket(const double *w, const int32_t *ids, int64_t m, int b,
                                  sample_cand *out, int32_t *start)
{
    int32_t at[SAMPLE_SELECT__BUCKETS] = {0};
    int shift = b == SMATH_BINS - 1 ? 63 : 52 - SAMPLE_SELECT__BUCKET_BITS;
    for (int64_t i = 0; i < m; i++)
        at[sample_select__bucket_of(w[ids[i]], shift)]++;
    start[0] = 0;
    for (int j = 0; j < SAMPLE_SELECT__BUCKETS; j++) {
        start[j + 1] = start[j] + at[j];
        at[j] = start[j];
    }
    for (int64_t i = 0; i < m; i++) {
        int32_t id = ids[i];
        out[at[sample_select__bucket_of(w[id], shift)]++] = (sample_cand){w[id], id, 0};
    }
}

/* Sort bucket j of out (sample_select__bucket's), through cand. */
static void sample_select__sort_bucket(sample_cand *out, sample_cand *cand, const int32_t *start,
                                       int j)
{
    sample_select__sort(out + start[j], cand + start[j], start[j + 1] - start[j]);
}

/* A cut inside bin b changes only b: its members ids[0..m) (listed under
 * the cut before) summed anew chunk by chunk, in id order, into the chunk
 * records (those dropped leave the bin there) and b's count and mass; the
 * bins after b are emptied (their records are read no more). */
static void sample_select__recut(const double *w, const int32_t *ids, int64_t m, int b,
                                 smath_chunk *ch, sample_kept *out)
{
    for (int j = b + 1; j < SMATH_BINS; j++) {
        out->count[j] = 0;
        out->mass[j] = 0.0;
    }
    double mass = 0.0;
    int64_t count = 0;
    for (int64_t i = 0; i < m;) {
        int64_t c = ids[i] / SMATH_CHUNK;
        double part = 0.0;
        int32_t in = 0;
        for (; i < m && ids[i] / SMATH_CHUNK == c; i++) {
            bool kept = smath_kept(w, ids[i], out->cut);
            part += kept ? w[ids[i]] : 0.0;
            in += kept;
            ch[c].bin[ids[i] % SMATH_CHUNK] = (uint8_t)(kept ? b : SMATH_BINS);
        }
        ch[c].part[b] = part;
        ch[c].count[b] = in;
        ch[c].seen = in ? ch[c].seen | 1ull << b : ch[c].seen & ~(1ull << b);
        count += in;
        if (in) mass += part;
    }
    out->count[b] = count;
    out->mass[b] = mass;
}

static void sample_select__top_k(const double *w, int64_t n, int64_t k, const sample_work *wk,
                                 sample_kept *out)
{
    int64_t before = 0;
    int b = 0;
    while (b < SMATH_BINS && before + out->count[b] < k)
        before += out->count[b++];
    if (b == SMATH_BINS) return; /* fewer than k ids have weight */
    int64_t m = sample_select__members(n, b, wk->chunks, wk->ids), at = k - before - 1;
    int32_t start[SAMPLE_SELECT__BUCKETS + 1];
    sample_select__bucket(w, wk->ids, m, b, wk->tmp, start);
    int j = 0;
    while (start[j + 1] <= at)
        j++;
    sample_select__sort_bucket(wk->tmp, wk->cand, start, j);
    out->cut = (smath_cut){wk->tmp[at].w, INT64_MAX};
    sample_select__recut(w, wk->ids, m, b, wk->chunks, out);
}

static void sample_select__top_p(const double *w, int64_t n, double top_p, const sample_work *wk,
                                 sample_kept *out)
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
    int64_t m = sample_select__members(n, b, wk->chunks, wk->ids), r = 0;
    int32_t start[SAMPLE_SELECT__BUCKETS + 1];
    sample_cand *tmp = wk->tmp;
    sample_select__bucket(w, wk->ids, m, b, tmp, start);
    for (int j = 0; j < SAMPLE_SELECT__BUCKETS && (r == 0 || acc < need); j++) {
        if (start[j + 1] == start[j]) continue;
        sample_select__sort_bucket(tmp, wk->cand, start, j);
        do
            acc += tmp[r++].w;
        while (r < start[j + 1] && acc < need);
    }
    out->cut = (smath_cut){tmp[r - 1].w, tmp[r - 1].id};
    sample_select__recut(w, wk->ids, m, b, wk->chunks, out);
}

void sample_select_cut(const double *w, int64_t n, int64_t top_k, double top_p,
                       const sample_work *wk, sample_kept *io)
{
    io->cut = (smath_cut){0.0, -1};
    if (top_k > 0 && top_k < n) sample_select__top_k(w, n, top_k, wk, io);
    if (top_p > 0.0 && top_p < 1.0) sample_select__top_p(w, n, top_p, wk, io);
}

void sample_select(const double *w, int64_t n, int64_t top_k, double top_p, const sample_work *wk,
                   sample_kept *out)
{
    int64_t n_chunks = (n + SMATH_CHUNK - 1) / SMATH_CHUNK;
    for (int64_t c = 0; c < n_chunks; c++) {
        int64_t c0 = c * SMATH_CHUNK, c1 = c0 + SMATH_CHUNK < n ? c0 + SMATH_CHUNK : n;
        smath_chunk_of(w, c0, c1, (smath_cut){0.0, -1}, &wk->chunks[c]);
    }
    smath_chunks_fold(wk->chunks, n_chunks, out->count, out->mass);
    sample_select_cut(w, n, top_k, top_p, wk, out);
}

int64_t sample_select_draw(const double *w, int64_t n, const sample_kept *k,
                           const smath_chunk *chunks, double u01)
{
    return smath_draw(w, n, k->mass, chunks, u01 * smath_total(k->mass));
}
