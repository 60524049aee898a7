/* rope.h - RoPE's frequency schedule: plain, linear scaling and YaRN.
 *
 * Frequency i of a head of hd dimensions (i < hd/2) turns by
 *
 *   inv_freq(i) = theta^(-2i/hd) * (1 - ramp(i) * (1 - 1/factor))
 *   ramp(i)     = clamp((i - low) / (high - low), 0, 1)
 *
 * and the rotated pair is scaled by attn (cos and sin times attn). Plain
 * RoPE is factor 1, attn 1 (every inv_freq exactly theta^(-2i/hd)); linear
 * scaling divides every frequency by factor (ramp 1 throughout); YaRN
 * (arXiv 2309.00071) keeps the fast frequencies, divides the slow ones by
 * factor and blends between over the correction range [low, high], with
 * attn = 0.1 ln(factor) + 1 unless the checkpoint gives its own. The range is
 * computed from the original (pre-scaling) context length as vLLM,
 * llama.cpp and current transformers do. */
#ifndef ENC_BASE_ROPE_H
#define ENC_BASE_ROPE_H

#include <stdint.h>

#include "base/status.h"

typedef enum { ENC_ROPE_NONE = 0, ENC_ROPE_LINEAR, ENC_ROPE_YARN } enc_rope_kind;

/* A checkpoint's rope scaling, as config.json's rope_scaling (or a GGUF
 * file's rope.scaling.*) states it. */
typedef struct enc_rope_scaling {
    enc_rope_kind kind;
    double factor;           /* linear, yarn: > 0 */
    int64_t original_ctx;    /* yarn: original_max_position_embeddings; 0: absent */
    double beta_fast;        /* yarn: 32 when absent */
    double beta_slow;        /* yarn: 1 when absent */
    double attention_factor; /* yarn: 0 when absent (then 0.1 ln(factor) + 1) */
    int truncate;            /* yarn: floor / ceil the correction range (default 1) */
} enc_rope_scaling;

/* The schedule the kernels apply (the header comment). */
typedef struct enc_rope {
    double theta, factor, low, high, attn;
} enc_rope;

/* The schedule of theta, head_dim and scaling s (NULL or kind NONE: plain);
 * max_pos: the checkpoint's max_position_embeddings, the original context
 * when s gives none. */
enc_rope enc_rope_make(double theta, int64_t head_dim, const enc_rope_scaling *s, int64_t max_pos);

/* The longest context the scaling stretches max_pos to: original_ctx (or
 * max_pos) times factor for yarn, max_pos times factor for linear, at least
 * max_pos; what vLLM takes as the model's length. */
int64_t enc_rope_context_limit(const enc_rope_scaling *s, int64_t max_pos);

/* Checks a scaling's values; `where` names the file in the message. */
enc_status enc_rope_scaling_check(const enc_rope_scaling *s, const char *where);
/* Checks the base: finite and above 1 (at 1 every frequency is 1, and yarn
 * divides by its log); `key` names it in the message. */
enc_status enc_rope_theta_check(double theta, const char *where, const char *key);

/* inv_freq(i) of the header comment for a head of hd dimensions, in
 * double (plain RoPE: exactly pow(theta, -2i/hd)). */
double enc_rope_inv_freq(const enc_rope *r, int64_t i, int64_t hd);

#endif
