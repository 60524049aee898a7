/* quantize.h - quantizing a checkpoint's matrices to a GGUF block type while
 * they are loaded (`--quantize q8_0|q4_0|q4_k|q5_k|q6_k|q4_k_m|q5_k_m`): the
 * rows of a bf16, f16 or f32 tensor become rows of blocks (base/quant.h),
 * put on the backend in place of the original. */
#ifndef ENC_MODEL_QUANTIZE_H
#define ENC_MODEL_QUANTIZE_H

#include "backend/backend.h"
#include "base/dtype.h"
#include "base/status.h"
#include "graph/graph.h"
#include "model/gguf_mix.h"
#include "model/safetensors.h"
#include "model/tensor_source.h"

/* "q8_0", "q4_0", "q4_k", "q5_k", "q6_k" (any case) -> that block type for
 * every matrix; "q4_k_m", "q5_k_m" -> llama-quantize's mix (model/gguf_mix.h);
 * NULL or "" or "none" -> ENC_F32, meaning "as stored". Anything else is an
 * error naming the value. */
enc_status model_quantize_type(const char *name, gguf_file_type *out);

/* The type a stored matrix takes on be: the block type `quantize`
 * (--quantize) for a float matrix; for a type of base/quant_widen.h that
 * be's matmul, matmul_id and get_rows do not all read, its widened type;
 * else its stored type (a GGUF block type stays as it is). */
enc_dtype model_loaded_dtype(backend *be, const st_tensor *t, enc_dtype quantize);

/* Says (at info level) how many of src's tensors of each type of
 * base/quant_widen.h be widens at load, and to what. */
void model_log_widened(backend *be, const tensor_source *src, enc_dtype quantize);

/* ENC_OK when op (matmul, matmul_id or get_rows) reads weights of type dt on
 * be; else an error naming t's file, t, the type and the op. */
enc_status model_check_weight_dtype(backend *be, const st_tensor *t, enc_dtype dt, graph_op op);

/* Bytes of t ([rows, cols] or [E, rows, cols]) as rows of dt blocks. */
size_t model_quantized_bytes(const st_tensor *t, enc_dtype dt);

/* Quantize t (2-D, or a 3-D stack of experts: rows along its last dimension)
 * to dt row by row into buf at byte offset `at`. Fails, naming the file and
 * tensor, when a row is no whole number of dt's blocks or t is no float
 * matrix. */
enc_status model_quantize_into(backend *be, const st_tensor *t, enc_dtype dt, backend_buffer *buf,
                               size_t at);

/* Quantize the 2-D tensor t [rows, cols] to dt row by row and put the blocks
 * in a new backend buffer *out (the caller's to free). Fails, naming the file
 * and tensor, when cols is no multiple of dt's block size. */
enc_status model_quantize_matrix(backend *be, const st_tensor *t, enc_dtype dt,
                                 backend_buffer **out);

#endif
