/* cpu_backend.c - the CPU backend: host buffers, and eager execution of a
 * step graph, one thread-pool run per node.
 *
 * Each node is resolved to raw pointers (buffer base + offset, bounds
 * checked against the buffer) and handed to its kernel, which every pool
 * thread calls with its (ith, nth) share. What differs per op (its sizes,
 * its cost, its kernel) is one row of cpu__op_table. A matmul over
 * block-quantized weights (a matmul, or a matmul_id over stacked experts) is
 * two calls: its activations quantized, then the integer dots (cpu__prepare). */
#define _DEFAULT_SOURCE
#include "backend/cpu/cpu_backend.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_moe.h"
#include "backend/cpu/repack.h"
#include "base/env_flag.h"
#include "base/log.h"
#include "base/quant.h"
#include "base/threadpool.h"

struct backend_buffer {
    unsigned char *data;
    size_t size;
    char what[64]; /* what it holds, for error messages */
    /* packed_mats weight matrices [rows, k] of dtype one after another,
     * each in the interleaved layout of repack.h (cpu__buffer_repack_matrix),
     * read by matmul and get_rows (one matrix) or matmul_id (a stack of
     * experts) only; false: the bytes as written. */
    bool packed;
    enc_dtype packed_dtype;
    int64_t packed_mats, packed_rows, packed_k;
};

static void cpu__name(backend_buffer *b, const char *what)
{
    snprintf(b->what, sizeof b->what, "%s", what ? what : "buffer");
}

typedef struct backend_recording backend_recording;

typedef struct cpu__ctx {
    enc_threadpool *pool;
    bool repack; /* lay weight matrices out for the kernels (ENCORE_CPU_REPACK, default 1) */
    backend_recording *capturing; /* the recording being made, NULL when not capturing */
} cpu__ctx;

/* The capture contract: no host<->device traffic and no allocation while
 * capturing. */
static enc_status cpu__refuse_in_capture(backend *be, const char *call, const char *what)
{
    const cpu__ctx *ctx = be->ctx;
    return backend_refuse_in_capture(be, ctx->capturing != NULL, call, what);
}

/* --- buffers ------------------------------------------------------------- */

/* Buffers come from mmap: page-aligned, and zero pages the kernel fills
 * lazily, so a large KV pool costs nothing until it is used. Large ones ask
 * for transparent huge pages: decode streams every weight once per token, and
 * with 4 KiB pages the TLB misses and the prefetcher stopping at each page
 * boundary cost a fifth of the speed (Qwen3-0.6B geometry, bf16: 14.2 tokens/s
 * from the file mapping, 17.5 from huge-page buffers). That is also why this
 * backend has no buffer_from_host: weights are copied in, as to a GPU. */
enum { CPU__HUGE_PAGE = 2 << 20 };
static enc_status cpu__buffer_alloc(backend *be, size_t size, const char *what,
                                    backend_buffer **out)
{
    *out = NULL;
    ENC_TRY(cpu__refuse_in_capture(be, "alloc", what));
    backend_buffer *b = calloc(1, sizeof *b);
    void *p = MAP_FAILED;
    if (b) p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!b || p == MAP_FAILED) {
        free(b);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes for %s", size,
                        what ? what : "a buffer");
    }
    if (size >= CPU__HUGE_PAGE) madvise(p, size, MADV_HUGEPAGE); /* best effort */
    b->data = p;
    b->size = size;
    cpu__name(b, what);
    *out = b;
    return ENC_OK;
}

static enc_status cpu__buffer_free(backend *be, backend_buffer *b)
{
    if (!b) return ENC_OK;
    ENC_TRY(cpu__refuse_in_capture(be, "free", b->what));
    munmap(b->data, b->size ? b->size : 1);
    free(b);
    return ENC_OK;
}

static enc_status cpu__check_range(const backend_buffer *b, size_t offset, size_t size,
                                   const char *call)
{
    if (offset > b->size || size > b->size - offset)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "cpu: %s of %zu bytes at offset %zu outside a %zu-byte buffer",
                        call, size, offset, b->size);
    return ENC_OK;
}

static enc_status cpu__buffer_write(backend *be, backend_buffer *b, size_t offset,
                                    const void *src, size_t size)
{
    ENC_TRY(cpu__refuse_in_capture(be, "write", b->what));
    ENC_TRY(cpu__check_range(b, offset, size, "write"));
    if (b->packed)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "cpu: write of %zu bytes at offset %zu to '%s', a %s matrix repacked for "
                        "the matmul kernels (ENCORE_CPU_REPACK=0 keeps the row layout)",
                        size, offset, b->what, enc_dtype_name(b->packed_dtype));
    memcpy(b->data + offset, src, size);
    return ENC_OK;
}

/* A repacked buffer is read in its row layout: every matrix of it back in
 * rows in a copy, then the bytes asked for. */
static enc_status cpu__read_packed(const backend_buffer *b, size_t offset, void *dst, size_t size)
{
    unsigned char *rows = malloc(b->size);
    void *tmp = malloc(cpu_repack_tmp_bytes(b->packed_dtype, b->packed_k));
    enc_status s = ENC_OK;
    if (!rows || !tmp)
        s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: read of '%s' (%zu bytes)", b->what, b->size);
    else {
        memcpy(rows, b->data, b->size);
        size_t mb = b->size / (size_t)b->packed_mats; /* bytes of one matrix */
        for (int64_t m = 0; m < b->packed_mats; m++)
            cpu_repack_matrix(rows + (size_t)m * mb, b->packed_dtype, b->packed_rows, b->packed_k,
                              true, tmp);
        memcpy(dst, rows + offset, size);
    }
    free(tmp);
    free(rows);
    return s;
}

static enc_status cpu__buffer_read(backend *be, backend_buffer *b, size_t offset, void *dst,
                                   size_t size)
{
    ENC_TRY(cpu__refuse_in_capture(be, "read", b->what));
    ENC_TRY(cpu__check_range(b, offset, size, "read"));
    if (b->packed) return cpu__read_packed(b, offset, dst, size);
    memcpy(dst, b->data + offset, size);
    return ENC_OK;
}

/* Weight matrices of the types repack.h lays out take its interleaved
 * layout, each of a stack on its own (so an expert's bytes stay where they
 * were, a matrix of the layout), unless ENCORE_CPU_REPACK=0; any other
 * stays as written. */
static enc_status cpu__buffer_repack_matrix(backend *be, backend_buffer *b, enc_dtype dt,
                                            int64_t n_mats, int64_t rows, int64_t k)
{
    const cpu__ctx *ctx = be->ctx;
    ENC_TRY(cpu__refuse_in_capture(be, "repack", b->what));
    if (!ctx->repack || b->packed || n_mats < 1 || !cpu_repack_supports(dt, rows, k)) return ENC_OK;
    size_t mb = (size_t)rows * enc_dtype_row_bytes(dt, k); /* bytes of one matrix */
    if (mb * (size_t)n_mats != b->size)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "cpu: repack of '%s': %lld [%lld, %lld] %s matrices are %zu bytes, the "
                        "buffer %zu",
                        b->what, (long long)n_mats, (long long)rows, (long long)k,
                        enc_dtype_name(dt), mb * (size_t)n_mats, b->size);
    void *tmp = malloc(cpu_repack_tmp_bytes(dt, k));
    if (!tmp) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: repack of '%s'", b->what);
    for (int64_t m = 0; m < n_mats; m++)
        cpu_repack_matrix(b->data + (size_t)m * mb, dt, rows, k, false, tmp);
    free(tmp);
    b->packed = true;
    b->packed_dtype = dt;
    b->packed_mats = n_mats;
    b->packed_rows = rows;
    b->packed_k = k;
    return ENC_OK;
}

/* --- prepared kernel calls ------------------------------------------------- */

/* One node resolved to raw pointers and sizes: everything its kernel needs,
 * so that a recording does not depend on the graph it was made from. The
 * sizes are per op, in the member of the union named after it (cpu__op_table
 * below fills and reads them). */
typedef struct cpu__call {
    graph_op op;
    void *dst;
    void *src[GRAPH_MAX_SRC];
    union {
        struct {
            enc_dtype dtype; /* of the table */
            int64_t n_rows, dim, n_ids;
            bool packed; /* the table interleaved (repack.h) */
        } get_rows;
        struct { int64_t rows, dim; float eps; } rms_norm;
        /* matmul: src0 is x, or its 8-bit blocks for a quantized w, or its bf16
         * rounding for a bf16 w (x_bf16); packed: w interleaved (repack.h) */
        struct {
            enc_dtype w_dtype;
            int64_t n_tokens, k, n_out;
            bool packed, x_bf16;
        } matmul;
        struct { enc_dtype dtype; int64_t rows, k; } quantize; /* dst: rows in dtype blocks */
        struct { int64_t n_tokens, n_heads, head_dim; enc_rope rope; } rope_neox;
        struct { int64_t n; } elementwise; /* swiglu, add: elements */
        struct { int64_t n_tokens, kv_dim; enc_dtype cache_dtype; } store_kv;
        cpu_attention_args attention;
        struct { int64_t rows, cols; } argmax;
        cpu_advance_args decode_advance;
        cpu_sample_args sample;
        struct { int64_t n_tokens, n_experts, k; int router, norm; } moe_route; /* and weights */
        cpu_matmul_id_args matmul_id;
        struct { int64_t n_tokens, k, n; } moe_sum;
    };
    bool serial; /* too small to be worth waking the other threads */
    size_t dst_bytes, src_bytes[GRAPH_MAX_SRC]; /* what dst and src[] span (cpu__joins) */
} cpu__call;

/* What the backend knows of one op: how to fill a call's arguments from its
 * node (pointers already resolved), a rough count of the call's arithmetic
 * (to choose serial or parallel), and the kernel run with an (ith, nth) share. */
typedef struct cpu__op {
    void (*prepare)(const graph_node *n, cpu__call *c);
    int64_t (*cost)(const cpu__call *c);
    void (*run)(const cpu__call *c, int ith, int nth);
} cpu__op;

/* get_rows: dst[n_ids, dim] = table[n_rows, dim][ids] */
static void cpu__prepare_get_rows(const graph_node *n, cpu__call *c)
{
    const graph_tensor *table = n->src[0];
    c->get_rows.dtype = table->dtype;
    c->get_rows.n_rows = table->shape[0];
    c->get_rows.dim = table->shape[1];
    c->get_rows.n_ids = n->src[1]->shape[0];
    c->get_rows.packed = table->buffer && table->buffer->packed;
}
static int64_t cpu__cost_get_rows(const cpu__call *c)
{
    return c->get_rows.dim * c->get_rows.n_ids;
}
static void cpu__run_get_rows(const cpu__call *c, int ith, int nth)
{
    void (*get)(const void *, enc_dtype, int64_t, int64_t, const int32_t *, int64_t, float *, int,
                int) = c->get_rows.packed ? cpu_get_rows_packed : cpu_get_rows;
    get(c->src[0], c->get_rows.dtype, c->get_rows.n_rows, c->get_rows.dim, c->src[1],
        c->get_rows.n_ids, c->dst, ith, nth);
}

/* rms_norm: rows of length len(weights) */
static void cpu__prepare_rms_norm(const graph_node *n, cpu__call *c)
{
    c->rms_norm.dim = n->src[1]->shape[0];
    c->rms_norm.rows = graph_tensor_nelements(n->src[0]) / c->rms_norm.dim;
    c->rms_norm.eps = (float)n->f[0];
}
static int64_t cpu__cost_rms_norm(const cpu__call *c)
{
    return 4 * c->rms_norm.rows * c->rms_norm.dim;
}
static void cpu__run_rms_norm(const cpu__call *c, int ith, int nth)
{
    cpu_rms_norm(c->src[0], c->src[1], c->rms_norm.rows, c->rms_norm.dim, c->rms_norm.eps, c->dst,
                 ith, nth);
}

/* The source slot of a matmul's activation scratch: src2 of a matmul,
 * src3 of a matmul_id (whose src2 is the expert ids). */
static int cpu__scratch_src(const graph_node *n)
{
    return n->op == GRAPH_OP_MATMUL_ID ? 3 : 2;
}

/* The type of the activations the dots of matmul (or matmul_id) n read
 * from its scratch: a block type's 8-bit form (quant_dot_dtype), BF16 when
 * the graph gave a bf16 w a BF16 scratch (graph->bf16_activations), else
 * F32: x itself, no scratch. */
static enc_dtype cpu__dot_act_dtype(const graph_node *n)
{
    enc_dtype w = n->src[1]->dtype;
    if (enc_dtype_is_quantized(w)) return quant_dot_dtype(w);
    const graph_tensor *scratch = n->src[cpu__scratch_src(n)];
    return w == ENC_BF16 && scratch && scratch->dtype == ENC_BF16 ? ENC_BF16 : ENC_F32;
}

static bool cpu__bf16_activations(const graph_node *n)
{
    return cpu__dot_act_dtype(n) == ENC_BF16;
}

/* matmul: x[n_tokens, k] @ w[n_out, k]^T */
static void cpu__prepare_matmul(const graph_node *n, cpu__call *c)
{
    const graph_tensor *x = n->src[0], *w = n->src[1];
    c->matmul.w_dtype = w->dtype;
    c->matmul.n_tokens = x->shape[0];
    c->matmul.k = x->shape[1];
    c->matmul.n_out = w->shape[0];
    c->matmul.packed = w->buffer->packed;
    c->matmul.x_bf16 = cpu__bf16_activations(n);
}
static int64_t cpu__cost_matmul(const cpu__call *c)
{
    return 2 * c->matmul.n_tokens * c->matmul.k * c->matmul.n_out;
}
static void cpu__run_matmul(const cpu__call *c, int ith, int nth)
{
    if (c->matmul.x_bf16) {
        cpu_matmul_bf16x(c->src[0], c->matmul.n_tokens, c->matmul.k, c->src[1], c->matmul.n_out,
                         c->dst, ith, nth);
        return;
    }
    void (*matmul)(const void *, int64_t, int64_t, const void *, enc_dtype, int64_t, float *, int,
                   int) = c->matmul.packed ? cpu_matmul_packed : cpu_matmul;
    matmul(c->src[0], c->matmul.n_tokens, c->matmul.k, c->src[1], c->matmul.w_dtype,
           c->matmul.n_out, c->dst, ith, nth);
}

/* quantize (no graph op: the first of a quantized matmul's or matmul_id's
 * two calls): every row of x ([T, K] or [T, k, K]) into the node's scratch,
 * in 8-bit blocks */
static void cpu__prepare_quantize(const graph_node *n, cpu__call *c)
{
    const graph_tensor *x = n->src[0];
    int scratch = cpu__scratch_src(n);
    c->quantize.dtype = n->src[scratch]->dtype;
    c->quantize.k = x->shape[x->n_dims - 1];
    c->quantize.rows = graph_tensor_nelements(x) / c->quantize.k;
    c->dst = c->src[scratch];
    c->dst_bytes = graph_tensor_nbytes(n->src[scratch]);
}
static int64_t cpu__cost_quantize(const cpu__call *c) { return 4 * c->quantize.rows * c->quantize.k; }
static void cpu__run_quantize(const cpu__call *c, int ith, int nth)
{
    cpu_quantize_rows(c->src[0], c->quantize.rows, c->quantize.k, c->quantize.dtype, c->dst, ith,
                      nth);
}

/* rope_neox: x[n_tokens, n_heads * head_dim] in place */
static void cpu__prepare_rope_neox(const graph_node *n, cpu__call *c)
{
    c->rope_neox.n_tokens = n->src[0]->shape[0];
    c->rope_neox.n_heads = n->i[0];
    c->rope_neox.head_dim = n->i[1];
    c->rope_neox.rope = graph_rope_of(n);
}
static int64_t cpu__cost_rope_neox(const cpu__call *c)
{
    return 8 * c->rope_neox.n_tokens * c->rope_neox.n_heads * c->rope_neox.head_dim;
}
static void cpu__run_rope_neox(const cpu__call *c, int ith, int nth)
{
    cpu_rope_neox(c->src[0], c->rope_neox.n_tokens, c->rope_neox.n_heads, c->rope_neox.head_dim,
                  c->src[1], &c->rope_neox.rope, ith, nth);
}

/* swiglu, add: n elements */
static void cpu__prepare_elementwise(const graph_node *n, cpu__call *c)
{
    c->elementwise.n = graph_tensor_nelements(n->src[0]);
}
static int64_t cpu__cost_elementwise(const cpu__call *c) { return 4 * c->elementwise.n; }
static void cpu__run_swiglu(const cpu__call *c, int ith, int nth)
{
    cpu_swiglu(c->src[0], c->src[1], c->dst, c->elementwise.n, ith, nth);
}
static void cpu__run_add(const cpu__call *c, int ith, int nth)
{
    cpu_add(c->src[0], c->src[1], c->dst, c->elementwise.n, ith, nth);
}

/* store_kv: k, v [n_tokens, kv_dim] */
static void cpu__prepare_store_kv(const graph_node *n, cpu__call *c)
{
    c->store_kv.n_tokens = n->src[0]->shape[0];
    c->store_kv.kv_dim = n->src[0]->shape[1];
    c->store_kv.cache_dtype = n->src[3]->dtype;
}
static int64_t cpu__cost_store_kv(const cpu__call *c)
{
    return 2 * c->store_kv.n_tokens * c->store_kv.kv_dim;
}
static void cpu__run_store_kv(const cpu__call *c, int ith, int nth)
{
    cpu_reshape_and_cache(c->src[0], c->src[1], c->store_kv.n_tokens, c->store_kv.kv_dim, c->src[2],
                          c->store_kv.cache_dtype, c->src[3], c->src[4], ith, nth);
}

/* attention: the kernel's own argument struct */
static void cpu__prepare_attention(const graph_node *n, cpu__call *c)
{
    cpu_attention_args *a = &c->attention;
    a->q = c->src[0];
    a->k_cache = c->src[1];
    a->v_cache = c->src[2];
    a->cache_dtype = n->src[1]->dtype;
    a->block_tables = c->src[3];
    a->seq_lens = c->src[4];
    a->query_start_loc = c->src[5];
    a->out = c->dst;
    a->n_seqs = n->src[4]->shape[0];
    a->max_blocks = n->src[3]->shape[1];
    a->n_heads = n->i[0];
    a->n_kv_heads = n->i[1];
    a->head_dim = n->i[2];
    a->block_size = n->i[3];
    a->scale = (float)n->f[0];
}
/* The context length is unknown until the step runs: take 256. */
static int64_t cpu__cost_attention(const cpu__call *c)
{
    const cpu_attention_args *a = &c->attention;
    int64_t tokens = a->n_seqs ? a->n_seqs : 1; /* at least one query per sequence */
    return 4 * tokens * a->n_heads * a->head_dim * 256;
}
static void cpu__run_attention(const cpu__call *c, int ith, int nth)
{
    cpu_paged_attention(&c->attention, ith, nth);
}

/* argmax: over rows of x[rows, cols] */
static void cpu__prepare_argmax(const graph_node *n, cpu__call *c)
{
    c->argmax.rows = n->src[0]->shape[0];
    c->argmax.cols = n->src[0]->shape[1];
}
static int64_t cpu__cost_argmax(const cpu__call *c) { return c->argmax.rows * c->argmax.cols; }
static void cpu__run_argmax(const cpu__call *c, int ith, int nth)
{
    cpu_argmax(c->src[0], c->argmax.rows, c->argmax.cols, c->dst, ith, nth);
}

/* decode_advance: the kernel's own argument struct */
static void cpu__prepare_decode_advance(const graph_node *n, cpu__call *c)
{
    c->decode_advance = (cpu_advance_args){
        .next = c->src[0],
        .input_ids = c->src[1],
        .positions = c->src[2],
        .seq_lens = c->src[3],
        .slot_mapping = c->src[4],
        .block_tables = c->src[5],
        .out = c->dst,
        .n_rows = n->src[0]->shape[0],
        .max_blocks = n->src[5]->shape[1],
        .block_size = n->i[0],
    };
}
static int64_t cpu__cost_decode_advance(const cpu__call *c) { return 0; }
static void cpu__run_decode_advance(const cpu__call *c, int ith, int nth)
{
    cpu_decode_advance(&c->decode_advance, ith, nth);
}

/* sample: the kernel's own argument struct */
static void cpu__prepare_sample(const graph_node *n, cpu__call *c)
{
    c->sample = (cpu_sample_args){
        .logits = c->src[0],
        .params = c->src[1],
        .positions = c->src[2],
        .history = c->src[3],
        .scratch = c->src[4],
        .logprobs = c->src[5],
        .mask = c->src[6],
        .out = c->dst,
        .n_rows = n->src[0]->shape[0],
        .n_vocab = n->src[0]->shape[1],
        .hist_len = n->src[3]->shape[1],
        .n_workers = n->src[4]->shape[0],
        .scratch_stride = n->src[4]->shape[1],
    };
}
/* A row costs a few passes over the vocabulary (exp in the sampled ones). */
static int64_t cpu__cost_sample(const cpu__call *c) { return 8 * c->sample.n_rows * c->sample.n_vocab; }
static void cpu__run_sample(const cpu__call *c, int ith, int nth) { cpu_sample(&c->sample, ith, nth); }
/* moe_route, moe_weights: logits [n_tokens, n_experts] -> [n_tokens, k] */
static void cpu__prepare_moe_route(const graph_node *n, cpu__call *c)
{
    c->moe_route.n_tokens = n->src[0]->shape[0];
    c->moe_route.n_experts = n->src[0]->shape[1];
    c->moe_route.k = n->i[0];
    c->moe_route.router = (int)n->i[1];
    c->moe_route.norm = (int)n->i[2];
}
static int64_t cpu__cost_moe_route(const cpu__call *c)
{
    return 8 * c->moe_route.n_tokens * c->moe_route.n_experts * (c->moe_route.k + 1);
}
static void cpu__run_moe_route(const cpu__call *c, int ith, int nth)
{
    cpu_moe_route(c->src[0], c->moe_route.n_tokens, c->moe_route.n_experts, c->moe_route.k,
                  c->moe_route.router, c->dst, ith, nth);
}
static void cpu__run_moe_weights(const cpu__call *c, int ith, int nth)
{
    cpu_moe_weights(c->src[0], c->src[1], c->moe_route.n_tokens, c->moe_route.n_experts,
                    c->moe_route.k, c->moe_route.router, c->moe_route.norm, c->dst, ith, nth);
}

/* matmul_id: the kernel's own argument struct */
static void cpu__prepare_matmul_id(const graph_node *n, cpu__call *c)
{
    const graph_tensor *x = n->src[0], *w = n->src[1], *ids = n->src[2];
    c->matmul_id = (cpu_matmul_id_args){
        .x = c->src[0],
        .x_per_slot = x->n_dims == 3,
        .ids = c->src[2],
        .w = c->src[1],
        .w_dtype = w->dtype,
        .y = c->dst,
        .n_tokens = ids->shape[0],
        .k = ids->shape[1],
        .n_in = w->shape[2],
        .n_out = w->shape[1],
        .n_experts = w->shape[0],
        .packed = w->buffer && w->buffer->packed,
        .x_bf16 = cpu__bf16_activations(n),
    };
}
static int64_t cpu__cost_matmul_id(const cpu__call *c)
{
    const cpu_matmul_id_args *a = &c->matmul_id;
    return 2 * a->n_tokens * a->k * a->n_in * a->n_out;
}
static void cpu__run_matmul_id(const cpu__call *c, int ith, int nth)
{
    cpu_matmul_id(&c->matmul_id, ith, nth);
}

/* moe_sum: y [n_tokens, k, n] -> [n_tokens, n] */
static void cpu__prepare_moe_sum(const graph_node *n, cpu__call *c)
{
    c->moe_sum.n_tokens = n->src[0]->shape[0];
    c->moe_sum.k = n->src[0]->shape[1];
    c->moe_sum.n = n->src[0]->shape[2];
}
static int64_t cpu__cost_moe_sum(const cpu__call *c)
{
    return 2 * c->moe_sum.n_tokens * c->moe_sum.k * c->moe_sum.n;
}
static void cpu__run_moe_sum(const cpu__call *c, int ith, int nth)
{
    cpu_moe_sum(c->src[0], c->src[1], c->moe_sum.n_tokens, c->moe_sum.k, c->moe_sum.n, c->dst,
                ith, nth);
}

/* The calls that are no graph op of their own (after the graph's ops). */
enum { CPU__OP_QUANTIZE = GRAPH_OP_COUNT, CPU__OP_COUNT };

/* Every op of the graph, one row each: a new op adds its row here. */
static const cpu__op cpu__op_table[CPU__OP_COUNT] = {
    [GRAPH_OP_GET_ROWS] = {cpu__prepare_get_rows, cpu__cost_get_rows, cpu__run_get_rows},
    [GRAPH_OP_RMS_NORM] = {cpu__prepare_rms_norm, cpu__cost_rms_norm, cpu__run_rms_norm},
    [GRAPH_OP_MATMUL] = {cpu__prepare_matmul, cpu__cost_matmul, cpu__run_matmul},
    [GRAPH_OP_ROPE_NEOX] = {cpu__prepare_rope_neox, cpu__cost_rope_neox, cpu__run_rope_neox},
    [GRAPH_OP_SWIGLU] = {cpu__prepare_elementwise, cpu__cost_elementwise, cpu__run_swiglu},
    [GRAPH_OP_ADD] = {cpu__prepare_elementwise, cpu__cost_elementwise, cpu__run_add},
    [GRAPH_OP_STORE_KV] = {cpu__prepare_store_kv, cpu__cost_store_kv, cpu__run_store_kv},
    [GRAPH_OP_ATTENTION] = {cpu__prepare_attention, cpu__cost_attention, cpu__run_attention},
    [GRAPH_OP_ARGMAX] = {cpu__prepare_argmax, cpu__cost_argmax, cpu__run_argmax},
    [GRAPH_OP_DECODE_ADVANCE] = {cpu__prepare_decode_advance, cpu__cost_decode_advance,
                                 cpu__run_decode_advance},
    [GRAPH_OP_SAMPLE] = {cpu__prepare_sample, cpu__cost_sample, cpu__run_sample},
    [GRAPH_OP_MOE_ROUTE] = {cpu__prepare_moe_route, cpu__cost_moe_route, cpu__run_moe_route},
    [GRAPH_OP_MOE_WEIGHTS] = {cpu__prepare_moe_route, cpu__cost_moe_route, cpu__run_moe_weights},
    [GRAPH_OP_MATMUL_ID] = {cpu__prepare_matmul_id, cpu__cost_matmul_id, cpu__run_matmul_id},
    [GRAPH_OP_MOE_SUM] = {cpu__prepare_moe_sum, cpu__cost_moe_sum, cpu__run_moe_sum},
    [CPU__OP_QUANTIZE] = {cpu__prepare_quantize, cpu__cost_quantize, cpu__run_quantize},
};

/* Below this many arithmetic operations a call runs on one thread: waking and
 * joining the pool costs more (a few microseconds on an idle machine, far
 * more on a busy one). Results do not depend on it: kernels are invariant
 * to the thread count. */
enum { CPU__SERIAL_OPS = 1 << 16 };

static enc_status cpu__resolve(const graph_tensor *t, const graph_node *n, void **out)
{
    *out = NULL;
    if (!t) return ENC_OK;
    const backend_buffer *b = t->buffer;
    if (!b)
        return enc_fail(ENC_ERR_INTERNAL, "cpu: %s: tensor '%s' is bound to no buffer",
                        graph_op_name(n->op), t->name ? t->name : "?");
    ENC_TRY(cpu__check_range(b, t->offset, graph_tensor_nbytes(t), t->name ? t->name : "tensor"));
    *out = b->data + t->offset;
    return ENC_OK;
}

/* A repacked matrix (cpu__buffer_repack_matrix) is read by a matmul as its
 * weight or by get_rows as its table, a repacked stack of experts by a
 * matmul_id as its weight, the whole buffer, in the shape and type it was
 * repacked in (all three read the interleaved layout); any other use would
 * read the interleaved bytes as rows, and is refused. */
static enc_status cpu__check_packed(const graph_node *n, int s)
{
    const graph_tensor *t = n->src[s];
    const backend_buffer *b = t ? t->buffer : NULL;
    if (!b || !b->packed) return ENC_OK;
    bool reader = b->packed_mats == 1 ? (n->op == GRAPH_OP_MATMUL && s == 1) ||
                                            (n->op == GRAPH_OP_GET_ROWS && s == 0)
                                      : n->op == GRAPH_OP_MATMUL_ID && s == 1;
    int nd = b->packed_mats == 1 ? 2 : 3; /* t's shape: [rows, k] or [mats, rows, k] */
    bool ok = reader && t->offset == 0 && t->n_dims == nd && t->dtype == b->packed_dtype &&
              (nd == 2 || t->shape[0] == b->packed_mats) && t->shape[nd - 2] == b->packed_rows &&
              t->shape[nd - 1] == b->packed_k;
    if (ok) return ENC_OK;
    return enc_fail(
        ENC_ERR_INVALID_ARGUMENT,
        "cpu: %s: source %d, tensor '%s', reads '%s', %lld [%lld, %lld] %s matrices "
        "repacked for matmul and get_rows (one) or matmul_id (a stack) only "
        "(ENCORE_CPU_REPACK=0 keeps the row layout)",
        graph_op_name(n->op), s, t->name ? t->name : "?", b->what, (long long)b->packed_mats,
        (long long)b->packed_rows, (long long)b->packed_k, enc_dtype_name(b->packed_dtype));
}

/* One call of node n as the op `op` (n->op, or a call of its own). */
static enc_status cpu__prepare_as(const graph_node *n, int op_id, cpu__call *c)
{
    memset(c, 0, sizeof *c);
    c->op = (graph_op)op_id;
    ENC_TRY(cpu__resolve(n->dst, n, &c->dst));
    c->dst_bytes = n->dst ? graph_tensor_nbytes(n->dst) : 0;
    for (int s = 0; s < GRAPH_MAX_SRC; s++) {
        ENC_TRY(cpu__resolve(n->src[s], n, &c->src[s]));
        ENC_TRY(cpu__check_packed(n, s));
        c->src_bytes[s] = n->src[s] ? graph_tensor_nbytes(n->src[s]) : 0;
    }
    const cpu__op *op = op_id >= 0 && op_id < CPU__OP_COUNT ? &cpu__op_table[op_id] : NULL;
    if (!op || !op->run) return enc_fail(ENC_ERR_INTERNAL, "cpu: unknown op");
    op->prepare(n, c);
    c->serial = op->cost(c) < CPU__SERIAL_OPS;
    return ENC_OK;
}

/* The calls of node n, in order, into c[0 .. *n_calls): one per node, but a
 * matmul or matmul_id over block-quantized weights is two: its activations
 * quantized into the node's scratch (src2 / src3, planned with the graph, so
 * a replay allocates nothing), then the integer dots reading that scratch
 * (and so over bf16 weights with a BF16 scratch: the activations rounded to
 * bf16, then vdpbf16ps dots);
 * a sample is its CPU_SAMPLE_PHASES phases. */
enum { CPU__MAX_CALLS_PER_NODE = CPU_SAMPLE_PHASES };
static enc_status cpu__prepare(const graph_node *n, cpu__call *c, int *n_calls)
{
    *n_calls = 0;
    if (n->op == GRAPH_OP_SAMPLE) { /* its phases, each call finished before the next */
        for (int ph = 0; ph < CPU_SAMPLE_PHASES; ph++) {
            ENC_TRY(cpu__prepare_as(n, (int)n->op, &c[ph]));
            c[ph].sample.phase = ph;
        }
        *n_calls = CPU_SAMPLE_PHASES;
        return ENC_OK;
    }
    int matmul = n->op == GRAPH_OP_MATMUL || n->op == GRAPH_OP_MATMUL_ID;
    enc_dtype act = matmul ? cpu__dot_act_dtype(n) : ENC_F32;
    if (act == ENC_BF16 && !cpu_bf16_activations_supported())
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "cpu: %s over '%s' asks for bf16 activations, which "
                        "need AVX512-BF16 and the avx512 kernels",
                        graph_op_name(n->op), n->src[1]->name ? n->src[1]->name : "?");
    if (act != ENC_F32) {
        const graph_tensor *scratch = n->src[cpu__scratch_src(n)];
        if (!scratch || scratch->dtype != act)
            return enc_fail(ENC_ERR_INTERNAL, "cpu: %s over %s tensor '%s' has no %s scratch",
                            graph_op_name(n->op), enc_dtype_name(n->src[1]->dtype),
                            n->src[1]->name ? n->src[1]->name : "?", enc_dtype_name(act));
        ENC_TRY(cpu__prepare_as(n, CPU__OP_QUANTIZE, &c[0]));
        ENC_TRY(cpu__prepare_as(n, (int)n->op, &c[1]));
        c[1].src[0] = c[1].src[cpu__scratch_src(n)]; /* the dots read the quantized activations */
        c[1].src_bytes[0] = c[1].src_bytes[cpu__scratch_src(n)];
        if (n->op == GRAPH_OP_MATMUL_ID) c[1].matmul_id.x = c[1].src[0];
        *n_calls = 2;
        return ENC_OK;
    }
    ENC_TRY(cpu__prepare_as(n, (int)n->op, &c[0]));
    *n_calls = 1;
    return ENC_OK;
}

static void cpu__run(const cpu__call *c, int ith, int nth) { cpu__op_table[c->op].run(c, ith, nth); }

static void cpu__run_one(void *arg, int ith, int nth) { cpu__run(arg, ith, nth); }

/* --- groups of independent calls -------------------------------------------- *
 *
 * Consecutive parallel calls that do not depend on each other run as one
 * parallel group: every share does its share of each call in order, and the
 * pool's threads meet once after the group instead of once per call. The
 * matmuls of one activation form such groups (q, k and v of a layer; the gate
 * and up experts of an MoE layer). A call joins a group when its op writes
 * nothing but dst (a matmul, a matmul_id, a quantize), every call of the
 * group is such a one, and no byte it reads or writes is one a call of the
 * group writes (nor one it writes read by them). Every call still runs its
 * own (ith, nth) share, so no value changes.
 *
 * A serial call of the same kinds that is apart from a waiting group runs
 * before the group instead of closing it: each quantized matmul is a serial
 * quantize of its activations then its dots, so q, k and v of a layer come
 * as quantize, dots, quantize, dots, quantize, dots; the quantizes move
 * ahead and the three dots make one group (one meeting of the threads, not
 * five). Order between calls that touch no common byte changes nothing. */
enum { CPU__GROUP_MAX = 8 };

static bool cpu__dst_only_op(const cpu__call *c)
{
    return c->op == GRAPH_OP_MATMUL || c->op == GRAPH_OP_MATMUL_ID ||
           (int)c->op == CPU__OP_QUANTIZE;
}

static bool cpu__writes_dst_only(const cpu__call *c) { return !c->serial && cpu__dst_only_op(c); }

static bool cpu__overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const char *pa = a, *pb = b;
    return pa && pb && na && nb && pa < pb + nb && pb < pa + na;
}

/* 1 if call a's dst is none of b's sources nor its dst (either way round). */
static bool cpu__apart(const cpu__call *a, const cpu__call *b)
{
    if (cpu__overlap(a->dst, a->dst_bytes, b->dst, b->dst_bytes)) return false;
    for (int s = 0; s < GRAPH_MAX_SRC; s++)
        if (cpu__overlap(a->dst, a->dst_bytes, b->src[s], b->src_bytes[s]) ||
            cpu__overlap(b->dst, b->dst_bytes, a->src[s], a->src_bytes[s]))
            return false;
    return true;
}

/* 1 if c may join the group g[0 .. n) (n >= 1). */
static bool cpu__joins(const cpu__call *g, int n, const cpu__call *c)
{
    if (n >= CPU__GROUP_MAX || !cpu__writes_dst_only(c)) return false;
    for (int i = 0; i < n; i++)
        if (!cpu__writes_dst_only(&g[i]) || !cpu__apart(&g[i], c)) return false;
    return true;
}

/* 1 if the serial call c may run before the group g[0 .. n) (n >= 1). */
static bool cpu__runs_ahead(const cpu__call *g, int n, const cpu__call *c)
{
    if (!c->serial || !cpu__dst_only_op(c)) return false;
    for (int i = 0; i < n; i++)
        if (!cpu__writes_dst_only(&g[i]) || !cpu__apart(&g[i], c)) return false;
    return true;
}

typedef struct cpu__group {
    const cpu__call *calls;
    int n;
} cpu__group;

static void cpu__run_group(void *arg, int ith, int nth)
{
    const cpu__group *gr = arg;
    for (int i = 0; i < gr->n; i++)
        cpu__run(&gr->calls[i], ith, nth);
}

/* --- eager execution, capture and replay ------------------------------------ */

/* A recording: the prepared calls of every graph computed while capturing,
 * cut into segments at capture_end. A segment is one parallel call, split
 * into one chunk per pool thread, or a run of serial calls, one chunk done
 * by one thread; each segment reads what the ones before it wrote. */
typedef struct cpu__segment {
    int first, n_calls;
    int n_chunks;
} cpu__segment;

struct backend_recording {
    cpu__call *calls;
    int n_calls, cap_calls;
    cpu__segment *segments;
    int n_segments;
    atomic_int *claimed, *done; /* [n_segments] each: chunks taken and finished, per replay */
};

static enc_status cpu__record(backend_recording *rec, const cpu__call *c)
{
    if (rec->n_calls == rec->cap_calls) {
        int cap = rec->cap_calls ? 2 * rec->cap_calls : 256;
        cpu__call *calls = realloc(rec->calls, (size_t)cap * sizeof *calls);
        if (!calls) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: recording of %d calls", cap);
        rec->calls = calls;
        rec->cap_calls = cap;
    }
    rec->calls[rec->n_calls++] = *c;
    return ENC_OK;
}

/* Cut the recording into segments (see backend_recording). */
static enc_status cpu__segment_recording(backend_recording *rec, int n_threads)
{
    rec->segments = calloc((size_t)rec->n_calls + 1, sizeof *rec->segments);
    rec->claimed = calloc((size_t)rec->n_calls + 1, sizeof *rec->claimed);
    rec->done = calloc((size_t)rec->n_calls + 1, sizeof *rec->done);
    if (!rec->segments || !rec->claimed || !rec->done)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: segments of a recording of %d calls", rec->n_calls);
    int n = 0;
    for (int i = 0; i < rec->n_calls; i++) {
        bool serial = rec->calls[i].serial;
        if (serial && n > 0 && rec->calls[rec->segments[n - 1].first].serial) { /* extend the serial run */
            rec->segments[n - 1].n_calls++;
            continue;
        }
        cpu__segment *last = n > 0 ? &rec->segments[n - 1] : NULL;
        if (last && cpu__joins(&rec->calls[last->first], last->n_calls, &rec->calls[i])) {
            last->n_calls++; /* a group of independent parallel calls */
            continue;
        }
        if (n >= 2 && rec->calls[rec->segments[n - 2].first].serial &&
            cpu__runs_ahead(&rec->calls[last->first], last->n_calls, &rec->calls[i])) {
            cpu__call c = rec->calls[i]; /* into the serial run before the group */
            memmove(&rec->calls[last->first + 1], &rec->calls[last->first],
                    (size_t)last->n_calls * sizeof c);
            rec->calls[last->first++] = c;
            rec->segments[n - 2].n_calls++;
            continue;
        }
        rec->segments[n++] = (cpu__segment){i, 1, serial ? 1 : n_threads};
    }
    rec->n_segments = n;
    enc_log_debug("cpu: a recording of %d calls in %d segments", rec->n_calls, n);
    return ENC_OK;
}

/* Eager: the parallel group waiting to run (cpu__joins), run as one pool run. */
static void cpu__flush(cpu__ctx *ctx, cpu__call *group, int *n)
{
    cpu__group gr = {group, *n};
    if (*n == 1) threadpool_run(ctx->pool, cpu__run_one, &group[0]);
    else if (*n > 1) threadpool_run(ctx->pool, cpu__run_group, &gr);
    *n = 0;
}

static enc_status cpu__graph_compute(backend *be, const graph *g)
{
    cpu__ctx *ctx = be->ctx;
    cpu__call group[CPU__GROUP_MAX];
    int n_group = 0;
    enc_status st = ENC_OK;
    for (int i = 0; i < g->n_nodes && st == ENC_OK; i++) {
        cpu__call calls[CPU__MAX_CALLS_PER_NODE];
        int n_calls;
        st = cpu__prepare(&g->nodes[i], calls, &n_calls);
        for (int j = 0; st == ENC_OK && j < n_calls; j++) {
            cpu__call *c = &calls[j];
            if (ctx->capturing) {
                st = cpu__record(ctx->capturing, c);
                continue;
            }
            if (n_group > 0 && cpu__runs_ahead(group, n_group, c)) {
                cpu__run(c, 0, 1); /* ahead of the waiting group */
                continue;
            }
            if (n_group > 0 && !cpu__joins(group, n_group, c)) cpu__flush(ctx, group, &n_group);
            if (c->serial) cpu__run(c, 0, 1);
            else group[n_group++] = *c;
        }
    }
    cpu__flush(ctx, group, &n_group);
    return st;
}

static enc_status cpu__capture_begin(backend *be)
{
    cpu__ctx *ctx = be->ctx;
    if (ctx->capturing) return enc_fail(ENC_ERR_CAPTURE, "cpu: capture_begin while already capturing");
    ctx->capturing = calloc(1, sizeof *ctx->capturing);
    return ctx->capturing ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: recording");
}

static void cpu__recording_free(backend *be, backend_recording *rec);

static enc_status cpu__capture_end(backend *be, backend_recording **out)
{
    cpu__ctx *ctx = be->ctx;
    *out = NULL;
    if (!ctx->capturing) return enc_fail(ENC_ERR_CAPTURE, "cpu: capture_end without capture_begin");
    backend_recording *rec = ctx->capturing;
    ctx->capturing = NULL;
    enc_status s = cpu__segment_recording(rec, threadpool_size(ctx->pool));
    if (s != ENC_OK) {
        cpu__recording_free(be, rec);
        return s;
    }
    *out = rec;
    return ENC_OK;
}

typedef struct cpu__replay_ctx {
    const backend_recording *rec;
    enc_threadpool *pool;
} cpu__replay_ctx;

static void cpu__run_chunk(const backend_recording *rec, const cpu__segment *sg, int chunk)
{
    for (int i = sg->first; i < sg->first + sg->n_calls; i++)
        cpu__run(&rec->calls[i], chunk, sg->n_chunks);
}

/* The whole recording in one pool run. Every share walks the segments in
 * order and takes the chunks still free; before its first chunk of a
 * segment it waits until the segment before is finished. A thread that
 * comes late skips what others have taken, so nobody waits for a thread
 * that is not running, and one thread alone does the whole recording
 * (serial runs are one chunk: one thread does them back to back). */
static void cpu__replay_all(void *arg, int ith, int nth)
{
    const cpu__replay_ctx *r = arg;
    const backend_recording *rec = r->rec;
    (void)ith, (void)nth;
    for (int s = 0; s < rec->n_segments; s++) {
        const cpu__segment *sg = &rec->segments[s];
        int chunk = atomic_fetch_add_explicit(&rec->claimed[s], 1, memory_order_relaxed);
        if (chunk >= sg->n_chunks) continue;
        if (s > 0) threadpool_wait_for(r->pool, &rec->done[s - 1], rec->segments[s - 1].n_chunks);
        int n_done = 0;
        do {
            cpu__run_chunk(rec, sg, chunk);
            n_done++;
            chunk = atomic_fetch_add_explicit(&rec->claimed[s], 1, memory_order_relaxed);
        } while (chunk < sg->n_chunks);
        threadpool_advance(r->pool, &rec->done[s], n_done);
    }
}

static enc_status cpu__replay(backend *be, const backend_recording *rec)
{
    cpu__ctx *ctx = be->ctx;
    if (ctx->capturing) return enc_fail(ENC_ERR_CAPTURE, "cpu: replay refused during capture");
    for (int s = 0; s < rec->n_segments; s++) {
        atomic_store_explicit(&rec->claimed[s], 0, memory_order_relaxed);
        atomic_store_explicit(&rec->done[s], 0, memory_order_relaxed);
    }
    cpu__replay_ctx r = {rec, ctx->pool};
    threadpool_run(ctx->pool, cpu__replay_all, &r); /* publishes the reset counters */
    return ENC_OK;
}

static void cpu__recording_free(backend *be, backend_recording *rec)
{
    if (!rec) return;
    free(rec->calls);
    free(rec->segments);
    free(rec->claimed);
    free(rec->done);
    free(rec);
}
/* --- lifetime ------------------------------------------------------------ */

static void cpu__destroy(backend *be)
{
    cpu__ctx *ctx = be->ctx;
    cpu__recording_free(be, ctx->capturing);
    threadpool_destroy(ctx->pool);
    free(ctx);
    free(be);
}

/* Matmul, matmul_id (stacked experts) and get_rows read the block types
 * the kernels have dots for (cpu_reads_block_dtype: not the activations'
 * Q8_K, not Q3_K, which the load widens, base/quant_widen.h). */
static bool cpu__supports_weight_dtype(const backend *be, graph_op op, enc_dtype t)
{
    (void)be;
    return (op == GRAPH_OP_MATMUL || op == GRAPH_OP_MATMUL_ID || op == GRAPH_OP_GET_ROWS) &&
           cpu_reads_block_dtype(t);
}

static bool cpu__supports_bf16_activations(const backend *be)
{
    (void)be;
    return cpu_bf16_activations_supported();
}

static void cpu__describe(const backend *be, char *out, size_t size)
{
    int n = cpu_backend_n_threads(be);
    snprintf(out, size, "cpu (%s kernels, %d thread%s)", cpu_isa_name(cpu_kernels_init()), n,
             n == 1 ? "" : "s");
}

static const struct backend_i cpu__iface = {
    .name = "cpu",
    .kv_cache_dtypes = 1u << ENC_F32 | 1u << ENC_F16 | 1u << ENC_BF16 | 1u << ENC_Q8_0,
    .buffer_alloc = cpu__buffer_alloc,
    /* weights are copied into huge-page buffers (see cpu__buffer_alloc) */
    .buffer_from_host = NULL,
    .buffer_free = cpu__buffer_free,
    .buffer_write = cpu__buffer_write,
    .buffer_read = cpu__buffer_read,
    .buffer_repack_matrix = cpu__buffer_repack_matrix,
    .graph_compute = cpu__graph_compute,
    .capture_begin = cpu__capture_begin,
    .capture_end = cpu__capture_end,
    .replay = cpu__replay,
    .recording_free = cpu__recording_free,
    .supports_weight_dtype = cpu__supports_weight_dtype,
    .supports_bf16_activations = cpu__supports_bf16_activations,
    .describe = cpu__describe,
    .destroy = cpu__destroy,
};

/* ENCORE_CPU_SPIN_US: how long the pool's waiting threads stay awake
 * (threadpool_set_spin_ns); unset, CPU__SPIN_US_DEFAULT. */
enum { CPU__SPIN_US_DEFAULT = 2000, CPU__SPIN_US_MAX = 100000 };

static enc_status cpu__spin_us(int64_t *out)
{
    *out = CPU__SPIN_US_DEFAULT;
    const char *v = getenv("ENCORE_CPU_SPIN_US");
    if (!v) return ENC_OK;
    char *end = NULL;
    long long us = strtoll(v, &end, 10);
    if (!*v || *end || us < 0 || us > CPU__SPIN_US_MAX)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "ENCORE_CPU_SPIN_US=\"%s\": expected whole microseconds in [0, %d]", v,
                        CPU__SPIN_US_MAX);
    *out = us;
    return ENC_OK;
}

enc_status cpu_backend_create(int n_threads, backend **out)
{
    *out = NULL;
    if (n_threads <= 0) n_threads = enc_cpu_count();
    cpu_kernels_init();
    backend *be = calloc(1, sizeof *be);
    cpu__ctx *ctx = calloc(1, sizeof *ctx);
    if (!be || !ctx) {
        free(be);
        free(ctx);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu backend");
    }
    int64_t spin_us;
    enc_status s = cpu__spin_us(&spin_us);
    if (s == ENC_OK) s = threadpool_create(n_threads, &ctx->pool);
    if (s != ENC_OK) {
        free(be);
        free(ctx);
        return s;
    }
    threadpool_set_spin_ns(ctx->pool, spin_us * 1000);
    ctx->repack = enc_env_flag("ENCORE_CPU_REPACK", true);
    be->iface = &cpu__iface;
    be->ctx = ctx;
    *out = be;
    return ENC_OK;
}

int cpu_backend_n_threads(const backend *be)
{
    const cpu__ctx *ctx = be->ctx;
    return threadpool_size(ctx->pool);
}
