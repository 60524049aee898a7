/* quantize.h - quantizing a checkpoint's matrices to a GGUF block type while
 * they are loaded (`--quantize q8_0|q4_0|q4_k`): the rows of a bf16, f16 or
 * f32 tensor become rows of blocks (base/quant.h), put on the backend in
 * place of the original. */
#ifndef ENC_MODEL_QUANTIZE_H
#define ENC_MODEL_QUANTIZE_H

#include "backend/backend.h"
#include "base/dtype.h"
#include "base/status.h"
#include "model/safetensors.h"

/* "q8_0", "q4_0" or "q4_k" (any case) -> the block type; NULL or "" or
 * "none" -> ENC_F32, meaning "as stored". Anything else is an error naming
 * the value. */
enc_status model_quantize_type(const char *name, enc_dtype *out);

/* Quantize the 2-D tensor t [rows, cols] to dt row by row and put the blocks
 * in a new backend buffer *out (the caller's to free). Fails, naming the file
 * and tensor, when cols is no multiple of dt's block size. */
enc_status model_quantize_matrix(backend *be, const st_tensor *t, enc_dtype dt,
                                 backend_buffer **out);

#endif
