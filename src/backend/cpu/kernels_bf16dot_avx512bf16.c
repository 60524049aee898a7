/* kernels_bf16dot_avx512bf16.c - y = x W^T over bf16 weights and bf16
 * activations by vdpbf16ps (AVX512-BF16), for --bf16-activations.
 *
 * The dot of one output: a 16-lane f32 accumulator takes the k values in
 * chunks of 32 in increasing order, one vdpbf16ps a chunk (lane j adds the
 * products of pair j, both exact in f32; the tail chunk zero-filled by a
 * masked load), then the lanes are summed in the fixed tree of
 * cpu__avx512_hsum. Every accumulator sees the same chunks in the same order
 * whatever tile it sits in, so a token's bits do not depend on the tokens or
 * rows beside it (DESIGN principle 5). Twice the multiply-adds of an f32
 * FMA an instruction: the compute-bound matmuls (prefill, a decode batch's
 * lm_head) take half the time; rounding the activations to bf16 first is
 * what llama.cpp and PyTorch do for a bf16 model.
 *
 * Tiles: up to 4 tokens x 6 rows (24 accumulators of the 32 zmm registers,
 * as the f32 kernels of kernels_avx512.c); one token: 2 rows, each the next
 * of its own run of rows (kernels_impl.h, cpu__v_matmul_one). */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD) && defined(ENCORE_HAVE_AVX512BF16)

#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "kernels_bf16dot_avx512bf16.c needs -mavx512bf16 -mavx512bw (CMake adds them)"
#endif

#include <immintrin.h>

#include "backend/cpu/kernels_avx512_hsum.h"
#include "backend/cpu/kernels_bf16dot.h"

enum { BD_TM = 4, BD_RM = 6, BD_RD = 2, BD_CHUNK = 32 };

#define BD_INLINE static inline __attribute__((always_inline))
#if defined(__clang__)
#define BD_UNROLL _Pragma("clang loop unroll(full)")
#else
#define BD_UNROLL _Pragma("GCC unroll 8")
#endif

BD_INLINE __m512bh cpu__bd_load(const uint16_t *p)
{
    return (__m512bh)_mm512_loadu_si512(p);
}

/* n (1..31) bf16 values at p, the rest of the vector zero. */
BD_INLINE __m512bh cpu__bd_load_part(const uint16_t *p, int64_t n)
{
    return (__m512bh)_mm512_maskz_loadu_epi16((__mmask32)((1ull << n) - 1ull), p);
}

/* y[t * ldy + r] = dot(x[t * ldx ..], w[r][..]) over k for t < T, r < R
 * (T and R constants at each call site: the accumulators stay in registers).
 * Whole chunks first, then the tail by masked loads: one loop with a masked
 * load chosen per chunk ran at two thirds of the speed. */
BD_INLINE void cpu__bd_tile(int T, int R, const uint16_t *x, int64_t ldx, const uint16_t *const *w,
                            int64_t k, float *y, int64_t ldy)
{
    __m512 acc[BD_TM][BD_RM];
    BD_UNROLL for (int t = 0; t < T; t++)
    {
        BD_UNROLL for (int r = 0; r < R; r++)
        {
            acc[t][r] = _mm512_setzero_ps();
        }
    }
    int64_t i = 0;
    for (; i + BD_CHUNK <= k; i += BD_CHUNK) {
        __m512bh wv[BD_RM];
        BD_UNROLL for (int r = 0; r < R; r++)
        {
            wv[r] = cpu__bd_load(w[r] + i);
        }
        BD_UNROLL for (int t = 0; t < T; t++)
        {
            __m512bh xv = cpu__bd_load(x + t * ldx + i);
            BD_UNROLL for (int r = 0; r < R; r++)
            {
                acc[t][r] = _mm512_dpbf16_ps(acc[t][r], xv, wv[r]);
            }
        }
    }
    if (i < k) {
        __m512bh wv[BD_RM];
        BD_UNROLL for (int r = 0; r < R; r++)
        {
            wv[r] = cpu__bd_load_part(w[r] + i, k - i);
        }
        BD_UNROLL for (int t = 0; t < T; t++)
        {
            __m512bh xv = cpu__bd_load_part(x + t * ldx + i, k - i);
            BD_UNROLL for (int r = 0; r < R; r++)
            {
                acc[t][r] = _mm512_dpbf16_ps(acc[t][r], xv, wv[r]);
            }
        }
    }
    BD_UNROLL for (int t = 0; t < T; t++)
    {
        BD_UNROLL for (int r = 0; r < R; r++)
        {
            y[t * ldy + r] = cpu__avx512_hsum(acc[t][r]);
        }
    }
}

#define BD_CASE(T_, R_)                                                                            \
    case (T_)*8 + (R_):                                                                            \
        cpu__bd_tile(T_, R_, x, ldx, w, k, y, ldy);                                                \
        return

/* A T x R tile for the shapes the loops below make (T <= 4 with R = 6 or
 * 1, and 1 x 2), any other shape one output at a time. */
static void cpu__bd_tiles(int T, int R, const uint16_t *x, int64_t ldx, const uint16_t *const *w,
                          int64_t k, float *y, int64_t ldy)
{
    switch (T * 8 + R) {
        BD_CASE(1, BD_RD);
        BD_CASE(1, BD_RM);
        BD_CASE(1, 1);
        BD_CASE(2, BD_RM);
        BD_CASE(2, 1);
        BD_CASE(3, BD_RM);
        BD_CASE(3, 1);
        BD_CASE(4, BD_RM);
        BD_CASE(4, 1);
    default:
        break;
    }
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++)
            cpu__bd_tile(1, 1, x + t * ldx, ldx, w + r, k, y + t * ldy + r, ldy);
}

/* One token tile x[T, k] against rows [r0, r1) in tiles of BD_RM. */
static void cpu__bd_rows_tile(int T, const uint16_t *x, int64_t k, const uint16_t *w, int64_t r0,
                              int64_t r1, float *y, int64_t n_out)
{
    const uint16_t *wrow[BD_RM];
    for (int64_t r = r0; r < r1; r += BD_RM) {
        int R = r1 - r >= BD_RM ? BD_RM : (int)(r1 - r);
        for (int i = 0; i < R; i++)
            wrow[i] = w + (r + i) * k;
        cpu__bd_tiles(T, R, x, k, wrow, k, y + r, n_out);
    }
}

/* One token: BD_RD runs of consecutive rows, tile i taking row i of each
 * (monotonic streams the hardware prefetch follows). */
static void cpu__bd_one(const uint16_t *x, int64_t k, const uint16_t *w, int64_t n0, int64_t n1,
                        float *y)
{
    int64_t h = (n1 - n0 + BD_RD - 1) / BD_RD;
    for (int64_t i = 0; i < h; i++) {
        const uint16_t *wrow[BD_RD];
        int64_t row[BD_RD];
        float out[BD_RD];
        int R = 0;
        for (int j = 0; j < BD_RD; j++) {
            int64_t r = n0 + j * h + i;
            if (r >= n1) break;
            row[R] = r;
            wrow[R++] = w + r * k;
        }
        cpu__bd_tiles(1, R, x, k, wrow, k, out, 1);
        for (int j = 0; j < R; j++)
            y[row[j]] = out[j];
    }
}

/* x rows that stay in L2 (a decode batch): rows in groups of two tiles,
 * each group read from memory by the first token tile, from L1 by the
 * others. Larger x (a prefill): blocks of rows of about 192 KiB that stay
 * in L2 while every token tile passes over them. */
enum { BD_X_L2 = 256 * 1024, BD_ROW_BLOCK_BYTES = 192 * 1024 };

void cpu_bf16dot_rows(const uint16_t *x, int64_t n_tokens, int64_t k, const uint16_t *w,
                      int64_t n_out, int64_t n0, int64_t n1, float *y)
{
    if (n_tokens == 1) {
        cpu__bd_one(x, k, w, n0, n1, y);
        return;
    }
    int64_t group = 2 * BD_RM;
    if (n_tokens * k * 2 > BD_X_L2) {
        int64_t rows = BD_ROW_BLOCK_BYTES / (2 * k > 0 ? 2 * k : 1);
        group = (rows < BD_RM ? BD_RM : rows) / BD_RM * BD_RM;
    }
    for (int64_t g0 = n0; g0 < n1; g0 += group) {
        int64_t g1 = g0 + group < n1 ? g0 + group : n1;
        for (int64_t t = 0; t < n_tokens; t += BD_TM) {
            int T = n_tokens - t >= BD_TM ? BD_TM : (int)(n_tokens - t);
            cpu__bd_rows_tile(T, x + t * k, k, w, g0, g1, y + t * n_out, n_out);
        }
    }
}

int cpu_bf16dot_tile_rows(void)
{
    return BD_RM;
}

#else
typedef int cpu__bf16dot_unavailable; /* no AVX512-BF16 compiler support: nothing to build */
#endif
