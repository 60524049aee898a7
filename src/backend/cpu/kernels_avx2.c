/* kernels_avx2.c - the matmul and attention kernels for AVX2 + FMA + F16C.
 *
 * Defines the 8-lane vector vocabulary of kernels_impl.h and instantiates the
 * shared bodies as cpu__kernels_avx2. kernels.c calls it only after a
 * run-time check of the CPU. bf16 -> f32 is a zero-extend and a shift (no
 * dot-product instructions that round the activations); f16 -> f32 is F16C.
 *
 * Register tile for prefill: 4 tokens x 3 weight rows = 12 accumulators of
 * the 16 ymm registers; for decode, 1 token x 2 rows. Two accumulators per
 * output (CPU__V_P): a one-token tile keeps all four in registers, four
 * independent FMA chains for the loads to run ahead of (one chain per row
 * streamed a row from L3 at 15-17 GB/s on a Zen 3 core, two at 21-27); a
 * tile of several tokens runs one pass per accumulator. */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "kernels_avx2.c needs -mavx2 -mfma -mf16c (CMake adds them to *_avx2.c)"
#endif

#include <immintrin.h>
#include <string.h>

#include "backend/cpu/kernels_impl.h"
#include "base/sample_math.h"

/* Lanes [0, n) all ones, the rest zero (n < 8). */
static inline __m256i cpu__avx2_mask(int n)
{
    static const int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(bits + 8 - n));
}

/* n < 8 halves from p, zero-padded to 8 (reads only n). */
static inline __m128i cpu__avx2_load_u16_part(const uint16_t *p, int n)
{
    uint16_t b[8] = {0};
    memcpy(b, p, (size_t)n * sizeof *p);
    return _mm_loadu_si128((const __m128i *)b);
}

static inline __m256 cpu__avx2_bf16(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)): the one order every dot uses. */
static inline float cpu__avx2_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#define V __m256
#define VW 8
#define CPU__V_TM 4
#define CPU__V_RM 3
#define CPU__V_RD 2 /* decode tile rows: 2 beat 4 and 8 end to end on the 0.6B geometry */
#define CPU__V_P 2   /* accumulators per output */
#define CPU__V_ACC 8 /* at most this many in registers at once, else a pass each */
#define CPU__V_PV 8
/* f32 weights, row by row: with all three rows' blocks in registers GCC
 * spilled an accumulator of the 4 x 3 tile (a store and a load every step;
 * prefill a median 31.0 GFLOP/s on one Zen 3 core against 35.3 this way,
 * BENCHMARKS.md). The AVX-512 tile spills that way instead, so there it
 * stays as it is. */
#define CPU__V_F32_ROW_OUTER 1
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(s) _mm256_set1_ps(s)
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_LOAD_BF16(p) cpu__avx2_bf16(_mm_loadu_si128((const __m128i *)(p)))
#define V_LOAD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define V_LOAD_I8(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#define V_LOAD_PART(p, n) _mm256_maskload_ps(p, cpu__avx2_mask(n))
#define V_LOAD_BF16_PART(p, n) cpu__avx2_bf16(cpu__avx2_load_u16_part(p, n))
#define V_LOAD_F16_PART(p, n) _mm256_cvtph_ps(cpu__avx2_load_u16_part(p, n))
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_STORE_PART(p, v, n) _mm256_maskstore_ps(p, cpu__avx2_mask(n), v)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_SEL_NEG(c, a, b) _mm256_blendv_ps(b, a, c)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_ANY_EQ(v, s) (_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(s), _CMP_EQ_OQ)) != 0)
#define V_POW2I(n)                                                                                 \
    _mm256_castsi256_ps(                                                                           \
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
#define V_HSUM(v) cpu__avx2_hsum(v)
#define CPU__V_SAMPLE_WEIGHTS smath_weights_avx2 /* base/sample_math_avx2.c */
#define CPU__V_SAMPLE_CHUNK smath_chunk_all_avx2 /* base/sample_math_avx2.c */
#define CPU__V_TABLE cpu__kernels_avx2
#define CPU__V_ISA CPU_ISA_AVX2
#define CPU__V_TABLE_ALSO cpu__kernels_avx2_vnni /* avxvnni: these kernels, the vpdpbusd dots */
#define CPU__V_ISA_ALSO CPU_ISA_AVX2_VNNI
#include "backend/cpu/kernels_impl.h"

#else
typedef int cpu__avx2_unavailable; /* not x86-64: nothing to build */
#endif
