/* model_tokenizer.c - the tokenizer of a model path (model_tokenizer.h).
 *
 * For a GGUF file the tokenizer.ggml.* keys become a tokenizer_lists:
 *   model "gpt2" (byte-level BPE; others refused), pre, tokens, token_type,
 *   merges, bos/eos/padding_token_id, and tokenizer.chat_template.
 * The lists point into the file's mapping; the tokenizer copies them. */
#define _POSIX_C_SOURCE 200809L
#include "api/model_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mapfile.h"
#include "tokenizer/chat_template.h"

/* An id key (any integer type), -1 when absent. */
static enc_status mtok__id(const gguf_file *g, const char *key, int32_t *out)
{
    int64_t v = -1;
    int found = 0;
    *out = -1;
    ENC_TRY(gguf_get_int(g, key, &v, &found));
    if (found && (v < 0 || v > INT32_MAX))
        return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' is %lld, not a token id", gguf_path(g), key,
                        (long long)v);
    if (found) *out = (int32_t)v;
    return ENC_OK;
}

/* tokenizer.ggml.model must be "gpt2"; pre is copied NUL-terminated. */
static enc_status mtok__model(const gguf_file *g, char *pre, size_t pre_cap)
{
    gguf_str s = {0};
    int found = 0;
    ENC_TRY(gguf_get_str(g, "tokenizer.ggml.model", &s, &found));
    if (!found || s.len != 4 || memcmp(s.p, "gpt2", 4))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: key 'tokenizer.ggml.model' is '%.*s'; encore "
                        "reads gpt2 (byte-level BPE)",
                        gguf_path(g), found ? (int)(s.len < 32 ? s.len : 32) : 9,
                        found ? s.p : "(absent)");
    ENC_TRY(gguf_get_str(g, "tokenizer.ggml.pre", &s, &found));
    if (found && memchr(s.p, '\0', (size_t)s.len))
        return enc_fail(ENC_ERR_FORMAT, "%s: key 'tokenizer.ggml.pre' holds a NUL byte",
                        gguf_path(g));
    size_t n = found ? (size_t)s.len : 0;
    if (n >= pre_cap) n = pre_cap - 1;
    memcpy(pre, found ? s.p : "", n);
    pre[n] = '\0';
    return ENC_OK;
}

/* Pointer and length tables over n strings of the mapping (malloc'd). */
static enc_status mtok__table(const gguf_str *s, uint64_t n, const char ***p, size_t **len)
{
    *p = malloc((size_t)(n ? n : 1) * sizeof **p);
    *len = malloc((size_t)(n ? n : 1) * sizeof **len);
    if (!*p || !*len) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer lists");
    for (uint64_t i = 0; i < n; i++)
        (*p)[i] = s[i].p, (*len)[i] = (size_t)s[i].len;
    return ENC_OK;
}

/* token_type: n integers, one per token. *out malloc'd (NULL when absent). */
static enc_status mtok__types(const gguf_file *g, uint64_t n_tokens, int32_t **out)
{
    const gguf_kv *kv = NULL;
    int found = 0;
    *out = NULL;
    ENC_TRY(gguf_get_int_array(g, "tokenizer.ggml.token_type", &kv, &found));
    if (!found) return ENC_OK;
    if (kv->n != n_tokens)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key 'tokenizer.ggml.token_type' at byte offset %zu "
                        "has %llu entries for %llu tokens",
                        gguf_path(g), kv->offset, (unsigned long long)kv->n,
                        (unsigned long long)n_tokens);
    *out = malloc((size_t)(n_tokens ? n_tokens : 1) * sizeof **out);
    if (!*out) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "token types");
    for (uint64_t i = 0; i < n_tokens; i++) {
        int64_t v = gguf_array_int(kv, i);
        if (v < 1 || v > 6) /* llama.cpp's token types: normal .. byte */
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: key 'tokenizer.ggml.token_type' at byte offset %zu, entry %llu: "
                            "type %lld is not 1..6",
                            gguf_path(g), kv->offset, (unsigned long long)i, (long long)v);
        (*out)[i] = (int32_t)v;
    }
    return ENC_OK;
}

typedef struct mtok__tables {
    const char **tokens, **merges;
    size_t *token_lens, *merge_lens;
    int32_t *types;
} mtok__tables;

static void mtok__tables_free(mtok__tables *t)
{
    free(t->tokens);
    free(t->merges);
    free(t->token_lens);
    free(t->merge_lens);
    free(t->types);
}

static enc_status mtok__lists(const gguf_file *g, tokenizer_lists *l, mtok__tables *t, char *pre,
                              size_t pre_cap)
{
    const gguf_str *tokens = NULL, *merges = NULL;
    uint64_t n_tokens = 0, n_merges = 0;
    int found = 0;
    gguf_str tpl = {0};
    ENC_TRY(mtok__model(g, pre, pre_cap));
    ENC_TRY(gguf_get_str_array(g, "tokenizer.ggml.tokens", &tokens, &n_tokens, &found));
    if (!found)
        return enc_fail(ENC_ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens' is missing", gguf_path(g));
    ENC_TRY(gguf_get_str_array(g, "tokenizer.ggml.merges", &merges, &n_merges, &found));
    ENC_TRY(mtok__table(tokens, n_tokens, &t->tokens, &t->token_lens));
    ENC_TRY(mtok__table(merges, n_merges, &t->merges, &t->merge_lens));
    ENC_TRY(mtok__types(g, n_tokens, &t->types));
    *l = (tokenizer_lists){.n_tokens = (size_t)n_tokens,
                           .tokens = t->tokens,
                           .token_lens = t->token_lens,
                           .token_types = t->types,
                           .n_merges = (size_t)n_merges,
                           .merges = t->merges,
                           .merge_lens = t->merge_lens,
                           .pre = pre};
    ENC_TRY(mtok__id(g, "tokenizer.ggml.bos_token_id", &l->bos_id));
    ENC_TRY(mtok__id(g, "tokenizer.ggml.eos_token_id", &l->eos_id));
    ENC_TRY(mtok__id(g, "tokenizer.ggml.padding_token_id", &l->pad_id));
    ENC_TRY(gguf_get_str(g, "tokenizer.chat_template", &tpl, &found));
    if (found) l->chat_template = tpl.p, l->chat_template_len = (size_t)tpl.len;
    return ENC_OK;
}

enc_status model_tokenizer_from_gguf(const gguf_file *g, tokenizer **out)
{
    *out = NULL;
    tokenizer_lists l;
    mtok__tables t = {0};
    char pre[64];
    enc_status s = mtok__lists(g, &l, &t, pre, sizeof pre);
    if (s == ENC_OK && (s = tokenizer_load_lists(&l, out)) != ENC_OK)
        s = enc_fail_context(s, "%s", gguf_path(g));
    mtok__tables_free(&t);
    return s;
}

/* --- writing -------------------------------------------------------------------- */

/* GGUF's token type of id (see tokenizer_lists.token_types). */
static int32_t mtok__type_of(const tokenizer *t, int32_t id)
{
    if (!tokenizer_token_text(t, id)) return 5;
    if (tokenizer_is_special(t, id)) return 3;
    return tokenizer_is_added(t, id) ? 4 : 1;
}

static enc_status mtok__write_tokens(const tokenizer *t, int64_t vocab_size, gguf_writer *w)
{
    size_t n =
        (size_t)(vocab_size > tokenizer_vocab_size(t) ? vocab_size : tokenizer_vocab_size(t));
    const char **text = malloc(n * sizeof *text);
    char *pads = malloc(n * 32);
    int32_t *types = malloc(n * sizeof *types);
    enc_status s = text && pads && types ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokens");
    for (size_t i = 0; s == ENC_OK && i < n; i++) {
        text[i] = tokenizer_token_text(t, (int32_t)i);
        types[i] = mtok__type_of(t, (int32_t)i);
        if (!text[i]) snprintf(pads + 32 * i, 32, "[PAD%zu]", i), text[i] = pads + 32 * i;
    }
    if (s == ENC_OK) s = gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", text, NULL, n);
    if (s == ENC_OK) s = gguf_writer_add_i32_array(w, "tokenizer.ggml.token_type", types, n);
    free(text);
    free(pads);
    free(types);
    return s;
}

/* "left right" for every merge, in rank order. */
static enc_status mtok__write_merges(const tokenizer *t, gguf_writer *w)
{
    int32_t *pairs = NULL;
    size_t n = 0;
    ENC_TRY(tokenizer_merges(t, &pairs, &n));
    char **m = calloc(n ? n : 1, sizeof *m);
    enc_status s = m ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "merges");
    for (size_t i = 0; s == ENC_OK && i < n; i++) {
        const char *a = tokenizer_token_text(t, pairs[2 * i]),
                   *b = tokenizer_token_text(t, pairs[2 * i + 1]);
        size_t len = strlen(a) + 1 + strlen(b) + 1;
        if (!(m[i] = malloc(len)))
            s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "merges");
        else
            snprintf(m[i], len, "%s %s", a, b);
    }
    if (s == ENC_OK)
        s = gguf_writer_add_str_array(w, "tokenizer.ggml.merges", (const char *const *)m, NULL, n);
    for (size_t i = 0; m && i < n; i++)
        free(m[i]);
    free(m);
    free(pairs);
    return s;
}

enc_status model_tokenizer_to_gguf(const tokenizer *t, int64_t vocab_size, int32_t bos_fallback,
                                   gguf_writer *w)
{
    int32_t bos = tokenizer_bos_id(t) >= 0 ? tokenizer_bos_id(t) : bos_fallback;
    ENC_TRY(gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2", 4));
    ENC_TRY(gguf_writer_add_str(w, "tokenizer.ggml.pre", "qwen2", 5));
    ENC_TRY(mtok__write_tokens(t, vocab_size, w));
    ENC_TRY(mtok__write_merges(t, w));
    if (tokenizer_eos_id(t) >= 0)
        ENC_TRY(
            gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)tokenizer_eos_id(t)));
    if (tokenizer_pad_id(t) >= 0)
        ENC_TRY(gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id",
                                    (uint32_t)tokenizer_pad_id(t)));
    if (bos >= 0) ENC_TRY(gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos));
    ENC_TRY(gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 0));
    const char *tpl = tokenizer_chat_template(t);
    return tpl ? gguf_writer_add_str(w, "tokenizer.chat_template", tpl, strlen(tpl)) : ENC_OK;
}

/* --- reading a path --------------------------------------------------------------- */

static enc_status mtok__from_gguf_path(const char *path, int optional, tokenizer **out)
{
    gguf_file *g = NULL;
    ENC_TRY(gguf_open(path, &g));
    enc_status s = ENC_OK;
    if (!optional || gguf_find_kv(g, "tokenizer.ggml.tokens"))
        s = model_tokenizer_from_gguf(g, out);
    gguf_close(g);
    return s;
}

enc_status model_tokenizer_load(const char *path, int optional, tokenizer **out)
{
    *out = NULL;
    ENC_TRY(gguf_check_model_path(path));
    if (gguf_is_model_file(path)) return mtok__from_gguf_path(path, optional, out);
    if (optional) {
        size_t n = strlen(path) + sizeof "/tokenizer.json";
        char *json = malloc(n);
        if (!json) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "path");
        snprintf(json, n, "%s/tokenizer.json", path);
        int present = access(json, F_OK) == 0;
        free(json);
        if (!present) return ENC_OK;
    }
    return tokenizer_load(path, out);
}

enc_status model_tokenizer_chat_template(tokenizer *t, const char *file_or_name)
{
    struct stat st;
    if (stat(file_or_name, &st) != 0 || S_ISDIR(st.st_mode))
        return chat_template_replace(t, NULL, 0, file_or_name, file_or_name);
    char *text = NULL;
    size_t len = 0;
    ENC_TRY(file_read_all(file_or_name, &text, &len));
    enc_status s = chat_template_replace(t, text, len, NULL, file_or_name);
    free(text);
    return s;
}
