/* gguf_write.h - writing GGUF v3 files: metadata, then tensors, aligned.
 *
 * Metadata is serialized as it is added; tensors are recorded (their bytes
 * are read, or made by the tensor's fill function, when the file is
 * written: one tensor in memory at a time) and laid out in the order added, each at
 * a multiple of the alignment (32 unless gguf_writer_set_alignment says
 * otherwise, which also writes general.alignment). gguf_writer_write writes
 * PATH.tmp with stdio and renames it to PATH, so a reader never sees a half
 * file; on failure the temporary is removed. */
#ifndef ENC_MODEL_GGUF_WRITE_H
#define ENC_MODEL_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"
#include "model/gguf.h"

typedef struct gguf_writer gguf_writer;

enc_status gguf_writer_create(gguf_writer **out);
void gguf_writer_free(gguf_writer *w); /* NULL is a no-op; frees the fill contexts */

/* A power of two; written as general.alignment (uint32). */
enc_status gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment);

enc_status gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v);
enc_status gguf_writer_add_i32(gguf_writer *w, const char *key, int32_t v);
enc_status gguf_writer_add_f32(gguf_writer *w, const char *key, float v);
enc_status gguf_writer_add_bool(gguf_writer *w, const char *key, int v);
enc_status gguf_writer_add_str(gguf_writer *w, const char *key, const char *s, size_t len);
/* n strings; lens may be NULL for NUL-terminated strings. */
enc_status gguf_writer_add_str_array(gguf_writer *w, const char *key, const char *const *strs,
                                     const size_t *lens, size_t n);
enc_status gguf_writer_add_i32_array(gguf_writer *w, const char *key, const int32_t *v, size_t n);
/* A kv read from another file (gguf.h), copied as it is: its key, type and
 * value (every element of an array). */
enc_status gguf_writer_add_kv(gguf_writer *w, const gguf_kv *kv);

/* A tensor of encore shape [shape[0], ..., shape[n_dims-1]] (row-major;
 * written as ggml's ne, reversed). n_bytes must equal rows x row bytes;
 * data must stay valid until gguf_writer_write returns. */
enc_status gguf_writer_add_tensor(gguf_writer *w, const char *name, enc_dtype dtype, int n_dims,
                                  const int64_t *shape, const void *data, size_t n_bytes);

/* Fills dst with a tensor's n_bytes when the file is written. */
typedef enc_status (*gguf_tensor_fill)(void *ctx, void *dst, size_t n_bytes);

/* A tensor as gguf_writer_add_tensor, whose bytes fill(ctx, ...) makes when
 * the file is written (into a buffer of the writer's). The writer free()s
 * ctx when it is freed (or at once when the tensor is refused). */
enc_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, enc_dtype dtype,
                                       int n_dims, const int64_t *shape, size_t n_bytes,
                                       gguf_tensor_fill fill, void *ctx);

/* progress(user, fraction of the tensor bytes written) after each tensor
 * gguf_writer_write writes. */
void gguf_writer_set_progress(gguf_writer *w, void (*progress)(void *user, double fraction),
                              void *user);

/* Write everything to path (through path.tmp and a rename). A fill's error
 * is returned, the temporary removed. */
enc_status gguf_writer_write(gguf_writer *w, const char *path);

#endif
