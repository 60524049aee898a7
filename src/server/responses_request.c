/* responses_request.c - a Responses API body read as the chat request it
 * asks for (responses_request.h).
 *
 * The body's tree is rebuilt as a chat request object: "instructions" the
 * first (system) message, each "input" item a message (a run of
 * function_call items the tool_calls of one assistant message, a
 * function_call_output a tool message, a reasoning item the next assistant
 * message's reasoning_content), each flat function tool {"type", "name",
 * ...} the chat {"type", "function": {...}}, "text.format" the chat
 * "response_format", "max_output_tokens" "max_tokens"; the sampling fields
 * the chat request shares are copied as they are. What a server that keeps
 * no responses cannot do ("previous_response_id", "background", a
 * "conversation") is refused by name, as are tools other than functions and
 * input other than text. */
#include "responses_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_span.h"

/* The top-level fields a Responses request may carry (besides null ones):
 * read here, copied into the chat request, or with no effect on the reply. */
static const char resp__known[] =
    " model input instructions max_output_tokens tools tool_choice parallel_tool_calls text"
    " reasoning stream store metadata user include truncation service_tier prompt_cache_key"
    " safety_identifier top_logprobs previous_response_id background conversation"
    " temperature top_p top_k min_p repetition_penalty presence_penalty frequency_penalty seed"
    " stop stop_token_ids min_tokens ignore_eos logit_bias skip_special_tokens"
    " include_stop_str_in_output chat_template_kwargs include_reasoning structured_outputs ";

/* Copied into the chat request as they are (the chat parser checks them). */
static const char *const resp__shared[] = {
    "model",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "stop",
    "stop_token_ids",
    "min_tokens",
    "ignore_eos",
    "logit_bias",
    "skip_special_tokens",
    "include_stop_str_in_output",
    "chat_template_kwargs",
    "include_reasoning",
    "parallel_tool_calls",
    "user",
    "structured_outputs", /* vLLM's: a regex, a choice, a grammar (a 400 beside text.format) */
};

static int resp__oom(oai_error *err)
{
    return oai_error_set(err, 500, NULL, "out of memory");
}

/* obj[key] = item (taken; NULL: its creation ran out of memory). 0 with
 * err filled when out of memory (item freed). */
static int resp__add(cJSON *obj, const char *key, cJSON *item, oai_error *err)
{
    if (item && cJSON_AddItemToObject(obj, key, item)) return 1;
    cJSON_Delete(item);
    return resp__oom(err);
}

/* obj[key] when given and not null, else NULL. */
static const cJSON *resp__get(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* A string member `key` of obj, named where.key in errors: *out points at
 * it, NULL when absent and not required. */
static int resp__string(const cJSON *obj, const char *key, const char *where, int required,
                        const char **out, oai_error *err)
{
    const cJSON *v = resp__get(obj, key);
    char param[128];
    snprintf(param, sizeof param, "%s%s%s", where, where[0] ? "." : "", key);
    *out = NULL;
    if (!v) return required ? oai_error_set(err, 400, param, "'%s' is required", param) : 1;
    if (!cJSON_IsString(v)) return oai_error_set(err, 400, param, "'%s' must be a string", param);
    *out = v->valuestring;
    return 1;
}

/* --- input ------------------------------------------------------------------ */

/* The text of a message's content: a string, or parts of type input_text,
 * output_text or text, joined by the chat parser with newlines. Returns a
 * chat content value (a new node), or NULL with err filled. */
static cJSON *resp__content(const cJSON *v, const char *param, oai_error *err)
{
    if (cJSON_IsString(v)) return cJSON_CreateString(v->valuestring);
    if (!cJSON_IsArray(v)) {
        oai_error_set(err, 400, param, "'%s' must be a string or an array of parts", param);
        return NULL;
    }
    cJSON *parts = cJSON_CreateArray();
    int k = 0;
    for (const cJSON *p = v->child; parts && p; p = p->next, k++) {
        char where[112];
        snprintf(where, sizeof where, "%s[%d]", param, k);
        const char *type = NULL, *text = NULL;
        if (!cJSON_IsObject(p)) {
            oai_error_set(err, 400, where, "'%s' must be an object", where);
            goto fail;
        }
        if (!resp__string(p, "type", where, 1, &type, err)) goto fail;
        if (strcmp(type, "input_text") && strcmp(type, "output_text") && strcmp(type, "text")) {
            oai_error_set(err, 400, where,
                          "'%s': parts of type \"%.40s\" are not supported (only input_text "
                          "and output_text: encore reads text)",
                          where, type);
            goto fail;
        }
        if (!resp__string(p, "text", where, 1, &text, err)) goto fail;
        cJSON *part = cJSON_CreateObject();
        if (!part || !cJSON_AddItemToArray(parts, part) ||
            !cJSON_AddStringToObject(part, "type", "text") ||
            !cJSON_AddStringToObject(part, "text", text)) {
            resp__oom(err);
            goto fail;
        }
    }
    if (!parts) resp__oom(err);
    return parts;
fail:
    cJSON_Delete(parts);
    return NULL;
}

/* The chat messages being built, what an input item leaves for the next,
 * and where each message came from (for the chat parser's errors). */
typedef struct resp_input {
    cJSON *messages;       /* the chat "messages" array */
    cJSON *calls_to;       /* the assistant message function_call items add to, or NULL */
    int calls_to_at;       /* its index among the messages */
    const char *reasoning; /* a reasoning item's text, for the next assistant message */
    int item;              /* the input item being read; -1: instructions */
    int *item_of;          /* [n]: the input item of message m (-1: instructions) */
    int *call_item_of;     /* [n]: the input item of message m's first tool call */
    int n, cap;
} resp_input;

/* A new last message {"role": role, "content": content} (content taken),
 * from the item being read; NULL when out of memory (content NULL: its
 * creation ran out). */
static cJSON *resp__push(resp_input *in, const char *role, cJSON *content)
{
    if (in->n == in->cap) {
        int cap = in->cap ? 2 * in->cap : 16;
        int *a = realloc(in->item_of, (size_t)cap * sizeof *a);
        if (a) in->item_of = a;
        int *b = a ? realloc(in->call_item_of, (size_t)cap * sizeof *b) : NULL;
        if (b) in->call_item_of = b;
        if (!b) {
            cJSON_Delete(content);
            return NULL;
        }
        in->cap = cap;
    }
    cJSON *m = content ? cJSON_CreateObject() : NULL;
    if (!m || !cJSON_AddItemToArray(in->messages, m)) {
        cJSON_Delete(m);
        cJSON_Delete(content);
        return NULL;
    }
    if (!cJSON_AddItemToObject(m, "content", content)) {
        cJSON_Delete(content);
        return NULL;
    }
    in->item_of[in->n] = in->item;
    in->call_item_of[in->n++] = -1;
    return cJSON_AddStringToObject(m, "role", role) ? m : NULL;
}

/* An assistant message (content taken; NULL: null) with the pending
 * reasoning. */
static cJSON *resp__assistant(resp_input *in, cJSON *content)
{
    cJSON *m = resp__push(in, "assistant", content ? content : cJSON_CreateNull());
    in->calls_to_at = in->n - 1;
    if (m && in->reasoning && !cJSON_AddStringToObject(m, "reasoning_content", in->reasoning))
        return NULL;
    in->reasoning = NULL;
    return m;
}

/* item[key], required, as chat content (resp__content); NULL with err
 * filled. */
static cJSON *resp__item_content(const cJSON *item, const char *key, const char *where,
                                 oai_error *err)
{
    char param[96];
    snprintf(param, sizeof param, "%s.%s", where, key);
    const cJSON *c = resp__get(item, key);
    if (c) return resp__content(c, param, err);
    oai_error_set(err, 400, param, "'%s' is required", param);
    return NULL;
}

/* {"role", "content"} with "type" absent or "message". */
static int resp__message_item(resp_input *in, const cJSON *item, const char *where, oai_error *err)
{
    const char *role;
    if (!resp__string(item, "role", where, 1, &role, err)) return 0;
    int assistant = !strcmp(role, "assistant");
    if (!assistant && strcmp(role, "user") && strcmp(role, "system") && strcmp(role, "developer")) {
        char param[96];
        snprintf(param, sizeof param, "%s.role", where);
        return oai_error_set(err, 400, param,
                             "'%s' must be one of user, system, developer, assistant; got "
                             "'%.40s'",
                             param, role);
    }
    cJSON *content = resp__item_content(item, "content", where, err);
    if (!content) return 0;
    in->calls_to = NULL;
    if (assistant) {
        in->calls_to = resp__assistant(in, content);
        return in->calls_to ? 1 : resp__oom(err);
    }
    return resp__push(in, role, content) ? 1 : resp__oom(err);
}

/* {"type": "function_call", "call_id", "name", "arguments"}: a tool call of
 * the assistant message before it (one with no content when there is none). */
static int resp__function_call(resp_input *in, const cJSON *item, const char *where, oai_error *err)
{
    const char *call_id, *name, *arguments;
    if (!resp__string(item, "call_id", where, 1, &call_id, err) ||
        !resp__string(item, "name", where, 1, &name, err) ||
        !resp__string(item, "arguments", where, 1, &arguments, err))
        return 0;
    cJSON *args = cJSON_Parse(arguments);
    int object = cJSON_IsObject(args) && !json_span_has_control(arguments, strlen(arguments));
    cJSON_Delete(args);
    if (!object) {
        char param[96];
        snprintf(param, sizeof param, "%s.arguments", where);
        return oai_error_set(err, 400, param,
                             "'%s' must be a string holding a JSON object, got \"%.40s\"", param,
                             arguments);
    }
    if (!in->calls_to && !(in->calls_to = resp__assistant(in, NULL))) return resp__oom(err);
    cJSON *calls = cJSON_GetObjectItemCaseSensitive(in->calls_to, "tool_calls");
    if (!calls) {
        if (!(calls = cJSON_AddArrayToObject(in->calls_to, "tool_calls"))) return resp__oom(err);
        in->call_item_of[in->calls_to_at] = in->item;
    }
    cJSON *call = cJSON_CreateObject(), *fn;
    if (!call || !cJSON_AddItemToArray(calls, call)) {
        cJSON_Delete(call);
        return resp__oom(err);
    }
    if (!cJSON_AddStringToObject(call, "id", call_id) ||
        !cJSON_AddStringToObject(call, "type", "function") ||
        !(fn = cJSON_AddObjectToObject(call, "function")) ||
        !cJSON_AddStringToObject(fn, "name", name) ||
        !cJSON_AddStringToObject(fn, "arguments", arguments))
        return resp__oom(err);
    return 1;
}

/* {"type": "function_call_output", "call_id", "output"}: a tool message. */
static int resp__call_output(resp_input *in, const cJSON *item, const char *where, oai_error *err)
{
    const char *call_id;
    if (!resp__string(item, "call_id", where, 1, &call_id, err)) return 0;
    cJSON *content = resp__item_content(item, "output", where, err);
    if (!content) return 0;
    in->calls_to = NULL;
    cJSON *m = resp__push(in, "tool", content);
    return m && cJSON_AddStringToObject(m, "tool_call_id", call_id) ? 1 : resp__oom(err);
}

/* {"type": "reasoning", "content": [{"type": "reasoning_text", "text"}], ...}:
 * the next assistant message's reasoning_content (its summary parts when it
 * has no content). */
static int resp__reasoning(resp_input *in, const cJSON *item, const char *where, oai_error *err)
{
    const cJSON *parts = resp__get(item, "content");
    const char *key = "content";
    if (!parts || (cJSON_IsArray(parts) && !parts->child))
        parts = resp__get(item, "summary"), key = "summary";
    if (parts && !cJSON_IsArray(parts))
        return oai_error_set(err, 400, where, "'%s.%s' must be an array of parts", where, key);
    in->reasoning = NULL;
    in->calls_to = NULL;                          /* the calls after it are the next turn's */
    const cJSON *p = parts ? parts->child : NULL; /* the first part, as vLLM reads it */
    if (p && (!cJSON_IsObject(p) || !resp__string(p, "text", where, 1, &in->reasoning, err)))
        return oai_error_set(err, 400, where, "'%s.%s' must hold {\"type\", \"text\"} parts", where,
                             key);
    return 1;
}

static int resp__item(resp_input *in, const cJSON *item, int i, oai_error *err)
{
    char where[32];
    snprintf(where, sizeof where, "input[%d]", i);
    if (!cJSON_IsObject(item))
        return oai_error_set(err, 400, where, "'%s' must be an object", where);
    const char *type;
    if (!resp__string(item, "type", where, 0, &type, err)) return 0;
    if (!type || !strcmp(type, "message")) return resp__message_item(in, item, where, err);
    if (!strcmp(type, "function_call")) return resp__function_call(in, item, where, err);
    if (!strcmp(type, "function_call_output")) return resp__call_output(in, item, where, err);
    if (!strcmp(type, "reasoning")) return resp__reasoning(in, item, where, err);
    return oai_error_set(err, 400, where,
                         "'%s.type' \"%.40s\" is not supported (message, function_call, "
                         "function_call_output and reasoning are)",
                         where, type);
}

/* "instructions" and "input" as chat["messages"], built in *in. */
static int resp__input(const cJSON *root, cJSON *chat, resp_input *in, oai_error *err)
{
    if (!(in->messages = cJSON_AddArrayToObject(chat, "messages"))) return resp__oom(err);
    const char *instructions;
    if (!resp__string(root, "instructions", "", 0, &instructions, err))
        return oai_error_set(err, 400, "instructions", "'instructions' must be a string");
    in->item = -1;
    if (instructions && !resp__push(in, "system", cJSON_CreateString(instructions)))
        return resp__oom(err);
    in->item = 0;
    const cJSON *v = resp__get(root, "input");
    if (!v) return oai_error_set(err, 400, "input", "'input' is required");
    if (cJSON_IsString(v))
        return resp__push(in, "user", cJSON_CreateString(v->valuestring)) ? 1 : resp__oom(err);
    if (!cJSON_IsArray(v))
        return oai_error_set(err, 400, "input", "'input' must be a string or an array of items");
    if (!v->child) return oai_error_set(err, 400, "input", "'input' is empty");
    for (const cJSON *item = v->child; item; item = item->next, in->item++)
        if (!resp__item(in, item, in->item, err)) return 0;
    return 1;
}

/* --- tools, tool_choice, text.format ------------------------------------------ */

/* tools[i] {"type": "function", "name", "description", "parameters",
 * "strict"} as the chat {"type": "function", "function": {...}}. */
static int resp__tools(const cJSON *root, cJSON *chat, oai_error *err)
{
    const cJSON *v = resp__get(root, "tools");
    if (!v) return 1;
    if (!cJSON_IsArray(v)) return oai_error_set(err, 400, "tools", "'tools' must be an array");
    cJSON *tools = cJSON_AddArrayToObject(chat, "tools");
    if (!tools) return resp__oom(err);
    int i = 0;
    for (const cJSON *t = v->child; t; t = t->next, i++) {
        char where[32];
        snprintf(where, sizeof where, "tools[%d]", i);
        const char *type;
        if (!cJSON_IsObject(t))
            return oai_error_set(err, 400, where, "'%s' must be an object", where);
        if (!resp__string(t, "type", where, 1, &type, err)) return 0;
        if (strcmp(type, "function"))
            return oai_error_set(err, 400, where,
                                 "'%s.type' \"%.40s\" is not supported: encore runs no hosted "
                                 "tools, only function tools the client calls",
                                 where, type);
        cJSON *tool = cJSON_CreateObject(), *fn = cJSON_Duplicate(t, 1);
        if (!tool || !cJSON_AddItemToArray(tools, tool)) {
            cJSON_Delete(tool);
            cJSON_Delete(fn);
            return resp__oom(err);
        }
        if (fn) cJSON_DeleteItemFromObjectCaseSensitive(fn, "type");
        if (!cJSON_AddStringToObject(tool, "type", "function") ||
            !resp__add(tool, "function", fn, err))
            return resp__oom(err);
    }
    return 1;
}

/* "none", "auto", "required", or {"type": "function", "name"}. */
static int resp__tool_choice(const cJSON *root, cJSON *chat, oai_error *err)
{
    const cJSON *v = resp__get(root, "tool_choice");
    if (!v) return 1;
    if (cJSON_IsString(v)) return resp__add(chat, "tool_choice", cJSON_Duplicate(v, 0), err);
    const char *type, *name;
    if (!cJSON_IsObject(v) || !resp__string(v, "type", "tool_choice", 1, &type, err))
        return oai_error_set(err, 400, "tool_choice",
                             "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                             "{\"type\": \"function\", \"name\": ...}");
    if (strcmp(type, "function"))
        return oai_error_set(err, 400, "tool_choice",
                             "'tool_choice.type' \"%.40s\" is not supported (only function "
                             "tools are)",
                             type);
    if (!resp__string(v, "name", "tool_choice", 1, &name, err)) return 0;
    cJSON *c = cJSON_AddObjectToObject(chat, "tool_choice"), *fn;
    return c && cJSON_AddStringToObject(c, "type", "function") &&
                   (fn = cJSON_AddObjectToObject(c, "function")) &&
                   cJSON_AddStringToObject(fn, "name", name)
               ? 1
               : resp__oom(err);
}

/* text.format: {"type": "text"} (nothing), {"type": "json_object"}, or
 * {"type": "json_schema", "name", "schema", "strict", "description"} as the
 * chat response_format. */
static int resp__text_format(const cJSON *root, cJSON *chat, oai_error *err)
{
    const cJSON *text = resp__get(root, "text");
    if (!text) return 1;
    if (!cJSON_IsObject(text)) return oai_error_set(err, 400, "text", "'text' must be an object");
    const cJSON *f = resp__get(text, "format");
    if (!f) return 1;
    const char *type;
    if (!cJSON_IsObject(f))
        return oai_error_set(err, 400, "text.format", "'text.format' must be an object");
    if (!resp__string(f, "type", "text.format", 1, &type, err)) return 0;
    if (!strcmp(type, "text")) return 1;
    cJSON *rf = cJSON_AddObjectToObject(chat, "response_format");
    if (!rf || !cJSON_AddStringToObject(rf, "type", type)) return resp__oom(err);
    if (strcmp(type, "json_schema")) return 1; /* json_object, or the chat parser's error */
    cJSON *js = cJSON_Duplicate(f, 1);
    if (js) cJSON_DeleteItemFromObjectCaseSensitive(js, "type");
    return resp__add(rf, "json_schema", js, err);
}

/* --- the rest ----------------------------------------------------------------- */

/* What a server that stores no response cannot do. */
static int resp__refused(const cJSON *root, oai_error *err)
{
    const cJSON *prev = resp__get(root, "previous_response_id");
    if (prev) /* vLLM's answer with its store off (its default) */
        return oai_error_set(err, 404, "previous_response_id",
                             "Response with id '%.64s' not found: encore keeps no responses; "
                             "send the conversation so far in 'input'",
                             cJSON_IsString(prev) ? prev->valuestring : "?");
    if (resp__get(root, "conversation"))
        return oai_error_set(err, 400, "conversation",
                             "'conversation' is not supported: encore keeps no conversations; "
                             "send the conversation so far in 'input'");
    const cJSON *b = resp__get(root, "background");
    if (b && !cJSON_IsFalse(b))
        return oai_error_set(err, 400, "background",
                             "'background': true is not supported; use 'stream' to see the "
                             "response as it is made");
    return 1;
}

/* "include": the extra outputs asked for; 1 in *logprobs for the output
 * text's log-probabilities. Values encore has nothing for are accepted (the
 * reply simply has none), others refused. */
static int resp__include(const cJSON *root, int *logprobs, oai_error *err)
{
    static const char *const known[] = {
        "message.output_text.logprobs",
        "reasoning.encrypted_content",
        "file_search_call.results",
        "web_search_call.results",
        "web_search_call.action.sources",
        "message.input_image.image_url",
        "computer_call_output.output.image_url",
        "code_interpreter_call.outputs",
    };
    const cJSON *v = resp__get(root, "include");
    *logprobs = 0;
    if (!v) return 1;
    if (!cJSON_IsArray(v))
        return oai_error_set(err, 400, "include", "'include' must be an array of strings");
    for (const cJSON *e = v->child; e; e = e->next) {
        size_t k = 0;
        if (!cJSON_IsString(e))
            return oai_error_set(err, 400, "include", "'include' must be an array of strings");
        while (k < sizeof known / sizeof *known && strcmp(e->valuestring, known[k]))
            k++;
        if (k == sizeof known / sizeof *known)
            return oai_error_set(err, 400, "include", "'include': unknown value \"%.60s\"",
                                 e->valuestring);
        *logprobs |= k == 0;
    }
    return 1;
}

/* max_output_tokens as max_tokens; include's logprobs as logprobs, with
 * top_logprobs alternatives (the chat parser checks the range). */
static int resp__limits(const cJSON *root, cJSON *chat, oai_error *err)
{
    const cJSON *v = resp__get(root, "max_output_tokens"), *k = resp__get(root, "top_logprobs");
    int logprobs;
    if (!resp__include(root, &logprobs, err)) return 0;
    if (v && !resp__add(chat, "max_tokens", cJSON_Duplicate(v, 0), err)) return 0;
    if (logprobs && !cJSON_AddTrueToObject(chat, "logprobs")) return resp__oom(err);
    return !logprobs || !k || resp__add(chat, "top_logprobs", cJSON_Duplicate(k, 0), err);
}

static int resp__shared_fields(const cJSON *root, cJSON *chat, oai_error *err)
{
    for (size_t i = 0; i < sizeof resp__shared / sizeof *resp__shared; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, resp__shared[i]);
        if (v && !resp__add(chat, resp__shared[i], cJSON_Duplicate(v, 1), err)) return 0;
    }
    return 1;
}

/* s[cap] with the n_old bytes at `at` replaced by `with`; 0 (s as it was)
 * when the result would not fit. */
static int resp__splice(char *s, size_t cap, char *at, size_t n_old, const char *with)
{
    size_t n = strlen(with), tail = strlen(at + n_old);
    if ((size_t)(at - s) + n + tail >= cap) return 0;
    memmove(at + n, at + n_old, tail + 1);
    memcpy(at, with, n);
    return 1;
}

/* In s[cap]: from the first "messages[N]" on, that message as the input
 * item it came from: "input[I]" (its K-th tool call, "messages[N].tool_calls[K].function",
 * the item of that call), or "instructions". */
static void resp__message_names(char *s, size_t cap, const resp_input *in)
{
    char *at = strstr(s, "messages["), *end, name[48];
    if (!at) return;
    long n = strtol(at + 9, &end, 10), k = -1;
    if (*end != ']' || n < 0 || n >= in->n) return;
    end++;
    if (!strncmp(end, ".tool_calls[", 12) && in->call_item_of[n] >= 0) {
        char *e2;
        k = strtol(end + 12, &e2, 10);
        if (*e2 == ']') {
            end = e2 + 1;
            if (!strncmp(end, ".function", 9)) end += 9;
        } else {
            k = -1;
        }
    }
    int item = k >= 0 ? in->call_item_of[n] + (int)k : in->item_of[n];
    if (item < 0)
        snprintf(name, sizeof name, "instructions");
    else
        snprintf(name, sizeof name, "input[%d]", item);
    resp__splice(s, cap, at, (size_t)(end - at), name);
}

void oai_responses_error_names(oai_error *err)
{
    static const struct {
        const char *chat, *responses;
    } names[] = {
        {"response_format.json_schema", "text.format"},
        {"response_format", "text.format"},
        {"max_tokens", "max_output_tokens"},
        {".function.", "."},
        {"tool_choice.function", "tool_choice"},
        {"'messages'", "'input'"},
    };
    char *fields[] = {err->param, err->message};
    size_t caps[] = {sizeof err->param, sizeof err->message};
    if (!strcmp(err->param, "messages")) snprintf(err->param, sizeof err->param, "input");
    for (size_t f = 0; f < 2; f++)
        for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
            char *at;
            size_t nc = strlen(names[k].chat);
            while ((at = strstr(fields[f], names[k].chat)) != NULL &&
                   resp__splice(fields[f], caps[f], at, nc, names[k].responses))
                ;
        }
}

/* The chat parser's names of what it read from the rebuilt request, as the
 * Responses request spells them. */
static void resp__error_names(oai_error *err, const resp_input *in)
{
    resp__message_names(err->param, sizeof err->param, in);
    for (int twice = 0; twice < 2; twice++) /* a message may name the field twice */
        resp__message_names(err->message, sizeof err->message, in);
    oai_responses_error_names(err);
}

/* The request's fields a Response repeats, as JSON members: the ones the
 * client gave (tools and text as written), OpenAI's defaults for the rest. */
static char *resp__echo(const cJSON *root)
{
    static const struct {
        const char *name, *absent;
    } fields[] = {
        {"instructions", "null"},
        {"max_output_tokens", "null"},
        {"metadata", "{}"},
        {"parallel_tool_calls", "true"},
        {"previous_response_id", NULL},
        {"reasoning", "{\"effort\":null,\"summary\":null}"},
        {"text", "{\"format\":{\"type\":\"text\"}}"},
        {"tool_choice", "\"auto\""},
        {"tools", "[]"},
        {"top_logprobs", "0"},
        {"truncation", "\"disabled\""},
        {"user", "null"},
    };
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < sizeof fields / sizeof *fields; i++) {
        const cJSON *v = resp__get(root, fields[i].name);
        cJSON *c = v                  ? cJSON_Duplicate(v, 1)
                   : fields[i].absent ? cJSON_Parse(fields[i].absent)
                                      : cJSON_CreateNull();
        if (!c || !cJSON_AddItemToObject(o, fields[i].name, c)) {
            cJSON_Delete(c);
            cJSON_Delete(o);
            return NULL;
        }
    }
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return NULL;
    size_t n = strlen(text); /* {...} -> ... */
    memmove(text, text + 1, n - 2);
    text[n - 2] = '\0';
    return text;
}

/* The chat tools out->tools_json as the body wrote the flat tools,
 * {"type":"function","function":{<a tool's members but "type">}} each, so
 * that the template prints their numbers as spelled (as for a chat
 * request, tool_request_keep_text). It stays cJSON's print when the text is
 * not the same value (a key written with escapes). 0 when out of memory. */
static int resp__tools_text(const char *body, size_t len, oai_request *out, oai_error *err)
{
    size_t begin, end, *spans = NULL, n = 0, cap = 2;
    if (!out->tools_json || !json_span_member(body, len, "tools", &begin, &end) ||
        json_span_has_control(body + begin, end - begin))
        return 1; /* cJSON's print stays: it escapes control bytes */
    if (!json_span_elements(body, begin, end, &spans, &n)) return resp__oom(err);
    char *text = malloc(cap), **parts = calloc(n ? n : 1, sizeof *parts);
    int ok = text && parts;
    for (size_t i = 0; ok && i < n; i++) {
        parts[i] = json_span_object_without(body, spans[2 * i], spans[2 * i + 1], "type");
        ok = parts[i] != NULL;
        cap += ok ? strlen(parts[i]) + 40 : 0;
    }
    char *grown = ok ? realloc(text, cap) : NULL;
    if (grown) {
        size_t at = (size_t)snprintf(grown, cap, "[");
        for (size_t i = 0; i < n; i++)
            at +=
                (size_t)snprintf(grown + at, cap - at, "%s{\"type\":\"function\",\"function\":%s}",
                                 i ? "," : "", parts[i]);
        snprintf(grown + at, cap - at, "]");
        text = grown;
    }
    for (size_t i = 0; parts && i < n; i++)
        free(parts[i]);
    free(parts);
    free(spans);
    if (!grown) {
        free(text);
        return resp__oom(err);
    }
    int same = json_span_prints_as(text, strlen(text), out->tools_json);
    if (same < 0) {
        free(text);
        return resp__oom(err);
    }
    if (!same) {
        free(text);
        return 1;
    }
    free(out->tools_json);
    out->tools_json = text;
    return 1;
}

int oai_responses_parse(const char *body, size_t len, const oai_defaults *defaults,
                        oai_request *out, oai_error *err)
{
    memset(out, 0, sizeof *out);
    out->kind = OAI_CHAT;
    resp_input in = {0};
    cJSON *root = oai_request_json(body, len, err), *chat = root ? cJSON_CreateObject() : NULL;
    if (root && !chat) resp__oom(err);
    int ok = chat && resp__refused(root, err) && resp__input(root, chat, &in, err) &&
             resp__tools(root, chat, err) && resp__tool_choice(root, chat, err) &&
             resp__text_format(root, chat, err) && resp__limits(root, chat, err) &&
             resp__shared_fields(root, chat, err);
    if (ok) {
        ok = oai_request_parse_chat(chat, body, len, defaults, out, err);
        if (!ok) resp__error_names(err, &in);
    }
    if (ok && !resp__tools_text(body, len, out, err)) oai_request_free(out), ok = 0;
    if (ok) {
        out->responses = 1;
        out->responses_echo = resp__echo(root);
        oai_request_ignored(root, resp__known, out);
        if (!out->responses_echo) {
            oai_request_free(out);
            ok = resp__oom(err);
        }
    }
    cJSON_Delete(chat);
    cJSON_Delete(root);
    free(in.item_of);
    free(in.call_item_of);
    return ok;
}
