/* generation_config.c - what a checkpoint recommends for generation: the
 * sampling defaults and end-of-sequence ids of its generation_config.json.
 *
 * Read as vLLM reads it by default (--generation-config auto): temperature,
 * top_k, top_p, min_p and repetition_penalty become the defaults of requests
 * that do not give them, each only where it differs from transformers'
 * GenerationConfig default (vLLM takes the file's to_diff_dict(): a top_k of
 * 50 there is transformers' default, not a recommendation); eos_token_id, an
 * int or a list, joins config.json's end-of-sequence ids, as transformers'
 * generate and vLLM stop at each of them (Qwen3's: <|im_end|> and
 * <|endoftext|>). Other fields (do_sample, pad_token_id, max_new_tokens, ...)
 * are ignored. No file changes nothing; a field of the wrong type or out of
 * range is an error naming the file and the field. */
#define _POSIX_C_SOURCE 200809L
#include "model/generation_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/json_whole.h"
#include "base/mapfile.h"

/* transformers' GenerationConfig defaults of the fields read: a file's value
 * equal to one of these is no recommendation (vLLM drops it too). */
static const struct {
    const char *key;
    unsigned bit;
    double hf_default;
} gen__fields[] = {
    {"temperature", QWEN3_GEN_TEMPERATURE, 1.0},
    {"top_k", QWEN3_GEN_TOP_K, 50.0},
    {"top_p", QWEN3_GEN_TOP_P, 1.0},
    {"min_p", QWEN3_GEN_MIN_P, NAN}, /* None in transformers: any value counts */
    {"repetition_penalty", QWEN3_GEN_REPETITION_PENALTY, 1.0},
};

enc_status qwen3_generation_set(qwen3_generation_defaults *g, unsigned bit, double v,
                                const char *where, const char *what)
{
    const char *range = NULL;
    if (!isfinite(v))
        range = "a finite number";
    else if (bit == QWEN3_GEN_TEMPERATURE && v < 0)
        range = "at least 0";
    else if (bit == QWEN3_GEN_TOP_K && (v != floor(v) || v < -1 || v > 2147483647.0))
        range = "an integer, at least -1 (-1 and 0: off)";
    else if (bit == QWEN3_GEN_TOP_P && !(v > 0 && v <= 1))
        range = "in (0, 1]";
    else if (bit == QWEN3_GEN_MIN_P && !(v >= 0 && v <= 1))
        range = "in [0, 1]";
    else if (bit == QWEN3_GEN_REPETITION_PENALTY && !(v > 0))
        range = "greater than 0";
    if (range)
        return enc_fail(ENC_ERR_FORMAT, "%s: %s is %g; it must be %s", where, what, v, range);
    g->set |= bit;
    if (bit == QWEN3_GEN_TEMPERATURE) g->temperature = v;
    if (bit == QWEN3_GEN_TOP_K) g->top_k = (int64_t)v;
    if (bit == QWEN3_GEN_TOP_P) g->top_p = v;
    if (bit == QWEN3_GEN_MIN_P) g->min_p = v;
    if (bit == QWEN3_GEN_REPETITION_PENALTY) g->repetition_penalty = v;
    return ENC_OK;
}

static enc_status gen__parse_root(const cJSON *root, const char *where, qwen3_config *cfg)
{
    const cJSON *eos = NULL;
    char what[64];
    qwen3_generation_defaults g = {0};
    for (size_t i = 0; i < sizeof gen__fields / sizeof gen__fields[0]; i++) {
        const cJSON *v = NULL;
        ENC_TRY(qwen3_json_field(root, where, gen__fields[i].key, &v));
        if (!v) continue;
        if (!cJSON_IsNumber(v))
            return enc_fail(ENC_ERR_FORMAT, "%s: field '%s' must be a number", where,
                            gen__fields[i].key);
        if (v->valuedouble == gen__fields[i].hf_default) continue;
        snprintf(what, sizeof what, "field '%s'", gen__fields[i].key);
        ENC_TRY(qwen3_generation_set(&g, gen__fields[i].bit, v->valuedouble, where, what));
    }
    ENC_TRY(qwen3_json_field(root, where, "eos_token_id", &eos));
    qwen3_config c = *cfg; /* cfg changes only when the whole file is good */
    ENC_TRY(qwen3_config_add_eos(&c, eos, where, "eos_token_id"));
    c.generation = g;
    *cfg = c;
    return ENC_OK;
}

enc_status generation_config_parse(const char *json, size_t len, const char *where,
                                   qwen3_config *cfg)
{
    size_t at = 0;
    cJSON *root = json_parse_whole(json, len, &at);
    if (!root)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: not valid JSON, or more than one value (near byte %zu)", where, at);
    enc_status s = cJSON_IsObject(root) ? gen__parse_root(root, where, cfg)
                                        : enc_fail(ENC_ERR_FORMAT, "%s: not a JSON object", where);
    cJSON_Delete(root);
    return s;
}

enc_status generation_config_load(const char *model_dir, qwen3_config *cfg)
{
    char *path = NULL, *text = NULL;
    ENC_TRY(file_path_in(model_dir, "generation_config.json", &path));
    size_t size = 0;
    enc_status s = file_read_if_present(path, &text, &size); /* absent: nothing to read */
    if (s == ENC_OK && text) s = generation_config_parse(text, size, path, cfg);
    free(text);
    free(path);
    return s;
}
