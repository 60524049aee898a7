/* quant.c - dequantizing and quantizing rows of GGUF block formats, in
 * portable C written from the layouts drawn in quant.h. */
#include "base/quant.h"

#include <math.h>
#include <string.h>

#include "base/quant_k.h"
#include "base/quant_widen.h"

/* One rounding per operation, as the NumPy reference computes: no fused
 * multiply-add (GCC does not contract in ISO C mode; clang must be told). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

enc_dtype quant_dot_dtype(enc_dtype w)
{
    switch (w) {
    case ENC_Q8_0:
    case ENC_Q4_0:
    case ENC_Q5_0:
    case ENC_IQ4_NL:
    case ENC_Q4_1:
    case ENC_Q5_1:
        return ENC_Q8_0;
    case ENC_Q4_K:
    case ENC_Q5_K:
    case ENC_Q6_K:
    case ENC_IQ4_XS:
    case ENC_Q2_K:
    case ENC_Q3_K:
        return ENC_Q8_K;
    default:
        return ENC_F32;
    }
}

/* --- dequantize ---------------------------------------------------------- */

static void quant__deq_q8_0(const block_q8_0 *b, float *y)
{
    float d = enc_f16_to_f32(b->d);
    for (int j = 0; j < 32; j++)
        y[j] = d * (float)b->qs[j];
}

static void quant__deq_q4_0(const block_q4_0 *b, float *y)
{
    float d = enc_f16_to_f32(b->d);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b->qs[j] & 15) - 8);
        y[j + 16] = d * (float)((b->qs[j] >> 4) - 8);
    }
}

/* Q4_K and Q5_K: qh is NULL for Q4_K. */
static void quant__deq_k45(uint16_t d16, uint16_t dmin16, const uint8_t *scales, const uint8_t *qh,
                           const uint8_t *qs, float *y)
{
    float d = enc_f16_to_f32(d16), dmin = enc_f16_to_f32(dmin16);
    for (int c = 0; c < 4; c++) { /* 64 values per 32 bytes of qs */
        for (int half = 0; half < 2; half++) {
            int s = 2 * c + half, sc, m;
            quant_scale_min_k4(scales, s, &sc, &m);
            float ds = d * (float)sc, dm = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                int q = half ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
                if (qh) q |= ((qh[l] >> s) & 1) << 4;
                y[64 * c + 32 * half + l] = ds * (float)q - dm;
            }
        }
    }
}

static void quant__deq_q6_k(const block_q6_K *b, float *y)
{
    float d = enc_f16_to_f32(b->d);
    for (int h = 0; h < 2; h++) { /* 128 values: ql 64 B, qh 32 B, scales 8 */
        const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        const int8_t *sc = b->scales + 8 * h;
        for (int i = 0; i < 4; i++)
            for (int l = 0; l < 32; l++) {
                int lo = (ql[l + 32 * (i & 1)] >> (4 * (i >> 1))) & 15;
                int q = lo | (((qh[l] >> (2 * i)) & 3) << 4);
                int v = 32 * i + l;
                y[128 * h + v] = d * (float)sc[v / 16] * (float)(q - 32);
            }
    }
}

static void quant__deq_iq4_xs(const block_iq4_xs *b, float *y)
{
    float d = enc_f16_to_f32(b->d);
    for (int s = 0; s < 8; s++) {
        float dl = d * (float)quant_iq4xs_ls(b, s); /* exact, as is dl * kv */
        for (int j = 0; j < 16; j++) {
            y[32 * s + j] = dl * (float)quant_iq4nl_values[b->qs[16 * s + j] & 15];
            y[32 * s + j + 16] = dl * (float)quant_iq4nl_values[b->qs[16 * s + j] >> 4];
        }
    }
}

/* A Q4_1 (has_qh 0) or Q5_1 block: d * q + m, as ggml computes it. */
static void quant__deq_1(const uint8_t *b, int has_qh, float *y)
{
    uint16_t dm[2];
    memcpy(dm, b, sizeof dm);
    float d = enc_f16_to_f32(dm[0]), m = enc_f16_to_f32(dm[1]);
    const uint8_t *qh = has_qh ? b + 4 : NULL, *qs = b + (has_qh ? 8 : 4);
    for (int j = 0; j < 32; j++)
        y[j] = (float)quant_level_1(qs, qh, j) * d + m;
}

static void quant__deq_q2_k(const block_q2_K *b, float *y)
{
    float d = enc_f16_to_f32(b->d), dmin = enc_f16_to_f32(b->dmin);
    for (int v = 0; v < QUANT_K; v++) {
        int n = v / 128, j = (v % 128) / 32, h = (v % 32) / 16, l = v % 16, g = v / 16;
        int q = (b->qs[32 * n + 16 * h + l] >> (2 * j)) & 3;
        float dl = d * (float)(b->scales[g] & 15), ml = dmin * (float)(b->scales[g] >> 4);
        y[v] = dl * (float)q - ml;
    }
}

static void quant__deq_q8_k(const block_q8_K *b, float *y)
{
    for (int j = 0; j < QUANT_K; j++)
        y[j] = b->d * (float)b->qs[j];
}

static int quant__deq_elements(enc_dtype dt, const void *src, float *dst, int64_t n)
{
    const uint16_t *h = src;
    switch (dt) {
    case ENC_F32:
        memcpy(dst, src, (size_t)n * sizeof *dst);
        return 0;
    case ENC_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = enc_bf16_to_f32(h[i]);
        return 0;
    case ENC_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = enc_f16_to_f32(h[i]);
        return 0;
    default:
        return -1;
    }
}

/* A type widened at load (quant_widen.h): each block widened, then read as
 * its widened type, the same values. */
static int quant__deq_widened(enc_dtype dt, const void *src, float *dst, int64_t n)
{
    int64_t be = enc_dtype_block_elems(dt);
    if (n < 0 || n % be != 0) return -1;
    size_t bb = enc_dtype_block_bytes(dt);
    union {
        block_q8_0 q8;
        block_q6_K q6;
    } wide; /* one widened block, aligned for either */
    for (int64_t i = 0; i < n / be; i++) {
        quant_widen_row(dt, (const unsigned char *)src + (size_t)i * bb, &wide, be);
        quant_dequantize_row(quant_widened_dtype(dt), &wide, dst + i * be, be);
    }
    return 0;
}

int quant_dequantize_row(enc_dtype dt, const void *src, float *dst, int64_t n)
{
    if (!enc_dtype_is_quantized(dt)) return quant__deq_elements(dt, src, dst, n);
    if (quant_is_widened(dt)) return quant__deq_widened(dt, src, dst, n);
    int64_t be = enc_dtype_block_elems(dt), nb = n / be;
    if (n < 0 || n % be != 0) return -1;
    const unsigned char *p = src;
    size_t bb = enc_dtype_block_bytes(dt);
    for (int64_t i = 0; i < nb; i++, p += bb) {
        float *y = dst + i * be;
        switch (dt) {
        case ENC_Q8_0:
            quant__deq_q8_0((const block_q8_0 *)p, y);
            break;
        case ENC_Q4_0:
            quant__deq_q4_0((const block_q4_0 *)p, y);
            break;
        case ENC_Q4_K: {
            const block_q4_K *b = (const block_q4_K *)p;
            quant__deq_k45(b->d, b->dmin, b->scales, NULL, b->qs, y);
            break;
        }
        case ENC_Q5_K: {
            const block_q5_K *b = (const block_q5_K *)p;
            quant__deq_k45(b->d, b->dmin, b->scales, b->qh, b->qs, y);
            break;
        }
        case ENC_Q6_K:
            quant__deq_q6_k((const block_q6_K *)p, y);
            break;
        case ENC_Q8_K:
            quant__deq_q8_k((const block_q8_K *)p, y);
            break;
        case ENC_IQ4_XS:
            quant__deq_iq4_xs((const block_iq4_xs *)p, y);
            break;
        case ENC_Q2_K:
            quant__deq_q2_k((const block_q2_K *)p, y);
            break;
        case ENC_Q4_1:
        case ENC_Q5_1:
            quant__deq_1(p, dt == ENC_Q5_1, y);
            break;
        default:
            return -1;
        }
    }
    return 0;
}

/* --- quantize ------------------------------------------------------------ */

static float quant__amax(const float *x, int n)
{
    float a = 0.0f;
    for (int j = 0; j < n; j++)
        a = fabsf(x[j]) > a ? fabsf(x[j]) : a;
    return a;
}

/* lroundf(v) (halves away from zero) for |v| < 2^23, without the libm call:
 * v - trunc(v) is exact in float, so the comparison with 0.5 is too. */
static int quant__round(float v)
{
    int q = (int)v;
    float frac = v - (float)q;
    return q + (frac >= 0.5f) - (frac <= -0.5f);
}

static int quant__clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* 1 / d, or 0 where d is 0 or so small (subnormal) that 1 / d overflows: the
 * block's values are then 0 (its f16 scale is 0 anyway). */
static float quant__inverse(float d)
{
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    return isfinite(id) ? id : 0.0f;
}

/* ggml's reference: d = amax / 127, q = round(x / d). */
static void quant__q_q8_0(const float *x, block_q8_0 *b)
{
    float d = quant__amax(x, 32) / 127.0f, id = quant__inverse(d);
    b->d = enc_f32_to_f16(d);
    for (int j = 0; j < 32; j++)
        b->qs[j] = (int8_t)quant__round(x[j] * id);
}

/* ggml's reference: d = (the value of largest magnitude) / -8. */
static void quant__q_q4_0(const float *x, block_q4_0 *b)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
    float d = max / -8.0f, id = quant__inverse(d);
    b->d = enc_f32_to_f16(d);
    for (int j = 0; j < 16; j++) {
        int q0 = quant__clamp((int)(x[j] * id + 8.5f), 0, 15);
        int q1 = quant__clamp((int)(x[j + 16] * id + 8.5f), 0, 15);
        b->qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
}

/* The activations' 8-bit form: d = amax / 127, q = round(x / d). */
static void quant__q_q8_k(const float *x, block_q8_K *b)
{
    float amax = quant__amax(x, QUANT_K);
    float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    id = isfinite(id) ? id : 0.0f; /* amax subnormal: the values are 0 */
    b->d = id != 0.0f ? amax / 127.0f : 0.0f;
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int l = 0; l < 16; l++) {
            int q = quant__clamp(quant__round(x[16 * g + l] * id), -127, 127);
            b->qs[16 * g + l] = (int8_t)q;
            sum += q;
        }
        b->bsums[g] = (int16_t)sum;
    }
}

int quant_quantizes(enc_dtype dt)
{
    return dt == ENC_Q8_0 || dt == ENC_Q4_0 || dt == ENC_Q4_K || dt == ENC_Q5_K || dt == ENC_Q6_K ||
           dt == ENC_Q8_K;
}

int quant_quantize_row(enc_dtype dt, const float *src, void *dst, int64_t n)
{
    int64_t be = enc_dtype_block_elems(dt);
    if (!quant_quantizes(dt) || n < 0 || n % be != 0) return -1;
    unsigned char *p = dst;
    size_t bb = enc_dtype_block_bytes(dt);
    for (int64_t i = 0; i < n / be; i++, p += bb) {
        const float *x = src + i * be;
        switch (dt) {
        case ENC_Q8_0:
            quant__q_q8_0(x, (block_q8_0 *)p);
            break;
        case ENC_Q4_0:
            quant__q_q4_0(x, (block_q4_0 *)p);
            break;
        case ENC_Q4_K:
            quant_k_q4_k(x, (block_q4_K *)p);
            break;
        case ENC_Q5_K:
            quant_k_q5_k(x, (block_q5_K *)p);
            break;
        case ENC_Q6_K:
            quant_k_q6_k(x, (block_q6_K *)p);
            break;
        case ENC_Q8_K:
            quant__q_q8_k(x, (block_q8_K *)p);
            break;
        default:
            return -1;
        }
    }
    return 0;
}
