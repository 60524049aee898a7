/* json_span.c - a member's value found in valid JSON text (json_span.h).
 *
 * The text has been parsed already, so the scan only skips: strings (with
 * their escapes), bracketed values by depth, and scalars up to a delimiter;
 * every step is bounded by the length, the text need not end with NUL. */
#include "json_span.h"

#include <stdlib.h>
#include <string.h>

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
