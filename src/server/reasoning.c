/* reasoning.c - the streaming <think>...</think> splitter (reasoning.h).
 *
 * State machine over the text, with at most one tag's length held back:
 *
 *   START   --"<think>"-->  THINK  --"</think>"-->  CONTENT
 *     '--- anything else ------------------------------^
 *
 * The text is bytes with a length (a NUL byte is text like any other), so
 * tags are searched with memmem, not strstr. */
#define _GNU_SOURCE /* memmem */
#include "reasoning.h"

#include <stdlib.h>
#include <string.h>

static const char reasoning_open[] = "<think>";
static const char reasoning_close[] = "</think>";

void reasoning_init(reasoning_split *r, int in_think)
{
    memset(r, 0, sizeof *r);
    r->state = in_think ? REASONING_THINK : REASONING_START;
}

static int reasoning__append(char **s, size_t *n, const char *text, size_t len)
{
    if (!*s || len) {
        char *p = realloc(*s, *n + len + 1);
        if (!p) return 0;
        memcpy(p + *n, text, len);
        *n += len;
        p[*n] = '\0';
        *s = p;
    }
    return 1;
}

/* The length of the longest suffix of s[0..n) that is a proper prefix of tag. */
static size_t reasoning__partial(const char *s, size_t n, const char *tag)
{
    size_t t = strlen(tag);
    for (size_t k = t - 1 < n ? t - 1 : n; k > 0; k--)
        if (!memcmp(s + n - k, tag, k)) return k;
    return 0;
}

int reasoning_put(reasoning_split *r, const char *text, size_t len, int final, char **reasoning,
                  size_t *n_reasoning, char **content, size_t *n_content)
{
    /* Work on held + text as one string. */
    size_t n = r->n_held + len;
    char *buf = malloc(n + 1);
    if (!buf) return 0;
    memcpy(buf, r->held, r->n_held);
    memcpy(buf + r->n_held, text, len);
    buf[n] = '\0';
    r->n_held = 0;
    const char *p = buf, *end = buf + n;
    int ok = 1;
    while (ok && p < end) {
        size_t rest = (size_t)(end - p);
        if (r->state == REASONING_START) {
            size_t t = sizeof reasoning_open - 1;
            if (rest >= t && !memcmp(p, reasoning_open, t)) {
                r->state = REASONING_THINK;
                p += t;
            } else if (rest < t && !memcmp(p, reasoning_open, rest) && !final) {
                break; /* may still become "<think>" */
            } else {
                r->state = REASONING_CONTENT;
            }
        } else if (r->state == REASONING_THINK) {
            const char *close = memmem(p, rest, reasoning_close, sizeof reasoning_close - 1);
            if (close) {
                ok = reasoning__append(reasoning, n_reasoning, p, (size_t)(close - p));
                if (!ok) break; /* the rest is dropped, not held */
                p = close + sizeof reasoning_close - 1;
                r->state = REASONING_CONTENT;
                continue;
            }
            size_t keep = final ? 0 : reasoning__partial(p, rest, reasoning_close);
            ok = reasoning__append(reasoning, n_reasoning, p, rest - keep);
            p += rest - keep;
            break;
        } else {
            ok = reasoning__append(content, n_content, p, rest);
            p = end;
        }
    }
    /* What is left is a possible tag start, shorter than either tag; after
     * a failed append, nothing is kept. */
    r->n_held = ok ? (size_t)(end - p) : 0;
    memcpy(r->held, p, r->n_held);
    free(buf);
    return ok;
}
