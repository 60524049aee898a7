/* kernels_quant_vnni.c - the block dot products of kernels_quant_impl.h with
 * AVX-512 VNNI on 256-bit vectors (AVX512_VNNI + VL): vpdpbusd sums each
 * 4-byte group of u8 x s8 products straight into an int32 lane, giving the
 * very lanes the AVX2 build computes in two instructions; and the 512-bit
 * interleaved Q4_0/Q8_0 kernels for several tokens (kernels_repack_512_impl.h,
 * two groups of rows a vector). Used by the AVX-512 ISA when the CPU has
 * VNNI (kernels_quant.c checks CPUID). */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD)

#if !defined(__AVX512VNNI__) || !defined(__AVX512VL__) || !defined(__AVX2__) || !defined(__F16C__)
#error "kernels_quant_vnni.c needs -mavx512vnni -mavx512vl -mavx2 -mfma -mf16c (CMake adds them)"
#endif

#include <immintrin.h>

/* The dot added into acc in one instruction. vpdpbusd has no int16 step to
 * saturate, so the interleaved kernels (kernels_repack_impl.h) sum Q4_0
 * straight into int32 and feed Q8_0 as w + 128, 128 sum(x) off once. */
#define CPU__Q_DOT4_ACC(acc, u, s) _mm256_dpbusd_epi32(acc, u, s)
#define CPU__Q_TABLE cpu__quant_vnni
#define CPU__Q_NAME "avx512vnni"
#include "backend/cpu/kernels_quant_vnni_dot.h"
/* (the dot macros first: the bodies below expand them) */
#include "backend/cpu/kernels_quant_impl.h"

#else
typedef int cpu__quant_vnni_unavailable; /* not x86-64: nothing to build */
#endif
