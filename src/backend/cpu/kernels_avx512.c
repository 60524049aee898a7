/* kernels_avx512.c - the matmul and attention kernels for AVX-512 F/BW/VL.
 *
 * Defines the 16-lane vector vocabulary of kernels_impl.h and instantiates
 * the shared bodies as cpu__kernels_avx512. kernels.c calls it only after a
 * run-time check of the CPU. Tails use masked loads (AVX-512 BW for 16-bit
 * lanes). bf16 -> f32 is a zero-extend and a shift; f16 -> f32 is vcvtph2ps.
 * No vdpbf16ps here: it rounds the activations to bf16, which only
 * --bf16-activations asks for (kernels_bf16dot_avx512bf16.c).
 *
 * Register tile for prefill: 4 tokens x 6 weight rows = 24 accumulators of
 * the 32 zmm registers (the best of 6x4, 3x8, 4x4, 4x5, 8x3 measured); for
 * decode, 1 token x 4 rows. */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__FMA__)
#error "kernels_avx512.c needs -mavx512f -mavx512bw -mavx512vl -mfma (CMake adds them)"
#endif

#include <immintrin.h>

#include "backend/cpu/kernels_avx512_hsum.h"
#include "backend/cpu/kernels_impl.h"
#include "base/sample_math.h"

static inline __mmask16 cpu__avx512_mask(int n)
{
    return (__mmask16)((1u << n) - 1u);
}

static inline __m512 cpu__avx512_bf16(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

#define V __m512
#define VW 16
#define CPU__V_TM 4
#define CPU__V_RM 6
#define CPU__V_RD 2 /* decode tile rows: 2 beat 4 and 8 end to end on the 0.6B geometry */
#define CPU__V_PV 16
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(s) _mm512_set1_ps(s)
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_LOAD_BF16(p) cpu__avx512_bf16(_mm256_loadu_si256((const __m256i *)(p)))
#define V_LOAD_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define V_LOAD_I8(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))))
#define V_LOAD_PART(p, n) _mm512_maskz_loadu_ps(cpu__avx512_mask(n), p)
#define V_LOAD_BF16_PART(p, n) cpu__avx512_bf16(_mm256_maskz_loadu_epi16(cpu__avx512_mask(n), p))
#define V_LOAD_F16_PART(p, n) _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(cpu__avx512_mask(n), p))
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_STORE_PART(p, v, n) _mm512_mask_storeu_ps(p, cpu__avx512_mask(n), v)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_SEL_NEG(c, a, b)                                                                         \
    _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(_mm512_castps_si512(c), _mm512_setzero_si512()),  \
                         b, a)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_ANY_EQ(v, s) (_mm512_cmpeq_ps_mask(v, _mm512_set1_ps(s)) != 0)
#define V_POW2I(n)                                                                                 \
    _mm512_castsi512_ps(                                                                           \
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))
#define V_HSUM(v) cpu__avx512_hsum(v)
#define CPU__V_SAMPLE_WEIGHTS smath_weights_avx512 /* base/sample_math_avx512.c */
#define CPU__V_SAMPLE_CHUNK smath_chunk_all_avx512 /* base/sample_math_avx512.c */
#define CPU__V_TABLE cpu__kernels_avx512
#define CPU__V_ISA CPU_ISA_AVX512
#include "backend/cpu/kernels_impl.h"

#else
typedef int cpu__avx512_unavailable; /* not x86-64: nothing to build */
#endif
