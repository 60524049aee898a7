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

#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz__path[256];

static void fuzz__cleanup(void)
{
    unlink(fuzz__path);
}

/* The temp file path, created on first use and removed at exit. */
static const char *fuzz__file(void)
{
    if (fuzz__path[0]) return fuzz__path;
    /* /dev/shm when there is one: a file write per input is ~10x faster there */
    const char *tmp = getenv("TMPDIR");
    if (!tmp) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz__path, sizeof fuzz__path, "%s/encore-fuzz-st-XXXXXX", tmp);
    int fd = mkstemp(fuzz__path);
    if (fd < 0) {
        perror("mkstemp");
        abort();
    }
    close(fd);
    atexit(fuzz__cleanup);
    return fuzz__path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz__file();
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();

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
