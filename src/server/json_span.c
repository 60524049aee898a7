/* json_span.c - a member's value found in valid JSON text (json_span.h).
 *
 * The text has been parsed already, so the scan only skips: strings (with
 * their escapes), bracketed values by depth, and scalars up to a delimiter;
 * every step is bounded by the length, the text need not end with NUL. */
#include "json_span.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* What cJSON skips between tokens: every byte up to the space (more than
 * JSON's four). */
static int json_span__is_ws(char c)
{
    return (unsigned char)c <= ' ';
}

static size_t json_span__ws(const char *s, size_t n, size_t i)
{
    while (i < n && json_span__is_ws(s[i]))
        i++;
    return i;
}

/* s[i] is '"': the index after the closing quote. */
static size_t json_span__string(const char *s, size_t n, size_t i)
{
    for (i++; i < n && s[i] != '"'; i++)
        if (s[i] == '\\') i++;
    return i < n ? i + 1 : n;
}

/* The end of the value at s[i]. */
static size_t json_span__value(const char *s, size_t n, size_t i)
{
    if (i < n && s[i] == '"') return json_span__string(s, n, i);
    if (i < n && s[i] != '{' && s[i] != '[') {
        while (i < n && !strchr(",}]", s[i]) && !json_span__is_ws(s[i]))
            i++;
        return i;
    }
    int depth = 0;
    while (i < n) {
        if (s[i] == '"') {
            i = json_span__string(s, n, i);
            continue;
        }
        depth += (s[i] == '{' || s[i] == '[') - (s[i] == '}' || s[i] == ']');
        i++;
        if (depth == 0) break;
    }
    return i;
}

int json_span_member(const char *s, size_t n, const char *key, size_t *begin, size_t *end)
{
    size_t key_len = strlen(key);
    size_t i = json_span__ws(s, n, 0);
    if (i >= n || s[i] != '{') return 0;
    for (i++;;) {
        i = json_span__ws(s, n, i);
        if (i >= n || s[i] != '"') return 0;
        size_t k = i, k_end = json_span__string(s, n, i);
        i = json_span__ws(s, n, k_end);
        if (i >= n || s[i] != ':') return 0;
        i = json_span__ws(s, n, i + 1);
        size_t v_end = json_span__value(s, n, i);
        if (k_end - k == key_len + 2 && !memcmp(s + k + 1, key, key_len)) {
            *begin = i, *end = v_end;
            return 1;
        }
        i = json_span__ws(s, n, v_end);
        if (i >= n || s[i] != ',') return 0;
        i++;
    }
}

char *json_span_compact(const char *s, size_t begin, size_t end)
{
    char *out = malloc(end - begin + 1), *w = out;
    if (!out) return NULL;
    int in_string = 0;
    for (size_t k = begin; k < end; k++) {
        char c = s[k];
        if (in_string && c == '\\' && k + 1 < end) {
            *w++ = c;
            *w++ = s[++k];
            continue;
        }
        if (c == '"') in_string = !in_string;
        if (in_string || !json_span__is_ws(c)) *w++ = c;
    }
    *w = '\0';
    return out;
}

int json_span_elements(const char *s, size_t begin, size_t end, size_t **spans, size_t *count)
{
    size_t i = json_span__ws(s, end, begin), n = 0, cap = 0;
    *spans = NULL;
    *count = 0;
    if (i >= end || s[i] != '[') return 0;
    i = json_span__ws(s, end, i + 1);
    while (i < end && s[i] != ']') {
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            size_t *p = realloc(*spans, 2 * cap * sizeof *p);
            if (!p) {
                free(*spans);
                *spans = NULL;
                return 0;
            }
            *spans = p;
        }
        size_t e = json_span__value(s, end, i);
        (*spans)[2 * n] = i, (*spans)[2 * n + 1] = e;
        n++;
        i = json_span__ws(s, end, e);
        if (i < end && s[i] == ',') i = json_span__ws(s, end, i + 1);
    }
    *count = n;
    return 1;
}

char *json_span_object_without(const char *s, size_t begin, size_t end, const char *key)
{
    size_t key_len = strlen(key), i = json_span__ws(s, end, begin);
    if (i >= end || s[i] != '{') return NULL;
    char *out = malloc(end - begin + 3), *w = out;
    if (!out) return NULL;
    *w++ = '{';
    for (i = json_span__ws(s, end, i + 1); i < end && s[i] == '"';) {
        size_t k = i, k_end = json_span__string(s, end, i);
        size_t v = json_span__ws(s, end, json_span__ws(s, end, k_end) + 1);
        size_t v_end = json_span__value(s, end, v);
        if (!(k_end - k == key_len + 2 && !memcmp(s + k + 1, key, key_len))) {
            char *value = json_span_compact(s, v, v_end);
            if (!value) {
                free(out);
                return NULL;
            }
            if (w != out + 1) *w++ = ',';
            memcpy(w, s + k, k_end - k);
            w += k_end - k;
            *w++ = ':';
            size_t nv = strlen(value);
            memcpy(w, value, nv);
            w += nv;
            free(value);
        }
        i = json_span__ws(s, end, v_end);
        if (i < end && s[i] == ',') i = json_span__ws(s, end, i + 1);
    }
    *w++ = '}';
    *w = '\0';
    return out;
}

int json_span_prints_as(const char *text, size_t len, const char *printed)
{
    cJSON *v = cJSON_ParseWithLength(text, len);
    char *p = v ? cJSON_PrintUnformatted(v) : NULL;
    int same = p ? !strcmp(p, printed) : v ? -1 : 0;
    cJSON_Delete(v);
    cJSON_free(p);
    return same;
}

int json_span_has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return 1;
    return 0;
}
