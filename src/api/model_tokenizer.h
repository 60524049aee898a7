/* model_tokenizer.h - the tokenizer of a model path: DIR/tokenizer.json (and
 * tokenizer_config.json) for a Hugging Face directory, or the tokenizer.ggml.*
 * metadata of a GGUF file. */
#ifndef ENC_API_MODEL_TOKENIZER_H
#define ENC_API_MODEL_TOKENIZER_H

#include "base/status.h"
#include "model/gguf.h"
#include "model/gguf_write.h"
#include "tokenizer/tokenizer.h"

/* Load the tokenizer of path (a directory or a GGUF file). With optional, a
 * model that has none (no tokenizer.json, no tokenizer.ggml.tokens) gives
 * *out = NULL and ENC_OK; otherwise that is an error. A broken one is always
 * an error naming the file and the field or key. */
enc_status model_tokenizer_load(const char *path, int optional, tokenizer **out);

/* Use another chat template than the model's (the --chat-template option):
 * file_or_name is the path of a Jinja template file, as vLLM's option takes,
 * or the name of a family encore renders without its text (qwen3,
 * qwen3-instruct, qwen3-thinking). Errors name it and say why. */
enc_status model_tokenizer_chat_template(tokenizer *t, const char *file_or_name);

/* Add t to a GGUF file as llama.cpp's converter writes it: tokenizer.ggml.model
 * "gpt2", pre "qwen2", tokens padded with "[PADn]" (type unused) to
 * vocab_size, token_type, merges, eos/padding ids, the bos id, add_bos_token
 * false, and tokenizer.chat_template. The bos id is the tokenizer's, else
 * bos_fallback (config.json's bos_token_id, as llama.cpp's converter falls
 * back to it: Qwen3's tokenizer has no bos token, its config.json names
 * <|endoftext|>); neither (-1): no key. */
enc_status model_tokenizer_to_gguf(const tokenizer *t, int64_t vocab_size, int32_t bos_fallback,
                                   gguf_writer *w);

/* The tokenizer stored in an open GGUF file (tokenizer.ggml.model "gpt2"). */
enc_status model_tokenizer_from_gguf(const gguf_file *g, tokenizer **out);

#endif
