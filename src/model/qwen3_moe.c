/* qwen3_moe.c - a Qwen3-MoE layer's experts, stacked at load (as stored, or
 * quantized to the --quantize block type), and its mixture-of-experts block
 * in the step graph (qwen3_moe.h). */
#include "model/qwen3_moe.h"

#include <stdio.h>

#include "base/mapfile.h"
#include "model/quantize.h"
#include "model/qwen3_tensors.h"

static const char *const qwen3_moe__proj[3] = {"gate_proj", "up_proj", "down_proj"};

/* w [E, N, K] of dtype dt, allocated on the backend as `what`. */
static enc_status qwen3_moe__alloc(backend *be, const qwen3_config *c, enc_dtype dt, int64_t n,
                                   int64_t k, size_t bytes, const char *name, const char *what,
                                   qwen3_weight *w)
{
    w->dtype = dt;
    w->n_dims = 3;
    w->shape[0] = c->n_experts;
    w->shape[1] = n;
    w->shape[2] = k;
    w->name = name;
    return backend_buffer_alloc(be, bytes, what, &w->buf);
}

/* t at byte offset `at` of w's buffer: its bytes as they are, or its rows
 * quantized to w's block type (--quantize); then t's file pages given back. */
static enc_status qwen3_moe__write(backend *be, const st_tensor *t, size_t at, qwen3_weight *w)
{
    enc_status s = w->dtype != t->dtype ? model_quantize_into(be, t, w->dtype, w->buf, at)
                                        : backend_buffer_write(be, w->buf, at, t->data, t->n_bytes);
    if (s != ENC_OK)
        return w->dtype != t->dtype ? s : enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
    if (!backend_buffer_keeps_host(be)) mapfile_drop_pages(t->data, t->n_bytes);
    return ENC_OK;
}

/* One projection (0 gate, 1 up, 2 down) of every expert into w [E, N, K] of
 * its loaded type (model_loaded_dtype): the GGUF file's stacked tensor, or
 * the experts' tensors one after another; the type checked against what
 * the backend's matmul_id reads first. */
static enc_status qwen3_moe__stack(backend *be, const qwen3_config *c, const st_archive *a,
                                   const qwen3_layer_tensors *lt, int64_t l, int proj,
                                   enc_dtype quantize, qwen3_weight *w)
{
    const st_tensor *stacked = lt->experts[proj];
    const st_tensor *first = stacked ? stacked : qwen3_tensors_expert(a, l, 0, proj);
    enc_dtype dt = model_loaded_dtype(be, first, quantize);
    ENC_TRY(model_check_weight_dtype(be, first, dt, GRAPH_OP_MATMUL_ID));
    int64_t n = first->shape[first->n_dims - 2], k = first->shape[first->n_dims - 1];
    size_t bytes = dt == first->dtype ? first->n_bytes : model_quantized_bytes(first, dt);
    if (bytes == 0)
        return model_quantize_into(be, first, dt, NULL, 0); /* rows of no whole blocks */
    if (stacked) {
        ENC_TRY(qwen3_moe__alloc(be, c, dt, n, k, bytes, stacked->name, stacked->name, w));
        ENC_TRY(qwen3_moe__write(be, stacked, 0, w));
        return qwen3_weight_repack(be, stacked, w);
    }
    char what[96];
    snprintf(what, sizeof what, "model.layers.%lld.mlp.experts.*.%s", (long long)l,
             qwen3_moe__proj[proj]);
    ENC_TRY(qwen3_moe__alloc(be, c, dt, n, k, bytes * (size_t)c->n_experts, first->name, what, w));
    for (int64_t j = 0; j < c->n_experts; j++)
        ENC_TRY(qwen3_moe__write(be, qwen3_tensors_expert(a, l, j, proj), (size_t)j * bytes, w));
    return qwen3_weight_repack(be, first, w);
}

enc_status qwen3_moe_put_experts(backend *be, const qwen3_config *c, const st_archive *a,
                                 const qwen3_layer_tensors *lt, int64_t l, gguf_file_type quantize,
                                 qwen3_layer *w)
{
    enc_dtype gate_up = gguf_mix_type(quantize, GGUF_ROLE_OTHER, l, c->n_layers, c->n_experts);
    enc_dtype down = gguf_mix_type(quantize, GGUF_ROLE_FFN_DOWN, l, c->n_layers, c->n_experts);
    ENC_TRY(qwen3_moe__stack(be, c, a, lt, l, 0, gate_up, &w->exp_gate));
    ENC_TRY(qwen3_moe__stack(be, c, a, lt, l, 1, gate_up, &w->exp_up));
    return qwen3_moe__stack(be, c, a, lt, l, 2, down, &w->exp_down);
}

int64_t qwen3_moe_idle_bytes(const qwen3_config *c, const qwen3_layer *w)
{
    const qwen3_weight *p[] = {&w->exp_gate, &w->exp_up, &w->exp_down};
    int64_t per_expert = 0;
    for (int i = 0; i < 3; i++)
        per_expert += (int64_t)enc_dtype_row_bytes(p[i]->dtype, p[i]->shape[2]) * p[i]->shape[1];
    return per_expert * (c->n_experts - c->n_experts_per_tok);
}

graph_tensor *qwen3_moe_block(graph *g, const qwen3_config *c, graph_tensor *h,
                              graph_tensor *router, graph_tensor *gate, graph_tensor *up,
                              graph_tensor *down)
{
    graph_tensor *weights = NULL;
    /* the router's matmul always on f32 activations: a choice of experts
     * is no place to round (and it is a few rows) */
    bool bf16_activations = g->bf16_activations;
    g->bf16_activations = false;
    graph_tensor *logits = graph_matmul(g, h, router);
    g->bf16_activations = bf16_activations;
    graph_tensor *ids = graph_moe_route(g, logits, c->n_experts_per_tok, GRAPH_ROUTER_SOFTMAX,
                                        c->norm_topk_prob, &weights);
    graph_tensor *g_out = graph_matmul_id(g, h, gate, ids);
    graph_tensor *u_out = graph_matmul_id(g, h, up, ids);
    graph_tensor *act = graph_swiglu(g, g_out, u_out); /* [T, k, Fe] */
    return graph_moe_sum(g, graph_matmul_id(g, act, down, ids), weights);
}
