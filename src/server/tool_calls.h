/* tool_calls.h - the function calls in a reply's text, as it streams, in
 * one of two formats: Qwen3's hermes (as vLLM's `hermes` parser reads it)
 * and Qwen3-Coder's XML (as vLLM's `qwen3_coder` parser reads it).
 *
 * Hermes, the default: the model writes a call as
 *
 *   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
 *
 * Text goes in piece by piece (any split, even inside a tag); out comes the
 * content (the text outside calls) and the calls, each with its name and its
 * arguments as compact JSON text ({"city":"Paris"}). The output does not
 * depend on how the text was split: a piece that may begin "<tool_call>" is
 * held back until it is known not to, and a call is held until its
 * "</tool_call>" (or the end of the text) and then parsed whole.
 *
 * A block that does not parse (not JSON, no string "name", "arguments" not
 * an object or holding a raw control byte, which cJSON would let pass but
 * strict JSON readers refuse) stays in the content as it was written:
 * nothing is dropped.
 * Whitespace between the text and a parsed call, or between calls, is the
 * template's separator and is dropped; a call not closed when the text ends
 * is parsed too (vLLM does the same).
 *
 * XML (tool_parser_set_format): the model writes a call as
 *
 *   <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n
 *   <parameter=days>\n3\n</parameter>\n</function>\n</tool_call>
 *
 * and each value becomes JSON by the type the request's tools give that
 * parameter: {"city":"Paris","days":3} (tool_calls_xml.c has the rules).
 * The stream works as above, with these differences, each as vLLM reads it:
 * a missing "</parameter>" (before the next "<parameter=" or "</function>")
 * or "</function>" (before "</tool_call>") is no error; a bare
 * "<function=...>...</function>" with no <tool_call> around it, which
 * Qwen3-Coder is known to write, is a call too (held from its "<function="
 * like a <tool_call>). A call not closed when the text ends is parsed when
 * its last value ended ("</parameter>" or the next tag came); one cut
 * inside a value stays content. Anything but whitespace around the tags (two functions in one
 * <tool_call>, text between parameters; vLLM skips it) makes the block no
 * call, as does a hermes JSON block. */
#ifndef ENC_SERVER_TOOL_CALLS_H
#define ENC_SERVER_TOOL_CALLS_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef enum tool_format { TOOL_FORMAT_HERMES = 0, TOOL_FORMAT_XML } tool_format;

typedef struct tool_call {
    char id[40];     /* filled in by the caller ("call_..."), "" from the parser */
    char *name;      /* NUL-terminated, owned by the parser */
    char *arguments; /* the arguments object, compact JSON text; owned likewise */
} tool_call;

typedef struct tool_parser {
    tool_format format; /* TOOL_FORMAT_HERMES unless tool_parser_set_format said otherwise */
    cJSON *tools;       /* XML: the request's tools array (parameter types), or NULL; owned */
    int in_call; /* buf holds a call from its "<tool_call>" (1) or bare "<function=" (2) on */
    int skip_ws; /* a call just ended: whitespace that follows is dropped */
    char *buf;   /* text held back: [n_buf] */
    size_t n_buf, cap_buf;
    size_t n_ws;      /* in_call: the whitespace before "<tool_call>" in buf */
    char sep[32];     /* the whitespace around the calls since the last content text (its first
                       * 32 bytes): written between that text and the next, never at the ends */
    size_t n_sep;
    int sep_after;    /* a call with no whitespace before it ended: take what follows */
    int emitted;      /* content text has been written */
    tool_call *calls; /* [n_calls] parsed so far, in order */
    size_t n_calls, cap_calls;
} tool_parser;

void tool_parser_init(tool_parser *p);
void tool_parser_free(tool_parser *p); /* frees the calls and tools too; NULL is a no-op */

/* After tool_parser_init: read calls in `format`; tools_json (OpenAI's "tools" array as JSON text,
 * may be NULL; parsed now, not kept) gives the XML format its parameter types. Returns 0 when out
 * of memory (or tools_json is not JSON, which the caller has checked). */
int tool_parser_set_format(tool_parser *p, tool_format format, const char *tools_json);

/* Feed text[0..len); `final` (the reply ended) flushes what is held. The
 * content it makes is appended to *content (a malloc'd NUL-terminated string
 * the caller owns, grown with realloc; *n_content its length) and calls are
 * appended to p->calls. Returns 0 when out of memory. */
int tool_parser_put(tool_parser *p, const char *text, size_t len, int final, char **content,
                    size_t *n_content);

/* The call in body[0..len) (what lies between the tags): 1 with *name and
 * *arguments malloc'd, or 0 when it is not one (or out of memory). */
int tool_call_parse(const char *body, size_t len, char **name, char **arguments);

/* The XML call in body[0..len) (what lies between <tool_call> and </tool_call>, or a bare
 * <function=...>...</function> whole): 1 with *name and *arguments (compact JSON object text, keys
 * in the order written, a repeated key keeping its first place and last value, as a Python dict
 * does) malloc'd, 0 when it is not one, -1 when out of memory (both with NULLs). `tools` (the
 * request's tools array, may be NULL) gives the parameter types. */
int tool_call_parse_xml(const char *body, size_t len, const cJSON *tools, char **name,
                        char **arguments);
/* The same for a block the text ended in before its closing tag: no call either when its last
 * value runs to the end (cut short, not ended by "</parameter>" or the next tag). */
int tool_call_parse_xml_unclosed(const char *body, size_t len, const cJSON *tools, char **name,
                                 char **arguments);

#endif
