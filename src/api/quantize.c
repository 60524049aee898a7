/* quantize.c - `encore quantize`: the model's part (model/gguf_export.c)
 * and the tokenizer's part (model_tokenizer_to_gguf) of one GGUF file, or a
 * GGUF file rewritten in another type. */
#include "api/quantize.h"

#include <stdlib.h>
#include <string.h>

#include "api/model_tokenizer.h"
#include "base/log.h"
#include "model/config.h"
#include "model/gguf_export.h"

int quantize_type_parse(const char *name, gguf_file_type *out)
{
    static const struct {
        const char *name;
        gguf_file_type t;
    } types[] = {{"f32", {ENC_F32, false}},    {"f16", {ENC_F16, false}},
                 {"bf16", {ENC_BF16, false}},  {"q8_0", {ENC_Q8_0, false}},
                 {"q4_0", {ENC_Q4_0, false}},  {"q4_k", {ENC_Q4_K, false}},
                 {"q5_k", {ENC_Q5_K, false}},  {"q6_k", {ENC_Q6_K, false}},
                 {"q4_k_m", {ENC_Q4_K, true}}, {"q5_k_m", {ENC_Q5_K, true}}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(name, types[i].name)) {
            *out = types[i].t;
            return 1;
        }
    return 0;
}

/* The last path component of dir (into buf). */
static const char *quantize__name(const char *dir, char *buf, size_t cap)
{
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    size_t n = end - start < cap - 1 ? end - start : cap - 1;
    memcpy(buf, dir + start, n);
    buf[n] = '\0';
    return buf;
}

static enc_status quantize__gguf(const char *in_path, const char *out_path, gguf_file_type type,
                                 int allow_requantize, qwen3_progress_fn progress, void *user)
{
    gguf_file *g = NULL;
    gguf_writer *w = NULL;
    ENC_TRY(gguf_open(in_path, &g));
    enc_status s = gguf_writer_create(&w);
    if (s == ENC_OK) s = qwen3_export_gguf_file(g, type, allow_requantize, w);
    if (s == ENC_OK) gguf_writer_set_progress(w, progress, user);
    if (s == ENC_OK) s = gguf_writer_write(w, out_path); /* converts the tensors from g */
    gguf_writer_free(w);
    gguf_close(g);
    return s;
}

enc_status quantize_to_gguf(const char *model, const char *out_path, gguf_file_type type,
                            int allow_requantize, qwen3_progress_fn progress, void *user)
{
    if (gguf_is_model_file(model))
        return quantize__gguf(model, out_path, type, allow_requantize, progress, user);
    const char *model_dir = model;
    gguf_writer *w = NULL;
    st_archive *a = NULL;
    tokenizer *tok = NULL;
    int64_t vocab = 0;
    char name[256];
    ENC_TRY(gguf_writer_create(&w));
    enc_status s = model_tokenizer_load(model_dir, 1, &tok);
    if (s == ENC_OK && !tok)
        enc_log_warn("%s has no tokenizer.json: %s will hold no tokenizer, so encore runs it "
                     "with --prompt-ids only and llama.cpp refuses it",
                     model_dir, out_path);
    if (s == ENC_OK) s = st_open_dir(model_dir, &a);
    if (s == ENC_OK)
        s = qwen3_export_gguf(model_dir, a, type, quantize__name(model_dir, name, sizeof name), w,
                              &vocab);
    qwen3_config cfg;
    if (s == ENC_OK && tok) s = qwen3_config_load(model_dir, &cfg);
    if (s == ENC_OK && tok) s = model_tokenizer_to_gguf(tok, vocab, cfg.bos_token_id, w);
    if (s == ENC_OK) gguf_writer_set_progress(w, progress, user);
    if (s == ENC_OK) s = gguf_writer_write(w, out_path); /* converts the tensors from a */
    tokenizer_free(tok);
    gguf_writer_free(w);
    st_close(a);
    return s;
}
