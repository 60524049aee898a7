/* kernels_quant_avx2.c - the block dot products of kernels_quant_impl.h for
 * AVX2 + FMA + F16C: 4-byte groups of u8 x s8 products summed into int32
 * lanes by vpmaddubsw (pairs, int16) then vpmaddwd (with ones, or with the
 * sub-block scales). kernels_quant.c calls it after a run-time CPU check. */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "kernels_quant_avx2.c needs -mavx2 -mfma -mf16c (CMake adds them to *_avx2.c)"
#endif

#include <immintrin.h>

#define CPU__Q_DOT4(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
#define CPU__Q_DOT4_SCALED(u, s, sc16) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), sc16)
#define CPU__Q_TABLE cpu__quant_avx2
#define CPU__Q_NAME "avx2"
#include "backend/cpu/kernels_quant_impl.h"

#else
typedef int cpu__quant_avx2_unavailable; /* not x86-64: nothing to build */
#endif
