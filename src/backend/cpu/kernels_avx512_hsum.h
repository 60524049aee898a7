/* kernels_avx512_hsum.h - the sum of a 16-lane f32 vector in the one fixed
 * order every AVX-512 dot of the CPU kernels ends with (kernels_avx512.c,
 * kernels_bf16dot_avx512bf16.c). Include only from files compiled for
 * AVX-512. */
#ifndef ENC_CPU_KERNELS_AVX512_HSUM_H
#define ENC_CPU_KERNELS_AVX512_HSUM_H

#include <immintrin.h>

/* Halves first (lane i + lane i+8), then the 8-lane tree of kernels_avx2.c. */
static inline float cpu__avx512_hsum(__m512 v)
{
    __m256 lo = _mm512_castps512_ps256(v);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    __m256 h = _mm256_add_ps(lo, hi);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#endif
