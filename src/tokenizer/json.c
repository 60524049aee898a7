/* json.c - the JSON text helpers of the tokenizer layer.
 *
 * chat_template_tojson reformats JSON text as Python's json.dumps (which
 * Hugging Face's tojson filter calls) prints the parsed value, for templates
 * that embed tool definitions: no parse tree is built, integers keep their
 * digits, floats are printed in Python's repr, strings are escaped as
 * json.dumps(ensure_ascii=False) escapes them.
 *
 * tokenizer_json_unquote / _quote convert between JSON string literals and
 * UTF-8 byte strings that may hold NUL (cJSON stops a string at "\u0000"),
 * for the tokenize commands and the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_impl.h"

typedef struct tok__json {
    const char *s;
    size_t n, i;
    int depth;
    tok__bytes *out;
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

static enc_status tok__json_string(tok__json *j)
{
    tok__bytes raw = {0};
    j->i++; /* the opening quote */
    enc_status s = tok__json_string_raw(j, &raw);
    if (s == ENC_OK) s = tok__json_py_string(j->out, raw.data ? raw.data : "", raw.len);
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
    for (size_t k = 0; k < 3; k++) {
        size_t len = strlen(words[k]);
        if (j->n - j->i >= len && memcmp(j->s + j->i, words[k], len) == 0) {
            j->i += len;
            return tok__put(j->out, words[k]);
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
    tok__json j = {json, len, 0, 0, &b};
    ENC_TRY(tok__json_finish(&j, tok__json_value(&j), &b));
    *out = b.data;
    return ENC_OK;
}

enc_status tok__json_each(const char *json, const char *before, tok__bytes *out,
                          size_t *count)
{
    tok__json j = {json, strlen(json), 0, 0, out};
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
    tok__json j = {json, len, 0, 0, &b};
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
