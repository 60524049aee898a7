/* config.h - the Qwen3 hyper-parameters read from a checkpoint's config.json.
 *
 * Every field that changes the math is read and checked; a missing or
 * inconsistent field, or an unsupported feature (rope_scaling kinds encore
 * does not implement, attention biases, sliding windows), is an error that
 * names config.json and the field. */
#ifndef ENC_MODEL_CONFIG_H
#define ENC_MODEL_CONFIG_H

#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

enum { QWEN3_MAX_EOS = 8 };

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
    int tie_word_embeddings;    /* 0 or 1 */
    enc_dtype torch_dtype;      /* F32, BF16 or F16 */
    int32_t bos_token_id;       /* -1 when absent */
    int32_t eos_token_ids[QWEN3_MAX_EOS]; /* eos_token_id: int or list */
    int n_eos;
} qwen3_config;

/* Parse DIR/config.json. */
enc_status qwen3_config_load(const char *model_dir, qwen3_config *out);
/* Parse config.json text already in memory; `where` names it in errors. */
enc_status qwen3_config_parse(const char *json, const char *where, qwen3_config *out);

#endif
