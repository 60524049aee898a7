/* kernels_bf16dot.h - the AVX512-BF16 matmul of bf16 weights and bf16
 * activations (kernels_bf16dot_avx512bf16.c), behind cpu_matmul_bf16x. */
#ifndef ENC_CPU_KERNELS_BF16DOT_H
#define ENC_CPU_KERNELS_BF16DOT_H

#include <stdint.h>

/* y[t, r] = dot(x[t, :], w[r, :]) for r in [n0, n1): x [n_tokens, k] and
 * w [n_out, k] bf16, y [n_tokens, n_out] f32. Only on a CPU with
 * AVX512-BF16 (the caller checks). */
void cpu_bf16dot_rows(const uint16_t *x, int64_t n_tokens, int64_t k, const uint16_t *w,
                      int64_t n_out, int64_t n0, int64_t n1, float *y);

/* The rows of the kernel's widest tile (a thread's share starts at a multiple). */
int cpu_bf16dot_tile_rows(void);

#endif
