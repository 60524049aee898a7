/* status.h - errors as values.
 *
 * Every function that can fail returns an enc_status. The failing function
 * also records a human-readable message ("what and where": file, tensor, byte
 * offset, request field) in a thread-local last-error buffer, read with
 * enc_last_error(). ENC_ASSERT is for broken invariants only, never for bad
 * input. */
#ifndef ENC_BASE_STATUS_H
#define ENC_BASE_STATUS_H

#include <stdio.h>
#include <stdlib.h>

typedef enum enc_status {
    ENC_OK = 0,
    ENC_ERR_INVALID_ARGUMENT, /* a bad parameter from the caller */
    ENC_ERR_IO,               /* a file could not be opened/read/mapped */
    ENC_ERR_FORMAT,           /* malformed or inconsistent data in a file */
    ENC_ERR_UNSUPPORTED,      /* valid, but not something encore does */
    ENC_ERR_OUT_OF_MEMORY,    /* an allocation or a pool ran out */
    ENC_ERR_CAPTURE,          /* the capture contract was broken */
    ENC_ERR_INTERNAL,         /* a bug: an invariant did not hold */
} enc_status;

const char *enc_status_to_string(enc_status s);

/* Record a formatted message as this thread's last error and return s, so
 * that a failure reads: `return enc_fail(ENC_ERR_FORMAT, "%s: ...", path);` */
enc_status enc_fail(enc_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefix the current last error with more context ("loading DIR: <old>"). */
enc_status enc_fail_context(enc_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* This thread's last error message ("" when none). */
const char *enc_last_error(void);
void enc_clear_error(void);

#define ENC_ASSERT(cond)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Propagate a failure: `ENC_TRY(load(x));` */
#define ENC_TRY(expr)                                                          \
    do {                                                                       \
        enc_status enc__s = (expr);                                            \
        if (enc__s != ENC_OK) return enc__s;                                   \
    } while (0)

#endif
