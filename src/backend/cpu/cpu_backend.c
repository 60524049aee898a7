/* cpu_backend.c - the CPU backend: host buffers, and eager execution of a
 * step graph, one thread-pool run per node.
 *
 * Each node is resolved to raw pointers (buffer base + offset, bounds
 * checked against the buffer) and handed to its kernel, which every pool
 * thread calls with its (ith, nth) share. */
#define _DEFAULT_SOURCE
#include "backend/cpu/cpu_backend.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/cpu/kernels.h"
#include "base/threadpool.h"

struct backend_buffer {
    unsigned char *data;
    size_t size;
    int owned; /* 1: allocated here and freed here; 0: borrowed host memory */
};

typedef struct cpu__ctx {
    enc_threadpool *pool;
} cpu__ctx;

/* --- buffers ------------------------------------------------------------- */

/* Buffers come from mmap: page-aligned, and zero pages the kernel fills
 * lazily, so a large KV pool costs nothing until it is used. */
static enc_status cpu__buffer_alloc(backend *be, size_t size, const char *what,
                                    backend_buffer **out)
{
    *out = NULL;
    backend_buffer *b = calloc(1, sizeof *b);
    void *p = MAP_FAILED;
    if (b) p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!b || p == MAP_FAILED) {
        free(b);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes for %s", size,
                        what ? what : "a buffer");
    }
    b->data = p;
    b->size = size;
    b->owned = 1;
    *out = b;
    return ENC_OK;
}

static enc_status cpu__buffer_from_host(backend *be, const void *data, size_t size,
                                        const char *what, backend_buffer **out)
{
    backend_buffer *b = calloc(1, sizeof *b);
    if (!b) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cpu: buffer for %s", what ? what : "?");
    b->data = (unsigned char *)data; /* borrowed: the caller keeps the mapping alive */
    b->size = size;
    *out = b;
    return ENC_OK;
}

static void cpu__buffer_free(backend *be, backend_buffer *b)
{
    if (!b) return;
    if (b->owned) munmap(b->data, b->size ? b->size : 1);
    free(b);
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
    ENC_TRY(cpu__check_range(b, offset, size, "write"));
    if (!b->owned) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "cpu: write to a read-only host buffer");
    memcpy(b->data + offset, src, size);
    return ENC_OK;
}

static enc_status cpu__buffer_read(backend *be, backend_buffer *b, size_t offset, void *dst,
                                   size_t size)
{
    ENC_TRY(cpu__check_range(b, offset, size, "read"));
    memcpy(dst, b->data + offset, size);
    return ENC_OK;
}

/* --- running a graph ----------------------------------------------------- */

/* A node resolved to pointers, shared by the pool threads of one run. */
typedef struct cpu__task {
    const graph_node *node;
    void *dst;
    void *src[GRAPH_MAX_SRC];
    cpu_attention_args attn;
} cpu__task;

static void *cpu__ptr(const graph_tensor *t)
{
    backend_buffer *b = t->buffer;
    return b->data + t->offset;
}

static enc_status cpu__resolve(const graph_tensor *t, const graph_node *n, void **out)
{
    *out = NULL;
    if (!t) return ENC_OK;
    const backend_buffer *b = t->buffer;
    if (!b)
        return enc_fail(ENC_ERR_INTERNAL, "cpu: %s: tensor '%s' is bound to no buffer",
                        graph_op_name(n->op), t->name ? t->name : "?");
    ENC_TRY(cpu__check_range(b, t->offset, graph_tensor_nbytes(t), t->name ? t->name : "tensor"));
    *out = cpu__ptr(t);
    return ENC_OK;
}

static void cpu__run(void *arg, int ith, int nth)
{
    const cpu__task *k = arg;
    const graph_node *n = k->node;
    const graph_tensor *s0 = n->src[0], *s1 = n->src[1];
    switch (n->op) {
    case GRAPH_OP_GET_ROWS:
        cpu_get_rows(k->src[0], s0->dtype, s0->shape[0], s0->shape[1], k->src[1], s1->shape[0],
                     k->dst, ith, nth);
        break;
    case GRAPH_OP_RMS_NORM: {
        int64_t dim = s1->shape[0];
        cpu_rms_norm(k->src[0], k->src[1], graph_tensor_nelements(s0) / dim, dim, (float)n->f[0],
                     k->dst, ith, nth);
        break;
    }
    case GRAPH_OP_MATMUL:
        cpu_matmul(k->src[0], s0->shape[0], s0->shape[1], k->src[1], s1->dtype, s1->shape[0],
                   k->dst, ith, nth);
        break;
    case GRAPH_OP_ROPE_NEOX:
        cpu_rope_neox(k->src[0], s0->shape[0], n->i[0], n->i[1], k->src[1], n->f[0], ith, nth);
        break;
    case GRAPH_OP_SWIGLU:
        cpu_swiglu(k->src[0], k->src[1], k->dst, graph_tensor_nelements(s0), ith, nth);
        break;
    case GRAPH_OP_ADD:
        cpu_add(k->src[0], k->src[1], k->dst, graph_tensor_nelements(s0), ith, nth);
        break;
    case GRAPH_OP_STORE_KV:
        cpu_reshape_and_cache(k->src[0], k->src[1], s0->shape[0], s0->shape[1], k->src[2],
                              k->src[3], k->src[4], ith, nth);
        break;
    case GRAPH_OP_ATTENTION:
        cpu_paged_attention(&k->attn, ith, nth);
        break;
    case GRAPH_OP_ARGMAX:
        cpu_argmax(k->src[0], s0->shape[0], s0->shape[1], k->dst, ith, nth);
        break;
    case GRAPH_OP_COUNT:
        break;
    }
}

static void cpu__prepare_attention(cpu__task *k)
{
    const graph_node *n = k->node;
    cpu_attention_args *a = &k->attn;
    a->q = k->src[0];
    a->k_cache = k->src[1];
    a->v_cache = k->src[2];
    a->block_tables = k->src[3];
    a->seq_lens = k->src[4];
    a->query_start_loc = k->src[5];
    a->out = k->dst;
    a->n_seqs = n->src[4]->shape[0];
    a->max_blocks = n->src[3]->shape[1];
    a->n_heads = n->i[0];
    a->n_kv_heads = n->i[1];
    a->head_dim = n->i[2];
    a->block_size = n->i[3];
    a->scale = (float)n->f[0];
}

static enc_status cpu__graph_compute(backend *be, const graph *g)
{
    cpu__ctx *ctx = be->ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        cpu__task k = {.node = &g->nodes[i]};
        ENC_TRY(cpu__resolve(k.node->dst, k.node, &k.dst));
        for (int s = 0; s < GRAPH_MAX_SRC; s++) ENC_TRY(cpu__resolve(k.node->src[s], k.node, &k.src[s]));
        if (k.node->op == GRAPH_OP_ATTENTION) cpu__prepare_attention(&k);
        threadpool_run(ctx->pool, cpu__run, &k);
    }
    return ENC_OK;
}

/* --- lifetime ------------------------------------------------------------ */

static void cpu__destroy(backend *be)
{
    cpu__ctx *ctx = be->ctx;
    threadpool_destroy(ctx->pool);
    free(ctx);
    free(be);
}

static const struct backend_i cpu__iface = {
    .name = "cpu",
    .buffer_alloc = cpu__buffer_alloc,
    .buffer_from_host = cpu__buffer_from_host,
    .buffer_free = cpu__buffer_free,
    .buffer_write = cpu__buffer_write,
    .buffer_read = cpu__buffer_read,
    .graph_compute = cpu__graph_compute,
    .destroy = cpu__destroy,
};

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
    enc_status s = threadpool_create(n_threads, &ctx->pool);
    if (s != ENC_OK) {
        free(be);
        free(ctx);
        return s;
    }
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
