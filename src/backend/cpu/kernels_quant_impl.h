/* kernels_quant_impl.h - internals of the quantized matmul: the per-ISA table
 * of block dot products, and (Part 2) their AVX2-width bodies shared by the
 * AVX2 and the AVX-512 VNNI builds.
 *
 * One dot is one weight row (n_blocks blocks of its type) against one token's
 * activations in the matching 8-bit form (quant_dot_dtype):
 *
 *   Q8_0 / Q4_0 weights . Q8_0 activations, per 32-block:
 *       isum = sum_j wq[j] xq[j]                     (exact int32)
 *       acc += (d_w d_x) isum                        (f32)
 *   Q4_K / Q5_K . Q8_K, per 256-block, sub-blocks s of 32:
 *       isum = sum_s sc[s] sum_j q[s, j] xq[s, j]     (exact int32)
 *       msum = sum_s m[s] (bsums[2s] + bsums[2s + 1]) (exact int32)
 *       acc += (d_w d_x) isum;  accm += (dmin_w d_x) msum;   y = acc - accm
 *   Q6_K . Q8_K, per 256-block, groups g of 16 (q stored as q + 32):
 *       isum = sum_g sc[g] sum_j (q+32)[g, j] xq[g, j]; corr = 32 sum_g sc[g] bsums[g]
 *       acc += (d_w d_x) isum;  accm += (d_w d_x) corr;      y = acc - accm
 *
 * The integers are exact in every ISA; the f32 accumulation runs block by
 * block in one order fixed per ISA (portable: one scalar; SIMD: 8 lanes of
 * int32 partial sums converted and accumulated lane-wise, then a fixed lane
 * tree). Each output has its own accumulator, so y[t, n] never depends on
 * the batch, the tile or the thread split. The VNNI build computes the same
 * int32 lanes as the AVX2 one (vpdpbusd instead of vpmaddubsw + vpmaddwd,
 * which never saturate here: |u8| <= 128 and |s8| <= 127 keep a pair sum
 * below 2^15), so both give the same bits. */
#ifndef ENC_CPU_KERNELS_QUANT_IMPL_H
#define ENC_CPU_KERNELS_QUANT_IMPL_H

#include <stdint.h>

#include "backend/cpu/kernels.h"
#include "base/dtype.h"
#include "base/quant.h"

/* The dot of one weight row w (n_blocks blocks) with one activation row x. */
typedef float (*cpu__qdot_fn)(const void *w, const void *x, int64_t n_blocks);

typedef struct cpu__quant_table {
    const char *name;
    cpu__qdot_fn dot[ENC_DTYPE_COUNT]; /* by weight dtype; NULL for non-block types */
} cpu__quant_table;

extern const cpu__quant_table cpu__quant_scalar; /* kernels_quant.c */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
extern const cpu__quant_table cpu__quant_avx2; /* kernels_quant_avx2.c */
extern const cpu__quant_table cpu__quant_vnni; /* kernels_quant_vnni.c: AVX-512 VNNI + VL */
#endif

/* The table cpu_matmul uses for isa (the AVX-512 ISA takes the VNNI table
 * where the CPU has AVX512_VNNI, else the AVX2 one). */
const cpu__quant_table *cpu__quant_table_for(cpu_isa isa);

/* y = x W^T over weight rows [n0, n1) (shapes as cpu_matmul). */
void cpu__matmul_quant(const cpu__quant_table *qt, const void *x, int64_t n_tokens, int64_t k,
                       const void *w, enc_dtype w_dtype, int64_t n_out, int64_t n0, int64_t n1,
                       float *y);

#endif /* ENC_CPU_KERNELS_QUANT_IMPL_H */

/* ------------------------------------------------------------------------ */
/* Part 2: the 256-bit bodies. The including file defines CPU__Q_TABLE (the
 * table's name), CPU__Q_NAME (a string), and
 *   CPU__Q_DOT4(u, s)               __m256i of 8 int32: lane i = sum of the 4
 *                                   products u8 u[4i..4i+3] * s8 s[4i..4i+3]
 *   CPU__Q_DOT4_SCALED(u, s, sc16, sc32)  the same lanes times a scale held
 *                                   as 16 int16 (sc16) or 8 int32 (sc32) lanes */
#ifdef CPU__Q_TABLE

#include <immintrin.h>

static inline float cpu__q_hsum(__m256 v) /* ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) */
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static inline float cpu__q_f16(uint16_t h)
{
    return _cvtsh_ss(h);
}

/* Signed bytes w . x in the int32 lanes: |w| as u8 against x with w's sign. */
static inline __m256i cpu__q_dot_s8(__m256i w, __m256i x)
{
    return CPU__Q_DOT4(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

static float cpu__q_dot_q8_0(const void *wv, const void *xv, int64_t nb)
{
    const block_q8_0 *w = wv, *x = xv;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i qw = _mm256_loadu_si256((const __m256i *)w[b].qs);
        __m256i qx = _mm256_loadu_si256((const __m256i *)x[b].qs);
        __m256 d = _mm256_set1_ps(cpu__q_f16(w[b].d) * cpu__q_f16(x[b].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(cpu__q_dot_s8(qw, qx)), acc);
    }
    return cpu__q_hsum(acc);
}

static float cpu__q_dot_q4_0(const void *wv, const void *xv, int64_t nb)
{
    const block_q4_0 *w = wv;
    const block_q8_0 *x = xv;
    const __m256i m4 = _mm256_set1_epi8(15), eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m128i v = _mm_loadu_si128((const __m128i *)w[b].qs);
        __m256i q = _mm256_set_m128i(_mm_srli_epi16(v, 4), v); /* values 0..15 | 16..31 */
        q = _mm256_sub_epi8(_mm256_and_si256(q, m4), eight);
        __m256i qx = _mm256_loadu_si256((const __m256i *)x[b].qs);
        __m256 d = _mm256_set1_ps(cpu__q_f16(w[b].d) * cpu__q_f16(x[b].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(cpu__q_dot_s8(q, qx)), acc);
    }
    return cpu__q_hsum(acc);
}

/* Q4_K and Q5_K: qh is NULL for Q4_K. isum of one superblock in int32 lanes. */
static inline __m256i cpu__q_k45_isum(const uint8_t *qs, const uint8_t *qh, const int *sc,
                                      const int8_t *xq)
{
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256i hbits = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    __m256i isum = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(v, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (qh) {
            __m256i b0 = _mm256_and_si256(_mm256_srl_epi16(hbits, _mm_cvtsi32_si128(2 * c)), one);
            __m256i b1 = _mm256_and_si256(_mm256_srl_epi16(hbits, _mm_cvtsi32_si128(2 * c + 1)), one);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(b0, 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(b1, 4));
        }
        __m256i xl = _mm256_loadu_si256((const __m256i *)(xq + 64 * c));
        __m256i xh = _mm256_loadu_si256((const __m256i *)(xq + 64 * c + 32));
        int s0 = sc[2 * c], s1 = sc[2 * c + 1];
        isum = _mm256_add_epi32(isum, CPU__Q_DOT4_SCALED(lo, xl, _mm256_set1_epi16((short)s0),
                                                         _mm256_set1_epi32(s0)));
        isum = _mm256_add_epi32(isum, CPU__Q_DOT4_SCALED(hi, xh, _mm256_set1_epi16((short)s1),
                                                         _mm256_set1_epi32(s1)));
    }
    return isum;
}

static inline float cpu__q_dot_k45(const uint16_t *d, const uint16_t *dmin, const uint8_t *scales,
                                   const uint8_t *qh, const uint8_t *qs, const block_q8_K *x,
                                   __m256 *acc)
{
    int sc[8], m[8], msum = 0;
    for (int s = 0; s < 8; s++) {
        quant_scale_min_k4(scales, s, &sc[s], &m[s]);
        msum += m[s] * (x->bsums[2 * s] + x->bsums[2 * s + 1]);
    }
    __m256i isum = cpu__q_k45_isum(qs, qh, sc, x->qs);
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(cpu__q_f16(*d) * x->d), _mm256_cvtepi32_ps(isum), *acc);
    return (cpu__q_f16(*dmin) * x->d) * (float)msum;
}

static float cpu__q_dot_q4_k(const void *wv, const void *xv, int64_t nb)
{
    const block_q4_K *w = wv;
    const block_q8_K *x = xv;
    __m256 acc = _mm256_setzero_ps();
    float accm = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        accm += cpu__q_dot_k45(&w[b].d, &w[b].dmin, w[b].scales, NULL, w[b].qs, &x[b], &acc);
    return cpu__q_hsum(acc) - accm;
}

static float cpu__q_dot_q5_k(const void *wv, const void *xv, int64_t nb)
{
    const block_q5_K *w = wv;
    const block_q8_K *x = xv;
    __m256 acc = _mm256_setzero_ps();
    float accm = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        accm += cpu__q_dot_k45(&w[b].d, &w[b].dmin, w[b].scales, w[b].qh, w[b].qs, &x[b], &acc);
    return cpu__q_hsum(acc) - accm;
}

/* Bits [2i, 2i + 2) of each byte of h, as bits 4..5 of a byte. */
static inline __m256i cpu__q_q6_high(__m256i h, int i)
{
    __m256i b = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * i)), _mm256_set1_epi8(3));
    return _mm256_slli_epi16(b, 4);
}

static float cpu__q_dot_q6_k(const void *wv, const void *xv, int64_t nb)
{
    const block_q6_K *w = wv;
    const block_q8_K *x = xv;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    float accm = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *sc = w[b].scales;
        int corr = 0;
        for (int g = 0; g < 16; g++) corr += sc[g] * x[b].bsums[g];
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(w[b].ql + 64 * h + 32));
            __m256i hb = _mm256_loadu_si256((const __m256i *)(w[b].qh + 32 * h));
            __m256i q[4] = {
                _mm256_and_si256(l0, m4),
                _mm256_and_si256(l1, m4),
                _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
            };
            for (int i = 0; i < 4; i++) {
                __m256i qi = _mm256_or_si256(q[i], cpu__q_q6_high(hb, i));
                __m256i xi = _mm256_loadu_si256((const __m256i *)(x[b].qs + 128 * h + 32 * i));
                int s0 = sc[8 * h + 2 * i], s1 = sc[8 * h + 2 * i + 1];
                __m256i sc16 = _mm256_set_m128i(_mm_set1_epi16((short)s1), _mm_set1_epi16((short)s0));
                __m256i sc32 = _mm256_set_m128i(_mm_set1_epi32(s1), _mm_set1_epi32(s0));
                isum = _mm256_add_epi32(isum, CPU__Q_DOT4_SCALED(qi, xi, sc16, sc32));
            }
        }
        float d = cpu__q_f16(w[b].d) * x[b].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
        accm += d * (float)(32 * corr);
    }
    return cpu__q_hsum(acc) - accm;
}

const cpu__quant_table CPU__Q_TABLE = {
    .name = CPU__Q_NAME,
    .dot =
        {
            [ENC_Q8_0] = cpu__q_dot_q8_0,
            [ENC_Q4_0] = cpu__q_dot_q4_0,
            [ENC_Q4_K] = cpu__q_dot_q4_k,
            [ENC_Q5_K] = cpu__q_dot_q5_k,
            [ENC_Q6_K] = cpu__q_dot_q6_k,
        },
};

#endif /* CPU__Q_TABLE */
