/* chat_template.h - conversations to prompt text, as the model's template does.
 *
 * encore has no Jinja engine. It recognises the family of the chat_template in
 * tokenizer_config.json and renders that family natively, byte for byte as
 * Hugging Face's Jinja rendering of the official template (the tests compare
 * the two). Known families:
 *
 *   qwen3           ChatML with <think> blocks, tools and enable_thinking (Qwen3)
 *   qwen3-instruct  the same turns and tools without think blocks: the
 *                   Qwen3-*-Instruct-2507 models (enable_thinking has no effect)
 *   qwen3-thinking  Qwen3's turns, whose generation prompt opens the think
 *                   block: the Qwen3-*-Thinking-2507 models (the reply begins
 *                   inside it; enable_thinking has no effect)
 *   qwen3-coder     Qwen3-Coder's ChatML: tools described in XML, calls written
 *                   <tool_call>\n<function=NAME>\n<parameter=KEY>\nvalue\n
 *                   </parameter>\n</function>\n</tool_call>, no think block
 *
 * For any other template chat_template_apply() fails with ENC_ERR_UNSUPPORTED;
 * the caller should then offer the user a raw prompt (no template at all) or
 * a known template in its place (chat_template_replace). */
#ifndef ENC_TOKENIZER_CHAT_TEMPLATE_H
#define ENC_TOKENIZER_CHAT_TEMPLATE_H

#include <stddef.h>

#include "base/status.h"

typedef struct tokenizer tokenizer;

typedef enum chat_template_family {
    CHAT_TEMPLATE_NONE = 0, /* the config has no chat_template */
    CHAT_TEMPLATE_UNKNOWN,  /* it has one encore does not know */
    CHAT_TEMPLATE_QWEN3,
    CHAT_TEMPLATE_QWEN3_INSTRUCT,
    CHAT_TEMPLATE_QWEN3_THINKING,
    CHAT_TEMPLATE_QWEN3_CODER,
} chat_template_family;

/* How a family's model writes its tool calls. */
typedef enum chat_tool_format {
    CHAT_TOOLS_HERMES = 0, /* <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> */
    CHAT_TOOLS_XML,        /* <tool_call>\n<function=NAME>\n<parameter=KEY>\nvalue\n
                            * </parameter>\n...</function>\n</tool_call> (Qwen3-Coder) */
} chat_tool_format;

/* A tool call made by an assistant message. */
typedef struct chat_tool_call {
    const char *name;
    /* JSON text of the arguments, emitted verbatim (the OpenAI API's string
     * form). For an object, format it first with chat_template_tojson(). */
    const char *arguments;
} chat_tool_call;

typedef struct chat_message {
    const char *role;    /* "system", "user", "assistant" or "tool" */
    const char *content; /* UTF-8; NULL is treated as "" */
    /* Optional (zero them when unused): */
    const char *reasoning_content; /* assistant: NULL = absent, "" = empty */
    const chat_tool_call *tool_calls; /* assistant: [n_tool_calls] */
    size_t n_tool_calls;
} chat_message;

/* Options beyond the conversation. */
typedef struct chat_template_opts {
    int add_generation_prompt; /* end with the assistant header */
    int enable_thinking;       /* 0 inserts the empty <think> block */
    const char *tools_json;    /* a JSON array of tool definitions, or NULL */
    int continue_final_message; /* end inside the last message, which the model is to
                                 * continue: the text is cut after its content, as
                                 * transformers does (add_generation_prompt must be 0) */
} chat_template_opts;

chat_template_family chat_template_get_family(const tokenizer *t);
const char *chat_template_family_name(chat_template_family f);
/* 1 for a family encore renders (qwen3, qwen3-instruct, qwen3-thinking, qwen3-coder). */
int chat_template_family_known(chat_template_family f);
/* The tool-call syntax of t's template family (hermes for every family but
 * qwen3-coder, and for none or unknown). */
chat_tool_format chat_template_tool_format(const tokenizer *t);
/* 1 when t's template has think blocks (qwen3, qwen3-thinking): a reply may
 * reason before its answer. */
int chat_template_thinks(const tokenizer *t);
/* 1 when the prompt these options render ends inside an open think block, so
 * that the model's reply begins with its reasoning (qwen3-thinking's
 * generation prompt). */
int chat_template_opens_reasoning(const tokenizer *t, const chat_template_opts *opts);

/* Render msgs[0..n) to a malloc'd NUL-terminated string (caller frees).
 * Fails with ENC_ERR_UNSUPPORTED for an unknown template, and with
 * ENC_ERR_INVALID_ARGUMENT (naming the message) for an empty conversation, an
 * unknown role, or tools_json that is not a JSON array. */
enc_status chat_template_apply(const tokenizer *t, const chat_message *msgs,
                               size_t n, int add_generation_prompt,
                               int enable_thinking, char **out);
enc_status chat_template_render(const tokenizer *t, const chat_message *msgs,
                                size_t n, const chat_template_opts *opts,
                                char **out);
/* The same, also giving where the caller's strings went in *out: *spans
 * (malloc'd, caller frees; not NULL on success) holds *n_spans byte ranges
 * [begin, end), ascending, one per stretch of message content, reasoning,
 * tool-call name or arguments, or tool definitions (adjacent ones merged),
 * for tokenizer_encode_plain. */
enc_status chat_template_render_spans(const tokenizer *t, const chat_message *msgs,
                                      size_t n, const chat_template_opts *opts,
                                      char **out, size_t **spans, size_t *n_spans);

/* Reformat the JSON text json[0..len) as the templates' `tojson` filter prints
 * it (Python's json.dumps with ensure_ascii=False: ", " and ": " separators,
 * keys in their order, floats in Python's repr). Result malloc'd, caller frees. */
enc_status chat_template_tojson(const char *json, size_t len, char **out);

/* Which family a template text belongs to (used by the loader). */
chat_template_family chat_template_detect(const char *template_text);

/* The family named name (chat_template_family_name's names), else
 * CHAT_TEMPLATE_UNKNOWN. */
chat_template_family chat_template_family_by_name(const char *name);

/* Replace t's chat template (a model whose own template encore does not
 * know, or none): text[0..len) is a template file's text, which must be of a
 * family encore renders; or, with text NULL, the family `name` names, which
 * must be one rendered without its template's text (qwen3, qwen3-instruct,
 * qwen3-thinking: qwen3-coder reads its prose from the template). `what`
 * names the source in errors. On failure t is unchanged. */
enc_status chat_template_replace(tokenizer *t, const char *text, size_t len, const char *name,
                                 const char *what);

#endif
