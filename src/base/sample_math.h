/* sample_math.h - the sampler's arithmetic, defined so that every backend
 * (the CPU kernel, the host sampler, a shader) computes the same bits: an
 * exp and a log of our own made of correctly rounded double adds, multiplies
 * and one divide (no libm, no fused multiply-add: the build compiles with
 * -ffp-contract=off, a shader marks these `precise`), and masses summed in
 * one fixed order.
 *
 *   exp(x), x <= 0    k = round(x / ln2) by the 1.5 * 2^52 trick; r = x - k ln2
 *                     (ln2 in two parts, fdlibm's, so k * ln2_hi is exact);
 *                     Horner's Taylor polynomial of degree 12 in r; times 2^k
 *                     built from its bits. x < -708 (or NaN, -inf): 0.
 *   log(x), x > 0     x = 2^e m, m in [sqrt(2)/2, sqrt(2)); s = (m-1)/(m+1);
 *                     log m = 2s + 2s (s^2/3 + s^4/5 + ... + s^20/21)
 *   bin(w), w in (0,1] the binary exponent: 0 for w = 1, b for [2^-b, 2^-b+1),
 *                     63 for anything smaller
 *
 *   the mass of a kept set, bin by bin:
 *       ids  [ chunk 0: 0..255 ][ chunk 1: 256..511 ] ...
 *       part(b, c) = the chunk's kept ids of bin b, added in id order
 *       mass(b)    = part(b, 0) + part(b, 1) + ...   (chunks in order)
 *       mass       = mass(0) + mass(1) + ... + mass(63)
 *
 *   the draw of u in [0, mass): the first bin whose running mass (bins in
 *   order) exceeds u; in it, with u less the bins before, the first chunk
 *   whose running part exceeds the rest; in it, with the rest less the
 *   chunks before, the first kept id of the bin whose running weight (id
 *   order) exceeds what is left. Where rounding leaves no such entry the
 *   last one with mass is taken, and below it the last again.
 *
 * Accuracy: exp and log agree with libm to a few ulp (test_sample_math).
 * A kept set is given by a cut: id i of weight w[i] > 0 is kept when
 * w[i] > cut_w, or w[i] == cut_w and i <= cut_id (cut {0, -1}: every id of
 * positive weight). */
#ifndef ENC_BASE_SAMPLE_MATH_H
#define ENC_BASE_SAMPLE_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { SMATH_BINS = 64, SMATH_CHUNK = 256 };

#define SMATH_LN2_HI 6.93147180369123816490e-01 /* 0x3fe62e42fee00000: 21 low zero bits */
#define SMATH_LN2_LO 1.90821492927058770002e-10
#define SMATH_LOG2E 1.44269504088896338700e+00
#define SMATH_ROUNDER 0x1.8p52 /* x + 1.5 * 2^52 - 1.5 * 2^52 rounds x to an integer */
#define SMATH_EXP_MIN (-708.0) /* 2^k stays normal */

/* 1/n! for n = 12 down to 2, Horner's order. */
#define SMATH_EXP_C12 2.08767569878681e-09
#define SMATH_EXP_C11 2.505210838544172e-08
#define SMATH_EXP_C10 2.755731922398589e-07
#define SMATH_EXP_C9 2.7557319223985893e-06
#define SMATH_EXP_C8 2.48015873015873e-05
#define SMATH_EXP_C7 0.0001984126984126984
#define SMATH_EXP_C6 0.001388888888888889
#define SMATH_EXP_C5 0.008333333333333333
#define SMATH_EXP_C4 0.041666666666666664
#define SMATH_EXP_C3 0.16666666666666666
#define SMATH_EXP_C2 0.5

static inline uint64_t smath__bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double smath__from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* e^x for x <= 0 (exact enough up to x = 709 too); 0 below SMATH_EXP_MIN. */
static inline double smath_exp(double x)
{
    double t = x * SMATH_LOG2E + SMATH_ROUNDER;
    double k = t - SMATH_ROUNDER;
    double r = x - k * SMATH_LN2_HI;
    r = r - k * SMATH_LN2_LO;
    double p = SMATH_EXP_C12;
    p = p * r + SMATH_EXP_C11;
    p = p * r + SMATH_EXP_C10;
    p = p * r + SMATH_EXP_C9;
    p = p * r + SMATH_EXP_C8;
    p = p * r + SMATH_EXP_C7;
    p = p * r + SMATH_EXP_C6;
    p = p * r + SMATH_EXP_C5;
    p = p * r + SMATH_EXP_C4;
    p = p * r + SMATH_EXP_C3;
    p = p * r + SMATH_EXP_C2;
    p = p * r + 1.0;
    p = p * r + 1.0;
    /* k sits in the low bits of t: 2^k = (k + 1023) << 52 */
    uint64_t scale = (smath__bits(t) - smath__bits(SMATH_ROUNDER) + 1023u) << 52;
    return x >= SMATH_EXP_MIN ? p * smath__from_bits(scale) : 0.0;
}

/* log(x) for a positive normal finite x. */
static inline double smath_log(double x)
{
    uint64_t u = smath__bits(x);
    int64_t e = (int64_t)(u >> 52) - 1023;
    double m = smath__from_bits((u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
    if (m > 1.4142135623730951) {
        m = m * 0.5;
        e++;
    }
    double f = m - 1.0, s = f / (2.0 + f), z = s * s;
    double q = 0.047619047619047616;
    q = q * z + 0.05263157894736842;
    q = q * z + 0.058823529411764705;
    q = q * z + 0.06666666666666667;
    q = q * z + 0.07692307692307693;
    q = q * z + 0.09090909090909091;
    q = q * z + 0.1111111111111111;
    q = q * z + 0.14285714285714285;
    q = q * z + 0.2;
    q = q * z + 0.3333333333333333;
    double hs = 2.0 * s, ed = (double)e;
    double lm = hs + hs * (q * z);
    return (ed * SMATH_LN2_HI + lm) + ed * SMATH_LN2_LO;
}

/* The bin of a weight in (0, 1] (see the top). */
static inline int smath_bin(double w)
{
    int b = 1023 - (int)(smath__bits(w) >> 52);
    return b < SMATH_BINS - 1 ? b : SMATH_BINS - 1;
}

/* w[i] = exp((x[i] - max) * inv_t), 0 where that is below min_p. */
static inline void smath_weights(const float *x, int64_t n, double max, double inv_t, double min_p,
                                 double *w)
{
    for (int64_t i = 0; i < n; i++) {
        double e = smath_exp(((double)x[i] - max) * inv_t);
        w[i] = e < min_p ? 0.0 : e;
    }
}

#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
/* smath_weights four lanes at a time, the same bits (sample_math_avx2.c);
 * only where the CPU has AVX2; */
void smath_weights_avx2(const float *x, int64_t n, double max, double inv_t, double min_p,
                        double *w);
/* eight lanes at a time, the same bits (sample_math_avx512.c); only where
 * the CPU has AVX-512 F. */
void smath_weights_avx512(const float *x, int64_t n, double max, double inv_t, double min_p,
                          double *w);
#endif

/* smath_weights by the fastest loop this CPU runs (sample_math.c). */
void smath_weights_best(const float *x, int64_t n, double max, double inv_t, double min_p,
                        double *w);

/* --- kept sets and their masses ------------------------------------------------- */

typedef struct smath_cut {
    double w;   /* ids of weight above it are kept */
    int64_t id; /* and those of weight equal to it up to this id */
} smath_cut;

static inline bool smath_kept(const double *w, int64_t i, smath_cut cut)
{
    return w[i] > 0.0 && (w[i] > cut.w || (w[i] == cut.w && i <= cut.id));
}

/* One chunk's record under a cut: its parts kept apart, so that chunks can
 * be made in any order (by several threads) and then added in chunk order,
 * and the bin of each of its ids, so that a bin's members are found without
 * reading the weights again. part[b] and count[b] are meaningful for the
 * bins in seen (bit b). */
typedef struct smath_chunk {
    uint64_t seen;
    double part[SMATH_BINS];
    int32_t count[SMATH_BINS];
    uint8_t bin[SMATH_CHUNK]; /* id c0 + j's bin, SMATH_BINS when it is not kept */
} smath_chunk;

/* The bin of each id of [c0, c1) into out->bin from index at on (the ids
 * of a chunk from its id c0 - at), SMATH_BINS for one not kept under cut
 * (no chain between ids); returns the bins there are, bit b for bin b. */
static inline uint64_t smath_chunk_bins(const double *w, int64_t c0, int64_t c1, smath_cut cut,
                                        smath_chunk *out, int64_t at)
{
    uint64_t there = 0;
    for (int64_t j = 0; j < c1 - c0; j++) {
        int b = smath_kept(w, c0 + j, cut) ? smath_bin(w[c0 + j]) : SMATH_BINS;
        out->bin[at + j] = (uint8_t)b;
        there |= (uint64_t)(b < SMATH_BINS) << (b & (SMATH_BINS - 1));
    }
    return there;
}

/* The parts and counts of chunk [c0, c1) from its bins (smath_chunk_bins'),
 * each bin's part in id order, and its seen bits: the record whole. */
static inline void smath_chunk_sums(const double *w, int64_t c0, int64_t c1, smath_chunk *out)
{
    double part[SMATH_BINS + 1] = {0}; /* the ids not kept go to bin SMATH_BINS, read by none */
    int32_t count[SMATH_BINS + 1] = {0};
    for (int64_t j = 0; j < c1 - c0; j++) {
        part[out->bin[j]] += w[c0 + j];
        count[out->bin[j]]++;
    }
    uint64_t seen = 0;
    for (int b = 0; b < SMATH_BINS; b++) {
        if (!count[b]) continue;
        seen |= 1ull << b;
        out->part[b] = part[b];
        out->count[b] = count[b];
    }
    out->seen = seen;
}

/* The record of chunk [c0, c1) (at most SMATH_CHUNK ids) under cut. */
static inline void smath_chunk_of(const double *w, int64_t c0, int64_t c1, smath_cut cut,
                                  smath_chunk *out)
{
    smath_chunk_bins(w, c0, c1, cut, out, 0);
    smath_chunk_sums(w, c0, c1, out);
}

/* The record of chunk [c0, c1) with every positive weight kept (the cut
 * {0, -1}): smath_chunk_of's, in the signature of the SIMD forms. */
void smath_chunk_all(const double *w, int64_t c0, int64_t c1, smath_chunk *out);

#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
/* smath_chunk_all with each id's bin found in vector lanes, and the parts
 * of a chunk whose bins lie within a few consecutive ones (8 on AVX2, 16 on
 * AVX-512) summed in lanes, a lane a bin (one dependent add per id instead
 * of a chain through memory): the same bits (sample_math_avx2.c, _avx512.c);
 * only where the CPU has the ISA. */
void smath_chunk_all_avx2(const double *w, int64_t c0, int64_t c1, smath_chunk *out);
void smath_chunk_all_avx512(const double *w, int64_t c0, int64_t c1, smath_chunk *out);
#endif

/* Add record ch's parts and counts to mass[] and count[], bin by bin. */
static inline void smath__add_chunk(const smath_chunk *ch, int64_t *count, double *mass)
{
    uint64_t seen = ch->seen;
    for (int b = 0; seen; b++, seen >>= 1) {
        if (!(seen & 1)) continue;
        mass[b] += ch->part[b];
        count[b] += ch->count[b];
    }
}

/* count[] and mass[] from chunks ch[0 .. n_chunks), added in chunk order:
 * smath_masses' bits when the chunks are a row's in order. */
static inline void smath_chunks_fold(const smath_chunk *ch, int64_t n_chunks, int64_t *count,
                                     double *mass)
{
    memset(mass, 0, SMATH_BINS * sizeof *mass);
    memset(count, 0, SMATH_BINS * sizeof *count);
    for (int64_t c = 0; c < n_chunks; c++)
        smath__add_chunk(&ch[c], count, mass);
}

/* A function that makes the record of chunk [c0, c1) with every positive
 * weight kept: smath_chunk_all or one of its SIMD forms (the same bits). */
typedef void (*smath_chunk_all_fn)(const double *w, int64_t c0, int64_t c1, smath_chunk *out);

/* count[b] and mass[b] of the kept ids of each bin (see the top): each
 * chunk's record, added as it is made, made by chunk_all when given (the
 * cut must then be {0, -1}), else by smath_chunk_of. */
static inline void smath__masses(const double *w, int64_t n, smath_cut cut,
                                 smath_chunk_all_fn chunk_all, int64_t *count, double *mass)
{
    smath_chunk rec;
    memset(mass, 0, SMATH_BINS * sizeof *mass);
    memset(count, 0, SMATH_BINS * sizeof *count);
    for (int64_t c0 = 0; c0 < n; c0 += SMATH_CHUNK) {
        int64_t c1 = c0 + SMATH_CHUNK < n ? c0 + SMATH_CHUNK : n;
        if (chunk_all)
            chunk_all(w, c0, c1, &rec);
        else
            smath_chunk_of(w, c0, c1, cut, &rec);
        smath__add_chunk(&rec, count, mass);
    }
}

/* count[b] and mass[b] of the kept ids of each bin (see the top). */
static inline void smath_masses(const double *w, int64_t n, smath_cut cut, int64_t *count,
                                double *mass)
{
    smath__masses(w, n, cut, NULL, count, mass);
}

/* smath_masses under the cut {0, -1} (every positive weight), the records
 * made by chunk_all: the same bits. */
static inline void smath_masses_all(const double *w, int64_t n, smath_chunk_all_fn chunk_all,
                                    int64_t *count, double *mass)
{
    smath__masses(w, n, (smath_cut){0.0, -1}, chunk_all, count, mass);
}

static inline double smath_total(const double *mass)
{
    double m = 0.0;
    for (int b = 0; b < SMATH_BINS; b++)
        m += mass[b];
    return m;
}

/* The first of the n running sums of v[] that exceeds *u, with *u reduced by
 * the sums before it; the last entry with mass (and *u = INFINITY) when
 * none does; -1 when none has mass. */
static inline int64_t smath__walk(const double *v, int64_t n, double *u)
{
    double acc = 0.0;
    int64_t last = -1;
    for (int64_t j = 0; j < n; j++) {
        if (v[j] <= 0.0) continue;
        double next = acc + v[j];
        if (*u < next) {
            *u = *u - acc;
            return j;
        }
        acc = next;
        last = j;
    }
    *u = INFINITY;
    return last;
}

/* The id of the draw u (see the top) in the kept set of w; mass[] as
 * smath_masses gave for the set, and ch[] the row's chunk records under it
 * (smath_chunk_of's, or rewritten for the bins a cut changed): a chunk's
 * part of a bin is the sum of its kept ids of the bin in id order, as the
 * definition's. Only bins of positive mass are read. Returns -1 when nothing
 * is kept. */
static inline int64_t smath_draw(const double *w, int64_t n, const double *mass,
                                 const smath_chunk *ch, double u)
{
    int64_t b = smath__walk(mass, SMATH_BINS, &u);
    if (b < 0) return -1;
    /* the chunk: its part of bin b, chunk by chunk until one exceeds u */
    double acc = 0.0;
    int64_t last_chunk = -1, chunk = -1, n_chunks = (n + SMATH_CHUNK - 1) / SMATH_CHUNK;
    for (int64_t c = 0; c < n_chunks; c++) {
        if (!(ch[c].seen >> b & 1) || ch[c].part[b] <= 0.0) continue;
        double next = acc + ch[c].part[b];
        last_chunk = c;
        if (u < next) {
            u = u - acc;
            chunk = c;
            break;
        }
        acc = next;
    }
    if (chunk < 0) {
        chunk = last_chunk;
        u = INFINITY;
    }
    int64_t c0 = chunk * SMATH_CHUNK, c1 = c0 + SMATH_CHUNK < n ? c0 + SMATH_CHUNK : n, last = -1;
    double run = 0.0;
    for (int64_t i = c0; i < c1; i++) {
        if (ch[chunk].bin[i - c0] != b) continue;
        run += w[i];
        if (u < run) return i;
        last = i;
    }
    return last;
}

#endif
