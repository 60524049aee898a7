/* gguf_export.h - a Qwen3 safetensors checkpoint as GGUF: the model's
 * metadata under llama.cpp's keys (general.*, qwen3.*) and its tensors under
 * llama.cpp's names, converted to one type or to one of llama-quantize's
 * mixes (gguf_mix.h), added to a gguf_writer. The
 * tokenizer's keys are added by the caller (api/model_tokenizer.h). */
#ifndef ENC_MODEL_GGUF_EXPORT_H
#define ENC_MODEL_GGUF_EXPORT_H

#include "model/gguf_mix.h"
#include "model/gguf_write.h"
#include "model/qwen3.h"

/* Read DIR (config.json and safetensors), check it as qwen3_model_load does,
 * and add to w everything but the tokenizer. The matrices and the embedding
 * take the types of ft (gguf_mix_type: F32, F16, BF16 or a block type
 * quant_quantizes, where every row is whole blocks; else an error naming the
 * tensor), the norms F32, as llama.cpp writes them. *vocab_size gets the
 * embedding's rows (the tokenizer's list is padded to it). progress (may be
 * NULL) gets the fraction of tensors done. */
enc_status qwen3_export_gguf(const char *model_dir, gguf_file_type ft, const char *name,
                             qwen3_progress_fn progress, void *user, gguf_writer *w,
                             int64_t *vocab_size);

#endif
