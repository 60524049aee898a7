/* sample_math_avx2.c - the sampler's weights four doubles at a time
 * (smath_weights_avx2): base/sample_math_lanes.h over AVX2 vectors, the
 * portable loop's bits. */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX2__)
#error "sample_math_avx2.c needs -mavx2 (CMake adds it to *_avx2.c)"
#endif

#include <immintrin.h>

#include "base/sample_math.h"

/* smath_bin of four weights in [0, 1], SMATH_BINS for 0. */
static inline __m256i smath__bin_avx2(__m256d v)
{
    __m256i b =
        _mm256_sub_epi64(_mm256_set1_epi64x(1023), _mm256_srli_epi64(_mm256_castpd_si256(v), 52));
    __m256i last = _mm256_set1_epi64x(SMATH_BINS - 1);
    b = _mm256_blendv_epi8(b, last, _mm256_cmpgt_epi64(b, last));
    __m256i pos = _mm256_castpd_si256(_mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_GT_OQ));
    return _mm256_blendv_epi8(_mm256_set1_epi64x(SMATH_BINS), b, pos);
}

/* The low byte of each of four 64-bit lanes (each below 256) to p. */
static inline void smath__store_bytes_avx2(uint8_t *p, __m256i i)
{
    __m256i lo = _mm256_permutevar8x32_epi32(i, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    __m128i b =
        _mm_packus_epi16(_mm_packus_epi32(_mm256_castsi256_si128(lo), _mm256_castsi256_si128(lo)),
                         _mm_setzero_si128());
    int32_t four = _mm_cvtsi128_si32(b);
    memcpy(p, &four, sizeof four);
}

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
#define SM_IRAMP(lo) _mm256_setr_epi64x(lo, (lo) + 1, (lo) + 2, (lo) + 3)
#define SM_ADD_IF_EQ(acc, i, j, v)                                                                 \
    _mm256_add_pd(acc, _mm256_and_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(i, j)), v))
#define SM_COUNT_IF_EQ(n, i, j) _mm256_sub_epi64(n, _mm256_cmpeq_epi64(i, j))
#define SM_ISTORE(p, i) _mm256_storeu_si256((__m256i *)(void *)(p), i)
#define SM_CHUNK_ALL smath_chunk_all_avx2
#define SM_LOADD(p) _mm256_loadu_pd(p)
#define SM_BIN(v) smath__bin_avx2(v)
#define SM_STORE_BYTES(p, i) smath__store_bytes_avx2(p, i)
#define SM_IOR(a, b) _mm256_or_si256(a, b)
#define SM_SHLV1(i) _mm256_sllv_epi64(_mm256_set1_epi64x(1), i)
#define SM_WINDOW 8
#include "base/sample_math_lanes.h"

#else
typedef int smath__avx2_unavailable; /* not x86-64: nothing to build */
#endif
