/* fuzz_file.h - the temp file a libFuzzer target writes each input to, for
 * readers that map files and have no in-memory entry point: created on first
 * use (in /dev/shm when there is one: a write per input is ~10x faster
 * there) and removed at exit. */
#ifndef ENC_TESTS_FUZZ_FILE_H
#define ENC_TESTS_FUZZ_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz__path[256];

static void fuzz__cleanup(void)
{
    unlink(fuzz__path);
}

/* Write data to the temp file and return its path; aborts on an I/O error. */
static const char *fuzz_write_file(const char *tag, const void *data, size_t size)
{
    if (!fuzz__path[0]) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fuzz__path, sizeof fuzz__path, "%s/encore-fuzz-%s-XXXXXX", tmp, tag);
        int fd = mkstemp(fuzz__path);
        if (fd < 0) {
            perror("mkstemp");
            abort();
        }
        close(fd);
        atexit(fuzz__cleanup);
    }
    FILE *f = fopen(fuzz__path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    return fuzz__path;
}

#endif
