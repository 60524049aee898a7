/* gguf_write.c - build a GGUF v3 file in memory (header) and write it out.
 *
 *   kv bytes   : serialized as added (key, type, value), little-endian
 *   tensor list: name, dtype, shape, data (or a fill function that makes
 *                it at write time); offsets given at write time
 *
 * The file is | header | kv bytes | tensor infos | pad | tensor 0 | pad |
 * tensor 1 | ...; every tensor starts at a multiple of the alignment from
 * the start of the data section. */
#define _POSIX_C_SOURCE 200809L
#include "model/gguf_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/gguf.h"

typedef struct gguf__wtensor {
    char *name;
    enc_dtype dtype;
    int n_dims;
    int64_t shape[4];
    const void *data; /* NULL for a fill tensor */
    size_t n_bytes;
    gguf_tensor_fill fill;
    void *fill_ctx; /* free()d with the writer */
} gguf__wtensor;

typedef struct gguf__buf {
    unsigned char *p;
    size_t len, cap;
} gguf__buf;

struct gguf_writer {
    gguf__buf kv;
    uint64_t n_kv;
    gguf__wtensor *tensors;
    size_t n_tensors, cap_tensors;
    uint32_t alignment;
    void (*progress)(void *user, double fraction);
    void *progress_user;
};

/* --- bytes ------------------------------------------------------------------ */

static enc_status gguf__put(gguf__buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "gguf writer: %zu bytes of metadata", cap);
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    return ENC_OK;
}

static enc_status gguf__put_le(gguf__buf *b, uint64_t v, int n)
{
    unsigned char x[8];
    for (int i = 0; i < n; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    return gguf__put(b, x, (size_t)n);
}

static enc_status gguf__put_str(gguf__buf *b, const char *s, size_t len)
{
    ENC_TRY(gguf__put_le(b, len, 8));
    return gguf__put(b, s, len);
}

/* The key and the value type of a new kv. */
static enc_status gguf__key(gguf_writer *w, const char *key, gguf_type t)
{
    w->n_kv++;
    ENC_TRY(gguf__put_str(&w->kv, key, strlen(key)));
    return gguf__put_le(&w->kv, (uint64_t)t, 4);
}

/* --- metadata ---------------------------------------------------------------- */

enc_status gguf_writer_create(gguf_writer **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "gguf writer");
    (*out)->alignment = GGUF_DEFAULT_ALIGNMENT;
    return ENC_OK;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n_tensors; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].fill_ctx);
    }
    free(w->tensors);
    free(w->kv.p);
    free(w);
}

enc_status gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment)
{
    if (!alignment || (alignment & (alignment - 1)))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "gguf writer: alignment %u is not a power of two",
                        alignment);
    w->alignment = alignment;
    return gguf_writer_add_u32(w, "general.alignment", alignment);
}

enc_status gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v)
{
    ENC_TRY(gguf__key(w, key, GGUF_TYPE_UINT32));
    return gguf__put_le(&w->kv, v, 4);
}

enc_status gguf_writer_add_i32(gguf_writer *w, const char *key, int32_t v)
{
    ENC_TRY(gguf__key(w, key, GGUF_TYPE_INT32));
    return gguf__put_le(&w->kv, (uint32_t)v, 4);
}

enc_status gguf_writer_add_f32(gguf_writer *w, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    ENC_TRY(gguf__key(w, key, GGUF_TYPE_FLOAT32));
    return gguf__put_le(&w->kv, u, 4);
}

enc_status gguf_writer_add_bool(gguf_writer *w, const char *key, int v)
{
    ENC_TRY(gguf__key(w, key, GGUF_TYPE_BOOL));
    return gguf__put_le(&w->kv, v ? 1 : 0, 1);
}

enc_status gguf_writer_add_str(gguf_writer *w, const char *key, const char *s, size_t len)
{
    ENC_TRY(gguf__key(w, key, GGUF_TYPE_STRING));
    return gguf__put_str(&w->kv, s, len);
}

/* An array's key, element type and count. */
static enc_status gguf__array(gguf_writer *w, const char *key, gguf_type elem, size_t n)
{
    ENC_TRY(gguf__key(w, key, GGUF_TYPE_ARRAY));
    ENC_TRY(gguf__put_le(&w->kv, (uint64_t)elem, 4));
    return gguf__put_le(&w->kv, n, 8);
}

enc_status gguf_writer_add_str_array(gguf_writer *w, const char *key, const char *const *strs,
                                     const size_t *lens, size_t n)
{
    ENC_TRY(gguf__array(w, key, GGUF_TYPE_STRING, n));
    for (size_t i = 0; i < n; i++)
        ENC_TRY(gguf__put_str(&w->kv, strs[i], lens ? lens[i] : strlen(strs[i])));
    return ENC_OK;
}

enc_status gguf_writer_add_i32_array(gguf_writer *w, const char *key, const int32_t *v, size_t n)
{
    ENC_TRY(gguf__array(w, key, GGUF_TYPE_INT32, n));
    for (size_t i = 0; i < n; i++)
        ENC_TRY(gguf__put_le(&w->kv, (uint32_t)v[i], 4));
    return ENC_OK;
}

enc_status gguf_writer_add_kv(gguf_writer *w, const gguf_kv *kv)
{
    size_t es = gguf_scalar_size(kv->elem_type);
    if (kv->type == GGUF_TYPE_ARRAY)
        ENC_TRY(gguf__array(w, kv->key, kv->elem_type, kv->n));
    else
        ENC_TRY(gguf__key(w, kv->key, kv->type));
    if (kv->elem_type == GGUF_TYPE_STRING) {
        for (uint64_t i = 0; i < kv->n; i++)
            ENC_TRY(gguf__put_str(&w->kv, kv->strs[i].p, kv->strs[i].len));
        return ENC_OK;
    }
    if (!es) /* an array of arrays, which gguf_open refuses */
        return enc_fail(ENC_ERR_UNSUPPORTED, "gguf writer: key '%s': nested arrays", kv->key);
    return gguf__put(&w->kv, kv->data, es * kv->n);
}

/* --- tensors ------------------------------------------------------------------ */

static size_t gguf__tensor_bytes(enc_dtype dtype, int n_dims, const int64_t *shape)
{
    size_t rows = 1;
    for (int i = 0; i + 1 < n_dims; i++)
        rows *= (size_t)shape[i];
    return rows * enc_dtype_row_bytes(dtype, shape[n_dims - 1]);
}

/* A new tensor record (its data or fill set by the caller). */
static enc_status gguf__add_tensor(gguf_writer *w, const char *name, enc_dtype dtype, int n_dims,
                                   const int64_t *shape, size_t n_bytes, gguf__wtensor **out)
{
    if (n_dims < 1 || n_dims > 4 || gguf_ggml_from_dtype(dtype) == UINT32_MAX ||
        gguf__tensor_bytes(dtype, n_dims, shape) != n_bytes)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "gguf writer: tensor '%s': %d dims of %s in %zu bytes do not fit", name,
                        n_dims, enc_dtype_name(dtype), n_bytes);
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        gguf__wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "gguf writer: tensor '%s'", name);
        w->tensors = t;
        w->cap_tensors = cap;
    }
    gguf__wtensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name)))
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "gguf writer: '%s'", name);
    t->dtype = dtype;
    t->n_dims = n_dims;
    memcpy(t->shape, shape, (size_t)n_dims * sizeof *shape);
    t->n_bytes = n_bytes;
    w->n_tensors++;
    *out = t;
    return ENC_OK;
}

enc_status gguf_writer_add_tensor(gguf_writer *w, const char *name, enc_dtype dtype, int n_dims,
                                  const int64_t *shape, const void *data, size_t n_bytes)
{
    gguf__wtensor *t = NULL;
    ENC_TRY(gguf__add_tensor(w, name, dtype, n_dims, shape, n_bytes, &t));
    t->data = data;
    return ENC_OK;
}

enc_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, enc_dtype dtype,
                                       int n_dims, const int64_t *shape, size_t n_bytes,
                                       gguf_tensor_fill fill, void *ctx)
{
    gguf__wtensor *t = NULL;
    enc_status s = gguf__add_tensor(w, name, dtype, n_dims, shape, n_bytes, &t);
    if (s != ENC_OK) {
        free(ctx);
        return s;
    }
    t->fill = fill;
    t->fill_ctx = ctx;
    return ENC_OK;
}

void gguf_writer_set_progress(gguf_writer *w, void (*progress)(void *user, double fraction),
                              void *user)
{
    w->progress = progress;
    w->progress_user = user;
}

static size_t gguf__align(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* The header: magic, counts, kvs and tensor infos with their offsets. */
static enc_status gguf__header_bytes(const gguf_writer *w, gguf__buf *h)
{
    ENC_TRY(gguf__put(h, "GGUF", 4));
    ENC_TRY(gguf__put_le(h, GGUF_VERSION, 4));
    ENC_TRY(gguf__put_le(h, w->n_tensors, 8));
    ENC_TRY(gguf__put_le(h, w->n_kv, 8));
    ENC_TRY(gguf__put(h, w->kv.p, w->kv.len));
    size_t off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const gguf__wtensor *t = &w->tensors[i];
        ENC_TRY(gguf__put_str(h, t->name, strlen(t->name)));
        ENC_TRY(gguf__put_le(h, (uint64_t)t->n_dims, 4));
        for (int d = t->n_dims - 1; d >= 0; d--)
            ENC_TRY(gguf__put_le(h, (uint64_t)t->shape[d], 8));
        ENC_TRY(gguf__put_le(h, gguf_ggml_from_dtype(t->dtype), 4));
        ENC_TRY(gguf__put_le(h, off, 8));
        off = gguf__align(off + t->n_bytes, w->alignment);
    }
    static const unsigned char zero[64];
    size_t pad = gguf__align(h->len, w->alignment) - h->len;
    while (pad) {
        size_t k = pad < sizeof zero ? pad : sizeof zero;
        ENC_TRY(gguf__put(h, zero, k));
        pad -= k;
    }
    return ENC_OK;
}

static enc_status gguf__write_all(FILE *f, const void *p, size_t n, const char *tmp)
{
    if (fwrite(p, 1, n, f) == n) return ENC_OK;
    return enc_fail(ENC_ERR_IO, "%s: cannot write %zu bytes: %s", tmp, n, strerror(errno));
}

/* t's bytes: its data, or its fill's into *buf (grown as needed). */
static enc_status gguf__tensor_data(const gguf__wtensor *t, unsigned char **buf, size_t *cap,
                                    const void **out)
{
    if (!t->fill) {
        *out = t->data;
        return ENC_OK;
    }
    if (t->n_bytes > *cap) {
        free(*buf);
        *cap = 0;
        if (!(*buf = malloc(t->n_bytes)))
            return enc_fail(ENC_ERR_OUT_OF_MEMORY, "gguf writer: tensor '%s': %zu bytes", t->name,
                            t->n_bytes);
        *cap = t->n_bytes;
    }
    *out = *buf;
    return t->fill(t->fill_ctx, *buf, t->n_bytes);
}

static enc_status gguf__write_body(const gguf_writer *w, FILE *f, const gguf__buf *h,
                                   const char *tmp)
{
    static const unsigned char zero[64];
    unsigned char *buf = NULL;
    size_t cap = 0, total = 0, done = 0;
    for (size_t i = 0; i < w->n_tensors; i++)
        total += w->tensors[i].n_bytes;
    enc_status s = gguf__write_all(f, h->p, h->len, tmp);
    for (size_t i = 0; s == ENC_OK && i < w->n_tensors; i++) {
        const gguf__wtensor *t = &w->tensors[i];
        size_t pad = i + 1 < w->n_tensors ? gguf__align(t->n_bytes, w->alignment) - t->n_bytes : 0;
        const void *data = NULL;
        s = gguf__tensor_data(t, &buf, &cap, &data);
        if (s == ENC_OK) s = gguf__write_all(f, data, t->n_bytes, tmp);
        for (; s == ENC_OK && pad; pad -= pad < sizeof zero ? pad : sizeof zero)
            s = gguf__write_all(f, zero, pad < sizeof zero ? pad : sizeof zero, tmp);
        done += t->n_bytes;
        if (s == ENC_OK && w->progress)
            w->progress(w->progress_user, total ? (double)done / (double)total : 1.0);
    }
    free(buf);
    return s;
}

enc_status gguf_writer_write(gguf_writer *w, const char *path)
{
    struct stat st; /* the file goes in through a rename: it would replace a device or a FIFO */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return enc_fail(ENC_ERR_IO, "%s: exists and is not a regular file", path);
    gguf__buf h = {0};
    enc_status s = gguf__header_bytes(w, &h);
    size_t n = strlen(path) + sizeof ".tmp";
    char *tmp = malloc(n);
    if (s == ENC_OK && !tmp) s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s", path);
    if (s == ENC_OK) {
        snprintf(tmp, n, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        s = f ? gguf__write_body(w, f, &h, tmp)
              : enc_fail(ENC_ERR_IO, "%s: %s", tmp, strerror(errno));
        if (f && fclose(f) != 0 && s == ENC_OK)
            s = enc_fail(ENC_ERR_IO, "%s: %s", tmp, strerror(errno));
        if (s == ENC_OK && rename(tmp, path) != 0)
            s = enc_fail(ENC_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        if (s != ENC_OK) {
            s = enc_fail_context(s, "%s: cannot write the GGUF file", path);
            remove(tmp);
        }
    }
    free(tmp);
    free(h.p);
    return s;
}
