/* quantize.h - `encore quantize`: a Hugging Face checkpoint written as one
 * GGUF file (model metadata, tensors in one type or a llama-quantize mix,
 * the tokenizer) that llama.cpp and encore load. */
#ifndef ENC_API_QUANTIZE_H
#define ENC_API_QUANTIZE_H

#include "base/dtype.h"
#include "base/status.h"
#include "model/gguf_mix.h"
#include "model/qwen3.h"

/* Write model_dir as out_path (through out_path.tmp). general.name is the
 * directory's last component. progress (may be NULL) gets the fraction of
 * tensors converted. */
enc_status quantize_to_gguf(const char *model_dir, const char *out_path, gguf_file_type type,
                            qwen3_progress_fn progress, void *user);

/* The --type names: "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k",
 * "q6_k" (every matrix that type), "q4_k_m", "q5_k_m" (llama-quantize's
 * mixes); 0 for another name. */
int quantize_type_parse(const char *name, gguf_file_type *out);

#endif
