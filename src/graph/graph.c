/* graph.c - building a step graph and planning its intermediates. */
#include "graph/graph.h"

#include <stdbool.h>
#include <string.h>

#include "base/quant.h"
#include "graph/sample_row.h"

static const char *const graph__op_names[] = {
    [GRAPH_OP_GET_ROWS] = "get_rows",   [GRAPH_OP_RMS_NORM] = "rms_norm",
    [GRAPH_OP_MATMUL] = "matmul",       [GRAPH_OP_ROPE_NEOX] = "rope_neox",
    [GRAPH_OP_SWIGLU] = "swiglu",       [GRAPH_OP_ADD] = "add",
    [GRAPH_OP_STORE_KV] = "store_kv",   [GRAPH_OP_ATTENTION] = "attention",
    [GRAPH_OP_ARGMAX] = "argmax",       [GRAPH_OP_DECODE_ADVANCE] = "decode_advance",
    [GRAPH_OP_SAMPLE] = "sample",
    [GRAPH_OP_MOE_ROUTE] = "moe_route", [GRAPH_OP_MOE_WEIGHTS] = "moe_weights",
    [GRAPH_OP_MATMUL_ID] = "matmul_id", [GRAPH_OP_MOE_SUM] = "moe_sum",
};
/* The last op has a name; test_graph_plan checks that none in between lacks one. */
_Static_assert(sizeof graph__op_names / sizeof graph__op_names[0] == GRAPH_OP_COUNT,
               "graph__op_names: one name per graph_op");

const char *graph_op_name(graph_op op)
{
    const char *name = (unsigned)op < GRAPH_OP_COUNT ? graph__op_names[op] : NULL;
    return name ? name : "?";
}

enc_status graph_init(graph *g, enc_arena *arena, int n_nodes_max, int n_tensors_max)
{
    memset(g, 0, sizeof *g);
    g->arena = arena;
    g->nodes = arena_alloc(arena, sizeof *g->nodes * (size_t)n_nodes_max);
    g->tensors = arena_alloc(arena, sizeof *g->tensors * (size_t)n_tensors_max);
    if (!g->nodes || !g->tensors)
        return g->status = enc_fail(ENC_ERR_OUT_OF_MEMORY, "graph: host arena too small for %d nodes",
                                    n_nodes_max);
    g->n_nodes_max = n_nodes_max;
    g->n_tensors_max = n_tensors_max;
    return ENC_OK;
}

/* --- tensors ------------------------------------------------------------- */

static graph_tensor *graph__fail(graph *g, enc_status s, const char *what, const char *name)
{
    if (g->status == ENC_OK)
        g->status = enc_fail(s, "graph: %s (tensor '%s')", what, name ? name : "?");
    return NULL;
}

graph_tensor *graph_new_tensor(graph *g, graph_tensor_kind kind, enc_dtype dtype, int n_dims,
                               const int64_t *shape, const char *name)
{
    if (g->status != ENC_OK) return NULL;
    if (g->n_tensors == g->n_tensors_max) return graph__fail(g, ENC_ERR_OUT_OF_MEMORY, "too many tensors", name);
    if (n_dims < 1 || n_dims > GRAPH_MAX_DIMS) return graph__fail(g, ENC_ERR_INTERNAL, "bad rank", name);
    graph_tensor *t = arena_alloc(g->arena, sizeof *t);
    if (!t) return graph__fail(g, ENC_ERR_OUT_OF_MEMORY, "host arena full", name);
    t->id = g->n_tensors;
    t->kind = kind;
    t->dtype = dtype;
    t->n_dims = n_dims;
    for (int d = 0; d < n_dims; d++) t->shape[d] = shape[d];
    t->name = name;
    t->first_use = t->last_use = -1;
    g->tensors[g->n_tensors++] = t;
    return t;
}

graph_tensor *graph_tensor_1d(graph *g, graph_tensor_kind kind, enc_dtype dtype, int64_t n0,
                              const char *name)
{
    return graph_new_tensor(g, kind, dtype, 1, &n0, name);
}

graph_tensor *graph_tensor_2d(graph *g, graph_tensor_kind kind, enc_dtype dtype, int64_t n0,
                              int64_t n1, const char *name)
{
    int64_t shape[2] = {n0, n1};
    return graph_new_tensor(g, kind, dtype, 2, shape, name);
}

void graph_bind(graph_tensor *t, backend_buffer *buffer, size_t offset)
{
    t->buffer = buffer;
    t->offset = offset;
}

int64_t graph_tensor_nelements(const graph_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->shape[d];
    return n;
}

size_t graph_tensor_nbytes(const graph_tensor *t)
{
    int64_t rows = 1;
    for (int d = 0; d < t->n_dims - 1; d++) rows *= t->shape[d];
    return (size_t)rows * enc_dtype_row_bytes(t->dtype, t->shape[t->n_dims - 1]);
}

/* --- ops ------------------------------------------------------------------ */

static void graph__touch(graph_tensor *t, int node)
{
    if (t->first_use < 0) t->first_use = node;
    t->last_use = node;
}

/* Append a node; dst may be NULL (no output) or one of the sources. */
static graph_node *graph__node(graph *g, graph_op op, graph_tensor *dst, graph_tensor *s0,
                               graph_tensor *s1, graph_tensor *s2)
{
    if (g->status != ENC_OK) return NULL;
    if (g->n_nodes == g->n_nodes_max) {
        graph__fail(g, ENC_ERR_OUT_OF_MEMORY, "too many nodes", graph_op_name(op));
        return NULL;
    }
    int idx = g->n_nodes++;
    graph_node *n = &g->nodes[idx];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->dst = dst;
    n->src[0] = s0;
    n->src[1] = s1;
    n->src[2] = s2;
    return n;
}

/* Record the uses of a node's tensors once all its sources are set. */
static void graph__commit(graph *g, graph_node *n)
{
    int idx = (int)(n - g->nodes);
    for (int i = 0; i < GRAPH_MAX_SRC; i++)
        if (n->src[i]) graph__touch(n->src[i], idx);
    if (n->dst) graph__touch(n->dst, idx);
}

static int graph__ok(graph *g, int cond, const char *what, const graph_tensor *t)
{
    if (g->status != ENC_OK) return 0;
    if (!cond) graph__fail(g, ENC_ERR_INTERNAL, what, t ? t->name : NULL);
    return cond;
}

static int graph__is_f32_2d(const graph_tensor *t)
{
    return t && t->dtype == ENC_F32 && t->n_dims == 2;
}

graph_tensor *graph_get_rows(graph *g, graph_tensor *table, graph_tensor *ids)
{
    if (!graph__ok(g, table && ids && table->n_dims == 2 && ids->dtype == ENC_I32 && ids->n_dims == 1,
                   "get_rows: needs table [R, D] and i32 ids [n]", table))
        return NULL;
    graph_tensor *dst = graph_tensor_2d(g, GRAPH_INTERMEDIATE, ENC_F32, ids->shape[0],
                                        table->shape[1], "get_rows");
    graph_node *n = graph__node(g, GRAPH_OP_GET_ROWS, dst, table, ids, NULL);
    if (!n) return NULL;
    graph__commit(g, n);
    return dst;
}

graph_tensor *graph_rms_norm(graph *g, graph_tensor *x, graph_tensor *w, double eps)
{
    if (!graph__ok(g, x && w && x->dtype == ENC_F32 && w->dtype == ENC_F32 && w->n_dims == 1 &&
                          graph_tensor_nelements(x) % w->shape[0] == 0,
                   "rms_norm: x must be f32 with a multiple of len(w) elements", x))
        return NULL;
    graph_tensor *dst = graph_new_tensor(g, GRAPH_INTERMEDIATE, ENC_F32, x->n_dims, x->shape,
                                         "rms_norm");
    graph_node *n = graph__node(g, GRAPH_OP_RMS_NORM, dst, x, w, NULL);
    if (!n) return NULL;
    n->f[0] = eps;
    graph__commit(g, n);
    return dst;
}

/* Whether w's rows of k values are whole blocks when w is block-quantized
 * (Q8_K is an activation type, never a weight). */
static int graph__quant_rows_whole(enc_dtype dt, int64_t k)
{
    return !enc_dtype_is_quantized(dt) || (dt != ENC_Q8_K && enc_dtype_row_bytes(dt, k) > 0);
}

/* The scratch a matmul over quantized weights of dtype needs: the rows x
 * [rows, k] quantized once to the dot's activation type; over bf16 weights
 * with g->bf16_activations, the rows rounded to bf16; NULL for other float
 * weights. */
static graph_tensor *graph__act_scratch(graph *g, enc_dtype w_dtype, int64_t rows, int64_t k,
                                        const char *name)
{
    if (w_dtype == ENC_BF16 && g->bf16_activations)
        return graph_tensor_2d(g, GRAPH_INTERMEDIATE, ENC_BF16, rows, k, name);
    if (!enc_dtype_is_quantized(w_dtype)) return NULL;
    return graph_tensor_2d(g, GRAPH_INTERMEDIATE, quant_dot_dtype(w_dtype), rows, k, name);
}

graph_tensor *graph_matmul(graph *g, graph_tensor *x, graph_tensor *w)
{
    if (!graph__ok(g, graph__is_f32_2d(x) && w && w->n_dims == 2 && x->shape[1] == w->shape[1],
                   "matmul: needs x [T, K] f32 and w [N, K]", w))
        return NULL;
    if (!graph__ok(g, graph__quant_rows_whole(w->dtype, w->shape[1]),
                   "matmul: a quantized w needs K a multiple of its block size", w))
        return NULL;
    graph_tensor *dst = graph_tensor_2d(g, GRAPH_INTERMEDIATE, ENC_F32, x->shape[0], w->shape[0],
                                        w->name);
    graph_tensor *scratch = graph__act_scratch(g, w->dtype, x->shape[0], x->shape[1], "matmul_act");
    graph_node *n = graph__node(g, GRAPH_OP_MATMUL, dst, x, w, scratch);
    if (!n) return NULL;
    graph__commit(g, n);
    return dst;
}

graph_tensor *graph_rope_neox(graph *g, graph_tensor *x, graph_tensor *positions, int64_t n_heads,
                              int64_t head_dim, const enc_rope *rope)
{
    if (!graph__ok(g, graph__is_f32_2d(x) && positions && positions->dtype == ENC_I32 &&
                          positions->shape[0] == x->shape[0] && x->shape[1] == n_heads * head_dim &&
                          head_dim % 2 == 0,
                   "rope: needs x [T, H*hd] f32 and i32 positions [T]", x))
        return NULL;
    graph_node *n = graph__node(g, GRAPH_OP_ROPE_NEOX, x, x, positions, NULL);
    if (!n) return NULL;
    n->i[0] = n_heads;
    n->i[1] = head_dim;
    n->f[0] = rope->theta;
    n->f[1] = rope->factor;
    n->f[2] = rope->low;
    n->f[3] = rope->high;
    n->f[4] = rope->attn;
    graph__commit(g, n);
    return x;
}

enc_rope graph_rope_of(const graph_node *n)
{
    return (enc_rope){n->f[0], n->f[1], n->f[2], n->f[3], n->f[4]};
}

static graph_tensor *graph__elementwise(graph *g, graph_op op, graph_tensor *a, graph_tensor *b)
{
    if (!graph__ok(g, a && b && a->dtype == ENC_F32 && b->dtype == ENC_F32 &&
                          graph_tensor_nelements(a) == graph_tensor_nelements(b),
                   "elementwise op: operands must be f32 of one size", a))
        return NULL;
    graph_tensor *dst = graph_new_tensor(g, GRAPH_INTERMEDIATE, ENC_F32, a->n_dims, a->shape,
                                         graph_op_name(op));
    graph_node *n = graph__node(g, op, dst, a, b, NULL);
    if (!n) return NULL;
    graph__commit(g, n);
    return dst;
}

graph_tensor *graph_swiglu(graph *g, graph_tensor *gate, graph_tensor *up)
{
    return graph__elementwise(g, GRAPH_OP_SWIGLU, gate, up);
}

graph_tensor *graph_add(graph *g, graph_tensor *a, graph_tensor *b)
{
    return graph__elementwise(g, GRAPH_OP_ADD, a, b);
}

/* The K and V caches of a layer: 2-D, of one cache dtype (F32, F16, BF16,
 * or Q8_0 with rows of whole 32-value blocks). */
static int graph__is_cache(const graph_tensor *k_cache, const graph_tensor *v_cache)
{
    if (!k_cache || !v_cache || k_cache->n_dims != 2 || v_cache->n_dims != 2 ||
        k_cache->dtype != v_cache->dtype)
        return 0;
    enc_dtype dt = k_cache->dtype;
    if (dt == ENC_Q8_0) return k_cache->shape[1] % 32 == 0 && v_cache->shape[1] % 32 == 0;
    return dt == ENC_F32 || dt == ENC_F16 || dt == ENC_BF16;
}

void graph_store_kv(graph *g, graph_tensor *k, graph_tensor *v, graph_tensor *slot_mapping,
                    graph_tensor *k_cache, graph_tensor *v_cache)
{
    if (!graph__ok(g, graph__is_f32_2d(k) && graph__is_f32_2d(v) && graph__is_cache(k_cache, v_cache) &&
                          slot_mapping &&
                          slot_mapping->dtype == ENC_I32 && slot_mapping->shape[0] == k->shape[0] &&
                          k_cache->shape[1] == k->shape[1] && v_cache->shape[1] == v->shape[1],
                   "store_kv: shapes do not match", k))
        return;
    graph_node *n = graph__node(g, GRAPH_OP_STORE_KV, NULL, k, v, slot_mapping);
    if (!n) return;
    n->src[3] = k_cache;
    n->src[4] = v_cache;
    graph__commit(g, n);
}

graph_tensor *graph_attention(graph *g, graph_tensor *q, graph_tensor *k_cache,
                              graph_tensor *v_cache, graph_tensor *block_tables,
                              graph_tensor *seq_lens, graph_tensor *query_start_loc,
                              const graph_attention_params *p)
{
    if (!graph__ok(g, graph__is_f32_2d(q) && q->shape[1] == p->n_heads * p->head_dim &&
                          graph__is_cache(k_cache, v_cache) &&
                          (k_cache->dtype == ENC_F32 || p->head_dim <= GRAPH_CACHE16_HEAD_DIM_MAX) &&
                          (k_cache->dtype != ENC_Q8_0 || p->head_dim % 32 == 0) &&
                          p->n_kv_heads > 0 && p->n_heads % p->n_kv_heads == 0 && block_tables &&
                          block_tables->n_dims == 2 && seq_lens &&
                          seq_lens->shape[0] == block_tables->shape[0] && query_start_loc &&
                          query_start_loc->shape[0] == seq_lens->shape[0] + 1,
                   "attention: shapes do not match", q))
        return NULL;
    graph_tensor *dst = graph_new_tensor(g, GRAPH_INTERMEDIATE, ENC_F32, 2, q->shape, "attention");
    graph_node *n = graph__node(g, GRAPH_OP_ATTENTION, dst, q, k_cache, v_cache);
    if (!n) return NULL;
    n->src[3] = block_tables;
    n->src[4] = seq_lens;
    n->src[5] = query_start_loc;
    n->i[0] = p->n_heads;
    n->i[1] = p->n_kv_heads;
    n->i[2] = p->head_dim;
    n->i[3] = p->block_size;
    n->f[0] = p->scale;
    graph__commit(g, n);
    return dst;
}

graph_tensor *graph_argmax(graph *g, graph_tensor *x)
{
    if (!graph__ok(g, graph__is_f32_2d(x), "argmax: needs x [S, V] f32", x)) return NULL;
    graph_tensor *dst = graph_tensor_1d(g, GRAPH_INTERMEDIATE, ENC_I32, x->shape[0], "argmax");
    graph_node *n = graph__node(g, GRAPH_OP_ARGMAX, dst, x, NULL, NULL);
    if (!n) return NULL;
    graph__commit(g, n);
    return dst;
}

void graph_decode_advance(graph *g, graph_tensor *next, graph_tensor *input_ids,
                          graph_tensor *positions, graph_tensor *seq_lens,
                          graph_tensor *slot_mapping, graph_tensor *block_tables, int64_t block_size,
                          graph_tensor *out)
{
    graph_tensor *rows[] = {next, input_ids, positions, seq_lens, slot_mapping, out};
    int ok = block_tables && block_tables->dtype == ENC_I32 && block_size > 0;
    for (size_t i = 0; ok && i < sizeof rows / sizeof rows[0]; i++)
        ok = rows[i] && rows[i]->dtype == ENC_I32 && rows[i]->n_dims == 1 &&
             rows[i]->shape[0] == next->shape[0];
    if (!graph__ok(g, ok && block_tables->shape[0] == next->shape[0],
                   "decode_advance: needs [P] i32 rows and [P, W] block tables", next))
        return;
    graph_node *n = graph__node(g, GRAPH_OP_DECODE_ADVANCE, out, next, input_ids, positions);
    if (!n) return;
    n->src[3] = seq_lens;
    n->src[4] = slot_mapping;
    n->src[5] = block_tables;
    n->i[0] = block_size;
    graph__commit(g, n);
}

graph_tensor *graph_sample(graph *g, graph_tensor *logits, graph_tensor *params, graph_tensor *positions,
                           graph_tensor *history, graph_tensor *logprobs, graph_tensor *mask)
{
    int ok = graph__is_f32_2d(logits) && params && positions && history;
    int64_t S = ok ? logits->shape[0] : 0;
    ok = ok && params->dtype == ENC_I32 && params->n_dims == 2 && params->shape[0] == S &&
         params->shape[1] == GRAPH_SAMPLE_ROW_WORDS && positions->dtype == ENC_I32 && positions->n_dims == 1 &&
         positions->shape[0] == S && history->dtype == ENC_I32 && history->n_dims == 2 && history->shape[0] == S;
    ok = ok && (!logprobs || (logprobs->dtype == ENC_I32 && logprobs->n_dims == 2 && logprobs->shape[0] == S &&
                              logprobs->shape[1] == GRAPH_SAMPLE_LP_WORDS));
    ok = ok && (!mask || (mask->dtype == ENC_I32 && mask->n_dims == 2 && mask->shape[0] == S &&
                          mask->shape[1] == GRAPH_SAMPLE_MASK_WORDS(logits->shape[1])));
    if (!graph__ok(g, ok,
                   "sample: needs logits [S, V] f32, params [S, W], positions [S], history [S, H], "
                   "logprobs [S, LP] i32, mask [S, (V + 31) / 32] i32",
                   logits))
        return NULL;
    int64_t workers = S < GRAPH_SAMPLE_WORKERS ? S : GRAPH_SAMPLE_WORKERS;
    graph_tensor *scratch =
        graph_tensor_2d(g, GRAPH_INTERMEDIATE, ENC_I32, workers,
                        graph_sample_scratch_words(logits->shape[1]), "sample scratch");
    graph_tensor *dst = graph_tensor_1d(g, GRAPH_INTERMEDIATE, ENC_I32, S, "sampled ids");
    graph_node *n = graph__node(g, GRAPH_OP_SAMPLE, dst, logits, params, positions);
    if (!n || !scratch) return NULL;
    n->src[3] = history;
    n->src[4] = scratch;
    n->src[5] = logprobs;
    n->src[6] = mask;
    graph__commit(g, n);
    return dst;
}

/* --- mixture of experts ----------------------------------------------------- */

/* A node of one of the routing ops: dst [T, k] of dtype dt. */
static graph_tensor *graph__route_node(graph *g, graph_op op, enc_dtype dt, graph_tensor *logits,
                                       graph_tensor *ids, int64_t k, graph_router router, int norm)
{
    graph_tensor *dst = graph_tensor_2d(g, GRAPH_INTERMEDIATE, dt, logits->shape[0], k,
                                        graph_op_name(op));
    graph_node *n = graph__node(g, op, dst, logits, ids, NULL);
    if (!n) return NULL;
    n->i[0] = k;
    n->i[1] = router;
    n->i[2] = norm;
    graph__commit(g, n);
    return dst;
}

graph_tensor *graph_moe_route(graph *g, graph_tensor *logits, int64_t k, graph_router router,
                              int norm, graph_tensor **weights)
{
    *weights = NULL;
    if (!graph__ok(g, graph__is_f32_2d(logits) && k >= 1 && k <= logits->shape[1] &&
                          logits->shape[1] <= GRAPH_MOE_MAX_EXPERTS &&
                          (unsigned)router < GRAPH_ROUTER_COUNT,
                   "moe_route: needs logits [T, E] f32, 1 <= k <= E <= 512 and a known router",
                   logits))
        return NULL;
    graph_tensor *ids =
        graph__route_node(g, GRAPH_OP_MOE_ROUTE, ENC_I32, logits, NULL, k, router, norm);
    if (ids)
        *weights =
            graph__route_node(g, GRAPH_OP_MOE_WEIGHTS, ENC_F32, logits, ids, k, router, norm);
    return *weights ? ids : NULL;
}

int64_t graph_moe_group_words(int64_t pairs, int64_t experts)
{
    return pairs + 3 * ((pairs + GRAPH_MOE_GROUP_TILE - 1) / GRAPH_MOE_GROUP_TILE + experts);
}

graph_tensor *graph_matmul_id(graph *g, graph_tensor *x, graph_tensor *w, graph_tensor *ids)
{
    int ok = x && w && ids && x->dtype == ENC_F32 && ids->dtype == ENC_I32 && ids->n_dims == 2 &&
             w->n_dims == 3 && x->shape[0] == ids->shape[0];
    if (ok && x->n_dims == 2)
        ok = x->shape[1] == w->shape[2];
    else if (ok)
        ok = x->n_dims == 3 && x->shape[1] == ids->shape[1] && x->shape[2] == w->shape[2];
    if (!graph__ok(g, ok, "matmul_id: needs x [T, K] or [T, k, K] f32, w [E, N, K], ids [T, k] i32",
                   w))
        return NULL;
    if (!graph__ok(g, graph__quant_rows_whole(w->dtype, w->shape[2]),
                   "matmul_id: quantized experts need K a multiple of their block size", w))
        return NULL;
    int64_t shape[3] = {ids->shape[0], ids->shape[1], w->shape[1]};
    graph_tensor *dst = graph_new_tensor(g, GRAPH_INTERMEDIATE, ENC_F32, 3, shape, w->name);
    int64_t k = x->shape[x->n_dims - 1];
    graph_tensor *scratch =
        graph__act_scratch(g, w->dtype, graph_tensor_nelements(x) / k, k, "matmul_id_act");
    int64_t pairs = ids->shape[0] * ids->shape[1];
    graph_tensor *group = graph_tensor_1d(g, GRAPH_INTERMEDIATE, ENC_I32,
                                          graph_moe_group_words(pairs, w->shape[0]),
                                          "matmul_id_group");
    graph_node *n = graph__node(g, GRAPH_OP_MATMUL_ID, dst, x, w, ids);
    if (!n) return NULL;
    n->src[3] = scratch;
    n->src[4] = group;
    graph__commit(g, n);
    return dst;
}

graph_tensor *graph_moe_sum(graph *g, graph_tensor *y, graph_tensor *weights)
{
    if (!graph__ok(g, y && weights && y->dtype == ENC_F32 && y->n_dims == 3 &&
                          graph__is_f32_2d(weights) && weights->shape[0] == y->shape[0] &&
                          weights->shape[1] == y->shape[1],
                   "moe_sum: needs y [T, k, N] f32 and weights [T, k] f32", y))
        return NULL;
    graph_tensor *dst =
        graph_tensor_2d(g, GRAPH_INTERMEDIATE, ENC_F32, y->shape[0], y->shape[2], "moe_sum");
    graph_node *n = graph__node(g, GRAPH_OP_MOE_SUM, dst, y, weights, NULL);
    if (!n) return NULL;
    graph__commit(g, n);
    return dst;
}

/* --- planning ------------------------------------------------------------ */

/* A live interval of the arena: [offset, offset + size) owned by a tensor
 * until node `last_use`. Kept sorted by offset. */
typedef struct graph__live {
    size_t offset, size;
    int last_use;
    bool private; /* used by one node only: a scratch */
} graph__live;

static size_t graph__align(size_t n) { return (n + 63) & ~(size_t)63; }

/* First fit: the lowest offset where `size` bytes fit between live blocks. */
static size_t graph__first_fit(const graph__live *live, int n_live, size_t size)
{
    size_t at = 0;
    for (int i = 0; i < n_live; i++) {
        if (live[i].offset >= at + size) break;
        if (live[i].offset + live[i].size > at) at = live[i].offset + live[i].size;
    }
    return at;
}

static void graph__insert_live(graph__live *live, int *n_live, graph__live block)
{
    int i = *n_live;
    while (i > 0 && live[i - 1].offset > block.offset) {
        live[i] = live[i - 1];
        i--;
    }
    live[i] = block;
    (*n_live)++;
}

enc_status graph_plan(graph *g, backend_buffer *arena_buffer)
{
    if (g->status != ENC_OK) return g->status;
    graph__live *live = arena_alloc(g->arena, sizeof *live * (size_t)(g->n_tensors + 1));
    if (!live) return g->status = enc_fail(ENC_ERR_OUT_OF_MEMORY, "graph_plan: host arena full");
    int n_live = 0;
    size_t peak = 0;
    /* Walk the nodes in order; a node's output is placed when the node is
     * reached, after freeing what died before it (inputs of this node stay),
     * and so is an intermediate source that no earlier node touched (a
     * kernel's scratch, such as the sampler's). A scratch is freed only
     * GRAPH_REUSE_GAP nodes after its node: so the output of k's matmul does
     * not take the bytes of the q matmul's activation scratch, and the q, k
     * and v matmuls of a layer, writing no byte another reads, can run
     * together. */
    for (int node = 0; node < g->n_nodes; node++) {
        int keep = 0;
        for (int i = 0; i < n_live; i++)
            if (live[i].last_use + (live[i].private ? GRAPH_REUSE_GAP : 1) > node)
                live[keep++] = live[i];
        n_live = keep;
        const graph_node *n = &g->nodes[node];
        graph_tensor *place[1 + GRAPH_MAX_SRC];
        int n_place = 0;
        place[n_place++] = n->dst;
        for (int i = 0; i < GRAPH_MAX_SRC; i++)
            if (n->src[i] && n->src[i] != n->dst) place[n_place++] = n->src[i];
        for (int i = 0; i < n_place; i++) {
            graph_tensor *t = place[i];
            int again = 0; /* a tensor named twice by the node is placed once */
            for (int j = 0; j < i; j++) again |= place[j] == t;
            if (!t || again || t->kind != GRAPH_INTERMEDIATE || t->first_use != node) continue;
            size_t size = graph__align(graph_tensor_nbytes(t));
            size_t at = graph__first_fit(live, n_live, size);
            graph__insert_live(live, &n_live,
                              (graph__live){at, size, t->last_use, t->first_use == t->last_use});
            graph_bind(t, arena_buffer, at);
            if (at + size > peak) peak = at + size;
        }
    }
    g->arena_size = peak;
    return ENC_OK;
}
