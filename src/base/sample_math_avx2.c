/* sample_math_avx2.c - the sampler's weights four doubles at a time:
 * smath_weights (base/sample_math.h) with the same correctly rounded adds,
 * multiplies and selects in each lane, so that the bits are those of the
 * portable loop (no fused multiply-add: CMake compiles with
 * -ffp-contract=off, and only _mm256_mul_pd / _mm256_add_pd are used). */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX2__)
#error "sample_math_avx2.c needs -mavx2 (CMake adds it to *_avx2.c)"
#endif

#include <immintrin.h>

#include "base/sample_math.h"

/* smath_exp of four lanes (a is already (x - max) * inv_t). */
static inline __m256d smath__exp_avx2(__m256d a)
{
    const __m256d rounder = _mm256_set1_pd(SMATH_ROUNDER);
    __m256d t = _mm256_add_pd(_mm256_mul_pd(a, _mm256_set1_pd(SMATH_LOG2E)), rounder);
    __m256d k = _mm256_sub_pd(t, rounder);
    __m256d r = _mm256_sub_pd(a, _mm256_mul_pd(k, _mm256_set1_pd(SMATH_LN2_HI)));
    r = _mm256_sub_pd(r, _mm256_mul_pd(k, _mm256_set1_pd(SMATH_LN2_LO)));
    static const double c[] = {SMATH_EXP_C11, SMATH_EXP_C10, SMATH_EXP_C9, SMATH_EXP_C8,
                               SMATH_EXP_C7,  SMATH_EXP_C6,  SMATH_EXP_C5, SMATH_EXP_C4,
                               SMATH_EXP_C3,  SMATH_EXP_C2,  1.0,          1.0};
    __m256d p = _mm256_set1_pd(SMATH_EXP_C12);
    for (int j = 0; j < (int)(sizeof c / sizeof *c); j++)
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(c[j]));
    __m256i kb = _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(rounder));
    __m256i scale = _mm256_slli_epi64(_mm256_add_epi64(kb, _mm256_set1_epi64x(1023)), 52);
    __m256d e = _mm256_mul_pd(p, _mm256_castsi256_pd(scale));
    __m256d ok = _mm256_cmp_pd(a, _mm256_set1_pd(SMATH_EXP_MIN), _CMP_GE_OQ);
    return _mm256_and_pd(e, ok);
}

void smath_weights_avx2(const float *x, int64_t n, double max, double inv_t, double min_p,
                        double *w)
{
    const __m256d vmax = _mm256_set1_pd(max), vinv = _mm256_set1_pd(inv_t),
                  vmin_p = _mm256_set1_pd(min_p);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d xd = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d e = smath__exp_avx2(_mm256_mul_pd(_mm256_sub_pd(xd, vmax), vinv));
        __m256d below = _mm256_cmp_pd(e, vmin_p, _CMP_LT_OQ);
        _mm256_storeu_pd(w + i, _mm256_andnot_pd(below, e));
    }
    smath_weights(x + i, n - i, max, inv_t, min_p, w + i);
}

#else
typedef int smath__avx2_unavailable; /* not x86-64: nothing to build */
#endif
