/* kernels_quant_impl.h - internals of the quantized matmul: the per-ISA table
 * of block dot products, and (Part 2) their AVX2-width bodies shared by the
 * AVX2 and the AVX-512 VNNI builds.
 *
 * One dot is one weight row (n_blocks blocks of its type) against one token's
 * activations in the matching 8-bit form (quant_dot_dtype); a call does up
 * to 4 rows against the same token:
 *
 *   Q8_0 / Q4_0 / Q5_0 / IQ4_NL weights . Q8_0 activations, per 32-block:
 *       isum = sum_j wq[j] xq[j]                     (exact int32)
 *       acc += (d_w d_x) isum                        (f32)
 *   Q4_1 / Q5_1 . Q8_0, per 32-block (q unsigned, x = d q + m):
 *       isum = sum_j q[j] xq[j];  xsum = sum_j xq[j]  (exact int32)
 *       acc += (d_w d_x) isum;  accm += (m_w d_x) xsum;      y = acc + accm
 *   Q4_K / Q5_K . Q8_K, per 256-block, sub-blocks s of 32:
 *       isum = sum_s sc[s] sum_j q[s, j] xq[s, j]     (exact int32)
 *       msum = sum_s m[s] (bsums[2s] + bsums[2s + 1]) (exact int32)
 *       acc += (d_w d_x) isum;  accm += (dmin_w d_x) msum;   y = acc - accm
 *   Q6_K . Q8_K, per 256-block, groups g of 16 (q stored as q + 32):
 *       isum = sum_g sc[g] sum_j (q+32)[g, j] xq[g, j]; corr = 32 sum_g sc[g] bsums[g]
 *       acc += (d_w d_x) isum;  accm += (d_w d_x) corr;      y = acc - accm
 *   Q3_K . Q8_K: the steps of the Q6_K block it widens to (quant_widen.h):
 *       levels q + 4 h + 28 (Q6_K's q + 32), scales s - 32, as Q6_K above
 *   Q2_K . Q8_K, per 256-block, groups g of 16 (4-bit sc and m):
 *       isum = sum_g sc[g] sum_j q[g, j] xq[g, j];  msum = sum_g m[g] bsums[g]
 *       acc += (d_w d_x) isum;  accm += (dmin_w d_x) msum;   y = acc - accm
 *   IQ4_XS . Q8_K, per 256-block, sub-blocks s of 32 (ls[s] - 32 signed):
 *       isum = sum_s (ls[s] - 32) sum_j kv[q[s, j]] xq[s, j]  (exact int32)
 *       acc += (d_w d_x) isum;                               y = acc - 0
 *
 * The integers are exact in every ISA; the f32 accumulation runs block by
 * block in one order fixed per ISA and type (portable: one scalar; SIMD
 * Q8_0 / Q4_0: each block's int32 lanes summed to one exact isum, then the
 * portable steps, so the portable bits; SIMD K types: 8 lanes of int32
 * partial sums converted and accumulated lane-wise, then a fixed lane
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
#include "base/quant_widen.h"

/* y[r] = the dot of weight row w[r] (n_blocks blocks) with one activation
 * row x, for r < R (R <= 4). */
typedef void (*cpu__qdot_fn)(int R, const void *const *w, const void *x, int64_t n_blocks,
                             float *y);

/* y[t][r] for the table's tile_tokens tokens x[t] and four weight rows
 * w[0..3], each output through the very steps of cpu__qdot_fn (the weights'
 * unpacking shared by the tokens). */
typedef void (*cpu__qtile_fn)(const void *const *w, const void *const *x, int64_t n_blocks,
                              float *const *y);

enum { CPU__Q_TILE_TOKENS = 4 }; /* the most tokens of a tile call (tile_tokens) */

/* What the interleaved kernels need of token t's block b besides its
 * bytes, made once per token block for all the groups it meets: its scale
 * d as f32 (exact: an f16), and 8 times the sum of its 32 bytes (exact
 * int32). */
typedef struct cpu__qx_tok {
    float dx;
    int32_t xs8;
} cpu__qx_tok;

/* y[t][r] for T tokens x[t] (1 <= T <= CPU__QX_TOKENS) and the 8 rows of one
 * interleaved group g (repack.h), each output through the very steps of the
 * portable dot: the same exact int32 per block, then acc += (d_w d_x) isum
 * in f32, block by block, one accumulator per output (the 8 rows are the 8
 * lanes of a vector). tok (may be NULL): tok[t][b] token t's block b as
 * cpu__qx_tok, which the kernel otherwise computes from x. */
typedef void (*cpu__qx8_fn)(int T, const void *g, const void *const *x,
                            const cpu__qx_tok *const *tok, int64_t n_blocks, float *const *y);

enum { CPU__QX_TOKENS = 4 }; /* the most tokens of an interleaved call */

typedef struct cpu__quant_table {
    const char *name;
    cpu__qdot_fn dot[ENC_DTYPE_COUNT];   /* by weight dtype; NULL for non-block types */
    cpu__qtile_fn tile[ENC_DTYPE_COUNT]; /* (optional, per type) tokens x 4 rows */
    int tile_tokens[ENC_DTYPE_COUNT];    /* tokens per tile call, where tile is set */
    cpu__qx8_fn x8[ENC_DTYPE_COUNT];     /* interleaved groups (cpu_repack_supports' types) */
    /* (optional, per type) two consecutive groups at once, 16 rows: g the
     * first, y[t] 16 floats; the x8 bits. For calls of several tokens. */
    cpu__qx8_fn x16[ENC_DTYPE_COUNT];
    /* (optional) quant_quantize_row's bytes, faster; NULL: quant_quantize_row */
    int (*quantize_row)(enc_dtype dt, const float *x, void *out, int64_t k);
} cpu__quant_table;

extern const cpu__quant_table cpu__quant_scalar; /* kernels_quant.c */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
extern const cpu__quant_table cpu__quant_avx2; /* kernels_quant_avx2.c */
extern const cpu__quant_table cpu__quant_vnni; /* kernels_quant_vnni.c: AVX-512 VNNI + VL */
#ifdef ENCORE_HAVE_AVXVNNI
extern const cpu__quant_table cpu__quant_avxvnni; /* kernels_quant_avxvnni.c: AVX-VNNI */
#endif
#endif

/* The table cpu_matmul uses for isa (the AVX-512 ISA takes the VNNI table
 * where the CPU has AVX512_VNNI, else the AVX2 one; the avxvnni ISA the
 * AVX-VNNI one). */
const cpu__quant_table *cpu__quant_table_for(cpu_isa isa);

/* y = x W^T over weight rows [n0, n1) (shapes as cpu_matmul); packed: W
 * in the interleaved layout of repack.h (n0 a multiple of its 8 rows). */
void cpu__matmul_quant(const cpu__quant_table *qt, const void *x, int64_t n_tokens, int64_t k,
                       const void *w, enc_dtype w_dtype, int64_t n_out, int64_t n0, int64_t n1,
                       float *y, int packed);

#endif /* ENC_CPU_KERNELS_QUANT_IMPL_H */

/* ------------------------------------------------------------------------ */
/* Part 2: the 256-bit bodies. The including file defines CPU__Q_TABLE (the
 * table's name), CPU__Q_NAME (a string), and
 *   CPU__Q_DOT4(u, s)               __m256i of 8 int32: lane i = sum of the 4
 *                                   products u8 u[4i..4i+3] * s8 s[4i..4i+3]
 *   CPU__Q_DOT4_SCALED(u, s, sc16)  the same lanes times a scale held as 16
 *                                   int16 lanes, the two of each int32 lane
 *                                   equal */
#ifdef CPU__Q_TABLE

#include <immintrin.h>
#include <string.h>

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

/* The level of every weight prefetch of the quantized kernels: L2
 * (prefetcht1; kernels_impl.h's f32/f16/bf16 one asks the same). On an
 * Intel Xeon asking for L1 held the core's few fill buffers for the whole
 * trip from DRAM: decode ran 10-25% slower (BENCHMARKS.md); the loads that
 * follow bring each line on to L1. AMD documents T1 going to L2 from Zen 4
 * on; on Zen 3 it fills L1 as T0 does. */
#define CPU__Q_PF_HINT _MM_HINT_T1

/* Decode streams each weight once, R rows side by side, and the rows of a
 * matrix lie one after another: while a tile reads block b of its rows, it
 * asks for the same share of the bytes after its last row (the next tile's,
 * bb bytes per block and row). Only a hint: a prefetch never faults, past
 * the matrix end included, and changes no value. */
CPU__Q_INLINE void cpu__q_prefetch_next(int R, const void *last_row, int64_t nb, size_t bb,
                                        int64_t b)
{
    const char *p = (const char *)last_row + (size_t)nb * bb + (size_t)b * R * bb;
    for (size_t o = 0; o < (size_t)R * bb; o += 64)
        _mm_prefetch(p + o, CPU__Q_PF_HINT);
}

/* --- the 32-blocks: Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1 and Q5_1 --------------- */

/* A tile is T tokens (1, 2 or 4) x 4 weight rows. Per block, each output's
 * int32 lanes (8 partial sums, exact) are added across lanes by a tree of
 * vphaddd into one lane per output (exact: integers), so the f32 steps are
 * those of the portable dot, lane by lane: acc += (d_w d_x) isum, a product
 * and a sum per block, one accumulator per output. Every output of every
 * tile shape therefore gets the portable dot's bits, whatever the tile. */
enum { CPU__Q_TMAX = 4 };
_Static_assert((int)CPU__Q_TMAX <= (int)CPU__Q_TILE_TOKENS,
               "a tile's tokens fit cpu__matmul_quant's arrays");

/* The kinds of 32-value weight blocks the bodies below read (a constant at
 * every call site), each opening with its f16 scale d: Q8_0's signed bytes,
 * Q4_0's nibbles (levels q - 8), IQ4_NL's nibbles (levels
 * quant_iq4nl_values[q]) and Q5_0's nibbles with a fifth bit each in qh
 * (levels q - 16); Q4_1's and Q5_1's the same unsigned (0..15, 0..31),
 * after their f16 min m. */
enum { CPU__Q8 = 0, CPU__Q4 = 1, CPU__IQ4 = 2, CPU__Q5 = 3, CPU__Q41 = 4, CPU__Q51 = 5 };

/* Bytes of one block of kind. */
static inline size_t cpu__q_bb(int kind)
{
    return kind == CPU__Q8    ? sizeof(block_q8_0)
           : kind == CPU__Q5  ? sizeof(block_q5_0)
           : kind == CPU__Q41 ? sizeof(block_q4_1)
           : kind == CPU__Q51 ? sizeof(block_q5_1)
                              : sizeof(block_q4_0);
}

/* Whether blocks of kind hold unsigned levels (dotted by vpmaddubsw as
 * they are), and whether they add a min m (Q4_1, Q5_1). */
static inline int cpu__q_unsigned(int kind)
{
    return kind == CPU__Q4 || kind == CPU__Q41 || kind == CPU__Q51;
}
static inline int cpu__q_has_min(int kind)
{
    return kind == CPU__Q41 || kind == CPU__Q51;
}

/* IQ4_NL's 16 levels in both 128-bit lanes, for vpshufb by nibble. */
static inline __m256i cpu__q_iq4_table(void)
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_iq4nl_values));
}

/* 16 in byte i of the result where bit i of the 32 bits h is set, else 0:
 * byte i takes byte i / 8 of h (vpshufb), tests bit i % 8. */
static inline __m256i cpu__q_bits16(uint32_t h)
{
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                          2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), pick), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(16));
}

/* Weight block b of row w as 32 levels: Q8_0, IQ4_NL and Q5_0 signed,
 * Q4_0 unsigned (q, 0..15; the tile takes 8 times the token's sum off
 * after), Q4_1 and Q5_1 unsigned (0..15, 0..31). */
CPU__Q_INLINE __m256i cpu__q_levels(int kind, const void *w, int64_t b)
{
    const unsigned char *k = (const unsigned char *)w + (size_t)b * cpu__q_bb(kind);
    if (kind == CPU__Q8) return _mm256_loadu_si256((const __m256i *)(k + 2));
    size_t qs = kind == CPU__Q5 ? 6 : kind == CPU__Q41 ? 4 : kind == CPU__Q51 ? 8 : 2;
    __m128i v = _mm_loadu_si128((const __m128i *)(k + qs));
    __m256i q = _mm256_set_m128i(_mm_srli_epi16(v, 4), v); /* values 0..15 | 16..31 */
    q = _mm256_and_si256(q, _mm256_set1_epi8(15));
    if (kind == CPU__IQ4) return _mm256_shuffle_epi8(cpu__q_iq4_table(), q);
    if (kind != CPU__Q5 && kind != CPU__Q51) return q;
    uint32_t qh;
    memcpy(&qh, k + qs - 4, sizeof qh);
    q = _mm256_or_si256(q, cpu__q_bits16(qh));
    return kind == CPU__Q51 ? q : _mm256_sub_epi8(q, _mm256_set1_epi8(16));
}

/* The f16 at byte off of block b of each of the 4 rows (the scale d at 0,
 * Q4_1's / Q5_1's min m at 2), as 4 floats. */
CPU__Q_INLINE __m128 cpu__q_d4(int kind, const void *const *wv, int64_t b, size_t off)
{
    uint16_t d[CPU__Q_RMAX];
    CPU__Q_UNROLL for (int r = 0; r < CPU__Q_RMAX; r++)
    {
        memcpy(&d[r], (const unsigned char *)wv[r] + (size_t)b * cpu__q_bb(kind) + off,
               sizeof d[r]);
    }
    return _mm_cvtph_ps(
        _mm_setr_epi16((short)d[0], (short)d[1], (short)d[2], (short)d[3], 0, 0, 0, 0));
}

/* 4 vectors of 8 int32 lanes (rows 0..3) summed across lanes: in each
 * 128-bit half [row 0, row 1, row 2, row 3], the low half over lanes 0..3,
 * the high one over lanes 4..7. */
static inline __m256i cpu__q_hsum4(__m256i a, __m256i b, __m256i c, __m256i d)
{
    return _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
}

/* cpu__q_hsum4's layout from the int16 lanes of 4 vpmaddubsw of unsigned
 * Q4_0 levels (0..15) by a token's signed bytes: a lane is a pair of
 * products, |.| <= 2 * 15 * 128; two vphaddw make lanes of 8 products
 * (|.| <= 15360, exact in int16) and one vpmaddwd by 1 the int32 sums of 16.
 * The same exact integers as cpu__q_hsum4 of the int32 dots, with one
 * multiply per row and one shared, not two per row. */
static inline __m256i cpu__q_hsum4_16(__m256i a, __m256i b, __m256i c, __m256i d)
{
    __m256i h = _mm256_hadd_epi16(_mm256_hadd_epi16(a, b), _mm256_hadd_epi16(c, d));
    return _mm256_madd_epi16(h, _mm256_set1_epi16(1));
}

/* Token qx (one block) against the 4 rows' levels qw: cpu__q_hsum4 of the 4
 * dots. Q8_0, IQ4_NL and Q5_0 levels are signed: |w| . x sign(w). Q4_0 ones
 * are unsigned: q . x, the tile taking 8 times the token's sum off after
 * (cpu__q_xsum8), which leaves the same exact int32 as (q - 8) . x; Q4_1
 * and Q5_1 ones too, q . x as it is (Q5_1's 8 products of an int16 lane
 * after the two vphaddw: |.| <= 8 * 31 * 127, exact). */
CPU__Q_INLINE __m256i cpu__q_token4(int kind, const __m256i *qw, __m256i qx)
{
    int q4 = cpu__q_unsigned(kind);
    __m256i dot[CPU__Q_RMAX];
    CPU__Q_UNROLL for (int r = 0; r < CPU__Q_RMAX; r++)
    {
        dot[r] = q4 ? _mm256_maddubs_epi16(qw[r], qx)
                    : CPU__Q_DOT4(_mm256_sign_epi8(qw[r], qw[r]), _mm256_sign_epi8(qx, qw[r]));
    }
    return q4 ? cpu__q_hsum4_16(dot[0], dot[1], dot[2], dot[3])
              : cpu__q_hsum4(dot[0], dot[1], dot[2], dot[3]);
}

/* 8 times the sum of the 32 bytes of each of 4 tokens' blocks qx[t], lane t
 * (exact: |pair| <= 256 in the int16 tree). */
static inline __m128i cpu__q_xsum8(__m256i x0, __m256i x1, __m256i x2, __m256i x3)
{
    const __m256i one = _mm256_set1_epi8(1);
    __m256i h = cpu__q_hsum4_16(_mm256_maddubs_epi16(one, x0), _mm256_maddubs_epi16(one, x1),
                                _mm256_maddubs_epi16(one, x2), _mm256_maddubs_epi16(one, x3));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    return _mm_slli_epi32(s, 3);
}

/* y[t][r] = row r (of kind) . token t's Q8_0 activations, for T tokens and
 * the 4 rows; lanes per token pair [t r0..r3 | t+1 r0..r3]. */
CPU__Q_INLINE void cpu__q_32_tile(int kind, int T, const void *const *wv, const void *const *xv,
                                  int64_t nb, float *const *y)
{
    int q4 = kind == CPU__Q4, mins = cpu__q_has_min(kind);
    __m256 acc[CPU__Q_TMAX / 2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m256 accm[CPU__Q_TMAX / 2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 acc1 = _mm_setzero_ps(), accm1 = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        if (T == 1) cpu__q_prefetch_next(CPU__Q_RMAX, wv[CPU__Q_RMAX - 1], nb, cpu__q_bb(kind), b);
        __m256i qw[CPU__Q_RMAX], qx[CPU__Q_TMAX];
        CPU__Q_UNROLL for (int r = 0; r < CPU__Q_RMAX; r++) qw[r] = cpu__q_levels(kind, wv[r], b);
        __m128 dw = cpu__q_d4(kind, wv, b, 0);
        __m128 mw = mins ? cpu__q_d4(kind, wv, b, 2) : _mm_setzero_ps();
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            qx[t] = _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)xv[t] + b)->qs);
        }
        __m128i x8 = _mm_setzero_si128(); /* Q4_0, Q4_1, Q5_1: lane t 8 times token t's sum */
        if (q4 || mins)
            x8 = T == 1   ? cpu__q_xsum8(qx[0], qx[0], qx[0], qx[0])
                 : T == 2 ? cpu__q_xsum8(qx[0], qx[1], qx[0], qx[1])
                          : cpu__q_xsum8(qx[0], qx[1], qx[2], qx[3]);
        if (T == 1) {
            const block_q8_0 *x = (const block_q8_0 *)xv[0] + b;
            __m256i g = cpu__q_token4(kind, qw, qx[0]);
            __m128i tot = _mm_add_epi32(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1));
            if (q4) tot = _mm_sub_epi32(tot, x8);
            __m128 dx = _mm_set1_ps(cpu__q_f16(x->d));
            acc1 = _mm_add_ps(acc1, _mm_mul_ps(_mm_mul_ps(dw, dx), _mm_cvtepi32_ps(tot)));
            if (mins) /* every lane token 0's sum */
                accm1 = _mm_add_ps(
                    accm1, _mm_mul_ps(_mm_mul_ps(mw, dx), _mm_cvtepi32_ps(_mm_srai_epi32(x8, 3))));
            continue;
        }
        CPU__Q_UNROLL for (int p = 0; p < T / 2; p++)
        {
            const block_q8_0 *x0 = (const block_q8_0 *)xv[2 * p] + b;
            const block_q8_0 *x1 = (const block_q8_0 *)xv[2 * p + 1] + b;
            __m256i g0 = cpu__q_token4(kind, qw, qx[2 * p]),
                    g1 = cpu__q_token4(kind, qw, qx[2 * p + 1]);
            __m256i tot = _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20),
                                           _mm256_permute2x128_si256(g0, g1, 0x31));
            __m256i pick = _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1, 2 * p + 1,
                                             2 * p + 1, 2 * p + 1);
            __m256i xt = _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(x8), pick);
            if (q4) tot = _mm256_sub_epi32(tot, xt);
            __m256 dx =
                _mm256_set_m128(_mm_set1_ps(cpu__q_f16(x1->d)), _mm_set1_ps(cpu__q_f16(x0->d)));
            __m256 s = _mm256_mul_ps(_mm256_set_m128(dw, dw), dx);
            acc[p] = _mm256_add_ps(acc[p], _mm256_mul_ps(s, _mm256_cvtepi32_ps(tot)));
            if (mins) {
                __m256 sm = _mm256_mul_ps(_mm256_set_m128(mw, mw), dx);
                accm[p] = _mm256_add_ps(
                    accm[p], _mm256_mul_ps(sm, _mm256_cvtepi32_ps(_mm256_srai_epi32(xt, 3))));
            }
        }
    }
    if (T == 1) {
        _mm_storeu_ps(y[0], mins ? _mm_add_ps(acc1, accm1) : acc1);
        return;
    }
    CPU__Q_UNROLL for (int p = 0; p < T / 2; p++)
    {
        if (mins) acc[p] = _mm256_add_ps(acc[p], accm[p]);
        _mm_storeu_ps(y[2 * p], _mm256_castps256_ps128(acc[p]));
        _mm_storeu_ps(y[2 * p + 1], _mm256_extractf128_ps(acc[p], 1));
    }
}

/* R < 4 rows go through the 4-row tile with row 0 standing in for the
 * missing ones and their outputs dropped: each lane is its own output, so
 * the kept ones are as with R = 4. */
static inline void cpu__q_pad_rows(int R, const void *const *wv, const void **w4)
{
    for (int r = 0; r < CPU__Q_RMAX; r++)
        w4[r] = wv[r < R ? r : 0];
}

CPU__Q_INLINE void cpu__q_32_rows(int kind, int R, const void *const *wv, const void *xv,
                                  int64_t nb, float *y)
{
    const void *w4[CPU__Q_RMAX];
    float y4[CPU__Q_RMAX], *yp = R == CPU__Q_RMAX ? y : y4;
    cpu__q_pad_rows(R, wv, w4);
    cpu__q_32_tile(kind, 1, w4, &xv, nb, &yp);
    if (yp != y) memcpy(y, y4, sizeof(float) * (size_t)R);
}

/* The table's entries for one type: dot (R rows, one token) through
 * ROWS, tile (TMAX tokens x CPU__Q_RMAX rows) through TILE, each body's
 * kind KIND. */
#define CPU__Q_TYPE(T, ROWS, TILE, TMAX, KIND)                                                     \
    static void cpu__q_dot_##T(int R, const void *const *w, const void *x, int64_t nb, float *y)   \
    {                                                                                              \
        ROWS(KIND, R, w, x, nb, y);                                                                \
    }                                                                                              \
    static void cpu__q_tile_##T(const void *const *w, const void *const *x, int64_t nb,            \
                                float *const *y)                                                   \
    {                                                                                              \
        TILE(KIND, TMAX, w, x, nb, y);                                                             \
    }
CPU__Q_TYPE(q8_0, cpu__q_32_rows, cpu__q_32_tile, CPU__Q_TMAX, CPU__Q8)
CPU__Q_TYPE(q4_0, cpu__q_32_rows, cpu__q_32_tile, CPU__Q_TMAX, CPU__Q4)
CPU__Q_TYPE(iq4_nl, cpu__q_32_rows, cpu__q_32_tile, CPU__Q_TMAX, CPU__IQ4)
CPU__Q_TYPE(q5_0, cpu__q_32_rows, cpu__q_32_tile, CPU__Q_TMAX, CPU__Q5)
CPU__Q_TYPE(q4_1, cpu__q_32_rows, cpu__q_32_tile, CPU__Q_TMAX, CPU__Q41)
CPU__Q_TYPE(q5_1, cpu__q_32_rows, cpu__q_32_tile, CPU__Q_TMAX, CPU__Q51)

/* --- the K types: Q4_K, Q5_K, Q6_K, IQ4_XS, Q2_K and Q3_K ---------------- */

/* One tile body serves the six K types (kt, a constant at every call site)
 * for T (1, 2 or 4) tokens x 4 rows. Per weight superblock, per row:
 *   - its scales unpacked once, in vectors: the 16-bit sub-block scales in
 *     both 128-bit lanes (picked per sub-block by one byte shuffle), and the
 *     16 int16 that dotted with the token's 16 bsums give the correction
 *     (Q4_K/Q5_K: each 6-bit min twice, m[s] . (bsums[2s] + bsums[2s+1]);
 *     Q6_K and Q3_K: the 16 scales, sc[g] . bsums[g], times 32; Q2_K: its
 *     16 mins,
 *     m[g] . bsums[g]; IQ4_XS: none);
 *   - each run of 32 levels unpacked once and dotted with every token
 *     (IQ4_XS's are signed: |level| . x sign(level), as the 32-blocks').
 * Each output's int32 lanes are then summed across (exact) to its isum and
 * corr, and its f32 steps are the portable dot's, one lane per output:
 * acc += (d_w d_x) isum, accm += (dm d_x) corr, y = acc - accm. So every
 * tile shape gives every output the portable bits. */
enum {
    CPU__QK_Q4 = 0,
    CPU__QK_Q5 = 1,
    CPU__QK_Q6 = 2,
    CPU__QK_IQ4 = 3,
    CPU__QK_Q2 = 4,
    CPU__QK_Q3 = 5
};

/* Bytes of one superblock of K type kt. */
static inline size_t cpu__q_k_bb(int kt)
{
    return kt == CPU__QK_Q6    ? sizeof(block_q6_K)
           : kt == CPU__QK_Q5  ? sizeof(block_q5_K)
           : kt == CPU__QK_IQ4 ? sizeof(block_iq4_xs)
           : kt == CPU__QK_Q2  ? sizeof(block_q2_K)
           : kt == CPU__QK_Q3  ? sizeof(block_q3_K)
                               : sizeof(block_q4_K);
}
enum { CPU__QK_TMAX = 4 }; /* tokens per tile */
_Static_assert((int)CPU__QK_TMAX <= (int)CPU__Q_TILE_TOKENS,
               "a tile's tokens fit cpu__matmul_quant's arrays");

/* v stays one register updated in program order: without it, GCC turns the
 * 8 x T running sums of cpu__q_k_row into a tree over all 32 products and
 * spills them to the stack. */
#if defined(__GNUC__)
#define CPU__Q_IN_REG(v) __asm__("" : "+x"(v))
#else
#define CPU__Q_IN_REG(v) ((void)0)
#endif

#if defined(__clang__)
#define CPU__Q_UNROLL8 _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define CPU__Q_UNROLL8 _Pragma("GCC unroll 8")
#else
#define CPU__Q_UNROLL8
#endif

static inline int cpu__q_hsum_i32(__m256i v) /* exact: any order */
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* The 16-bit lane lo (low 128 bits) and hi (high 128 bits) of each 128-bit
 * half of v, copied to every 16-bit lane of that half. */
static inline __m256i cpu__q_pick16(__m256i v, int lo, int hi)
{
    __m128i cl = _mm_set1_epi16((short)(2 * lo | (2 * lo + 1) << 8));
    __m128i ch = _mm_set1_epi16((short)(2 * hi | (2 * hi + 1) << 8));
    return _mm256_shuffle_epi8(v, _mm256_set_m128i(ch, cl));
}

/* Q4_K / Q5_K 12 packed scale bytes -> bytes 0..7 the 6-bit scales sc[0..7],
 * bytes 8..15 the mins m[0..7] (quant_scale_min_k4 for all s at once). */
static inline __m128i cpu__q_k4_scales(const uint8_t *scales)
{
    const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    uint32_t u[3];
    memcpy(u, scales, sizeof u);
    uint32_t sc_lo = u[0] & m6, m_lo = u[1] & m6;
    uint32_t sc_hi = (u[2] & m4) | ((u[0] >> 6) & m2) << 4;
    uint32_t m_hi = ((u[2] >> 4) & m4) | ((u[1] >> 6) & m2) << 4;
    return _mm_set_epi32((int)m_hi, (int)m_lo, (int)sc_hi, (int)sc_lo);
}

/* 16 groups' int16 scales s16 as cpu__q_k_pick reads them for groups of
 * 16 (Q6_K, Q3_K, Q2_K): sc[0] groups 0-7 in both 128-bit halves, sc[1]
 * groups 8-15. */
static inline void cpu__q_k_groups16(__m256i s16, __m256i *sc)
{
    sc[0] = _mm256_permute2x128_si256(s16, s16, 0x00);
    sc[1] = _mm256_permute2x128_si256(s16, s16, 0x11);
}

/* Q3_K's 16 6-bit scales (quant_widen.h's packing), less 32, as int16. */
static inline __m256i cpu__q_q3_scales(const block_q3_K *w)
{
    const uint32_t m4 = 0x0f0f0f0f, m2 = 0x03030303;
    uint32_t a[3];
    memcpy(a, w->scales, sizeof a);
    __m128i v = _mm_setr_epi32((int)((a[0] & m4) | (a[2] & m2) << 4),
                               (int)((a[1] & m4) | ((a[2] >> 2) & m2) << 4),
                               (int)(((a[0] >> 4) & m4) | ((a[2] >> 4) & m2) << 4),
                               (int)(((a[1] >> 4) & m4) | ((a[2] >> 6) & m2) << 4));
    return _mm256_cvtepi8_epi16(_mm_sub_epi8(v, _mm_set1_epi8(32)));
}

/* IQ4_XS's 8 sub-block scales quant_iq4xs_ls(w, s), as int16 in both
 * 128-bit halves (lane s), by variable shifts. */
static inline __m256i cpu__q_iq4xs_scales(const block_iq4_xs *w)
{
    uint32_t lo;
    memcpy(&lo, w->scales_l, sizeof lo);
    __m256i l = _mm256_srlv_epi32(_mm256_set1_epi32((int)lo),
                                  _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    __m256i h = _mm256_srlv_epi32(_mm256_set1_epi32(w->scales_h),
                                  _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    __m256i ls = _mm256_or_si256(_mm256_and_si256(l, _mm256_set1_epi32(15)),
                                 _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(3)), 4));
    ls = _mm256_sub_epi32(ls, _mm256_set1_epi32(32));
    __m128i l16 = _mm_packs_epi32(_mm256_castsi256_si128(ls), _mm256_extracti128_si256(ls, 1));
    return _mm256_broadcastsi128_si256(l16);
}

/* The scales of one superblock wb of type kt: sc[0..1] (the vectors
 * cpu__q_k_pick reads), mv (the correction's 16 int16), d_w and the
 * correction's scale dm (dmin_w; Q6_K and Q3_K d_w; IQ4_XS none). */
CPU__Q_INLINE void cpu__q_k_scales(int kt, const unsigned char *wb, __m256i *sc, __m256i *mv,
                                   float *d, float *dm)
{
    if (kt == CPU__QK_Q6 || kt == CPU__QK_Q3) {
        const block_q6_K *w6 = (const block_q6_K *)wb;
        const block_q3_K *w3 = (const block_q3_K *)wb;
        *mv = kt == CPU__QK_Q6 ? _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w6->scales))
                               : cpu__q_q3_scales(w3);
        cpu__q_k_groups16(*mv, sc);
        *d = *dm = cpu__q_f16(kt == CPU__QK_Q6 ? w6->d : w3->d);
        return;
    }
    if (kt == CPU__QK_Q2) { /* scales the low nibbles, mins the high ones */
        const block_q2_K *w = (const block_q2_K *)wb;
        __m128i v = _mm_loadu_si128((const __m128i *)w->scales), m4 = _mm_set1_epi8(15);
        cpu__q_k_groups16(_mm256_cvtepu8_epi16(_mm_and_si128(v, m4)), sc);
        *mv = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), m4));
        *d = cpu__q_f16(w->d);
        *dm = cpu__q_f16(w->dmin);
        return;
    }
    if (kt == CPU__QK_IQ4) {
        const block_iq4_xs *w = (const block_iq4_xs *)wb;
        sc[0] = sc[1] = cpu__q_iq4xs_scales(w);
        *mv = _mm256_setzero_si256();
        *d = cpu__q_f16(w->d);
        *dm = 0.0f;
        return;
    }
    const block_q4_K *w = (const block_q4_K *)wb; /* d, dmin, scales alike in Q5_K */
    __m128i v = cpu__q_k4_scales(w->scales);
    sc[0] = sc[1] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(v));
    *mv = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v)); /* m0 m0 m1 m1 ... */
    *d = cpu__q_f16(w->d);
    *dm = cpu__q_f16(w->dmin);
}

/* The scale of run s (32 values) in every 16-bit lane (Q6_K, Q2_K: its two
 * groups of 16, one per 128-bit half). */
CPU__Q_INLINE __m256i cpu__q_k_pick(int kt, const __m256i *sc, int s)
{
    if (kt == CPU__QK_Q6 || kt == CPU__QK_Q2 || kt == CPU__QK_Q3)
        return cpu__q_pick16(sc[s / 4], 2 * (s % 4), 2 * (s % 4) + 1);
    return cpu__q_pick16(sc[0], s, s);
}

/* Run s (values 32 s .. 32 s + 31) of superblock wb as 32 levels: unsigned
 * Q4_K 0..15, Q5_K 0..31, Q6_K 0..63 (q + 32), Q2_K 0..3, Q3_K 28..35
 * (q + 4 h + 28: its widened Q6_K's); IQ4_XS signed, its nibbles (an
 * IQ4_NL block's layout) through the table. */
CPU__Q_INLINE __m256i cpu__q_k_levels(int kt, const unsigned char *wb, int s)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    if (kt == CPU__QK_Q2 || kt == CPU__QK_Q3) { /* bits 2 (s % 4) of the bytes of its 128 */
        const block_q3_K *w3 = (const block_q3_K *)wb;
        const uint8_t *qs = kt == CPU__QK_Q2 ? ((const block_q2_K *)wb)->qs : w3->qs;
        __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (s / 4)));
        __m256i q = _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * (s % 4))),
                                     _mm256_set1_epi8(3));
        if (kt == CPU__QK_Q2) return q;
        __m256i h = _mm256_loadu_si256((const __m256i *)w3->hmask); /* bit s as 4 */
        h = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(s)), _mm256_set1_epi8(1));
        return _mm256_add_epi8(_mm256_or_si256(q, _mm256_slli_epi16(h, 2)), _mm256_set1_epi8(28));
    }
    if (kt == CPU__QK_IQ4) {
        __m128i v = _mm_loadu_si128((const __m128i *)(((const block_iq4_xs *)wb)->qs + 16 * s));
        __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), m4);
        return _mm256_shuffle_epi8(cpu__q_iq4_table(), q);
    }
    if (kt == CPU__QK_Q6) {
        const block_q6_K *w = (const block_q6_K *)wb;
        int h = s / 4, i = s % 4;
        __m256i l = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * h + 32 * (i & 1)));
        __m256i hb = _mm256_loadu_si256((const __m256i *)(w->qh + 32 * h));
        __m256i lo = _mm256_and_si256(_mm256_srl_epi16(l, _mm_cvtsi32_si128(4 * (i >> 1))), m4);
        __m256i hi =
            _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(2 * i)), _mm256_set1_epi8(3));
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    }
    size_t bb = kt == CPU__QK_Q5 ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const uint8_t *qs = wb + bb - 128; /* Q5_K: qh the 32 bytes before */
    __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (s / 2)));
    __m256i q = _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(4 * (s % 2))), m4);
    if (kt == CPU__QK_Q5) {
        __m256i hb = _mm256_loadu_si256((const __m256i *)(wb + 16));
        __m256i bit =
            _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(s)), _mm256_set1_epi8(1));
        q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
    }
    return q;
}

/* The exact sums across the lanes of T vectors (T = 1, 2, 4): lane t the
 * sum of v[t] (lanes T..3 hold no output). */
CPU__Q_INLINE __m128i cpu__q_hsum_t(int T, const __m256i *v)
{
    __m256i h;
    if (T == 4)
        h = cpu__q_hsum4(v[0], v[1], v[2], v[3]);
    else {
        h = _mm256_hadd_epi32(v[0], T == 2 ? v[1] : v[0]);
        h = _mm256_hadd_epi32(h, h);
    }
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* Row wb (one superblock of type kt) against T tokens' superblocks x[t]:
 * lane t of *isum_out and *corr_out token t's isum and correction (Q6_K's
 * times 32). */
CPU__Q_INLINE void cpu__q_k_row(int kt, int T, const unsigned char *wb, const block_q8_K *const *x,
                                __m128i *isum_out, __m128i *corr_out, float *dw, float *dm)
{
    __m256i sc[2], mv, isum[CPU__QK_TMAX], corr[CPU__QK_TMAX];
    cpu__q_k_scales(kt, wb, sc, &mv, dw, dm);
    CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = _mm256_setzero_si256();
    CPU__Q_UNROLL8 for (int s = 0; s < 8; s++)
    {
        __m256i lv = cpu__q_k_levels(kt, wb, s), ss = cpu__q_k_pick(kt, sc, s);
        __m256i lu = kt == CPU__QK_IQ4 ? _mm256_sign_epi8(lv, lv) : lv; /* as u8 */
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            __m256i xs = _mm256_loadu_si256((const __m256i *)(x[t]->qs + 32 * s));
            if (kt == CPU__QK_IQ4) xs = _mm256_sign_epi8(xs, lv);
            isum[t] = _mm256_add_epi32(isum[t], CPU__Q_DOT4_SCALED(lu, xs, ss));
            CPU__Q_IN_REG(isum[t]);
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        __m256i bs = _mm256_loadu_si256((const __m256i *)x[t]->bsums);
        corr[t] = _mm256_madd_epi16(mv, bs);
        if (kt == CPU__QK_Q6 || kt == CPU__QK_Q3) corr[t] = _mm256_slli_epi32(corr[t], 5);
    }
    *isum_out = cpu__q_hsum_t(T, isum);
    *corr_out = cpu__q_hsum_t(T, corr);
}

/* y[t][r] = K-type row r . token t's Q8_K activations, for T tokens and the
 * 4 rows; output (t, r) is lane t of acc[r] and accm[r]. */
CPU__Q_INLINE void cpu__q_k_tile(int kt, int T, const void *const *wv, const void *const *xv,
                                 int64_t nb, float *const *y)
{
    size_t bb = cpu__q_k_bb(kt);
    __m128 acc[CPU__Q_RMAX], accm[CPU__Q_RMAX];
    CPU__Q_UNROLL for (int r = 0; r < CPU__Q_RMAX; r++) acc[r] = accm[r] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        if (T == 1) cpu__q_prefetch_next(CPU__Q_RMAX, wv[CPU__Q_RMAX - 1], nb, bb, b);
        const block_q8_K *x[CPU__QK_TMAX];
        float dxs[CPU__QK_TMAX] = {0};
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            x[t] = (const block_q8_K *)xv[t] + b;
            dxs[t] = x[t]->d;
        }
        __m128 dx = _mm_setr_ps(dxs[0], dxs[1], dxs[2], dxs[3]);
        CPU__Q_UNROLL for (int r = 0; r < CPU__Q_RMAX; r++)
        {
            __m128i isum, corr;
            float dw, dm;
            cpu__q_k_row(kt, T, (const unsigned char *)wv[r] + (size_t)b * bb, x, &isum, &corr, &dw,
                         &dm);
            __m128 sd = _mm_mul_ps(_mm_set1_ps(dw), dx), sm = _mm_mul_ps(_mm_set1_ps(dm), dx);
            acc[r] = _mm_add_ps(acc[r], _mm_mul_ps(sd, _mm_cvtepi32_ps(isum)));
            if (kt != CPU__QK_IQ4)
                accm[r] = _mm_add_ps(accm[r], _mm_mul_ps(sm, _mm_cvtepi32_ps(corr)));
        }
    }
    CPU__Q_UNROLL for (int r = 0; r < CPU__Q_RMAX; r++)
    {
        float out[4];
        _mm_storeu_ps(out, _mm_sub_ps(acc[r], accm[r]));
        CPU__Q_UNROLL for (int t = 0; t < T; t++) y[t][r] = out[t];
    }
}

CPU__Q_INLINE void cpu__q_k_rows(int kt, int R, const void *const *wv, const void *xv, int64_t nb,
                                 float *y)
{
    const void *w4[CPU__Q_RMAX];
    float y4[CPU__Q_RMAX], *yp = R == CPU__Q_RMAX ? y : y4;
    cpu__q_pad_rows(R, wv, w4);
    cpu__q_k_tile(kt, 1, w4, &xv, nb, &yp);
    if (yp != y) memcpy(y, y4, sizeof(float) * (size_t)R);
}

/* The table's entries for the K types (CPU__Q_TYPE). */
CPU__Q_TYPE(q4_k, cpu__q_k_rows, cpu__q_k_tile, CPU__QK_TMAX, CPU__QK_Q4)
CPU__Q_TYPE(q5_k, cpu__q_k_rows, cpu__q_k_tile, CPU__QK_TMAX, CPU__QK_Q5)
CPU__Q_TYPE(q6_k, cpu__q_k_rows, cpu__q_k_tile, CPU__QK_TMAX, CPU__QK_Q6)
CPU__Q_TYPE(iq4_xs, cpu__q_k_rows, cpu__q_k_tile, CPU__QK_TMAX, CPU__QK_IQ4)
CPU__Q_TYPE(q2_k, cpu__q_k_rows, cpu__q_k_tile, CPU__QK_TMAX, CPU__QK_Q2)
CPU__Q_TYPE(q3_k, cpu__q_k_rows, cpu__q_k_tile, CPU__QK_TMAX, CPU__QK_Q3)

/* --- activations: f32 rows -> Q8_0 / Q8_K blocks --------------------------- */

/* The bytes quant_quantize_row writes (base/quant.c), 8 values at a time:
 * the same amax (a max is exact in any order), the same scalar d and 1/d,
 * x * id rounded the way quant.c rounds (truncate, then one step away from
 * zero when the fraction is at least a half), Q8_K clamped to +-127. */
static inline __m256 cpu__q_absmax8(const float *x, int n, __m256 m)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int j = 0; j < n; j += 8) /* a NaN value is skipped, as in quant.c */
        m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), m);
    return m;
}

static inline float cpu__q_hmax(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static inline __m256i cpu__q_round(__m256 v)
{
    __m256i q = _mm256_cvttps_epi32(v);
    __m256 frac = _mm256_sub_ps(v, _mm256_cvtepi32_ps(q));
    __m256i up = _mm256_castps_si256(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ));
    __m256i dn = _mm256_castps_si256(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ));
    return _mm256_add_epi32(_mm256_sub_epi32(q, up), dn); /* a true mask is -1 */
}

/* 32 values x[0..32) times id, rounded, as 32 signed bytes in order. */
static inline __m256i cpu__q_round32(const float *x, float id)
{
    __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; i++)
        q[i] = cpu__q_round(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), vid));
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static void cpu__q_quantize_q8_0(const float *x, block_q8_0 *b)
{
    float d = cpu__q_hmax(cpu__q_absmax8(x, 32, _mm256_setzero_ps())) / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d = enc_f32_to_f16(d);
    _mm256_storeu_si256((__m256i *)b->qs, cpu__q_round32(x, id));
}

static void cpu__q_quantize_q8_k(const float *x, block_q8_K *b)
{
    float amax = cpu__q_hmax(cpu__q_absmax8(x, QUANT_K, _mm256_setzero_ps()));
    float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    b->d = amax > 0.0f ? amax / 127.0f : 0.0f;
    for (int c = 0; c < QUANT_K / 32; c++) {
        __m256i q = _mm256_max_epi8(cpu__q_round32(x + 32 * c, id), _mm256_set1_epi8(-127));
        _mm256_storeu_si256((__m256i *)(b->qs + 32 * c), q);
        int32_t s4[8]; /* sums of 4 values: groups 2c (lanes 0..3) and 2c + 1 */
        __m256i p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
        _mm256_storeu_si256((__m256i *)s4, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        b->bsums[2 * c] = (int16_t)(s4[0] + s4[1] + s4[2] + s4[3]);
        b->bsums[2 * c + 1] = (int16_t)(s4[4] + s4[5] + s4[6] + s4[7]);
    }
}

/* The table's quantize_row: Q8_0 and Q8_K here, any other type portable. */
static int cpu__q_quantize_row(enc_dtype dt, const float *x, void *out, int64_t k)
{
    int64_t be = enc_dtype_block_elems(dt);
    if ((dt != ENC_Q8_0 && dt != ENC_Q8_K) || k % be != 0) return quant_quantize_row(dt, x, out, k);
    for (int64_t i = 0; i < k / be; i++) {
        if (dt == ENC_Q8_0)
            cpu__q_quantize_q8_0(x + i * be, (block_q8_0 *)out + i);
        else
            cpu__q_quantize_q8_k(x + i * be, (block_q8_K *)out + i);
    }
    return 0;
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(CPU__Q_DOT4_ACC)
#define CPU__QX16 1 /* 512-bit VNNI: two groups a vector, the table's x16 */
#endif
#include "backend/cpu/kernels_repack_impl.h"
#ifdef CPU__QX16
#include "backend/cpu/kernels_repack_512_impl.h"
#endif
#include "backend/cpu/kernels_repack_k_impl.h"

const cpu__quant_table CPU__Q_TABLE = {
    .name = CPU__Q_NAME,
    .quantize_row = cpu__q_quantize_row,
    .x8 =
        {
            [ENC_Q8_0] = cpu__qx_q8_0,
            [ENC_Q4_0] = cpu__qx_q4_0,
            [ENC_IQ4_NL] = cpu__qx_iq4_nl,
            [ENC_Q5_0] = cpu__qx_q5_0,
            [ENC_Q4_K] = cpu__qxk_q4_k,
            [ENC_Q5_K] = cpu__qxk_q5_k,
            [ENC_Q6_K] = cpu__qxk_q6_k,
            [ENC_IQ4_XS] = cpu__qxk_iq4_xs,
            [ENC_Q2_K] = cpu__qxk_q2_k,
            [ENC_Q3_K] = cpu__qxk_q3_k,
            [ENC_Q4_1] = cpu__qx_q4_1,
            [ENC_Q5_1] = cpu__qx_q5_1,
        },
#ifdef CPU__QX16
    .x16 =
        {
            [ENC_Q8_0] = cpu__qx16_q8_0,
            [ENC_Q4_0] = cpu__qx16_q4_0,
            [ENC_IQ4_NL] = cpu__qx16_iq4_nl,
            [ENC_Q5_0] = cpu__qx16_q5_0,
            [ENC_Q4_K] = cpu__qxk_q4_k16,
            [ENC_Q5_K] = cpu__qxk_q5_k16,
            [ENC_Q6_K] = cpu__qxk_q6_k16,
            [ENC_IQ4_XS] = cpu__qxk_iq4_xs16,
            [ENC_Q2_K] = cpu__qxk_q2_k16,
            [ENC_Q3_K] = cpu__qxk_q3_k16,
        },
#endif
    .dot =
        {
            [ENC_Q8_0] = cpu__q_dot_q8_0,
            [ENC_Q4_0] = cpu__q_dot_q4_0,
            [ENC_IQ4_NL] = cpu__q_dot_iq4_nl,
            [ENC_Q5_0] = cpu__q_dot_q5_0,
            [ENC_Q4_K] = cpu__q_dot_q4_k,
            [ENC_Q5_K] = cpu__q_dot_q5_k,
            [ENC_Q6_K] = cpu__q_dot_q6_k,
            [ENC_IQ4_XS] = cpu__q_dot_iq4_xs,
            [ENC_Q2_K] = cpu__q_dot_q2_k,
            [ENC_Q3_K] = cpu__q_dot_q3_k,
            [ENC_Q4_1] = cpu__q_dot_q4_1,
            [ENC_Q5_1] = cpu__q_dot_q5_1,
        },
    .tile =
        {
            [ENC_Q8_0] = cpu__q_tile_q8_0,
            [ENC_Q4_0] = cpu__q_tile_q4_0,
            [ENC_IQ4_NL] = cpu__q_tile_iq4_nl,
            [ENC_Q5_0] = cpu__q_tile_q5_0,
            [ENC_Q4_K] = cpu__q_tile_q4_k,
            [ENC_Q5_K] = cpu__q_tile_q5_k,
            [ENC_Q6_K] = cpu__q_tile_q6_k,
            [ENC_IQ4_XS] = cpu__q_tile_iq4_xs,
            [ENC_Q2_K] = cpu__q_tile_q2_k,
            [ENC_Q3_K] = cpu__q_tile_q3_k,
            [ENC_Q4_1] = cpu__q_tile_q4_1,
            [ENC_Q5_1] = cpu__q_tile_q5_1,
        },
    .tile_tokens =
        {
            [ENC_Q8_0] = CPU__Q_TMAX,
            [ENC_Q4_0] = CPU__Q_TMAX,
            [ENC_IQ4_NL] = CPU__Q_TMAX,
            [ENC_Q5_0] = CPU__Q_TMAX,
            [ENC_Q4_K] = CPU__QK_TMAX,
            [ENC_Q5_K] = CPU__QK_TMAX,
            [ENC_Q6_K] = CPU__QK_TMAX,
            [ENC_IQ4_XS] = CPU__QK_TMAX,
            [ENC_Q2_K] = CPU__QK_TMAX,
            [ENC_Q3_K] = CPU__QK_TMAX,
            [ENC_Q4_1] = CPU__Q_TMAX,
            [ENC_Q5_1] = CPU__Q_TMAX,
        },
};

#endif /* CPU__Q_TABLE */
