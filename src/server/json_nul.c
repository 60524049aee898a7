/* json_nul.c - the path of the first JSON string that holds U+0000
 * (json_nul.h).
 *
 * cJSON keeps no source positions, but it keeps every member and item in
 * the order of the text. So the text is scanned for its string tokens
 * (keys and values alike, counted 0, 1, 2, ...) to find the index of the
 * first one with U+0000, and the parsed tree is walked in document order,
 * counting keys and string values the same way, to name that one. */
#include "json_nul.h"

#include <stdio.h>
#include <string.h>

/* The index of the first string token of valid JSON text[0..len) that holds
 * "\u0000" or a raw NUL byte, or -1. */
static long json_nul__first(const char *text, size_t len)
{
    long index = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '"') continue;
        int nul = 0;
        for (i++; i < len && text[i] != '"'; i++) {
            if (text[i] == '\0') nul = 1;
            if (text[i] != '\\') continue;
            if (i + 5 < len && text[i + 1] == 'u' && !memcmp(text + i + 2, "0000", 4)) nul = 1;
            i++; /* the escaped character: \" does not end the string */
        }
        if (nul) return index;
        index++;
    }
    return -1;
}

/* Append to path[cap] at *at (truncating, always NUL-terminated). */
static void json_nul__append(char *path, size_t cap, size_t *at, const char *fmt, const char *key,
                             int i)
{
    if (*at >= cap) return;
    int n =
        key ? snprintf(path + *at, cap - *at, fmt, key) : snprintf(path + *at, cap - *at, fmt, i);
    if (n > 0) *at += (size_t)n < cap - *at ? (size_t)n : cap - *at - 1;
}

/* Walk `item` (whose path is path[0..at)) in document order, *index
 * counting string tokens; 1 when token `target` is found, path naming it. */
static int json_nul__walk(const cJSON *item, long *index, long target, char *path, size_t cap,
                          size_t at)
{
    if (cJSON_IsString(item)) return (*index)++ == target;
    int i = 0;
    for (const cJSON *c = item->child; c; c = c->next, i++) { /* none but in objects, arrays */
        size_t here = at;
        if (cJSON_IsObject(item))
            json_nul__append(path, cap, &here, here ? ".%s" : "%s", c->string ? c->string : "", 0);
        else
            json_nul__append(path, cap, &here, "[%d]", NULL, i);
        if (cJSON_IsObject(item) && (*index)++ == target) return 1; /* the key itself */
        if (json_nul__walk(c, index, target, path, cap, here)) return 1;
        path[at < cap ? at : cap - 1] = '\0';
    }
    return 0;
}

int json_nul_find(const char *text, size_t len, const cJSON *root, char *path, size_t cap)
{
    if (!cap) return 0;
    path[0] = '\0';
    long target = json_nul__first(text, len), index = 0;
    if (target < 0) return 0;
    if (!json_nul__walk(root, &index, target, path, cap, 0)) path[0] = '\0';
    return 1;
}
