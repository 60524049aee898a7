/* lists.c - a tokenizer built from lists (tokenizer_load_lists): the token
 * texts, token types and merges that a GGUF file's tokenizer.ggml.* keys
 * hold, with the same building blocks as the tokenizer.json loader
 * (tokenizer.c), so both give one tokenizer.
 *
 * GGUF names the pre-tokenizer instead of describing it; "qwen2" is the one
 * of Qwen2 and Qwen3's tokenizer.json: NFC, then a Split on the regex below
 * (Isolated), then ByteLevel without a prefix space or its own regex. Added
 * tokens are the control (special) and user-defined tokens, matched in the
 * raw text, never normalized or stripped, as in that tokenizer.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"

enum {
    TOK__TYPE_NORMAL = 1,
    TOK__TYPE_UNKNOWN = 2,
    TOK__TYPE_CONTROL = 3,
    TOK__TYPE_USER_DEFINED = 4,
    TOK__TYPE_UNUSED = 5,
    TOK__TYPE_BYTE = 6,
};

static const char tok__qwen2_pattern[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}"
                                         "+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                                         "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static int tok__type(const tokenizer_lists *l, size_t i)
{
    return l->token_types ? l->token_types[i] : TOK__TYPE_NORMAL;
}

/* Every token but the unused ones; added tokens after the vocabulary. */
static enc_status tok__lists_tokens(tokenizer *t, const tokenizer_lists *l)
{
    size_t n_added = 0, n_ids = 0;
    for (size_t i = 0; i < l->n_tokens; i++) {
        int ty = tok__type(l, i);
        if (ty < TOK__TYPE_NORMAL || ty > TOK__TYPE_BYTE)
            return enc_fail(ENC_ERR_FORMAT, "tokenizer.ggml.token_type[%zu]: type %d is not 1..6",
                            i, ty);
        if (ty != TOK__TYPE_UNUSED) n_ids = i + 1;
        n_added += ty == TOK__TYPE_CONTROL || ty == TOK__TYPE_USER_DEFINED;
    }
    if (n_ids == 0) return enc_fail(ENC_ERR_FORMAT, "tokenizer.ggml.tokens: empty");
    if (n_ids > (1u << 24)) return enc_fail(ENC_ERR_FORMAT, "tokenizer.ggml.tokens: too many");
    t->n_ids = (int32_t)n_ids;
    t->tokens = calloc(n_ids, sizeof *t->tokens);
    t->added = calloc(n_added ? n_added : 1, sizeof *t->added);
    if (!t->tokens || !t->added) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer.ggml.tokens");
    char where[64];
    for (size_t i = 0; i < n_ids; i++) {
        int ty = tok__type(l, i);
        snprintf(where, sizeof where, "tokenizer.ggml.tokens[%zu]", i);
        if (ty == TOK__TYPE_UNUSED) continue;
        if (l->token_lens[i] == 0) return enc_fail(ENC_ERR_FORMAT, "%s: empty token", where);
        if (ty == TOK__TYPE_CONTROL || ty == TOK__TYPE_USER_DEFINED)
            ENC_TRY(tok__add_added(t, (int32_t)i, l->tokens[i], l->token_lens[i],
                                   ty == TOK__TYPE_CONTROL, 0, 0, 0, where));
        else
            ENC_TRY(tok__set_token(t, (int32_t)i, l->tokens[i], l->token_lens[i], TOK__VOCAB));
        if (ty == TOK__TYPE_UNKNOWN) t->unk_id = (int32_t)i;
    }
    tok__sort_added(t);
    return tok__build_index(t);
}

/* "a b": the two parts around the one space. */
static enc_status tok__lists_merges(tokenizer *t, const tokenizer_lists *l)
{
    ENC_TRY(tok__merges_alloc(t, l->n_merges, "tokenizer.ggml.merges"));
    tok__bytes joined = {0};
    enc_status s = ENC_OK;
    for (size_t i = 0; i < l->n_merges && s == ENC_OK; i++) {
        const char *m = l->merges[i];
        size_t n = l->merge_lens[i];
        const char *sp = memchr(m, ' ', n);
        if (!sp || sp == m || sp + 1 == m + n || memchr(sp + 1, ' ', (size_t)(m + n - sp - 1)))
            s = enc_fail(ENC_ERR_FORMAT,
                         "tokenizer.ggml.merges[%zu]: \"%.*s\" is not two tokens "
                         "separated by one space",
                         i, (int)(n < 80 ? n : 80), m);
        else
            s = tok__add_merge(t, m, (size_t)(sp - m), sp + 1, (size_t)(m + n - sp - 1), i, &joined,
                               "tokenizer.ggml.merges");
    }
    free(joined.data);
    if (s == ENC_OK) tok__init_byte_ids(t);
    return s;
}

static enc_status tok__lists_pre(tokenizer *t, const char *pre)
{
    if (!pre || strcmp(pre, "qwen2"))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "tokenizer.ggml.pre '%s' is not supported (encore "
                        "knows qwen2)",
                        pre ? pre : "(absent)");
    tok__step *split = NULL, *bytelevel = NULL;
    t->nfc = 1;
    ENC_TRY(tok__add_step(t, "tokenizer.ggml.pre", &split));
    split->kind = TOK__STEP_SPLIT;
    ENC_TRY(tok__regex_compile(tok__qwen2_pattern, 0, "tokenizer.ggml.pre", &split->re));
    ENC_TRY(tok__add_step(t, "tokenizer.ggml.pre", &bytelevel));
    bytelevel->kind = TOK__STEP_BYTELEVEL;
    return ENC_OK;
}

/* A special id must name a token. */
static enc_status tok__lists_id(const tokenizer *t, int32_t id, const char *key, int32_t *out)
{
    *out = -1;
    if (id < 0) return ENC_OK;
    if (!tokenizer_token_text(t, id))
        return enc_fail(ENC_ERR_FORMAT, "tokenizer.ggml.%s: id %d is not a token", key, id);
    *out = id;
    return ENC_OK;
}

static enc_status tok__lists_build(tokenizer *t, const tokenizer_lists *l)
{
    ENC_TRY(tok__lists_pre(t, l->pre)); /* NFC first: added tokens are not normalized anyway */
    ENC_TRY(tok__lists_tokens(t, l));
    ENC_TRY(tok__lists_merges(t, l));
    ENC_TRY(tok__lists_id(t, l->bos_id, "bos_token_id", &t->bos_id));
    ENC_TRY(tok__lists_id(t, l->eos_id, "eos_token_id", &t->eos_id));
    ENC_TRY(tok__lists_id(t, l->pad_id, "padding_token_id", &t->pad_id));
    if (l->chat_template) return tok__set_template(t, l->chat_template, l->chat_template_len);
    return ENC_OK;
}

enc_status tokenizer_load_lists(const tokenizer_lists *l, tokenizer **out)
{
    *out = NULL;
    tokenizer *t = tok__alloc();
    if (!t) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer");
    enc_status s = tok__lists_build(t, l);
    if (s != ENC_OK) {
        tokenizer_free(t);
        return s;
    }
    *out = t;
    return ENC_OK;
}
