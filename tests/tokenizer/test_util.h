/* test_util.h - small helpers shared by the tokenizer test programs.
 *
 * CHECK(cond, fmt, ...) counts a failure and prints where it happened; a
 * program ends with `return test_summary("name");`. Header-only. */
#ifndef ENC_TESTS_TOKENIZER_TEST_UTIL_H
#define ENC_TESTS_TOKENIZER_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mapfile.h"
#include "tokenizer/tokenizer.h"

static int test_n_checks, test_n_failed;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        test_n_checks++;                                                       \
        if (!(cond)) {                                                         \
            test_n_failed++;                                                   \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__,   \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
        }                                                                      \
    } while (0)

/* Stop the program when a precondition (loading a file) fails. */
#define REQUIRE(expr)                                                          \
    do {                                                                       \
        enc_status req__s = (expr);                                            \
        if (req__s != ENC_OK) {                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,      \
                    enc_last_error());                                         \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static inline int test_summary(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, test_n_checks, test_n_failed);
    return test_n_failed ? 1 : 0;
}

/* The lines of a file (without their '\n'), in one malloc'd buffer that
 * *lines points into; free(lines[0]) then free(lines). */
static inline size_t test_read_lines(const char *path, char ***lines)
{
    char *text;
    size_t size;
    REQUIRE(file_read_all(path, &text, &size));
    size_t n = 0, cap = 64;
    *lines = malloc(cap * sizeof **lines);
    for (char *p = text; p < text + size;) {
        char *nl = memchr(p, '\n', (size_t)(text + size - p));
        if (nl) *nl = '\0';
        if (n == cap) *lines = realloc(*lines, (cap *= 2) * sizeof **lines);
        (*lines)[n++] = p;
        p = nl ? nl + 1 : text + size;
    }
    if (n == 0) free(text);
    return n;
}

static inline void test_print_ids(FILE *f, const int32_t *ids, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", ids[i]);
    fputc(']', f);
}

/* "want [...] got [...]" and a newline on stderr: what a failed check of ids saw. */
static inline void test_print_want_got(const int32_t *want, size_t n_want, const int32_t *got,
                                       size_t n_got)
{
    fprintf(stderr, "want ");
    test_print_ids(stderr, want, n_want);
    fprintf(stderr, " got ");
    test_print_ids(stderr, got, n_got);
    fprintf(stderr, "\n");
}

static inline int test_ids_equal(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

#endif
