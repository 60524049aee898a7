/* quantize.h - `encore quantize`: a Hugging Face checkpoint written as one
 * GGUF file (model metadata, tensors in one type or a llama-quantize mix,
 * the tokenizer) that llama.cpp and encore load, or a GGUF file rewritten
 * in another type. */
#ifndef ENC_API_QUANTIZE_H
#define ENC_API_QUANTIZE_H

#include "base/dtype.h"
#include "base/status.h"
#include "model/gguf_mix.h"
#include "model/qwen3.h"

/* Write model (a checkpoint directory, or a GGUF file: gguf_is_model_file)
 * as out_path (through out_path.tmp). From a directory general.name is its
 * last component; from a GGUF file every kv but the file type is copied,
 * and a tensor of a block type that would change type is refused unless
 * allow_requantize (model/gguf_export.h). progress (may be NULL) gets the
 * fraction of tensors converted. */
enc_status quantize_to_gguf(const char *model, const char *out_path, gguf_file_type type,
                            int allow_requantize, qwen3_progress_fn progress, void *user);

/* The --type names: "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k",
 * "q6_k" (every matrix that type), "q4_k_m", "q5_k_m" (llama-quantize's
 * mixes); 0 for another name. */
int quantize_type_parse(const char *name, gguf_file_type *out);

#endif
