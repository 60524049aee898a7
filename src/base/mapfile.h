/* mapfile.h - read-only memory mapping of a whole file. */
#ifndef ENC_BASE_MAPFILE_H
#define ENC_BASE_MAPFILE_H

#include <stddef.h>

#include "base/status.h"

typedef struct enc_mapfile {
    const unsigned char *data; /* NULL for an empty file */
    size_t size;
} enc_mapfile;

/* Map path read-only. On failure nothing is left open and the last error
 * names the file. */
enc_status mapfile_open(const char *path, enc_mapfile *out);
void mapfile_close(enc_mapfile *m);
/* Give back the resident pages of [p, p + n) inside a mapping: the whole
 * pages it covers leave the process (a later read fetches them again from
 * the file). For data that was copied elsewhere, so that it is not held
 * twice. Best effort: nothing happens where the system does not support it. */
void mapfile_drop_pages(const void *p, size_t n);

/* Read a whole (small) file into a NUL-terminated malloc'd buffer; the caller
 * frees it. A pipe is read to its end; past FILE_READ_ALL_MAX bytes it is an
 * error. */
#define FILE_READ_ALL_MAX ((size_t)256 << 20)
enc_status file_read_all(const char *path, char **out, size_t *size);
/* The same, but a file that does not exist is no error: *out NULL (one that
 * exists and cannot be read still is). */
enc_status file_read_if_present(const char *path, char **out, size_t *size);

/* "dir/name" in *out (malloc'd; the caller frees it). */
enc_status file_path_in(const char *dir, const char *name, char **out);

#endif
