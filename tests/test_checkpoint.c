/* test_checkpoint.c - checkpoint loading: safetensors, config.json, and the
 * Qwen3 tensor set, against files this test writes itself.
 *
 * The writer here is independent of src/model/safetensors.c: it lays out the
 * bytes by hand (u64 LE length, space-padded JSON text, raw element bits), so
 * a valid file read back checks the reader against the format, and each bad
 * file checks that the reader refuses it with the right status and a message
 * naming the file and the tensor / field / byte offset. Every file lives in a
 * mkdtemp directory removed at the end. Runs under ASan/UBSan in the
 * sanitizer build, so a crash or a leak fails it too. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dtype.h"
#include "base/status.h"
#include "model/config.h"
#include "model/generation_config.h"
#include "model/qwen3_tensors.h"
#include "model/safetensors.h"

static int n_checks, n_failed;
static char g_root[64]; /* the temp directory */

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        n_checks++;                                                                                \
        if (!(cond)) {                                                                             \
            n_failed++;                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* --- files ------------------------------------------------------------- */

/* g_root/rel in a static buffer (one at a time). */
static const char *path_of(const char *rel)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", g_root, rel);
    return buf;
}

static void make_dir(const char *rel)
{
    if (mkdir(path_of(rel), 0700) != 0) {
        perror(path_of(rel));
        exit(1);
    }
}

static void write_bytes(const char *rel, const void *data, size_t n)
{
    FILE *f = fopen(path_of(rel), "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        perror(path_of(rel));
        exit(1);
    }
}

static void write_text(const char *rel, const char *text)
{
    write_bytes(rel, text, strlen(text));
}

static void put_u64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A safetensors file: `header` padded with spaces so the data area starts at
 * a multiple of 8, then `data` (n_data bytes; zeros when data is NULL).
 * Returns the header length written into the first 8 bytes. */
static size_t write_st(const char *rel, const char *header, const void *data, size_t n_data)
{
    size_t hlen = strlen(header);
    size_t padded = (hlen + 7) / 8 * 8;
    unsigned char *buf = calloc(1, 8 + padded + n_data + 1);
    put_u64le(buf, padded);
    memcpy(buf + 8, header, hlen);
    memset(buf + 8 + hlen, ' ', padded - hlen);
    if (data) memcpy(buf + 8 + padded, data, n_data);
    write_bytes(rel, buf, 8 + padded + n_data);
    free(buf);
    return padded;
}

/* A growable string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = (b->n + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

/* A tensor to write. data NULL: a byte pattern. */
typedef struct tspec {
    const char *name;
    const char *dtype; /* "F32", "BF16", "F16" */
    int n_dims;
    int64_t shape[4];
    const void *data;
} tspec;

static size_t dtype_bytes(const char *d)
{
    return strcmp(d, "F32") ? 2 : 4;
}

static size_t tspec_bytes(const tspec *t)
{
    size_t n = dtype_bytes(t->dtype);
    for (int i = 0; i < t->n_dims; i++)
        n *= (size_t)t->shape[i];
    return n;
}

/* Write tensors ts[0..n) as one safetensors file, each tensor's data aligned
 * to its element size, in the order given. */
static void write_tensors(const char *rel, const tspec *ts, size_t n)
{
    sbuf h = {0};
    size_t off = 0;
    sb_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < n; i++) {
        size_t es = dtype_bytes(ts[i].dtype);
        off = (off + es - 1) / es * es;
        sb_printf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", ts[i].name, ts[i].dtype);
        for (int d = 0; d < ts[i].n_dims; d++)
            sb_printf(&h, "%s%lld", d ? "," : "", (long long)ts[i].shape[d]);
        sb_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + tspec_bytes(&ts[i]));
        off += tspec_bytes(&ts[i]);
    }
    sb_printf(&h, "}");
    unsigned char *data = calloc(1, off + 1);
    off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t es = dtype_bytes(ts[i].dtype), nb = tspec_bytes(&ts[i]);
        off = (off + es - 1) / es * es;
        for (size_t k = 0; k < nb; k++)
            data[off + k] = ts[i].data ? ((const unsigned char *)ts[i].data)[k]
                                       : (unsigned char)(i * 31 + k * 7 + 1);
        off += nb;
    }
    write_st(rel, h.s, data, off);
    free(data);
    free(h.s);
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
    (void)s, (void)flag, (void)f;
    return remove(p);
}

/* --- checks on failures ------------------------------------------------ */

/* The status is `want` and the last error contains every string of the
 * NULL-terminated list. */
static void expect_error(const char *what, enc_status got, enc_status want, ...)
{
    const char *msg = enc_last_error();
    int ok = got == want;
    va_list ap;
    va_start(ap, want);
    for (const char *s; (s = va_arg(ap, const char *));) {
        if (!strstr(msg, s)) {
            fprintf(stderr, "  [%s] message lacks \"%s\"\n", what, s);
            ok = 0;
        }
    }
    va_end(ap);
    n_checks++;
    if (!ok) {
        n_failed++;
        fprintf(stderr, "FAIL [%s]: status '%s' (want '%s'), message: %s\n", what,
                enc_status_to_string(got), enc_status_to_string(want), msg);
    } else {
        printf("ok   [%s] %s\n", what, msg);
    }
}

/* Open g_root/rel with st_open_file, expecting failure. */
static void expect_st_fail(const char *rel, enc_status want, const char *s1, const char *s2,
                           const char *s3)
{
    st_archive *const poison = (st_archive *)&poison;
    st_archive *a = poison; /* st_open_file must reset it to NULL */
    enc_clear_error();
    enc_status s = st_open_file(path_of(rel), &a);
    CHECK(a == NULL);
    if (a != poison) st_close(a);
    expect_error(rel, s, want, rel, s1, s2, s3, (const char *)NULL);
}

/* A one-tensor file whose entry is `entry` (the JSON after the name). */
static void bad_entry(const char *rel, const char *entry, size_t n_data, enc_status want,
                      const char *s1, const char *s2)
{
    char h[512];
    snprintf(h, sizeof h, "{\"w.bad\":%s}", entry);
    write_st(rel, h, NULL, n_data);
    expect_st_fail(rel, want, "w.bad", s1, s2);
}

/* --- safetensors: a valid single file ---------------------------------- */

static void test_single_valid(void)
{
    const float a_vals[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
    const uint16_t b_bits[4] = {0x3F80, 0xC000, 0x4049, 0x0000}; /* bf16 1, -2, 3.140625, 0 */
    const uint16_t c_bits[4] = {0x3C00, 0xC000, 0x3800, 0x7BFF}; /* f16 1, -2, 0.5, 65504 */
    const float d_val = 42.0f;
    unsigned char data[44];
    memcpy(data, a_vals, 24); /* the test host is little-endian, as the format */
    memcpy(data + 24, b_bits, 8);
    memcpy(data + 32, c_bits, 8);
    memcpy(data + 40, &d_val, 4);
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},"
                    "\"c.f16\":{\"dtype\":\"F16\",\"shape\":[2,1,1,2],\"data_offsets\":[32,40]},"
                    "\"a.f32\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                    "\"e.empty\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[44,44]},"
                    "\"d.scalar\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[40,44]},"
                    "\"b.bf16\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}";
    size_t hlen = write_st("single.safetensors", h, data, sizeof data);

    st_archive *a = NULL;
    enc_status s = st_open_file(path_of("single.safetensors"), &a);
    CHECK(s == ENC_OK);
    if (s != ENC_OK) {
        fprintf(stderr, "  %s\n", enc_last_error());
        return;
    }
    CHECK(st_count(a) == 5);
    CHECK(st_find(a, "nope") == NULL);
    CHECK(st_get(a, 5) == NULL);
    /* st_get walks the tensors in name order */
    const char *order[5] = {"a.f32", "b.bf16", "c.f16", "d.scalar", "e.empty"};
    for (size_t i = 0; i < 5; i++)
        CHECK(!strcmp(st_get(a, i)->name, order[i]));

    const st_tensor *t = st_find(a, "a.f32");
    CHECK(t && t->dtype == ENC_F32 && t->n_dims == 2 && t->shape[0] == 2 && t->shape[1] == 3);
    CHECK(t && t->n_bytes == 24 && t->file_offset == 8 + hlen);
    CHECK(t && strstr(t->file, "single.safetensors"));
    if (t) {
        float v[6];
        memcpy(v, t->data, sizeof v);
        for (int i = 0; i < 6; i++)
            CHECK(v[i] == a_vals[i]);
    }
    t = st_find(a, "b.bf16");
    CHECK(t && t->dtype == ENC_BF16 && t->n_dims == 1 && t->shape[0] == 4 && t->n_bytes == 8);
    if (t) {
        const uint16_t *p = t->data;
        CHECK(enc_bf16_to_f32(p[0]) == 1.0f && enc_bf16_to_f32(p[1]) == -2.0f);
        CHECK(enc_bf16_to_f32(p[2]) == 3.140625f && p[3] == 0);
        CHECK(t->file_offset == 8 + hlen + 24);
    }
    t = st_find(a, "c.f16");
    CHECK(t && t->dtype == ENC_F16 && t->n_dims == 4 && t->shape[0] == 2 && t->shape[3] == 2);
    if (t) {
        const uint16_t *p = t->data;
        CHECK(enc_f16_to_f32(p[0]) == 1.0f && enc_f16_to_f32(p[1]) == -2.0f);
        CHECK(enc_f16_to_f32(p[2]) == 0.5f && enc_f16_to_f32(p[3]) == 65504.0f);
    }
    t = st_find(a, "d.scalar");
    CHECK(t && t->n_dims == 0 && t->n_bytes == 4 && *(const float *)t->data == 42.0f);
    t = st_find(a, "e.empty");
    CHECK(t && t->n_dims == 2 && t->shape[0] == 0 && t->shape[1] == 5 && t->n_bytes == 0);
    st_close(a);
    st_close(NULL); /* a no-op */
}

/* --- safetensors: bad single files ------------------------------------- */

static void test_single_bad_header(void)
{
    write_bytes("short.safetensors", "\x05\0\0\0\0", 5);
    expect_st_fail("short.safetensors", ENC_ERR_FORMAT, "5 bytes", "too short", NULL);

    unsigned char b[64] = {0};
    put_u64le(b, 1000); /* header length beyond the 64-byte file */
    memcpy(b + 8, "{}", 2);
    write_bytes("hlen_past.safetensors", b, sizeof b);
    expect_st_fail("hlen_past.safetensors", ENC_ERR_FORMAT, "1000", "past the end", "offset 0");

    put_u64le(b, 200u * 1000 * 1000); /* absurd */
    write_bytes("hlen_absurd.safetensors", b, sizeof b);
    expect_st_fail("hlen_absurd.safetensors", ENC_ERR_FORMAT, "200000000", "absurd", NULL);

    put_u64le(b, UINT64_MAX);
    write_bytes("hlen_max.safetensors", b, sizeof b);
    expect_st_fail("hlen_max.safetensors", ENC_ERR_FORMAT, "18446744073709551615", "absurd", NULL);

    put_u64le(b, 0);
    write_bytes("hlen_zero.safetensors", b, 8);
    expect_st_fail("hlen_zero.safetensors", ENC_ERR_FORMAT, "not valid JSON", NULL, NULL);

    write_st("notjson.safetensors", "{\"w\": {\"dtype\": nope}}", NULL, 0);
    expect_st_fail("notjson.safetensors", ENC_ERR_FORMAT, "not valid JSON", "offset 24", NULL);

    write_st("array.safetensors", "[1, 2]", NULL, 0);
    expect_st_fail("array.safetensors", ENC_ERR_FORMAT, "not a JSON object", NULL, NULL);

    write_st("trailing.safetensors", "{} x", NULL, 0);
    expect_st_fail("trailing.safetensors", ENC_ERR_FORMAT, "trailing", "offset 11", NULL);

    /* a NUL inside the header ends the JSON early: trailing bytes */
    unsigned char nul[24] = {0};
    put_u64le(nul, 16);
    memcpy(nul + 8, "{}\0             ", 16);
    write_bytes("nul.safetensors", nul, sizeof nul);
    expect_st_fail("nul.safetensors", ENC_ERR_FORMAT, "trailing", "offset 10", NULL);

    write_st("meta.safetensors", "{\"__metadata__\": 3}", NULL, 0);
    expect_st_fail("meta.safetensors", ENC_ERR_FORMAT, "__metadata__", NULL, NULL);

    expect_st_fail("does-not-exist.safetensors", ENC_ERR_IO, "cannot open", NULL, NULL);
}

static void test_single_bad_entries(void)
{
    const enc_status F = ENC_ERR_FORMAT, U = ENC_ERR_UNSUPPORTED;
    bad_entry("entry_num.safetensors", "5", 8, F, "not an object", NULL);
    bad_entry("no_dtype.safetensors", "{\"shape\":[2],\"data_offsets\":[0,8]}", 8, F, "dtype",
              NULL);
    bad_entry("no_shape.safetensors", "{\"dtype\":\"F32\",\"data_offsets\":[0,8]}", 8, F, "shape",
              NULL);
    bad_entry("no_offsets.safetensors", "{\"dtype\":\"F32\",\"shape\":[2]}", 8, F, "data_offsets",
              NULL);
    bad_entry("dtype_i64.safetensors", "{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}",
              8, U, "'I64'", NULL);
    bad_entry("dtype_f64.safetensors", "{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}",
              8, U, "'F64'", NULL);
    bad_entry("dtype_num.safetensors", "{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}", 4, F,
              "dtype", NULL);
    bad_entry("shape_neg.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[-1,2],\"data_offsets\":[0,8]}", 8, F, "dim 0",
              "non-negative integer");
    bad_entry("shape_frac.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,8]}", 8, F, "dim 1", NULL);
    bad_entry("shape_str.safetensors", "{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}",
              8, F, "shape", "not an array");
    bad_entry("shape_elem_str.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}", 8, F, "dim 0", NULL);
    bad_entry("shape_5d.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[1,1,1,1,2],\"data_offsets\":[0,8]}", 8, U, "5 dims",
              NULL);
    bad_entry("shape_overflow.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
              "\"data_offsets\":[0,8]}",
              8, F, "overflow", NULL);
    bad_entry("offs_one.safetensors", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]}", 8,
              F, "data_offsets", NULL);
    bad_entry("offs_three.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}", 8, F, "data_offsets",
              NULL);
    bad_entry("offs_str.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[\"0\",\"8\"]}", 8, F,
              "data_offsets", NULL);
    bad_entry("offs_neg.safetensors", "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}",
              8, F, "data_offsets", NULL);
    bad_entry("offs_frac.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0.5,8.5]}", 8, F, "data_offsets",
              NULL);
    bad_entry("offs_reversed.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}", 8, F, "reversed", NULL);
    /* header `{"w.bad":...}` pads to 64 bytes: the data area starts at byte 72 */
    bad_entry("offs_past_end.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}", 8, F, "offset 88",
              "beyond the end");
    bad_entry("size_mismatch.safetensors",
              "{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[4,12]}", 16, F, "offset 76",
              "3 elements");
    bad_entry("unaligned.safetensors", "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}",
              8, U, "offset 74", "aligned");

    write_st("overlap.safetensors",
             "{\"w.one\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"w.two\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
             NULL, 16);
    expect_st_fail("overlap.safetensors", ENC_ERR_FORMAT, "'w.one'", "'w.two'", "overlap");

    /* a later tensor inside an earlier, longer one (not adjacent after sorting) */
    write_st("overlap_nested.safetensors",
             "{\"w.big\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
             "\"w.mid\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
             "\"w.end\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}",
             NULL, 16);
    expect_st_fail("overlap_nested.safetensors", ENC_ERR_FORMAT, "'w.big'", "overlap", NULL);

    write_st("dup.safetensors",
             "{\"w.dup\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"w.dup\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
             NULL, 16);
    expect_st_fail("dup.safetensors", ENC_ERR_FORMAT, "'w.dup'", "twice", NULL);

    /* a field given twice in one entry: which dtype would a reader take? */
    write_st("dup_field.safetensors",
             "{\"w.f\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}",
             NULL, 8);
    expect_st_fail("dup_field.safetensors", ENC_ERR_FORMAT, "'w.f'", "\"dtype\" appears twice",
                   NULL);
}

/* Zero-size tensors share offsets without overlapping; gaps are allowed. */
static void test_single_edge_ok(void)
{
    write_st("edge.safetensors",
             "{\"z1\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[4,4]},"
             "\"z2\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
             "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"gap\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]}}",
             NULL, 16);
    st_archive *a = NULL;
    enc_status s = st_open_file(path_of("edge.safetensors"), &a);
    CHECK(s == ENC_OK && st_count(a) == 4);
    if (s != ENC_OK) fprintf(stderr, "  %s\n", enc_last_error());
    st_close(a);

    write_st("empty_header.safetensors", "{}", NULL, 0);
    s = st_open_file(path_of("empty_header.safetensors"), &a);
    CHECK(s == ENC_OK && st_count(a) == 0 && st_find(a, "x") == NULL && st_get(a, 0) == NULL);
    st_close(a);
}

/* --- safetensors: sharded checkpoints ---------------------------------- */

static const char *const k_shards[3] = {"model-00001-of-00003.safetensors",
                                        "model-00002-of-00003.safetensors",
                                        "model-00003-of-00003.safetensors"};

/* dir/ with three shards: x.* in 1, y.* in 2, z.a and extra in 3. */
static void write_shards(const char *dir)
{
    static const float xa[2] = {1.0f, 2.0f}, ya[3] = {-1.0f, 0.25f, 9.0f}, za[1] = {5.0f};
    char rel[256];
    make_dir(dir);
    tspec s1[2] = {{"x.a", "F32", 1, {2}, xa}, {"x.b", "BF16", 2, {2, 2}, NULL}};
    tspec s2[2] = {{"y.a", "F32", 1, {3}, ya}, {"y.b", "F16", 1, {1}, NULL}};
    tspec s3[2] = {{"z.a", "F32", 1, {1}, za}, {"extra", "F32", 1, {1}, NULL}};
    snprintf(rel, sizeof rel, "%s/%s", dir, k_shards[0]);
    write_tensors(rel, s1, 2);
    snprintf(rel, sizeof rel, "%s/%s", dir, k_shards[1]);
    write_tensors(rel, s2, 2);
    snprintf(rel, sizeof rel, "%s/%s", dir, k_shards[2]);
    write_tensors(rel, s3, 2);
}

/* dir/model.safetensors.index.json with weight_map `wm` (JSON object text). */
static void write_index(const char *dir, const char *wm)
{
    char rel[256];
    sbuf b = {0};
    sb_printf(&b, "{\"metadata\": {\"total_size\": 64},\n \"weight_map\": %s}\n", wm);
    snprintf(rel, sizeof rel, "%s/model.safetensors.index.json", dir);
    write_text(rel, b.s);
    free(b.s);
}

#define WM_GOOD                                                                                    \
    "{\"x.a\": \"model-00001-of-00003.safetensors\", \"x.b\": "                                    \
    "\"model-00001-of-00003.safetensors\","                                                        \
    " \"y.a\": \"model-00002-of-00003.safetensors\", \"y.b\": "                                    \
    "\"model-00002-of-00003.safetensors\","                                                        \
    " \"z.a\": \"model-00003-of-00003.safetensors\"}"

static void expect_dir_fail(const char *dir, enc_status want, const char *s1, const char *s2,
                            const char *s3)
{
    st_archive *const poison = (st_archive *)&poison;
    st_archive *a = poison; /* st_open_dir must reset it to NULL */
    enc_clear_error();
    enc_status s = st_open_dir(path_of(dir), &a);
    CHECK(a == NULL);
    if (a != poison) st_close(a);
    expect_error(dir, s, want, dir, s1, s2, s3, (const char *)NULL);
}

static void test_sharded_valid(void)
{
    write_shards("sharded");
    write_index("sharded", WM_GOOD);
    /* a model.safetensors next to the index is ignored: the index wins */
    tspec lone = {"single_only", "F32", 1, {1}, NULL};
    write_tensors("sharded/model.safetensors", &lone, 1);

    st_archive *a = NULL;
    enc_status s = st_open_dir(path_of("sharded"), &a);
    CHECK(s == ENC_OK);
    if (s != ENC_OK) {
        fprintf(stderr, "  %s\n", enc_last_error());
        return;
    }
    CHECK(st_count(a) == 6); /* 5 listed + "extra", present in shard 3 but not in the map */
    CHECK(st_find(a, "single_only") == NULL);
    const st_tensor *t = st_find(a, "extra");
    CHECK(t && strstr(t->file, k_shards[2]));
    t = st_find(a, "x.b");
    CHECK(t && strstr(t->file, k_shards[0]) && t->dtype == ENC_BF16 && t->n_bytes == 8);
    t = st_find(a, "y.a");
    CHECK(t && strstr(t->file, k_shards[1]) && t->n_dims == 1 && t->shape[0] == 3);
    if (t) {
        float v[3];
        memcpy(v, t->data, sizeof v);
        CHECK(v[0] == -1.0f && v[1] == 0.25f && v[2] == 9.0f);
    }
    t = st_find(a, "z.a");
    CHECK(t && *(const float *)t->data == 5.0f);
    st_close(a);

    /* a directory with only model.safetensors */
    make_dir("single_dir");
    write_tensors("single_dir/model.safetensors", &lone, 1);
    s = st_open_dir(path_of("single_dir"), &a);
    CHECK(s == ENC_OK && st_count(a) == 1 && st_find(a, "single_only"));
    st_close(a);
}

static void test_sharded_bad(void)
{
    make_dir("empty_dir");
    expect_dir_fail("empty_dir", ENC_ERR_IO, "model.safetensors.index.json", "model.safetensors",
                    NULL);

    write_shards("sh_wrongfile");
    write_index("sh_wrongfile", "{\"x.a\": \"model-00002-of-00003.safetensors\","
                                " \"x.b\": \"model-00001-of-00003.safetensors\","
                                " \"y.a\": \"model-00002-of-00003.safetensors\"}");
    expect_dir_fail("sh_wrongfile", ENC_ERR_FORMAT, "'x.a'", k_shards[1], k_shards[0]);

    write_shards("sh_absent_tensor");
    write_index("sh_absent_tensor", "{\"x.a\": \"model-00001-of-00003.safetensors\","
                                    " \"x.nope\": \"model-00003-of-00003.safetensors\"}");
    expect_dir_fail("sh_absent_tensor", ENC_ERR_FORMAT, "'x.nope'", k_shards[2],
                    "model.safetensors.index.json");

    write_shards("sh_missing_file");
    write_index("sh_missing_file", "{\"x.a\": \"model-00001-of-00003.safetensors\","
                                   " \"q.a\": \"model-00004-of-00003.safetensors\"}");
    expect_dir_fail("sh_missing_file", ENC_ERR_IO, "model-00004-of-00003.safetensors",
                    "cannot open", NULL);

    write_shards("sh_no_map");
    write_index("sh_no_map", "null");
    expect_dir_fail("sh_no_map", ENC_ERR_FORMAT, "weight_map", NULL, NULL);

    write_shards("sh_empty_map");
    write_index("sh_empty_map", "{}");
    expect_dir_fail("sh_empty_map", ENC_ERR_FORMAT, "weight_map", "empty", NULL);

    write_shards("sh_not_string");
    write_index("sh_not_string", "{\"x.a\": 1}");
    expect_dir_fail("sh_not_string", ENC_ERR_FORMAT, "'x.a'", "weight_map", NULL);

    write_shards("sh_escape");
    write_index("sh_escape", "{\"x.a\": \"../sharded/model-00001-of-00003.safetensors\"}");
    expect_dir_fail("sh_escape", ENC_ERR_FORMAT, "'x.a'", "../sharded", NULL);

    write_shards("sh_dot");
    write_index("sh_dot", "{\"x.a\": \"./model-00001-of-00003.safetensors\"}");
    expect_dir_fail("sh_dot", ENC_ERR_FORMAT, "'x.a'", "./model-00001", NULL);

    write_shards("sh_dup_key");
    write_index("sh_dup_key", "{\"x.a\": \"model-00001-of-00003.safetensors\","
                              " \"x.a\": \"model-00001-of-00003.safetensors\"}");
    expect_dir_fail("sh_dup_key", ENC_ERR_FORMAT, "'x.a'", "twice", NULL);

    make_dir("sh_notjson");
    write_text("sh_notjson/model.safetensors.index.json", "{\"weight_map\": {");
    expect_dir_fail("sh_notjson", ENC_ERR_FORMAT, "model.safetensors.index.json", "not valid JSON",
                    NULL);
    make_dir("sh_array");
    write_text("sh_array/model.safetensors.index.json", "[\"weight_map\"]");
    expect_dir_fail("sh_array", ENC_ERR_FORMAT, "model.safetensors.index.json", "not a JSON object",
                    NULL);

    /* the same tensor in two shards */
    make_dir("sh_dup_tensor");
    tspec one = {"w.same", "F32", 1, {1}, NULL};
    write_tensors("sh_dup_tensor/a.safetensors", &one, 1);
    write_tensors("sh_dup_tensor/b.safetensors", &one, 1);
    write_index("sh_dup_tensor", "{\"w.same\": \"a.safetensors\", \"w.x\": \"b.safetensors\"}");
    expect_dir_fail("sh_dup_tensor", ENC_ERR_FORMAT, "'w.same'", "a.safetensors", "b.safetensors");

    /* a bad shard: the error names the shard and the tensor */
    make_dir("sh_bad_shard");
    tspec good = {"w.good", "F32", 1, {1}, NULL};
    write_tensors("sh_bad_shard/a.safetensors", &good, 1);
    write_st("sh_bad_shard/b.safetensors",
             "{\"w.bad\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}", NULL, 8);
    write_index("sh_bad_shard", "{\"w.good\": \"a.safetensors\", \"w.bad\": \"b.safetensors\"}");
    expect_dir_fail("sh_bad_shard", ENC_ERR_UNSUPPORTED, "b.safetensors", "'w.bad'", "'I8'");
}

/* --- config.json -------------------------------------------------------- */

/* Qwen3-0.6B's config.json, one field a line. */
static const char *const k_config[][2] = {
    {"architectures", "[\"Qwen3ForCausalLM\"]"},
    {"attention_bias", "false"},
    {"attention_dropout", "0.0"},
    {"bos_token_id", "151643"},
    {"eos_token_id", "151645"},
    {"head_dim", "128"},
    {"hidden_act", "\"silu\""},
    {"hidden_size", "1024"},
    {"initializer_range", "0.02"},
    {"intermediate_size", "3072"},
    {"max_position_embeddings", "40960"},
    {"max_window_layers", "28"},
    {"model_type", "\"qwen3\""},
    {"num_attention_heads", "16"},
    {"num_hidden_layers", "28"},
    {"num_key_value_heads", "8"},
    {"rms_norm_eps", "1e-06"},
    {"rope_scaling", "null"},
    {"rope_theta", "1000000"},
    {"sliding_window", "null"},
    {"tie_word_embeddings", "true"},
    {"torch_dtype", "\"bfloat16\""},
    {"transformers_version", "\"4.51.0\""},
    {"use_cache", "true"},
    {"use_sliding_window", "false"},
    {"vocab_size", "151936"},
};
enum { N_CONFIG = sizeof k_config / sizeof k_config[0] };

/* The config above with edits[i][0] dropped (edits[i][1] NULL) or set to
 * edits[i][1] (added when not there). Caller frees. */
static char *config_edit(const char *const (*edits)[2], int n_edits)
{
    int found[8] = {0};
    sbuf b = {0};
    sb_printf(&b, "{\n");
    for (int i = 0; i < N_CONFIG; i++) {
        const char *v = k_config[i][1];
        for (int j = 0; j < n_edits; j++) {
            if (!edits[j][0] || strcmp(edits[j][0], k_config[i][0])) continue;
            found[j] = 1;
            v = edits[j][1];
        }
        if (v) sb_printf(&b, "%s  \"%s\": %s", b.n > 2 ? ",\n" : "", k_config[i][0], v);
    }
    for (int j = 0; j < n_edits; j++)
        if (edits[j][0] && !found[j] && edits[j][1])
            sb_printf(&b, ",\n  \"%s\": %s", edits[j][0], edits[j][1]);
    sb_printf(&b, "\n}\n");
    return b.s;
}

static char *config_with(const char *key, const char *value)
{
    const char *const e[1][2] = {{key, value}};
    return config_edit(e, 1);
}

#define CFG_WHERE "models/x/config.json"

static enc_status parse_with(const char *key, const char *value, qwen3_config *c)
{
    char *json = config_with(key, value);
    enc_clear_error();
    enc_status s = qwen3_config_parse(json, CFG_WHERE, c);
    free(json);
    return s;
}

static void expect_cfg_fail(const char *key, const char *value, enc_status want, const char *field,
                            const char *s2)
{
    qwen3_config c;
    char what[160];
    snprintf(what, sizeof what, "config %s=%s", key, value ? value : "(absent)");
    enc_status s = parse_with(key, value, &c);
    expect_error(what, s, want, "config.json", field, s2, (const char *)NULL);
}

static void test_config_valid(void)
{
    qwen3_config c;
    enc_status s = parse_with(NULL, NULL, &c);
    CHECK(s == ENC_OK);
    if (s != ENC_OK) fprintf(stderr, "  %s\n", enc_last_error());
    CHECK(c.hidden_size == 1024 && c.intermediate_size == 3072 && c.n_layers == 28);
    CHECK(c.n_heads == 16 && c.n_kv_heads == 8 && c.head_dim == 128);
    CHECK(c.vocab_size == 151936 && c.max_position_embeddings == 40960);
    CHECK(c.rms_norm_eps == 1e-6 && c.rope_theta == 1e6);
    CHECK(c.tie_word_embeddings == 1 && c.torch_dtype == ENC_BF16);
    CHECK(c.bos_token_id == 151643 && c.n_eos == 1 && c.eos_token_ids[0] == 151645);

    s = parse_with("eos_token_id", "[151645, 151643]", &c);
    CHECK(s == ENC_OK && c.n_eos == 2 && c.eos_token_ids[0] == 151645 &&
          c.eos_token_ids[1] == 151643);
    s = parse_with("eos_token_id", NULL, &c);
    CHECK(s == ENC_OK && c.n_eos == 0);
    s = parse_with("bos_token_id", "null", &c);
    CHECK(s == ENC_OK && c.bos_token_id == -1);

    s = parse_with("head_dim", NULL, &c); /* default: 1024 / 16 */
    CHECK(s == ENC_OK && c.head_dim == 64);
    s = parse_with("num_key_value_heads", NULL, &c); /* default: n_heads, as transformers */
    CHECK(s == ENC_OK && c.n_kv_heads == 16);
    s = parse_with("tie_word_embeddings", NULL, &c);
    CHECK(s == ENC_OK && c.tie_word_embeddings == 0);
    s = parse_with("torch_dtype", NULL, &c);
    CHECK(s == ENC_OK && c.torch_dtype == ENC_F32);
    s = parse_with("torch_dtype", "\"float16\"", &c);
    CHECK(s == ENC_OK && c.torch_dtype == ENC_F16);
    s = parse_with("dtype", "\"bfloat16\"", &c); /* newer transformers: both, agreeing */
    CHECK(s == ENC_OK && c.torch_dtype == ENC_BF16);
    s = parse_with("rope_scaling", NULL, &c);
    CHECK(s == ENC_OK);
    s = parse_with("rope_scaling", "{\"rope_type\": \"default\"}", &c);
    CHECK(s == ENC_OK);
    s = parse_with("model_type", NULL, &c);
    CHECK(s == ENC_OK);
    s = parse_with("hidden_size", "1024.0", &c); /* an integral number */
    CHECK(s == ENC_OK && c.hidden_size == 1024);

    /* transformers v5: "dtype" only, rope_theta inside rope_parameters */
    const char *const v5[4][2] = {
        {"torch_dtype", NULL},
        {"rope_theta", NULL},
        {"dtype", "\"float16\""},
        {"rope_parameters", "{\"rope_type\": \"default\", \"rope_theta\": 5000.0}"},
    };
    char *json = config_edit(v5, 4);
    s = qwen3_config_parse(json, CFG_WHERE, &c);
    CHECK(s == ENC_OK && c.rope_theta == 5000.0 && c.torch_dtype == ENC_F16);
    if (s != ENC_OK) fprintf(stderr, "  %s\n", enc_last_error());
    free(json);
    const char *const v5_yarn[2][2] = {
        {"rope_theta", NULL},
        {"rope_parameters", "{\"rope_type\": \"yarn\", \"rope_theta\": 5000.0, \"factor\": 2.0, "
                            "\"original_max_position_embeddings\": 4096, \"beta_fast\": 16}"},
    };
    json = config_edit(v5_yarn, 2);
    s = qwen3_config_parse(json, CFG_WHERE, &c);
    CHECK(s == ENC_OK && c.rope_theta == 5000.0 && c.rope_scaling.kind == ENC_ROPE_YARN &&
          c.rope_scaling.factor == 2.0 && c.rope_scaling.original_ctx == 4096 &&
          c.rope_scaling.beta_fast == 16 && c.rope_scaling.beta_slow == 1 &&
          c.rope_scaling.attention_factor == 0 && c.rope_scaling.truncate == 1);
    if (s != ENC_OK) fprintf(stderr, "  %s\n", enc_last_error());
    free(json);

    /* Qwen3's documented YaRN, the legacy "type" key for linear, and
     * DeepSeek's mscale pair, whose ratio becomes the attention factor */
    s = parse_with("rope_scaling",
                   "{\"rope_type\": \"yarn\", \"factor\": 4.0, "
                   "\"original_max_position_embeddings\": 32768}",
                   &c);
    CHECK(s == ENC_OK && c.rope_scaling.kind == ENC_ROPE_YARN && c.rope_scaling.factor == 4.0 &&
          c.rope_scaling.original_ctx == 32768 && c.rope_scaling.beta_fast == 32);
    s = parse_with("rope_scaling", "{\"type\": \"linear\", \"factor\": 2.0}", &c);
    CHECK(s == ENC_OK && c.rope_scaling.kind == ENC_ROPE_LINEAR && c.rope_scaling.factor == 2.0);
    s = parse_with("rope_scaling",
                   "{\"rope_type\": \"yarn\", \"factor\": 40, \"mscale\": 1.0, "
                   "\"mscale_all_dim\": 0.5, \"truncate\": false}",
                   &c);
    CHECK(s == ENC_OK && c.rope_scaling.truncate == 0 &&
          fabs(c.rope_scaling.attention_factor - (0.1 * log(40) + 1) / (0.05 * log(40) + 1)) <
              1e-15);

    /* from a directory */
    make_dir("cfg");
    json = config_with("eos_token_id", "[1, 2, 3]");
    write_text("cfg/config.json", json);
    free(json);
    s = qwen3_config_load(path_of("cfg"), &c);
    CHECK(s == ENC_OK && c.n_eos == 3 && c.eos_token_ids[2] == 3);

    /* a config.json that never ends: refused at FILE_READ_ALL_MAX, not read into every byte of
     * memory */
    make_dir("cfg_zero");
    CHECK(symlink("/dev/zero", path_of("cfg_zero/config.json")) == 0);
    s = qwen3_config_load(path_of("cfg_zero"), &c);
    CHECK(s == ENC_ERR_FORMAT && strstr(enc_last_error(), "config.json: larger than 256 MiB"));
}

static void test_config_bad(void)
{
    const enc_status F = ENC_ERR_FORMAT, U = ENC_ERR_UNSUPPORTED;
    expect_cfg_fail("hidden_size", NULL, F, "'hidden_size'", "missing");
    expect_cfg_fail("vocab_size", NULL, F, "'vocab_size'", "missing");
    expect_cfg_fail("rms_norm_eps", NULL, F, "'rms_norm_eps'", "missing");
    expect_cfg_fail("rope_theta", NULL, F, "'rope_theta'", "missing");
    expect_cfg_fail("rope_theta", "1", F, "rope_theta", "above 1"); /* yarn divides by its log */
    expect_cfg_fail("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 1e-320}", F, "factor",
                    "positive number"); /* its inverse is infinite */
    expect_cfg_fail("num_hidden_layers", NULL, F, "'num_hidden_layers'", "missing");
    expect_cfg_fail("hidden_size", "\"1024\"", F, "'hidden_size'", "a string");
    expect_cfg_fail("hidden_size", "1.5", F, "'hidden_size'", "1.5");
    expect_cfg_fail("hidden_size", "-3", F, "'hidden_size'", "-3");
    expect_cfg_fail("hidden_size", "0", F, "'hidden_size'", NULL);
    expect_cfg_fail("hidden_size", "4294967296", F, "'hidden_size'", "4294967296");
    expect_cfg_fail("hidden_size", "1e400", F, "'hidden_size'", NULL);
    expect_cfg_fail("intermediate_size", "true", F, "'intermediate_size'", "true");
    expect_cfg_fail("num_attention_heads", "[16]", F, "'num_attention_heads'", "an array");
    expect_cfg_fail("head_dim", "\"x\"", F, "'head_dim'", NULL);
    expect_cfg_fail("head_dim", "127", F, "'head_dim'", "even");
    expect_cfg_fail("rms_norm_eps", "0", F, "'rms_norm_eps'", NULL);
    expect_cfg_fail("rms_norm_eps", "\"1e-6\"", F, "'rms_norm_eps'", NULL);
    expect_cfg_fail("rope_theta", "-1", F, "'rope_theta'", NULL);
    expect_cfg_fail("tie_word_embeddings", "1", F, "'tie_word_embeddings'", "true or false");
    expect_cfg_fail("num_key_value_heads", "3", F, "'num_key_value_heads'", "does not divide");
    expect_cfg_fail("num_key_value_heads", "32", F, "'num_key_value_heads'", NULL);
    expect_cfg_fail("rope_scaling", "{\"rope_type\": \"dynamic\", \"factor\": 4.0}", U,
                    "rope_scaling type 'dynamic' is not supported", NULL);
    expect_cfg_fail("rope_scaling", "{\"type\": \"longrope\", \"factor\": 2.0}", U,
                    "rope_scaling type 'longrope'", NULL);
    expect_cfg_fail("rope_scaling", "{\"rope_type\": \"yarn\"}", F, "'factor'", "missing");
    expect_cfg_fail("rope_scaling", "{\"rope_type\": \"linear\", \"factor\": -2}", F, "'factor'",
                    NULL);
    expect_cfg_fail("rope_scaling",
                    "{\"rope_type\": \"yarn\", \"factor\": 4, \"beta_fast\": \"x\"}", F,
                    "'beta_fast'", NULL);
    expect_cfg_fail("rope_scaling",
                    "{\"rope_type\": \"yarn\", \"factor\": 4, "
                    "\"original_max_position_embeddings\": 0.5}",
                    F, "'original_max_position_embeddings'", NULL);
    expect_cfg_fail("rope_scaling", "{\"factor\": 2.0}", U, "rope_scaling", NULL);
    expect_cfg_fail("rope_scaling", "4", F, "rope_scaling", NULL);
    expect_cfg_fail("attention_bias", "true", U, "'attention_bias'", NULL);
    expect_cfg_fail("attention_bias", "\"no\"", F, "'attention_bias'", NULL);
    expect_cfg_fail("use_sliding_window", "true", U, "'use_sliding_window'", NULL);
    expect_cfg_fail("model_type", "\"llama\"", U, "'model_type'", "'llama'");
    expect_cfg_fail("model_type", "3", F, "'model_type'", NULL);
    expect_cfg_fail("hidden_act", "\"gelu\"", U, "'hidden_act'", "'gelu'");
    expect_cfg_fail("torch_dtype", "\"float64\"", U, "'torch_dtype'", "'float64'");
    expect_cfg_fail("dtype", "\"float16\"", F, "'dtype'", "disagree");
    expect_cfg_fail("eos_token_id", "\"</s>\"", F, "'eos_token_id'", NULL);
    expect_cfg_fail("eos_token_id", "[1, 2.5]", F, "'eos_token_id'", "2.5");
    expect_cfg_fail("eos_token_id", "[1,2,3,4,5,6,7,8,9]", U, "'eos_token_id'", "more than 8");
    expect_cfg_fail("eos_token_id", "151936", F, "'eos_token_id'", "vocab_size");
    expect_cfg_fail("bos_token_id", "-1", F, "'bos_token_id'", NULL);
    expect_cfg_fail("layer_types", "[\"full_attention\", \"sliding_attention\"]", F,
                    "'layer_types'", "num_hidden_layers (28)");
    {
        sbuf b = {0};
        sb_printf(&b, "[");
        for (int i = 0; i < 28; i++)
            sb_printf(&b, "%s\"%s\"", i ? ", " : "",
                      i == 27 ? "sliding_attention" : "full_attention");
        sb_printf(&b, "]");
        expect_cfg_fail("layer_types", b.s, U, "'layer_types' entry 27", "'sliding_attention'");
        b.n = 0;
        sb_printf(&b, "[");
        for (int i = 0; i < 28; i++)
            sb_printf(&b, "%s\"full_attention\"", i ? ", " : "");
        sb_printf(&b, "]");
        qwen3_config c;
        CHECK(parse_with("layer_types", b.s, &c) == ENC_OK);
        free(b.s);
    }
    /* a field given twice */
    expect_cfg_fail("zzz\": 1, \"hidden_size", "1024", F, "'hidden_size'", "twice");

    qwen3_config c;
    enc_status s = qwen3_config_parse("{\"hidden_size\": ", CFG_WHERE, &c);
    expect_error("config not json", s, F, "config.json", "not valid JSON", (const char *)NULL);
    s = qwen3_config_parse("[]", CFG_WHERE, &c);
    expect_error("config array", s, F, "config.json", "not a JSON object", (const char *)NULL);
    char *json = config_with(NULL, NULL);
    size_t n = strlen(json);
    json = realloc(json, n + 3);
    memcpy(json + n, "{}", 3);
    s = qwen3_config_parse(json, CFG_WHERE, &c);
    expect_error("config trailing", s, F, "config.json", "not valid JSON", (const char *)NULL);
    free(json);

    make_dir("cfg_none");
    s = qwen3_config_load(path_of("cfg_none"), &c);
    expect_error("config absent", s, ENC_ERR_IO, "cfg_none/config.json", (const char *)NULL);
}

/* --- Qwen3 tensor set ------------------------------------------------- */

/* A tiny model: D=8, F=12, 2 layers, 4 heads of 4, 2 kv heads, V=10. */
#define TINY_CONFIG(tied, layers)                                                                  \
    "{\"hidden_size\": 8, \"intermediate_size\": 12, \"num_hidden_layers\": " #layers ","          \
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 4,"                    \
    " \"vocab_size\": 10, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000,"                          \
    " \"tie_word_embeddings\": " #tied ", \"torch_dtype\": \"bfloat16\"}"

enum { TINY_LAYERS = 2, TINY_MAX = 64 };

typedef struct tiny_names {
    char buf[TINY_MAX][64];
    tspec ts[TINY_MAX];
    size_t n;
} tiny_names;

static void tiny_add(tiny_names *t, const char *name, const char *dtype, int n_dims, int64_t r,
                     int64_t c)
{
    snprintf(t->buf[t->n], sizeof t->buf[t->n], "%s", name);
    tspec s = {t->buf[t->n], dtype, n_dims, {r, c}, NULL};
    t->ts[t->n++] = s;
}

/* Every tensor of the tiny model for n_layers layers; norms in BF16, the
 * rest in F32 (mixed dtypes are allowed). lm_head when with_head. */
static void tiny_tensors(tiny_names *t, int n_layers, int with_head)
{
    char n[64];
    t->n = 0;
    tiny_add(t, "model.embed_tokens.weight", "F32", 2, 10, 8);
    tiny_add(t, "model.norm.weight", "BF16", 1, 8, 0);
    if (with_head) tiny_add(t, "lm_head.weight", "F16", 2, 10, 8);
    for (int l = 0; l < n_layers; l++) {
        struct {
            const char *suffix, *dtype;
            int nd;
            int64_t r, c;
        } e[] = {
            {"input_layernorm.weight", "BF16", 1, 8, 0},
            {"self_attn.q_proj.weight", "F32", 2, 16, 8},
            {"self_attn.k_proj.weight", "F32", 2, 8, 8},
            {"self_attn.v_proj.weight", "F16", 2, 8, 8},
            {"self_attn.o_proj.weight", "F32", 2, 8, 16},
            {"self_attn.q_norm.weight", "BF16", 1, 4, 0},
            {"self_attn.k_norm.weight", "BF16", 1, 4, 0},
            {"post_attention_layernorm.weight", "BF16", 1, 8, 0},
            {"mlp.gate_proj.weight", "F32", 2, 12, 8},
            {"mlp.up_proj.weight", "BF16", 2, 12, 8},
            {"mlp.down_proj.weight", "F32", 2, 8, 12},
        };
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++) {
            snprintf(n, sizeof n, "model.layers.%d.%s", l, e[i].suffix);
            tiny_add(t, n, e[i].dtype, e[i].nd, e[i].r, e[i].c);
        }
    }
}

static tspec *tiny_find(tiny_names *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->ts[i].name, name)) return &t->ts[i];
    return NULL;
}

static void tiny_drop(tiny_names *t, const char *name)
{
    tspec *s = tiny_find(t, name);
    if (!s) return;
    size_t i = (size_t)(s - t->ts);
    *s = t->ts[--t->n]; /* the last entry moves here, its name into this entry's buffer */
    memcpy(t->buf[i], t->buf[t->n], sizeof t->buf[i]);
    s->name = t->buf[i];
}

/* Write dir/ (config.json + model.safetensors), open it, find the tensors. */
static enc_status tiny_load(const char *dir, const char *config, tiny_names *t, st_archive **a,
                            qwen3_tensors *qt)
{
    char rel[256];
    make_dir(dir);
    snprintf(rel, sizeof rel, "%s/config.json", dir);
    write_text(rel, config);
    snprintf(rel, sizeof rel, "%s/model.safetensors", dir);
    write_tensors(rel, t->ts, t->n);
    qwen3_config c;
    *a = NULL;
    memset(qt, 0, sizeof *qt);
    enc_clear_error();
    ENC_TRY(qwen3_config_load(path_of(dir), &c));
    ENC_TRY(st_open_dir(path_of(dir), a));
    return qwen3_tensors_find(&c, *a, qt);
}

/* --- generation_config.json -------------------------------------------- */

#define GEN_WHERE "models/x/generation_config.json"

/* c: Qwen3-0.6B's config.json (eos 151645) with the generation config `json`. */
static enc_status gen_parse(const char *json, qwen3_config *c)
{
    CHECK(parse_with(NULL, NULL, c) == ENC_OK);
    enc_clear_error();
    return generation_config_parse(json, strlen(json), GEN_WHERE, c);
}

static void expect_gen_fail(const char *json, const char *field, const char *s2)
{
    qwen3_config c;
    enc_status s = gen_parse(json, &c);
    expect_error(json, s, ENC_ERR_FORMAT, "generation_config.json", field, s2, (const char *)NULL);
    CHECK(c.n_eos == 1 && c.generation.set == 0); /* unchanged by a file refused */
}

static void test_generation_config(void)
{
    qwen3_config c;
    /* Qwen3-0.6B's own */
    CHECK(gen_parse("{\"bos_token_id\": 151643, \"do_sample\": true, \"eos_token_id\": [151645, "
                    "151643], \"pad_token_id\": 151643, \"temperature\": 0.6, \"top_k\": 20, "
                    "\"top_p\": 0.95, \"transformers_version\": \"4.51.0\"}",
                    &c) == ENC_OK);
    CHECK(c.n_eos == 2 && c.eos_token_ids[0] == 151645 && c.eos_token_ids[1] == 151643);
    CHECK(c.generation.set == (QWEN3_GEN_TEMPERATURE | QWEN3_GEN_TOP_K | QWEN3_GEN_TOP_P));
    CHECK(c.generation.temperature == 0.6 && c.generation.top_k == 20 &&
          c.generation.top_p == 0.95);
    /* transformers' defaults are no recommendation (vLLM reads the file's to_diff_dict) */
    CHECK(gen_parse(
              "{\"temperature\": 1.0, \"top_k\": 50, \"top_p\": 1, \"repetition_penalty\": 1.0}",
              &c) == ENC_OK &&
          c.generation.set == 0 && c.n_eos == 1);
    CHECK(gen_parse(
              "{\"min_p\": 0, \"repetition_penalty\": 1.05, \"top_k\": -1, \"eos_token_id\": 7}",
              &c) == ENC_OK);
    CHECK(c.generation.set == (QWEN3_GEN_MIN_P | QWEN3_GEN_REPETITION_PENALTY | QWEN3_GEN_TOP_K));
    CHECK(c.generation.min_p == 0 && c.generation.repetition_penalty == 1.05 &&
          c.generation.top_k == -1 && c.n_eos == 2 && c.eos_token_ids[1] == 7);
    CHECK(gen_parse("{}", &c) == ENC_OK && c.generation.set == 0 && c.n_eos == 1);

    expect_gen_fail("{\"temperature\": \"hot\"}", "'temperature'", "a number");
    expect_gen_fail("{\"temperature\": -0.5}", "'temperature'", "at least 0");
    expect_gen_fail("{\"top_p\": 0}", "'top_p'", "(0, 1]");
    expect_gen_fail("{\"top_p\": 1.5}", "'top_p'", "(0, 1]");
    expect_gen_fail("{\"min_p\": 2}", "'min_p'", "[0, 1]");
    expect_gen_fail("{\"top_k\": 2.5}", "'top_k'", "an integer");
    expect_gen_fail("{\"top_k\": -2}", "'top_k'", "an integer");
    expect_gen_fail("{\"repetition_penalty\": 0}", "'repetition_penalty'", "greater than 0");
    expect_gen_fail("{\"temperature\": 0.5, \"eos_token_id\": [151645, 151936]}", "'eos_token_id'",
                    "151936");
    expect_gen_fail("{\"top_k\": 20, \"top_k\": 40}", "'top_k'", "twice");
    expect_gen_fail("{\"top_k\": 20} {}", "not valid JSON", NULL);
    expect_gen_fail("[1]", "not a JSON object", NULL);

    /* the file beside config.json, or none */
    char *json = config_with(NULL, NULL);
    mkdir(path_of("gen"), 0755);
    write_text("gen/config.json", json);
    free(json);
    CHECK(qwen3_config_load(path_of("gen"), &c) == ENC_OK &&
          generation_config_load(path_of("gen"), &c) == ENC_OK && c.n_eos == 1 &&
          c.generation.set == 0);
    write_text("gen/generation_config.json", "{\"eos_token_id\": [151645, 151643], \"top_k\": 20}");
    CHECK(generation_config_load(path_of("gen"), &c) == ENC_OK && c.n_eos == 2 &&
          c.generation.set == QWEN3_GEN_TOP_K);
}

static void test_qwen3_valid(void)
{
    tiny_names t;
    st_archive *a;
    qwen3_tensors qt;

    tiny_tensors(&t, TINY_LAYERS, 1);
    enc_status s = tiny_load("q_untied", TINY_CONFIG(false, 2), &t, &a, &qt);
    CHECK(s == ENC_OK);
    if (s == ENC_OK) {
        CHECK(qt.embed == st_find(a, "model.embed_tokens.weight"));
        CHECK(qt.final_norm == st_find(a, "model.norm.weight"));
        CHECK(qt.lm_head == st_find(a, "lm_head.weight") && qt.lm_head != qt.embed);
        CHECK(qt.layers[0].q == st_find(a, "model.layers.0.self_attn.q_proj.weight"));
        CHECK(qt.layers[1].down == st_find(a, "model.layers.1.mlp.down_proj.weight"));
        CHECK(qt.layers[1].k_norm == st_find(a, "model.layers.1.self_attn.k_norm.weight"));
        CHECK(qt.layers[1].v->dtype == ENC_F16 && qt.layers[1].up->dtype == ENC_BF16);
        for (int l = 0; l < TINY_LAYERS; l++) {
            const qwen3_layer_tensors *L = &qt.layers[l];
            CHECK(L->input_norm && L->q && L->k && L->v && L->o && L->q_norm && L->k_norm &&
                  L->post_norm && L->gate && L->up && L->down);
        }
    } else {
        fprintf(stderr, "  %s\n", enc_last_error());
    }
    qwen3_tensors_free(&qt);
    qwen3_tensors_free(&qt); /* twice is harmless */
    qwen3_tensors_free(NULL);
    st_close(a);

    tiny_tensors(&t, TINY_LAYERS, 0);
    s = tiny_load("q_tied", TINY_CONFIG(true, 2), &t, &a, &qt);
    CHECK(s == ENC_OK && qt.lm_head == qt.embed);
    qwen3_tensors_free(&qt);
    st_close(a);

    /* tied, but lm_head.weight shipped anyway: ignored, like transformers */
    tiny_tensors(&t, TINY_LAYERS, 1);
    s = tiny_load("q_tied_head", TINY_CONFIG(true, 2), &t, &a, &qt);
    CHECK(s == ENC_OK && qt.lm_head == qt.embed);
    qwen3_tensors_free(&qt);
    st_close(a);

    /* rotary_emb.inv_freq buffers from old exports are ignored */
    tiny_tensors(&t, TINY_LAYERS, 1);
    tiny_add(&t, "model.layers.0.self_attn.rotary_emb.inv_freq", "F32", 1, 2, 0);
    s = tiny_load("q_inv_freq", TINY_CONFIG(false, 2), &t, &a, &qt);
    CHECK(s == ENC_OK);
    qwen3_tensors_free(&qt);
    st_close(a);
}

/* Loading t under config fails with want, its message holding s1 and s2,
 * and leaves no layers behind. */
static void expect_tiny_status(const char *dir, const char *config, tiny_names *t,
                               enc_status want, const char *s1, const char *s2)
{
    st_archive *a;
    qwen3_tensors qt;
    enc_status s = tiny_load(dir, config, t, &a, &qt);
    CHECK(qt.layers == NULL);
    expect_error(dir, s, want, s1, s2, (const char *)NULL);
    st_close(a);
}

static void expect_tiny_fail(const char *dir, const char *config, tiny_names *t, const char *s1,
                             const char *s2)
{
    expect_tiny_status(dir, config, t, ENC_ERR_FORMAT, s1, s2);
}

static void test_qwen3_bad(void)
{
    tiny_names t;
    tiny_tensors(&t, TINY_LAYERS, 0);
    { /* untied without lm_head.weight: an embedding model's checkpoint, found with no
       * output matrix (a generative load refuses it: qwen3_model_load) */
        st_archive *a;
        qwen3_tensors qt;
        CHECK(tiny_load("q_no_head", TINY_CONFIG(false, 2), &t, &a, &qt) == ENC_OK);
        CHECK(qt.layers != NULL && qt.embed != NULL && qt.lm_head == NULL);
        qwen3_tensors_free(&qt);
        st_close(a);
    }

    tiny_tensors(&t, TINY_LAYERS, 1);
    tiny_drop(&t, "model.layers.1.mlp.up_proj.weight");
    expect_tiny_fail("q_missing", TINY_CONFIG(false, 2), &t, "'model.layers.1.mlp.up_proj.weight'",
                     "missing from the checkpoint in /");

    tiny_tensors(&t, TINY_LAYERS, 1);
    tspec *q = tiny_find(&t, "model.layers.0.self_attn.q_proj.weight");
    q->shape[0] = 8, q->shape[1] = 16; /* transposed */
    expect_tiny_fail("q_shape", TINY_CONFIG(false, 2), &t,
                     "q_shape/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight'",
                     "[8, 16], config.json implies [16, 8]");

    tiny_tensors(&t, TINY_LAYERS, 1);
    tiny_find(&t, "model.layers.1.self_attn.k_norm.weight")->n_dims = 2; /* [4, 1]... */
    tiny_find(&t, "model.layers.1.self_attn.k_norm.weight")->shape[1] = 1;
    expect_tiny_fail("q_rank", TINY_CONFIG(false, 2), &t,
                     "'model.layers.1.self_attn.k_norm.weight'", "[4, 1]");

    tiny_tensors(&t, TINY_LAYERS, 1);
    tiny_find(&t, "model.embed_tokens.weight")->shape[0] = 11;
    expect_tiny_fail("q_vocab", TINY_CONFIG(false, 2), &t, "'model.embed_tokens.weight'",
                     "[11, 8]");

    tiny_tensors(&t, 3, 1); /* a third layer the config does not have */
    expect_tiny_fail("q_extra_layer", TINY_CONFIG(false, 2), &t, "model.layers.2.",
                     "num_hidden_layers = 2");

    tiny_tensors(&t, TINY_LAYERS, 1);
    tiny_add(&t, "model.layers.0.self_attn.q_proj.bias", "F32", 1, 16, 0);
    expect_tiny_fail("q_bias", TINY_CONFIG(false, 2), &t,
                     "q_bias/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.bias'",
                     "not used");

    tiny_tensors(&t, TINY_LAYERS, 1);
    tiny_add(&t, "model.layers.01.mlp.up_proj.weight", "F32", 1, 1, 0);
    expect_tiny_fail("q_leading_zero", TINY_CONFIG(false, 2), &t,
                     "'model.layers.01.mlp.up_proj.weight'", "not used");

    tiny_tensors(&t, TINY_LAYERS, 1);
    tiny_add(&t, "model.layers.99999999999999999999999.mlp.up_proj.weight", "F32", 1, 1, 0);
    expect_tiny_fail("q_huge_layer", TINY_CONFIG(false, 2), &t, "99999999999999999999999",
                     "not used");

    /* num_key_value_heads absent: defaults to 4 heads, the GQA k_proj disagrees */
    tiny_tensors(&t, TINY_LAYERS, 1);
    expect_tiny_fail("q_no_kv_heads",
                     "{\"hidden_size\": 8, \"intermediate_size\": 12, \"num_hidden_layers\": 2,"
                     " \"num_attention_heads\": 4, \"head_dim\": 4, \"vocab_size\": 10,"
                     " \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000}",
                     &t, "'model.layers.0.self_attn.k_proj.weight' has shape [8, 8]",
                     "config.json implies [16, 8]");

    /* a config with far more layers than the checkpoint holds */
    tiny_tensors(&t, TINY_LAYERS, 1);
    expect_tiny_fail("q_many_layers", TINY_CONFIG(false, 1000000), &t,
                     "'model.layers.2.input_layernorm.weight'", "missing");
}

/* --- Qwen3-MoE ------------------------------------------------------------ */

static void test_moe_config(void)
{
    qwen3_config c;
    const char *const moe[][2] = {{"model_type", "\"qwen3_moe\""},
                                  {"num_experts", "16"},
                                  {"num_experts_per_tok", "4"},
                                  {"moe_intermediate_size", "96"},
                                  {"norm_topk_prob", "true"},
                                  {"decoder_sparse_step", "2"},
                                  {"mlp_only_layers", "[3, 0]"}};
    char *json = config_edit(moe, 7);
    enc_clear_error();
    enc_status s = qwen3_config_parse(json, CFG_WHERE, &c);
    free(json);
    CHECK(s == ENC_OK);
    CHECK(c.n_experts == 16 && c.n_experts_per_tok == 4 && c.moe_intermediate_size == 96);
    CHECK(c.norm_topk_prob == 1 && c.decoder_sparse_step == 2 && c.n_mlp_only == 2);
    /* sparse: (l + 1) % 2 == 0 and not 3 -> 1, 5, 7, ...; never 0, 2, 3 */
    CHECK(!qwen3_config_layer_is_moe(&c, 0) && qwen3_config_layer_is_moe(&c, 1));
    CHECK(!qwen3_config_layer_is_moe(&c, 2) && !qwen3_config_layer_is_moe(&c, 3));
    CHECK(qwen3_config_layer_is_moe(&c, 5) && !qwen3_config_layer_is_moe(&c, 6));

    /* Qwen3MoeConfig's defaults */
    s = parse_with("model_type", "\"qwen3_moe\"", &c);
    CHECK(s == ENC_OK && c.n_experts == 128 && c.n_experts_per_tok == 8 &&
          c.moe_intermediate_size == 768 && !c.norm_topk_prob && c.decoder_sparse_step == 1 &&
          c.n_mlp_only == 0 && qwen3_config_layer_is_moe(&c, 0));
    /* a dense config ignores the MoE fields */
    s = parse_with("num_experts", "8", &c);
    CHECK(s == ENC_OK && c.n_experts == 0 && !qwen3_config_layer_is_moe(&c, 0));

    const enc_status F = ENC_ERR_FORMAT, U = ENC_ERR_UNSUPPORTED;
    struct {
        const char *key, *value;
        enc_status want;
        const char *s1, *s2;
    } bad[] = {
        {"num_experts_per_tok", "17", F, "'num_experts_per_tok' (17)", "num_experts (16)"},
        {"num_experts", "0", F, "'num_experts'", NULL},
        {"num_experts", "513", U, "'num_experts' is 513", "at most 512"},
        {"mlp_only_layers", "[28]", F, "'mlp_only_layers' names layer 28", "is 28"},
        {"mlp_only_layers", "[1, 1]", F, "'mlp_only_layers' names layer 1 twice", NULL},
        {"mlp_only_layers", "3", F, "'mlp_only_layers' must be an array", NULL},
        {"mlp_only_layers", "[-1]", F, "'mlp_only_layers'", "-1"},
        {"decoder_sparse_step", "0", F, "'decoder_sparse_step'", NULL},
        {"norm_topk_prob", "1", F, "'norm_topk_prob'", "true or false"},
        {"shared_expert_intermediate_size", "512", U, "'shared_expert_intermediate_size'",
         "shared expert"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *const e[4][2] = {
            {"model_type", "\"qwen3_moe\""},
            {"num_experts", strcmp(bad[i].key, "num_experts") ? "16" : bad[i].value},
            {"num_experts_per_tok", strcmp(bad[i].key, "num_experts_per_tok") ? "4" : bad[i].value},
            {bad[i].key, bad[i].value}};
        json = config_edit(e, strncmp(bad[i].key, "num_experts", 11) ? 4 : 3);
        enc_clear_error();
        s = qwen3_config_parse(json, CFG_WHERE, &c);
        free(json);
        expect_error(bad[i].key, s, bad[i].want, "config.json", bad[i].s1, bad[i].s2,
                     (const char *)NULL);
    }
    expect_cfg_fail("model_type", "\"qwen2_moe\"", U, "'qwen2_moe'", "qwen3 and qwen3_moe");
}

/* The tiny model with layer 0 sparse (3 experts of 6, k = 2) and layer 1
 * dense through mlp_only_layers. */
#define TINY_MOE_CONFIG                                                                            \
    "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 8, \"intermediate_size\": 12,"             \
    " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"           \
    " \"head_dim\": 4, \"vocab_size\": 10, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000,"        \
    " \"num_experts\": 3, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 6,"              \
    " \"mlp_only_layers\": [1]}"

static void tiny_moe_tensors(tiny_names *t)
{
    char n[64];
    static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
    tiny_tensors(t, TINY_LAYERS, 1);
    for (int i = 0; i < 3; i++) {
        snprintf(n, sizeof n, "model.layers.0.mlp.%s.weight", proj[i]);
        tiny_drop(t, n);
    }
    tiny_add(t, "model.layers.0.mlp.gate.weight", "F32", 2, 3, 8);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++) {
            snprintf(n, sizeof n, "model.layers.0.mlp.experts.%d.%s.weight", j, proj[i]);
            tiny_add(t, n, "BF16", 2, i == 2 ? 8 : 6, i == 2 ? 6 : 8);
        }
}

static void expect_moe_fail(const char *dir, tiny_names *t, enc_status want, const char *s1,
                            const char *s2)
{
    expect_tiny_status(dir, TINY_MOE_CONFIG, t, want, s1, s2);
}

static void test_moe_tensors(void)
{
    tiny_names t;
    st_archive *a;
    qwen3_tensors qt;
    tiny_moe_tensors(&t);
    enc_status s = tiny_load("moe_ok", TINY_MOE_CONFIG, &t, &a, &qt);
    CHECK(s == ENC_OK);
    if (s == ENC_OK) {
        CHECK(qt.layers[0].router == st_find(a, "model.layers.0.mlp.gate.weight"));
        CHECK(qt.layers[0].gate == NULL && qt.layers[1].router == NULL && qt.layers[1].gate);
        CHECK(qwen3_tensors_expert(a, 0, 2, 2) ==
              st_find(a, "model.layers.0.mlp.experts.2.down_proj.weight"));
    } else {
        fprintf(stderr, "  %s\n", enc_last_error());
    }
    qwen3_tensors_free(&qt);
    st_close(a);

    const enc_status F = ENC_ERR_FORMAT;
    tiny_moe_tensors(&t);
    tiny_drop(&t, "model.layers.0.mlp.experts.2.down_proj.weight");
    expect_moe_fail("moe_missing", &t, F, "'model.layers.0.mlp.experts.2.down_proj.weight'",
                    "missing");
    tiny_moe_tensors(&t);
    tiny_find(&t, "model.layers.0.mlp.experts.1.up_proj.weight")->shape[0] = 5;
    expect_moe_fail("moe_shape", &t, F,
                    "moe_shape/model.safetensors: tensor 'model.layers.0.mlp.experts.1.up_proj.weight'",
                    "[5, 8], config.json implies [6, 8]");
    tiny_moe_tensors(&t);
    tiny_find(&t, "model.layers.0.mlp.gate.weight")->shape[0] = 4;
    expect_moe_fail("moe_router", &t, F, "'model.layers.0.mlp.gate.weight' has shape [4, 8]",
                    "[3, 8]");
    tiny_moe_tensors(&t);
    tiny_find(&t, "model.layers.0.mlp.experts.2.gate_proj.weight")->dtype = "F16";
    expect_moe_fail("moe_dtype", &t, F, "'model.layers.0.mlp.experts.2.gate_proj.weight' has dtype F16",
                    "share one dtype");
    tiny_moe_tensors(&t);
    tiny_add(&t, "model.layers.0.mlp.experts.3.up_proj.weight", "BF16", 2, 6, 8);
    expect_moe_fail("moe_extra_expert", &t, F, "'model.layers.0.mlp.experts.3.up_proj.weight'",
                    "not used by a Qwen3-MoE model");
    tiny_moe_tensors(&t);
    tiny_add(&t, "model.layers.0.mlp.gate_proj.weight", "F32", 2, 12, 8);
    expect_moe_fail("moe_dense_in_sparse", &t, F, "'model.layers.0.mlp.gate_proj.weight'",
                    "unexpected");
    tiny_moe_tensors(&t);
    tiny_add(&t, "model.layers.1.mlp.gate.weight", "F32", 2, 3, 8);
    expect_moe_fail("moe_router_in_dense", &t, F, "'model.layers.1.mlp.gate.weight'", "unexpected");
    tiny_moe_tensors(&t);
    tiny_add(&t, "model.layers.0.mlp.shared_expert.up_proj.weight", "F32", 2, 6, 8);
    expect_moe_fail("moe_shared", &t, ENC_ERR_UNSUPPORTED,
                    "'model.layers.0.mlp.shared_expert.up_proj.weight' is a shared expert",
                    "Qwen2-MoE");
}

/* --- main --------------------------------------------------------------- */

int main(void)
{
    snprintf(g_root, sizeof g_root, "%s", "/tmp/encore-ckpt-XXXXXX");
    const char *tmp = getenv("TMPDIR");
    if (tmp && strlen(tmp) + sizeof "/encore-ckpt-XXXXXX" <= sizeof g_root)
        snprintf(g_root, sizeof g_root, "%s/encore-ckpt-XXXXXX", tmp);
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_single_valid();
    test_single_bad_header();
    test_single_bad_entries();
    test_single_edge_ok();
    test_sharded_valid();
    test_sharded_bad();
    test_config_valid();
    test_config_bad();
    test_generation_config();
    test_qwen3_valid();
    test_qwen3_bad();
    test_moe_config();
    test_moe_tensors();
    nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    printf("%d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
