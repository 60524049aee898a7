/* gguf_config.h - the Qwen3 hyper-parameters read from a GGUF file's
 * metadata (llama.cpp's keys), into the same qwen3_config that config.json
 * gives. */
#ifndef ENC_MODEL_GGUF_CONFIG_H
#define ENC_MODEL_GGUF_CONFIG_H

#include "model/config.h"
#include "model/gguf.h"

/* general.architecture must be "qwen3" or "qwen3moe" (any other is refused
 * by name). A missing required key,
 * a value of the wrong type or range, or an unsupported feature (rope
 * scaling) is an error naming the file, the key and its byte offset. */
enc_status qwen3_config_from_gguf(const gguf_file *g, qwen3_config *out);

#endif
