/* fail_realloc.h - a realloc that fails on demand, for out-of-memory paths.
 * A test program links with -Wl,--wrap=realloc and includes this once: every
 * realloc of the code under test comes here, and the one called when
 * realloc_fail_in counts down to 0 fails (-1: none does). */
#ifndef ENC_TESTS_FAIL_REALLOC_H
#define ENC_TESTS_FAIL_REALLOC_H

#include <stddef.h>

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
static int realloc_fail_in = -1;

void *__wrap_realloc(void *p, size_t n)
{
    if (realloc_fail_in >= 0 && realloc_fail_in-- == 0) return NULL;
    return __real_realloc(p, n);
}

#endif
