/* test_gguf.c - the GGUF writer and reader against each other and against
 * bytes laid out by hand.
 *
 * 1. A file written by gguf_writer (every metadata type it writes, an
 *    alignment of 64, tensors of every dtype with fixed-seed bytes) reads
 *    back with every value, shape (ne reversed) and byte equal, and every
 *    tensor's data at a multiple of the alignment.
 * 2. A file assembled byte by byte here from the format's definition (not by
 *    the writer) reads back: the reader follows the format, not the writer.
 * 3. The typed getters refuse a key of another type, naming it.
 * 4. The hand-laid file's kvs copied by gguf_writer_add_kv and its tensor
 *    added again write the same bytes.
 * 5. Tensors made by fill functions at write time: their bytes in the file,
 *    progress up to 1; a fill's error fails the write and leaves no file.
 * Bad files (truncated, bad magic, ...) are checked end to end through the
 * encore program by tests/test_gguf.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model/gguf.h"
#include "model/gguf_write.h"

static char g_path[256];

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint8_t rng_byte(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (uint8_t)(rng_state >> 24);
}

typedef struct want_tensor {
    const char *name;
    enc_dtype dtype;
    int n_dims;
    int64_t shape[4];
    size_t n_bytes;
    uint8_t *data;
} want_tensor;

static void test_round_trip(void)
{
    want_tensor t[] = {
        {"a.f32", ENC_F32, 2, {3, 5}, 3 * 5 * 4, NULL},
        {"b.f16", ENC_F16, 3, {2, 1, 4}, 2 * 4 * 2, NULL},
        {"c.bf16", ENC_BF16, 1, {7}, 7 * 2, NULL},
        {"d.q8_0", ENC_Q8_0, 2, {2, 64}, 2 * 2 * 34, NULL},
        {"e.q4_0", ENC_Q4_0, 2, {3, 32}, 3 * 18, NULL},
        {"f.q4_k", ENC_Q4_K, 2, {1, 256}, 144, NULL},
        {"g.q5_k", ENC_Q5_K, 2, {2, 256}, 2 * 176, NULL},
        {"h.q6_k", ENC_Q6_K, 4, {1, 1, 1, 512}, 2 * 210, NULL},
    };
    enum { NT = sizeof t / sizeof t[0] };
    gguf_writer *w = NULL;
    CHECK(gguf_writer_create(&w) == ENC_OK);
    CHECK(gguf_writer_set_alignment(w, 64) == ENC_OK);
    CHECK(gguf_writer_add_str(w, "general.architecture", "qwen3", 5) == ENC_OK);
    CHECK(gguf_writer_add_u32(w, "qwen3.block_count", 28) == ENC_OK);
    CHECK(gguf_writer_add_i32(w, "x.neg", -7) == ENC_OK);
    CHECK(gguf_writer_add_f32(w, "x.eps", 1e-6f) == ENC_OK);
    CHECK(gguf_writer_add_bool(w, "x.flag", 1) == ENC_OK);
    const char *strs[] = {"a", "", "\xc4\xa0hello"};
    CHECK(gguf_writer_add_str_array(w, "x.strs", strs, NULL, 3) == ENC_OK);
    int32_t ints[] = {1, -2, 3000000};
    CHECK(gguf_writer_add_i32_array(w, "x.ints", ints, 3) == ENC_OK);
    for (int i = 0; i < NT; i++) {
        t[i].data = malloc(t[i].n_bytes);
        for (size_t k = 0; k < t[i].n_bytes; k++)
            t[i].data[k] = rng_byte();
        CHECK(gguf_writer_add_tensor(w, t[i].name, t[i].dtype, t[i].n_dims, t[i].shape, t[i].data,
                                     t[i].n_bytes) == ENC_OK);
    }
    int64_t bad_shape[2] = {2, 33};
    CHECK(gguf_writer_add_tensor(w, "bad", ENC_Q8_0, 2, bad_shape, t[0].data, 68) ==
          ENC_ERR_INVALID_ARGUMENT);
    CHECK(gguf_writer_write(w, g_path) == ENC_OK);
    gguf_writer_free(w);

    gguf_file *g = NULL;
    CHECK(gguf_open(g_path, &g) == ENC_OK);
    if (!g) {
        fprintf(stderr, "%s\n", enc_last_error());
        return;
    }
    CHECK(gguf_alignment(g) == 64);
    CHECK(gguf_kv_count(g) == 8);
    gguf_str s;
    int found = 0;
    int64_t iv = 0;
    double fv = 0;
    CHECK(gguf_get_str(g, "general.architecture", &s, &found) == ENC_OK && found && s.len == 5 &&
          !memcmp(s.p, "qwen3", 5));
    CHECK(gguf_get_int(g, "qwen3.block_count", &iv, &found) == ENC_OK && found && iv == 28);
    CHECK(gguf_get_int(g, "x.neg", &iv, &found) == ENC_OK && iv == -7);
    CHECK(gguf_get_float(g, "x.eps", &fv, &found) == ENC_OK && fv == (double)1e-6f);
    CHECK(gguf_find_kv(g, "x.flag")->type == GGUF_TYPE_BOOL &&
          gguf_find_kv(g, "x.flag")->data[0] == 1);
    const gguf_str *arr = NULL;
    uint64_t n = 0;
    CHECK(gguf_get_str_array(g, "x.strs", &arr, &n, &found) == ENC_OK && n == 3);
    for (uint64_t i = 0; n == 3 && i < 3; i++)
        CHECK(arr[i].len == strlen(strs[i]) && !memcmp(arr[i].p, strs[i], arr[i].len));
    const gguf_kv *ia = NULL;
    CHECK(gguf_get_int_array(g, "x.ints", &ia, &found) == ENC_OK && ia && ia->n == 3);
    for (uint64_t i = 0; ia && i < 3; i++)
        CHECK(gguf_array_int(ia, i) == ints[i]);
    CHECK(gguf_get_int(g, "absent", &iv, &found) == ENC_OK && !found);

    /* typed getters refuse other types, naming the key */
    CHECK(gguf_get_int(g, "x.eps", &iv, &found) == ENC_ERR_FORMAT &&
          strstr(enc_last_error(), "'x.eps'"));
    CHECK(gguf_get_str(g, "x.strs", &s, &found) == ENC_ERR_FORMAT);
    CHECK(gguf_get_str_array(g, "x.ints", &arr, &n, &found) == ENC_ERR_FORMAT);

    CHECK(gguf_tensor_count(g) == NT);
    for (int i = 0; i < NT; i++) {
        const st_tensor *r = gguf_find_tensor(g, t[i].name);
        CHECK(r != NULL);
        if (!r) continue;
        CHECK(r->dtype == t[i].dtype && r->n_dims == t[i].n_dims && r->n_bytes == t[i].n_bytes);
        for (int d = 0; d < t[i].n_dims; d++)
            CHECK(r->shape[d] == t[i].shape[d]);
        CHECK(!memcmp(r->data, t[i].data, t[i].n_bytes));
        CHECK(r->file_offset % 64 == 0);
    }
    gguf_close(g);
    for (int i = 0; i < NT; i++)
        free(t[i].data);
}

/* --- a file laid out by hand -------------------------------------------- */

typedef struct hbuf {
    unsigned char b[1024];
    size_t n;
} hbuf;

static void h_le(hbuf *h, uint64_t v, int k)
{
    for (int i = 0; i < k; i++)
        h->b[h->n++] = (unsigned char)(v >> (8 * i));
}
static void h_str(hbuf *h, const char *s)
{
    h_le(h, strlen(s), 8);
    memcpy(h->b + h->n, s, strlen(s));
    h->n += strlen(s);
}

/* g's kvs (gguf_writer_add_kv) and tensors written again: h's bytes. */
static void copy_and_compare(const gguf_file *g, const hbuf *h)
{
    char path[300];
    snprintf(path, sizeof path, "%s.copy", g_path);
    gguf_writer *w = NULL;
    CHECK(gguf_writer_create(&w) == ENC_OK);
    for (size_t i = 0; i < gguf_kv_count(g); i++)
        CHECK(gguf_writer_add_kv(w, gguf_kv_at(g, i)) == ENC_OK);
    for (size_t i = 0; i < gguf_tensor_count(g); i++) {
        const st_tensor *t = gguf_tensor_at(g, i);
        CHECK(gguf_writer_add_tensor(w, t->name, t->dtype, t->n_dims, t->shape, t->data,
                                     t->n_bytes) == ENC_OK);
    }
    CHECK(gguf_writer_write(w, path) == ENC_OK);
    gguf_writer_free(w);
    static unsigned char b[sizeof h->b + 1];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    CHECK(n == h->n && !memcmp(b, h->b, n));
    unlink(path);
}

static void test_by_hand(void)
{
    hbuf h = {{0}, 0};
    memcpy(h.b, "GGUF", 4);
    h.n = 4;
    h_le(&h, 3, 4);
    h_le(&h, 1, 8); /* one tensor */
    h_le(&h, 4, 8); /* four kvs */
    h_str(&h, "general.name");
    h_le(&h, GGUF_TYPE_STRING, 4);
    h_str(&h, "hand");
    h_str(&h, "u8s");
    h_le(&h, GGUF_TYPE_ARRAY, 4);
    h_le(&h, GGUF_TYPE_UINT8, 4);
    h_le(&h, 2, 8);
    h_le(&h, 250, 1);
    h_le(&h, 7, 1);
    h_str(&h, "i16");
    h_le(&h, GGUF_TYPE_INT16, 4);
    h_le(&h, 0xfffe, 2); /* -2 */
    h_str(&h, "f64s");
    h_le(&h, GGUF_TYPE_ARRAY, 4);
    h_le(&h, GGUF_TYPE_FLOAT64, 4);
    h_le(&h, 2, 8);
    h_le(&h, 0x3ff8000000000000ull, 8); /* 1.5 */
    h_le(&h, 0xc000000000000000ull, 8); /* -2.0 */
    h_str(&h, "w");
    h_le(&h, 2, 4); /* n_dims */
    h_le(&h, 4, 8); /* ne[0]: the row length */
    h_le(&h, 2, 8); /* ne[1]: rows */
    h_le(&h, 0, 4); /* F32 */
    h_le(&h, 0, 8); /* offset */
    size_t data = (h.n + 31) / 32 * 32;
    while (h.n < data)
        h.b[h.n++] = 0;
    for (int i = 0; i < 8; i++) {
        float f = (float)i + 0.5f;
        memcpy(h.b + h.n, &f, 4);
        h.n += 4;
    }
    FILE *f = fopen(g_path, "wb");
    CHECK(f && fwrite(h.b, 1, h.n, f) == h.n && fclose(f) == 0);
    gguf_file *g = NULL;
    CHECK(gguf_open(g_path, &g) == ENC_OK);
    if (!g) {
        fprintf(stderr, "%s\n", enc_last_error());
        return;
    }
    const st_tensor *w = gguf_find_tensor(g, "w");
    CHECK(w && w->n_dims == 2 && w->shape[0] == 2 && w->shape[1] == 4 && w->file_offset == data);
    float v = 0;
    if (w) memcpy(&v, (const char *)w->data + 5 * 4, 4);
    CHECK(v == 5.5f);
    const gguf_kv *kv = gguf_find_kv(g, "u8s");
    CHECK(kv && kv->n == 2 && gguf_array_int(kv, 0) == 250 && gguf_array_int(kv, 1) == 7);
    int64_t iv = 0;
    int found = 0;
    CHECK(gguf_get_int(g, "i16", &iv, &found) == ENC_OK && found && iv == -2);
    copy_and_compare(g, &h);
    gguf_close(g);
}

/* gguf_tensor_fill: bytes 0, 1, 2, ... (or an error when ctx says so) */
static enc_status fill_counting(void *ctx, void *dst, size_t n_bytes)
{
    if (*(int *)ctx) return enc_fail(ENC_ERR_IO, "fill refused");
    for (size_t i = 0; i < n_bytes; i++)
        ((unsigned char *)dst)[i] = (unsigned char)i;
    return ENC_OK;
}

static void note_progress(void *user, double fraction)
{
    *(double *)user = fraction;
}

static enc_status write_filled(int fail, double *progress)
{
    gguf_writer *w = NULL;
    CHECK(gguf_writer_create(&w) == ENC_OK);
    int64_t shape[2][2] = {{3, 32}, {2, 64}};
    for (int i = 0; i < 2; i++) {
        int *ctx = malloc(sizeof *ctx);
        *ctx = fail && i == 1;
        char name[8];
        snprintf(name, sizeof name, "t%d", i);
        CHECK(gguf_writer_add_tensor_fill(w, name, ENC_Q8_0, 2, shape[i],
                                          (size_t)shape[i][0] * 34 * (size_t)(shape[i][1] / 32),
                                          fill_counting, ctx) == ENC_OK);
    }
    gguf_writer_set_progress(w, note_progress, progress);
    enc_status s = gguf_writer_write(w, g_path);
    gguf_writer_free(w);
    return s;
}

static void test_fill(void)
{
    double progress = 0;
    CHECK(write_filled(0, &progress) == ENC_OK && progress == 1.0);
    gguf_file *g = NULL;
    CHECK(gguf_open(g_path, &g) == ENC_OK);
    for (size_t i = 0; g && i < 2; i++) {
        const st_tensor *t = gguf_tensor_at(g, i);
        CHECK(t->n_bytes == (i ? 2 * 68 : 3 * 34));
        for (size_t k = 0; k < t->n_bytes; k++)
            CHECK(((const unsigned char *)t->data)[k] == (unsigned char)k);
    }
    gguf_close(g);
    unlink(g_path);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", g_path);
    CHECK(write_filled(1, &progress) == ENC_ERR_IO && strstr(enc_last_error(), "fill refused"));
    CHECK(access(g_path, F_OK) != 0 && access(tmp, F_OK) != 0);
}

int main(void)
{
    snprintf(g_path, sizeof g_path, "/tmp/encore-test-gguf-%d.gguf", (int)getpid());
    test_round_trip();
    test_by_hand();
    test_fill();
    unlink(g_path);
    if (check_failures) fprintf(stderr, "test_gguf: %d checks failed\n", check_failures);
    return check_failures != 0;
}
