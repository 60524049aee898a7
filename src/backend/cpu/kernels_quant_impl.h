/* kernels_quant_impl.h - internals of the quantized matmul: the per-ISA table
 * of block dot products, and (Part 2) their AVX2-width bodies shared by the
 * AVX2 and the AVX-512 VNNI builds.
 *
 * One dot is one weight row (n_blocks blocks of its type) against one token's
 * activations in the matching 8-bit form (quant_dot_dtype); a call does up
 * to 4 rows against the same token:
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

/* y[r] = the dot of weight row w[r] (n_blocks blocks) with one activation
 * row x, for r < R (R <= 4). */
typedef void (*cpu__qdot_fn)(int R, const void *const *w, const void *x, int64_t n_blocks,
                             float *y);

/* y[t][r] for two tokens x[0], x[1] and four weight rows w[0..3], each output
 * through the very steps of cpu__qdot_fn (the weights' unpacking shared). */
typedef void (*cpu__qdot2_fn)(const void *const *w, const void *const *x, int64_t n_blocks,
                              float *const *y);

typedef struct cpu__quant_table {
    const char *name;
    cpu__qdot_fn dot[ENC_DTYPE_COUNT];   /* by weight dtype; NULL for non-block types */
    cpu__qdot2_fn dot2[ENC_DTYPE_COUNT]; /* (optional, per type) 2 tokens x 4 rows */
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

/* Each body below computes R <= CPU__Q_RMAX weight rows against one token,
 * sharing the token's loads; every output runs through exactly the steps of
 * R = 1, so the grouping of rows changes no bit. R is a constant at each
 * call site (CPU__Q_ROWS), so the accumulators stay in registers. */
enum { CPU__Q_RMAX = 4 };

#if defined(__clang__)
#define CPU__Q_INLINE static inline __attribute__((always_inline))
#define CPU__Q_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define CPU__Q_INLINE static inline __attribute__((always_inline))
#define CPU__Q_UNROLL _Pragma("GCC unroll 4")
#else
#define CPU__Q_INLINE static inline
#define CPU__Q_UNROLL
#endif

/* Q8_0 and Q4_0 also come as tiles of T <= 2 tokens x R rows, which share
 * each weight block's unpacking and scale across the tokens (prefill). */
enum { CPU__Q_TMAX = 2 };

/* Weight block b of row r as 32 signed levels (Q8_0 or Q4_0) and its scale. */
CPU__Q_INLINE __m256i cpu__q_levels(int q4, const void *w, int64_t b, float *d)
{
    if (q4) {
        const block_q4_0 *k = (const block_q4_0 *)w + b;
        __m128i v = _mm_loadu_si128((const __m128i *)k->qs);
        __m256i q = _mm256_set_m128i(_mm_srli_epi16(v, 4), v); /* values 0..15 | 16..31 */
        *d = cpu__q_f16(k->d);
        return _mm256_sub_epi8(_mm256_and_si256(q, _mm256_set1_epi8(15)), _mm256_set1_epi8(8));
    }
    const block_q8_0 *k = (const block_q8_0 *)w + b;
    *d = cpu__q_f16(k->d);
    return _mm256_loadu_si256((const __m256i *)k->qs);
}

/* y[t][r] = row r (Q8_0, or Q4_0 when q4) . token t's Q8_0 activations. */
CPU__Q_INLINE void cpu__q_32_tile(int q4, int T, int R, const void *const *wv,
                                  const void *const *xv, int64_t nb, float *const *y)
{
    __m256 acc[CPU__Q_TMAX][CPU__Q_RMAX];
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        CPU__Q_UNROLL for (int r = 0; r < R; r++) acc[t][r] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        __m256i qx[CPU__Q_TMAX];
        float dx[CPU__Q_TMAX];
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const block_q8_0 *x = (const block_q8_0 *)xv[t] + b;
            qx[t] = _mm256_loadu_si256((const __m256i *)x->qs);
            dx[t] = cpu__q_f16(x->d);
        }
        CPU__Q_UNROLL for (int r = 0; r < R; r++)
        {
            float dw;
            __m256i qw = cpu__q_levels(q4, wv[r], b, &dw);
            __m256i aw = _mm256_sign_epi8(qw, qw);
            CPU__Q_UNROLL for (int t = 0; t < T; t++)
            {
                __m256i dot = CPU__Q_DOT4(aw, _mm256_sign_epi8(qx[t], qw));
                acc[t][r] =
                    _mm256_fmadd_ps(_mm256_set1_ps(dw * dx[t]), _mm256_cvtepi32_ps(dot), acc[t][r]);
            }
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        CPU__Q_UNROLL for (int r = 0; r < R; r++) y[t][r] = cpu__q_hsum(acc[t][r]);
    }
}

CPU__Q_INLINE void cpu__q_q8_0_rows(int R, const void *const *wv, const void *xv, int64_t nb,
                                    float *y)
{
    cpu__q_32_tile(0, 1, R, wv, &xv, nb, &y);
}

CPU__Q_INLINE void cpu__q_q4_0_rows(int R, const void *const *wv, const void *xv, int64_t nb,
                                    float *y)
{
    cpu__q_32_tile(1, 1, R, wv, &xv, nb, &y);
}

/* The tables' two-token entries (CPU__Q_RMAX rows). */
static void cpu__q_dot2_q8_0(const void *const *w, const void *const *x, int64_t nb,
                             float *const *y)
{
    cpu__q_32_tile(0, CPU__Q_TMAX, CPU__Q_RMAX, w, x, nb, y);
}

static void cpu__q_dot2_q4_0(const void *const *w, const void *const *x, int64_t nb,
                             float *const *y)
{
    cpu__q_32_tile(1, CPU__Q_TMAX, CPU__Q_RMAX, w, x, nb, y);
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
            __m256i b1 =
                _mm256_and_si256(_mm256_srl_epi16(hbits, _mm_cvtsi32_si128(2 * c + 1)), one);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(b0, 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(b1, 4));
        }
        __m256i xl = _mm256_loadu_si256((const __m256i *)(xq + 64 * c));
        __m256i xh = _mm256_loadu_si256((const __m256i *)(xq + 64 * c + 32));
        int s0 = sc[2 * c], s1 = sc[2 * c + 1];
        isum = _mm256_add_epi32(
            isum, CPU__Q_DOT4_SCALED(lo, xl, _mm256_set1_epi16((short)s0), _mm256_set1_epi32(s0)));
        isum = _mm256_add_epi32(
            isum, CPU__Q_DOT4_SCALED(hi, xh, _mm256_set1_epi16((short)s1), _mm256_set1_epi32(s1)));
    }
    return isum;
}

/* One Q4_K / Q5_K superblock (the layouts share d, dmin, scales; qs is the
 * last 128 bytes, qh the 32 before it in Q5_K): adds d_w d_x isum to *acc,
 * returns dmin_w d_x msum. */
static inline float cpu__q_k45_block(const block_q4_K *w, const uint8_t *qh, const uint8_t *qs,
                                     const block_q8_K *x, __m256 *acc)
{
    int sc[8], m[8], msum = 0;
    for (int s = 0; s < 8; s++) {
        quant_scale_min_k4(w->scales, s, &sc[s], &m[s]);
        msum += m[s] * (x->bsums[2 * s] + x->bsums[2 * s + 1]);
    }
    __m256i isum = cpu__q_k45_isum(qs, qh, sc, x->qs);
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(cpu__q_f16(w->d) * x->d), _mm256_cvtepi32_ps(isum), *acc);
    return (cpu__q_f16(w->dmin) * x->d) * (float)msum;
}

/* Q4_K / Q5_K for two tokens x CPU__Q_RMAX rows: each row's superblock is
 * unpacked once (levels and 6-bit scales) and dotted with both tokens. The
 * integer sums are exact in any order, and the f32 steps per output are
 * those of cpu__q_k45_block, so every output has the bits of the 1 x 1 path. */
CPU__Q_INLINE void cpu__q_k45_tile2(size_t bb, const void *const *wv, const void *const *xv,
                                    int64_t nb, float *const *y)
{
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256 acc[CPU__Q_TMAX][CPU__Q_RMAX];
    float accm[CPU__Q_TMAX][CPU__Q_RMAX];
    for (int t = 0; t < CPU__Q_TMAX; t++)
        for (int r = 0; r < CPU__Q_RMAX; r++)
            acc[t][r] = _mm256_setzero_ps(), accm[t][r] = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const block_q8_K *x[CPU__Q_TMAX];
        for (int t = 0; t < CPU__Q_TMAX; t++)
            x[t] = (const block_q8_K *)xv[t] + b;
        for (int r = 0; r < CPU__Q_RMAX; r++) {
            const unsigned char *wb = (const unsigned char *)wv[r] + (size_t)b * bb;
            const block_q4_K *w = (const block_q4_K *)wb; /* d, dmin, scales alike */
            const uint8_t *qs = wb + bb - 128, *qh = bb == sizeof(block_q5_K) ? wb + 16 : NULL;
            int sc[8], m[8];
            for (int s = 0; s < 8; s++)
                quant_scale_min_k4(w->scales, s, &sc[s], &m[s]);
            __m256i lv[8]; /* the 8 sub-blocks' levels */
            __m256i hbits = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
            for (int c = 0; c < 4; c++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
                lv[2 * c] = _mm256_and_si256(v, m4);
                lv[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                if (qh)
                    for (int h = 0; h < 2; h++) {
                        __m256i bit = _mm256_and_si256(
                            _mm256_srl_epi16(hbits, _mm_cvtsi32_si128(2 * c + h)), one);
                        lv[2 * c + h] = _mm256_or_si256(lv[2 * c + h], _mm256_slli_epi16(bit, 4));
                    }
            }
            float dw = cpu__q_f16(w->d), dmw = cpu__q_f16(w->dmin);
            for (int t = 0; t < CPU__Q_TMAX; t++) {
                int msum = 0;
                for (int s = 0; s < 8; s++)
                    msum += m[s] * (x[t]->bsums[2 * s] + x[t]->bsums[2 * s + 1]);
                __m256i isum = _mm256_setzero_si256();
                for (int s = 0; s < 8; s++) {
                    __m256i xs = _mm256_loadu_si256((const __m256i *)(x[t]->qs + 32 * s));
                    isum = _mm256_add_epi32(
                        isum, CPU__Q_DOT4_SCALED(lv[s], xs, _mm256_set1_epi16((short)sc[s]),
                                                 _mm256_set1_epi32(sc[s])));
                }
                acc[t][r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * x[t]->d), _mm256_cvtepi32_ps(isum),
                                            acc[t][r]);
                accm[t][r] += (dmw * x[t]->d) * (float)msum;
            }
        }
    }
    for (int t = 0; t < CPU__Q_TMAX; t++)
        for (int r = 0; r < CPU__Q_RMAX; r++)
            y[t][r] = cpu__q_hsum(acc[t][r]) - accm[t][r];
}

static void cpu__q_dot2_q4_k(const void *const *w, const void *const *x, int64_t nb,
                             float *const *y)
{
    cpu__q_k45_tile2(sizeof(block_q4_K), w, x, nb, y);
}

static void cpu__q_dot2_q5_k(const void *const *w, const void *const *x, int64_t nb,
                             float *const *y)
{
    cpu__q_k45_tile2(sizeof(block_q5_K), w, x, nb, y);
}

/* Q4_K (bb 144, no qh) or Q5_K (bb 176, qh at byte 16). */
CPU__Q_INLINE void cpu__q_k45_rows(int R, size_t bb, const void *const *wv, const void *xv,
                                   int64_t nb, float *y)
{
    const block_q8_K *x = xv;
    __m256 acc[CPU__Q_RMAX];
    float accm[CPU__Q_RMAX];
    CPU__Q_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps(), accm[r] = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        CPU__Q_UNROLL for (int r = 0; r < R; r++)
        {
            const unsigned char *w = (const unsigned char *)wv[r] + (size_t)b * bb;
            const uint8_t *qh = bb == sizeof(block_q5_K) ? w + 16 : NULL;
            accm[r] += cpu__q_k45_block((const block_q4_K *)w, qh, w + bb - 128, &x[b], &acc[r]);
        }
    CPU__Q_UNROLL for (int r = 0; r < R; r++) y[r] = cpu__q_hsum(acc[r]) - accm[r];
}

CPU__Q_INLINE void cpu__q_q4_k_rows(int R, const void *const *wv, const void *xv, int64_t nb,
                                    float *y)
{
    cpu__q_k45_rows(R, sizeof(block_q4_K), wv, xv, nb, y);
}

CPU__Q_INLINE void cpu__q_q5_k_rows(int R, const void *const *wv, const void *xv, int64_t nb,
                                    float *y)
{
    cpu__q_k45_rows(R, sizeof(block_q5_K), wv, xv, nb, y);
}

/* Bits [2i, 2i + 2) of each byte of h, as bits 4..5 of a byte. */
static inline __m256i cpu__q_q6_high(__m256i h, int i)
{
    __m256i b =
        _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * i)), _mm256_set1_epi8(3));
    return _mm256_slli_epi16(b, 4);
}

/* One Q6_K superblock: adds d_w d_x isum to *acc, returns d_w d_x 32 corr. */
static inline float cpu__q_q6_k_block(const block_q6_K *w, const block_q8_K *x, __m256 *acc)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    const int8_t *sc = w->scales;
    int corr = 0;
    for (int g = 0; g < 16; g++)
        corr += sc[g] * x->bsums[g];
    __m256i isum = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        __m256i l0 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * h));
        __m256i l1 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * h + 32));
        __m256i hb = _mm256_loadu_si256((const __m256i *)(w->qh + 32 * h));
        __m256i q[4] = {
            _mm256_and_si256(l0, m4),
            _mm256_and_si256(l1, m4),
            _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
            _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
        };
        for (int i = 0; i < 4; i++) {
            __m256i qi = _mm256_or_si256(q[i], cpu__q_q6_high(hb, i));
            __m256i xi = _mm256_loadu_si256((const __m256i *)(x->qs + 128 * h + 32 * i));
            int s0 = sc[8 * h + 2 * i], s1 = sc[8 * h + 2 * i + 1];
            __m256i sc16 = _mm256_set_m128i(_mm_set1_epi16((short)s1), _mm_set1_epi16((short)s0));
            __m256i sc32 = _mm256_set_m128i(_mm_set1_epi32(s1), _mm_set1_epi32(s0));
            isum = _mm256_add_epi32(isum, CPU__Q_DOT4_SCALED(qi, xi, sc16, sc32));
        }
    }
    float d = cpu__q_f16(w->d) * x->d;
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), *acc);
    return d * (float)(32 * corr);
}

CPU__Q_INLINE void cpu__q_q6_k_rows(int R, const void *const *wv, const void *xv, int64_t nb,
                                    float *y)
{
    const block_q8_K *x = xv;
    __m256 acc[CPU__Q_RMAX];
    float accm[CPU__Q_RMAX];
    CPU__Q_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps(), accm[r] = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        CPU__Q_UNROLL for (int r = 0; r < R; r++) accm[r] +=
            cpu__q_q6_k_block((const block_q6_K *)wv[r] + b, &x[b], &acc[r]);
    CPU__Q_UNROLL for (int r = 0; r < R; r++) y[r] = cpu__q_hsum(acc[r]) - accm[r];
}

/* The table's entry for one type: R = CPU__Q_RMAX at once, else row by row. */
#define CPU__Q_ROWS(T)                                                                             \
    static void cpu__q_dot_##T(int R, const void *const *w, const void *x, int64_t nb, float *y)   \
    {                                                                                              \
        if (R == CPU__Q_RMAX) {                                                                    \
            cpu__q_##T##_rows(CPU__Q_RMAX, w, x, nb, y);                                           \
            return;                                                                                \
        }                                                                                          \
        for (int r = 0; r < R; r++)                                                                \
            cpu__q_##T##_rows(1, w + r, x, nb, y + r);                                             \
    }
CPU__Q_ROWS(q8_0)
CPU__Q_ROWS(q4_0)
CPU__Q_ROWS(q4_k)
CPU__Q_ROWS(q5_k)
CPU__Q_ROWS(q6_k)

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
    .dot2 =
        {
            [ENC_Q8_0] = cpu__q_dot2_q8_0,
            [ENC_Q4_0] = cpu__q_dot2_q4_0,
            [ENC_Q4_K] = cpu__q_dot2_q4_k,
            [ENC_Q5_K] = cpu__q_dot2_q5_k,
        },
};

#endif /* CPU__Q_TABLE */
