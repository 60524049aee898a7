/* fuzz_gguf.c - libFuzzer target for the GGUF reader.
 *
 * Each input is written to one temp file and opened with gguf_open. An input
 * that opens must then be safe to use: every metadata value (scalars, array
 * elements, every string's bytes) and every tensor's bytes are read (inside
 * the mapping, as ASan checks), and every key and tensor is found again by
 * name. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_file.h"
#include "model/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned fuzz__sum(const void *p, size_t n)
{
    unsigned s = 0;
    for (size_t i = 0; i < n; i++)
        s += ((const unsigned char *)p)[i];
    return s;
}

static unsigned fuzz__kv(const gguf_file *g, const gguf_kv *kv)
{
    if (gguf_find_kv(g, kv->key) != kv) abort();
    unsigned s = 0;
    if (kv->strs) {
        for (uint64_t i = 0; i < kv->n; i++)
            s += fuzz__sum(kv->strs[i].p, (size_t)kv->strs[i].len);
        return s;
    }
    int64_t iv = 0;
    int found = 0;
    if (gguf_get_int(g, kv->key, &iv, &found) == ENC_OK) s += (unsigned)iv;
    if (kv->type == GGUF_TYPE_ARRAY && gguf_get_int_array(g, kv->key, &kv, &found) == ENC_OK)
        for (uint64_t i = 0; i < kv->n; i++)
            s += (unsigned)gguf_array_int(kv, i);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("gguf", data, size);
    gguf_file *g = NULL;
    if (gguf_open(path, &g) != ENC_OK) {
        if (g) abort(); /* failure must leave nothing behind */
        return 0;
    }
    unsigned sum = 0;
    for (size_t i = 0; i < gguf_kv_count(g); i++)
        sum += fuzz__kv(g, gguf_kv_at(g, i));
    for (size_t i = 0; i < gguf_tensor_count(g); i++) {
        const st_tensor *t = gguf_tensor_at(g, i);
        if (gguf_find_tensor(g, t->name) != t) abort();
        if (t->n_dims < 1 || t->n_dims > 4 || t->file_offset % gguf_alignment(g)) abort();
        sum += fuzz__sum(t->data, t->n_bytes);
    }
    gguf_close(g);
    return (int)(sum & 0); /* keep the reads */
}
