/* graph.h - the step graph: tensors, ops, inputs and outputs of one forward
 * step, and the plan that places every intermediate in one arena.
 *
 * A model builder adds ops for one batch shape; the graph then knows every
 * tensor's first and last use, and graph_plan() packs the intermediates into
 * one arena with reuse (first fit, 64-byte aligned; the bytes of a tensor
 * only one node uses, a node's scratch, are reused only GRAPH_REUSE_GAP
 * nodes later, so that neighbouring nodes with no data between them share
 * no bytes either, and a backend may run them together). The graph never touches
 * memory itself: each tensor carries a binding (a backend_buffer, opaque
 * here, plus a byte offset) that the backend resolves when it runs.
 *
 *   tensor kinds:  INPUT   (persistent step inputs, written by the engine)
 *                  WEIGHT  (model parameters, bound at load)
 *                  CACHE   (the paged KV pools; mutated by STORE_KV)
 *                  INTERMEDIATE (planned into the arena)
 *
 * Shapes are row-major, outermost first: shape[n_dims - 1] is contiguous.
 * Host memory for nodes and tensors comes from a caller-owned arena, so
 * building a graph does no malloc. */
#ifndef ENC_GRAPH_GRAPH_H
#define ENC_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/dtype.h"
#include "base/rope.h"
#include "base/status.h"

/* A backend's buffer. The graph layer sits below the backends and only
 * carries the handle; each backend defines the struct (backend/backend.h). */
typedef struct backend_buffer backend_buffer;

enum {
    GRAPH_MAX_DIMS = 4,
    GRAPH_MAX_SRC = 7,
    GRAPH_CACHE16_HEAD_DIM_MAX = 256, /* attention over an F16 / BF16 / Q8_0 cache */
    GRAPH_REUSE_GAP = 3, /* nodes from a scratch's node to the reuse of its bytes */
};

typedef enum graph_tensor_kind {
    GRAPH_INPUT = 0,
    GRAPH_WEIGHT,
    GRAPH_CACHE,
    GRAPH_INTERMEDIATE,
} graph_tensor_kind;

typedef enum graph_op {
    GRAPH_OP_GET_ROWS = 0, /* dst[n, D] f32 = src0[R, D][src1[n]]           */
    GRAPH_OP_RMS_NORM,     /* dst = rmsnorm over rows of length len(src1); eps = f[0] */
    GRAPH_OP_MATMUL,       /* dst[T, N] = src0[T, K] @ src1[N, K]^T; for a block-
                            * quantized src1, src2 [T, K] is scratch for src0 in
                            * 8-bit blocks (Q8_0 or Q8_K), the backend's to use */
    GRAPH_OP_ROPE_NEOX,    /* src0[T, H*hd] in place; src1 positions[T]; i[0] = H, i[1] = hd,
                            * f[0..4] = the enc_rope: theta, factor, low, high, attn */
    GRAPH_OP_SWIGLU,       /* dst = silu(src0) * src1                         */
    GRAPH_OP_ADD,          /* dst = src0 + src1                               */
    GRAPH_OP_STORE_KV,     /* k src0, v src1 -> caches src3, src4 at slots src2; no dst;
                            * the caches are F32, F16 or BF16 (rounded to nearest even), or
                            * Q8_0 (each token's row in 32-value blocks, head_dim a multiple
                            * of 32 so that no block straddles two heads) */
    GRAPH_OP_ATTENTION,    /* dst = paged attention(q src0, caches src1 src2,
                            *   block_tables src3, seq_lens src4, query_start_loc src5);
                            * i[0] = n_heads, i[1] = n_kv_heads, i[2] = head_dim,
                            * i[3] = block_size, f[0] = scale */
    GRAPH_OP_ARGMAX,       /* dst[S] i32 = argmax over rows of src0[S, V]     */
    GRAPH_OP_DECODE_ADVANCE, /* advance the decode inputs to the tokens src0 chose:
                              * input_ids src1, positions src2, seq_lens src3,
                              * slot_mapping src4 (all updated in place),
                              * block_tables src5; dst = the chosen ids;
                              * i[0] = block_size */
    GRAPH_OP_SAMPLE,         /* dst[S] i32 = the token each row samples (graph/sample_row.h):
                              * logits src0 [S, V] f32 (rows overwritten with the row
                              * after penalties and masks), params src1 [S, W] i32,
                              * positions src2 [S] i32, history src3 [S, H] i32 (the
                              * chosen id written at positions + 1), scratch src4
                              * (planned), logprobs src5 [S, LP] i32 (optional,
                              * written) */
    /* Mixture of experts (src/backend/cpu/kernels_moe.c). Every output's size
     * depends only on T and k, never on which experts were chosen. */
    GRAPH_OP_MOE_ROUTE,    /* dst[T, k] i32 = the k best experts of router logits
                            * src0[T, E] by score (ties to the lower id), best
                            * first; i[0] = k, i[1] = graph_router */
    GRAPH_OP_MOE_WEIGHTS,  /* dst[T, k] f32 = the scores of experts src1[T, k]
                            * from logits src0[T, E], divided by their sum when
                            * i[2] (norm_topk_prob); i[0] = k, i[1] = graph_router */
    GRAPH_OP_MATMUL_ID,    /* dst[T, k, N] = x_(t,s) @ src1[ids[t, s]]^T: x src0
                            * [T, K] (every slot) or [T, k, K] (one row per slot),
                            * experts src1 [E, N, K], ids src2 [T, k] i32; for
                            * block-quantized experts, src3 [rows of x, K] is
                            * scratch for src0 in 8-bit blocks, as for matmul */
    GRAPH_OP_MOE_SUM,      /* dst[T, N] = sum over s < k (in order) of
                            * src1[t, s] * src0[t, s, :]; src0 [T, k, N] */
    GRAPH_OP_COUNT
} graph_op;

const char *graph_op_name(graph_op op);

typedef struct graph_tensor {
    int id;
    graph_tensor_kind kind;
    enc_dtype dtype;
    int n_dims;
    int64_t shape[GRAPH_MAX_DIMS];
    const char *name;       /* for error messages; not owned */
    backend_buffer *buffer; /* NULL until bound or planned */
    size_t offset;          /* byte offset in buffer */
    int first_use;          /* node index of the first node that touches it */
    int last_use;           /* node index of the last node that touches it */
} graph_tensor;

typedef struct graph_node {
    graph_op op;
    graph_tensor *src[GRAPH_MAX_SRC];
    graph_tensor *dst; /* NULL for STORE_KV; == src[0] for in-place ROPE */
    int64_t i[4];
    double f[5];
} graph_node;

typedef struct graph {
    enc_arena *arena; /* host memory for nodes and tensors (not owned) */
    graph_node *nodes;
    int n_nodes, n_nodes_max;
    graph_tensor **tensors;
    int n_tensors, n_tensors_max;
    size_t arena_size; /* bytes the planned intermediates need (graph_plan) */
    enc_status status; /* first failure while building (out of arena, shape mismatch) */
    bool bf16_activations; /* matmuls over BF16 weights built from here on take their
                            * activations rounded to bf16 (a BF16 scratch, as a block
                            * type's 8-bit one; backend_supports_bf16_activations) */
} graph;

/* Start an empty graph whose bookkeeping lives in `arena` (reset by the
 * caller between steps). */
enc_status graph_init(graph *g, enc_arena *arena, int n_nodes_max, int n_tensors_max);

/* --- tensors ------------------------------------------------------------- */
graph_tensor *graph_new_tensor(graph *g, graph_tensor_kind kind, enc_dtype dtype,
                               int n_dims, const int64_t *shape, const char *name);
/* Shorthands for 1-D and 2-D tensors. */
graph_tensor *graph_tensor_1d(graph *g, graph_tensor_kind kind, enc_dtype dtype, int64_t n0,
                              const char *name);
graph_tensor *graph_tensor_2d(graph *g, graph_tensor_kind kind, enc_dtype dtype, int64_t n0,
                              int64_t n1, const char *name);
/* Bind a tensor to a backend buffer at a byte offset. */
void graph_bind(graph_tensor *t, backend_buffer *buffer, size_t offset);
int64_t graph_tensor_nelements(const graph_tensor *t);
size_t graph_tensor_nbytes(const graph_tensor *t);

/* --- ops (each returns its output, or NULL and sets g->status) ----------- */
graph_tensor *graph_get_rows(graph *g, graph_tensor *table, graph_tensor *ids);
graph_tensor *graph_rms_norm(graph *g, graph_tensor *x, graph_tensor *w, double eps);
graph_tensor *graph_matmul(graph *g, graph_tensor *x, graph_tensor *w);
graph_tensor *graph_rope_neox(graph *g, graph_tensor *x, graph_tensor *positions,
                              int64_t n_heads, int64_t head_dim, const enc_rope *rope);
/* The enc_rope a ROPE_NEOX node carries. */
enc_rope graph_rope_of(const graph_node *n);
graph_tensor *graph_swiglu(graph *g, graph_tensor *gate, graph_tensor *up);
graph_tensor *graph_add(graph *g, graph_tensor *a, graph_tensor *b);
void graph_store_kv(graph *g, graph_tensor *k, graph_tensor *v, graph_tensor *slot_mapping,
                    graph_tensor *k_cache, graph_tensor *v_cache);
typedef struct graph_attention_params {
    int64_t n_heads, n_kv_heads, head_dim, block_size;
    double scale;
} graph_attention_params;
graph_tensor *graph_attention(graph *g, graph_tensor *q, graph_tensor *k_cache,
                              graph_tensor *v_cache, graph_tensor *block_tables,
                              graph_tensor *seq_lens, graph_tensor *query_start_loc,
                              const graph_attention_params *p);
graph_tensor *graph_argmax(graph *g, graph_tensor *x);
/* Multi-step decode: move each row of a one-token-per-sequence step to the
 * token in `next`, writing the ids to `out` (a bound [P] i32 tensor). */
void graph_decode_advance(graph *g, graph_tensor *next, graph_tensor *input_ids,
                          graph_tensor *positions, graph_tensor *seq_lens,
                          graph_tensor *slot_mapping, graph_tensor *block_tables, int64_t block_size,
                          graph_tensor *out);

/* The device sampler: the token of every row of logits [S, V] under the
 * per-row parameters in `params` (graph/sample_row.h); `logits` is
 * overwritten. `logprobs` (NULL: none) gets the logprobs records of the rows
 * that ask; `mask` (NULL: none; [S, GRAPH_SAMPLE_MASK_WORDS(V)] i32 read as
 * u32) holds the allowed ids of the GRAPH_SAMPLE_MASKED rows. A backend that
 * runs the op applies the mask (src[6]). */
graph_tensor *graph_sample(graph *g, graph_tensor *logits, graph_tensor *params, graph_tensor *positions,
                           graph_tensor *history, graph_tensor *logprobs, graph_tensor *mask);
/* --- mixture of experts ---------------------------------------------------- */

/* How a router turns logits into scores. Softmax (Qwen3-MoE, Mixtral) is the
 * one implemented; a sigmoid router with a selection bias (DeepSeek-V3) is a
 * new value here, its score function in the kernels and a bias source. */
typedef enum graph_router {
    GRAPH_ROUTER_SOFTMAX = 0, /* scores = softmax(logits) in f32 */
    GRAPH_ROUTER_COUNT
} graph_router;

enum { GRAPH_MOE_MAX_EXPERTS = 512 }; /* the kernels keep one row of scores on the stack */
/* matmul_id's grouping scratch (src[4], i32, for a backend that groups the
 * (token, slot) pairs by expert on the device): P = T * k pair indices in
 * expert order, then 3 words (first position, expert, count) for each of the
 * at most ceil(P / GRAPH_MOE_GROUP_TILE) + E tiles of one expert's pairs.
 * Its size depends on T, k and E only, never on the routing. */
enum { GRAPH_MOE_GROUP_TILE = 4 };
int64_t graph_moe_group_words(int64_t pairs, int64_t experts);

/* The top-k experts of router logits [T, E] and their weights: returns ids
 * [T, k] i32 and sets *weights to [T, k] f32 (renormalised when norm). */
graph_tensor *graph_moe_route(graph *g, graph_tensor *logits, int64_t k, graph_router router,
                              int norm, graph_tensor **weights);
/* out [T, k, N]: each (token, slot) times its expert's matrix of w [E, N, K];
 * x [T, K] (shared by the k slots) or [T, k, K]. */
graph_tensor *graph_matmul_id(graph *g, graph_tensor *x, graph_tensor *w, graph_tensor *ids);
/* out [T, N] = sum_s weights[t, s] * y[t, s, :], y [T, k, N], weights [T, k]. */
graph_tensor *graph_moe_sum(graph *g, graph_tensor *y, graph_tensor *weights);

/* Place every intermediate in one arena of g->arena_size bytes with reuse,
 * binding each to (arena_buffer, offset): a tensor last used by node n and
 * one first used by node m share bytes only if m > n, and m >= n +
 * GRAPH_REUSE_GAP where only node n uses the first. Returns g->status. */
enc_status graph_plan(graph *g, backend_buffer *arena_buffer);

#endif
