/* gguf_export.c - a Qwen3 checkpoint's metadata and tensors into a GGUF
 * writer, as llama.cpp's convert_hf_to_gguf.py lays them out for the qwen3
 * architecture: the same keys, names and shapes, no q/k permutation (that
 * is done for the llama architecture only), norms in F32. A Qwen3-MoE
 * checkpoint becomes a qwen3moe file: its expert keys, each layer's router
 * (ffn_gate_inp, kept float) and its experts stacked per projection
 * (ffn_*_exps, in the file's type like every other matrix).
 *
 * A GGUF file (qwen3 or qwen3moe) is rewritten the same way, in the same
 * tensor order, its metadata copied but for the file type.
 *
 * Each tensor is converted when the writer writes it (gguf_tensor_fill),
 * one at a time; what can refuse it is checked when it is added. A tensor
 * already of the target type is copied; any other goes through
 * f32, one row at a time (dequantized when a block type is allowed to
 * change), then to the target type: f32 -> f16 / bf16 rounds to nearest
 * even, block types are quantized by base/quant.c. */
#define _POSIX_C_SOURCE 200809L
#include "model/gguf_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parallel_rows.h"
#include "base/quant.h"
#include "graph/graph.h"
#include "model/generation_config.h"
#include "model/gguf_config.h"
#include "model/gguf_mix.h"
#include "model/qwen3_tensors.h"

/* --- conversion --------------------------------------------------------------- */

/* Whether rows of n values convert to `to` (gguf__convert_row cannot fail
 * once this says so). */
static enc_status gguf__convert_supported(int64_t n, enc_dtype to)
{
    if (to == ENC_F32 || to == ENC_F16 || to == ENC_BF16) return ENC_OK;
    if (quant_quantizes(to) && n % enc_dtype_block_elems(to) == 0) return ENC_OK;
    return enc_fail(ENC_ERR_UNSUPPORTED, "cannot quantize a row of %lld values to %s", (long long)n,
                    enc_dtype_name(to));
}

/* One row of n f32 values into `to`, at dst (enc_dtype_row_bytes(to, n) bytes). */
static void gguf__convert_row(const float *x, int64_t n, enc_dtype to, unsigned char *dst)
{
    switch (to) {
    case ENC_F32:
        memcpy(dst, x, (size_t)n * 4);
        return;
    case ENC_F16:
    case ENC_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = to == ENC_F16 ? enc_f32_to_f16(x[i]) : enc_f32_to_bf16(x[i]);
            memcpy(dst + 2 * i, &h, 2);
        }
        return;
    default: /* a block type: base/quant.c's quantizer (gguf__convert_supported) */
        quant_quantize_row(to, x, dst, n);
        return;
    }
}

/* t's rows, cols (its last dimension) and bytes once of type `to`. */
static enc_status gguf__size(const st_tensor *t, enc_dtype to, int64_t *rows, int64_t *cols,
                             size_t *n_bytes)
{
    *cols = t->shape[t->n_dims - 1];
    *rows = 1;
    for (int d = 0; d + 1 < t->n_dims; d++)
        *rows *= t->shape[d];
    size_t row_bytes = enc_dtype_row_bytes(to, *cols);
    if (row_bytes == 0) /* the type asked for does not fit the model */
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "%s: tensor '%s': rows of %lld values are not whole "
                        "%s blocks",
                        t->file, t->name, (long long)*cols, enc_dtype_name(to));
    *n_bytes = (size_t)*rows * row_bytes;
    return ENC_OK;
}

/* Rows of t (row bytes rb_from) converted to `to` (row bytes rb) into out. */
typedef struct {
    const st_tensor *t;
    enc_dtype to;
    int64_t cols;
    size_t rb_from, rb;
    unsigned char *out;
} gguf__convert_job;

static void gguf__convert_rows(void *ctx, int64_t r0, int64_t r1, float *row)
{
    const gguf__convert_job *job = ctx;
    const unsigned char *from = job->t->data;
    for (int64_t r = r0; r < r1; r++) {
        quant_dequantize_row(job->t->dtype, from + (size_t)r * job->rb_from, row, job->cols);
        gguf__convert_row(row, job->cols, job->to, job->out + (size_t)r * job->rb);
    }
}

/* A tensor of a block type converted to another type is quantized a second
 * time, which llama-quantize also refuses unless asked. */
static enc_status gguf__check_requantize(const st_tensor *t, enc_dtype to, int allow_requantize)
{
    if (allow_requantize || !enc_dtype_is_quantized(t->dtype) || t->dtype == to) return ENC_OK;
    return enc_fail(ENC_ERR_UNSUPPORTED,
                    "it is %s already; making it %s quantizes it twice, which loses "
                    "more than quantizing the float weights once (--allow-requantize does it)",
                    enc_dtype_name(t->dtype), enc_dtype_name(to));
}

/* Whether t can become a tensor of type `to` (checked when the tensor is
 * added, so that the file is not begun when it cannot be finished). */
static enc_status gguf__check_convert(const st_tensor *t, enc_dtype to, int allow_requantize)
{
    if (t->dtype == to) return ENC_OK;
    enc_status s = gguf__check_requantize(t, to, allow_requantize);
    if (s == ENC_OK) s = gguf__convert_supported(t->shape[t->n_dims - 1], to);
    return s == ENC_OK ? ENC_OK : enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
}

/* Every row of t converted to `to` into out (gguf__size's n_bytes), the
 * rows split over the CPUs; a tensor already of type `to` is copied. */
static enc_status gguf__convert(const st_tensor *t, enc_dtype to, unsigned char *out)
{
    int64_t rows = 0, cols = 0;
    size_t n_bytes = 0;
    ENC_TRY(gguf__size(t, to, &rows, &cols, &n_bytes));
    if (t->dtype == to) {
        memcpy(out, t->data, n_bytes);
        return ENC_OK;
    }
    gguf__convert_job job = {
        t, to, cols, enc_dtype_row_bytes(t->dtype, cols), n_bytes / (size_t)(rows ? rows : 1), out};
    enc_status s = parallel_rows(rows, (double)cols, (size_t)cols, gguf__convert_rows, &job);
    return s == ENC_OK ? ENC_OK : enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
}

/* What the tensors go into, and how. */
typedef struct gguf__export {
    gguf_writer *w;
    const qwen3_config *c;
    const st_archive *a; /* a safetensors checkpoint: its per-expert tensors; else NULL */
    gguf_file_type ft;
    int allow_requantize;
} gguf__export;

/* A tensor of the file: parts of one shape converted one after another
 * when the writer writes it (gguf_tensor_fill). */
typedef struct gguf__parts {
    enc_dtype to;
    size_t part_bytes;
    int64_t n;
    const st_tensor *parts[];
} gguf__parts;

static enc_status gguf__fill_parts(void *ctx, void *dst, size_t n_bytes)
{
    const gguf__parts *p = ctx;
    (void)n_bytes; /* p->n * p->part_bytes */
    for (int64_t j = 0; j < p->n; j++)
        ENC_TRY(
            gguf__convert(p->parts[j], p->to, (unsigned char *)dst + (size_t)j * p->part_bytes));
    return ENC_OK;
}

/* parts[0..n) of one shape, converted to `to` one after another when the
 * file is written: [n, shape...] when stacked, else the shape itself
 * (n == 1). The parts must stay mapped until then. */
static enc_status gguf__add_parts(const gguf__export *x, const char *name,
                                  const st_tensor *const *parts, int64_t n, int stacked,
                                  enc_dtype to)
{
    int64_t rows = 0, cols = 0, shape[ST_MAX_DIMS + 1];
    size_t part_bytes = 0;
    ENC_TRY(gguf__size(parts[0], to, &rows, &cols, &part_bytes));
    for (int64_t j = 0; j < n; j++)
        ENC_TRY(gguf__check_convert(parts[j], to, x->allow_requantize));
    gguf__parts *p = malloc(sizeof *p + (size_t)n * sizeof p->parts[0]);
    if (!p) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tensor '%s'", name);
    p->to = to;
    p->part_bytes = part_bytes;
    p->n = n;
    memcpy(p->parts, parts, (size_t)n * sizeof p->parts[0]);
    int n_dims = parts[0]->n_dims;
    shape[0] = n;
    memcpy(shape + stacked, parts[0]->shape, (size_t)n_dims * sizeof *shape);
    return gguf_writer_add_tensor_fill(x->w, name, to, n_dims + stacked, shape,
                                       part_bytes * (size_t)n, gguf__fill_parts, p);
}

static enc_status gguf__add(const gguf__export *x, const char *name, const st_tensor *t,
                            enc_dtype to)
{
    return gguf__add_parts(x, name, &t, 1, 0, to);
}

/* --- metadata ------------------------------------------------------------------ */

/* general.file_type, and general.quantization_version for a block type */
static enc_status gguf__file_type(gguf_writer *w, gguf_file_type ft)
{
    ENC_TRY(gguf_writer_add_u32(w, "general.file_type", gguf_mix_file_type(ft)));
    if (!enc_dtype_is_quantized(ft.base)) return ENC_OK;
    return gguf_writer_add_u32(w, "general.quantization_version", 2);
}

/* "<arch>.<suffix>" = v (u32 or f32) */
static enc_status gguf__arch_u32(gguf_writer *w, const char *arch, const char *suffix, int64_t v)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_writer_add_u32(w, key, (uint32_t)v);
}

static enc_status gguf__arch_f32(gguf_writer *w, const char *arch, const char *suffix, double v)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_writer_add_f32(w, key, (float)v);
}

/* qwen3moe's keys, as convert_hf_to_gguf.py writes them for
 * Qwen3MoeForCausalLM, and expert_weights_norm (which llama.cpp's qwen3moe
 * does not read: it always renormalises). */
static enc_status gguf__moe_metadata(gguf_writer *w, const qwen3_config *c)
{
    ENC_TRY(gguf__arch_u32(w, "qwen3moe", "expert_count", c->n_experts));
    ENC_TRY(gguf__arch_u32(w, "qwen3moe", "expert_used_count", c->n_experts_per_tok));
    ENC_TRY(gguf__arch_u32(w, "qwen3moe", "expert_feed_forward_length", c->moe_intermediate_size));
    return gguf_writer_add_bool(w, "qwen3moe.expert_weights_norm", c->norm_topk_prob);
}

/* rope.scaling.*, as convert_hf_to_gguf.py writes a linear or yarn
 * rope_scaling (beta_fast / beta_slow and the attention factor only when the
 * checkpoint gives them); nothing for plain RoPE. */
static enc_status gguf__rope_metadata(gguf_writer *w, const char *arch, const enc_rope_scaling *s)
{
    if (s->kind == ENC_ROPE_NONE) return ENC_OK;
    if (!s->truncate)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "yarn rope scaling with truncate false has no GGUF key (llama.cpp "
                        "always truncates)");
    const char *type = s->kind == ENC_ROPE_YARN ? "yarn" : "linear";
    char key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    ENC_TRY(gguf_writer_add_str(w, key, type, strlen(type)));
    ENC_TRY(gguf__arch_f32(w, arch, "rope.scaling.factor", s->factor));
    if (s->kind != ENC_ROPE_YARN) return ENC_OK;
    if (s->original_ctx)
        ENC_TRY(gguf__arch_u32(w, arch, "rope.scaling.original_context_length", s->original_ctx));
    if (s->beta_fast != 32.0)
        ENC_TRY(gguf__arch_f32(w, arch, "rope.scaling.yarn_beta_fast", s->beta_fast));
    if (s->beta_slow != 1.0)
        ENC_TRY(gguf__arch_f32(w, arch, "rope.scaling.yarn_beta_slow", s->beta_slow));
    if (s->attention_factor > 0)
        ENC_TRY(gguf__arch_f32(w, arch, "rope.scaling.yarn_attn_factor", s->attention_factor));
    return ENC_OK;
}

/* general.sampling.*, the sampling the checkpoint recommends (its
 * generation_config.json), as convert_hf_to_gguf.py writes them; the
 * repetition penalty as llama.cpp's penalty_repeat. */
static enc_status gguf__sampling_metadata(gguf_writer *w, const qwen3_generation_defaults *g)
{
    if (g->set & QWEN3_GEN_TEMPERATURE)
        ENC_TRY(gguf_writer_add_f32(w, "general.sampling.temp", (float)g->temperature));
    if (g->set & QWEN3_GEN_TOP_K)
        ENC_TRY(gguf_writer_add_i32(w, "general.sampling.top_k", (int32_t)g->top_k));
    if (g->set & QWEN3_GEN_TOP_P)
        ENC_TRY(gguf_writer_add_f32(w, "general.sampling.top_p", (float)g->top_p));
    if (g->set & QWEN3_GEN_MIN_P)
        ENC_TRY(gguf_writer_add_f32(w, "general.sampling.min_p", (float)g->min_p));
    if (g->set & QWEN3_GEN_REPETITION_PENALTY)
        ENC_TRY(gguf_writer_add_f32(w, "general.sampling.penalty_repeat",
                                    (float)g->repetition_penalty));
    return ENC_OK;
}

static enc_status gguf__metadata(gguf_writer *w, const qwen3_config *c, gguf_file_type ft,
                                 const char *name)
{
    const char *arch = c->n_experts ? "qwen3moe" : "qwen3";
    ENC_TRY(gguf_writer_add_str(w, "general.architecture", arch, strlen(arch)));
    ENC_TRY(gguf_writer_add_str(w, "general.name", name, strlen(name)));
    ENC_TRY(gguf__file_type(w, ft));
    ENC_TRY(gguf__sampling_metadata(w, &c->generation));
    ENC_TRY(gguf__arch_u32(w, arch, "context_length", c->max_position_embeddings));
    ENC_TRY(gguf__arch_u32(w, arch, "embedding_length", c->hidden_size));
    ENC_TRY(gguf__arch_u32(w, arch, "block_count", c->n_layers));
    ENC_TRY(gguf__arch_u32(w, arch, "feed_forward_length", c->intermediate_size));
    ENC_TRY(gguf__arch_u32(w, arch, "attention.head_count", c->n_heads));
    ENC_TRY(gguf__arch_u32(w, arch, "attention.head_count_kv", c->n_kv_heads));
    ENC_TRY(gguf__arch_u32(w, arch, "attention.key_length", c->head_dim));
    ENC_TRY(gguf__arch_u32(w, arch, "attention.value_length", c->head_dim));
    ENC_TRY(gguf__arch_f32(w, arch, "rope.freq_base", c->rope_theta));
    ENC_TRY(gguf__rope_metadata(w, arch, &c->rope_scaling));
    ENC_TRY(gguf__arch_f32(w, arch, "attention.layer_norm_rms_epsilon", c->rms_norm_eps));
    return c->n_experts ? gguf__moe_metadata(w, c) : ENC_OK;
}

/* --- tensors ------------------------------------------------------------------- */

/* The type of a sparse layer's router: the file's type when it is a float
 * type, else F32 (it stays float, as --quantize leaves it and as llama.cpp
 * keeps ffn_gate_inp). The experts take the file's type. */
static enc_dtype gguf__router_type(enc_dtype type)
{
    return enc_dtype_is_quantized(type) ? ENC_F32 : type;
}

/* MoE layer l's router and its experts stacked per projection in expert
 * order: ffn_gate_exps, ffn_up_exps [E, Fe, D], ffn_down_exps [E, D, Fe]
 * (a GGUF source has them stacked already). */
static enc_status gguf__moe_layer(const gguf__export *x, int64_t l, const qwen3_layer_tensors *t)
{
    static const char *const proj[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
    const qwen3_config *c = x->c;
    const st_tensor *parts[GRAPH_MOE_MAX_EXPERTS];
    char name[96];
    snprintf(name, sizeof name, "blk.%lld.ffn_gate_inp.weight", (long long)l);
    ENC_TRY(gguf__add(x, name, t->router, gguf__router_type(x->ft.base)));
    for (int p = 0; p < 3; p++) {
        gguf_role role = p == 2 ? GGUF_ROLE_FFN_DOWN : GGUF_ROLE_OTHER;
        enc_dtype to = gguf_mix_type(x->ft, role, l, c->n_layers, c->n_experts);
        snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)l, proj[p]);
        if (t->experts[p]) {
            ENC_TRY(gguf__add(x, name, t->experts[p], to));
            continue;
        }
        for (int64_t j = 0; j < c->n_experts; j++)
            parts[j] = qwen3_tensors_expert(x->a, l, j, p);
        ENC_TRY(gguf__add_parts(x, name, parts, c->n_experts, 1, to));
    }
    return ENC_OK;
}

static enc_status gguf__layer(const gguf__export *x, int64_t l, const qwen3_layer_tensors *t)
{
    enum { NORM = -1 };
    const struct {
        const char *name;
        const st_tensor *t;
        int role; /* a gguf_role, or NORM */
    } e[] = {
        {"attn_norm", t->input_norm, NORM},
        {"attn_q", t->q, GGUF_ROLE_OTHER},
        {"attn_k", t->k, GGUF_ROLE_ATTN_K},
        {"attn_v", t->v, GGUF_ROLE_ATTN_V},
        {"attn_output", t->o, GGUF_ROLE_ATTN_OUTPUT},
        {"attn_q_norm", t->q_norm, NORM},
        {"attn_k_norm", t->k_norm, NORM},
        {"ffn_norm", t->post_norm, NORM},
        {"ffn_gate", t->gate, GGUF_ROLE_OTHER},
        {"ffn_up", t->up, GGUF_ROLE_OTHER},
        {"ffn_down", t->down, GGUF_ROLE_FFN_DOWN},
    };
    const qwen3_config *c = x->c;
    char name[96];
    size_t n = sizeof e / sizeof e[0] - (t->router ? 3 : 0); /* a MoE layer: no dense MLP */
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)l, e[i].name);
        enc_dtype to = e[i].role == NORM ? ENC_F32
                                         : gguf_mix_type(x->ft, (gguf_role)e[i].role, l,
                                                         c->n_layers, c->n_experts);
        ENC_TRY(gguf__add(x, name, e[i].t, to));
    }
    return t->router ? gguf__moe_layer(x, l, t) : ENC_OK;
}

/* llama.cpp's qwen3moe has a sparse block in every layer. */
static enc_status gguf__check_all_sparse(const qwen3_config *c, const char *model_dir)
{
    for (int64_t l = 0; c->n_experts && l < c->n_layers; l++)
        if (!qwen3_config_layer_is_moe(c, l))
            return enc_fail(ENC_ERR_UNSUPPORTED,
                            "%s/config.json: layer %lld is dense (mlp_only_layers or "
                            "decoder_sparse_step); a qwen3moe GGUF file has experts in every layer",
                            model_dir, (long long)l);
    return ENC_OK;
}

static enc_status gguf__tensors(const gguf__export *x, const qwen3_tensors *t)
{
    const qwen3_config *c = x->c;
    if (!t->lm_head)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "the checkpoint has no lm_head.weight and its embeddings are not tied "
                        "(an embedding model's): a GGUF file without output.weight reads as tied");
    int tied = t->lm_head == t->embed; /* the embedding is the output matrix too */
    gguf_role embed_role = tied ? GGUF_ROLE_OUTPUT : GGUF_ROLE_TOKEN_EMBD;
    ENC_TRY(gguf__add(x, "token_embd.weight", t->embed,
                      gguf_mix_type(x->ft, embed_role, 0, c->n_layers, c->n_experts)));
    for (int64_t l = 0; l < c->n_layers; l++)
        ENC_TRY(gguf__layer(x, l, &t->layers[l]));
    ENC_TRY(gguf__add(x, "output_norm.weight", t->final_norm, ENC_F32));
    if (!tied)
        ENC_TRY(gguf__add(x, "output.weight", t->lm_head,
                          gguf_mix_type(x->ft, GGUF_ROLE_OUTPUT, 0, c->n_layers, c->n_experts)));
    return ENC_OK;
}

static enc_status gguf__check_type(gguf_file_type ft)
{
    if (gguf_ggml_from_dtype(ft.base) == UINT32_MAX)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "GGUF has no type %s", enc_dtype_name(ft.base));
    return ENC_OK;
}

enc_status qwen3_export_gguf(const char *model_dir, const st_archive *a, gguf_file_type ft,
                             const char *name, gguf_writer *w, int64_t *vocab_size)
{
    ENC_TRY(gguf__check_type(ft));
    qwen3_config c;
    qwen3_tensors t = {0};
    ENC_TRY(qwen3_config_load(model_dir, &c));
    ENC_TRY(generation_config_load(model_dir, &c));
    ENC_TRY(gguf__check_all_sparse(&c, model_dir));
    enc_status s = qwen3_tensors_find(&c, a, &t);
    if (s == ENC_OK) s = gguf__metadata(w, &c, ft, name);
    gguf__export x = {w, &c, a, ft, 0};
    if (s == ENC_OK) s = gguf__tensors(&x, &t);
    qwen3_tensors_free(&t);
    *vocab_size = c.vocab_size;
    return s;
}

/* Every kv of g but the file type, the quantization version and the
 * alignment, in g's order; ft's file type (and quantization version) where
 * g had its file type, or at the end. */
static enc_status gguf__copy_metadata(gguf_writer *w, const gguf_file *g, gguf_file_type ft)
{
    int typed = 0;
    for (size_t i = 0; i < gguf_kv_count(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        if (!strcmp(kv->key, "general.file_type")) {
            ENC_TRY(gguf__file_type(w, ft));
            typed = 1;
        } else if (strcmp(kv->key, "general.quantization_version") &&
                   strcmp(kv->key, "general.alignment")) {
            ENC_TRY(gguf_writer_add_kv(w, kv));
        }
    }
    return typed ? ENC_OK : gguf__file_type(w, ft);
}

enc_status qwen3_export_gguf_file(const gguf_file *g, gguf_file_type ft, int allow_requantize,
                                  gguf_writer *w)
{
    ENC_TRY(gguf__check_type(ft));
    qwen3_config c;
    qwen3_tensors t = {0};
    tensor_source src = tensor_source_gguf(g);
    ENC_TRY(qwen3_config_from_gguf(g, &c));
    enc_status s = qwen3_tensors_find_in(&c, &src, &t);
    if (s == ENC_OK) s = gguf__copy_metadata(w, g, ft);
    gguf__export x = {w, &c, NULL, ft, allow_requantize};
    if (s == ENC_OK) s = gguf__tensors(&x, &t);
    qwen3_tensors_free(&t);
    return s;
}
