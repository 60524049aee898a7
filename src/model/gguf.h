/* gguf.h - reading GGUF v3 files (ggml's single-file model format).
 *
 * A file is memory-mapped; metadata values and tensor data point into the
 * mapping (no copy). Little-endian only:
 *
 *   | "GGUF" | u32 version = 3 | u64 n_tensors | u64 n_kv |
 *   | n_kv x (string key, u32 type, value) |
 *   | n_tensors x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type,
 *                  u64 offset) |
 *   | padding to general.alignment (default 32) | data: tensor bytes ... |
 *
 *   string = u64 length + bytes (no NUL); array = u32 element type + u64 n
 *   + n elements; tensor offsets are relative to the start of the data.
 *
 * ggml lists dims contiguous-first (ne[0] is the row length); encore's shapes
 * are row-major, so st_tensor.shape is ne reversed. Everything is validated
 * when the file is opened (lengths against the file size before anything is
 * allocated, types, duplicate keys and tensors, alignment, offsets inside the
 * data, no overlap, sizes = rows x enc_dtype_row_bytes); every error names
 * the file, the key or tensor and the byte offset. */
#ifndef ENC_MODEL_GGUF_H
#define ENC_MODEL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "model/safetensors.h" /* st_tensor: the record of a mapped tensor */

enum { GGUF_VERSION = 3, GGUF_DEFAULT_ALIGNMENT = 32 };

/* Metadata value types, as numbered in the file. */
typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

/* ggml tensor type ids of the types encore reads (ggml.h's enum ggml_type). */
enum {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_BF16 = 30,
};

/* A string inside the mapping: len bytes, not NUL-terminated. */
typedef struct gguf_str {
    const char *p;
    uint64_t len;
} gguf_str;

typedef struct gguf_kv {
    const char *key;           /* NUL-terminated, owned by the file */
    gguf_type type;            /* GGUF_TYPE_ARRAY for arrays */
    gguf_type elem_type;       /* arrays: the element type; else == type */
    uint64_t n;                /* elements (1 for a scalar) */
    const unsigned char *data; /* the first element in the mapping (not for strings) */
    const gguf_str *strs;      /* strings: [n], owned by the file; else NULL */
    size_t offset;             /* byte offset of the value in the file */
} gguf_kv;

typedef struct gguf_file gguf_file;

/* 1 when path names something other than a directory: a model given as a
 * file is read as GGUF (a directory is a Hugging Face checkpoint). */
int gguf_is_model_file(const char *path);
/* ENC_OK when path exists; else an error naming it and the OS's reason (a
 * mistyped model path is reported as itself, not as a file missing inside
 * it). */
enc_status gguf_check_model_path(const char *path);

/* Open and validate path. On failure *out is NULL and the last error names
 * the file, the key or tensor and the byte offset. */
enc_status gguf_open(const char *path, gguf_file **out);
void gguf_close(gguf_file *g); /* NULL is a no-op */

const char *gguf_path(const gguf_file *g);
size_t gguf_alignment(const gguf_file *g);

size_t gguf_kv_count(const gguf_file *g);
const gguf_kv *gguf_kv_at(const gguf_file *g, size_t i);          /* in file order */
const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key); /* NULL if absent */

/* Typed getters. An absent key gives *found = 0 and ENC_OK; a key of another
 * type is an error naming it and its offset. Integers of any width and sign
 * read as int64 (a u64 above INT64_MAX is an error); floats of either width
 * as double. */
enc_status gguf_get_int(const gguf_file *g, const char *key, int64_t *out, int *found);
enc_status gguf_get_float(const gguf_file *g, const char *key, double *out, int *found);
enc_status gguf_get_str(const gguf_file *g, const char *key, gguf_str *out, int *found);
/* An array of strings: *out points at n strings owned by the file. */
enc_status gguf_get_str_array(const gguf_file *g, const char *key, const gguf_str **out,
                              uint64_t *n, int *found);
/* An array of integers (any width): *out is the kv, read with gguf_array_int. */
enc_status gguf_get_int_array(const gguf_file *g, const char *key, const gguf_kv **out, int *found);
int64_t gguf_array_int(const gguf_kv *kv, uint64_t i);

size_t gguf_tensor_count(const gguf_file *g);
const st_tensor *gguf_tensor_at(const gguf_file *g, size_t i);           /* in name order */
const st_tensor *gguf_find_tensor(const gguf_file *g, const char *name); /* NULL if absent */

/* The GGUF name of a value type and the enc_dtype of a ggml type id (0 when
 * encore does not read it; *out untouched). */
const char *gguf_type_name(gguf_type t);
/* Bytes of one scalar of type t; 0 for strings and arrays. */
size_t gguf_scalar_size(gguf_type t);
/* ggml's name of a tensor type id ("Q5_0", "IQ4_XS", ...), "unknown" for an
 * id ggml does not define, so that a refusal names the type a file holds. */
const char *gguf_ggml_type_name(uint32_t ggml_type);
int gguf_dtype_from_ggml(uint32_t ggml_type, enc_dtype *out);
uint32_t gguf_ggml_from_dtype(enc_dtype t); /* UINT32_MAX for I32 */

#endif
