/* chat_template.c - the Qwen3 chat templates, rendered natively.
 *
 * chat__qwen3 follows the official Qwen3 template (tokenizer_config.json's
 * chat_template) statement by statement; the comments quote the Jinja it
 * implements. Its two 2507 variants differ in a statement each: Instruct's
 * assistant turn is its content as given (no think block, no reasoning),
 * Thinking's generation prompt opens the think block. The tests render the
 * real templates with Jinja2 the way Hugging Face does and compare byte for
 * byte.
 *
 * Tool definitions are printed with tok__json_each (json.c), which formats
 * them as the template's `tojson` filter does. */
#include "tokenizer/chat_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/chat_template_impl.h"
#include "tokenizer/tokenizer_impl.h"

/* --- family detection ---------------------------------------------------------------- */

/* 1 when text holds every one of the n needles. */
static int chat__has_all(const char *text, const char *const *needles, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strstr(text, needles[i])) return 0;
    return 1;
}

chat_template_family chat_template_detect(const char *text)
{
    if (!text) return CHAT_TEMPLATE_NONE;
    if (chat__coder_detect(text)) return CHAT_TEMPLATE_QWEN3_CODER;
    /* Every family: ChatML turns, the tools block and the tool calls and
     * responses as Qwen3 writes them, and none of another family's marks
     * (Qwen2.5's default system prompt, Qwen3-Coder's XML calls). */
    static const char *const chatml[] = {
        "<|im_start|>",
        "<|im_end|>",
        "<tools>",
        "<tool_response>",
        "{{- '<tool_call>\\n{\"name\": \"' }}",
    };
    if (!chat__has_all(text, chatml, sizeof chatml / sizeof *chatml) ||
        strstr(text, "You are Qwen") || strstr(text, "<function="))
        return CHAT_TEMPLATE_UNKNOWN;
    /* Qwen3: the empty think block enable_thinking=false inserts */
    static const char *const qwen3[] = {"reasoning_content", "enable_thinking",
                                        "<think>\\n\\n</think>\\n\\n"};
    if (chat__has_all(text, qwen3, sizeof qwen3 / sizeof *qwen3)) return CHAT_TEMPLATE_QWEN3;
    if (strstr(text, "enable_thinking")) return CHAT_TEMPLATE_UNKNOWN;
    /* Thinking-2507: Qwen3's turns, the think block opened by the prompt */
    static const char *const thinking[] = {"reasoning_content",
                                           "{{- '<|im_start|>assistant\\n<think>\\n' }}"};
    if (chat__has_all(text, thinking, sizeof thinking / sizeof *thinking))
        return CHAT_TEMPLATE_QWEN3_THINKING;
    /* Instruct-2507: the assistant's content as given, no think block */
    static const char *const instruct[] = {"{{- '<|im_start|>' + message.role + '\\n' + content }}",
                                           "{{- '<|im_start|>assistant\\n' }}"};
    if (chat__has_all(text, instruct, sizeof instruct / sizeof *instruct) &&
        !strstr(text, "<think>") && !strstr(text, "reasoning_content"))
        return CHAT_TEMPLATE_QWEN3_INSTRUCT;
    return CHAT_TEMPLATE_UNKNOWN;
}

int chat_template_family_known(chat_template_family f)
{
    return f == CHAT_TEMPLATE_QWEN3 || f == CHAT_TEMPLATE_QWEN3_INSTRUCT ||
           f == CHAT_TEMPLATE_QWEN3_THINKING || f == CHAT_TEMPLATE_QWEN3_CODER;
}

int chat_template_opens_reasoning(const tokenizer *t, const chat_template_opts *opts)
{
    return t->family == CHAT_TEMPLATE_QWEN3_THINKING && opts->add_generation_prompt &&
           !opts->continue_final_message;
}

chat_template_family chat_template_get_family(const tokenizer *t) { return t->family; }

int chat_template_thinks(const tokenizer *t)
{
    return t->family == CHAT_TEMPLATE_QWEN3 || t->family == CHAT_TEMPLATE_QWEN3_THINKING;
}

chat_tool_format chat_template_tool_format(const tokenizer *t)
{
    return t->family == CHAT_TEMPLATE_QWEN3_CODER ? CHAT_TOOLS_XML : CHAT_TOOLS_HERMES;
}

const char *chat_template_family_name(chat_template_family f)
{
    switch (f) {
    case CHAT_TEMPLATE_NONE: return "none";
    case CHAT_TEMPLATE_UNKNOWN: return "unknown";
    case CHAT_TEMPLATE_QWEN3: return "qwen3";
    case CHAT_TEMPLATE_QWEN3_INSTRUCT:
        return "qwen3-instruct";
    case CHAT_TEMPLATE_QWEN3_THINKING:
        return "qwen3-thinking";
    case CHAT_TEMPLATE_QWEN3_CODER: return "qwen3-coder";
    }
    return "unknown";
}

chat_template_family chat_template_family_by_name(const char *name)
{
    static const chat_template_family all[] = {CHAT_TEMPLATE_QWEN3, CHAT_TEMPLATE_QWEN3_INSTRUCT,
                                               CHAT_TEMPLATE_QWEN3_THINKING,
                                               CHAT_TEMPLATE_QWEN3_CODER};
    for (size_t i = 0; name && i < sizeof all / sizeof *all; i++)
        if (!strcmp(name, chat_template_family_name(all[i]))) return all[i];
    return CHAT_TEMPLATE_UNKNOWN;
}

enc_status chat_template_replace(tokenizer *t, const char *text, size_t len, const char *name,
                                 const char *what)
{
    if (text) {
        char *copy = malloc(len + 1);
        if (!copy) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "chat template %s", what);
        memcpy(copy, text, len);
        copy[len] = '\0';
        chat_template_family f =
            strlen(copy) == len ? chat_template_detect(copy) : CHAT_TEMPLATE_UNKNOWN;
        free(copy);
        if (!chat_template_family_known(f))
            return enc_fail(ENC_ERR_UNSUPPORTED,
                            "chat template %s: not a template encore renders (known: the "
                            "official qwen3, qwen3-instruct, qwen3-thinking and qwen3-coder "
                            "templates)",
                            what);
        return tok__set_template(t, text, len);
    }
    chat_template_family f = chat_template_family_by_name(name);
    if (f == CHAT_TEMPLATE_QWEN3_CODER)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "chat template %s: qwen3-coder is read from its template file (its "
                        "prose is the template's own); give the path of Qwen3-Coder's "
                        "chat_template.jinja",
                        what);
    if (!chat_template_family_known(f))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "chat template %s: neither a file nor a template name (qwen3, "
                        "qwen3-instruct, qwen3-thinking)",
                        what);
    t->family = f;
    return ENC_OK;
}

/* --- the Qwen3 template ------------------------------------------------------------------- */

/* {%- if tools %} ... {%- else %} system message {%- endif %} */
static enc_status chat__qwen3_head(const chat_message *m, const char *tools_json,
                                   chat__out *out)
{
    tok__bytes tools = {0};
    size_t any = 0; /* {%- for tool in tools %}{{- "\n" }}{{- tool | tojson }} */
    enc_status s = tools_json ? tok__json_each(tools_json, "\n", &tools, &any) : ENC_OK;
    if (s != ENC_OK) s = enc_fail_context(s, "tools_json");
    if (s == ENC_OK && any) {
        s = chat__put(out, "<|im_start|>system\n");
        if (s == ENC_OK && chat__is(&m[0], "system")) {
            s = chat__puts(out, chat__s(m[0].content));
            if (s == ENC_OK) s = chat__put(out, "\n\n");
        }
        if (s == ENC_OK)
            s = chat__put(out, "# Tools\n\nYou may call one or more functions to assist with "
                          "the user query.\n\nYou are provided with function signatures "
                          "within <tools></tools> XML tags:\n<tools>");
        if (s == ENC_OK) /* the caller's text too: plain_content covers it */
            s = chat__puts(out, (chat__str){tools.data, tools.len});
        if (s == ENC_OK)
            s = chat__put(out, "\n</tools>\n\nFor each function call, return a json object "
                          "with function name and arguments within <tool_call></tool_call> "
                          "XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                          "<args-json-object>}\n</tool_call><|im_end|>\n");
    } else if (s == ENC_OK && chat__is(&m[0], "system")) {
        s = chat__put(out, "<|im_start|>system\n");
        if (s == ENC_OK) s = chat__puts(out, chat__s(m[0].content));
        if (s == ENC_OK) s = chat__put(out, "<|im_end|>\n");
    }
    free(tools.data);
    return s;
}

/* ns.last_query_index: the last user message that is not a tool response. */
static size_t chat__last_query(const chat_message *m, size_t n)
{
    for (size_t k = n; k-- > 0;) {
        chat__str c = chat__s(m[k].content);
        if (chat__is(&m[k], "user") &&
            !(chat__starts(c, "<tool_response>") && chat__ends(c, "</tool_response>")))
            return k;
    }
    return n - 1;
}

static enc_status chat__qwen3_tool_calls(const chat_message *m, chat__str content,
                                         chat__out *out)
{
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        const chat_tool_call *tc = &m->tool_calls[k];
        /* {%- if (loop.first and content) or (not loop.first) %}\n */
        if (k > 0 || content.n) ENC_TRY(chat__put(out, "\n"));
        ENC_TRY(chat__put(out, "<tool_call>\n{\"name\": \""));
        ENC_TRY(chat__puts(out, chat__s(tc->name)));
        ENC_TRY(chat__put(out, "\", \"arguments\": "));
        ENC_TRY(chat__puts(out, chat__s(tc->arguments)));
        ENC_TRY(chat__put(out, "}\n</tool_call>"));
    }
    return ENC_OK;
}

static enc_status chat__qwen3_assistant(const chat_message *m, size_t i, size_t n,
                                        size_t last_query, int thinks, chat__out *out)
{
    chat__str content = chat__s(m[i].content), reasoning = chat__s("");
    if (!thinks) { /* Instruct-2507: '<|im_start|>' + message.role + '\n' + content */
        ENC_TRY(chat__put(out, "<|im_start|>assistant\n"));
        ENC_TRY(chat__puts(out, content));
        ENC_TRY(chat__qwen3_tool_calls(&m[i], content, out));
        return chat__put(out, "<|im_end|>\n");
    }
    if (m[i].reasoning_content) {
        reasoning = chat__s(m[i].reasoning_content);
    } else if (chat__find(content, "</think>", 0) >= 0) {
        /* content = content.split('</think>')[-1].lstrip('\n')
         * reasoning = content.split('</think>')[0].rstrip('\n')
         *                    .split('<think>')[-1].lstrip('\n') */
        chat__str before = {content.p, (size_t)chat__find(content, "</think>", 0)};
        long after = chat__find(content, "</think>", 1) + 8;
        before = chat__rstrip_nl(before);
        long th = chat__find(before, "<think>", 1);
        if (th >= 0) before.p += th + 7, before.n -= (size_t)th + 7;
        reasoning = chat__lstrip_nl(before);
        content = chat__lstrip_nl((chat__str){content.p + after, content.n - (size_t)after});
    }
    ENC_TRY(chat__put(out, "<|im_start|>assistant\n"));
    if (i > last_query && (i == n - 1 || reasoning.n)) {
        ENC_TRY(chat__put(out, "<think>\n"));
        ENC_TRY(chat__puts(out, chat__lstrip_nl(chat__rstrip_nl(reasoning))));
        ENC_TRY(chat__put(out, "\n</think>\n\n"));
        ENC_TRY(chat__puts(out, chat__lstrip_nl(content)));
    } else {
        ENC_TRY(chat__puts(out, content));
    }
    ENC_TRY(chat__qwen3_tool_calls(&m[i], content, out));
    return chat__put(out, "<|im_end|>\n");
}

static enc_status chat__qwen3_tool(const chat_message *m, size_t i, size_t n, chat__out *out)
{
    if (i == 0 || !chat__is(&m[i - 1], "tool")) ENC_TRY(chat__put(out, "<|im_start|>user"));
    ENC_TRY(chat__put(out, "\n<tool_response>\n"));
    ENC_TRY(chat__puts(out, chat__s(m[i].content)));
    ENC_TRY(chat__put(out, "\n</tool_response>"));
    if (i == n - 1 || !chat__is(&m[i + 1], "tool")) ENC_TRY(chat__put(out, "<|im_end|>\n"));
    return ENC_OK;
}

static enc_status chat__qwen3(chat_template_family family, const chat_message *m, size_t n,
                              const chat_template_opts *o, chat__out *out)
{
    ENC_TRY(chat__qwen3_head(m, o->tools_json, out));
    size_t last_query = chat__last_query(m, n);
    for (size_t i = 0; i < n; i++) {
        if (chat__is(&m[i], "user") || (chat__is(&m[i], "system") && i > 0)) {
            ENC_TRY(chat__put(out, "<|im_start|>"));
            ENC_TRY(chat__put(out, m[i].role));
            ENC_TRY(chat__put(out, "\n"));
            ENC_TRY(chat__puts(out, chat__s(m[i].content)));
            ENC_TRY(chat__put(out, "<|im_end|>\n"));
        } else if (chat__is(&m[i], "assistant")) {
            ENC_TRY(chat__qwen3_assistant(m, i, n, last_query,
                                          family != CHAT_TEMPLATE_QWEN3_INSTRUCT, out));
        } else if (chat__is(&m[i], "tool")) {
            ENC_TRY(chat__qwen3_tool(m, i, n, out));
        }
    }
    if (o->add_generation_prompt) {
        ENC_TRY(chat__put(out, "<|im_start|>assistant\n"));
        if (family == CHAT_TEMPLATE_QWEN3_THINKING) ENC_TRY(chat__put(out, "<think>\n"));
        if (family == CHAT_TEMPLATE_QWEN3 && !o->enable_thinking)
            ENC_TRY(chat__put(out, "<think>\n\n</think>\n\n"));
    }
    return ENC_OK;
}

/* continue_final_message: the text ends where the last message's content
 * does, cut as transformers' apply_chat_template cuts it: after the last
 * occurrence of that content stripped of whitespace (an error when it does
 * not occur); spans past the cut are cut with it. */
static enc_status chat__continue_final(chat__out *out, const chat_message *last, size_t i)
{
    chat__str c = chat__strip(chat__s(last->content));
    long at = chat__find_str((chat__str){out->b.data, out->b.len}, c, 1);
    if (!c.n || at < 0)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "continue_final_message: messages[%zu] has no "
                        "content the rendered conversation can end with",
                        i);
    size_t end = (size_t)at + c.n;
    out->b.len = end;
    while (out->n_spans && out->spans[2 * out->n_spans - 2] >= end)
        out->n_spans--;
    if (out->n_spans && out->spans[2 * out->n_spans - 1] > end)
        out->spans[2 * out->n_spans - 1] = end;
    return ENC_OK;
}

/* --- entry points ------------------------------------------------------------------------- */

static enc_status chat__check(const chat_message *m, size_t n)
{
    if (n == 0) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "chat template: no messages");
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    for (size_t i = 0; i < n; i++) {
        int ok = 0;
        for (size_t k = 0; k < 4 && m[i].role; k++) ok |= strcmp(m[i].role, roles[k]) == 0;
        if (!ok)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "chat template: messages[%zu].role "
                            "\"%s\" is not system, user, assistant or tool", i,
                            m[i].role ? m[i].role : "(null)");
        if (m[i].n_tool_calls && !m[i].tool_calls)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "chat template: messages[%zu]."
                            "tool_calls is NULL", i);
    }
    return ENC_OK;
}

/* chat_template_render, with the spans of the caller's strings when
 * `spans` is not NULL. */
static enc_status chat__render(const tokenizer *t, const chat_message *msgs, size_t n,
                               const chat_template_opts *opts, char **out, size_t **spans,
                               size_t *n_spans)
{
    *out = NULL;
    if (t->family == CHAT_TEMPLATE_NONE)
        return enc_fail(ENC_ERR_UNSUPPORTED, "chat template: tokenizer_config.json has no "
                        "chat_template; pass a raw prompt instead");
    if (!chat_template_family_known(t->family))
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "chat template: the model's chat_template is "
                        "not one encore knows (known: qwen3, qwen3-instruct, qwen3-thinking, "
                        "qwen3-coder); "
                        "pass a raw prompt instead");
    ENC_TRY(chat__check(msgs, n));
    if (opts->continue_final_message && opts->add_generation_prompt)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "chat template: continue_final_message and "
                                                  "add_generation_prompt cannot both be set");
    chat__out o = {.keep_spans = spans != NULL};
    enc_status s = t->family == CHAT_TEMPLATE_QWEN3_CODER
                       ? chat__coder(t, msgs, n, opts, &o)
                       : chat__qwen3(t->family, msgs, n, opts, &o);
    if (s == ENC_OK && opts->continue_final_message)
        s = chat__continue_final(&o, &msgs[n - 1], n - 1);
    if (s == ENC_OK) s = tok__bytes_append(&o.b, "", 0);
    if (s == ENC_OK && spans && !o.spans) {
        o.spans = malloc(sizeof *o.spans); /* none: still not NULL */
        if (!o.spans) s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "chat template: spans");
    }
    if (s != ENC_OK) {
        free(o.b.data);
        free(o.spans);
        return enc_fail_context(s, "chat template");
    }
    *out = o.b.data;
    if (spans) *spans = o.spans, *n_spans = o.n_spans;
    return ENC_OK;
}

enc_status chat_template_render(const tokenizer *t, const chat_message *msgs, size_t n,
                                const chat_template_opts *opts, char **out)
{
    return chat__render(t, msgs, n, opts, out, NULL, NULL);
}

enc_status chat_template_render_spans(const tokenizer *t, const chat_message *msgs, size_t n,
                                      const chat_template_opts *opts, char **out,
                                      size_t **spans, size_t *n_spans)
{
    *spans = NULL;
    *n_spans = 0;
    return chat__render(t, msgs, n, opts, out, spans, n_spans);
}

enc_status chat_template_apply(const tokenizer *t, const chat_message *msgs, size_t n,
                               int add_generation_prompt, int enable_thinking, char **out)
{
    chat_template_opts o = {add_generation_prompt, enable_thinking, NULL, 0};
    return chat_template_render(t, msgs, n, &o, out);
}
