/* config.c - read and check a Qwen3 config.json (Hugging Face format).
 *
 * Each field is fetched by name, type-checked and range-checked; a field
 * given twice, a missing required field, a value of the wrong type, an
 * inconsistent pair (heads vs kv heads) or a feature encore does not
 * implement is an error naming the file and the field. Fields that do not
 * change the math (architectures, transformers_version, ...) are ignored.
 *
 * Defaults follow transformers' Qwen3Config where a field may be absent:
 * head_dim = hidden_size / num_attention_heads, num_key_value_heads =
 * num_attention_heads, tie_word_embeddings = false, torch_dtype = float32,
 * max_position_embeddings = 32768, no bos/eos; and Qwen3MoeConfig's for
 * model_type "qwen3_moe": num_experts = 128, num_experts_per_tok = 8,
 * moe_intermediate_size = 768, norm_topk_prob = false, decoder_sparse_step
 * = 1, mlp_only_layers = []. A dense config's MoE fields are ignored. */
#define _POSIX_C_SOURCE 200809L
#include "model/config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/log.h"
#include "base/mapfile.h"
#include "graph/graph.h"

#define CFG__INT_MAX 2147483647.0 /* integer fields must fit an int32 */

/* --- field access ------------------------------------------------------ */

/* Short description of a JSON value for messages ("1.5", "a string"). */
static const char *cfg__describe(const cJSON *j, char *buf, size_t n)
{
    if (cJSON_IsNumber(j))
        snprintf(buf, n, "%.17g", j->valuedouble);
    else if (cJSON_IsString(j))
        snprintf(buf, n, "a string");
    else if (cJSON_IsTrue(j))
        snprintf(buf, n, "true");
    else if (cJSON_IsFalse(j))
        snprintf(buf, n, "false");
    else if (cJSON_IsNull(j))
        snprintf(buf, n, "null");
    else if (cJSON_IsArray(j))
        snprintf(buf, n, "an array");
    else
        snprintf(buf, n, "an object");
    return buf;
}

enc_status qwen3_json_field(const cJSON *obj, const char *where, const char *key, const cJSON **out)
{
    *out = NULL;
    for (const cJSON *e = obj->child; e; e = e->next) {
        if (strcmp(e->string, key)) continue;
        if (*out) return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' appears twice", where, key);
        *out = e;
    }
    if (*out && cJSON_IsNull(*out)) *out = NULL;
    return ENC_OK;
}

/* An integer in [lo, 2^31) from value j of field key. */
static enc_status cfg__as_int(const cJSON *j, const char *where, const char *key, int64_t lo,
                              int64_t *out)
{
    char buf[64];
    double d = cJSON_IsNumber(j) ? j->valuedouble : NAN;
    if (!isfinite(d) || floor(d) != d || d < (double)lo || d > CFG__INT_MAX)
        return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' must be an integer in [%lld, 2^31), got %s",
                        where, key, (long long)lo, cfg__describe(j, buf, sizeof buf));
    *out = (int64_t)d;
    return ENC_OK;
}

/* A positive integer field; def < 0 means required. */
static enc_status cfg__int(const cJSON *root, const char *where, const char *key, int64_t def,
                           int64_t *out)
{
    const cJSON *j = NULL;
    ENC_TRY(qwen3_json_field(root, where, key, &j));
    if (!j) {
        if (def < 0) return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' is missing", where, key);
        *out = def;
        return ENC_OK;
    }
    return cfg__as_int(j, where, key, 1, out);
}

/* A finite number > 0 (and < hi when hi > 0); NULL j means missing. */
static enc_status cfg__as_positive(const cJSON *j, const char *where, const char *key, double hi,
                                   double *out)
{
    char buf[64];
    if (!j) return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' is missing", where, key);
    double d = cJSON_IsNumber(j) ? j->valuedouble : NAN;
    if (!isfinite(d) || d <= 0 || (hi > 0 && d >= hi))
        return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' must be a positive number%s, got %s", where,
                        key, hi > 0 ? " below 1" : "", cfg__describe(j, buf, sizeof buf));
    *out = d;
    return ENC_OK;
}

/* A boolean field, false when absent. */
static enc_status cfg__bool(const cJSON *root, const char *where, const char *key, int *out)
{
    const cJSON *j = NULL;
    char buf[64];
    ENC_TRY(qwen3_json_field(root, where, key, &j));
    if (j && !cJSON_IsBool(j))
        return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' must be true or false, got %s", where, key,
                        cfg__describe(j, buf, sizeof buf));
    *out = j && cJSON_IsTrue(j);
    return ENC_OK;
}

/* A string field, NULL when absent. */
static enc_status cfg__string(const cJSON *root, const char *where, const char *key,
                              const char **out)
{
    const cJSON *j = NULL;
    char buf[64];
    ENC_TRY(qwen3_json_field(root, where, key, &j));
    if (j && !cJSON_IsString(j))
        return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' must be a string, got %s", where, key,
                        cfg__describe(j, buf, sizeof buf));
    *out = j ? j->valuestring : NULL;
    return ENC_OK;
}

/* --- groups of fields -------------------------------------------------- */

static enc_status cfg__dtype_name(const char *where, const char *key, const char *s, enc_dtype *out)
{
    if (!strcmp(s, "float32"))
        *out = ENC_F32;
    else if (!strcmp(s, "bfloat16"))
        *out = ENC_BF16;
    else if (!strcmp(s, "float16"))
        *out = ENC_F16;
    else
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: field '%s' is '%s'; encore reads float32, bfloat16 or float16", where,
                        key, s);
    return ENC_OK;
}

/* torch_dtype, or dtype as newer transformers writes it; both must agree. */
static enc_status cfg__dtype(const cJSON *root, const char *where, enc_dtype *out)
{
    const char *a = NULL, *b = NULL;
    ENC_TRY(cfg__string(root, where, "torch_dtype", &a));
    ENC_TRY(cfg__string(root, where, "dtype", &b));
    enc_dtype da = ENC_F32, db = ENC_F32;
    if (a) ENC_TRY(cfg__dtype_name(where, "torch_dtype", a, &da));
    if (b) ENC_TRY(cfg__dtype_name(where, "dtype", b, &db));
    if (a && b && da != db)
        return enc_fail(ENC_ERR_FORMAT, "%s: fields 'torch_dtype' (%s) and 'dtype' (%s) disagree",
                        where, a, b);
    *out = a ? da : db;
    return ENC_OK;
}

/* An optional positive number of a rope object: *out unchanged when absent. */
static enc_status cfg__rope_number(const cJSON *obj, const char *where, const char *key,
                                   double *out)
{
    const cJSON *j = NULL;
    ENC_TRY(qwen3_json_field(obj, where, key, &j));
    return j ? cfg__as_positive(j, where, key, 0, out) : ENC_OK;
}

/* YaRN's fields beside factor: original_max_position_embeddings,
 * attention_factor (or mscale / mscale_all_dim, whose ratio of 0.1 m ln(f)
 * + 1 it then is, as transformers computes it), beta_fast, beta_slow,
 * truncate. */
static enc_status cfg__yarn(const cJSON *obj, const char *where, enc_rope_scaling *s)
{
    const cJSON *j = NULL;
    double mscale = 0, mscale_all = 0;
    s->beta_fast = 32.0;
    s->beta_slow = 1.0;
    s->truncate = 1;
    ENC_TRY(qwen3_json_field(obj, where, "original_max_position_embeddings", &j));
    if (j) ENC_TRY(cfg__as_int(j, where, "original_max_position_embeddings", 1, &s->original_ctx));
    ENC_TRY(cfg__rope_number(obj, where, "attention_factor", &s->attention_factor));
    ENC_TRY(cfg__rope_number(obj, where, "beta_fast", &s->beta_fast));
    ENC_TRY(cfg__rope_number(obj, where, "beta_slow", &s->beta_slow));
    ENC_TRY(cfg__rope_number(obj, where, "mscale", &mscale));
    ENC_TRY(cfg__rope_number(obj, where, "mscale_all_dim", &mscale_all));
    ENC_TRY(qwen3_json_field(obj, where, "truncate", &j));
    if (j && !cJSON_IsBool(j))
        return enc_fail(ENC_ERR_FORMAT, "%s: field 'truncate' must be true or false", where);
    if (j) s->truncate = cJSON_IsTrue(j);
    if (s->attention_factor == 0 && mscale > 0 && mscale_all > 0 && s->factor > 1)
        s->attention_factor =
            (0.1 * mscale * log(s->factor) + 1.0) / (0.1 * mscale_all * log(s->factor) + 1.0);
    return ENC_OK;
}

/* A rope_scaling / rope_parameters object: its "rope_type" (or legacy
 * "type") default, linear or yarn, and that kind's fields. */
static enc_status cfg__rope_scaling(const cJSON *obj, const char *where, const char *key,
                                    enc_rope_scaling *s)
{
    char buf[64];
    if (!cJSON_IsObject(obj))
        return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' must be an object or null, got %s", where,
                        key, cfg__describe(obj, buf, sizeof buf));
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(obj, "type");
    if (!cJSON_IsString(t))
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: field '%s' has no rope_type", where, key);
    memset(s, 0, sizeof *s);
    if (!strcmp(t->valuestring, "default")) return ENC_OK;
    if (strcmp(t->valuestring, "linear") && strcmp(t->valuestring, "yarn"))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: %s type '%s' is not supported (default, linear and yarn are)", where,
                        key, t->valuestring);
    s->kind = strcmp(t->valuestring, "yarn") ? ENC_ROPE_LINEAR : ENC_ROPE_YARN;
    const cJSON *f = NULL;
    ENC_TRY(qwen3_json_field(obj, where, "factor", &f));
    ENC_TRY(cfg__as_positive(f, where, "factor", 0, &s->factor));
    if (s->kind == ENC_ROPE_YARN) ENC_TRY(cfg__yarn(obj, where, s));
    return enc_rope_scaling_check(s, where);
}

/* rope_theta, rope_scaling, and transformers v5's rope_parameters. */
static enc_status cfg__rope(const cJSON *root, const char *where, qwen3_config *c)
{
    const cJSON *scaling = NULL, *params = NULL, *j = NULL;
    ENC_TRY(qwen3_json_field(root, where, "rope_scaling", &scaling));
    ENC_TRY(qwen3_json_field(root, where, "rope_parameters", &params));
    if (scaling && params)
        return enc_fail(ENC_ERR_FORMAT, "%s: both 'rope_scaling' and 'rope_parameters' are given",
                        where);
    if (scaling) ENC_TRY(cfg__rope_scaling(scaling, where, "rope_scaling", &c->rope_scaling));
    if (params) ENC_TRY(cfg__rope_scaling(params, where, "rope_parameters", &c->rope_scaling));
    ENC_TRY(qwen3_json_field(root, where, "rope_theta", &j));
    if (!j && params) {
        j = cJSON_GetObjectItemCaseSensitive(params, "rope_theta");
        ENC_TRY(cfg__as_positive(j, where, "rope_parameters.rope_theta", 0, &c->rope_theta));
        return enc_rope_theta_check(c->rope_theta, where, "rope_parameters.rope_theta");
    }
    ENC_TRY(cfg__as_positive(j, where, "rope_theta", 0, &c->rope_theta));
    return enc_rope_theta_check(c->rope_theta, where, "rope_theta");
}

/* A token id in [0, vocab). */
static enc_status cfg__token(const cJSON *j, const char *where, const char *key, int64_t vocab,
                             int32_t *out)
{
    int64_t v = 0;
    ENC_TRY(cfg__as_int(j, where, key, 0, &v));
    if (v >= vocab)
        return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' is %lld, not below vocab_size %lld", where,
                        key, (long long)v, (long long)vocab);
    *out = (int32_t)v;
    return ENC_OK;
}

static enc_status cfg__add_eos_id(qwen3_config *c, const cJSON *e, const char *where,
                                  const char *key)
{
    int32_t id = -1;
    ENC_TRY(cfg__token(e, where, key, c->vocab_size, &id));
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_token_ids[i] == id) return ENC_OK;
    if (c->n_eos == QWEN3_MAX_EOS)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: field '%s' makes more than %d end-of-sequence ids", where, key,
                        QWEN3_MAX_EOS);
    c->eos_token_ids[c->n_eos++] = id;
    return ENC_OK;
}

enc_status qwen3_config_add_eos(qwen3_config *c, const cJSON *eos, const char *where,
                                const char *key)
{
    if (!eos || cJSON_IsNull(eos)) return ENC_OK;
    if (!cJSON_IsArray(eos)) return cfg__add_eos_id(c, eos, where, key);
    for (const cJSON *e = eos->child; e; e = e->next)
        ENC_TRY(cfg__add_eos_id(c, e, where, key));
    return ENC_OK;
}

/* bos_token_id (int or absent) and eos_token_id (int, list or absent). */
static enc_status cfg__tokens(const cJSON *root, const char *where, qwen3_config *c)
{
    const cJSON *bos = NULL, *eos = NULL;
    ENC_TRY(qwen3_json_field(root, where, "bos_token_id", &bos));
    ENC_TRY(qwen3_json_field(root, where, "eos_token_id", &eos));
    c->bos_token_id = -1;
    c->n_eos = 0;
    if (bos) ENC_TRY(cfg__token(bos, where, "bos_token_id", c->vocab_size, &c->bos_token_id));
    return qwen3_config_add_eos(c, eos, where, "eos_token_id");
}

/* Features that change the math and that encore does not implement; *moe
 * is 1 for model_type "qwen3_moe". */
static enc_status cfg__unsupported(const cJSON *root, const char *where, int *moe)
{
    const char *s = NULL;
    int b = 0;
    ENC_TRY(cfg__string(root, where, "model_type", &s));
    *moe = s && !strcmp(s, "qwen3_moe");
    if (s && strcmp(s, "qwen3") && !*moe)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: field 'model_type' is '%s'; encore runs qwen3 and qwen3_moe", where, s);
    ENC_TRY(cfg__string(root, where, "hidden_act", &s));
    if (s && strcmp(s, "silu"))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: field 'hidden_act' is '%s'; only silu is supported", where, s);
    ENC_TRY(cfg__bool(root, where, "attention_bias", &b));
    if (b)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: field 'attention_bias' is true; attention biases are not supported",
                        where);
    ENC_TRY(cfg__bool(root, where, "use_sliding_window", &b));
    if (b)
        return enc_fail(
            ENC_ERR_UNSUPPORTED,
            "%s: field 'use_sliding_window' is true; sliding-window attention is not supported",
            where);
    return ENC_OK;
}

/* Shapes: heads and head_dim. */
static enc_status cfg__shapes(const cJSON *root, const char *where, qwen3_config *c)
{
    ENC_TRY(cfg__int(root, where, "hidden_size", -1, &c->hidden_size));
    ENC_TRY(cfg__int(root, where, "intermediate_size", -1, &c->intermediate_size));
    ENC_TRY(cfg__int(root, where, "num_hidden_layers", -1, &c->n_layers));
    ENC_TRY(cfg__int(root, where, "num_attention_heads", -1, &c->n_heads));
    /* Defaults to num_attention_heads, as in transformers; a GQA checkpoint
     * whose config lost it then fails on the k_proj/v_proj shapes. */
    ENC_TRY(cfg__int(root, where, "num_key_value_heads", c->n_heads, &c->n_kv_heads));
    ENC_TRY(cfg__int(root, where, "vocab_size", -1, &c->vocab_size));
    ENC_TRY(cfg__int(root, where, "max_position_embeddings", 32768, &c->max_position_embeddings));
    const cJSON *hd = NULL;
    ENC_TRY(qwen3_json_field(root, where, "head_dim", &hd));
    if (hd) {
        ENC_TRY(cfg__as_int(hd, where, "head_dim", 1, &c->head_dim));
    } else {
        if (c->hidden_size % c->n_heads)
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: field 'head_dim' is absent and hidden_size %lld is not a multiple "
                            "of num_attention_heads %lld",
                            where, (long long)c->hidden_size, (long long)c->n_heads);
        c->head_dim = c->hidden_size / c->n_heads;
    }
    if (c->n_heads % c->n_kv_heads)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: field 'num_key_value_heads' (%lld) does not divide "
                        "num_attention_heads (%lld)",
                        where, (long long)c->n_kv_heads, (long long)c->n_heads);
    if (c->head_dim % 2)
        return enc_fail(ENC_ERR_FORMAT, "%s: field 'head_dim' is %lld; RoPE needs it even", where,
                        (long long)c->head_dim);
    return ENC_OK;
}

/* layer_types (transformers >= 4.53): one "full_attention" per layer. */
static enc_status cfg__layer_types(const cJSON *root, const char *where, int64_t n_layers)
{
    const cJSON *lt = NULL;
    char buf[64];
    ENC_TRY(qwen3_json_field(root, where, "layer_types", &lt));
    if (!lt) return ENC_OK;
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != n_layers)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: field 'layer_types' must be an array of num_hidden_layers (%lld) "
                        "strings, got %s",
                        where, (long long)n_layers, cfg__describe(lt, buf, sizeof buf));
    int i = 0;
    for (const cJSON *e = lt->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e))
            return enc_fail(ENC_ERR_FORMAT, "%s: field 'layer_types' entry %d is %s, not a string",
                            where, i, cfg__describe(e, buf, sizeof buf));
        if (strcmp(e->valuestring, "full_attention"))
            return enc_fail(ENC_ERR_UNSUPPORTED,
                            "%s: field 'layer_types' entry %d is '%s'; only full_attention is "
                            "supported",
                            where, i, e->valuestring);
    }
    return ENC_OK;
}

/* --- mixture of experts ------------------------------------------------- */

/* mlp_only_layers: distinct layer indices in [0, n_layers). */
static enc_status cfg__mlp_only(const cJSON *root, const char *where, qwen3_config *c)
{
    const cJSON *arr = NULL;
    char buf[64];
    ENC_TRY(qwen3_json_field(root, where, "mlp_only_layers", &arr));
    if (!arr) return ENC_OK;
    if (!cJSON_IsArray(arr))
        return enc_fail(ENC_ERR_FORMAT, "%s: field 'mlp_only_layers' must be an array, got %s",
                        where, cfg__describe(arr, buf, sizeof buf));
    if (cJSON_GetArraySize(arr) > QWEN3_MAX_MLP_ONLY)
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: field 'mlp_only_layers' lists %d layers (at most %d)",
                        where, cJSON_GetArraySize(arr), QWEN3_MAX_MLP_ONLY);
    for (const cJSON *e = arr->child; e; e = e->next) {
        int64_t l = 0;
        ENC_TRY(cfg__as_int(e, where, "mlp_only_layers", 0, &l));
        if (l >= c->n_layers)
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: field 'mlp_only_layers' names layer %lld, but num_hidden_layers "
                            "is %lld",
                            where, (long long)l, (long long)c->n_layers);
        for (int i = 0; i < c->n_mlp_only; i++)
            if (c->mlp_only_layers[i] == l)
                return enc_fail(ENC_ERR_FORMAT, "%s: field 'mlp_only_layers' names layer %lld twice",
                                where, (long long)l);
        c->mlp_only_layers[c->n_mlp_only++] = (int32_t)l;
    }
    return ENC_OK;
}

/* The Qwen3-MoE fields; a shared expert (Qwen2-MoE) is refused. */
static enc_status cfg__moe(const cJSON *root, const char *where, qwen3_config *c)
{
    const cJSON *shared = NULL;
    ENC_TRY(qwen3_json_field(root, where, "shared_expert_intermediate_size", &shared));
    if (shared && !(cJSON_IsNumber(shared) && shared->valuedouble == 0))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: field 'shared_expert_intermediate_size' is set; a shared expert "
                        "(Qwen2-MoE) is not supported",
                        where);
    ENC_TRY(cfg__int(root, where, "num_experts", 128, &c->n_experts));
    ENC_TRY(cfg__int(root, where, "num_experts_per_tok", 8, &c->n_experts_per_tok));
    ENC_TRY(cfg__int(root, where, "moe_intermediate_size", 768, &c->moe_intermediate_size));
    ENC_TRY(cfg__int(root, where, "decoder_sparse_step", 1, &c->decoder_sparse_step));
    ENC_TRY(cfg__bool(root, where, "norm_topk_prob", &c->norm_topk_prob));
    if (c->n_experts > GRAPH_MOE_MAX_EXPERTS)
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: field 'num_experts' is %lld; encore routes at most %d",
                        where, (long long)c->n_experts, GRAPH_MOE_MAX_EXPERTS);
    if (c->n_experts_per_tok > c->n_experts)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: field 'num_experts_per_tok' (%lld) is more than num_experts (%lld)",
                        where, (long long)c->n_experts_per_tok, (long long)c->n_experts);
    return cfg__mlp_only(root, where, c);
}

int qwen3_config_layer_is_moe(const qwen3_config *c, int64_t l)
{
    if (c->n_experts <= 0 || (l + 1) % c->decoder_sparse_step) return 0;
    for (int i = 0; i < c->n_mlp_only; i++)
        if (c->mlp_only_layers[i] == l) return 0;
    return 1;
}

/* --- the whole file ----------------------------------------------------- */

static enc_status cfg__parse_root(const cJSON *root, const char *where, qwen3_config *c)
{
    const cJSON *eps = NULL;
    int moe = 0;
    ENC_TRY(cfg__unsupported(root, where, &moe));
    ENC_TRY(cfg__shapes(root, where, c));
    if (moe) ENC_TRY(cfg__moe(root, where, c));
    ENC_TRY(cfg__layer_types(root, where, c->n_layers));
    ENC_TRY(qwen3_json_field(root, where, "rms_norm_eps", &eps));
    ENC_TRY(cfg__as_positive(eps, where, "rms_norm_eps", 1, &c->rms_norm_eps));
    ENC_TRY(cfg__rope(root, where, c));
    ENC_TRY(cfg__bool(root, where, "tie_word_embeddings", &c->tie_word_embeddings));
    ENC_TRY(cfg__dtype(root, where, &c->torch_dtype));
    return cfg__tokens(root, where, c);
}

/* --- public API -------------------------------------------------------- */

enc_status qwen3_config_parse(const char *json, const char *where, qwen3_config *out)
{
    const char *end =
        NULL; /* the error position on failure (thread-safe, unlike cJSON_GetErrorPtr) */
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root)
        return enc_fail(ENC_ERR_FORMAT, "%s: not valid JSON (at byte offset %zu)", where,
                        end ? (size_t)(end - json) : (size_t)0);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return enc_fail(ENC_ERR_FORMAT, "%s: not a JSON object", where);
    }
    qwen3_config c;
    memset(&c, 0, sizeof c);
    enc_status s = cfg__parse_root(root, where, &c);
    cJSON_Delete(root);
    if (s != ENC_OK) return s;
    *out = c;
    enc_log_debug("%s: D=%lld F=%lld layers=%lld heads=%lld/%lld head_dim=%lld vocab=%lld "
                  "tied=%d dtype=%s experts=%lld/%lld",
                  where, (long long)c.hidden_size, (long long)c.intermediate_size,
                  (long long)c.n_layers, (long long)c.n_heads, (long long)c.n_kv_heads,
                  (long long)c.head_dim, (long long)c.vocab_size, c.tie_word_embeddings,
                  enc_dtype_name(c.torch_dtype), (long long)c.n_experts_per_tok,
                  (long long)c.n_experts);
    return ENC_OK;
}

enc_status qwen3_config_load(const char *model_dir, qwen3_config *out)
{
    char *path = NULL, *text = NULL;
    ENC_TRY(file_path_in(model_dir, "config.json", &path));
    enc_status s = file_read_all(path, &text, NULL);
    if (s == ENC_OK) {
        s = qwen3_config_parse(text, path, out);
        free(text);
    }
    free(path);
    return s;
}
