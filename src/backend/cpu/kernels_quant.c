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
 *                      for the type (4 tokens x 4 rows) */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "backend/cpu/kernels_quant_impl.h"
#include "base/quant.h"

#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
#include <cpuid.h>
#endif

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* --- portable dots --------------------------------------------------------- */

static float cpu__qs_dot_q8_0(const void *wv, const void *xv, int64_t nb)
{
    const block_q8_0 *w = wv, *x = xv;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum = 0;
        for (int j = 0; j < 32; j++)
            isum += w[b].qs[j] * x[b].qs[j];
        acc += (enc_f16_to_f32(w[b].d) * enc_f16_to_f32(x[b].d)) * (float)isum;
    }
    return acc;
}

static float cpu__qs_dot_q4_0(const void *wv, const void *xv, int64_t nb)
{
    const block_q4_0 *w = wv;
    const block_q8_0 *x = xv;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum = 0;
        for (int j = 0; j < 16; j++)
            isum +=
                ((w[b].qs[j] & 15) - 8) * x[b].qs[j] + ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
        acc += (enc_f16_to_f32(w[b].d) * enc_f16_to_f32(x[b].d)) * (float)isum;
    }
    return acc;
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

static float cpu__qs_dot_q4_k(const void *wv, const void *xv, int64_t nb)
{
    const block_q4_K *w = wv;
    const block_q8_K *x = xv;
    float acc = 0.0f, accm = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        accm += cpu__qs_k45(w[b].d, w[b].dmin, w[b].scales, NULL, w[b].qs, &x[b], &acc);
    return acc - accm;
}

static float cpu__qs_dot_q5_k(const void *wv, const void *xv, int64_t nb)
{
    const block_q5_K *w = wv;
    const block_q8_K *x = xv;
    float acc = 0.0f, accm = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        accm += cpu__qs_k45(w[b].d, w[b].dmin, w[b].scales, w[b].qh, w[b].qs, &x[b], &acc);
    return acc - accm;
}

static float cpu__qs_dot_q6_k(const void *wv, const void *xv, int64_t nb)
{
    const block_q6_K *w = wv;
    const block_q8_K *x = xv;
    float acc = 0.0f, accm = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum = 0, corr = 0;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            for (int i = 0; i < 4; i++)
                for (int l = 0; l < 32; l++) {
                    int v = 128 * h + 32 * i + l;
                    int q = ((ql[l + 32 * (i & 1)] >> (4 * (i >> 1))) & 15) |
                            (((qh[l] >> (2 * i)) & 3) << 4);
                    isum += w[b].scales[v / 16] * q * x[b].qs[v];
                }
        }
        for (int g = 0; g < 16; g++)
            corr += w[b].scales[g] * x[b].bsums[g];
        float d = enc_f16_to_f32(w[b].d) * x[b].d;
        acc += d * (float)isum;
        accm += d * (float)(32 * corr);
    }
    return acc - accm;
}

/* The table's entries: R rows one after another. */
#define CPU__QS_ROWS(T)                                                                            \
    static void cpu__qs_rows_##T(int R, const void *const *w, const void *x, int64_t nb, float *y) \
    {                                                                                              \
        for (int r = 0; r < R; r++)                                                                \
            y[r] = cpu__qs_dot_##T(w[r], x, nb);                                                   \
    }
CPU__QS_ROWS(q8_0)
CPU__QS_ROWS(q4_0)
CPU__QS_ROWS(q4_k)
CPU__QS_ROWS(q5_k)
CPU__QS_ROWS(q6_k)

const cpu__quant_table cpu__quant_scalar = {
    .name = "scalar",
    .dot =
        {
            [ENC_Q8_0] = cpu__qs_rows_q8_0,
            [ENC_Q4_0] = cpu__qs_rows_q4_0,
            [ENC_Q4_K] = cpu__qs_rows_q4_k,
            [ENC_Q5_K] = cpu__qs_rows_q5_k,
            [ENC_Q6_K] = cpu__qs_rows_q6_k,
        },
};

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
    if (isa == CPU_ISA_AVX2) return &cpu__quant_avx2;
#endif
    (void)isa;
    return &cpu__quant_scalar;
}

/* --- the matmul loop ------------------------------------------------------- */

enum {
    CPU__Q_X_BLOCK_BYTES = 256 * 1024, /* activations per token block (L2) */
    CPU__Q_TILE_ROWS = 4,              /* weight rows per dot or tile call */
};

void cpu__matmul_quant(const cpu__quant_table *qt, const void *x, int64_t n_tokens, int64_t k,
                       const void *w, enc_dtype w_dtype, int64_t n_out, int64_t n0, int64_t n1,
                       float *y)
{
    cpu__qdot_fn dot = qt->dot[w_dtype];
    cpu__qtile_fn tile = qt->tile[w_dtype];
    int nt = tile ? qt->tile_tokens[w_dtype] : 1;
    int64_t nb = k / enc_dtype_block_elems(w_dtype);
    size_t wrb = enc_dtype_row_bytes(w_dtype, k);
    size_t xrb = enc_dtype_row_bytes(quant_dot_dtype(w_dtype), k);
    const unsigned char *wb = w, *xb = x;
    int64_t tb = (int64_t)(CPU__Q_X_BLOCK_BYTES / (xrb ? xrb : 1));
    tb = tb < 1 ? 1 : tb;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += tb) {
        int64_t t1 = t0 + tb < n_tokens ? t0 + tb : n_tokens;
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
    size_t rb = enc_dtype_row_bytes(dtype, k);
    const cpu__quant_table *qt = cpu__quant_table_for(cpu_kernels_init());
    int (*row)(enc_dtype, const float *, void *, int64_t) =
        qt->quantize_row ? qt->quantize_row : quant_quantize_row;
    for (int64_t r = r0; r < r1; r++)
        row(dtype, x + r * k, (unsigned char *)out + (size_t)r * rb, k);
}
