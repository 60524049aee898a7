/* mapfile.c - read-only memory mapping of a whole file; small-file reads. */
#define _DEFAULT_SOURCE /* madvise */
#define _POSIX_C_SOURCE 200809L
#include "base/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enc_status mapfile_open(const char *path, enc_mapfile *out)
{
    out->data = NULL;
    out->size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK); /* a FIFO is refused below, not waited on */
    if (fd < 0) return enc_fail(ENC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return enc_fail(ENC_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return enc_fail(ENC_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return enc_fail(ENC_ERR_IO, "%s: cannot map: %s", path, strerror(e));
        }
        out->data = p;
        out->size = (size_t)st.st_size;
    }
    close(fd);
    return ENC_OK;
}

void mapfile_drop_pages(const void *p, size_t n)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void mapfile_close(enc_mapfile *m)
{
    if (m->data) munmap((void *)m->data, m->size);
    m->data = NULL;
    m->size = 0;
}

/* file_read_all; with `optional`, a file that does not exist is no error
 * (*out NULL). */
static enc_status file__read(const char *path, int optional, char **out, size_t *size)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f && optional && errno == ENOENT) return ENC_OK;
    if (!f) return enc_fail(ENC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        if (cap >= FILE_READ_ALL_MAX) { /* /dev/zero, or a file that is not what it claims */
            free(buf);
            fclose(f);
            return enc_fail(ENC_ERR_FORMAT, "%s: larger than %d MiB", path,
                            (int)(FILE_READ_ALL_MAX >> 20));
        }
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: file too large to read", path);
    if (err) {
        free(buf);
        return enc_fail(ENC_ERR_IO, "%s: read error", path);
    }
    buf[n] = '\0';
    *out = buf;
    if (size) *size = n;
    return ENC_OK;
}

enc_status file_read_all(const char *path, char **out, size_t *size)
{
    return file__read(path, 0, out, size);
}

enc_status file_read_if_present(const char *path, char **out, size_t *size)
{
    return file__read(path, 1, out, size);
}

enc_status file_path_in(const char *dir, const char *name, char **out)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    *out = malloc(n);
    if (!*out) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s/%s: out of memory", dir, name);
    snprintf(*out, n, "%s/%s", dir, name);
    return ENC_OK;
}
