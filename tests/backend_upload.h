/* backend_upload.h - tests: a device buffer made and filled from host
 * bytes in one call (CHECKed). */
#ifndef ENCORE_TESTS_BACKEND_UPLOAD_H
#define ENCORE_TESTS_BACKEND_UPLOAD_H

#include "backend/backend.h"
#include "check.h"

static inline backend_buffer *upload(backend *be, const void *data, size_t bytes, const char *what)
{
    backend_buffer *b = NULL;
    CHECK(backend_buffer_alloc(be, bytes, what, &b) == ENC_OK);
    CHECK(backend_buffer_write(be, b, 0, data, bytes) == ENC_OK);
    return b;
}

#endif
