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
 */
#ifndef ENC_MODEL_QWEN3_TENSORS_H
#define ENC_MODEL_QWEN3_TENSORS_H

#include "model/config.h"
#include "model/safetensors.h"

typedef struct qwen3_layer_tensors {
    const st_tensor *input_norm, *q, *k, *v, *o, *q_norm, *k_norm;
    const st_tensor *post_norm, *gate, *up, *down;
} qwen3_layer_tensors;

typedef struct qwen3_tensors {
    const st_tensor *embed;
    const st_tensor *final_norm;
    const st_tensor *lm_head; /* == embed when tie_word_embeddings */
    qwen3_layer_tensors *layers; /* [n_layers], malloc'd; free with qwen3_tensors_free */
} qwen3_tensors;

/* Find every tensor the config calls for and check its shape and dtype
 * (F32/BF16/F16). A missing tensor, a wrong shape, or a tensor the model
 * does not use is an error naming the tensor and its file. */
enc_status qwen3_tensors_find(const qwen3_config *cfg, const st_archive *a,
                              qwen3_tensors *out);
void qwen3_tensors_free(qwen3_tensors *t);

#endif
