/* generation_config.h - a checkpoint's generation_config.json: the sampling
 * defaults it recommends and the end-of-sequence ids it adds (see the .c). */
#ifndef ENC_MODEL_GENERATION_CONFIG_H
#define ENC_MODEL_GENERATION_CONFIG_H

#include <stddef.h>

#include "base/status.h"
#include "model/config.h"

/* DIR/generation_config.json, when there is one, into cfg (config.json's,
 * already read): cfg->generation and more of cfg->eos_token_ids. cfg is
 * unchanged on an error, which names the file and the field. */
enc_status generation_config_load(const char *model_dir, qwen3_config *cfg);
/* The same from text already in memory; `where` names it in errors. */
enc_status generation_config_parse(const char *json, size_t len, const char *where,
                                   qwen3_config *cfg);

/* Set the QWEN3_GEN_* field `bit` of g to v after checking its range (an
 * error names `where` and `what`): the one check of every source. */
enc_status qwen3_generation_set(qwen3_generation_defaults *g, unsigned bit, double v,
                                const char *where, const char *what);

#endif
