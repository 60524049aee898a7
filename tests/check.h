/* check.h - the assertion of the C tests: CHECK(cond) reports the file, the
 * line and the condition, counts the failure and goes on; a test's main
 * returns check_failures != 0 at the end. */
#ifndef ENC_TESTS_CHECK_H
#define ENC_TESTS_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            check_failures++;                                                          \
        }                                                                              \
    } while (0)

#endif
