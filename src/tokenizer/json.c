/* json.c - the JSON text helpers of the tokenizer layer.
 *
 * chat_template_tojson reformats JSON text as Python's json.dumps (which
 * Hugging Face's tojson filter calls) prints the parsed value, for templates
 * that embed tool definitions: no parse tree is built, integers keep their
 * digits, floats are printed in Python's repr, strings are escaped as
 * json.dumps(ensure_ascii=False) escapes them.
 *
 * tok__json_py_str prints a value as Python's str() of json.loads' result
 * does (what a template's `string` filter and `~` print), and
 * tok__json_members lists an object's members, for the Qwen3-Coder template.
 *
 * tokenizer_json_unquote / _quote convert between JSON string literals and
 * UTF-8 byte strings that may hold NUL (cJSON stops a string at "\u0000"),
 * for the tokenize commands and the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_impl.h"

typedef struct tok__json {
    const char *s;
    size_t n, i;
    int depth;
    tok__bytes *out;
    int py; /* print as Python's repr() of the parsed value, not as json.dumps */
} tok__json;

enum { TOK__JSON_MAX_DEPTH = 128 };

static enc_status tok__json_value(tok__json *j);

static enc_status tok__json_err(const tok__json *j, const char *what)
{
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "JSON: %s at byte %zu", what, j->i);
}

static void tok__json_ws(tok__json *j)
{
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' ||
                           j->s[j->i] == '\n' || j->s[j->i] == '\r'))
        j->i++;
}

static enc_status tok__put(tok__bytes *out, const char *s)
{
    return tok__bytes_append(out, s, strlen(s));
}

static int tok__json_hex4(const char *s, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

static enc_status tok__json_put_cp(tok__bytes *out, unsigned cp)
{
    char u[4];
    size_t k;
    if (cp < 0x80) u[0] = (char)cp, k = 1;
    else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), k = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
        u[2] = (char)(0x80 | (cp & 0x3F)), k = 3;
    else
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), k = 4;
    return tok__bytes_append(out, u, k);
}

/* A \u escape of four hex digits (and its low surrogate) at s[i] == 'u'; lone surrogates
 * are refused: the result must be UTF-8. */
static enc_status tok__json_uescape(tok__json *j, tok__bytes *out)
{
    unsigned cp, lo;
    if (j->i + 5 > j->n || !tok__json_hex4(j->s + j->i + 1, &cp))
        return tok__json_err(j, "bad \\u escape");
    j->i += 5;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return tok__json_err(j, "lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (j->i + 6 > j->n || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u' ||
            !tok__json_hex4(j->s + j->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return tok__json_err(j, "lone high surrogate");
        j->i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return tok__json_put_cp(out, cp);
}

/* Decode the JSON string at j (after its opening quote) into out as UTF-8. */
static enc_status tok__json_string_raw(tok__json *j, tok__bytes *out)
{
    for (;;) {
        if (j->i >= j->n) return tok__json_err(j, "unterminated string");
        unsigned char c = (unsigned char)j->s[j->i];
        if (c == '"') {
            j->i++;
            return ENC_OK;
        }
        if (c < 0x20) return tok__json_err(j, "control character in a string");
        if (c != '\\') {
            size_t k = tok__utf8_seq_len((const unsigned char *)j->s + j->i, j->n - j->i);
            if (!k) return tok__json_err(j, "invalid UTF-8");
            ENC_TRY(tok__bytes_append(out, j->s + j->i, k));
            j->i += k;
            continue;
        }
        if (++j->i >= j->n) return tok__json_err(j, "unterminated string");
        const char *esc = strchr("\"\\/bfnrt", j->s[j->i]);
        if (j->s[j->i] == 'u') {
            ENC_TRY(tok__json_uescape(j, out));
            continue;
        }
        if (!esc || !*esc) return tok__json_err(j, "bad escape");
        static const char plain[] = "\"\\/\b\f\n\r\t";
        ENC_TRY(tok__bytes_append(out, &plain[esc - "\"\\/bfnrt"], 1));
        j->i++;
    }
}

/* Print s[0..n) as json.dumps(ensure_ascii=False) does. */
static enc_status tok__json_py_string(tok__bytes *out, const char *s, size_t n)
{
    ENC_TRY(tok__put(out, "\""));
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char buf[8];
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c < 0x20) snprintf(buf, sizeof buf, "\\u%04x", c), esc = buf;
        if (!esc) {
            run++;
            continue;
        }
        ENC_TRY(tok__bytes_append(out, s + i - run, run));
        run = 0;
        ENC_TRY(tok__put(out, esc));
    }
    ENC_TRY(tok__bytes_append(out, s + n - run, run));
    return tok__put(out, "\"");
}

/* 1 when Python's str.isprintable() holds for code point cp (utf8proc's
 * categories: not Cc, Cf, Cs, Co, Cn, Zl, Zp, nor Zs other than the space). */
static int tok__py_printable(int32_t cp)
{
    if (cp == ' ') return 1;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return 0;
    default:
        return 1;
    }
}

/* Print the UTF-8 string s[0..n) as Python's repr() does: single quotes
 * unless it holds a ' and no ", escapes for the quote, backslash, \t \n \r
 * and the code points that are not printable. */
static enc_status tok__json_py_repr(tok__bytes *out, const char *s, size_t n)
{
    char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    ENC_TRY(tok__bytes_append(out, &q, 1));
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k =
            utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) k = 1, cp = (unsigned char)s[i]; /* not reached: the text was checked */
        char buf[16];
        const char *esc = NULL;
        if (cp == q || cp == '\\')
            snprintf(buf, sizeof buf, "\\%c", (char)cp), esc = buf;
        else if (cp == '\t')
            esc = "\\t";
        else if (cp == '\n')
            esc = "\\n";
        else if (cp == '\r')
            esc = "\\r";
        else if (!tok__py_printable(cp))
            snprintf(buf, sizeof buf,
                     cp < 0x100     ? "\\x%02x"
                     : cp < 0x10000 ? "\\u%04x"
                                    : "\\U%08x",
                     (unsigned)cp),
                esc = buf;
        ENC_TRY(esc ? tok__put(out, esc) : tok__bytes_append(out, s + i, (size_t)k));
        i += (size_t)k;
    }
    return tok__bytes_append(out, &q, 1);
}

static enc_status tok__json_string(tok__json *j)
{
    tok__bytes raw = {0};
    j->i++; /* the opening quote */
    enc_status s = tok__json_string_raw(j, &raw);
    if (s == ENC_OK)
        s = (j->py ? tok__json_py_repr : tok__json_py_string)(j->out, raw.data ? raw.data : "",
                                                              raw.len);
    free(raw.data);
    return s;
}

/* Python's repr of a float: the shortest digits that round-trip, in fixed
 * notation when the decimal exponent is in [-4, 16), else d.ddde+XX. */
static enc_status tok__json_py_float(tok__bytes *out, double v)
{
    char e[40], digits[24], buf[64];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    /* e is [-]d[.ddd]e[+-]XX */
    const char *q = e;
    size_t nd = 0;
    int neg = *q == '-';
    if (neg) q++;
    for (; *q != 'e'; q++)
        if (*q != '.') digits[nd++] = *q;
    int exp10 = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    size_t k = 0;
    if (neg) buf[k++] = '-';
    if (exp10 < -4 || exp10 >= 16) {
        buf[k++] = digits[0];
        if (nd > 1) k += (size_t)snprintf(buf + k, sizeof buf - k, ".%s", digits + 1);
        snprintf(buf + k, sizeof buf - k, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (exp10 < 0) { /* 0.000ddd */
        buf[k++] = '0', buf[k++] = '.';
        for (int z = 0; z < -exp10 - 1; z++) buf[k++] = '0';
        snprintf(buf + k, sizeof buf - k, "%s", digits);
    } else { /* ddd.ddd, at least one digit after the point */
        for (int d = 0; d <= exp10; d++) buf[k++] = (size_t)d < nd ? digits[d] : '0';
        buf[k++] = '.';
        if ((size_t)exp10 + 1 < nd) k += (size_t)snprintf(buf + k, sizeof buf - k, "%s", digits + exp10 + 1);
        else buf[k++] = '0';
        buf[k] = '\0';
    }
    return tok__put(out, buf);
}

static enc_status tok__json_number(tok__json *j)
{
    size_t start = j->i;
    int is_float = 0;
    if (j->i < j->n && j->s[j->i] == '-') j->i++;
    if (j->i >= j->n || j->s[j->i] < '0' || j->s[j->i] > '9') return tok__json_err(j, "bad number");
    if (j->s[j->i] == '0') j->i++;
    else while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
    if (j->i < j->n && j->s[j->i] == '.') {
        is_float = 1;
        if (++j->i >= j->n || j->s[j->i] < '0' || j->s[j->i] > '9') return tok__json_err(j, "bad number");
        while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
    }
    if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
        is_float = 1;
        if (++j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-')) j->i++;
        if (j->i >= j->n || j->s[j->i] < '0' || j->s[j->i] > '9') return tok__json_err(j, "bad number");
        while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
    }
    size_t len = j->i - start;
    if (!is_float) { /* Python ints print their digits; -0 is 0 */
        if (len == 2 && j->s[start] == '-' && j->s[start + 1] == '0') return tok__put(j->out, "0");
        return tok__bytes_append(j->out, j->s + start, len);
    }
    char buf[512];
    if (len >= sizeof buf) return tok__json_err(j, "number too long");
    memcpy(buf, j->s + start, len);
    buf[len] = '\0';
    double v = strtod(buf, NULL);
    if (v - v != 0) return tok__json_err(j, "number out of range"); /* inf: Python too would print Infinity */
    return tok__json_py_float(j->out, v);
}

/* An array or object: open, items separated by ", ", close. */
static enc_status tok__json_list(tok__json *j, int object)
{
    char close = object ? '}' : ']';
    if (++j->depth > TOK__JSON_MAX_DEPTH) return tok__json_err(j, "nested too deeply");
    ENC_TRY(tok__put(j->out, object ? "{" : "["));
    j->i++;
    tok__json_ws(j);
    if (j->i < j->n && j->s[j->i] == close) {
        j->i++;
    } else {
        for (;;) {
            if (object) {
                tok__json_ws(j);
                if (j->i >= j->n || j->s[j->i] != '"') return tok__json_err(j, "expected a key");
                ENC_TRY(tok__json_string(j));
                tok__json_ws(j);
                if (j->i >= j->n || j->s[j->i] != ':') return tok__json_err(j, "expected ':'");
                j->i++;
                ENC_TRY(tok__put(j->out, ": "));
            }
            ENC_TRY(tok__json_value(j));
            tok__json_ws(j);
            if (j->i < j->n && j->s[j->i] == ',') {
                j->i++;
                ENC_TRY(tok__put(j->out, ", "));
                continue;
            }
            if (j->i < j->n && j->s[j->i] == close) {
                j->i++;
                break;
            }
            return tok__json_err(j, object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    j->depth--;
    return tok__bytes_append(j->out, &close, 1);
}

static enc_status tok__json_value(tok__json *j)
{
    tok__json_ws(j);
    if (j->i >= j->n) return tok__json_err(j, "expected a value");
    char c = j->s[j->i];
    if (c == '{' || c == '[') return tok__json_list(j, c == '{');
    if (c == '"') return tok__json_string(j);
    if (c == '-' || (c >= '0' && c <= '9')) return tok__json_number(j);
    static const char *const words[] = {"true", "false", "null"};
    static const char *const py_words[] = {"True", "False", "None"};
    for (size_t k = 0; k < 3; k++) {
        size_t len = strlen(words[k]);
        if (j->n - j->i >= len && memcmp(j->s + j->i, words[k], len) == 0) {
            j->i += len;
            return tok__put(j->out, j->py ? py_words[k] : words[k]);
        }
    }
    return tok__json_err(j, "expected a value");
}

/* End a parse: only whitespace may follow, and b gets its NUL. On failure
 * b is freed; on success the caller owns b.data. */
static enc_status tok__json_finish(tok__json *j, enc_status s, tok__bytes *b)
{
    tok__json_ws(j);
    if (s == ENC_OK && j->i != j->n) s = tok__json_err(j, "trailing characters");
    if (s == ENC_OK) s = tok__bytes_append(b, "", 0);
    if (s != ENC_OK) {
        free(b->data);
        b->data = NULL;
    }
    return s;
}

enc_status chat_template_tojson(const char *json, size_t len, char **out)
{
    *out = NULL;
    tok__bytes b = {0};
    tok__json j = {json, len, 0, 0, &b, 0};
    ENC_TRY(tok__json_finish(&j, tok__json_value(&j), &b));
    *out = b.data;
    return ENC_OK;
}

enc_status tok__json_py_str(const char *json, size_t len, tok__bytes *out)
{
    tok__json j = {json, len, 0, 0, out, 1};
    tok__json_ws(&j);
    if (j.i < j.n && j.s[j.i] == '"') { /* a string is itself */
        j.i++;
        ENC_TRY(tok__json_string_raw(&j, out));
    } else {
        ENC_TRY(tok__json_value(&j));
    }
    tok__json_ws(&j);
    return j.i == j.n ? ENC_OK : tok__json_err(&j, "trailing characters");
}

char tok__json_kind(const char *json, size_t len)
{
    size_t i = 0;
    while (i < len && strchr(" \t\n\r", json[i]))
        i++;
    if (i == len) return 0;
    char c = json[i];
    return c == '{' || c == '[' || c == '"' || c == 't' || c == 'f' || c == 'n' ? c : '0';
}

void tok__json_members_free(tok__json_member *m, size_t n)
{
    for (size_t i = 0; i < n && m; i++)
        free(m[i].key);
    free(m);
}

/* One member at j: "key": value in an object, a value in an array. */
static enc_status tok__json_member_read(tok__json *j, int object, tok__json_member *m)
{
    tok__bytes key = {0}, skip = {0};
    enc_status s = ENC_OK;
    if (object) {
        tok__json_ws(j);
        if (j->i >= j->n || j->s[j->i] != '"') return tok__json_err(j, "expected a key");
        j->i++;
        s = tok__json_string_raw(j, &key);
        if (s == ENC_OK) s = tok__bytes_append(&key, "", 0);
        tok__json_ws(j);
        if (s == ENC_OK && (j->i >= j->n || j->s[j->i] != ':'))
            s = tok__json_err(j, "expected ':'");
        j->i++;
    }
    if (s == ENC_OK) {
        tok__json_ws(j);
        m->value = j->s + j->i;
        j->out = &skip;
        s = tok__json_value(j);
        j->out = NULL;
        m->value_len = (size_t)(j->s + j->i - m->value);
    }
    free(skip.data);
    if (s != ENC_OK) {
        free(key.data);
        return s;
    }
    m->key = key.data;
    m->key_len = key.len;
    return ENC_OK;
}

/* The members (items) of the object (array) at j, its opening bracket seen. */
static enc_status tok__json_members_read(tok__json *j, int object, tok__json_member **m, size_t *n)
{
    char close = object ? '}' : ']';
    size_t cap = 0;
    j->i++;
    tok__json_ws(j);
    if (j->i < j->n && j->s[j->i] == close) {
        j->i++;
        return ENC_OK;
    }
    for (;;) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            tok__json_member *g = realloc(*m, cap * sizeof *g);
            if (!g) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "JSON: %zu members", cap);
            *m = g;
        }
        ENC_TRY(tok__json_member_read(j, object, &(*m)[*n]));
        ++*n;
        tok__json_ws(j);
        if (j->i < j->n && j->s[j->i] == ',') {
            j->i++;
            continue;
        }
        if (j->i < j->n && j->s[j->i] == close) {
            j->i++;
            return ENC_OK;
        }
        return tok__json_err(j, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

enc_status tok__json_members(const char *json, size_t len, tok__json_member **out, size_t *n)
{
    tok__json j = {json, len, 0, 0, NULL, 0};
    tok__json_member *m = NULL;
    *out = NULL;
    *n = 0;
    tok__json_ws(&j);
    if (j.i >= j.n || (j.s[j.i] != '{' && j.s[j.i] != '['))
        return tok__json_err(&j, "expected an object or an array");
    enc_status s = tok__json_members_read(&j, j.s[j.i] == '{', &m, n);
    tok__json_ws(&j);
    if (s == ENC_OK && j.i != j.n) s = tok__json_err(&j, "trailing characters");
    if (s != ENC_OK) {
        tok__json_members_free(m, *n);
        *n = 0;
        return s;
    }
    *out = m;
    return ENC_OK;
}

long tok__json_member_find(const tok__json_member *m, size_t n, const char *key)
{
    long at = -1; /* the last: a Python dict keeps a repeated key's last value */
    for (size_t i = 0; i < n; i++)
        if (m[i].key && m[i].key_len == strlen(key) && !memcmp(m[i].key, key, m[i].key_len))
            at = (long)i;
    return at;
}

enc_status tok__json_each(const char *json, const char *before, tok__bytes *out,
                          size_t *count)
{
    tok__json j = {json, strlen(json), 0, 0, out, 0};
    *count = 0;
    tok__json_ws(&j);
    if (j.i >= j.n || j.s[j.i] != '[') return tok__json_err(&j, "expected an array");
    j.i++;
    tok__json_ws(&j);
    if (j.i < j.n && j.s[j.i] == ']') {
        j.i++;
    } else {
        for (;;) {
            ++*count;
            ENC_TRY(tok__put(out, before));
            ENC_TRY(tok__json_value(&j));
            tok__json_ws(&j);
            if (j.i < j.n && j.s[j.i] == ',') {
                j.i++;
                continue;
            }
            if (j.i < j.n && j.s[j.i] == ']') {
                j.i++;
                break;
            }
            return tok__json_err(&j, "expected ',' or ']'");
        }
    }
    tok__json_ws(&j);
    if (j.i != j.n) return tok__json_err(&j, "trailing characters");
    return ENC_OK;
}

/* --- quoting and unquoting ------------------------------------------------------------------ */

enc_status tokenizer_json_unquote(const char *json, size_t len, char **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    tok__bytes b = {0};
    tok__json j = {json, len, 0, 0, &b, 0};
    enc_status s = ENC_OK;
    tok__json_ws(&j);
    if (j.i >= j.n || j.s[j.i] != '"') s = tok__json_err(&j, "expected a string");
    if (s == ENC_OK) {
        j.i++;
        s = tok__json_string_raw(&j, &b);
    }
    ENC_TRY(tok__json_finish(&j, s, &b));
    *out = b.data;
    *n = b.len;
    return ENC_OK;
}

enc_status tokenizer_json_quote(const char *s, size_t n, char **out)
{
    *out = NULL;
    tok__bytes b = {0};
    enc_status st = tok__json_py_string(&b, s, n);
    if (st != ENC_OK) {
        free(b.data);
        return st;
    }
    *out = b.data;
    return ENC_OK;
}
