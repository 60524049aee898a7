/* qwen3.h - a Qwen3 model on a backend: its weights, loaded from a Hugging
 * Face checkpoint or a GGUF file, and the builder of its step graph.
 *
 * The builder describes one forward step for a batch shape. It reads no
 * device data and is cheap; the engine calls it per step (or once per
 * captured slot). Per layer:
 *
 *   h = rms_norm(x, input_norm)
 *   q = rms_norm_heads(h Wq^T, q_norm); k = rms_norm_heads(h Wk^T, k_norm)
 *   v = h Wv^T;  rope(q, positions); rope(k, positions)
 *   store_kv(k, v -> cache at slot_mapping)
 *   x = x + attention(q, cache, block_tables, seq_lens) Wo^T
 *   x = x + (silu(h' Wgate^T) * h' Wup^T) Wdown^T,  h' = rms_norm(x, post_norm)
 *     (in a Qwen3-MoE layer, x + moe_block(h'): qwen3_moe.h)
 *
 * then logits = rms_norm(x[logits_indices], final_norm) lm_head^T; a
 * pooling model (an embedding model: vLLM's --runner pooling) stops before
 * the lm_head, its output rows the final norm's hidden states. */
#ifndef ENC_MODEL_QWEN3_H
#define ENC_MODEL_QWEN3_H

#include "backend/backend.h"
#include "graph/graph.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/gguf_mix.h"
#include "model/safetensors.h"

typedef struct qwen3_weight {
    backend_buffer *buf;
    enc_dtype dtype;
    int n_dims;
    int64_t shape[3]; /* 3 dims: a layer's stacked experts [E, N, K] */
    const char *name; /* the checkpoint's tensor name (owned by the archive) */
} qwen3_weight;

/* A block-quantized weight that only matmul and get_rows (a matrix) or
 * matmul_id (stacked experts, 3 dims) read, uploaded in full: the backend
 * may lay each matrix out its own way (backend_buffer_repack_matrix; the
 * CPU interleaves rows of block types). Any other weight: ENC_OK, nothing
 * done. Errors name t. */
enc_status qwen3_weight_repack(backend *be, const st_tensor *t, const qwen3_weight *w);

typedef struct qwen3_layer {
    qwen3_weight input_norm, q, k, v, o, q_norm, k_norm, post_norm, gate, up, down;
    int moe; /* a mixture-of-experts layer: router and experts instead of gate, up, down */
    qwen3_weight router, exp_gate, exp_up, exp_down; /* [E, D], [E, Fe, D] x 2, [E, D, Fe] */
} qwen3_layer;

typedef struct qwen3_model {
    qwen3_config cfg;
    backend *be;          /* not owned */
    st_archive *archive;  /* keeps the mapped weights alive (safetensors) */
    gguf_file *gguf;      /* or this (a GGUF file); the other is NULL */
    qwen3_weight embed, final_norm, lm_head; /* lm_head unset (no buffer, no dims) when pooling */
    int pooling;          /* an embedding model: the output rows are hidden states [D] */
    int bf16_activations; /* matmuls over bf16 weights round their activations to bf16
                           * (qwen3_model_set_bf16_activations) */
    qwen3_layer *layers;  /* [n_layers] */
    int64_t decode_weight_bytes; /* weight bytes a decode step reads: all but an
                                  * untied embedding, of which it gathers rows */
    gguf_file_type quantize;     /* the block type (or llama-quantize mix) the
                                  * float matrices (embedding and lm_head
                                  * included) were quantized to at load;
                                  * base ENC_F32: all as stored */
} qwen3_model;

/* Called while weights go onto the backend, with the fraction done (0..1]. */
typedef void (*qwen3_progress_fn)(void *user, double fraction);

/* Read DIR/config.json and the safetensors checkpoint, or (when the path is
 * a file, not a directory) a GGUF file's metadata and tensors; check every
 * tensor against the config, and put the weights on the backend, reporting
 * progress layer by layer to `progress` (may be NULL). A weight of a block
 * type the backend cannot run is an error naming the tensor and the type.
 * A block type `quantize` (model/quantize.h) turns every float matrix into
 * its blocks on the way, the embedding and lm_head included, each matrix of
 * the type gguf_mix_type gives it (one type, or a llama-quantize mix); base
 * ENC_F32 keeps them as stored. `pooling`: load it as an embedding model,
 * without its lm_head (which it need not have: qwen3_tensors.h); a
 * generative model without one is an error saying so. */
enc_status qwen3_model_load(const char *model_dir, backend *be, gguf_file_type quantize,
                            int pooling, qwen3_progress_fn progress, void *progress_user,
                            qwen3_model **out);
/* Multiply the bf16 weights by activations rounded to bf16 (on: 1) in the
 * graphs built from now on, or by the f32 activations (0, the default). An
 * error when the backend cannot (backend_supports_bf16_activations). */
enc_status qwen3_model_set_bf16_activations(qwen3_model *m, int on);
/* The matmuls of a forward pass over bf16 weights (those bf16 activations
 * change; a MoE router's not counted). */
int qwen3_model_bf16_matmuls(const qwen3_model *m);
/* The width of the step's output rows: vocab_size, or hidden_size when pooling. */
int64_t qwen3_output_width(const qwen3_model *m);
void qwen3_model_free(qwen3_model *m); /* NULL is a no-op */

/* The shape of one step. */
typedef struct qwen3_step_shape {
    int64_t n_tokens;   /* T: new tokens in the step, over all sequences */
    int64_t n_seqs;     /* S */
    int64_t n_logits;   /* L: token rows whose logits are wanted */
    int64_t max_blocks; /* width of the block table */
} qwen3_step_shape;

/* The input tensors of a step, created by the builder and bound by the
 * caller to its buffers. */
typedef struct qwen3_step_io {
    graph_tensor *input_ids;       /* [T] i32 */
    graph_tensor *positions;       /* [T] i32 */
    graph_tensor *slot_mapping;    /* [T] i32, -1 = write no KV */
    graph_tensor *block_tables;    /* [S, max_blocks] i32 */
    graph_tensor *seq_lens;        /* [S] i32, tokens in cache after the step */
    graph_tensor *query_start_loc; /* [S + 1] i32 */
    graph_tensor *logits_indices;  /* [L] i32, rows of the step's tokens */
    graph_tensor *logits;          /* [L, vocab] f32 (output); a pooling model's:
                                    * [L, hidden_size], the final norm's rows */
} qwen3_step_io;

/* A step graph, in two parts: add the (unbound) input tensors of a shape to
 * an empty g; then add one forward pass over io's inputs, setting
 * io->logits, once per pass (several over one set of inputs for multi-step
 * decode). */
void qwen3_step_inputs(graph *g, const qwen3_step_shape *shape, qwen3_step_io *io);
enc_status qwen3_build_forward(const qwen3_model *m, const kv_cache *kv, graph *g, qwen3_step_io *io);
/* The nodes and tensors of a graph holding the step inputs and n_passes
 * forward passes, for graph_init: exactly what qwen3_step_inputs and
 * n_passes calls of qwen3_build_forward add (asserted on every pass). */
int qwen3_graph_n_nodes(const qwen3_model *m, int n_passes);
int qwen3_graph_n_tensors(const qwen3_model *m, int n_passes);

#endif
