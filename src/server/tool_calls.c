/* tool_calls.c - the streaming <tool_call> parser (tool_calls.h).
 *
 * Two states. Outside a call, text is content except for a tail that may
 * still become a call: trailing whitespace and a prefix of "<tool_call>"
 * (in the XML format, or of "<function="). Inside one, everything is held
 * until its closing tag, "</tool_call>" ("</function>"), or the end; the
 * block then parses into a call (hermes JSON here, XML in
 * tool_calls_xml.c), or goes to the content as it was written, with the
 * whitespace held before it. The whitespace around calls is dropped at the
 * content's two ends; between two pieces of text it stays (the whitespace
 * before the first call between them, else after it), so "A.\n\n<call>\n\nB."
 * reads "A.\n\nB.". */
#include "tool_calls.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "json_span.h"

static const char tool_open[] = "<tool_call>";
static const char tool_close[] = "</tool_call>";
enum { TOOL_OPEN_LEN = sizeof tool_open - 1, TOOL_CLOSE_LEN = sizeof tool_close - 1 };
/* XML: a bare call, with no <tool_call> around it */
static const char tool_fn_open[] = "<function=";
static const char tool_fn_close[] = "</function>";
enum { TOOL_FN_OPEN_LEN = sizeof tool_fn_open - 1, TOOL_FN_CLOSE_LEN = sizeof tool_fn_close - 1 };
enum { TOOL_IN_TEXT, TOOL_IN_TOOL_CALL, TOOL_IN_FUNCTION }; /* tool_parser.in_call */

void tool_parser_init(tool_parser *p)
{
    memset(p, 0, sizeof *p);
}

void tool_parser_free(tool_parser *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n_calls; i++) {
        free(p->calls[i].name);
        free(p->calls[i].arguments);
    }
    free(p->calls);
    free(p->buf);
    cJSON_Delete(p->tools);
    memset(p, 0, sizeof *p);
}

int tool_parser_set_format(tool_parser *p, tool_format format, const char *tools_json)
{
    cJSON_Delete(p->tools);
    p->tools = NULL;
    p->format = format;
    if (format == TOOL_FORMAT_XML && tools_json) p->tools = cJSON_Parse(tools_json);
    return format != TOOL_FORMAT_XML || !tools_json || p->tools;
}

static int tool__is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

static int tool__append(char **s, size_t *n, size_t *cap, const char *text, size_t len)
{
    if (*n + len + 1 > *cap) {
        size_t c = (*n + len + 1) * 2;
        char *g = realloc(*s, c);
        if (!g) return 0;
        *s = g;
        *cap = c;
    }
    if (len) memcpy(*s + *n, text, len);
    *n += len;
    (*s)[*n] = '\0';
    return 1;
}

/* Content appended to *content (its capacity is not tracked: grown to fit). */
static int tool__emit(char **content, size_t *n_content, const char *text, size_t len)
{
    if (!len && *content) return 1;
    char *g = realloc(*content, *n_content + len + 1);
    if (!g) return 0;
    if (len) memcpy(g + *n_content, text, len);
    *n_content += len;
    g[*n_content] = '\0';
    *content = g;
    return 1;
}

/* Content text (len > 0 for any to go out): the separator the calls since
 * the last text left goes first when text came before them. */
static int tool__emit_text(tool_parser *p, char **content, size_t *n_content, const char *text,
                           size_t len)
{
    if (!len) return tool__emit(content, n_content, text, 0);
    if (p->emitted && p->n_sep && !tool__emit(content, n_content, p->sep, p->n_sep)) return 0;
    p->n_sep = 0;
    p->sep_after = 0;
    p->emitted = 1;
    return tool__emit(content, n_content, text, len);
}

/* Keep up to sizeof p->sep bytes of the whitespace s[0..n) as the separator. */
static void tool__keep_sep(tool_parser *p, const char *s, size_t n)
{
    size_t room = sizeof p->sep - p->n_sep;
    n = n < room ? n : room;
    memcpy(p->sep + p->n_sep, s, n);
    p->n_sep += n;
}

static long tool__find(const char *s, size_t n, size_t from, const char *tag, size_t tag_len)
{
    for (size_t i = from; i + tag_len <= n; i++)
        if (!memcmp(s + i, tag, tag_len)) return (long)i;
    return -1;
}

/* --- one block -------------------------------------------------------------------- */

/* Compact JSON text that JSON itself accepts: no control byte is left
 * (outside strings compacting removed them; inside, cJSON let them pass). */
static int tool__strict(const char *json)
{
    for (; *json; json++)
        if ((unsigned char)*json < ' ') return 0;
    return 1;
}

int tool_call_parse(const char *body, size_t len, char **name, char **arguments)
{
    *name = *arguments = NULL;
    if (memchr(body, '\0', len)) return 0;
    char *s = malloc(len + 1);
    if (!s) return 0;
    memcpy(s, body, len);
    s[len] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(s, &end, 1);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "name");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "arguments");
    int ok = cJSON_IsObject(root) && cJSON_IsString(n) && n->valuestring[0] && cJSON_IsObject(a);
    if (ok) {
        *name = malloc(strlen(n->valuestring) + 1);
        if (*name) strcpy(*name, n->valuestring);
        size_t a0, a1;
        ok = *name && json_span_member(s, len, "arguments", &a0, &a1) &&
             (*arguments = json_span_compact(s, a0, a1)) && tool__strict(*arguments);
    }
    cJSON_Delete(root);
    free(s);
    if (!ok) {
        free(*name);
        free(*arguments);
        *name = *arguments = NULL;
    }
    return ok;
}

/* --- the stream ---------------------------------------------------------------------- */

static int tool__add_call(tool_parser *p, char *name, char *arguments)
{
    if (p->n_calls == p->cap_calls) {
        size_t cap = p->cap_calls ? p->cap_calls * 2 : 4;
        tool_call *g = realloc(p->calls, cap * sizeof *g);
        if (!g) return 0;
        p->calls = g;
        p->cap_calls = cap;
    }
    p->calls[p->n_calls++] = (tool_call){.name = name, .arguments = arguments};
    return 1;
}

/* Drop buf[0..n). */
static void tool__consume(tool_parser *p, size_t n)
{
    memmove(p->buf, p->buf + n, p->n_buf - n);
    p->n_buf -= n;
    if (p->buf) p->buf[p->n_buf] = '\0';
}

/* The length of the longest tail of s[0..n) that is a proper prefix of tag. */
static size_t tool__partial(const char *s, size_t n, const char *tag, size_t tag_len)
{
    for (size_t k = n < tag_len - 1 ? n : tag_len - 1; k > 0; k--)
        if (!memcmp(s + n - k, tag, k)) return k;
    return 0;
}

/* The same for either open tag of the format. */
static size_t tool__partial_open(const tool_parser *p)
{
    size_t k = tool__partial(p->buf, p->n_buf, tool_open, TOOL_OPEN_LEN);
    if (p->format == TOOL_FORMAT_XML) {
        size_t f = tool__partial(p->buf, p->n_buf, tool_fn_open, TOOL_FN_OPEN_LEN);
        k = f > k ? f : k;
    }
    return k;
}

/* Outside a call: emit what is surely content; enter a call when its tag is
 * there. Returns 1 when it made progress that may allow more, 0 when done,
 * -1 when out of memory. */
static int tool__step_text(tool_parser *p, int final, char **content, size_t *n_content)
{
    if (p->skip_ws) {
        size_t k = 0;
        while (k < p->n_buf && tool__is_ws(p->buf[k]))
            k++;
        if (p->sep_after) tool__keep_sep(p, p->buf, k);
        tool__consume(p, k);
        if (!p->n_buf) return 0;
        p->skip_ws = 0;
        p->sep_after = 0;
    }
    long at = tool__find(p->buf, p->n_buf, 0, tool_open, TOOL_OPEN_LEN);
    int kind = TOOL_IN_TOOL_CALL;
    if (p->format == TOOL_FORMAT_XML) { /* the first open tag, of either kind */
        long fn = tool__find(p->buf, p->n_buf, 0, tool_fn_open, TOOL_FN_OPEN_LEN);
        if (fn >= 0 && (at < 0 || fn < at)) at = fn, kind = TOOL_IN_FUNCTION;
    }
    size_t keep = 0; /* the tail that stays held */
    if (at >= 0) {
        keep = p->n_buf - (size_t)at;
    } else if (!final) {
        keep = tool__partial_open(p);
    }
    size_t text = p->n_buf - keep, ws = 0;
    if (at >= 0 || !final)
        while (ws < text && tool__is_ws(p->buf[text - 1 - ws]))
            ws++;
    if (!tool__emit_text(p, content, n_content, p->buf, text - ws)) return -1;
    tool__consume(p, text - ws);
    if (at < 0) return 0;
    p->in_call = kind;
    p->n_ws = ws;
    return 1;
}

/* Inside a call: when it is complete (or the text ended), parse it. A
 * <tool_call>'s body lies between its tags; a bare <function=...>'s is the
 * whole element, its tags included. */
static int tool__step_call(tool_parser *p, int final, char **content, size_t *n_content)
{
    int bare = p->in_call == TOOL_IN_FUNCTION;
    size_t body = p->n_ws + (bare ? TOOL_FN_OPEN_LEN : TOOL_OPEN_LEN);
    const char *close = bare ? tool_fn_close : tool_close;
    size_t close_len = bare ? TOOL_FN_CLOSE_LEN : TOOL_CLOSE_LEN;
    long at = tool__find(p->buf, p->n_buf, body, close, close_len);
    if (at < 0 && !final) return 0;
    size_t body_end = at >= 0 ? (size_t)at : p->n_buf;
    size_t block_end = at >= 0 ? body_end + close_len : p->n_buf;
    if (bare) body = p->n_ws, body_end = block_end;
    char *name, *arguments;
    int parsed;
    p->in_call = TOOL_IN_TEXT;
    if (p->format == TOOL_FORMAT_XML)
        parsed = (at >= 0 ? tool_call_parse_xml : tool_call_parse_xml_unclosed)(
            p->buf + body, body_end - body, p->tools, &name, &arguments);
    else
        parsed = tool_call_parse(p->buf + body, body_end - body, &name, &arguments);
    if (parsed < 0) return -1;
    if (parsed) {
        if (!tool__add_call(p, name, arguments)) {
            free(name);
            free(arguments);
            return -1;
        }
        p->skip_ws = 1;
        if (!p->n_sep) {
            tool__keep_sep(p, p->buf, p->n_ws);
            p->sep_after = p->n_ws == 0;
        }
    } else if (!tool__emit_text(p, content, n_content, p->buf, block_end)) {
        return -1;
    }
    tool__consume(p, block_end);
    return 1;
}

int tool_parser_put(tool_parser *p, const char *text, size_t len, int final, char **content,
                    size_t *n_content)
{
    if (!tool__append(&p->buf, &p->n_buf, &p->cap_buf, text, len)) return 0;
    int r;
    do {
        r = p->in_call ? tool__step_call(p, final, content, n_content)
                       : tool__step_text(p, final, content, n_content);
    } while (r > 0 && (p->n_buf || p->in_call));
    if (r >= 0 && !*content) r = tool__emit(content, n_content, "", 0) ? 0 : -1;
    return r >= 0;
}
