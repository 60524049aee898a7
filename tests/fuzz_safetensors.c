/* fuzz_safetensors.c - libFuzzer target for the safetensors reader.
 *
 * Each input is written to one temp file (the reader maps files, it has no
 * in-memory entry point) and opened with st_open_file. An input that opens
 * must then be safe to use: every tensor's bytes are read (inside the
 * mapping, as ASan checks) and every name is found again by st_find. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("st", data, size);
    st_archive *a = NULL;
    if (st_open_file(path, &a) != ENC_OK) {
        if (a) abort(); /* failure must leave nothing behind */
        return 0;
    }
    unsigned sum = 0;
    for (size_t i = 0; i < st_count(a); i++) {
        const st_tensor *t = st_get(a, i);
        if (st_find(a, t->name) != t) abort();
        if (t->n_dims < 0 || t->n_dims > ST_MAX_DIMS) abort();
        const unsigned char *p = t->data;
        for (size_t k = 0; k < t->n_bytes; k++)
            sum += p[k];
    }
    st_close(a);
    return (int)(sum & 0); /* keep the reads */
}
