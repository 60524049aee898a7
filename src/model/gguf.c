/* gguf.c - open, validate and index one GGUF v3 file.
 *
 *   0      4      8           16       24
 *   | GGUF | ver  | n_tensors | n_kv   | kv ... | tensor infos ... | pad | data |
 *                                                                        ^ aligned
 *
 * A cursor walks the header with bounds-checked reads; every length is
 * checked against the bytes left before anything is sized by it, so a lying
 * count or string length costs nothing. Keys and tensor names are copied
 * (NUL-terminated); values and tensor data stay in the mapping. Tensors are
 * then sorted by offset to check alignment, bounds and overlaps, and by name
 * for lookups. */
#define _POSIX_C_SOURCE 200809L
#include "model/gguf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mapfile.h"

enum {
    GGUF__MAX_DIMS = 4,
    GGUF__MAX_NAME = 1024, /* bytes of a key or tensor name; ggml's are far shorter */
};

struct gguf_file {
    char *path;
    enc_mapfile map;
    size_t alignment;
    size_t data_start; /* byte offset of the data section */
    gguf_kv *kvs;      /* [n_kv], file order; keys and strs malloc'd */
    size_t n_kv;
    const gguf_kv **kv_sorted; /* [n_kv] by key, for lookups */
    st_tensor *tensors;        /* [n_tensors] by name; names malloc'd */
    size_t n_tensors;
};

/* --- the cursor ------------------------------------------------------------ */

typedef struct gguf__cur {
    const unsigned char *p;
    size_t size, pos;
    const char *path;
} gguf__cur;

static size_t gguf__left(const gguf__cur *c)
{
    return c->size - c->pos;
}

/* Take n bytes; what names the field in the error. */
static enc_status gguf__take(gguf__cur *c, size_t n, const char *what, const unsigned char **out)
{
    if (n > gguf__left(c))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: truncated: %s at byte offset %zu needs %zu bytes, the file has %zu",
                        c->path, what, c->pos, n, gguf__left(c));
    *out = c->p + c->pos;
    c->pos += n;
    return ENC_OK;
}

static uint64_t gguf__le(const unsigned char *b, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static enc_status gguf__u32(gguf__cur *c, const char *what, uint32_t *out)
{
    const unsigned char *b = NULL;
    ENC_TRY(gguf__take(c, 4, what, &b));
    *out = (uint32_t)gguf__le(b, 4);
    return ENC_OK;
}

static enc_status gguf__u64(gguf__cur *c, const char *what, uint64_t *out)
{
    const unsigned char *b = NULL;
    ENC_TRY(gguf__take(c, 8, what, &b));
    *out = gguf__le(b, 8);
    return ENC_OK;
}

/* A string: u64 length, then the bytes (checked against what is left). */
static enc_status gguf__str(gguf__cur *c, const char *what, gguf_str *out)
{
    size_t at = c->pos;
    ENC_TRY(gguf__u64(c, what, &out->len));
    if (out->len > gguf__left(c))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: %s at byte offset %zu: string length %llu runs past the end of the "
                        "file (%zu bytes left)",
                        c->path, what, at, (unsigned long long)out->len, gguf__left(c));
    const unsigned char *b = NULL;
    ENC_TRY(gguf__take(c, (size_t)out->len, what, &b));
    out->p = (const char *)b;
    return ENC_OK;
}

/* A key or tensor name, copied and NUL-terminated (malloc'd into *out). */
static enc_status gguf__name(gguf__cur *c, const char *what, char **out)
{
    size_t at = c->pos;
    gguf_str s;
    ENC_TRY(gguf__str(c, what, &s));
    if (s.len == 0 || s.len > GGUF__MAX_NAME || memchr(s.p, '\0', (size_t)s.len))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: %s at byte offset %zu is empty, longer than %d bytes or holds a NUL",
                        c->path, what, at, GGUF__MAX_NAME);
    *out = malloc((size_t)s.len + 1);
    if (!*out) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: %s", c->path, what);
    memcpy(*out, s.p, (size_t)s.len);
    (*out)[s.len] = '\0';
    return ENC_OK;
}

/* --- metadata --------------------------------------------------------------- */

static const char *const gguf__type_names[GGUF_TYPE_COUNT] = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64",
};

const char *gguf_type_name(gguf_type t)
{
    return (unsigned)t < GGUF_TYPE_COUNT ? gguf__type_names[t] : "?";
}

size_t gguf_scalar_size(gguf_type t)
{
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL:
        return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
        return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32:
        return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
    case GGUF_TYPE_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

/* n strings: each is at least its 8-byte length, so n is checked against
 * the bytes left before the table of n is allocated. */
static enc_status gguf__read_strs(gguf__cur *c, gguf_kv *kv)
{
    if (kv->n > gguf__left(c) / 8)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key '%s' at byte offset %zu: %llu strings cannot fit in the %zu "
                        "bytes left",
                        c->path, kv->key, kv->offset, (unsigned long long)kv->n, gguf__left(c));
    gguf_str *s = malloc((size_t)(kv->n ? kv->n : 1) * sizeof *s);
    if (!s) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: key '%s'", c->path, kv->key);
    kv->strs = s; /* freed by gguf_close */
    char what[GGUF__MAX_NAME + 16];
    snprintf(what, sizeof what, "key '%s'", kv->key);
    for (uint64_t i = 0; i < kv->n; i++)
        ENC_TRY(gguf__str(c, what, &s[i]));
    return ENC_OK;
}

/* n scalars of kv->elem_type: bounds, and bools 0 or 1. */
static enc_status gguf__read_scalars(gguf__cur *c, gguf_kv *kv)
{
    size_t es = gguf_scalar_size(kv->elem_type);
    if (kv->n > gguf__left(c) / es)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key '%s' at byte offset %zu: %llu values of %s run past the end of "
                        "the file",
                        c->path, kv->key, kv->offset, (unsigned long long)kv->n,
                        gguf_type_name(kv->elem_type));
    size_t data_at = c->pos; /* an array's first element, after its type and count */
    ENC_TRY(gguf__take(c, (size_t)kv->n * es, kv->key, &kv->data));
    if (kv->elem_type == GGUF_TYPE_BOOL)
        for (uint64_t i = 0; i < kv->n; i++)
            if (kv->data[i] > 1)
                return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' at byte offset %zu: bool value %u",
                                c->path, kv->key, data_at + (size_t)i, kv->data[i]);
    return ENC_OK;
}

static enc_status gguf__value_type(gguf__cur *c, const char *key, int in_array, gguf_type *out)
{
    size_t at = c->pos;
    uint32_t t;
    ENC_TRY(gguf__u32(c, key, &t));
    if (t >= GGUF_TYPE_COUNT || (in_array && t == GGUF_TYPE_ARRAY))
        return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' at byte offset %zu: %s type %u is not valid",
                        c->path, key, at, in_array ? "array element" : "value", t);
    *out = (gguf_type)t;
    return ENC_OK;
}

static enc_status gguf__read_kv(gguf__cur *c, gguf_kv *kv)
{
    char *key = NULL;
    ENC_TRY(gguf__name(c, "metadata key", &key));
    kv->key = key; /* freed by gguf_close */
    ENC_TRY(gguf__value_type(c, key, 0, &kv->type));
    kv->offset = c->pos;
    kv->elem_type = kv->type;
    kv->n = 1;
    if (kv->type == GGUF_TYPE_ARRAY) {
        ENC_TRY(gguf__value_type(c, key, 1, &kv->elem_type));
        ENC_TRY(gguf__u64(c, key, &kv->n));
    }
    return kv->elem_type == GGUF_TYPE_STRING ? gguf__read_strs(c, kv) : gguf__read_scalars(c, kv);
}

static int gguf__cmp_kv(const void *x, const void *y)
{
    const gguf_kv *a = *(const gguf_kv *const *)x, *b = *(const gguf_kv *const *)y;
    return strcmp(a->key, b->key);
}

static enc_status gguf__index_kvs(gguf_file *g)
{
    g->kv_sorted = malloc((g->n_kv ? g->n_kv : 1) * sizeof *g->kv_sorted);
    if (!g->kv_sorted) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: metadata index", g->path);
    for (size_t i = 0; i < g->n_kv; i++)
        g->kv_sorted[i] = &g->kvs[i];
    qsort(g->kv_sorted, g->n_kv, sizeof *g->kv_sorted, gguf__cmp_kv);
    for (size_t i = 1; i < g->n_kv; i++)
        if (!strcmp(g->kv_sorted[i - 1]->key, g->kv_sorted[i]->key))
            return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' appears twice (byte offsets %zu and %zu)",
                            g->path, g->kv_sorted[i]->key, g->kv_sorted[i - 1]->offset,
                            g->kv_sorted[i]->offset);
    return ENC_OK;
}

/* general.alignment: a power of two, 32 when absent. */
static enc_status gguf__alignment(gguf_file *g)
{
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(g, "general.alignment");
    if (!kv) return ENC_OK;
    if (kv->type != GGUF_TYPE_UINT32)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key 'general.alignment' at byte offset %zu is %s, "
                        "not uint32",
                        g->path, kv->offset, gguf_type_name(kv->type));
    uint64_t a = gguf__le(kv->data, 4);
    if (a == 0 || (a & (a - 1)))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: key 'general.alignment' at byte offset %zu is %llu, "
                        "not a power of two",
                        g->path, kv->offset, (unsigned long long)a);
    g->alignment = (size_t)a;
    return ENC_OK;
}

/* --- tensor infos ------------------------------------------------------------ */

/* ggml.h's enum ggml_type; ids 4, 5 and 31-33, 36-38 were removed from it. */
static const char *const gguf__ggml_names[] = {
    "F32",     "F16",   "Q4_0",   "Q4_1",  NULL,    NULL,     "Q5_0", "Q5_1",    "Q8_0",
    "Q8_1",    "Q2_K",  "Q3_K",   "Q4_K",  "Q5_K",  "Q6_K",   "Q8_K", "IQ2_XXS", "IQ2_XS",
    "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8",   "I16",     "I32",
    "I64",     "F64",   "IQ1_M",  "BF16",  NULL,    NULL,     NULL,   "TQ1_0",   "TQ2_0",
    NULL,      NULL,    NULL,     "MXFP4", "NVFP4", "Q1_0",   "Q2_0",
};

const char *gguf_ggml_type_name(uint32_t ggml_type)
{
    size_t n = sizeof gguf__ggml_names / sizeof gguf__ggml_names[0];
    const char *s = ggml_type < n ? gguf__ggml_names[ggml_type] : NULL;
    return s ? s : "unknown";
}

int gguf_dtype_from_ggml(uint32_t ggml_type, enc_dtype *out)
{
    switch (ggml_type) {
    case GGML_TYPE_F32:
        *out = ENC_F32;
        return 1;
    case GGML_TYPE_F16:
        *out = ENC_F16;
        return 1;
    case GGML_TYPE_BF16:
        *out = ENC_BF16;
        return 1;
    case GGML_TYPE_Q4_0:
        *out = ENC_Q4_0;
        return 1;
    case GGML_TYPE_Q8_0:
        *out = ENC_Q8_0;
        return 1;
    case GGML_TYPE_Q4_K:
        *out = ENC_Q4_K;
        return 1;
    case GGML_TYPE_Q5_K:
        *out = ENC_Q5_K;
        return 1;
    case GGML_TYPE_Q6_K:
        *out = ENC_Q6_K;
        return 1;
    case GGML_TYPE_Q5_0:
        *out = ENC_Q5_0;
        return 1;
    case GGML_TYPE_IQ4_NL:
        *out = ENC_IQ4_NL;
        return 1;
    case GGML_TYPE_Q3_K:
        *out = ENC_Q3_K;
        return 1;
    case GGML_TYPE_IQ4_XS:
        *out = ENC_IQ4_XS;
        return 1;
    case GGML_TYPE_Q2_K:
        *out = ENC_Q2_K;
        return 1;
    case GGML_TYPE_Q4_1:
        *out = ENC_Q4_1;
        return 1;
    case GGML_TYPE_Q5_1:
        *out = ENC_Q5_1;
        return 1;
    default:
        return 0;
    }
}

uint32_t gguf_ggml_from_dtype(enc_dtype t)
{
    switch (t) {
    case ENC_F32:
        return GGML_TYPE_F32;
    case ENC_F16:
        return GGML_TYPE_F16;
    case ENC_BF16:
        return GGML_TYPE_BF16;
    case ENC_Q4_0:
        return GGML_TYPE_Q4_0;
    case ENC_Q8_0:
        return GGML_TYPE_Q8_0;
    case ENC_Q4_K:
        return GGML_TYPE_Q4_K;
    case ENC_Q5_K:
        return GGML_TYPE_Q5_K;
    case ENC_Q6_K:
        return GGML_TYPE_Q6_K;
    default:
        return UINT32_MAX;
    }
}

/* ne[0..n_dims) of tensor t: each below 2^40 (no real tensor comes close),
 * the product within 2^60 (so bytes, at most 4 per value, fit), ne[0] a
 * whole number of blocks. Fills t->shape
 * reversed and *bytes. */
static enc_status gguf__shape(gguf__cur *c, st_tensor *t, uint32_t n_dims, size_t at,
                              const uint64_t *ne, uint64_t *bytes)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < n_dims; i++) {
        if (ne[i] >= (1ull << 40) || (ne[i] && n > (1ull << 60) / ne[i]))
            return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s' at byte offset %zu: dims too large",
                            c->path, t->name, at);
        n *= ne[i];
        t->shape[n_dims - 1 - i] = (int64_t)ne[i];
    }
    int64_t be = enc_dtype_block_elems(t->dtype);
    if (ne[0] % (uint64_t)be)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s' at byte offset %zu: rows of %llu values are not whole "
                        "%s blocks of %lld",
                        c->path, t->name, at, (unsigned long long)ne[0], enc_dtype_name(t->dtype),
                        (long long)be);
    uint64_t rows = ne[0] ? n / ne[0] : 0;
    *bytes = rows * (uint64_t)enc_dtype_row_bytes(t->dtype, (int64_t)ne[0]);
    return ENC_OK;
}

/* One tensor info; t->file_offset is relative to the data section here. */
static enc_status gguf__read_tensor_info(gguf__cur *c, size_t alignment, st_tensor *t)
{
    size_t at = c->pos;
    char *name = NULL;
    ENC_TRY(gguf__name(c, "tensor name", &name));
    t->name = name; /* freed by gguf_close */
    uint32_t n_dims = 0, type = 0;
    ENC_TRY(gguf__u32(c, name, &n_dims));
    if (n_dims < 1 || n_dims > GGUF__MAX_DIMS)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s' at byte offset %zu has n_dims %u (1 to %d)", c->path, name,
                        at, n_dims, GGUF__MAX_DIMS);
    uint64_t ne[GGUF__MAX_DIMS], off = 0, bytes = 0;
    for (uint32_t i = 0; i < n_dims; i++)
        ENC_TRY(gguf__u64(c, name, &ne[i]));
    size_t type_at = c->pos;
    ENC_TRY(gguf__u32(c, name, &type));
    if (!gguf_dtype_from_ggml(type, &t->dtype))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: tensor '%s' at byte offset %zu: ggml type %u (%s) is not supported "
                        "(F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, "
                        "Q4_K, Q5_K, Q6_K, IQ4_XS)",
                        c->path, name, type_at, type, gguf_ggml_type_name(type));
    t->n_dims = (int)n_dims;
    ENC_TRY(gguf__shape(c, t, n_dims, at, ne, &bytes));
    ENC_TRY(gguf__u64(c, name, &off));
    if (off % alignment)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s' at byte offset %zu: data offset %llu is not a multiple "
                        "of the alignment %zu",
                        c->path, name, at, (unsigned long long)off, alignment);
    if (off > SIZE_MAX / 2 || bytes > SIZE_MAX / 2)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s' at byte offset %zu: offset or size too large", c->path,
                        name, at);
    t->file_offset = (size_t)off;
    t->n_bytes = (size_t)bytes;
    t->file = c->path;
    return ENC_OK;
}

static int gguf__cmp_offset(const void *x, const void *y)
{
    const st_tensor *a = x, *b = y;
    if (a->file_offset != b->file_offset) return a->file_offset < b->file_offset ? -1 : 1;
    return a->n_bytes < b->n_bytes ? -1 : a->n_bytes > b->n_bytes;
}

static int gguf__cmp_name(const void *x, const void *y)
{
    const st_tensor *a = x, *b = y;
    return strcmp(a->name, b->name);
}

/* Data inside the file and no two tensors overlapping; then point into the
 * mapping. Reorders the tensors. */
static enc_status gguf__place_tensors(gguf_file *g)
{
    st_tensor *t = g->tensors;
    size_t n = g->n_tensors, size = g->map.size;
    if (n && g->data_start > size)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: truncated: the data section would start at byte "
                        "offset %zu, past the end of the file (%zu bytes)",
                        g->path, g->data_start, size);
    qsort(t, n, sizeof *t, gguf__cmp_offset);
    const st_tensor *prev = NULL; /* the non-empty tensor reaching furthest */
    for (size_t i = 0; i < n; i++) {
        size_t begin = g->data_start + t[i].file_offset;
        if (t[i].file_offset > size - g->data_start || t[i].n_bytes > size - begin)
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: tensor '%s': data at byte offset %zu (%zu bytes) "
                            "runs past the end of the file (%zu bytes)",
                            g->path, t[i].name, begin, t[i].n_bytes, size);
        if (prev && t[i].n_bytes && t[i].file_offset < prev->file_offset + prev->n_bytes)
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: tensors '%s' (data bytes %zu..%zu) and '%s' (data "
                            "bytes %zu..%zu) overlap",
                            g->path, prev->name, g->data_start + prev->file_offset,
                            g->data_start + prev->file_offset + prev->n_bytes, t[i].name, begin,
                            begin + t[i].n_bytes);
        if (t[i].n_bytes &&
            (!prev || t[i].file_offset + t[i].n_bytes > prev->file_offset + prev->n_bytes))
            prev = &t[i];
    }
    for (size_t i = 0; i < n; i++) {
        t[i].file_offset += g->data_start;
        t[i].data = g->map.data + t[i].file_offset;
    }
    qsort(t, n, sizeof *t, gguf__cmp_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(t[i - 1].name, t[i].name))
            return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s' appears twice", g->path, t[i].name);
    return ENC_OK;
}

/* --- the whole file ---------------------------------------------------------- */

static enc_status gguf__header(gguf__cur *c, uint64_t *n_tensors, uint64_t *n_kv)
{
    const unsigned char *magic = NULL;
    uint32_t version;
    if (c->size < 24)
        return enc_fail(ENC_ERR_FORMAT, "%s: truncated: %zu bytes, a GGUF header needs 24", c->path,
                        c->size);
    ENC_TRY(gguf__take(c, 4, "magic", &magic));
    if (memcmp(magic, "GGUF", 4))
        return enc_fail(ENC_ERR_FORMAT, "%s: bad magic at byte offset 0 (not a GGUF file)",
                        c->path);
    ENC_TRY(gguf__u32(c, "version", &version));
    if (version != GGUF_VERSION)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: GGUF version %u at byte offset 4 is not "
                        "supported (encore reads version 3, little-endian)%s",
                        c->path, version, version > 0xffff ? "; a big-endian file?" : "");
    ENC_TRY(gguf__u64(c, "tensor count", n_tensors));
    ENC_TRY(gguf__u64(c, "metadata count", n_kv));
    /* A kv takes >= 8 + 1 + 4 + 1 bytes, a tensor info >= 8 + 1 + 4 + 8 + 4 + 8. */
    if (*n_kv > gguf__left(c) / 14 || *n_tensors > gguf__left(c) / 33)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: %llu metadata keys and %llu tensors (byte offsets "
                        "16 and 8) cannot fit in a %zu-byte file",
                        c->path, (unsigned long long)*n_kv, (unsigned long long)*n_tensors,
                        c->size);
    return ENC_OK;
}

static enc_status gguf__parse(gguf_file *g)
{
    gguf__cur c = {g->map.data, g->map.size, 0, g->path};
    uint64_t n_tensors = 0, n_kv = 0;
    ENC_TRY(gguf__header(&c, &n_tensors, &n_kv));
    /* One spare slot each: the entry being read when a read fails is freed too. */
    g->kvs = calloc((size_t)n_kv + 1, sizeof *g->kvs);
    g->tensors = calloc((size_t)n_tensors + 1, sizeof *g->tensors);
    if (!g->kvs || !g->tensors) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: header", g->path);
    for (; g->n_kv < n_kv; g->n_kv++)
        ENC_TRY(gguf__read_kv(&c, &g->kvs[g->n_kv]));
    ENC_TRY(gguf__index_kvs(g));
    ENC_TRY(gguf__alignment(g));
    for (; g->n_tensors < n_tensors; g->n_tensors++)
        ENC_TRY(gguf__read_tensor_info(&c, g->alignment, &g->tensors[g->n_tensors]));
    g->data_start = (c.pos + g->alignment - 1) / g->alignment * g->alignment;
    return gguf__place_tensors(g);
}

int gguf_is_model_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

enc_status gguf_check_model_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0) return ENC_OK;
    return enc_fail(ENC_ERR_IO, "%s: %s (a model is a checkpoint directory or a GGUF file)", path,
                    strerror(errno));
}

enc_status gguf_open(const char *path, gguf_file **out)
{
    *out = NULL;
    gguf_file *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(path))) {
        free(g);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    enc_status s = mapfile_open(path, &g->map);
    if (s == ENC_OK) s = gguf__parse(g);
    if (s != ENC_OK) {
        gguf_close(g);
        return s;
    }
    *out = g;
    return ENC_OK;
}

void gguf_close(gguf_file *g)
{
    if (!g) return;
    for (size_t i = 0; g->kvs && i < g->n_kv; i++) {
        free((char *)g->kvs[i].key);
        free((gguf_str *)g->kvs[i].strs);
    }
    if (g->kvs) { /* the spare slot: the kv being read when parsing failed */
        free((char *)g->kvs[g->n_kv].key);
        free((gguf_str *)g->kvs[g->n_kv].strs);
    }
    for (size_t i = 0; i <= g->n_tensors && g->tensors; i++)
        free((char *)g->tensors[i].name);
    free(g->kvs);
    free(g->kv_sorted);
    free(g->tensors);
    mapfile_close(&g->map);
    free(g->path);
    free(g);
}

/* --- lookups ------------------------------------------------------------------ */

const char *gguf_path(const gguf_file *g)
{
    return g->path;
}
size_t gguf_alignment(const gguf_file *g)
{
    return g->alignment;
}
size_t gguf_kv_count(const gguf_file *g)
{
    return g->n_kv;
}
const gguf_kv *gguf_kv_at(const gguf_file *g, size_t i)
{
    return i < g->n_kv ? &g->kvs[i] : NULL;
}
size_t gguf_tensor_count(const gguf_file *g)
{
    return g->n_tensors;
}

const st_tensor *gguf_tensor_at(const gguf_file *g, size_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key)
{
    if (!g->kv_sorted || !g->n_kv) return NULL;
    gguf_kv k = {.key = key};
    const gguf_kv *kp = &k;
    const gguf_kv **hit = bsearch(&kp, g->kv_sorted, g->n_kv, sizeof kp, gguf__cmp_kv);
    return hit ? *hit : NULL;
}

const st_tensor *gguf_find_tensor(const gguf_file *g, const char *name)
{
    if (!g->n_tensors) return NULL;
    st_tensor k = {.name = name};
    return bsearch(&k, g->tensors, g->n_tensors, sizeof k, gguf__cmp_name);
}

static int gguf__is_int(gguf_type t)
{
    return t <= GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64;
}

/* Element i of an integer array or scalar (its type checked by the caller). */
int64_t gguf_array_int(const gguf_kv *kv, uint64_t i)
{
    size_t es = gguf_scalar_size(kv->elem_type);
    uint64_t u = gguf__le(kv->data + i * es, (int)es);
    switch (kv->elem_type) {
    case GGUF_TYPE_INT8:
        return (int8_t)u;
    case GGUF_TYPE_INT16:
        return (int16_t)u;
    case GGUF_TYPE_INT32:
        return (int32_t)u;
    case GGUF_TYPE_INT64:
        return (int64_t)u;
    default:
        return (int64_t)u; /* unsigned; a u64 above INT64_MAX is refused by gguf_get_int */
    }
}

/* kv of `key` with type `want` (want_elem for arrays); NULL and *found = 0 if absent. */
static enc_status gguf__typed(const gguf_file *g, const char *key, int array, int (*ok)(gguf_type),
                              const char *what, const gguf_kv **out, int *found)
{
    *out = gguf_find_kv(g, key);
    *found = *out != NULL;
    if (!*out) return ENC_OK;
    if ((array != ((*out)->type == GGUF_TYPE_ARRAY)) || !ok((*out)->elem_type))
        return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' at byte offset %zu is %s%s, not %s", g->path,
                        key, (*out)->offset, (*out)->type == GGUF_TYPE_ARRAY ? "an array of " : "",
                        gguf_type_name((*out)->elem_type), what);
    return ENC_OK;
}

static int gguf__is_float(gguf_type t)
{
    return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64;
}
static int gguf__is_string(gguf_type t)
{
    return t == GGUF_TYPE_STRING;
}

enc_status gguf_get_int(const gguf_file *g, const char *key, int64_t *out, int *found)
{
    const gguf_kv *kv;
    ENC_TRY(gguf__typed(g, key, 0, gguf__is_int, "an integer", &kv, found));
    if (!kv) return ENC_OK;
    if (kv->type == GGUF_TYPE_UINT64 && gguf__le(kv->data, 8) > (uint64_t)INT64_MAX)
        return enc_fail(ENC_ERR_FORMAT, "%s: key '%s' at byte offset %zu is out of range", g->path,
                        key, kv->offset);
    *out = gguf_array_int(kv, 0);
    return ENC_OK;
}

enc_status gguf_get_float(const gguf_file *g, const char *key, double *out, int *found)
{
    const gguf_kv *kv;
    ENC_TRY(gguf__typed(g, key, 0, gguf__is_float, "a float", &kv, found));
    if (!kv) return ENC_OK;
    uint64_t u = gguf__le(kv->data, (int)gguf_scalar_size(kv->type));
    if (kv->type == GGUF_TYPE_FLOAT32) {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        *out = f;
    } else {
        memcpy(out, &u, 8);
    }
    return ENC_OK;
}

enc_status gguf_get_str(const gguf_file *g, const char *key, gguf_str *out, int *found)
{
    const gguf_kv *kv;
    ENC_TRY(gguf__typed(g, key, 0, gguf__is_string, "a string", &kv, found));
    if (kv) *out = kv->strs[0];
    return ENC_OK;
}

enc_status gguf_get_str_array(const gguf_file *g, const char *key, const gguf_str **out,
                              uint64_t *n, int *found)
{
    const gguf_kv *kv;
    ENC_TRY(gguf__typed(g, key, 1, gguf__is_string, "an array of strings", &kv, found));
    if (kv) *out = kv->strs, *n = kv->n;
    return ENC_OK;
}

enc_status gguf_get_int_array(const gguf_file *g, const char *key, const gguf_kv **out, int *found)
{
    return gguf__typed(g, key, 1, gguf__is_int, "an array of integers", out, found);
}
