/* quant_k.c - quantizing to the K block types (Q4_K, Q5_K, Q6_K) by least
 * squares: each sub-block's scale (and min) is the best of a few candidate
 * steps, each refitted to the levels it chose; the sub-blocks' scales are
 * then quantized to the super-block's 6- or 8-bit grid, the levels chosen
 * again under the scales as stored, and the super-block's f16 scales
 * refitted to those levels where that lowers the error.
 *
 * Every value ends on the level nearest to it among those its block can
 * represent; a value may clip at the end of the range where a narrower step
 * serves the rest of its sub-block better. */
#include "base/quant_k.h"

#include <math.h>
#include <string.h>

/* One rounding per operation: no fused multiply-add (quant.c says why). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* The candidate steps of a sub-block: its range over (levels + k / DIV),
 * k in [LO, HI] (Q4_K, Q5_K), and its largest magnitude over (32 + k)
 * (Q6_K). Chosen on normal-like data (relative RMS error of Q4_K before
 * the scale choice of quant_k__scale_min: the min-max step alone 0.0726,
 * these seven 0.0688, 41 steps a twentieth apart 0.0685; of Q6_K: steps
 * -1, 0, 1 0.0167, these seven 0.0161, the same seven at k / 3 0.0166). */
enum { QUANT_K__AFFINE_LO = -3, QUANT_K__AFFINE_HI = 3, QUANT_K__AFFINE_DIV = 3 };
enum { QUANT_K__SYM_LO = -3, QUANT_K__SYM_HI = 3 };

/* The candidate loops keep QUANT_K__LANES independent partial sums (chains
 * the CPU runs side by side), summed in lane order. */
enum { QUANT_K__LANES = 8 };

/* A range or step below this is zero to a block (f16 scales reach 6e-8):
 * its inverse would overflow a float. */
#define QUANT_K__TINY 1e-30f

static double quant_k__lanes_sum(const float *v)
{
    double s = 0;
    for (int j = 0; j < QUANT_K__LANES; j++)
        s += v[j];
    return s;
}

static int quant_k__clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* A candidate's levels q of a sub-block, as the sums a least-squares fit
 * x ~ a q + b needs (those of x alone are the sub-block's, shared). */
typedef struct {
    double n, x, xx; /* the sub-block's */
    double q, qq, qx;
} quant_k__sums;

static quant_k__sums quant_k__sums_of(const float *x, int n)
{
    quant_k__sums s = {.n = n};
    for (int i = 0; i < n; i++)
        s.x += x[i], s.xx += (double)x[i] * x[i];
    return s;
}

/* Squared error of x ~ a q + b from the sums. */
static double quant_k__error(const quant_k__sums *s, double a, double b)
{
    double e =
        s->xx - 2 * a * s->qx - 2 * b * s->x + a * a * s->qq + 2 * a * b * s->q + s->n * b * b;
    return e > 0 ? e : 0;
}

/* The best a >= 0, b <= 0 for the levels the sums hold; returns its error. */
static double quant_k__refit_affine(const quant_k__sums *s, double *a, double *b)
{
    double det = s->n * s->qq - s->q * s->q;
    *a = det > 0 ? (s->n * s->qx - s->q * s->x) / det : 0;
    *b = (s->x - *a * s->q) / s->n;
    if (*b > 0) *b = 0, *a = s->qq > 0 ? s->qx / s->qq : 0;
    if (*a < 0) *a = 0, *b = s->x / s->n < 0 ? s->x / s->n : 0;
    return quant_k__error(s, *a, *b);
}

/* Sub-block x[0 .. n) as x ~ a q + b, q in [0, levels], a >= 0, b <= 0
 * (Q4_K's and Q5_K's d * sc and -dmin * m). A candidate's levels are
 * round((x - lo) * inv): 0 <= (x - lo) * inv <= levels + 1, so adding a
 * half and truncating rounds them. */
static void quant_k__fit_affine(const float *x, int n, int levels, float *a_out, float *b_out)
{
    float lo = 0.0f, hi = x[0];
    for (int i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    double best_a = 0, best_b = lo, best = INFINITY;
    quant_k__sums s = quant_k__sums_of(x, n);
    for (int k = QUANT_K__AFFINE_LO; hi - lo >= QUANT_K__TINY && k <= QUANT_K__AFFINE_HI; k++) {
        float inv = ((float)levels + (float)k / QUANT_K__AFFINE_DIV) / (hi - lo);
        float sq[QUANT_K__LANES] = {0}, sqq[QUANT_K__LANES] = {0}, sqx[QUANT_K__LANES] = {0};
        for (int i = 0; i < n; i += QUANT_K__LANES)
            for (int j = 0; j < QUANT_K__LANES; j++) {
                int v = (int)((x[i + j] - lo) * inv + 0.5f);
                float q = (float)(v < levels ? v : levels);
                sq[j] += q, sqq[j] += q * q, sqx[j] += q * x[i + j];
            }
        s.q = quant_k__lanes_sum(sq), s.qq = quant_k__lanes_sum(sqq),
        s.qx = quant_k__lanes_sum(sqx);
        double a, b, e = quant_k__refit_affine(&s, &a, &b);
        if (e < best) best = e, best_a = a, best_b = b;
    }
    *a_out = (float)best_a;
    *b_out = (float)best_b;
}

/* Sub-block x[0 .. n) as x ~ a q, q in [-32, 31] (Q6_K's d * sc); a may be
 * negative, so the value of largest magnitude can take the level -32. A
 * candidate's |x * inv| <= 32 + QUANT_K__SYM_HI, so adding 64.5 and
 * truncating rounds it. */
static float quant_k__fit_symmetric(const float *x, int n)
{
    float xm = 0.0f;
    for (int i = 0; i < n; i++)
        xm = fabsf(x[i]) > fabsf(xm) ? x[i] : xm;
    double best_a = 0, best = INFINITY;
    quant_k__sums s = quant_k__sums_of(x, n);
    for (int k = QUANT_K__SYM_LO; fabsf(xm) >= QUANT_K__TINY && k <= QUANT_K__SYM_HI; k++) {
        float inv = -(32.0f + (float)k) / xm;
        float sqq[QUANT_K__LANES] = {0}, sqx[QUANT_K__LANES] = {0};
        for (int i = 0; i < n; i += QUANT_K__LANES)
            for (int j = 0; j < QUANT_K__LANES; j++) {
                int v = (int)(x[i + j] * inv + 64.5f) - 64;
                float q = (float)(v < -32 ? -32 : v > 31 ? 31 : v);
                sqq[j] += q * q, sqx[j] += q * x[i + j];
            }
        s.qq = quant_k__lanes_sum(sqq), s.qx = quant_k__lanes_sum(sqx);
        double a = s.qq > 0 ? s.qx / s.qq : 0, e = quant_k__error(&s, a, 0);
        if (e < best) best = e, best_a = a;
    }
    return (float)best_a;
}

/* x to its nearest level on the grid off + step * q, q in [lo, hi] (t
 * clamped, then a half added and truncated from lo up) into *q; returns the
 * squared error. */
static inline float quant_k__level(float x, float step, float off, float inv, float flo, float fhi,
                                   int8_t *q)
{
    float t = (x - off) * inv;
    t = t > fhi ? fhi : t;
    t = t < flo ? flo : t;
    float v = (float)(int)(t - flo + 0.5f) + flo;
    float r = x - (step * v + off);
    *q = (int8_t)v;
    return r * r;
}

/* Each of x[0 .. n) to its nearest level (n a multiple of 4); returns the
 * squared error. */
static float quant_k__levels(const float *x, int n, float step, float off, int lo, int hi,
                             int8_t *q)
{
    float inv = fabsf(step) >= QUANT_K__TINY ? 1.0f / step : 0.0f, flo = (float)lo, fhi = (float)hi;
    float e0 = 0.0f, e1 = 0.0f, e2 = 0.0f, e3 = 0.0f;
    for (int i = 0; i < n; i += 4) {
        e0 += quant_k__level(x[i], step, off, inv, flo, fhi, q + i);
        e1 += quant_k__level(x[i + 1], step, off, inv, flo, fhi, q + i + 1);
        e2 += quant_k__level(x[i + 2], step, off, inv, flo, fhi, q + i + 2);
        e3 += quant_k__level(x[i + 3], step, off, inv, flo, fhi, q + i + 3);
    }
    return (e0 + e1) + (e2 + e3);
}

/* v as f16, rounded to nearest. */
static uint16_t quant_k__f16(double v)
{
    return enc_f32_to_f16((float)v);
}

/* --- Q4_K and Q5_K ------------------------------------------------------- */

/* Pack the 6-bit scales and mins of 8 sub-blocks (quant.h). */
static void quant_k__pack_k4(const int *sc, const int *m, uint8_t *scales)
{
    for (int s = 0; s < 4; s++) {
        scales[s] = (uint8_t)((sc[s] & 63) | ((sc[s + 4] >> 4) << 6));
        scales[s + 4] = (uint8_t)((m[s] & 63) | ((m[s + 4] >> 4) << 6));
        scales[s + 8] = (uint8_t)((sc[s + 4] & 15) | ((m[s + 4] & 15) << 4));
    }
}

/* The 256 levels of x under d, dmin and the 6-bit sc, m; returns the
 * squared error. */
static float quant_k__levels_k45(const float *x, int levels, float d, float dmin, const int *sc,
                                 const int *m, int8_t *q)
{
    float e = 0.0f;
    for (int s = 0; s < 8; s++)
        e += quant_k__levels(x + 32 * s, 32, d * (float)sc[s], -dmin * (float)m[s], 0, levels,
                             q + 32 * s);
    return e;
}

/* The d and dmin that fit x best to d * (sc q) - dmin * m for the levels
 * chosen (two-variable least squares), as f16. */
static void quant_k__refit_k45(const float *x, const int *sc, const int *m, const int8_t *q,
                               uint16_t *d16, uint16_t *dmin16)
{
    double uu = 0, uv = 0, vv = 0, ux = 0, vx = 0;
    for (int i = 0; i < QUANT_K; i++) {
        double u = (double)sc[i / 32] * q[i], v = -(double)m[i / 32];
        uu += u * u, uv += u * v, vv += v * v, ux += u * x[i], vx += v * x[i];
    }
    double det = uu * vv - uv * uv;
    if (!(det > 0)) return;
    double d = (ux * vv - vx * uv) / det, dmin = (uu * vx - uv * ux) / det;
    if (d >= 0 && dmin >= 0) *d16 = quant_k__f16(d), *dmin16 = quant_k__f16(dmin);
}

/* A sub-block's 6-bit sc and m under d and dmin: of the grid points either
 * side of a / d and -b / dmin, the pair whose levels fit x best (rounding
 * each to nearest on its own lost a sub-block whose scale is a few grid
 * steps up to a third of its range). */
static void quant_k__scale_min(const float *x, int levels, float d, float dmin, float a, float b,
                               int *sc, int *m)
{
    int s0 = d > 0.0f ? quant_k__clamp((int)(a / d), 0, 63) : 0;
    int m0 = dmin > 0.0f ? quant_k__clamp((int)(-b / dmin), 0, 63) : 0;
    float best = INFINITY;
    int8_t q[32];
    for (int i = 0; i < 4; i++) {
        int cs = quant_k__clamp(s0 + (i & 1), 0, 63), cm = quant_k__clamp(m0 + (i >> 1), 0, 63);
        float e = quant_k__levels(x, 32, d * (float)cs, -dmin * (float)cm, 0, levels, q);
        if (e < best) best = e, *sc = cs, *m = cm;
    }
}

/* Q4_K / Q5_K (levels 15 or 31): the 256 levels into q, the super-block's
 * d, dmin and packed scales into the block. */
static void quant_k__k45(const float *x, int levels, uint16_t *d16, uint16_t *dmin16,
                         uint8_t *scales, int8_t *q)
{
    float a[8], b[8], a_max = 0.0f, m_max = 0.0f;
    for (int s = 0; s < 8; s++) {
        quant_k__fit_affine(x + 32 * s, 32, levels, &a[s], &b[s]);
        a_max = a[s] > a_max ? a[s] : a_max;
        m_max = -b[s] > m_max ? -b[s] : m_max;
    }
    *d16 = quant_k__f16(a_max / 63.0);
    *dmin16 = quant_k__f16(m_max / 63.0);
    float d = enc_f16_to_f32(*d16), dmin = enc_f16_to_f32(*dmin16);
    int sc[8], m[8];
    for (int s = 0; s < 8; s++)
        quant_k__scale_min(x + 32 * s, levels, d, dmin, a[s], b[s], &sc[s], &m[s]);
    float e = quant_k__levels_k45(x, levels, d, dmin, sc, m, q);
    uint16_t d2 = *d16, dmin2 = *dmin16;
    quant_k__refit_k45(x, sc, m, q, &d2, &dmin2);
    int8_t q2[QUANT_K];
    if ((d2 != *d16 || dmin2 != *dmin16) &&
        quant_k__levels_k45(x, levels, enc_f16_to_f32(d2), enc_f16_to_f32(dmin2), sc, m, q2) < e) {
        *d16 = d2, *dmin16 = dmin2;
        memcpy(q, q2, sizeof q2);
    }
    quant_k__pack_k4(sc, m, scales);
}

void quant_k_q4_k(const float *x, block_q4_K *b)
{
    int8_t q[QUANT_K];
    quant_k__k45(x, 15, &b->d, &b->dmin, b->scales, q);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            b->qs[32 * c + l] = (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

void quant_k_q5_k(const float *x, block_q5_K *b)
{
    int8_t q[QUANT_K];
    quant_k__k45(x, 31, &b->d, &b->dmin, b->scales, q);
    memset(b->qh, 0, sizeof b->qh);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int q0 = q[64 * c + l], q1 = q[64 * c + 32 + l];
            b->qs[32 * c + l] = (uint8_t)((q0 & 15) | ((q1 & 15) << 4));
            b->qh[l] |= (uint8_t)(((q0 >> 4) << (2 * c)) | ((q1 >> 4) << (2 * c + 1)));
        }
}

/* --- Q6_K ---------------------------------------------------------------- */

/* The 256 levels (q in [-32, 31]) of x under d and the int8 sc; returns
 * the squared error. */
static float quant_k__levels_q6(const float *x, float d, const int8_t *sc, int8_t *q)
{
    float e = 0.0f;
    for (int s = 0; s < 16; s++)
        e += quant_k__levels(x + 16 * s, 16, d * (float)sc[s], 0.0f, -32, 31, q + 16 * s);
    return e;
}

/* The d that fits x best to d * (sc q) for the levels chosen, as f16 (d16
 * where there is none). */
static uint16_t quant_k__refit_q6(const float *x, const int8_t *sc, const int8_t *q, uint16_t d16)
{
    double uu = 0, ux = 0;
    for (int i = 0; i < QUANT_K; i++) {
        double u = (double)sc[i / 16] * q[i];
        uu += u * u, ux += u * x[i];
    }
    return uu > 0 ? quant_k__f16(ux / uu) : d16;
}

/* A sub-block's int8 scale under d: of the grid points either side of
 * a / d, the one whose levels fit x best. */
static int8_t quant_k__scale_q6(const float *x, float d, float a)
{
    int s0 = d != 0.0f ? quant_k__clamp((int)floorf(a / d), -128, 127) : 0, sc = s0;
    float best = INFINITY;
    int8_t q[16];
    for (int i = 0; i < 2; i++) {
        int cs = quant_k__clamp(s0 + i, -128, 127);
        float e = quant_k__levels(x, 16, d * (float)cs, 0.0f, -32, 31, q);
        if (e < best) best = e, sc = cs;
    }
    return (int8_t)sc;
}

void quant_k_q6_k(const float *x, block_q6_K *b)
{
    float a[16], a_max = 0.0f;
    for (int s = 0; s < 16; s++) {
        a[s] = quant_k__fit_symmetric(x + 16 * s, 16);
        a_max = fabsf(a[s]) > fabsf(a_max) ? a[s] : a_max;
    }
    b->d = quant_k__f16(a_max / -128.0); /* the largest scale stored as -128 */
    float d = enc_f16_to_f32(b->d);
    for (int s = 0; s < 16; s++)
        b->scales[s] = quant_k__scale_q6(x + 16 * s, d, a[s]);
    int8_t q[QUANT_K];
    float e = quant_k__levels_q6(x, d, b->scales, q);
    uint16_t d2 = quant_k__refit_q6(x, b->scales, q, b->d);
    int8_t q2[QUANT_K];
    if (d2 != b->d && quant_k__levels_q6(x, enc_f16_to_f32(d2), b->scales, q2) < e) {
        b->d = d2;
        memcpy(q, q2, sizeof q2);
    }
    memset(b->ql, 0, sizeof b->ql);
    memset(b->qh, 0, sizeof b->qh);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++)
            for (int l = 0; l < 32; l++) {
                int v = q[128 * h + 32 * i + l] + 32;
                b->ql[64 * h + l + 32 * (i & 1)] |= (uint8_t)((v & 15) << (4 * (i >> 1)));
                b->qh[32 * h + l] |= (uint8_t)((v >> 4) << (2 * i));
            }
}
