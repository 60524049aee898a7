/* sample_math_avx512.c - the sampler's weights eight doubles at a time
 * (smath_weights_avx512): base/sample_math_lanes.h over AVX-512 vectors,
 * the portable loop's bits. */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX512F__)
#error "sample_math_avx512.c needs -mavx512f (CMake adds it to *_avx512.c)"
#endif

#include <immintrin.h>

#include "base/sample_math.h"

/* smath_bin of eight weights in [0, 1], SMATH_BINS for 0. */
static inline __m512i smath__bin_avx512(__m512d v)
{
    __m512i b =
        _mm512_sub_epi64(_mm512_set1_epi64(1023), _mm512_srli_epi64(_mm512_castpd_si512(v), 52));
    b = _mm512_min_epi64(b, _mm512_set1_epi64(SMATH_BINS - 1));
    __mmask8 pos = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ);
    return _mm512_mask_mov_epi64(_mm512_set1_epi64(SMATH_BINS), pos, b);
}

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
#define SM_IRAMP(lo)                                                                               \
    _mm512_add_epi64(_mm512_set1_epi64(lo), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7))
#define SM_ADD_IF_EQ(acc, i, j, v) _mm512_mask_add_pd(acc, _mm512_cmpeq_epi64_mask(i, j), acc, v)
#define SM_COUNT_IF_EQ(n, i, j)                                                                    \
    _mm512_mask_add_epi64(n, _mm512_cmpeq_epi64_mask(i, j), n, _mm512_set1_epi64(1))
#define SM_ISTORE(p, i) _mm512_storeu_si512(p, i)
#define SM_CHUNK_ALL smath_chunk_all_avx512
#define SM_LOADD(p) _mm512_loadu_pd(p)
#define SM_BIN(v) smath__bin_avx512(v)
#define SM_STORE_BYTES(p, i) _mm_storel_epi64((__m128i *)(void *)(p), _mm512_cvtepi64_epi8(i))
#define SM_IOR(a, b) _mm512_or_si512(a, b)
#define SM_SHLV1(i) _mm512_sllv_epi64(_mm512_set1_epi64(1), i)
#define SM_WINDOW 16
#include "base/sample_math_lanes.h"

#else
typedef int smath__avx512_unavailable; /* not x86-64: nothing to build */
#endif
