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

/* The checkpoint in dir into w: its tensors (converted when w writes them,
 * from *a, which stays open until then) and its tokenizer (*tok). */
static enc_status quantize__add_dir(const char *dir, const char *out_path, gguf_file_type type,
                                    gguf_writer *w, st_archive **a, tokenizer **tok)
{
    int64_t vocab = 0;
    char name[256];
    ENC_TRY(model_tokenizer_load(dir, 1, tok));
    if (!*tok)
        enc_log_warn("%s has no tokenizer.json: %s will hold no tokenizer, so encore runs it "
                     "with --prompt-ids only and llama.cpp refuses it",
                     dir, out_path);
    ENC_TRY(st_open_dir(dir, a));
    ENC_TRY(qwen3_export_gguf(dir, *a, type, quantize__name(dir, name, sizeof name), w, &vocab));
    if (!*tok) return ENC_OK;
    qwen3_config cfg;
    ENC_TRY(qwen3_config_load(dir, &cfg));
    return model_tokenizer_to_gguf(*tok, vocab, cfg.bos_token_id, w);
}

enc_status quantize_to_gguf(const char *model, const char *out_path, gguf_file_type type,
                            int allow_requantize, qwen3_progress_fn progress, void *user)
{
    gguf_writer *w = NULL;
    gguf_file *g = NULL;
    st_archive *a = NULL;
    tokenizer *tok = NULL;
    ENC_TRY(gguf_writer_create(&w));
    enc_status s;
    if (gguf_is_model_file(model)) {
        s = gguf_open(model, &g);
        if (s == ENC_OK) s = qwen3_export_gguf_file(g, type, allow_requantize, w);
    } else {
        s = quantize__add_dir(model, out_path, type, w, &a, &tok);
    }
    if (s == ENC_OK) gguf_writer_set_progress(w, progress, user);
    if (s == ENC_OK) s = gguf_writer_write(w, out_path); /* converts the tensors from g or a */
    gguf_writer_free(w);
    gguf_close(g);
    st_close(a);
    tokenizer_free(tok);
    return s;
}
