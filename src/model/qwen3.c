/* qwen3.c - loading Qwen3 weights onto a backend and building its step graph.
 *
 * The weights come from a tensor source (tensor_source.h): a safetensors
 * checkpoint with config.json, or a GGUF file whose metadata gives the
 * config. Both go through one check (qwen3_tensors_find_in) and one upload
 * path below. GGUF's q/k weights need no un-permuting: llama.cpp's converter
 * permutes them only for the llama architecture, never for qwen2/qwen3,
 * whose RoPE it runs in the NeoX (rotate-half) form this graph uses. */
#include "model/qwen3.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mapfile.h"
#include "model/generation_config.h"
#include "model/gguf_config.h"
#include "model/quantize.h"
#include "model/qwen3_moe.h"
#include "model/qwen3_tensors.h"

/* --- loading ------------------------------------------------------------- */

/* The file's pages of a tensor the backend has copied are given back at
 * once: without that, every weight would be resident twice (the copy and
 * the page cache's pages mapped into the process) until the model is freed. */
static void qwen3__release_source(backend *be, const st_tensor *t)
{
    if (!backend_buffer_keeps_host(be)) mapfile_drop_pages(t->data, t->n_bytes);
}

/* Matrices and the embedding stay in their stored dtype (zero-copy where the
 * backend can), or become blocks of `quantize` (--quantize; model/quantize.c);
 * a block type is uploaded as its raw blocks. Norm weights become f32, the
 * kernels' format for them (qwen3__put_norm). */
static enc_status qwen3__upload(backend *be, const st_tensor *t, enc_dtype quantize, qwen3_weight *w)
{
    w->dtype = model_loaded_dtype(be, t, quantize);
    w->n_dims = t->n_dims;
    w->shape[0] = t->shape[0];
    w->shape[1] = t->n_dims > 1 ? t->shape[1] : 1;
    w->name = t->name;
    enc_status s = w->dtype != t->dtype
                       ? model_quantize_matrix(be, t, w->dtype, &w->buf)
                       : backend_buffer_from_host(be, t->data, t->n_bytes, t->name, &w->buf);
    if (s == ENC_OK) qwen3__release_source(be, t);
    if (s == ENC_OK || w->dtype != t->dtype) return s; /* model_quantize_matrix names the tensor */
    return enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
}

enc_status qwen3_weight_repack(backend *be, const st_tensor *t, const qwen3_weight *w)
{
    if (w->n_dims < 2 || !enc_dtype_is_quantized(w->dtype)) return ENC_OK;
    int64_t n_mats = w->n_dims == 3 ? w->shape[0] : 1;
    enc_status s = backend_buffer_repack_matrix(be, w->buf, w->dtype, n_mats,
                                                w->shape[w->n_dims - 2], w->shape[w->n_dims - 1]);
    return s == ENC_OK ? s : enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
}

/* A matrix only matmul reads. */
static enc_status qwen3__put_matrix(backend *be, const st_tensor *t, enc_dtype quantize,
                                    qwen3_weight *w)
{
    ENC_TRY(model_check_weight_dtype(be, t, model_loaded_dtype(be, t, quantize), GRAPH_OP_MATMUL));
    ENC_TRY(qwen3__upload(be, t, quantize, w));
    return qwen3_weight_repack(be, t, w);
}

/* The embedding: a table for get_rows, and the lm_head's matrix when tied
 * (then the backend may lay it out for the matmul too: get_rows reads
 * either layout). */
static enc_status qwen3__put_embedding(backend *be, const st_tensor *t, int tied,
                                       enc_dtype quantize, qwen3_weight *w)
{
    enc_dtype dt = model_loaded_dtype(be, t, quantize);
    ENC_TRY(model_check_weight_dtype(be, t, dt, GRAPH_OP_GET_ROWS));
    if (tied) ENC_TRY(model_check_weight_dtype(be, t, dt, GRAPH_OP_MATMUL));
    ENC_TRY(qwen3__upload(be, t, quantize, w));
    return tied ? qwen3_weight_repack(be, t, w) : ENC_OK;
}

static void qwen3__to_f32(const st_tensor *t, float *out)
{
    int64_t n = t->shape[0];
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == ENC_F32)
            memcpy(&out[i], (const char *)t->data + 4 * i, 4);
        else {
            uint16_t h;
            memcpy(&h, (const char *)t->data + 2 * i, 2);
            out[i] = t->dtype == ENC_BF16 ? enc_bf16_to_f32(h) : enc_f16_to_f32(h);
        }
    }
}

static enc_status qwen3__put_norm(backend *be, const st_tensor *t, qwen3_weight *w)
{
    w->dtype = ENC_F32;
    w->n_dims = 1;
    w->shape[0] = t->shape[0];
    w->shape[1] = 1;
    w->name = t->name;
    float *tmp = malloc((size_t)t->shape[0] * sizeof *tmp);
    if (!tmp) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tensor '%s'", t->name);
    qwen3__to_f32(t, tmp);
    qwen3__release_source(be, t);
    size_t bytes = (size_t)t->shape[0] * sizeof *tmp;
    enc_status s = backend_buffer_alloc(be, bytes, t->name, &w->buf);
    if (s == ENC_OK) s = backend_buffer_write(be, w->buf, 0, tmp, bytes);
    free(tmp);
    return s;
}

/* The block type --quantize gives a float matrix of `role` in layer l
 * (ENC_F32: as stored). */
static enc_dtype qwen3__quantize_to(const qwen3_model *m, gguf_role role, int64_t l)
{
    return gguf_mix_type(m->quantize, role, l, m->cfg.n_layers, m->cfg.n_experts);
}

static enc_status qwen3__put_mlp(qwen3_model *m, const qwen3_layer_tensors *t, int64_t li,
                                 qwen3_layer *l)
{
    if (!t->router) {
        ENC_TRY(qwen3__put_matrix(m->be, t->gate, qwen3__quantize_to(m, GGUF_ROLE_OTHER, li),
                                  &l->gate));
        ENC_TRY(
            qwen3__put_matrix(m->be, t->up, qwen3__quantize_to(m, GGUF_ROLE_OTHER, li), &l->up));
        return qwen3__put_matrix(m->be, t->down, qwen3__quantize_to(m, GGUF_ROLE_FFN_DOWN, li),
                                 &l->down);
    }
    /* the router stays as loaded (--quantize skips it, as llama.cpp does);
     * the experts take the --quantize type */
    l->moe = 1;
    ENC_TRY(qwen3__put_matrix(m->be, t->router, ENC_F32, &l->router));
    return qwen3_moe_put_experts(m->be, &m->cfg, m->archive, t, li, m->quantize, l);
}

static enc_status qwen3__put_layer(qwen3_model *m, const qwen3_layer_tensors *t, int64_t li)
{
    backend *be = m->be;
    qwen3_layer *l = &m->layers[li];
    ENC_TRY(qwen3__put_norm(be, t->input_norm, &l->input_norm));
    ENC_TRY(qwen3__put_norm(be, t->q_norm, &l->q_norm));
    ENC_TRY(qwen3__put_norm(be, t->k_norm, &l->k_norm));
    ENC_TRY(qwen3__put_norm(be, t->post_norm, &l->post_norm));
    ENC_TRY(qwen3__put_matrix(be, t->q, qwen3__quantize_to(m, GGUF_ROLE_OTHER, li), &l->q));
    ENC_TRY(qwen3__put_matrix(be, t->k, qwen3__quantize_to(m, GGUF_ROLE_ATTN_K, li), &l->k));
    ENC_TRY(qwen3__put_matrix(be, t->v, qwen3__quantize_to(m, GGUF_ROLE_ATTN_V, li), &l->v));
    ENC_TRY(qwen3__put_matrix(be, t->o, qwen3__quantize_to(m, GGUF_ROLE_ATTN_OUTPUT, li), &l->o));
    return qwen3__put_mlp(m, t, li, l);
}

static tensor_source qwen3__source(const qwen3_model *m)
{
    return m->gguf ? tensor_source_gguf(m->gguf) : tensor_source_safetensors(m->archive);
}

/* Bytes of a weight as loaded (rows of its last dimension in its dtype). */
static int64_t qwen3__weight_bytes(const qwen3_weight *w)
{
    int64_t rows = 1;
    for (int d = 0; d < w->n_dims - 1; d++) rows *= w->shape[d];
    return w->n_dims > 0 ? rows * (int64_t)enc_dtype_row_bytes(w->dtype, w->shape[w->n_dims - 1])
                         : 0;
}

/* What a decode step reads: every weight as loaded (quantized at load or
 * not; the lm_head, which is the embedding when tied) but an untied
 * embedding, of which it gathers rows, and a MoE layer's idle experts. */
static int64_t qwen3__decode_bytes(const qwen3_model *m)
{
    int64_t n = qwen3__weight_bytes(&m->final_norm) + qwen3__weight_bytes(&m->lm_head);
    for (int64_t l = 0; l < m->cfg.n_layers; l++) {
        const qwen3_layer *y = &m->layers[l];
        const qwen3_weight *w[] = {&y->input_norm, &y->q,      &y->k,        &y->v,
                                   &y->o,          &y->q_norm, &y->k_norm,   &y->post_norm,
                                   &y->gate,       &y->up,     &y->down,     &y->router,
                                   &y->exp_gate,   &y->exp_up, &y->exp_down};
        for (size_t i = 0; i < sizeof w / sizeof *w; i++) n += qwen3__weight_bytes(w[i]);
        if (y->moe) n -= qwen3_moe_idle_bytes(&m->cfg, y);
    }
    return n;
}

static enc_status qwen3__put_weights(qwen3_model *m, const qwen3_tensors *t,
                                     qwen3_progress_fn progress, void *user)
{
    int tied = t->lm_head == t->embed && !m->pooling; /* the embedding is the output matrix too */
    ENC_TRY(qwen3__put_embedding(
        m->be, t->embed, tied,
        qwen3__quantize_to(m, tied ? GGUF_ROLE_OUTPUT : GGUF_ROLE_TOKEN_EMBD, 0), &m->embed));
    ENC_TRY(qwen3__put_norm(m->be, t->final_norm, &m->final_norm));
    if (m->pooling)
        memset(&m->lm_head, 0, sizeof m->lm_head); /* no output matrix */
    else if (tied)
        m->lm_head = m->embed, m->lm_head.buf = NULL; /* shares embed's buffer */
    else
        ENC_TRY(qwen3__put_matrix(m->be, t->lm_head, qwen3__quantize_to(m, GGUF_ROLE_OUTPUT, 0),
                                  &m->lm_head));
    for (int64_t l = 0; l < m->cfg.n_layers; l++) {
        ENC_TRY(qwen3__put_layer(m, &t->layers[l], l));
        if (progress) progress(user, (double)(l + 1) / (double)m->cfg.n_layers);
    }
    m->decode_weight_bytes = qwen3__decode_bytes(m);
    return ENC_OK;
}

/* The config and the tensors' file(s): a GGUF file, or config.json and the
 * safetensors of a directory. */
static enc_status qwen3__open(const char *path, qwen3_model *m)
{
    ENC_TRY(gguf_check_model_path(path));
    if (gguf_is_model_file(path)) {
        ENC_TRY(gguf_open(path, &m->gguf));
        return qwen3_config_from_gguf(m->gguf, &m->cfg);
    }
    ENC_TRY(qwen3_config_load(path, &m->cfg));
    ENC_TRY(generation_config_load(path, &m->cfg));
    return st_open_dir(path, &m->archive);
}

/* A generative model needs its output matrix. */
static enc_status qwen3__check_lm_head(const qwen3_model *m, const qwen3_tensors *t,
                                       const char *model_dir)
{
    if (t->lm_head || m->pooling) return ENC_OK;
    return enc_fail(ENC_ERR_FORMAT,
                    "%s: no lm_head.weight and tie_word_embeddings is false: an embedding model "
                    "(such as Qwen3-Embedding) has no output matrix; run it as one (--runner "
                    "pooling)",
                    model_dir);
}

enc_status qwen3_model_load(const char *model_dir, backend *be, gguf_file_type quantize,
                            int pooling, qwen3_progress_fn progress, void *progress_user,
                            qwen3_model **out)
{
    *out = NULL;
    qwen3_model *m = calloc(1, sizeof *m);
    if (!m) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "model");
    m->be = be;
    m->quantize = quantize;
    m->pooling = pooling != 0;
    qwen3_tensors tensors = {0};
    enc_status s = qwen3__open(model_dir, m);
    tensor_source src = qwen3__source(m);
    if (s == ENC_OK) s = qwen3_tensors_find_in(&m->cfg, &src, &tensors);
    if (s == ENC_OK) s = qwen3__check_lm_head(m, &tensors, model_dir);
    if (s == ENC_OK) model_log_widened(be, &src, quantize.base);
    if (s == ENC_OK) {
        m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers);
        s = m->layers ? qwen3__put_weights(m, &tensors, progress, progress_user)
                      : enc_fail(ENC_ERR_OUT_OF_MEMORY, "model layers");
    }
    qwen3_tensors_free(&tensors);
    if (s != ENC_OK) {
        qwen3_model_free(m);
        return s;
    }
    *out = m;
    return ENC_OK;
}

static void qwen3__free_layer(backend *be, qwen3_layer *l)
{
    qwen3_weight *w[] = {&l->input_norm, &l->q,      &l->k,        &l->v,
                         &l->o,          &l->q_norm, &l->k_norm,   &l->post_norm,
                         &l->gate,       &l->up,     &l->down,     &l->router,
                         &l->exp_gate,   &l->exp_up, &l->exp_down};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) backend_buffer_free(be, w[i]->buf);
}

void qwen3_model_free(qwen3_model *m)
{
    if (!m) return;
    for (int64_t l = 0; m->layers && l < m->cfg.n_layers; l++) qwen3__free_layer(m->be, &m->layers[l]);
    free(m->layers);
    backend_buffer_free(m->be, m->embed.buf);
    backend_buffer_free(m->be, m->final_norm.buf);
    backend_buffer_free(m->be, m->lm_head.buf);
    st_close(m->archive);
    gguf_close(m->gguf);
    free(m);
}

/* --- the step graph ------------------------------------------------------ */

/* What the builder below adds, counted from its code; qwen3_build_forward
 * asserts that every pass adds exactly this, so a builder change that does
 * not update the counts fails at its first step.
 *   inputs (qwen3__make_inputs): the 7 input tensors of qwen3_step_io.
 *   a layer (qwen3__layer): 18 nodes: 4 rms_norm (input, q, k, post), 7
 *     matmul (q, k, v, o, gate, up, down), 2 rope, store_kv, attention, 2
 *     add, swiglu. 28 tensors: 11 weights, the 2 caches, and the outputs
 *     of the 15 nodes that make one (not the in-place ropes nor store_kv).
 *   a MoE layer (qwen3_moe_block) instead of the dense MLP's 4 nodes (3
 *     matmul, swiglu) and 7 tensors (3 weights, 4 outputs) has 8 nodes (the
 *     router matmul, moe_route, moe_weights, 3 matmul_id, swiglu, moe_sum)
 *     and 15 tensors (4 weights, 8 outputs, each matmul_id's grouping
 *     scratch): 4 nodes and 8 tensors more.
 *   around the layers: 4 nodes (the embedding's get_rows, the logits rows'
 *     get_rows, the final rms_norm, the lm_head matmul), 7 tensors (their
 *     3 weights and 4 outputs); a pooling model has no lm_head: 1 node and
 *     2 tensors fewer. */
enum {
    QWEN3__INPUT_TENSORS = 7,
    QWEN3__LAYER_NODES = 18,
    QWEN3__LAYER_TENSORS = 28,
    QWEN3__MOE_EXTRA_NODES = 4,
    QWEN3__MOE_EXTRA_TENSORS = 8,
    QWEN3__OUTER_NODES = 4,
    QWEN3__OUTER_TENSORS = 7,
};
_Static_assert(QWEN3__INPUT_TENSORS * sizeof(graph_tensor *) == offsetof(qwen3_step_io, logits),
               "qwen3__make_inputs makes one tensor per input field of qwen3_step_io");

static int qwen3__n_moe_layers(const qwen3_model *m)
{
    int n = 0;
    for (int64_t l = 0; l < m->cfg.n_layers; l++) n += m->layers[l].moe;
    return n;
}

static int qwen3__pass_nodes(const qwen3_model *m)
{
    return QWEN3__LAYER_NODES * (int)m->cfg.n_layers +
           QWEN3__MOE_EXTRA_NODES * qwen3__n_moe_layers(m) + QWEN3__OUTER_NODES - m->pooling;
}

/* Whether a matmul over weights of dtype dt has an activation scratch. */
static int qwen3__has_act_scratch(const qwen3_model *m, enc_dtype dt)
{
    return enc_dtype_is_quantized(dt) || (m->bf16_activations && dt == ENC_BF16);
}

static int qwen3__is_bf16(const qwen3_model *m, enc_dtype dt)
{
    (void)m;
    return dt == ENC_BF16;
}

/* The matmuls and matmul_ids of a forward pass over weights whose dtype
 * `which` picks, the router's left out (its weights are F32 or BF16, and it
 * never has a scratch: qwen3_moe_block). A dense layer's MLP weights and a
 * MoE layer's experts are never both set (zeroed ones are F32). */
static int qwen3__count_matmuls(const qwen3_model *m, int (*which)(const qwen3_model *, enc_dtype))
{
    int n = !m->pooling && which(m, m->lm_head.dtype);
    for (int64_t l = 0; l < m->cfg.n_layers; l++) {
        const qwen3_layer *y = &m->layers[l];
        const qwen3_weight *w[] = {&y->q,    &y->k,  &y->v,    &y->o,        &y->gate,
                                   &y->up,   &y->down, &y->exp_gate, &y->exp_up, &y->exp_down};
        for (size_t i = 0; i < sizeof w / sizeof *w; i++)
            n += which(m, w[i]->dtype);
    }
    return n;
}

/* A matmul or matmul_id over block-quantized weights has one more tensor:
 * its scratch for the activations in 8-bit blocks (graph_matmul,
 * graph_matmul_id); so has one over bf16 weights with bf16 activations. */
static int qwen3__scratch_matmuls(const qwen3_model *m)
{
    return qwen3__count_matmuls(m, qwen3__has_act_scratch);
}

int qwen3_model_bf16_matmuls(const qwen3_model *m)
{
    return qwen3__count_matmuls(m, qwen3__is_bf16);
}

enc_status qwen3_model_set_bf16_activations(qwen3_model *m, int on)
{
    if (on && !backend_supports_bf16_activations(m->be))
        return enc_fail(ENC_ERR_UNSUPPORTED, "bf16 activations: the %s backend has none here",
                        m->be->iface->name);
    m->bf16_activations = on != 0;
    return ENC_OK;
}

static int qwen3__pass_tensors(const qwen3_model *m)
{
    return QWEN3__LAYER_TENSORS * (int)m->cfg.n_layers +
           QWEN3__MOE_EXTRA_TENSORS * qwen3__n_moe_layers(m) + QWEN3__OUTER_TENSORS -
           2 * m->pooling + qwen3__scratch_matmuls(m);
}

int qwen3_graph_n_nodes(const qwen3_model *m, int n_passes) { return n_passes * qwen3__pass_nodes(m); }

int qwen3_graph_n_tensors(const qwen3_model *m, int n_passes)
{
    return QWEN3__INPUT_TENSORS + n_passes * qwen3__pass_tensors(m);
}

static graph_tensor *qwen3__weight(graph *g, const qwen3_weight *w)
{
    graph_tensor *t = graph_new_tensor(g, GRAPH_WEIGHT, w->dtype, w->n_dims, w->shape, w->name);
    if (t) graph_bind(t, w->buf, 0);
    return t;
}

static graph_tensor *qwen3__input(graph *g, int64_t n, const char *name)
{
    return graph_tensor_1d(g, GRAPH_INPUT, ENC_I32, n, name);
}

static void qwen3__make_inputs(graph *g, const qwen3_step_shape *sh, qwen3_step_io *io)
{
    io->input_ids = qwen3__input(g, sh->n_tokens, "input_ids");
    io->positions = qwen3__input(g, sh->n_tokens, "positions");
    io->slot_mapping = qwen3__input(g, sh->n_tokens, "slot_mapping");
    io->block_tables = graph_tensor_2d(g, GRAPH_INPUT, ENC_I32, sh->n_seqs, sh->max_blocks, "block_tables");
    io->seq_lens = qwen3__input(g, sh->n_seqs, "seq_lens");
    io->query_start_loc = qwen3__input(g, sh->n_seqs + 1, "query_start_loc");
    io->logits_indices = qwen3__input(g, sh->n_logits, "logits_indices");
}

/* One decoder layer: x [T, D] in, the new residual stream out. */
static graph_tensor *qwen3__layer(const qwen3_model *m, const kv_cache *kv, graph *g, int64_t l,
                                  graph_tensor *x, const qwen3_step_io *io)
{
    const qwen3_config *c = &m->cfg;
    const qwen3_layer *w = &m->layers[l];
    graph_tensor *h = graph_rms_norm(g, x, qwen3__weight(g, &w->input_norm), c->rms_norm_eps);
    graph_tensor *q = graph_matmul(g, h, qwen3__weight(g, &w->q));
    graph_tensor *k = graph_matmul(g, h, qwen3__weight(g, &w->k));
    graph_tensor *v = graph_matmul(g, h, qwen3__weight(g, &w->v));
    q = graph_rms_norm(g, q, qwen3__weight(g, &w->q_norm), c->rms_norm_eps);
    k = graph_rms_norm(g, k, qwen3__weight(g, &w->k_norm), c->rms_norm_eps);
    enc_rope rope =
        enc_rope_make(c->rope_theta, c->head_dim, &c->rope_scaling, c->max_position_embeddings);
    graph_rope_neox(g, q, io->positions, c->n_heads, c->head_dim, &rope);
    graph_rope_neox(g, k, io->positions, c->n_kv_heads, c->head_dim, &rope);

    int64_t n_slots = (int64_t)kv->pool.n_blocks * kv->pool.block_size;
    graph_tensor *kc = graph_tensor_2d(g, GRAPH_CACHE, kv->dtype, n_slots, kv->kv_dim, "k_cache");
    graph_tensor *vc = graph_tensor_2d(g, GRAPH_CACHE, kv->dtype, n_slots, kv->kv_dim, "v_cache");
    if (kc) graph_bind(kc, kv->k[l], 0);
    if (vc) graph_bind(vc, kv->v[l], 0);
    graph_store_kv(g, k, v, io->slot_mapping, kc, vc);
    graph_attention_params ap = {
        .n_heads = c->n_heads,
        .n_kv_heads = c->n_kv_heads,
        .head_dim = c->head_dim,
        .block_size = kv->pool.block_size,
        .scale = 1.0 / sqrt((double)c->head_dim),
    };
    graph_tensor *a = graph_attention(g, q, kc, vc, io->block_tables, io->seq_lens,
                                      io->query_start_loc, &ap);
    x = graph_add(g, x, graph_matmul(g, a, qwen3__weight(g, &w->o)));

    h = graph_rms_norm(g, x, qwen3__weight(g, &w->post_norm), c->rms_norm_eps);
    if (w->moe)
        return graph_add(g, x,
                         qwen3_moe_block(g, c, h, qwen3__weight(g, &w->router),
                                         qwen3__weight(g, &w->exp_gate),
                                         qwen3__weight(g, &w->exp_up),
                                         qwen3__weight(g, &w->exp_down)));
    graph_tensor *gate = graph_matmul(g, h, qwen3__weight(g, &w->gate));
    graph_tensor *up = graph_matmul(g, h, qwen3__weight(g, &w->up));
    graph_tensor *down = graph_matmul(g, graph_swiglu(g, gate, up), qwen3__weight(g, &w->down));
    return graph_add(g, x, down);
}

void qwen3_step_inputs(graph *g, const qwen3_step_shape *shape, qwen3_step_io *io)
{
    memset(io, 0, sizeof *io);
    qwen3__make_inputs(g, shape, io);
}

enc_status qwen3_build_forward(const qwen3_model *m, const kv_cache *kv, graph *g, qwen3_step_io *io)
{
    int n_nodes = g->n_nodes, n_tensors = g->n_tensors;
    g->bf16_activations = m->bf16_activations;
    graph_tensor *x = graph_get_rows(g, qwen3__weight(g, &m->embed), io->input_ids);
    for (int64_t l = 0; l < m->cfg.n_layers; l++) x = qwen3__layer(m, kv, g, l, x, io);
    graph_tensor *last = graph_get_rows(g, x, io->logits_indices);
    last = graph_rms_norm(g, last, qwen3__weight(g, &m->final_norm), m->cfg.rms_norm_eps);
    qwen3_weight head = m->lm_head;
    if (!head.buf) head.buf = m->embed.buf; /* tied */
    io->logits = m->pooling ? last : graph_matmul(g, last, qwen3__weight(g, &head));
    ENC_ASSERT(g->status != ENC_OK || (g->n_nodes - n_nodes == qwen3__pass_nodes(m) &&
                                       g->n_tensors - n_tensors == qwen3__pass_tensors(m)));
    return g->status;
}

int64_t qwen3_output_width(const qwen3_model *m)
{
    return m->pooling ? m->cfg.hidden_size : m->cfg.vocab_size;
}
