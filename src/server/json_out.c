/* json_out.c - JSON into a growable string (json_out.h). The buffer doubles
 * as it fills; commas come from one flag per open object or array (first
 * item yet to come) and one for a value that follows its key. */
#include "json_out.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_out_init(json_out *w)
{
    memset(w, 0, sizeof *w);
    w->first[0] = 1;
}

void json_out_free(json_out *w)
{
    free(w->buf);
    json_out_init(w);
}

char *json_out_finish(json_out *w)
{
    char *text = w->oom ? NULL : w->buf ? w->buf : calloc(1, 1);
    if (w->oom) free(w->buf);
    json_out_init(w);
    return text;
}

static void json_out__put(json_out *w, const char *s, size_t n)
{
    if (w->oom) return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n + 1)
            cap *= 2;
        char *p = realloc(w->buf, cap);
        if (!p) {
            w->oom = 1;
            return;
        }
        w->buf = p;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

/* The comma before an item, unless it is the first of its object or array
 * or the value of the key just written. */
static void json_out__sep(json_out *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (!w->first[w->depth]) json_out__put(w, ",", 1);
    w->first[w->depth] = 0;
}

static void json_out__open(json_out *w, const char *bracket)
{
    json_out__sep(w);
    if (w->depth == JSON_OUT_MAX_DEPTH) {
        w->oom = 1; /* too deep: fails as out of memory does */
        return;
    }
    json_out__put(w, bracket, 1);
    w->first[++w->depth] = 1;
}

static void json_out__close(json_out *w, const char *bracket)
{
    if (w->depth == 0) {
        w->oom = 1; /* nothing open */
        return;
    }
    w->depth--;
    json_out__put(w, bracket, 1);
}

void json_out_begin_object(json_out *w)
{
    json_out__open(w, "{");
}
void json_out_end_object(json_out *w)
{
    json_out__close(w, "}");
}
void json_out_begin_array(json_out *w)
{
    json_out__open(w, "[");
}
void json_out_end_array(json_out *w)
{
    json_out__close(w, "]");
}

void json_out_member_string(json_out *w, const char *name, const char *s)
{
    json_out_key(w, name);
    json_out_string(w, s);
}

void json_out_member_number(json_out *w, const char *name, double d)
{
    json_out_key(w, name);
    json_out_number(w, d);
}

void json_out_raw(json_out *w, const char *json)
{
    json_out__sep(w);
    json_out__put(w, json, strlen(json));
}

void json_out_members(json_out *w, const char *members)
{
    if (!members[0]) return;
    json_out__sep(w);
    json_out__put(w, members, strlen(members));
}

int json_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, min = 0x80, c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, min = 0x800, c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, min = 0x10000, c &= 0x07;
        } else {
            return 0;
        }
        if (len - i <= n) return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            c = (c << 6) | (s[i + k] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
        i += n + 1;
    }
    return 1;
}

/* s quoted: '"' and '\\' escaped, \b \f \n \r \t by name, the other bytes
 * below 0x20 as \u00xx (cJSON's escapes), well-formed UTF-8 as it is, and a
 * byte that starts no well-formed sequence (a name cut inside a character,
 * a client's raw bytes echoed in an error) as \ufffd: the document parses. */
static void json_out__quoted(json_out *w, const char *s)
{
    json_out__put(w, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x80) { /* the sequence's length by its lead byte, then checked whole */
            size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            if (n && json_utf8_valid(s, n)) { /* stops at a NUL: no byte read past it */
                s += n - 1;
                continue;
            }
            json_out__put(w, run, (size_t)(s - run));
            json_out__put(w, "\\ufffd", 6);
            run = s + 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        json_out__put(w, run, (size_t)(s - run));
        run = s + 1;
        char esc[8];
        const char *named = c == '"'    ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\b' ? "\\b"
                            : c == '\f' ? "\\f"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                                        : NULL;
        if (!named) snprintf(esc, sizeof esc, "\\u%04x", c);
        json_out__put(w, named ? named : esc, strlen(named ? named : esc));
    }
    json_out__put(w, run, (size_t)(s - run));
    json_out__put(w, "\"", 1);
}

void json_out_key(json_out *w, const char *key)
{
    json_out__sep(w);
    json_out__quoted(w, key ? key : "");
    json_out__put(w, ":", 1);
    w->after_key = 1;
}

void json_out_string(json_out *w, const char *s)
{
    json_out__sep(w);
    json_out__quoted(w, s ? s : "");
}

void json_out_null(json_out *w)
{
    json_out__sep(w);
    json_out__put(w, "null", 4);
}

void json_out_string_or_null(json_out *w, const char *s)
{
    if (s)
        json_out_string(w, s);
    else
        json_out_null(w);
}

/* 1 when a and b differ by at most one rounding step of the larger */
static int json_out__close_enough(double a, double b)
{
    double big = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= big * DBL_EPSILON;
}

/* cJSON's format: 15 significant digits when they read back (within a
 * rounding step), else 17. */
void json_out_number(json_out *w, double d)
{
    if (isnan(d) || isinf(d)) {
        json_out_null(w);
        return;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%1.15g", d);
    if (!json_out__close_enough(strtod(buf, NULL), d)) snprintf(buf, sizeof buf, "%1.17g", d);
    json_out__sep(w);
    json_out__put(w, buf, strlen(buf));
}
