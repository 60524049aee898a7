/* qwen3_moe.h - the mixture-of-experts block of a Qwen3-MoE layer: its
 * experts stacked onto the backend at load, and its ops in the step graph.
 *
 *   logits = h Wrouter^T                       [T, E]
 *   ids, w = moe_route(logits, k, norm_topk_prob)   [T, k] each
 *   y[t, s] = down_e(silu(gate_e h_t) * up_e h_t),  e = ids[t, s]   [T, k, D]
 *   out[t]  = sum_s w[t, s] y[t, s]                 [T, D]
 *
 * Each projection's E experts live in one buffer [E, N, K] in expert order. */
#ifndef ENC_MODEL_QWEN3_MOE_H
#define ENC_MODEL_QWEN3_MOE_H

#include "model/gguf_mix.h"
#include "model/qwen3.h"
#include "model/qwen3_tensors.h"

/* Stack MoE layer l's experts (checked by qwen3_tensors_find_in) into
 * w->exp_gate, exp_up, exp_down, giving back each file page once copied:
 * lt->experts (a GGUF file), else the archive's per-expert tensors; float
 * experts become blocks of the type gguf_mix_type gives them under
 * `quantize` (--quantize: gate and up one type, down its own in a mix),
 * block-typed ones stay as stored. Each projection may have its own type.
 * A type the backend's matmul_id lacks, or rows that are no whole blocks,
 * fail naming the tensor. */
enc_status qwen3_moe_put_experts(backend *be, const qwen3_config *c, const st_archive *a,
                                 const qwen3_layer_tensors *lt, int64_t l, gguf_file_type quantize,
                                 qwen3_layer *w);
/* Bytes of layer l's experts that a decode step does not read (E - k of E). */
int64_t qwen3_moe_idle_bytes(const qwen3_config *c, const qwen3_layer *w);
/* The block's ops on h [T, D]: returns out [T, D]. */
graph_tensor *qwen3_moe_block(graph *g, const qwen3_config *c, graph_tensor *h,
                              graph_tensor *router, graph_tensor *gate, graph_tensor *up,
                              graph_tensor *down);

#endif
