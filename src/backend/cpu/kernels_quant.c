/* kernels_quant.c - matmul over block-quantized weights: the portable block
 * dot products, the choice of the per-ISA table, the loop over tokens and
 * weight rows, and the activations' quantization (cpu_quantize_rows).
 *
 * The portable dots follow the definitions of kernels_quant_impl.h with one
 * scalar f32 accumulator. The loop gives every output its own dot call, so
 * y[t, n] is the same bits whatever the batch, the tile or the thread split:
 *
 *   decode (1 token):  for each 4 weight rows r..r+3: y[r..] = dot(w[r..], x)
 *   prefill:           token blocks of ~256 KiB of activations; within one,
 *                      each 4 weight rows meet every token while in L1,
 *                      tile_tokens tokens at a time where the ISA has a tile
 *                      for the type (4 tokens x 4 rows)
 *   packed (repack.h): each group of 8 interleaved rows meets every token of
 *                      a block, up to 4 at a time (the table's x8); the tail
 *                      rows past the last group as above */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "backend/cpu/kernels_quant_impl.h"
#include "backend/cpu/repack.h"
#include "base/quant.h"
#include "base/quant_widen.h"
#include "base/status.h"

#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
#include <cpuid.h>
#endif

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* --- portable dots --------------------------------------------------------- */

/* The exact int32 dot of one 32-block of weights with one of activations. */
static int32_t cpu__qs_isum_q8_0(const void *wv, const block_q8_0 *x)
{
    const block_q8_0 *w = wv;
    int32_t isum = 0;
    for (int j = 0; j < 32; j++)
        isum += w->qs[j] * x->qs[j];
    return isum;
}

static int32_t cpu__qs_isum_q4_0(const void *wv, const block_q8_0 *x)
{
    const block_q4_0 *w = wv;
    int32_t isum = 0;
    for (int j = 0; j < 16; j++)
        isum += ((w->qs[j] & 15) - 8) * x->qs[j] + ((w->qs[j] >> 4) - 8) * x->qs[j + 16];
    return isum;
}

/* Q5_0 and IQ4_NL: the block's levels are those of the Q8_0 block it
 * widens to (base/quant_widen.h), so that block's isum. */
static int32_t cpu__qs_isum_q5_0(const void *wv, const block_q8_0 *x)
{
    block_q8_0 w8;
    quant_widen_row(ENC_Q5_0, wv, &w8, 32);
    return cpu__qs_isum_q8_0(&w8, x);
}

static int32_t cpu__qs_isum_iq4_nl(const void *wv, const block_q8_0 *x)
{
    block_q8_0 w8;
    quant_widen_row(ENC_IQ4_NL, wv, &w8, 32);
    return cpu__qs_isum_q8_0(&w8, x);
}

/* The f16 scale d that opens a Q8_0, Q4_0, Q5_0 or IQ4_NL block. */
static float cpu__qs_d(const void *blk)
{
    uint16_t d;
    memcpy(&d, blk, sizeof d);
    return enc_f16_to_f32(d);
}

/* One 32-block's step of a row's dot: acc += (d_w d_x) isum. */
static float cpu__qs_step(float acc, const void *wblk, const block_q8_0 *x, int32_t isum)
{
    return acc + (cpu__qs_d(wblk) * enc_f16_to_f32(x->d)) * (float)isum;
}

static float cpu__qs_dot_q8_0(const void *wv, const void *xv, int64_t nb)
{
    const block_q8_0 *w = wv, *x = xv;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        acc = cpu__qs_step(acc, &w[b], &x[b], cpu__qs_isum_q8_0(&w[b], &x[b]));
    return acc;
}

/* A row of 32-value blocks of bb bytes (Q4_0, Q5_0, IQ4_NL) against one
 * token's Q8_0 blocks. */
static float cpu__qs_dot_32(int32_t (*isum)(const void *, const block_q8_0 *), size_t bb,
                            const void *wv, const void *xv, int64_t nb)
{
    const block_q8_0 *x = xv;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const void *w = (const unsigned char *)wv + (size_t)b * bb;
        acc = cpu__qs_step(acc, w, &x[b], isum(w, &x[b]));
    }
    return acc;
}

static float cpu__qs_dot_q4_0(const void *wv, const void *xv, int64_t nb)
{
    return cpu__qs_dot_32(cpu__qs_isum_q4_0, sizeof(block_q4_0), wv, xv, nb);
}

static float cpu__qs_dot_q5_0(const void *wv, const void *xv, int64_t nb)
{
    return cpu__qs_dot_32(cpu__qs_isum_q5_0, sizeof(block_q5_0), wv, xv, nb);
}

static float cpu__qs_dot_iq4_nl(const void *wv, const void *xv, int64_t nb)
{
    return cpu__qs_dot_32(cpu__qs_isum_iq4_nl, sizeof(block_iq4_nl), wv, xv, nb);
}

/* A row of Q4_1 (has_qh 0) or Q5_1 blocks (bb bytes) against one token's
 * Q8_0 blocks: per block, acc += (d_w d_x) isum over the unsigned levels,
 * accm += (m_w d_x) xsum (the token block's byte sum); y = acc + accm. */
/* One Q4_1 / Q5_1 block w's step against token block x (*acc, *accm). */
static void cpu__qs_step_1(int has_qh, const uint8_t *w, const block_q8_0 *x, float *acc,
                           float *accm)
{
    uint16_t m;
    memcpy(&m, w + 2, sizeof m);
    const uint8_t *qh = has_qh ? w + 4 : NULL, *qs = w + (has_qh ? 8 : 4);
    int32_t isum = 0, xsum = 0;
    for (int j = 0; j < 32; j++) {
        isum += quant_level_1(qs, qh, j) * x->qs[j];
        xsum += x->qs[j];
    }
    *acc = cpu__qs_step(*acc, w, x, isum);
    *accm += (enc_f16_to_f32(m) * enc_f16_to_f32(x->d)) * (float)xsum;
}

static float cpu__qs_dot_1(size_t bb, int has_qh, const void *wv, const void *xv, int64_t nb)
{
    const block_q8_0 *x = xv;
    float acc = 0.0f, accm = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        cpu__qs_step_1(has_qh, (const uint8_t *)wv + (size_t)b * bb, &x[b], &acc, &accm);
    return acc + accm;
}

static float cpu__qs_dot_q4_1(const void *wv, const void *xv, int64_t nb)
{
    return cpu__qs_dot_1(sizeof(block_q4_1), 0, wv, xv, nb);
}

static float cpu__qs_dot_q5_1(const void *wv, const void *xv, int64_t nb)
{
    return cpu__qs_dot_1(sizeof(block_q5_1), 1, wv, xv, nb);
}

/* Q4_K (qh NULL) and Q5_K: adds d_w d_x isum to *acc, returns dmin_w d_x msum. */
static float cpu__qs_k45(uint16_t d, uint16_t dmin, const uint8_t *scales, const uint8_t *qh,
                         const uint8_t *qs, const block_q8_K *x, float *acc)
{
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < 8; s++) {
        int sc, m, c = s / 2, half = s % 2;
        quant_scale_min_k4(scales, s, &sc, &m);
        int32_t sub = 0;
        for (int l = 0; l < 32; l++) {
            int q = half ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
            if (qh) q |= ((qh[l] >> s) & 1) << 4;
            sub += q * x->qs[32 * s + l];
        }
        isum += sc * sub;
        msum += m * (x->bsums[2 * s] + x->bsums[2 * s + 1]);
    }
    *acc += (enc_f16_to_f32(d) * x->d) * (float)isum;
    return (enc_f16_to_f32(dmin) * x->d) * (float)msum;
}

/* One superblock's steps of a K-type row's dot (*acc, *accm; y = acc - accm). */
typedef void (*cpu__qs_kstep_fn)(const void *w, const block_q8_K *x, float *acc, float *accm);

static void cpu__qs_kstep_q4_k(const void *wv, const block_q8_K *x, float *acc, float *accm)
{
    const block_q4_K *w = wv;
    *accm += cpu__qs_k45(w->d, w->dmin, w->scales, NULL, w->qs, x, acc);
}

static void cpu__qs_kstep_q5_k(const void *wv, const block_q8_K *x, float *acc, float *accm)
{
    const block_q5_K *w = wv;
    *accm += cpu__qs_k45(w->d, w->dmin, w->scales, w->qh, w->qs, x, acc);
}

/* A K-type row's dot: its nb superblocks of bb bytes, step by step. */
static float cpu__qs_dot_k(cpu__qs_kstep_fn step, size_t bb, const void *wv, const void *xv,
                           int64_t nb)
{
    const block_q8_K *x = xv;
    float acc = 0.0f, accm = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        step((const unsigned char *)wv + (size_t)b * bb, &x[b], &acc, &accm);
    return acc - accm;
}

static void cpu__qs_kstep_q6_k(const void *wv, const block_q8_K *x, float *acc, float *accm)
{
    const block_q6_K *w = wv;
    int32_t isum = 0, corr = 0;
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = w->ql + 64 * h, *qh = w->qh + 32 * h;
        for (int i = 0; i < 4; i++)
            for (int l = 0; l < 32; l++) {
                int v = 128 * h + 32 * i + l;
                int q = ((ql[l + 32 * (i & 1)] >> (4 * (i >> 1))) & 15) |
                        (((qh[l] >> (2 * i)) & 3) << 4);
                isum += w->scales[v / 16] * q * x->qs[v];
            }
    }
    for (int g = 0; g < 16; g++)
        corr += w->scales[g] * x->bsums[g];
    float d = enc_f16_to_f32(w->d) * x->d;
    *acc += d * (float)isum;
    *accm += d * (float)(32 * corr);
}

/* Q3_K: the steps of the Q6_K block it widens to (base/quant_widen.h: the
 * same scales and levels), so that block's bits. */
static void cpu__qs_kstep_q3_k(const void *wv, const block_q8_K *x, float *acc, float *accm)
{
    block_q6_K w6;
    quant_widen_row(ENC_Q3_K, wv, &w6, QUANT_K);
    cpu__qs_kstep_q6_k(&w6, x, acc, accm);
}

/* Q2_K: groups g of 16, d sc[g] q - dmin m[g]. */
static void cpu__qs_kstep_q2_k(const void *wv, const block_q8_K *x, float *acc, float *accm)
{
    const block_q2_K *w = wv;
    int32_t isum = 0, msum = 0;
    for (int g = 0; g < 16; g++) {
        int n = g / 8, j = (g % 8) / 2, h = g % 2;
        int32_t sub = 0;
        for (int l = 0; l < 16; l++)
            sub += ((w->qs[32 * n + 16 * h + l] >> (2 * j)) & 3) * x->qs[16 * g + l];
        isum += (w->scales[g] & 15) * sub;
        msum += (w->scales[g] >> 4) * x->bsums[g];
    }
    *acc += (enc_f16_to_f32(w->d) * x->d) * (float)isum;
    *accm += (enc_f16_to_f32(w->dmin) * x->d) * (float)msum;
}

/* IQ4_XS: no correction (accm stays 0). */
static void cpu__qs_kstep_iq4_xs(const void *wv, const block_q8_K *x, float *acc, float *accm)
{
    const block_iq4_xs *w = wv;
    int32_t isum = 0;
    (void)accm;
    for (int s = 0; s < 8; s++) {
        int32_t sub = 0;
        for (int j = 0; j < 16; j++) {
            sub += quant_iq4nl_values[w->qs[16 * s + j] & 15] * x->qs[32 * s + j];
            sub += quant_iq4nl_values[w->qs[16 * s + j] >> 4] * x->qs[32 * s + j + 16];
        }
        isum += quant_iq4xs_ls(w, s) * sub;
    }
    *acc += (enc_f16_to_f32(w->d) * x->d) * (float)isum;
}

/* A K type's row dot: its superblocks' steps. */
#define CPU__QS_DOT_K(T, DT)                                                                       \
    static float cpu__qs_dot_##T(const void *wv, const void *xv, int64_t nb)                       \
    {                                                                                              \
        return cpu__qs_dot_k(cpu__qs_kstep_##T, enc_dtype_block_bytes(DT), wv, xv, nb);            \
    }
CPU__QS_DOT_K(q4_k, ENC_Q4_K)
CPU__QS_DOT_K(q5_k, ENC_Q5_K)
CPU__QS_DOT_K(q6_k, ENC_Q6_K)
CPU__QS_DOT_K(q3_k, ENC_Q3_K)
CPU__QS_DOT_K(q2_k, ENC_Q2_K)
CPU__QS_DOT_K(iq4_xs, ENC_IQ4_XS)

/* The table's entries: R rows one after another. */
#define CPU__QS_ROWS(T)                                                                            \
    static void cpu__qs_rows_##T(int R, const void *const *w, const void *x, int64_t nb, float *y) \
    {                                                                                              \
        for (int r = 0; r < R; r++)                                                                \
            y[r] = cpu__qs_dot_##T(w[r], x, nb);                                                   \
    }
CPU__QS_ROWS(q8_0)
CPU__QS_ROWS(q4_0)
CPU__QS_ROWS(iq4_nl)
CPU__QS_ROWS(q5_0)
CPU__QS_ROWS(q4_k)
CPU__QS_ROWS(q5_k)
CPU__QS_ROWS(q6_k)
CPU__QS_ROWS(iq4_xs)
CPU__QS_ROWS(q2_k)
CPU__QS_ROWS(q3_k)
CPU__QS_ROWS(q4_1)
CPU__QS_ROWS(q5_1)

/* The interleaved entries: each block of the group's 8 rows back in the
 * row layout (cpu_repack_block), then the row dots' steps, output by output. */
static void cpu__qs_x8(enc_dtype dt, int T, const void *g, const void *const *xv, int64_t nb,
                       float *const *y)
{ /* the integers from the definition: no use for the token sums */
    int32_t (*isum)(const void *, const block_q8_0 *) = dt == ENC_Q4_0     ? cpu__qs_isum_q4_0
                                                        : dt == ENC_Q5_0   ? cpu__qs_isum_q5_0
                                                        : dt == ENC_IQ4_NL ? cpu__qs_isum_iq4_nl
                                                                           : cpu__qs_isum_q8_0;
    float acc[CPU__QX_TOKENS][CPU_REPACK_ROWS] = {{0}};
    block_q8_0 blk; /* the largest of the four blocks */
    for (int64_t b = 0; b < nb; b++)
        for (int r = 0; r < CPU_REPACK_ROWS; r++) {
            cpu_repack_block(g, dt, b, r, &blk);
            for (int t = 0; t < T; t++) {
                const block_q8_0 *x = (const block_q8_0 *)xv[t] + b;
                acc[t][r] = cpu__qs_step(acc[t][r], &blk, x, isum(&blk, x));
            }
        }
    for (int t = 0; t < T; t++)
        memcpy(y[t], acc[t], sizeof acc[t]);
}

/* The table's interleaved entry of type DT (named T) through FN(DT, ...),
 * which recomputes what the token table holds. */
#define CPU__QS_X8_VIA(T, FN, DT)                                                                  \
    static void cpu__qs_x8_##T(int T_, const void *g, const void *const *x,                        \
                               const cpu__qx_tok *const *tok, int64_t nb, float *const *y)         \
    {                                                                                              \
        (void)tok;                                                                                 \
        FN(DT, T_, g, x, nb, y);                                                                   \
    }
CPU__QS_X8_VIA(q8_0, cpu__qs_x8, ENC_Q8_0)
CPU__QS_X8_VIA(q4_0, cpu__qs_x8, ENC_Q4_0)
CPU__QS_X8_VIA(q5_0, cpu__qs_x8, ENC_Q5_0)
CPU__QS_X8_VIA(iq4_nl, cpu__qs_x8, ENC_IQ4_NL)

/* Q4_1's (has_qh 0) and Q5_1's interleaved entries: the same, their
 * blocks' steps (acc and accm per output, y = acc + accm). */
static void cpu__qs_x8_1(enc_dtype dt, int T, const void *g, const void *const *xv, int64_t nb,
                         float *const *y)
{
    float acc[CPU__QX_TOKENS][CPU_REPACK_ROWS] = {{0}},
          accm[CPU__QX_TOKENS][CPU_REPACK_ROWS] = {{0}};
    block_q5_1 blk; /* the larger of the two */
    for (int64_t b = 0; b < nb; b++)
        for (int r = 0; r < CPU_REPACK_ROWS; r++) {
            cpu_repack_block(g, dt, b, r, &blk);
            for (int t = 0; t < T; t++)
                cpu__qs_step_1(dt == ENC_Q5_1, (const uint8_t *)&blk, (const block_q8_0 *)xv[t] + b,
                               &acc[t][r], &accm[t][r]);
        }
    for (int t = 0; t < T; t++)
        for (int r = 0; r < CPU_REPACK_ROWS; r++)
            y[t][r] = acc[t][r] + accm[t][r];
}

CPU__QS_X8_VIA(q4_1, cpu__qs_x8_1, ENC_Q4_1)
CPU__QS_X8_VIA(q5_1, cpu__qs_x8_1, ENC_Q5_1)

/* The superblock step of K type dt. */
static cpu__qs_kstep_fn cpu__qs_kstep_of(enc_dtype dt)
{
    switch (dt) {
    case ENC_Q4_K:
        return cpu__qs_kstep_q4_k;
    case ENC_Q5_K:
        return cpu__qs_kstep_q5_k;
    case ENC_Q6_K:
        return cpu__qs_kstep_q6_k;
    case ENC_IQ4_XS:
        return cpu__qs_kstep_iq4_xs;
    case ENC_Q2_K:
        return cpu__qs_kstep_q2_k;
    default:
        return cpu__qs_kstep_q3_k;
    }
}

/* The K types' interleaved entries: the same, the superblocks' steps of
 * the row dot (acc and accm per output, y = acc - accm). */
static void cpu__qs_x8_k(enc_dtype dt, int T, const void *g, const void *const *xv, int64_t nb,
                         float *const *y)
{
    cpu__qs_kstep_fn step = cpu__qs_kstep_of(dt);
    float acc[CPU__QX_TOKENS][CPU_REPACK_ROWS] = {{0}},
          accm[CPU__QX_TOKENS][CPU_REPACK_ROWS] = {{0}};
    union {
        block_q4_K q4;
        block_q5_K q5;
        block_q6_K q6;
        block_iq4_xs iq4;
        block_q2_K q2;
        block_q3_K q3;
    } blk; /* one superblock of any K type */
    for (int64_t b = 0; b < nb; b++)
        for (int r = 0; r < CPU_REPACK_ROWS; r++) {
            cpu_repack_block(g, dt, b, r, &blk);
            for (int t = 0; t < T; t++)
                step(&blk, (const block_q8_K *)xv[t] + b, &acc[t][r], &accm[t][r]);
        }
    for (int t = 0; t < T; t++)
        for (int r = 0; r < CPU_REPACK_ROWS; r++)
            y[t][r] = acc[t][r] - accm[t][r];
}

CPU__QS_X8_VIA(q4_k, cpu__qs_x8_k, ENC_Q4_K)
CPU__QS_X8_VIA(q5_k, cpu__qs_x8_k, ENC_Q5_K)
CPU__QS_X8_VIA(q6_k, cpu__qs_x8_k, ENC_Q6_K)
CPU__QS_X8_VIA(iq4_xs, cpu__qs_x8_k, ENC_IQ4_XS)
CPU__QS_X8_VIA(q2_k, cpu__qs_x8_k, ENC_Q2_K)
CPU__QS_X8_VIA(q3_k, cpu__qs_x8_k, ENC_Q3_K)

const cpu__quant_table cpu__quant_scalar = {
    .name = "scalar",
    .x8 =
        {
            [ENC_Q8_0] = cpu__qs_x8_q8_0,
            [ENC_Q4_0] = cpu__qs_x8_q4_0,
            [ENC_IQ4_NL] = cpu__qs_x8_iq4_nl,
            [ENC_Q5_0] = cpu__qs_x8_q5_0,
            [ENC_Q4_K] = cpu__qs_x8_q4_k,
            [ENC_Q5_K] = cpu__qs_x8_q5_k,
            [ENC_Q6_K] = cpu__qs_x8_q6_k,
            [ENC_IQ4_XS] = cpu__qs_x8_iq4_xs,
            [ENC_Q2_K] = cpu__qs_x8_q2_k,
            [ENC_Q3_K] = cpu__qs_x8_q3_k,
            [ENC_Q4_1] = cpu__qs_x8_q4_1,
            [ENC_Q5_1] = cpu__qs_x8_q5_1,
        },
    .dot =
        {
            [ENC_Q8_0] = cpu__qs_rows_q8_0,
            [ENC_Q4_0] = cpu__qs_rows_q4_0,
            [ENC_IQ4_NL] = cpu__qs_rows_iq4_nl,
            [ENC_Q5_0] = cpu__qs_rows_q5_0,
            [ENC_Q4_K] = cpu__qs_rows_q4_k,
            [ENC_Q5_K] = cpu__qs_rows_q5_k,
            [ENC_Q6_K] = cpu__qs_rows_q6_k,
            [ENC_IQ4_XS] = cpu__qs_rows_iq4_xs,
            [ENC_Q2_K] = cpu__qs_rows_q2_k,
            [ENC_Q3_K] = cpu__qs_rows_q3_k,
            [ENC_Q4_1] = cpu__qs_rows_q4_1,
            [ENC_Q5_1] = cpu__qs_rows_q5_1,
        },
};

bool cpu_reads_block_dtype(enc_dtype dt)
{
    return (unsigned)dt < ENC_DTYPE_COUNT && cpu__quant_scalar.dot[dt] != NULL;
}

/* --- table choice ---------------------------------------------------------- */

#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
/* AVX512_VNNI: CPUID.(EAX=7, ECX=0):ECX bit 11. */
static int cpu__has_avx512_vnni(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & (1u << 11)) != 0;
}

static int cpu__vnni;
static pthread_once_t cpu__vnni_once = PTHREAD_ONCE_INIT;
static void cpu__detect_vnni(void)
{
    cpu__vnni = cpu__has_avx512_vnni();
}
#endif

const cpu__quant_table *cpu__quant_table_for(cpu_isa isa)
{
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
    if (isa == CPU_ISA_AVX512) {
        pthread_once(&cpu__vnni_once, cpu__detect_vnni);
        return cpu__vnni ? &cpu__quant_vnni : &cpu__quant_avx2;
    }
#ifdef ENCORE_HAVE_AVXVNNI
    if (isa == CPU_ISA_AVX2_VNNI) return &cpu__quant_avxvnni; /* supported only when built */
#endif
    if (isa == CPU_ISA_AVX2 || isa == CPU_ISA_AVX2_VNNI) return &cpu__quant_avx2;
#endif
    (void)isa;
    return &cpu__quant_scalar;
}

/* --- the matmul loop ------------------------------------------------------- */

enum {
    CPU__Q_X_BLOCK_BYTES = 256 * 1024, /* activations per token block (L2) */
    CPU__Q_TILE_ROWS = 4,              /* weight rows per dot or tile call */
};

/* The sizes both loops walk: blocks per row, bytes per weight and
 * activation row, tokens per token block. */
typedef struct cpu__qsizes {
    int64_t nb, tb;
    size_t wrb, xrb;
} cpu__qsizes;

static cpu__qsizes cpu__qsizes_of(enc_dtype w_dtype, int64_t k)
{
    cpu__qsizes z = {.nb = k / enc_dtype_block_elems(w_dtype),
                     .wrb = enc_dtype_row_bytes(w_dtype, k),
                     .xrb = enc_dtype_row_bytes(quant_dot_dtype(w_dtype), k)};
    z.tb = (int64_t)(CPU__Q_X_BLOCK_BYTES / (z.xrb ? z.xrb : 1));
    z.tb = z.tb < 1 ? 1 : z.tb;
    return z;
}

/* The token table of the interleaved kernels (cpu__qx_tok): tok[t * nb +
 * b] token t's block b, for the tokens [t0, t1), made once per token block
 * for all the groups it meets, with 8 times the block's byte sum (Q4_0's
 * level offset; the VNNI Q8_0 kernel's, times 16; the AVX2 Q8_0 one leaves
 * it unread: 32 adds per token and block, against that block's 32 products
 * with every row of the matrix). */
enum { CPU__QX_TOK_MAX = 8192 }; /* entries of a token block's table, on the stack */

static void cpu__qx_toks(const unsigned char *xb, size_t xrb, int64_t t0, int64_t t1, int64_t nb,
                         cpu__qx_tok *tok)
{
    for (int64_t t = t0; t < t1; t++)
        for (int64_t b = 0; b < nb; b++) {
            const block_q8_0 *x = (const block_q8_0 *)(xb + (size_t)t * xrb) + b;
            int32_t s = 0;
            for (int j = 0; j < 32; j++)
                s += x->qs[j];
            tok[(t - t0) * nb + b] = (cpu__qx_tok){.dx = enc_f16_to_f32(x->d), .xs8 = 8 * s};
        }
}

/* Rows [n0, n1) of the whole groups of an interleaved W (n0 a multiple of
 * 8): per token block, each group meets every token, CPU__QX_TOKENS at a
 * time and the rest in one call; Q4_0/Q8_0: the token table made first where it fits
 * CPU__QX_TOK_MAX (the token block shrunk to fit), else by the kernel. A
 * call of several tokens takes two groups at a time where the table has a
 * 16-row kernel (fn16; same bits), the last odd group alone. */
static void cpu__matmul_x8(cpu__qx8_fn fn8, cpu__qx8_fn fn16, const void *x, int64_t n_tokens,
                           int64_t k, const void *w, enc_dtype w_dtype, int64_t n_out, int64_t n0,
                           int64_t n1, float *y)
{
    cpu__qsizes z = cpu__qsizes_of(w_dtype, k);
    const unsigned char *wb = w, *xb = x;
    cpu__qx_tok tok[CPU__QX_TOK_MAX];
    int has_tok = quant_dot_dtype(w_dtype) == ENC_Q8_0 && z.nb <= CPU__QX_TOK_MAX;
    if (has_tok && z.tb * z.nb > CPU__QX_TOK_MAX) z.tb = CPU__QX_TOK_MAX / z.nb;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += z.tb) {
        int64_t t1 = t0 + z.tb < n_tokens ? t0 + z.tb : n_tokens;
        if (has_tok) cpu__qx_toks(xb, z.xrb, t0, t1, z.nb, tok);
        for (int64_t r0 = n0, step; r0 < n1; r0 += step) {
            int pair = fn16 && n_tokens > 1 && n1 - r0 >= 2 * CPU_REPACK_ROWS;
            cpu__qx8_fn fn = pair ? fn16 : fn8;
            step = pair ? 2 * CPU_REPACK_ROWS : CPU_REPACK_ROWS;
            for (int64_t t = t0; t < t1; t += CPU__QX_TOKENS) {
                int T = t1 - t < CPU__QX_TOKENS ? (int)(t1 - t) : CPU__QX_TOKENS;
                const void *xp[CPU__QX_TOKENS];
                float *yp[CPU__QX_TOKENS];
                const cpu__qx_tok *tp[CPU__QX_TOKENS];
                for (int i = 0; i < T; i++) {
                    xp[i] = xb + (size_t)(t + i) * z.xrb;
                    yp[i] = y + (t + i) * n_out + r0;
                    tp[i] = has_tok ? tok + (t + i - t0) * z.nb : NULL;
                }
                fn(T, wb + (size_t)r0 * z.wrb, xp, has_tok ? tp : NULL, z.nb, yp);
            }
        }
    }
}

void cpu__matmul_quant(const cpu__quant_table *qt, const void *x, int64_t n_tokens, int64_t k,
                       const void *w, enc_dtype w_dtype, int64_t n_out, int64_t n0, int64_t n1,
                       float *y, int packed)
{
    if (packed) { /* the whole groups interleaved, the tail rows (n_out % 8) in rows */
        int64_t ng = n_out / CPU_REPACK_ROWS * CPU_REPACK_ROWS, g1 = n1 < ng ? n1 : ng;
        ENC_ASSERT(n0 % CPU_REPACK_ROWS == 0 && qt->x8[w_dtype]);
        if (n0 < g1)
            cpu__matmul_x8(qt->x8[w_dtype], qt->x16[w_dtype], x, n_tokens, k, w, w_dtype, n_out, n0,
                           g1, y);
        n0 = n0 > ng ? n0 : ng;
        if (n0 >= n1) return;
    }
    cpu__qdot_fn dot = qt->dot[w_dtype];
    cpu__qtile_fn tile = qt->tile[w_dtype];
    int nt = tile ? qt->tile_tokens[w_dtype] : 1;
    cpu__qsizes z = cpu__qsizes_of(w_dtype, k);
    int64_t nb = z.nb;
    size_t wrb = z.wrb, xrb = z.xrb;
    const unsigned char *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += z.tb) {
        int64_t t1 = t0 + z.tb < n_tokens ? t0 + z.tb : n_tokens;
        for (int64_t r0 = n0; r0 < n1; r0 += CPU__Q_TILE_ROWS) {
            int R = n1 - r0 < CPU__Q_TILE_ROWS ? (int)(n1 - r0) : CPU__Q_TILE_ROWS;
            const void *wrow[CPU__Q_TILE_ROWS];
            for (int r = 0; r < R; r++)
                wrow[r] = wb + (size_t)(r0 + r) * wrb;
            int64_t t = t0;
            if (tile && R == CPU__Q_TILE_ROWS) /* nt tokens share the weights' unpacking */
                for (; t + nt <= t1; t += nt) {
                    const void *xp[CPU__Q_TILE_TOKENS];
                    float *yp[CPU__Q_TILE_TOKENS];
                    for (int i = 0; i < nt; i++) {
                        xp[i] = xb + (size_t)(t + i) * xrb;
                        yp[i] = y + (t + i) * n_out + r0;
                    }
                    tile(wrow, xp, nb, yp);
                }
            for (; t < t1; t++)
                dot(R, wrow, xb + (size_t)t * xrb, nb, y + t * n_out + r0);
        }
    }
}

/* --- activations ------------------------------------------------------------ */

void cpu_quantize_rows(const float *x, int64_t rows, int64_t k, enc_dtype dtype, void *out, int ith,
                       int nth)
{
    int64_t per = (rows + nth - 1) / nth, r0 = per * ith, r1 = r0 + per;
    r1 = r1 < rows ? r1 : rows;
    if (dtype == ENC_BF16) {
        for (int64_t i = r0 * k; i < r1 * k; i++)
            ((uint16_t *)out)[i] = enc_f32_to_bf16(x[i]);
        return;
    }
    size_t rb = enc_dtype_row_bytes(dtype, k);
    const cpu__quant_table *qt = cpu__quant_table_for(cpu_kernels_init());
    int (*row)(enc_dtype, const float *, void *, int64_t) =
        qt->quantize_row ? qt->quantize_row : quant_quantize_row;
    for (int64_t r = r0; r < r1; r++)
        row(dtype, x + r * k, (unsigned char *)out + (size_t)r * rb, k);
}
