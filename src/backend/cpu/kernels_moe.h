/* kernels_moe.h - the CPU kernels of a mixture-of-experts layer: routing
 * (scores, top-k, weights), the expert-indexed matmul and the weighted sum
 * over the k slots.
 *
 * Same conventions as kernels.h: (ith, nth) shares, row-major layouts, and a
 * token's result that never depends on the other tokens of the call or on
 * nth. Nothing here allocates or sizes anything from the routing: every
 * output's size is fixed by T and k. */
#ifndef ENC_CPU_KERNELS_MOE_H
#define ENC_CPU_KERNELS_MOE_H

#include <stdint.h>

#include "base/dtype.h"

/* Router kinds (graph_router): 0 = softmax of the logits in f32. */
enum { CPU_ROUTER_SOFTMAX = 0 };

/* ids[t, s] for s < k: the experts of the k largest scores of logits[t, :]
 * (n_experts <= 512), largest first; of equal scores the lower id first. */
void cpu_moe_route(const float *logits, int64_t n_tokens, int64_t n_experts, int64_t k, int router,
                   int32_t *ids, int ith, int nth);

/* w[t, s] = score of expert ids[t, s] (the same scores as cpu_moe_route),
 * divided by sum_s w[t, s] (summed in slot order) when norm. An id outside
 * [0, n_experts) gets weight 0. */
void cpu_moe_weights(const float *logits, const int32_t *ids, int64_t n_tokens, int64_t n_experts,
                     int64_t k, int router, int norm, float *w, int ith, int nth);

/* y[t, s, :] = x_(t,s) W_e^T with e = ids[t, s], W_e = w[e] of [n_out, n_in]:
 * x_(t,s) = x[t, :] when x_per_slot is 0 (x [T, n_in]), else x[t, s, :]
 * (x [T, k, n_in]). For F32, BF16 and F16 experts x is f32; for the block
 * types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) its rows are already quantized by
 * cpu_quantize_rows to quant_dot_dtype(w_dtype), as cpu_matmul takes them. A share is, in a
 * decode step, a run of the chosen experts' rows (whole experts but for its two ends), in a
 * prefill its part of every chosen expert, visited in expert order; its rows of an expert
 * serve the (token, slot) pairs that chose it, 16 at a time, before the next expert:
 * a decode step reads each chosen expert's weights once. Each output
 * is cpu_matmul's dot product, whatever the grouping. An id outside [0, n_experts) gives a zero
 * row. The share's staging (2 x 32 KiB) is on the caller's stack. */
typedef struct cpu_matmul_id_args {
    const void *x; /* f32 rows, their 8-bit blocks for block-quantized w, or bf16 (x_bf16) */
    int x_per_slot;
    const int32_t *ids; /* [n_tokens, k] */
    const void *w;      /* [n_experts, n_out, n_in] of w_dtype */
    enc_dtype w_dtype;
    float *y; /* [n_tokens, k, n_out] */
    int64_t n_tokens, k, n_in, n_out, n_experts;
    int packed; /* each expert's matrix interleaved (repack.h; cpu_matmul_packed) */
    int x_bf16; /* bf16 w, x rows rounded to bf16 (cpu_matmul_bf16x) */
} cpu_matmul_id_args;

void cpu_matmul_id(const cpu_matmul_id_args *a, int ith, int nth);

/* out[t, :] = sum_{s < k, in order} w[t, s] * y[t, s, :]; y [T, k, n]. */
void cpu_moe_sum(const float *y, const float *w, int64_t n_tokens, int64_t k, int64_t n, float *out,
                 int ith, int nth);

#endif
