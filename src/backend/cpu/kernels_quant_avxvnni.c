/* kernels_quant_avxvnni.c - the block dot products of kernels_quant_impl.h
 * with AVX-VNNI: the VEX form of vpdpbusd on 256-bit vectors, for CPUs that
 * have it without AVX-512 (Intel from Alder Lake and Sierra Forest on; AMD
 * from Zen 5 on has both). The same lanes as the AVX-512 VNNI build
 * (kernels_quant_vnni.c), so the same bits as every other table; no 512-bit
 * kernels. Used by the avxvnni ISA (kernels.c checks CPUID). */
#if defined(__x86_64__) && !defined(ENCORE_NO_X86_SIMD) && defined(ENCORE_HAVE_AVXVNNI)

#if !defined(__AVXVNNI__) || !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "kernels_quant_avxvnni.c needs -mavxvnni -mavx2 -mfma -mf16c (CMake adds them)"
#endif

#include <immintrin.h>

#define CPU__Q_DOT4_ACC(acc, u, s) _mm256_dpbusd_avx_epi32(acc, u, s)
#define CPU__Q_TABLE cpu__quant_avxvnni
#define CPU__Q_NAME "avxvnni"
#include "backend/cpu/kernels_quant_vnni_dot.h"
/* (the dot macros first: the bodies below expand them) */
#include "backend/cpu/kernels_quant_impl.h"

#else
typedef int cpu__quant_avxvnni_unavailable; /* no AVX-VNNI build: nothing to build */
#endif
