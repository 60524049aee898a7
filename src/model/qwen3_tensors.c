/* qwen3_tensors.c - match a checkpoint's tensors to a Qwen3 config.
 *
 * Two passes over the archive: first every tensor the config calls for is
 * looked up and its dtype and shape checked (the table below gives each
 * per-layer tensor's shape in terms of the config); then every tensor present
 * must be one of those names, so a bias, an extra layer or a typo is an error
 * instead of a silently ignored weight. rotary_emb.inv_freq buffers, which
 * old exports carry, are ignored. With tied embeddings lm_head is the
 * embedding, and an lm_head.weight shipped anyway is ignored (as
 * transformers does); an untied checkpoint without one is an embedding
 * model's (Qwen3-Embedding: a Qwen3Model saved alone, its names without
 * "model.", TENSOR_NAMES_HF_BARE), which runs as a pooling model only.
 * Tensors may mix F32, BF16 and F16; matrices may also be of a block type
 * (Q8_0 ... Q6_K, from GGUF files), and so may a GGUF file's stacked experts, each projection its own. A MoE layer's experts
 * share one dtype per projection (they are stacked into one buffer); a
 * shared expert (Qwen2-MoE's mlp.shared_expert*) is refused by name.
 *
 * The source is a safetensors checkpoint (Hugging Face names) or a GGUF file
 * (llama.cpp's names: token_embd, blk.L.attn_q, ..., output_norm, output);
 * the table holds both spellings of each per-layer tensor. Shapes are the
 * same in both: GGUF's ne reversed is the row-major shape. */
#include "model/qwen3_tensors.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

/* A dimension named by the config. */
typedef enum qwen3__dim {
    QWEN3__NONE = 0, /* no second dimension */
    QWEN3__D,        /* hidden_size */
    QWEN3__F,        /* intermediate_size */
    QWEN3__Q,        /* n_heads * head_dim */
    QWEN3__KV,       /* n_kv_heads * head_dim */
    QWEN3__HD,       /* head_dim */
    QWEN3__E,        /* num_experts */
    QWEN3__FE,       /* moe_intermediate_size */
} qwen3__dim;

typedef struct qwen3__layer_entry {
    const char *suffix; /* after "model.layers.L." */
    const char *gguf;   /* after "blk.L." */
    size_t field;       /* offsetof(qwen3_layer_tensors, ...) */
    qwen3__dim rows, cols;
    int dense_mlp;      /* 1: only in dense layers, -1: only in MoE layers, 0: in both */
} qwen3__layer_entry;

static const qwen3__layer_entry qwen3__layer_table[] = {
    {"input_layernorm.weight", "attn_norm.weight", offsetof(qwen3_layer_tensors, input_norm),
     QWEN3__D, QWEN3__NONE, 0},
    {"self_attn.q_proj.weight", "attn_q.weight", offsetof(qwen3_layer_tensors, q), QWEN3__Q,
     QWEN3__D, 0},
    {"self_attn.k_proj.weight", "attn_k.weight", offsetof(qwen3_layer_tensors, k), QWEN3__KV,
     QWEN3__D, 0},
    {"self_attn.v_proj.weight", "attn_v.weight", offsetof(qwen3_layer_tensors, v), QWEN3__KV,
     QWEN3__D, 0},
    {"self_attn.o_proj.weight", "attn_output.weight", offsetof(qwen3_layer_tensors, o), QWEN3__D,
     QWEN3__Q, 0},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", offsetof(qwen3_layer_tensors, q_norm),
     QWEN3__HD, QWEN3__NONE, 0},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", offsetof(qwen3_layer_tensors, k_norm),
     QWEN3__HD, QWEN3__NONE, 0},
    {"post_attention_layernorm.weight", "ffn_norm.weight", offsetof(qwen3_layer_tensors, post_norm),
     QWEN3__D, QWEN3__NONE, 0},
    {"mlp.gate_proj.weight", "ffn_gate.weight", offsetof(qwen3_layer_tensors, gate), QWEN3__F,
     QWEN3__D, 1},
    {"mlp.up_proj.weight", "ffn_up.weight", offsetof(qwen3_layer_tensors, up), QWEN3__F, QWEN3__D,
     1},
    {"mlp.down_proj.weight", "ffn_down.weight", offsetof(qwen3_layer_tensors, down), QWEN3__D,
     QWEN3__F, 1},
    {"mlp.gate.weight", "ffn_gate_inp.weight", offsetof(qwen3_layer_tensors, router), QWEN3__E,
     QWEN3__D, -1},
};
enum {
    QWEN3__N_LAYER_TENSORS = sizeof qwen3__layer_table / sizeof qwen3__layer_table[0],
    QWEN3__MIN_LAYER_TENSORS = 11, /* a dense layer's; a MoE layer has 9 + 3 E */
};

/* A MoE layer's expert projections: "mlp.experts.J.<name>" in Hugging Face
 * names, one tensor per expert; "blk.L.<gguf>" in a GGUF file, the layer's
 * experts stacked in expert order into one [E, rows, cols] tensor. */
static const struct {
    const char *name, *gguf;
    qwen3__dim rows, cols;
} qwen3__expert_table[3] = {
    {"gate_proj.weight", "ffn_gate_exps.weight", QWEN3__FE, QWEN3__D},
    {"up_proj.weight", "ffn_up_exps.weight", QWEN3__FE, QWEN3__D},
    {"down_proj.weight", "ffn_down_exps.weight", QWEN3__D, QWEN3__FE},
};

/* The names outside the layers, and the layers' prefix, per naming. */
typedef struct qwen3__names {
    const char *embed, *final_norm, *lm_head, *layer_prefix;
} qwen3__names;

static const qwen3__names qwen3__names_of[] = {
    [TENSOR_NAMES_HF] = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight",
                         "model.layers."},
    [TENSOR_NAMES_HF_BARE] = {"embed_tokens.weight", "norm.weight", "lm_head.weight", "layers."},
    [TENSOR_NAMES_GGUF] = {"token_embd.weight", "output_norm.weight", "output.weight", "blk."},
};

static const char *qwen3__suffix(const qwen3__layer_entry *e, tensor_naming n)
{
    return n == TENSOR_NAMES_GGUF ? e->gguf : e->suffix;
}

static int64_t qwen3__dim_size(const qwen3_config *c, qwen3__dim d)
{
    switch (d) {
    case QWEN3__D:
        return c->hidden_size;
    case QWEN3__F:
        return c->intermediate_size;
    case QWEN3__Q:
        return c->n_heads * c->head_dim;
    case QWEN3__KV:
        return c->n_kv_heads * c->head_dim;
    case QWEN3__HD:
        return c->head_dim;
    case QWEN3__E:
        return c->n_experts;
    case QWEN3__FE:
        return c->moe_intermediate_size;
    case QWEN3__NONE:
        break;
    }
    return 0;
}

/* The directory of the checkpoint's files, for messages: *n bytes of the
 * returned string. */
static const char *qwen3__dir(const tensor_source *src, int *n)
{
    const st_tensor *t = src->count(src->ctx) ? src->get(src->ctx, 0) : NULL;
    if (t && src->naming == TENSOR_NAMES_GGUF) {
        *n = (int)strlen(t->file);
        return t->file;
    }
    if (!t) {
        *n = 1;
        return "?";
    }
    const char *slash = strrchr(t->file, '/');
    *n = slash ? (int)(slash - t->file) : 1;
    return slash ? t->file : ".";
}

static void qwen3__format_shape(const int64_t *shape, int n, char *buf, size_t size)
{
    size_t k = 0;
    k += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

/* The dtypes a tensor may have: any float type; a matrix may also be of a
 * block type. */
static int qwen3__dtype_ok(enc_dtype t, int matrix)
{
    return t == ENC_F32 || t == ENC_BF16 || t == ENC_F16 || (matrix && enc_dtype_is_quantized(t));
}

/* Find `name` and check it is of shape want[0..n_want); a matrix (n_want
 * 2) or a stack of experts (3) may be of a block type. */
static enc_status qwen3__expect_dims(const tensor_source *src, const char *name,
                                     const int64_t *want, int n_want, const st_tensor **out)
{
    const st_tensor *t = src->find(src->ctx, name);
    if (!t) {
        int n = 0;
        const char *dir = qwen3__dir(src, &n);
        return enc_fail(ENC_ERR_FORMAT, "tensor '%s' is missing from the checkpoint in %.*s", name,
                        n, dir);
    }
    int ok = t->n_dims == n_want;
    for (int i = 0; ok && i < n_want; i++)
        ok = t->shape[i] == want[i];
    if (!ok) {
        char got_s[96], want_s[64];
        qwen3__format_shape(t->shape, t->n_dims, got_s, sizeof got_s);
        qwen3__format_shape(want, n_want, want_s, sizeof want_s);
        return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s' has shape %s, %s implies %s", t->file,
                        name, got_s, src->config_name, want_s);
    }
    int matrix = n_want >= 2; /* a matrix, or a stack of expert matrices */
    if (!qwen3__dtype_ok(t->dtype, matrix))
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (%s)", t->file, name,
                        enc_dtype_name(t->dtype),
                        matrix ? "F32, BF16, F16 or a block type" : "F32, BF16 or F16");
    *out = t;
    return ENC_OK;
}

/* Find `name` and check it is [rows] or [rows, cols] (cols <= 0: 1-d). */
static enc_status qwen3__expect(const tensor_source *src, const char *name, int64_t rows,
                                int64_t cols, const st_tensor **out)
{
    int64_t want[2] = {rows, cols};
    return qwen3__expect_dims(src, name, want, cols > 0 ? 2 : 1, out);
}

/* 1 when table entry e belongs in a layer that is (moe = 1) or is not MoE. */
static int qwen3__entry_in_layer(const qwen3__layer_entry *e, int moe)
{
    return moe ? e->dense_mlp <= 0 : e->dense_mlp >= 0;
}

const st_tensor *qwen3_tensors_expert(const st_archive *a, int64_t l, int64_t j, int proj)
{
    char name[128];
    snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.%lld.%s", (long long)l,
             (long long)j, qwen3__expert_table[proj].name);
    return st_find(a, name);
}

/* Every expert of MoE layer l: present, of its shape, and of expert 0's dtype. */
static enc_status qwen3__find_experts(const qwen3_config *c, const tensor_source *src, int64_t l)
{
    char name[128];
    for (int p = 0; p < 3; p++) {
        const st_tensor *first = NULL;
        for (int64_t j = 0; j < c->n_experts; j++) {
            const st_tensor *t = NULL;
            snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.%lld.%s", (long long)l,
                     (long long)j, qwen3__expert_table[p].name);
            ENC_TRY(qwen3__expect(src, name, qwen3__dim_size(c, qwen3__expert_table[p].rows),
                                  qwen3__dim_size(c, qwen3__expert_table[p].cols), &t));
            if (!first) first = t;
            if (t->dtype != first->dtype)
                return enc_fail(ENC_ERR_FORMAT,
                                "%s: tensor '%s' has dtype %s, expert 0's has %s; the experts "
                                "of a layer are stacked and must share one dtype",
                                t->file, name, enc_dtype_name(t->dtype),
                                enc_dtype_name(first->dtype));
        }
    }
    return ENC_OK;
}

/* GGUF: MoE layer l's three stacked expert tensors [E, rows, cols]. */
static enc_status qwen3__find_stacked(const qwen3_config *c, const tensor_source *src, int64_t l,
                                      qwen3_layer_tensors *lt)
{
    char name[128];
    for (int p = 0; p < 3; p++) {
        int64_t want[3] = {c->n_experts, qwen3__dim_size(c, qwen3__expert_table[p].rows),
                           qwen3__dim_size(c, qwen3__expert_table[p].cols)};
        snprintf(name, sizeof name, "%s%lld.%s", qwen3__names_of[src->naming].layer_prefix,
                 (long long)l, qwen3__expert_table[p].gguf);
        ENC_TRY(qwen3__expect_dims(src, name, want, 3, &lt->experts[p]));
    }
    return ENC_OK;
}

static enc_status qwen3__find_layer(const qwen3_config *c, const tensor_source *src, int64_t l,
                                    qwen3_layer_tensors *lt)
{
    char name[128];
    int moe = qwen3_config_layer_is_moe(c, l);
    for (int i = 0; i < QWEN3__N_LAYER_TENSORS; i++) {
        const qwen3__layer_entry *e = &qwen3__layer_table[i];
        if (!qwen3__entry_in_layer(e, moe)) continue;
        snprintf(name, sizeof name, "%s%lld.%s", qwen3__names_of[src->naming].layer_prefix,
                 (long long)l, qwen3__suffix(e, src->naming));
        const st_tensor **slot = (const st_tensor **)((char *)lt + e->field);
        ENC_TRY(qwen3__expect(src, name, qwen3__dim_size(c, e->rows), qwen3__dim_size(c, e->cols),
                              slot));
    }
    if (!moe) return ENC_OK;
    return src->naming == TENSOR_NAMES_GGUF ? qwen3__find_stacked(c, src, l, lt)
                                            : qwen3__find_experts(c, src, l);
}

/* --- tensors the model does not use ------------------------------------ */

static int qwen3__ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* A decimal index without leading zeros at *pp, advancing *pp past it; -1
 * when there is none or it is absurdly large. */
static int64_t qwen3__parse_index(const char **pp)
{
    const char *p = *pp;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9')) return -1;
    int64_t l = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (l > (INT64_MAX - 9) / 10) return -1;
        l = l * 10 + (*p - '0');
    }
    *pp = p;
    return l;
}

/* "mlp.experts.J.<projection>" with J < num_experts. */
static int qwen3__is_expert_tensor(const qwen3_config *c, const char *suffix)
{
    static const char prefix[] = "mlp.experts.";
    if (strncmp(suffix, prefix, sizeof prefix - 1)) return 0;
    const char *p = suffix + sizeof prefix - 1;
    int64_t j = qwen3__parse_index(&p);
    if (j < 0 || j >= c->n_experts || *p != '.') return 0;
    for (int i = 0; i < 3; i++)
        if (!strcmp(p + 1, qwen3__expert_table[i].name)) return 1;
    return 0;
}

/* "<prefix>L.<suffix>": 1 if L < n_layers and the suffix belongs in that
 * layer; *layer gets L (or -1 when the name does not have that form). */
static int qwen3__is_layer_tensor(const qwen3_config *c, const char *name, tensor_naming naming,
                                  int64_t *layer)
{
    const char *prefix = qwen3__names_of[naming].layer_prefix;
    *layer = -1;
    if (strncmp(name, prefix, strlen(prefix))) return 0;
    const char *p = name + strlen(prefix);
    int64_t l = qwen3__parse_index(&p);
    if (l < 0 || *p != '.') return 0;
    *layer = l;
    if (l >= c->n_layers) return 0;
    int moe = qwen3_config_layer_is_moe(c, l);
    for (int i = 0; i < QWEN3__N_LAYER_TENSORS; i++)
        if (!strcmp(p + 1, qwen3__suffix(&qwen3__layer_table[i], naming)))
            return qwen3__entry_in_layer(&qwen3__layer_table[i], moe);
    if (!moe) return 0;
    if (naming != TENSOR_NAMES_GGUF) return qwen3__is_expert_tensor(c, p + 1);
    for (int i = 0; i < 3; i++)
        if (!strcmp(p + 1, qwen3__expert_table[i].gguf)) return 1;
    return 0;
}

static enc_status qwen3__check_unused(const qwen3_config *c, const tensor_source *src)
{
    const qwen3__names *nm = &qwen3__names_of[src->naming];
    for (size_t i = 0; i < src->count(src->ctx); i++) {
        const st_tensor *t = src->get(src->ctx, i);
        int64_t l = -1;
        if (!strcmp(t->name, nm->embed) || !strcmp(t->name, nm->final_norm) ||
            !strcmp(t->name, nm->lm_head) ||
            (src->naming != TENSOR_NAMES_GGUF &&
             qwen3__ends_with(t->name, "rotary_emb.inv_freq")) ||
            qwen3__is_layer_tensor(c, t->name, src->naming, &l))
            continue;
        if (l >= c->n_layers)
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: tensor '%s' is for layer %lld, but %s has %s = %lld", t->file,
                            t->name, (long long)l, src->config_name, src->layers_key,
                            (long long)c->n_layers);
        if (strstr(t->name, ".mlp.shared_expert"))
            return enc_fail(ENC_ERR_UNSUPPORTED,
                            "%s: tensor '%s' is a shared expert (Qwen2-MoE); encore does not "
                            "support shared experts",
                            t->file, t->name);
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s' is not used by a %s model (unexpected tensor)", t->file,
                        t->name, c->n_experts ? "Qwen3-MoE" : "Qwen3");
    }
    return ENC_OK;
}

static void qwen3__log_dtypes(const tensor_source *src)
{
    size_t n[ENC_DTYPE_COUNT] = {0}, blocks = 0;
    for (size_t i = 0; i < src->count(src->ctx); i++) {
        const st_tensor *t = src->get(src->ctx, i);
        if ((unsigned)t->dtype < ENC_DTYPE_COUNT) n[t->dtype]++;
    }
    for (int t = 0; t < ENC_DTYPE_COUNT; t++)
        blocks += enc_dtype_is_quantized((enc_dtype)t) ? n[t] : 0;
    enc_log_debug("qwen3 tensors: %zu F32, %zu BF16, %zu F16, %zu of block types", n[ENC_F32],
                  n[ENC_BF16], n[ENC_F16], blocks);
}

/* --- public API -------------------------------------------------------- */

enc_status qwen3_tensors_find(const qwen3_config *cfg, const st_archive *a, qwen3_tensors *out)
{
    tensor_source src = tensor_source_safetensors(a);
    return qwen3_tensors_find_in(cfg, &src, out);
}

enc_status qwen3_tensors_find_in(const qwen3_config *cfg, const tensor_source *src,
                                 qwen3_tensors *out)
{
    const qwen3__names *nm = &qwen3__names_of[src->naming];
    qwen3_tensors t;
    memset(&t, 0, sizeof t);
    memset(out, 0, sizeof *out);
    if (cfg->n_layers <= 0)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "qwen3 config has %lld layers",
                        (long long)cfg->n_layers);
    if (src->naming == TENSOR_NAMES_HF_BARE && cfg->n_experts)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "a Qwen3-MoE checkpoint without the 'model.' prefix on its tensor names "
                        "(%s has 'embed_tokens.weight'): encore reads such checkpoints of dense "
                        "Qwen3 only",
                        src->config_name);
    int64_t V = cfg->vocab_size, D = cfg->hidden_size;
    ENC_TRY(qwen3__expect(src, nm->embed, V, D, &t.embed));
    ENC_TRY(qwen3__expect(src, nm->final_norm, D, 0, &t.final_norm));
    if (cfg->tie_word_embeddings)
        t.lm_head = t.embed;
    else if (src->find(src->ctx, nm->lm_head)) /* else none: an embedding model's checkpoint */
        ENC_TRY(qwen3__expect(src, nm->lm_head, V, D, &t.lm_head));

    if ((uint64_t)cfg->n_layers > src->count(src->ctx) / QWEN3__MIN_LAYER_TENSORS) {
        /* Too few tensors for that many layers: report the first missing one
         * without allocating a table sized by an untrusted count. */
        qwen3_layer_tensors tmp;
        for (int64_t l = 0; l < cfg->n_layers; l++)
            ENC_TRY(qwen3__find_layer(cfg, src, l, &tmp));
        return enc_fail(ENC_ERR_INTERNAL, "qwen3 tensors: counted too few, found all");
    }
    t.layers = calloc((size_t)cfg->n_layers, sizeof *t.layers); /* freed by qwen3_tensors_free */
    if (!t.layers)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "out of memory for %lld layers",
                        (long long)cfg->n_layers);
    enc_status s = ENC_OK;
    for (int64_t l = 0; l < cfg->n_layers && s == ENC_OK; l++)
        s = qwen3__find_layer(cfg, src, l, &t.layers[l]);
    if (s == ENC_OK) s = qwen3__check_unused(cfg, src);
    if (s != ENC_OK) {
        qwen3_tensors_free(&t);
        return s;
    }
    qwen3__log_dtypes(src);
    *out = t;
    return ENC_OK;
}

void qwen3_tensors_free(qwen3_tensors *t)
{
    if (!t) return;
    free(t->layers);
    memset(t, 0, sizeof *t);
}
