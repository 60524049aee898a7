/* sample_math_avx512.c - the sampler's weights eight doubles at a time
 * (smath_weights_avx512): base/sample_math_lanes.h over AVX-512 vectors,
 * the portable loop's bits. */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX512F__)
#error "sample_math_avx512.c needs -mavx512f (CMake adds it to *_avx512.c)"
#endif

#include <immintrin.h>

#include "base/sample_math.h"

#define SM_VEC __m512d
#define SM_IVEC __m512i
#define SM_LANES 8
#define SM_SET1(c) _mm512_set1_pd(c)
#define SM_ISET1(c) _mm512_set1_epi64(c)
#define SM_ADD(a, b) _mm512_add_pd(a, b)
#define SM_SUB(a, b) _mm512_sub_pd(a, b)
#define SM_MUL(a, b) _mm512_mul_pd(a, b)
#define SM_IADD(a, b) _mm512_add_epi64(a, b)
#define SM_ISUB(a, b) _mm512_sub_epi64(a, b)
#define SM_SHL52(a) _mm512_slli_epi64(a, 52)
#define SM_AS_INT(v) _mm512_castpd_si512(v)
#define SM_AS_VEC(i) _mm512_castsi512_pd(i)
#define SM_LOAD(x) _mm512_cvtps_pd(_mm256_loadu_ps(x))
#define SM_STORE(w, v) _mm512_storeu_pd(w, v)
#define SM_KEEP_GE(v, a, c) _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(a, c, _CMP_GE_OQ), v)
#define SM_DROP_LT(v, c) _mm512_maskz_mov_pd((__mmask8)~_mm512_cmp_pd_mask(v, c, _CMP_LT_OQ), v)
#define SM_WEIGHTS smath_weights_avx512
#include "base/sample_math_lanes.h"

#else
typedef int smath__avx512_unavailable; /* not x86-64: nothing to build */
#endif
