/* fuzz_tool_calls.c - libFuzzer target for the streaming <tool_call> parser
 * (src/server/tool_calls.c, tool_calls_xml.c).
 *
 * The input's first byte picks the format (its top bit: XML) and a piece
 * size; the rest is a reply, parsed whole and then in pieces of that size,
 * which must give the same content and calls; every call has a name and an
 * arguments object's text that cJSON reads as an object, with no control
 * byte (which strict JSON allows nowhere); a reply with no call comes back
 * as the content unchanged. In the XML format the bytes 0xf0..0xff (never
 * in UTF-8) stand for the format's tags, so that the fuzzer builds calls
 * without a dictionary of them. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/tool_calls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_xml_tags[16] = {
    "<tool_call>\n",
    "\n</tool_call>",
    "<function=f>\n",
    "<function=g>\n",
    "</function>\n",
    "<parameter=s>\n",
    "<parameter=i>\n",
    "<parameter=n>\n",
    "<parameter=b>\n",
    "<parameter=o>\n",
    "<parameter=a>\n",
    "\n</parameter>\n",
    "<function=",
    "<parameter=",
    "null",
    "{\"k\": [1, 2.5e3, \"v\"]}",
};

static const char fuzz_xml_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"s\": {\"type\": \"string\"}, \"i\": {\"type\": \"integer\"}, "
    "\"n\": {\"type\": \"number\"}, \"b\": {\"type\": \"boolean\"}, \"o\": {\"type\": "
    "\"object\"}, \"a\": {\"type\": \"array\"}}}}}]";

typedef struct fuzz_out {
    tool_parser p;
    char *content;
    size_t n_content;
} fuzz_out;

static int fuzz_feed(const char *text, size_t len, size_t step, tool_format format, fuzz_out *o)
{
    memset(o, 0, sizeof *o);
    tool_parser_init(&o->p);
    if (!tool_parser_set_format(&o->p, format, fuzz_xml_tools)) return 0;
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
    tool_format format = data[0] & 0x80 ? TOOL_FORMAT_XML : TOOL_FORMAT_HERMES;
    size_t step = (size_t)(data[0] & 0x7f) % 17 + 1, len = 0;
    char *text = malloc((size - 1) * 32 + 1); /* the longest tag is under 32 bytes */
    if (!text) abort();
    for (size_t i = 1; i < size; i++) {
        if (format == TOOL_FORMAT_XML && data[i] >= 0xf0) {
            const char *tag = fuzz_xml_tags[data[i] - 0xf0];
            memcpy(text + len, tag, strlen(tag));
            len += strlen(tag);
        } else {
            text[len++] = (char)data[i];
        }
    }
    fuzz_out whole, pieces;
    if (!fuzz_feed(text, len, len ? len : 1, format, &whole) ||
        !fuzz_feed(text, len, step, format, &pieces))
        abort(); /* no allocation fails here */
    if (whole.n_content != pieces.n_content ||
        memcmp(whole.content, pieces.content, whole.n_content) ||
        whole.p.n_calls != pieces.p.n_calls || whole.n_content > len)
        abort();
    if (!whole.p.n_calls && (whole.n_content != len || memcmp(whole.content, text, len)))
        abort(); /* no call: nothing dropped, nothing changed */
    for (size_t k = 0; k < whole.p.n_calls; k++) {
        const tool_call *a = &whole.p.calls[k], *b = &pieces.p.calls[k];
        if (strcmp(a->name, b->name) || strcmp(a->arguments, b->arguments) || !a->name[0] ||
            a->arguments[0] != '{')
            abort();
        for (const char *c = a->arguments; *c; c++) /* strict JSON: no raw control byte */
            if ((unsigned char)*c < ' ') abort();
        cJSON *args = cJSON_Parse(a->arguments);
        if (!cJSON_IsObject(args)) abort();
        cJSON_Delete(args);
    }
    fuzz_free(&whole);
    fuzz_free(&pieces);
    free(text);
    return 0;
}
