/* gguf_export.c - a Qwen3 checkpoint's metadata and tensors into a GGUF
 * writer, as llama.cpp's convert_hf_to_gguf.py lays them out for the qwen3
 * architecture: the same keys, names and shapes, no q/k permutation (that
 * is done for the llama architecture only), norms in F32.
 *
 * Every tensor goes through f32, one row at a time, then to the target type:
 * f32 -> f32 / f16 / bf16 rounds to nearest even, so a checkpoint written in
 * its own type (bf16 -> bf16, ...) is copied bit for bit. */
#define _POSIX_C_SOURCE 200809L
#include "model/gguf_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/qwen3_tensors.h"

/* --- conversion --------------------------------------------------------------- */

static float gguf__elem(const st_tensor *t, int64_t i)
{
    const unsigned char *p = t->data;
    if (t->dtype == ENC_F32) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return t->dtype == ENC_BF16 ? enc_bf16_to_f32(h) : enc_f16_to_f32(h);
}

/* One row of n f32 values into `to`, at dst (enc_dtype_row_bytes(to, n) bytes). */
static enc_status gguf__convert_row(const float *x, int64_t n, enc_dtype to, unsigned char *dst)
{
    switch (to) {
    case ENC_F32:
        memcpy(dst, x, (size_t)n * 4);
        return ENC_OK;
    case ENC_F16:
    case ENC_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = to == ENC_F16 ? enc_f32_to_f16(x[i]) : enc_f32_to_bf16(x[i]);
            memcpy(dst + 2 * i, &h, 2);
        }
        return ENC_OK;
    /* The block types: one case each calling its row quantizer (x -> blocks)
     * once the reference quantizers exist. */
    default:
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "quantizing to %s is not available in this build "
                        "(its quantizer is missing)",
                        enc_dtype_name(to));
    }
}

/* t as a malloc'd tensor of type `to` (given to the writer, which frees it). */
static enc_status gguf__add(gguf_writer *w, const char *name, const st_tensor *t, enc_dtype to)
{
    int64_t cols = t->shape[t->n_dims - 1], rows = 1;
    for (int d = 0; d + 1 < t->n_dims; d++)
        rows *= t->shape[d];
    size_t row_bytes = enc_dtype_row_bytes(to, cols);
    if (row_bytes == 0)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: tensor '%s': rows of %lld values are not whole "
                        "%s blocks",
                        t->file, t->name, (long long)cols, enc_dtype_name(to));
    size_t n_bytes = (size_t)rows * row_bytes;
    unsigned char *out = malloc(n_bytes ? n_bytes : 1);
    float *row = malloc((size_t)cols * sizeof *row);
    enc_status s = out && row ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "tensor '%s'", t->name);
    for (int64_t r = 0; s == ENC_OK && r < rows; r++) {
        for (int64_t c = 0; c < cols; c++)
            row[c] = gguf__elem(t, r * cols + c);
        s = gguf__convert_row(row, cols, to, out + (size_t)r * row_bytes);
    }
    free(row);
    if (s == ENC_OK)
        return gguf_writer_add_tensor(w, name, to, t->n_dims, t->shape, out, n_bytes, 1);
    free(out);
    return enc_fail_context(s, "%s: tensor '%s'", t->file, t->name);
}

/* --- metadata ------------------------------------------------------------------ */

/* llama.cpp's general.file_type (enum llama_ftype) of a whole-file type. */
static uint32_t gguf__file_type(enc_dtype t)
{
    switch (t) {
    case ENC_F32:
        return 0;
    case ENC_F16:
        return 1;
    case ENC_Q4_0:
        return 2;
    case ENC_Q8_0:
        return 7;
    case ENC_Q4_K:
        return 14; /* Q4_K_S: every matrix Q4_K */
    case ENC_Q5_K:
        return 16; /* Q5_K_S */
    case ENC_Q6_K:
        return 18;
    default:
        return 32; /* BF16 */
    }
}

static enc_status gguf__metadata(gguf_writer *w, const qwen3_config *c, enc_dtype type,
                                 const char *name)
{
    ENC_TRY(gguf_writer_add_str(w, "general.architecture", "qwen3", 5));
    ENC_TRY(gguf_writer_add_str(w, "general.name", name, strlen(name)));
    ENC_TRY(gguf_writer_add_u32(w, "general.file_type", gguf__file_type(type)));
    if (enc_dtype_is_quantized(type))
        ENC_TRY(gguf_writer_add_u32(w, "general.quantization_version", 2));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.context_length", (uint32_t)c->max_position_embeddings));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.embedding_length", (uint32_t)c->hidden_size));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.block_count", (uint32_t)c->n_layers));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.feed_forward_length", (uint32_t)c->intermediate_size));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.attention.head_count", (uint32_t)c->n_heads));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.attention.head_count_kv", (uint32_t)c->n_kv_heads));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.attention.key_length", (uint32_t)c->head_dim));
    ENC_TRY(gguf_writer_add_u32(w, "qwen3.attention.value_length", (uint32_t)c->head_dim));
    ENC_TRY(gguf_writer_add_f32(w, "qwen3.rope.freq_base", (float)c->rope_theta));
    return gguf_writer_add_f32(w, "qwen3.attention.layer_norm_rms_epsilon", (float)c->rms_norm_eps);
}

/* --- tensors ------------------------------------------------------------------- */

static enc_status gguf__layer(gguf_writer *w, int64_t l, const qwen3_layer_tensors *t,
                              enc_dtype type)
{
    const struct {
        const char *name;
        const st_tensor *t;
        int norm;
    } e[] = {
        {"attn_norm", t->input_norm, 1},
        {"attn_q", t->q, 0},
        {"attn_k", t->k, 0},
        {"attn_v", t->v, 0},
        {"attn_output", t->o, 0},
        {"attn_q_norm", t->q_norm, 1},
        {"attn_k_norm", t->k_norm, 1},
        {"ffn_norm", t->post_norm, 1},
        {"ffn_gate", t->gate, 0},
        {"ffn_up", t->up, 0},
        {"ffn_down", t->down, 0},
    };
    char name[96];
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) {
        snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)l, e[i].name);
        ENC_TRY(gguf__add(w, name, e[i].t, e[i].norm ? ENC_F32 : type));
    }
    return ENC_OK;
}

static enc_status gguf__tensors(gguf_writer *w, const qwen3_config *c, const qwen3_tensors *t,
                                enc_dtype type, qwen3_progress_fn progress, void *user)
{
    ENC_TRY(gguf__add(w, "token_embd.weight", t->embed, type));
    for (int64_t l = 0; l < c->n_layers; l++) {
        ENC_TRY(gguf__layer(w, l, &t->layers[l], type));
        if (progress) progress(user, (double)(l + 1) / (double)(c->n_layers + 1));
    }
    ENC_TRY(gguf__add(w, "output_norm.weight", t->final_norm, ENC_F32));
    if (t->lm_head != t->embed) ENC_TRY(gguf__add(w, "output.weight", t->lm_head, type));
    if (progress) progress(user, 1.0);
    return ENC_OK;
}

enc_status qwen3_export_gguf(const char *model_dir, enc_dtype type, const char *name,
                             qwen3_progress_fn progress, void *user, gguf_writer *w,
                             int64_t *vocab_size)
{
    if (gguf_ggml_from_dtype(type) == UINT32_MAX)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "GGUF has no type %s", enc_dtype_name(type));
    qwen3_config c;
    st_archive *a = NULL;
    qwen3_tensors t = {0};
    ENC_TRY(qwen3_config_load(model_dir, &c));
    enc_status s = st_open_dir(model_dir, &a);
    if (s == ENC_OK) s = qwen3_tensors_find(&c, a, &t);
    if (s == ENC_OK) s = gguf__metadata(w, &c, type, name);
    if (s == ENC_OK) s = gguf__tensors(w, &c, &t, type, progress, user);
    qwen3_tensors_free(&t);
    st_close(a); /* the writer holds converted copies */
    *vocab_size = c.vocab_size;
    return s;
}
