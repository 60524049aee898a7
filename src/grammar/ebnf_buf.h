/* ebnf_buf.h - a growing text buffer for the compilers that write EBNF
 * (JSON Schema, regex, choices): printf, literals and classes with the
 * grammar's escapes. An allocation failure sticks and is reported once, by
 * ebnf_buf_finish. */
#ifndef ENC_GRAMMAR_EBNF_BUF_H
#define ENC_GRAMMAR_EBNF_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "grammar/cp_ranges.h"

typedef struct ebnf_buf {
    char *s;
    size_t n, cap;
    int oom;
} ebnf_buf;

void ebnf_buf_printf(ebnf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ebnf_buf_append(ebnf_buf *b, const char *s, size_t n);
/* bytes (UTF-8, else ENC_ERR_INVALID_ARGUMENT naming `what`) as one
 * "literal"; the empty string writes "". */
enc_status ebnf_buf_literal(ebnf_buf *b, const char *bytes, size_t n, const char *what);
/* One code point as a literal. */
void ebnf_buf_literal_cp(ebnf_buf *b, uint32_t cp);
/* A normalized, non-empty range set as a [class]. */
void ebnf_buf_class(ebnf_buf *b, const cp_ranges *r);
/* Hands the text to the caller (*out, malloc'ed) or frees it on failure. */
enc_status ebnf_buf_finish(ebnf_buf *b, char **out);
void ebnf_buf_free(ebnf_buf *b);

/* Decodes one UTF-8 character at s[*i] (advancing *i); -1 when invalid. */
int32_t ebnf_utf8_next(const char *s, size_t n, size_t *i);

#endif
