/* ebnf_buf.c - EBNF text building: growth, escapes for literals and classes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/ebnf_buf.h"

static int ebnf__reserve(ebnf_buf *b, size_t more)
{
    if (b->oom) return -1;
    if (b->n + more + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->n + more + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void ebnf_buf_append(ebnf_buf *b, const char *s, size_t n)
{
    if (ebnf__reserve(b, n)) return;
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void ebnf_buf_printf(ebnf_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || ebnf__reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

int32_t ebnf_utf8_next(const char *s, size_t n, size_t *i)
{
    unsigned char c = (unsigned char)s[*i];
    int len = c < 0x80             ? 1
              : (c & 0xE0) == 0xC0 ? 2
              : (c & 0xF0) == 0xE0 ? 3
              : (c & 0xF8) == 0xF0 ? 4
                                   : 0;
    if (!len || *i + (size_t)len > n) return -1;
    uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (int k = 1; k < len; k++) {
        unsigned char d = (unsigned char)s[*i + (size_t)k];
        if ((d & 0xC0) != 0x80) return -1;
        v = (v << 6) | (d & 0x3Fu);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return -1;
    *i += (size_t)len;
    return (int32_t)v;
}

/* One code point inside "..." or [...]: printable ASCII as itself (special
 * characters escaped), the rest as \x, \u or \U escapes. */
static void ebnf__cp(ebnf_buf *b, uint32_t cp, int in_class)
{
    if (cp >= 0x20 && cp < 0x7F) {
        int special = cp == '"' || cp == '\\' ||
                      (in_class && (cp == ']' || cp == '-' || cp == '^' || cp == '['));
        char t[3] = {'\\', (char)cp, 0};
        ebnf_buf_append(b, special ? t : t + 1, special ? 2 : 1);
    } else if (cp < 0x100) {
        ebnf_buf_printf(b, "\\x%02X", cp);
    } else if (cp < 0x10000) {
        ebnf_buf_printf(b, "\\u%04X", cp);
    } else {
        ebnf_buf_printf(b, "\\U%08X", cp);
    }
}

void ebnf_buf_literal_cp(ebnf_buf *b, uint32_t cp)
{
    ebnf_buf_append(b, "\"", 1);
    ebnf__cp(b, cp, 0);
    ebnf_buf_append(b, "\"", 1);
}

enc_status ebnf_buf_literal(ebnf_buf *b, const char *bytes, size_t n, const char *what)
{
    ebnf_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        size_t at = i;
        int32_t cp = ebnf_utf8_next(bytes, n, &i);
        if (cp < 0)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: invalid UTF-8 at byte %zu", what, at);
        ebnf__cp(b, (uint32_t)cp, 0);
    }
    ebnf_buf_append(b, "\"", 1);
    return ENC_OK;
}

void ebnf_buf_class(ebnf_buf *b, const cp_ranges *r)
{
    ebnf_buf_append(b, "[", 1);
    for (int i = 0; i < r->n; i++) {
        ebnf__cp(b, r->lo[i], 1);
        if (r->hi[i] != r->lo[i]) {
            ebnf_buf_append(b, "-", 1);
            ebnf__cp(b, r->hi[i], 1);
        }
    }
    ebnf_buf_append(b, "]", 1);
}

enc_status ebnf_buf_finish(ebnf_buf *b, char **out)
{
    *out = NULL;
    if (b->oom || ebnf__reserve(b, 0)) {
        ebnf_buf_free(b);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar: out of memory writing EBNF");
    }
    b->s[b->n] = 0;
    *out = b->s;
    b->s = NULL;
    b->n = b->cap = 0;
    return ENC_OK;
}

void ebnf_buf_free(ebnf_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
}
