/* sample_math_avx2.c - the sampler's weights four doubles at a time
 * (smath_weights_avx2): base/sample_math_lanes.h over AVX2 vectors, the
 * portable loop's bits. */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX2__)
#error "sample_math_avx2.c needs -mavx2 (CMake adds it to *_avx2.c)"
#endif

#include <immintrin.h>

#include "base/sample_math.h"

#define SM_VEC __m256d
#define SM_IVEC __m256i
#define SM_LANES 4
#define SM_SET1(c) _mm256_set1_pd(c)
#define SM_ISET1(c) _mm256_set1_epi64x(c)
#define SM_ADD(a, b) _mm256_add_pd(a, b)
#define SM_SUB(a, b) _mm256_sub_pd(a, b)
#define SM_MUL(a, b) _mm256_mul_pd(a, b)
#define SM_IADD(a, b) _mm256_add_epi64(a, b)
#define SM_ISUB(a, b) _mm256_sub_epi64(a, b)
#define SM_SHL52(a) _mm256_slli_epi64(a, 52)
#define SM_AS_INT(v) _mm256_castpd_si256(v)
#define SM_AS_VEC(i) _mm256_castsi256_pd(i)
#define SM_LOAD(x) _mm256_cvtps_pd(_mm_loadu_ps(x))
#define SM_STORE(w, v) _mm256_storeu_pd(w, v)
#define SM_KEEP_GE(v, a, c) _mm256_and_pd(v, _mm256_cmp_pd(a, c, _CMP_GE_OQ))
#define SM_DROP_LT(v, c) _mm256_andnot_pd(_mm256_cmp_pd(v, c, _CMP_LT_OQ), v)
#define SM_WEIGHTS smath_weights_avx2
#include "base/sample_math_lanes.h"

#else
typedef int smath__avx2_unavailable; /* not x86-64: nothing to build */
#endif
