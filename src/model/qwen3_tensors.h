/* qwen3_tensors.h - the tensors a Qwen3 checkpoint must hold, checked
 * against its config before anything runs.
 *
 *   model.embed_tokens.weight                 [V, D]
 *   model.layers.L.input_layernorm.weight     [D]
 *   model.layers.L.self_attn.q_proj.weight    [H*hd, D]
 *   model.layers.L.self_attn.k_proj.weight    [KVH*hd, D]
 *   model.layers.L.self_attn.v_proj.weight    [KVH*hd, D]
 *   model.layers.L.self_attn.o_proj.weight    [D, H*hd]
 *   model.layers.L.self_attn.q_norm.weight    [hd]
 *   model.layers.L.self_attn.k_norm.weight    [hd]
 *   model.layers.L.post_attention_layernorm.weight [D]
 *   model.layers.L.mlp.gate_proj.weight       [F, D]
 *   model.layers.L.mlp.up_proj.weight         [F, D]
 *   model.layers.L.mlp.down_proj.weight       [D, F]
 *   model.norm.weight                         [D]
 *   lm_head.weight                            [V, D]  (absent when tied)
 *
 * or, in a GGUF file, llama.cpp's names for the same tensors: token_embd,
 * blk.L.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm,
 * attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output
 * (each ".weight"; output absent when tied).
 *
 * A Qwen3-MoE layer (qwen3_config_layer_is_moe) has, instead of the three
 * mlp.*_proj tensors:
 *   model.layers.L.mlp.gate.weight            [E, D]   (the router)
 *   model.layers.L.mlp.experts.J.gate_proj.weight [Fe, D]   J < E
 *   model.layers.L.mlp.experts.J.up_proj.weight   [Fe, D]
 *   model.layers.L.mlp.experts.J.down_proj.weight [D, Fe]
 * with one dtype per projection over a layer's experts (they are stacked);
 * in a GGUF file (qwen3moe) blk.L.ffn_gate_inp [E, D] and the experts
 * already stacked: blk.L.ffn_gate_exps, ffn_up_exps [E, Fe, D] and
 * ffn_down_exps [E, D, Fe] (F32, BF16 or F16).
 */
#ifndef ENC_MODEL_QWEN3_TENSORS_H
#define ENC_MODEL_QWEN3_TENSORS_H

#include "model/config.h"
#include "model/safetensors.h"
#include "model/tensor_source.h"

typedef struct qwen3_layer_tensors {
    const st_tensor *input_norm, *q, *k, *v, *o, *q_norm, *k_norm;
    const st_tensor *post_norm, *gate, *up, *down; /* gate, up, down: NULL in MoE layers */
    const st_tensor *router; /* MoE layers: mlp.gate.weight; NULL in dense layers */
    /* MoE layers of a GGUF file: the stacked experts (gate, up, down), each
     * [E, N, K]; NULL otherwise (safetensors keep one tensor per expert) */
    const st_tensor *experts[3];
} qwen3_layer_tensors;

typedef struct qwen3_tensors {
    const st_tensor *embed;
    const st_tensor *final_norm;
    const st_tensor *lm_head;    /* == embed when tie_word_embeddings; NULL when the
                                  * checkpoint has none (an embedding model's) */
    qwen3_layer_tensors *layers; /* [n_layers], malloc'd; free with qwen3_tensors_free */
} qwen3_tensors;

/* Find every tensor the config calls for and check its shape and dtype
 * (F32/BF16/F16; a matrix may also be of a block type). A missing tensor, a wrong shape, or a tensor the model
 * does not use is an error naming the tensor and its file. */
enc_status qwen3_tensors_find(const qwen3_config *cfg, const st_archive *a,
                              qwen3_tensors *out);
/* The same over any tensor source (a GGUF file: its names, and matrices of
 * block types allowed). */
enc_status qwen3_tensors_find_in(const qwen3_config *cfg, const tensor_source *src,
                                 qwen3_tensors *out);
void qwen3_tensors_free(qwen3_tensors *t);
/* Expert j's projection proj (0 gate, 1 up, 2 down) of MoE layer l, which
 * qwen3_tensors_find has checked; NULL if absent. */
const st_tensor *qwen3_tensors_expert(const st_archive *a, int64_t l, int64_t j, int proj);

#endif
