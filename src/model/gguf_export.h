/* gguf_export.h - a Qwen3 model as GGUF: the model's metadata under
 * llama.cpp's keys (general.*, qwen3.*) and its tensors under llama.cpp's
 * names, converted to one type or to one of llama-quantize's mixes
 * (gguf_mix.h), added to a gguf_writer. The model is a safetensors
 * checkpoint (whose tokenizer's keys the caller adds: api/model_tokenizer.h)
 * or a GGUF file (whose metadata is copied, tokenizer and all). */
#ifndef ENC_MODEL_GGUF_EXPORT_H
#define ENC_MODEL_GGUF_EXPORT_H

#include "model/gguf_mix.h"
#include "model/gguf_write.h"
#include "model/qwen3.h"

/* Check the checkpoint in DIR (its config.json, and a, its safetensors
 * opened by st_open_dir) as qwen3_model_load does, and add to w everything
 * but the tokenizer. The matrices and the embedding take the types of ft
 * (gguf_mix_type: F32, F16, BF16 or a block type quant_quantizes, where
 * every row is whole blocks; else an error naming the tensor), the norms
 * F32, as llama.cpp writes them. The tensors are converted when w writes
 * the file (one at a time, over every CPU), so a must stay open until then.
 * *vocab_size gets the embedding's rows (the tokenizer's list is padded to
 * it). */
enc_status qwen3_export_gguf(const char *model_dir, const st_archive *a, gguf_file_type ft,
                             const char *name, gguf_writer *w, int64_t *vocab_size);

/* The same from a GGUF file that qwen3_model_load would run (checked as it
 * does): every kv of g copied but general.file_type (ft's),
 * general.quantization_version (written for a block type) and
 * general.alignment (the writer's); the tensors in the order and the types
 * qwen3_export_gguf gives them, g open until w writes the file. A tensor
 * already of its new type is copied as it is; one of a block type that
 * would change type is an error naming it, unless allow_requantize (its
 * values are dequantized and quantized again, as llama-quantize
 * --allow-requantize does). */
enc_status qwen3_export_gguf_file(const gguf_file *g, gguf_file_type ft, int allow_requantize,
                                  gguf_writer *w);

#endif
