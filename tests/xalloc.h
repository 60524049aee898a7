/* xalloc.h - xcalloc for the C tests: calloc that never returns NULL (it
 * exits on exhaustion, a test's inputs being small), zero-sized requests
 * given one element. */
#ifndef ENC_TESTS_XALLOC_H
#define ENC_TESTS_XALLOC_H

#include <stdio.h>
#include <stdlib.h>

static inline void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

#endif
