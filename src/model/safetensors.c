/* safetensors.c - open, validate and index Hugging Face safetensors files.
 *
 * One file:
 *
 *   0        8                    8 + header_len                  file size
 *   | u64 LE | JSON header ...  ' '|  data area: tensor bytes ...  |
 *   | len    | (space padded)      |  ^ data_offsets are relative here
 *
 * An archive is one file (st_open_file) or every shard named by a
 * model.safetensors.index.json (st_open_dir). Each file is mapped once and
 * stays mapped until st_close; tensors point into the mappings. All tensors
 * of all files sit in one array sorted by name, so st_find is a bsearch and
 * st_get(a, i) walks them in name order.
 *
 * Everything in a header is checked before a tensor is handed out: header
 * length, JSON, dtype, shape, offsets, size, alignment, overlaps and duplicate
 * names; every error names the file, the tensor and the byte offset (counted
 * from the start of the file) where there is one. */
#define _POSIX_C_SOURCE 200809L
#include "model/safetensors.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "base/mapfile.h"

enum {
    ST__HEADER_MAX = 100 * 1000 * 1000, /* bytes; the limit Hugging Face's reader uses */
};
#define ST__INT_MAX 9007199254740992.0 /* 2^53: largest integer a JSON double holds exactly */

typedef struct st__file {
    char *path;      /* malloc'd; tensors' `file` fields point here */
    enc_mapfile map; /* unmapped by st_close */
} st__file;

struct st_archive {
    st_tensor *tensors; /* [n_tensors], sorted by name once opened; names malloc'd */
    size_t n_tensors, n_tensors_cap;
    st__file *files; /* [n_files] */
    size_t n_files;
};

/* --- small helpers ----------------------------------------------------- */

static char *st__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* "dir/name"; malloc'd, NULL when out of memory. */
static char *st__join(const char *dir, const char *name)
{
    size_t nd = strlen(dir), nn = strlen(name);
    char *p = malloc(nd + 1 + nn + 1);
    if (!p) return NULL;
    memcpy(p, dir, nd);
    p[nd] = '/';
    memcpy(p + nd + 1, name, nn + 1);
    return p;
}

static int st__file_exists(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0;
}

/* A JSON number that is an exact non-negative integer below 2^53. */
static int st__json_uint(const cJSON *j, uint64_t *out)
{
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    if (!isfinite(d) || d < 0 || d > ST__INT_MAX || floor(d) != d) return 0;
    *out = (uint64_t)d;
    return 1;
}

static int st__dtype_parse(const char *s, enc_dtype *out)
{
    if (!strcmp(s, "F32"))
        *out = ENC_F32;
    else if (!strcmp(s, "BF16"))
        *out = ENC_BF16;
    else if (!strcmp(s, "F16"))
        *out = ENC_F16;
    else
        return 0;
    return 1;
}

static int st__cmp_name(const void *x, const void *y)
{
    const st_tensor *a = x, *b = y;
    return strcmp(a->name, b->name);
}

static int st__cmp_offset(const void *x, const void *y)
{
    const st_tensor *a = x, *b = y;
    if (a->file_offset != b->file_offset) return a->file_offset < b->file_offset ? -1 : 1;
    if (a->n_bytes != b->n_bytes) return a->n_bytes < b->n_bytes ? -1 : 1;
    return 0;
}

/* Append a zeroed tensor slot; NULL when out of memory. */
static st_tensor *st__push(st_archive *a)
{
    if (a->n_tensors == a->n_tensors_cap) {
        size_t cap = a->n_tensors_cap ? a->n_tensors_cap * 2 : 64;
        st_tensor *t = realloc(a->tensors, cap * sizeof *t);
        if (!t) return NULL;
        a->tensors = t;
        a->n_tensors_cap = cap;
    }
    st_tensor *t = &a->tensors[a->n_tensors++];
    memset(t, 0, sizeof *t);
    return t;
}

/* --- one tensor entry of a header -------------------------------------- */

/* Shape: 0..ST_MAX_DIMS non-negative integers; *n_elems gets their product. */
static enc_status st__parse_shape(const char *path, const char *name, const cJSON *shape,
                                  st_tensor *t, uint64_t *n_elems)
{
    if (!cJSON_IsArray(shape))
        return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s': \"shape\" is not an array", path, name);
    int n = cJSON_GetArraySize(shape);
    if (n > ST_MAX_DIMS)
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: tensor '%s': shape has %d dims (at most %d)",
                        path, name, n, ST_MAX_DIMS);
    uint64_t prod = 1;
    int i = 0;
    for (const cJSON *d = shape->child; d; d = d->next, i++) {
        uint64_t v = 0;
        if (!st__json_uint(d, &v))
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: tensor '%s': shape dim %d is not a non-negative integer", path,
                            name, i);
        if (v != 0 && prod > UINT64_MAX / v)
            return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s': shape overflows 64 bits", path, name);
        prod *= v;
        t->shape[i] = (int64_t)v;
    }
    t->n_dims = n;
    *n_elems = prod;
    return ENC_OK;
}

/* data_offsets: [begin, end], begin <= end <= data_size, relative to data_start. */
static enc_status st__parse_offsets(const char *path, const char *name, const cJSON *offs,
                                    size_t data_start, size_t data_size, uint64_t *begin,
                                    uint64_t *end)
{
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
        !st__json_uint(offs->child, begin) || !st__json_uint(offs->child->next, end))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s': \"data_offsets\" must be two non-negative integers "
                        "[begin, end]",
                        path, name);
    if (*begin > *end)
        return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] are reversed",
                        path, name, (unsigned long long)*begin, (unsigned long long)*end);
    if (*end > data_size)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s': data ends at byte offset %llu, beyond the end of the "
                        "file (%llu bytes)",
                        path, name, (unsigned long long)(data_start + *end),
                        (unsigned long long)(data_start + data_size));
    return ENC_OK;
}

/* Field `key` of a header entry (NULL when absent); one given twice is an
 * error (cJSON would keep the first, another reader the last: other bytes). */
static enc_status st__field(const char *path, const char *name, const cJSON *e, const char *key,
                            const cJSON **out)
{
    *out = NULL;
    for (const cJSON *f = e->child; f; f = f->next) {
        if (!f->string || strcmp(f->string, key) != 0) continue;
        if (*out)
            return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s': \"%s\" appears twice", path, name,
                            key);
        *out = f;
    }
    return ENC_OK;
}

/* Check one header entry and fill t (all but the name). */
static enc_status st__parse_entry(const char *path, const char *name, const cJSON *e,
                                  const enc_mapfile *m, size_t data_start, st_tensor *t)
{
    if (!cJSON_IsObject(e))
        return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s': header entry is not an object", path,
                        name);
    const cJSON *dtype, *shape, *offs;
    ENC_TRY(st__field(path, name, e, "dtype", &dtype));
    ENC_TRY(st__field(path, name, e, "shape", &shape));
    ENC_TRY(st__field(path, name, e, "data_offsets", &offs));
    const char *missing = !dtype ? "dtype" : !shape ? "shape" : !offs ? "data_offsets" : NULL;
    if (missing) return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s': no \"%s\"", path, name, missing);
    if (!cJSON_IsString(dtype))
        return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s': \"dtype\" is not a string", path, name);
    if (!st__dtype_parse(dtype->valuestring, &t->dtype))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: tensor '%s': dtype '%s' is not supported (F32, BF16 or F16)", path,
                        name, dtype->valuestring);

    uint64_t n_elems = 0, begin = 0, end = 0;
    ENC_TRY(st__parse_shape(path, name, shape, t, &n_elems));
    size_t data_size = m->size - data_start;
    ENC_TRY(st__parse_offsets(path, name, offs, data_start, data_size, &begin, &end));

    size_t esize = enc_dtype_size(t->dtype);
    if (n_elems > UINT64_MAX / esize || n_elems * esize != end - begin)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: tensor '%s': data at byte offset %llu is %llu bytes, but its shape "
                        "and dtype %s need %llu elements x %zu bytes",
                        path, name, (unsigned long long)(data_start + begin),
                        (unsigned long long)(end - begin), dtype->valuestring,
                        (unsigned long long)n_elems, esize);
    t->file_offset = data_start + (size_t)begin;
    t->n_bytes = (size_t)(end - begin);
    /* The kernels read elements in place, so each must be naturally aligned.
     * Writers pad the header to 8 bytes and order tensors so this holds. */
    if (t->file_offset % esize != 0)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s: tensor '%s': %s data at byte offset %zu is not %zu-byte aligned "
                        "(is the header padded to a multiple of 8?)",
                        path, name, dtype->valuestring, t->file_offset, esize);
    t->data = m->data ? m->data + t->file_offset : NULL;
    return ENC_OK;
}

/* --- one file ---------------------------------------------------------- */

/* Parse the header text (not NUL-terminated in the mapping, so copied). The
 * JSON must be followed by whitespace only. Caller cJSON_Delete()s *out. */
static enc_status st__parse_header_json(const char *path, const enc_mapfile *m, size_t hlen,
                                        cJSON **out)
{
    *out = NULL;
    char *text = malloc(hlen + 1);
    if (!text)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: no memory for a %zu-byte header", path, hlen);
    memcpy(text, m->data + 8, hlen);
    text[hlen] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 0);
    size_t pos = end ? (size_t)(end - text) : 0;
    if (!root) {
        free(text);
        return enc_fail(ENC_ERR_FORMAT, "%s: header is not valid JSON (at byte offset %zu)", path,
                        8 + pos);
    }
    while (pos < hlen && strchr(" \t\r\n", text[pos]) && text[pos] != '\0')
        pos++;
    free(text);
    if (pos != hlen) {
        cJSON_Delete(root);
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: header has trailing bytes after the JSON (at byte offset %zu)", path,
                        8 + pos);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return enc_fail(ENC_ERR_FORMAT, "%s: header is not a JSON object", path);
    }
    *out = root;
    return ENC_OK;
}

/* Within one file's tensors [t, t + n): no name twice, no two overlapping
 * byte ranges. Reorders the slice. */
static enc_status st__check_file_tensors(const char *path, st_tensor *t, size_t n)
{
    qsort(t, n, sizeof *t, st__cmp_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(t[i - 1].name, t[i].name))
            return enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s' appears twice in the header", path,
                            t[i].name);
    qsort(t, n, sizeof *t, st__cmp_offset);
    const st_tensor *prev = NULL; /* the non-empty tensor reaching furthest so far */
    for (size_t i = 0; i < n; i++) {
        if (t[i].n_bytes == 0) continue;
        if (prev && t[i].file_offset < prev->file_offset + prev->n_bytes)
            return enc_fail(ENC_ERR_FORMAT,
                            "%s: tensors '%s' (bytes %zu..%zu) and '%s' (bytes %zu..%zu) overlap",
                            path, prev->name, prev->file_offset, prev->file_offset + prev->n_bytes,
                            t[i].name, t[i].file_offset, t[i].file_offset + t[i].n_bytes);
        if (!prev || t[i].file_offset + t[i].n_bytes > prev->file_offset + prev->n_bytes)
            prev = &t[i];
    }
    return ENC_OK;
}

/* Append every tensor of the (already mapped) file f to a. */
static enc_status st__read_file(st_archive *a, const st__file *f)
{
    const char *path = f->path;
    const enc_mapfile *m = &f->map;
    if (m->size < 8)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: file is %zu bytes, too short for the 8-byte header length", path,
                        m->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | m->data[i];
    if (hlen > ST__HEADER_MAX)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: header length %llu at byte offset 0 is absurd (over %d bytes)", path,
                        (unsigned long long)hlen, ST__HEADER_MAX);
    if (hlen > m->size - 8)
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: header length %llu at byte offset 0 runs past the end of the file "
                        "(%zu bytes)",
                        path, (unsigned long long)hlen, m->size);

    cJSON *root = NULL;
    ENC_TRY(st__parse_header_json(path, m, (size_t)hlen, &root));
    size_t first = a->n_tensors;
    enc_status s = ENC_OK;
    for (const cJSON *e = root->child; e && s == ENC_OK; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (!cJSON_IsObject(e))
                s = enc_fail(ENC_ERR_FORMAT, "%s: \"__metadata__\" is not an object", path);
            continue;
        }
        st_tensor *t = st__push(a);
        if (!t || !(t->name = st__strdup(e->string))) {
            s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory reading the header", path);
            break;
        }
        t->file = path;
        s = st__parse_entry(path, e->string, e, m, 8 + (size_t)hlen, t);
    }
    cJSON_Delete(root);
    ENC_TRY(s);
    if (a->n_tensors == first) return ENC_OK; /* a->tensors may still be NULL */
    return st__check_file_tensors(path, a->tensors + first, a->n_tensors - first);
}

/* Map path and append its tensors. The path is copied. */
static enc_status st__add_file(st_archive *a, const char *path)
{
    st__file *f = &a->files[a->n_files];
    f->path = st__strdup(path);
    if (!f->path) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    a->n_files++; /* from here st_close frees it */
    ENC_TRY(mapfile_open(path, &f->map));
    return st__read_file(a, f);
}

/* Sort all tensors by name for st_find; a name in two files is an error. */
static enc_status st__index(st_archive *a)
{
    if (a->n_tensors) qsort(a->tensors, a->n_tensors, sizeof *a->tensors, st__cmp_name);
    for (size_t i = 1; i < a->n_tensors; i++) {
        const st_tensor *x = &a->tensors[i - 1], *y = &a->tensors[i];
        if (!strcmp(x->name, y->name))
            return enc_fail(ENC_ERR_FORMAT, "tensor '%s' is in both %s and %s", x->name, x->file,
                            y->file);
    }
    return ENC_OK;
}

static st_archive *st__alloc(size_t n_files)
{
    st_archive *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->files = calloc(n_files ? n_files : 1, sizeof *a->files);
    if (!a->files) {
        free(a);
        return NULL;
    }
    return a;
}

/* --- sharded checkpoints ----------------------------------------------- */

static int st__cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* A shard name must stay inside the model directory, spelled plainly (so
 * that one file has one name and is opened once). */
static int st__shard_name_ok(const char *s)
{
    if (!*s || s[0] == '/') return 0;
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0; /* "a//b", "./a", "../a": one spelling per file */
        p += n;
        if (*p == '/') p++;
    }
    return 1;
}

/* Check weight_map and collect its distinct file names into *names
 * (malloc'd array of pointers into the JSON; caller frees the array). */
static enc_status st__index_files(const char *ipath, const cJSON *wm, const char ***names,
                                  size_t *n_names)
{
    *names = NULL;
    *n_names = 0;
    if (!cJSON_IsObject(wm)) return enc_fail(ENC_ERR_FORMAT, "%s: no \"weight_map\" object", ipath);
    size_t n = (size_t)cJSON_GetArraySize(wm);
    if (n == 0) return enc_fail(ENC_ERR_FORMAT, "%s: \"weight_map\" is empty", ipath);
    const char **v = malloc(n * sizeof *v);
    const char **k = malloc(n * sizeof *k);
    if (!v || !k) {
        free(v);
        free(k);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", ipath);
    }
    size_t i = 0;
    enc_status s = ENC_OK;
    for (const cJSON *e = wm->child; e; e = e->next, i++) {
        k[i] = e->string;
        v[i] = cJSON_IsString(e) ? e->valuestring : NULL;
        if (!v[i] || !st__shard_name_ok(v[i])) {
            s = enc_fail(ENC_ERR_FORMAT,
                         "%s: weight_map: tensor '%s' maps to %s, not a file name in the model "
                         "directory",
                         ipath, e->string, v[i] ? v[i] : "a non-string");
            break;
        }
    }
    if (s == ENC_OK) {
        qsort(k, n, sizeof *k, st__cmp_str);
        for (i = 1; i < n && s == ENC_OK; i++)
            if (!strcmp(k[i - 1], k[i]))
                s = enc_fail(ENC_ERR_FORMAT, "%s: weight_map lists tensor '%s' twice", ipath, k[i]);
    }
    free(k);
    if (s != ENC_OK) {
        free(v);
        return s;
    }
    qsort(v, n, sizeof *v, st__cmp_str);
    size_t u = 0;
    for (i = 0; i < n; i++)
        if (u == 0 || strcmp(v[u - 1], v[i])) v[u++] = v[i];
    *names = v;
    *n_names = u;
    return ENC_OK;
}

/* Every weight_map entry must be in the file it names. */
static enc_status st__check_weight_map(const st_archive *a, const char *dir, const char *ipath,
                                       const cJSON *wm)
{
    for (const cJSON *e = wm->child; e; e = e->next) {
        const st_tensor *t = st_find(a, e->string);
        char *want = st__join(dir, e->valuestring);
        if (!want) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", ipath);
        enc_status s = ENC_OK;
        if (!t)
            s = enc_fail(ENC_ERR_FORMAT,
                         "%s: tensor '%s' is listed in %s, but that file has no such tensor", ipath,
                         e->string, want);
        else if (strcmp(t->file, want))
            s = enc_fail(ENC_ERR_FORMAT, "%s: tensor '%s' is listed in %s, but it is in %s", ipath,
                         e->string, want, t->file);
        free(want);
        ENC_TRY(s);
    }
    return ENC_OK;
}

static enc_status st__open_sharded(const char *dir, const char *ipath, st_archive **out)
{
    char *text = NULL;
    ENC_TRY(file_read_all(ipath, &text, NULL));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    size_t pos = end ? (size_t)(end - text) : 0;
    free(text);
    if (!root)
        return enc_fail(ENC_ERR_FORMAT, "%s: not valid JSON (at byte offset %zu)", ipath, pos);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return enc_fail(ENC_ERR_FORMAT, "%s: not a JSON object", ipath);
    }
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    const char **names = NULL;
    size_t n_names = 0;
    enc_status s = st__index_files(ipath, wm, &names, &n_names);
    st_archive *a = NULL;
    if (s == ENC_OK && !(a = st__alloc(n_names)))
        s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", ipath);
    for (size_t i = 0; s == ENC_OK && i < n_names; i++) {
        char *path = st__join(dir, names[i]);
        if (!path) {
            s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", ipath);
            break;
        }
        s = st__add_file(a, path);
        free(path);
        if (s == ENC_ERR_IO) s = enc_fail_context(s, "%s lists '%s'", ipath, names[i]);
    }
    if (s == ENC_OK) s = st__index(a);
    if (s == ENC_OK) s = st__check_weight_map(a, dir, ipath, wm);
    free(names);
    cJSON_Delete(root);
    if (s != ENC_OK) {
        st_close(a);
        return s;
    }
    *out = a;
    return ENC_OK;
}

/* --- public API -------------------------------------------------------- */

enc_status st_open_file(const char *path, st_archive **out)
{
    *out = NULL;
    st_archive *a = st__alloc(1);
    if (!a) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    enc_status s = st__add_file(a, path);
    if (s == ENC_OK) s = st__index(a);
    if (s != ENC_OK) {
        st_close(a);
        return s;
    }
    *out = a;
    return ENC_OK;
}

enc_status st_open_dir(const char *model_dir, st_archive **out)
{
    *out = NULL;
    char *ipath = st__join(model_dir, "model.safetensors.index.json");
    char *single = st__join(model_dir, "model.safetensors");
    enc_status s;
    if (!ipath || !single)
        s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: out of memory", model_dir);
    else if (st__file_exists(ipath)) /* the index wins when both are present */
        s = st__open_sharded(model_dir, ipath, out);
    else if (st__file_exists(single))
        s = st_open_file(single, out);
    else
        s = enc_fail(ENC_ERR_IO,
                     "%s: no checkpoint: looked for model.safetensors.index.json and "
                     "model.safetensors in this directory",
                     model_dir);
    free(ipath);
    free(single);
    return s;
}

void st_close(st_archive *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->n_tensors; i++)
        free((char *)a->tensors[i].name);
    for (size_t i = 0; i < a->n_files; i++) {
        mapfile_close(&a->files[i].map);
        free(a->files[i].path);
    }
    free(a->tensors);
    free(a->files);
    free(a);
}

size_t st_count(const st_archive *a)
{
    return a ? a->n_tensors : 0;
}

const st_tensor *st_get(const st_archive *a, size_t i)
{
    return a && i < a->n_tensors ? &a->tensors[i] : NULL;
}

const st_tensor *st_find(const st_archive *a, const char *name)
{
    if (!a || !a->n_tensors) return NULL;
    st_tensor key;
    key.name = name;
    return bsearch(&key, a->tensors, a->n_tensors, sizeof key, st__cmp_name);
}
