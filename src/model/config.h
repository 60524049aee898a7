/* config.h - the Qwen3 hyper-parameters read from a checkpoint's config.json.
 *
 * Every field that changes the math is read and checked; a missing or
 * inconsistent field, or an unsupported feature (rope_scaling kinds other
 * than linear and yarn, attention biases, sliding windows, a shared expert),
 * is an error that names config.json and the field. model_type "qwen3" is
 * the dense model, "qwen3_moe" adds the mixture-of-experts fields. */
#ifndef ENC_MODEL_CONFIG_H
#define ENC_MODEL_CONFIG_H

#include <stdint.h>

#include "base/dtype.h"
#include "base/rope.h"
#include "base/status.h"

enum { QWEN3_MAX_EOS = 8, QWEN3_MAX_MLP_ONLY = 256 };

/* The sampling parameters a checkpoint recommends (model/generation_config.c:
 * its generation_config.json, or a GGUF file's general.sampling.* keys);
 * `set` has a QWEN3_GEN_* bit for each one given. */
enum {
    QWEN3_GEN_TEMPERATURE = 1,
    QWEN3_GEN_TOP_K = 2,
    QWEN3_GEN_TOP_P = 4,
    QWEN3_GEN_MIN_P = 8,
    QWEN3_GEN_REPETITION_PENALTY = 16,
};
typedef struct qwen3_generation_defaults {
    unsigned set;
    double temperature;        /* >= 0 */
    int64_t top_k;             /* -1 or 0: off */
    double top_p;              /* (0, 1] */
    double min_p;              /* [0, 1] */
    double repetition_penalty; /* > 0 */
} qwen3_generation_defaults;

typedef struct qwen3_config {
    int64_t hidden_size;        /* D */
    int64_t intermediate_size;  /* F */
    int64_t n_layers;           /* num_hidden_layers */
    int64_t n_heads;            /* num_attention_heads */
    int64_t n_kv_heads;         /* num_key_value_heads (divides n_heads) */
    int64_t head_dim;           /* head_dim (default hidden_size / n_heads) */
    int64_t vocab_size;
    int64_t max_position_embeddings;
    double rms_norm_eps;
    double rope_theta;
    enc_rope_scaling rope_scaling; /* rope_scaling / rope_parameters (kind NONE: plain) */
    int tie_word_embeddings;    /* 0 or 1 */
    enc_dtype torch_dtype;      /* F32, BF16 or F16 */
    int32_t bos_token_id;       /* -1 when absent */
    int32_t eos_token_ids[QWEN3_MAX_EOS]; /* eos_token_id: int or list (and those of
                                           * generation_config.json) */
    int n_eos;
    qwen3_generation_defaults generation; /* what the checkpoint recommends */
    /* Qwen3-MoE (model_type "qwen3_moe"); n_experts is 0 for a dense model. */
    int64_t n_experts;             /* num_experts: E */
    int64_t n_experts_per_tok;     /* num_experts_per_tok: k <= E */
    int64_t moe_intermediate_size; /* each expert's F */
    int norm_topk_prob;            /* renormalise the k weights to sum to 1 */
    int64_t decoder_sparse_step;   /* layer l is sparse when (l + 1) % step == 0 ... */
    int n_mlp_only;                /* ... and l is not in mlp_only_layers */
    int32_t mlp_only_layers[QWEN3_MAX_MLP_ONLY];
} qwen3_config;

/* 1 when layer l has a mixture-of-experts block, 0 when a dense MLP
 * (transformers' Qwen3MoeDecoderLayer: l not in mlp_only_layers, num_experts
 * > 0 and (l + 1) % decoder_sparse_step == 0). */
int qwen3_config_layer_is_moe(const qwen3_config *c, int64_t l);

/* The value of `key` in the JSON object obj, NULL when absent or null. A
 * key given twice is an error naming `where` (cJSON keeps both; which one
 * Hugging Face would use is not worth guessing). */
struct cJSON;
enc_status qwen3_json_field(const struct cJSON *obj, const char *where, const char *key,
                            const struct cJSON **out);

/* Add end-of-sequence ids to c from eos, an int or a list of them (NULL:
 * none), each below c->vocab_size; an id c has already is not added again.
 * `where` and `key` name the value in errors. */
enc_status qwen3_config_add_eos(qwen3_config *c, const struct cJSON *eos, const char *where,
                                const char *key);

/* Parse DIR/config.json. */
enc_status qwen3_config_load(const char *model_dir, qwen3_config *out);
/* Parse config.json text already in memory; `where` names it in errors. */
enc_status qwen3_config_parse(const char *json, const char *where, qwen3_config *out);

#endif
