/* pooling_config.h - whether a checkpoint directory is an embedding model,
 * from its sentence-transformers files (modules.json and its Pooling
 * module's config.json). */
#ifndef ENC_MODEL_POOLING_CONFIG_H
#define ENC_MODEL_POOLING_CONFIG_H

#include "base/status.h"

/* *is_embedding: 1 when model_dir/modules.json lists a
 * sentence_transformers.models.Pooling module (Qwen3-Embedding ships one),
 * else 0 (no such file, or a GGUF file's path). That module pooling by
 * anything but the last token is ENC_ERR_UNSUPPORTED (encore pools the
 * last token); a malformed file is ENC_ERR_FORMAT naming it. */
enc_status pooling_config_detect(const char *model_dir, int *is_embedding);

#endif
