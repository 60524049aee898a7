/* gguf_config.c - qwen3_config from GGUF metadata.
 *
 *   general.architecture                     "qwen3" (or "qwen3moe")
 *   <arch>.context_length                    max_position_embeddings
 *   <arch>.embedding_length                  hidden_size
 *   <arch>.block_count                       num_hidden_layers
 *   <arch>.feed_forward_length               intermediate_size
 *   <arch>.attention.head_count              num_attention_heads
 *   <arch>.attention.head_count_kv           num_key_value_heads (default: heads)
 *   <arch>.attention.key_length              head_dim (default: D / heads)
 *   <arch>.attention.value_length            must equal key_length
 *   <arch>.rope.freq_base                    rope_theta (default 10000, as llama.cpp)
 *   <arch>.rope.scaling.type                 none, linear or yarn, with .factor and
 *                                            yarn's .original_context_length,
 *                                            .yarn_beta_fast/slow, .yarn_attn_factor
 *   <arch>.attention.layer_norm_rms_epsilon  rms_norm_eps
 *   tokenizer.ggml.bos_token_id / eos_token_id / eot_token_id, and the tokens
 *                                            llama.cpp ends generation at by text
 *   general.sampling.temp / top_k / top_p /  the sampling defaults the file
 *     min_p / penalty_repeat                 recommends (as llama.cpp reads them)
 * and, for qwen3moe (every layer sparse):
 *   qwen3moe.expert_count                    num_experts
 *   qwen3moe.expert_used_count               num_experts_per_tok
 *   qwen3moe.expert_feed_forward_length      moe_intermediate_size
 *   qwen3moe.expert_weights_norm             norm_topk_prob (default true)
 *
 * vocab_size is the row count of token_embd.weight and the embeddings are
 * tied when output.weight is absent, as llama.cpp decides it. */
#define _POSIX_C_SOURCE 200809L
#include "model/gguf_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "graph/graph.h"
#include "model/generation_config.h"

enum { GGUF__KEY_MAX = 96 };

typedef struct gguf__cfg_ctx {
    const gguf_file *g;
    char arch[32];
} gguf__cfg_ctx;

/* "<arch>.<suffix>" */
static const char *gguf__key(const gguf__cfg_ctx *c, const char *suffix, char *buf)
{
    snprintf(buf, GGUF__KEY_MAX, "%s.%s", c->arch, suffix);
    return buf;
}

/* An integer in [1, 2^31); def < 0 means required. */
static enc_status gguf__int(const gguf__cfg_ctx *c, const char *suffix, int64_t def, int64_t *out)
{
    char key[GGUF__KEY_MAX];
    int found = 0;
    int64_t v = 0;
    ENC_TRY(gguf_get_int(c->g, gguf__key(c, suffix, key), &v, &found));
    if (!found) {
        if (def < 0)
            return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' is missing", gguf_path(c->g), key);
        *out = def;
        return ENC_OK;
    }
    if (v < 1 || v > INT32_MAX)
        return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' at byte offset %zu is %lld, not in [1, 2^31)",
                        gguf_path(c->g), key, gguf_find_kv(c->g, key)->offset, (long long)v);
    *out = v;
    return ENC_OK;
}

/* A positive finite float (below hi when hi > 0); def <= 0 means required. */
static enc_status gguf__float(const gguf__cfg_ctx *c, const char *suffix, double def, double hi,
                              double *out)
{
    char key[GGUF__KEY_MAX];
    int found = 0;
    double v = 0;
    ENC_TRY(gguf_get_float(c->g, gguf__key(c, suffix, key), &v, &found));
    if (!found) {
        if (def <= 0)
            return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' is missing", gguf_path(c->g), key);
        *out = def;
        return ENC_OK;
    }
    if (!isfinite(v) || v <= 0 || (hi > 0 && v >= hi))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key '%s' at byte offset %zu is %g, not a positive "
                        "number%s",
                        gguf_path(c->g), key, gguf_find_kv(c->g, key)->offset, v,
                        hi > 0 ? " below 1" : "");
    *out = v;
    return ENC_OK;
}

static enc_status gguf__arch(gguf__cfg_ctx *c)
{
    gguf_str a = {0};
    int found = 0;
    ENC_TRY(gguf_get_str(c->g, "general.architecture", &a, &found));
    if (!found)
        return enc_fail(ENC_ERR_FORMAT, "%s: key 'general.architecture' is missing",
                        gguf_path(c->g));
    int known =
        (a.len == 5 && !memcmp(a.p, "qwen3", 5)) || (a.len == 8 && !memcmp(a.p, "qwen3moe", 8));
    if (!known)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: architecture '%.*s' is not supported (encore "
                        "runs qwen3)",
                        gguf_path(c->g), (int)(a.len < 64 ? a.len : 64), a.p);
    memcpy(c->arch, a.p, (size_t)a.len);
    c->arch[a.len] = '\0';
    return ENC_OK;
}

/* A bool key, def when absent. */
static enc_status gguf__bool(const gguf__cfg_ctx *c, const char *suffix, int def, int *out)
{
    char key[GGUF__KEY_MAX];
    const gguf_kv *kv = gguf_find_kv(c->g, gguf__key(c, suffix, key));
    *out = def;
    if (!kv) return ENC_OK;
    if (kv->type != GGUF_TYPE_BOOL)
        return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' at byte offset %zu is not a bool",
                        gguf_path(c->g), key, kv->offset);
    *out = kv->data[0] != 0;
    return ENC_OK;
}

/* The MoE keys of qwen3moe. Every layer is sparse (llama.cpp's qwen3moe has
 * no dense layers); the k routing weights are renormalised unless
 * expert_weights_norm says otherwise (llama.cpp renormalises always, as
 * Qwen3-MoE's configs ask). */
static enc_status gguf__moe(const gguf__cfg_ctx *c, qwen3_config *q)
{
    ENC_TRY(gguf__int(c, "expert_count", -1, &q->n_experts));
    ENC_TRY(gguf__int(c, "expert_used_count", -1, &q->n_experts_per_tok));
    ENC_TRY(gguf__int(c, "expert_feed_forward_length", -1, &q->moe_intermediate_size));
    ENC_TRY(gguf__bool(c, "expert_weights_norm", 1, &q->norm_topk_prob));
    q->decoder_sparse_step = 1;
    q->n_mlp_only = 0;
    if (q->n_experts > GRAPH_MOE_MAX_EXPERTS || q->n_experts_per_tok > q->n_experts)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: keys '%s.expert_count' (%lld) and '%s.expert_used_count' (%lld): "
                        "encore needs used <= count <= %d",
                        gguf_path(c->g), c->arch, (long long)q->n_experts, c->arch,
                        (long long)q->n_experts_per_tok, GRAPH_MOE_MAX_EXPERTS);
    return ENC_OK;
}

/* A key that encore reads only at its neutral value: absent, or equal to want. */
static enc_status gguf__neutral_float(const gguf__cfg_ctx *c, const char *suffix, double want)
{
    char key[GGUF__KEY_MAX];
    int found = 0;
    double v = 0;
    ENC_TRY(gguf_get_float(c->g, gguf__key(c, suffix, key), &v, &found));
    if (found && v != want)
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: key '%s' is %g; encore supports only %g",
                        gguf_path(c->g), key, v, want);
    return ENC_OK;
}

/* YaRN's keys as llama.cpp's converter writes them: original_context_length
 * (default: context_length), yarn_beta_fast / yarn_beta_slow (32 / 1), and
 * yarn_attn_factor, config.json's attention_factor (default 0.1 ln(factor) +
 * 1); llama.cpp's own knobs (ext_factor, log_multiplier, attn_factor) only at
 * their neutral values. */
static enc_status gguf__yarn(const gguf__cfg_ctx *c, enc_rope_scaling *s)
{
    char key[GGUF__KEY_MAX];
    int found = 0;
    double v = 0;
    s->truncate = 1;
    ENC_TRY(gguf__int(c, "rope.scaling.original_context_length", 0, &s->original_ctx));
    ENC_TRY(gguf__float(c, "rope.scaling.yarn_beta_fast", 32.0, 0, &s->beta_fast));
    ENC_TRY(gguf__float(c, "rope.scaling.yarn_beta_slow", 1.0, 0, &s->beta_slow));
    ENC_TRY(gguf_get_float(c->g, gguf__key(c, "rope.scaling.yarn_attn_factor", key), &v, &found));
    if (found)
        ENC_TRY(gguf__float(c, "rope.scaling.yarn_attn_factor", 1.0, 0, &s->attention_factor));
    ENC_TRY(gguf__neutral_float(c, "rope.scaling.yarn_ext_factor", 1.0));
    ENC_TRY(gguf__neutral_float(c, "rope.scaling.yarn_log_multiplier", 0.0));
    return gguf__neutral_float(c, "rope.scaling.attn_factor", 1.0);
}

/* rope.scaling.type: none (or absent), linear or yarn, with
 * rope.scaling.factor. */
static enc_status gguf__rope_scaling(const gguf__cfg_ctx *c, enc_rope_scaling *s)
{
    char key[GGUF__KEY_MAX];
    gguf_str t = {0};
    int found = 0;
    memset(s, 0, sizeof *s);
    ENC_TRY(gguf_get_str(c->g, gguf__key(c, "rope.scaling.type", key), &t, &found));
    if (!found || (t.len == 4 && !memcmp(t.p, "none", 4))) return ENC_OK;
    if (t.len == 6 && !memcmp(t.p, "linear", 6))
        s->kind = ENC_ROPE_LINEAR;
    else if (t.len == 4 && !memcmp(t.p, "yarn", 4))
        s->kind = ENC_ROPE_YARN;
    else
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: key '%s' is '%.*s'; encore supports none, linear and yarn",
                        gguf_path(c->g), key, (int)(t.len < 32 ? t.len : 32), t.p);
    ENC_TRY(gguf__float(c, "rope.scaling.factor", 0, 0, &s->factor));
    if (s->kind == ENC_ROPE_YARN) ENC_TRY(gguf__yarn(c, s));
    return enc_rope_scaling_check(s, gguf_path(c->g));
}

static enc_status gguf__shapes(const gguf__cfg_ctx *c, qwen3_config *q)
{
    ENC_TRY(gguf__int(c, "embedding_length", -1, &q->hidden_size));
    ENC_TRY(gguf__int(c, "feed_forward_length", -1, &q->intermediate_size));
    ENC_TRY(gguf__int(c, "block_count", -1, &q->n_layers));
    ENC_TRY(gguf__int(c, "attention.head_count", -1, &q->n_heads));
    ENC_TRY(gguf__int(c, "attention.head_count_kv", q->n_heads, &q->n_kv_heads));
    ENC_TRY(gguf__int(c, "context_length", -1, &q->max_position_embeddings));
    const char *p = gguf_path(c->g);
    char key[GGUF__KEY_MAX];
    if (q->hidden_size % q->n_heads &&
        !gguf_find_kv(c->g, gguf__key(c, "attention.key_length", key)))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: no key_length and embedding_length %lld is not a "
                        "multiple of head_count %lld",
                        p, (long long)q->hidden_size, (long long)q->n_heads);
    ENC_TRY(gguf__int(c, "attention.key_length", q->hidden_size / q->n_heads, &q->head_dim));
    int64_t v_len = 0;
    ENC_TRY(gguf__int(c, "attention.value_length", q->head_dim, &v_len));
    if (v_len != q->head_dim)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: key '%s.attention.value_length' (%lld) differs "
                        "from key_length (%lld)",
                        p, c->arch, (long long)v_len, (long long)q->head_dim);
    if (q->n_heads % q->n_kv_heads)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key '%s.attention.head_count_kv' (%lld) does not "
                        "divide head_count (%lld)",
                        p, c->arch, (long long)q->n_kv_heads, (long long)q->n_heads);
    if (q->head_dim % 2)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key '%s.attention.key_length' is %lld; RoPE needs "
                        "it even",
                        p, c->arch, (long long)q->head_dim);
    return ENC_OK;
}

/* vocab_size and tying from the tensors; the float dtype of the embedding. */
static enc_status gguf__from_tensors(const gguf_file *g, qwen3_config *q)
{
    const st_tensor *e = gguf_find_tensor(g, "token_embd.weight");
    if (!e || e->n_dims != 2)
        return enc_fail(ENC_ERR_FORMAT, "%s: tensor 'token_embd.weight' is missing or not 2-d",
                        gguf_path(g));
    q->vocab_size = e->shape[0];
    q->tie_word_embeddings = gguf_find_tensor(g, "output.weight") == NULL;
    q->torch_dtype = enc_dtype_is_quantized(e->dtype) ? ENC_F32 : e->dtype;
    return ENC_OK;
}

/* A token id key, -1 when absent. */
static enc_status gguf__token(const gguf_file *g, const char *key, int64_t vocab, int32_t *out)
{
    int64_t v = -1;
    int found = 0;
    *out = -1;
    ENC_TRY(gguf_get_int(g, key, &v, &found));
    if (!found) return ENC_OK;
    if (v < 0 || v >= vocab)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key '%s' at byte offset %zu is %lld, not below the "
                        "vocabulary size %lld",
                        gguf_path(g), key, gguf_find_kv(g, key)->offset, (long long)v,
                        (long long)vocab);
    *out = (int32_t)v;
    return ENC_OK;
}

static void gguf__add_eos(qwen3_config *q, int32_t id)
{
    for (int i = 0; i < q->n_eos; i++)
        if (q->eos_token_ids[i] == id) return;
    if (id >= 0 && q->n_eos < QWEN3_MAX_EOS) q->eos_token_ids[q->n_eos++] = id;
}

/* The end-of-generation tokens llama.cpp finds by their text (its
 * special_eog_ids), those a Qwen-family vocabulary may hold: a GGUF file
 * names one eos id, and Qwen3's generation_config.json stops at
 * <|endoftext|> beside <|im_end|>. */
static const char *const gguf__eog_texts[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>",
                                              "<|end|>",    "<|eom_id|>",    "<|end_of_text|>"};

static enc_status gguf__eog_by_text(const gguf_file *g, qwen3_config *q)
{
    const gguf_str *tokens = NULL;
    uint64_t n = 0;
    int found = 0;
    ENC_TRY(gguf_get_str_array(g, "tokenizer.ggml.tokens", &tokens, &n, &found));
    for (uint64_t i = 0; found && i < n && i < (uint64_t)q->vocab_size; i++) {
        if (tokens[i].len < 5 || tokens[i].len > 16 || tokens[i].p[0] != '<') continue;
        for (size_t k = 0; k < sizeof gguf__eog_texts / sizeof gguf__eog_texts[0]; k++)
            if (tokens[i].len == strlen(gguf__eog_texts[k]) &&
                !memcmp(tokens[i].p, gguf__eog_texts[k], tokens[i].len))
                gguf__add_eos(q, (int32_t)i);
    }
    return ENC_OK;
}

static enc_status gguf__tokens(const gguf_file *g, qwen3_config *q)
{
    int32_t eos = -1, eot = -1;
    ENC_TRY(gguf__token(g, "tokenizer.ggml.bos_token_id", q->vocab_size, &q->bos_token_id));
    ENC_TRY(gguf__token(g, "tokenizer.ggml.eos_token_id", q->vocab_size, &eos));
    ENC_TRY(gguf__token(g, "tokenizer.ggml.eot_token_id", q->vocab_size, &eot));
    q->n_eos = 0;
    gguf__add_eos(q, eos);
    gguf__add_eos(q, eot);
    return gguf__eog_by_text(g, q);
}

/* The sampling parameters the file recommends, llama.cpp's general.sampling.*
 * keys (its converter writes them from generation_config.json), with
 * llama.cpp's meanings: top_k 0 is off; penalty_repeat is the repetition
 * penalty (llama.cpp applies it over the last 64 tokens, encore over the
 * prompt and output, as vLLM). */
static enc_status gguf__sampling(const gguf_file *g, qwen3_generation_defaults *out)
{
    static const struct {
        const char *key;
        unsigned bit;
    } keys[] = {
        {"general.sampling.temp", QWEN3_GEN_TEMPERATURE},
        {"general.sampling.top_k", QWEN3_GEN_TOP_K},
        {"general.sampling.top_p", QWEN3_GEN_TOP_P},
        {"general.sampling.min_p", QWEN3_GEN_MIN_P},
        {"general.sampling.penalty_repeat", QWEN3_GEN_REPETITION_PENALTY},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        double v = 0;
        int64_t k = 0;
        int found = 0;
        if (keys[i].bit == QWEN3_GEN_TOP_K) {
            ENC_TRY(gguf_get_int(g, keys[i].key, &k, &found));
            v = (double)k;
        } else {
            ENC_TRY(gguf_get_float(g, keys[i].key, &v, &found));
        }
        if (!found) continue;
        char what[96];
        snprintf(what, sizeof what, "key '%s' at byte offset %zu", keys[i].key,
                 gguf_find_kv(g, keys[i].key)->offset);
        ENC_TRY(qwen3_generation_set(out, keys[i].bit, v, gguf_path(g), what));
    }
    return ENC_OK;
}

enc_status qwen3_config_from_gguf(const gguf_file *g, qwen3_config *out)
{
    gguf__cfg_ctx c = {g, {0}};
    qwen3_config q;
    memset(&q, 0, sizeof q);
    ENC_TRY(gguf__arch(&c));
    if (!strcmp(c.arch, "qwen3moe")) ENC_TRY(gguf__moe(&c, &q));
    ENC_TRY(gguf__rope_scaling(&c, &q.rope_scaling));
    ENC_TRY(gguf__shapes(&c, &q));
    ENC_TRY(gguf__float(&c, "attention.layer_norm_rms_epsilon", 0, 1, &q.rms_norm_eps));
    ENC_TRY(gguf__float(&c, "rope.freq_base", 10000.0, 0, &q.rope_theta));
    ENC_TRY(enc_rope_theta_check(q.rope_theta, gguf_path(g), "key 'rope.freq_base'"));
    ENC_TRY(gguf__from_tensors(g, &q));
    ENC_TRY(gguf__tokens(g, &q));
    ENC_TRY(gguf__sampling(g, &q.generation));
    *out = q;
    enc_log_debug("%s: %s D=%lld F=%lld layers=%lld heads=%lld/%lld head_dim=%lld vocab=%lld "
                  "tied=%d",
                  gguf_path(g), c.arch, (long long)q.hidden_size, (long long)q.intermediate_size,
                  (long long)q.n_layers, (long long)q.n_heads, (long long)q.n_kv_heads,
                  (long long)q.head_dim, (long long)q.vocab_size, q.tie_word_embeddings);
    return ENC_OK;
}
