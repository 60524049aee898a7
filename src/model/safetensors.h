/* safetensors.h - reading tensors from Hugging Face safetensors files.
 *
 * A checkpoint is DIR/model.safetensors, or the shards listed by
 * DIR/model.safetensors.index.json ("weight_map": tensor name -> file). Each
 * file is memory-mapped; a tensor's data points into the mapping (no copy).
 *
 *   file: | u64 LE header_len | JSON header (header_len bytes) | data ... |
 *   header: {"name": {"dtype": "BF16", "shape": [r, c],
 *                     "data_offsets": [begin, end]}, ..., "__metadata__": {}}
 *   offsets are relative to the first byte after the header.
 *
 * Everything is validated when opened: the header length against the file
 * size, the JSON, each dtype, shape and offset range (inside the data area,
 * size == product(shape) * dtype size, no overlap), and for sharded
 * checkpoints that each tensor lives in the file the index names. Errors name
 * the file, the tensor and the byte offset. */
#ifndef ENC_MODEL_SAFETENSORS_H
#define ENC_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

enum { ST_MAX_DIMS = 4 };

typedef struct st_tensor {
    const char *name;     /* owned by the archive */
    const char *file;     /* path of the file that holds it */
    enc_dtype dtype;      /* F32, BF16 or F16 (others refused with a clear error) */
    int n_dims;
    int64_t shape[ST_MAX_DIMS];
    const void *data;     /* points into the mapping */
    size_t n_bytes;
    size_t file_offset;   /* byte offset of data within the file */
} st_tensor;

typedef struct st_archive st_archive;

/* Open a single-file or sharded checkpoint directory. */
enc_status st_open_dir(const char *model_dir, st_archive **out);
/* Open one .safetensors file. */
enc_status st_open_file(const char *path, st_archive **out);
void st_close(st_archive *a); /* NULL is a no-op */

size_t st_count(const st_archive *a);
const st_tensor *st_get(const st_archive *a, size_t i);
const st_tensor *st_find(const st_archive *a, const char *name); /* NULL if absent */

#endif
