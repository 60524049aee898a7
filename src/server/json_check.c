/* json_check.c - strings holding U+0000 and keys written twice, found in
 * a parsed request with the path of the field (json_check.h).
 *
 * U+0000: cJSON keeps no source positions, but it keeps every member and
 * item in the order of the text. So the text is scanned for its string
 * tokens (keys and values alike, counted 0, 1, 2, ...) to find the index of
 * the first one with U+0000, and the parsed tree is walked in document
 * order, counting keys and string values the same way, to name that one.
 *
 * Keys written twice: each object's keys are sorted (n log n, so that an
 * object with a million members costs no more than its parse), equal
 * neighbours are a duplicate. */
#include "json_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- paths --------------------------------------------------------------------- */

/* Append to path[cap] at *at (truncating, always NUL-terminated). */
static void json_check__append(char *path, size_t cap, size_t *at, const char *fmt, const char *key,
                               int i)
{
    if (*at >= cap) return;
    int n =
        key ? snprintf(path + *at, cap - *at, fmt, key) : snprintf(path + *at, cap - *at, fmt, i);
    if (n > 0) *at += (size_t)n < cap - *at ? (size_t)n : cap - *at - 1;
}

/* The path of item's child c (its i-th) after item's path[0..at): *here. */
static void json_check__child(const cJSON *item, const cJSON *c, int i, char *path, size_t cap,
                              size_t at, size_t *here)
{
    *here = at;
    if (cJSON_IsObject(item))
        json_check__append(path, cap, here, at ? ".%s" : "%s", c->string ? c->string : "", 0);
    else
        json_check__append(path, cap, here, "[%d]", NULL, i);
}

/* --- U+0000 ------------------------------------------------------------------- */

/* The index of the first string token of valid JSON text[0..len) that holds
 * "\u0000" or a raw NUL byte, or -1. */
static long json_check__first(const char *text, size_t len)
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

/* Walk `item` (whose path is path[0..at)) in document order, *index
 * counting string tokens; 1 when token `target` is found, path naming it. */
static int json_check__walk(const cJSON *item, long *index, long target, char *path, size_t cap,
                            size_t at)
{
    if (cJSON_IsString(item)) return (*index)++ == target;
    int i = 0;
    for (const cJSON *c = item->child; c; c = c->next, i++) { /* none but in objects, arrays */
        size_t here;
        json_check__child(item, c, i, path, cap, at, &here);
        if (cJSON_IsObject(item) && (*index)++ == target) return 1; /* the key itself */
        if (json_check__walk(c, index, target, path, cap, here)) return 1;
        path[at < cap ? at : cap - 1] = '\0';
    }
    return 0;
}

int json_check_nul(const char *text, size_t len, const cJSON *root, char *path, size_t cap)
{
    if (!cap) return 0;
    path[0] = '\0';
    long target = json_check__first(text, len), index = 0;
    if (target < 0) return 0;
    if (!json_check__walk(root, &index, target, path, cap, 0)) path[0] = '\0';
    return 1;
}

/* --- keys written twice --------------------------------------------------------- */

static int json_check__cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The key that object `obj` has twice, NULL when none; *oom when the sort's
 * array could not be made. */
static const char *json_check__twice(const cJSON *obj, int *oom)
{
    size_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        n++;
    if (n < 2) return NULL;
    const char **keys = malloc(n * sizeof *keys);
    if (!keys) {
        *oom = 1;
        return NULL;
    }
    n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        keys[n++] = c->string ? c->string : "";
    qsort(keys, n, sizeof *keys, json_check__cmp_key);
    const char *twice = NULL;
    for (size_t i = 1; i < n && !twice; i++)
        if (!strcmp(keys[i - 1], keys[i])) twice = keys[i];
    free(keys);
    return twice;
}

/* Walk `item` (whose path is path[0..at)): 1 when an object in it has a key
 * twice (path naming it), -1 when out of memory, else 0. */
static int json_check__dup_walk(const cJSON *item, char *path, size_t cap, size_t at)
{
    int oom = 0;
    const char *twice = cJSON_IsObject(item) ? json_check__twice(item, &oom) : NULL;
    if (oom) return -1;
    if (twice) {
        json_check__append(path, cap, &at, at ? ".%s" : "%s", twice, 0);
        return 1;
    }
    int i = 0;
    for (const cJSON *c = item->child; c; c = c->next, i++) {
        size_t here;
        json_check__child(item, c, i, path, cap, at, &here);
        int found = json_check__dup_walk(c, path, cap, here);
        if (found) return found;
        path[at < cap ? at : cap - 1] = '\0';
    }
    return 0;
}

int json_check_dup(const cJSON *root, char *path, size_t cap)
{
    if (!cap) return 0;
    path[0] = '\0';
    return json_check__dup_walk(root, path, cap, 0);
}
