/* sample_math.c - smath_weights_best: the sampler's weights by the fastest
 * loop this CPU runs (base/sample_math.h); every loop gives the same bits.
 * And smath_chunk_all, the portable form of the SIMD chunk records.
 * Chosen here, in a file compiled for the baseline ISA, so that nothing of
 * AVX2 or AVX-512 runs before the check. */
#include "base/sample_math.h"

void smath_weights_best(const float *x, int64_t n, double max, double inv_t, double min_p,
                        double *w)
{
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)
    if (__builtin_cpu_supports("avx512f")) {
        smath_weights_avx512(x, n, max, inv_t, min_p, w);
        return;
    }
    if (__builtin_cpu_supports("avx2")) {
        smath_weights_avx2(x, n, max, inv_t, min_p, w);
        return;
    }
#endif
    smath_weights(x, n, max, inv_t, min_p, w);
}

void smath_chunk_all(const double *w, int64_t c0, int64_t c1, smath_chunk *out)
{
    smath_chunk_of(w, c0, c1, (smath_cut){0.0, -1}, out);
}
