/* fuzz_tool_calls.c - libFuzzer target for the streaming <tool_call> parser
 * (src/server/tool_calls.c).
 *
 * The input's first byte picks a piece size; the rest is a reply, parsed
 * whole and then in pieces of that size, which must give the same content
 * and calls; every call has a name and an arguments object's text with no
 * control byte (which strict JSON allows nowhere). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/tool_calls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_out {
    tool_parser p;
    char *content;
    size_t n_content;
} fuzz_out;

static int fuzz_feed(const char *text, size_t len, size_t step, fuzz_out *o)
{
    memset(o, 0, sizeof *o);
    tool_parser_init(&o->p);
    size_t at = 0;
    do {
        size_t n = len - at < step ? len - at : step;
        if (!tool_parser_put(&o->p, text + at, n, at + n == len, &o->content, &o->n_content))
            return 0;
        at += n;
    } while (at < len);
    return 1;
}

static void fuzz_free(fuzz_out *o)
{
    free(o->content);
    tool_parser_free(&o->p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t step = (size_t)data[0] % 17 + 1, len = size - 1;
    const char *text = (const char *)data + 1;
    fuzz_out whole, pieces;
    if (!fuzz_feed(text, len, len ? len : 1, &whole) || !fuzz_feed(text, len, step, &pieces))
        abort(); /* no allocation fails here */
    if (whole.n_content != pieces.n_content ||
        memcmp(whole.content, pieces.content, whole.n_content) ||
        whole.p.n_calls != pieces.p.n_calls || whole.n_content > len)
        abort();
    for (size_t k = 0; k < whole.p.n_calls; k++) {
        const tool_call *a = &whole.p.calls[k], *b = &pieces.p.calls[k];
        if (strcmp(a->name, b->name) || strcmp(a->arguments, b->arguments) || !a->name[0] ||
            a->arguments[0] != '{')
            abort();
        for (const char *c = a->arguments; *c; c++) /* strict JSON: no raw control byte */
            if ((unsigned char)*c < ' ') abort();
    }
    fuzz_free(&whole);
    fuzz_free(&pieces);
    return 0;
}
