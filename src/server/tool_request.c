/* tool_request.c - "tools", "tool_choice", "tool_calls" and "tool_call_id"
 * of a chat request, checked field by field (tool_request.h).
 *
 * The tools go to the chat template as the client wrote them (their text in
 * the body; the template prints each with tojson). A function name is
 * OpenAI's [A-Za-z0-9_-]{1,64}, so that it reads the same in the prompt, in
 * the model's <tool_call> and in a grammar. A message's tool call keeps
 * function.arguments as the string the client sent, after checking that it
 * holds a JSON object (the API re-prints it for the template). */
#include "tool_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_span.h"

static char *tool__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int tool__oom(oai_error *err)
{
    return oai_error_set(err, 500, NULL, "out of memory");
}

static int tool__name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > TOOL_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* obj[key] (named `param` in errors) is a string, or absent/null when
 * optional; *out points at it (NULL when absent). */
static int tool__string(const cJSON *obj, const char *key, const char *param, int required,
                        const char **out, oai_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return required ? oai_error_set(err, 400, param, "'%s' is required", param) : 1;
    if (!cJSON_IsString(v)) return oai_error_set(err, 400, param, "'%s' must be a string", param);
    *out = v->valuestring;
    return 1;
}

/* obj["type"], when given, is "function". */
static int tool__type(const cJSON *obj, const char *param, oai_error *err)
{
    const char *type;
    if (!tool__string(obj, "type", param, 0, &type, err)) return 0;
    if (type && strcmp(type, "function") != 0)
        return oai_error_set(err, 400, param, "'%s' must be \"function\", got \"%.40s\"", param,
                             type);
    return 1;
}

/* obj["function"] is an object with a valid "name"; *name points into it. */
static int tool__function(const cJSON *obj, const char *where, const cJSON **fn, const char **name,
                          oai_error *err)
{
    char param[96];
    snprintf(param, sizeof param, "%s.function", where);
    *fn = cJSON_GetObjectItemCaseSensitive(obj, "function");
    if (!*fn || cJSON_IsNull(*fn)) return oai_error_set(err, 400, param, "'%s' is required", param);
    if (!cJSON_IsObject(*fn))
        return oai_error_set(err, 400, param, "'%s' must be an object", param);
    snprintf(param, sizeof param, "%s.function.name", where);
    if (!tool__string(*fn, "name", param, 1, name, err)) return 0;
    if (!tool__name_ok(*name))
        return oai_error_set(err, 400, param,
                             "'%s' must be 1 to %d letters, digits, '_' or '-', got \"%.70s\"",
                             param, TOOL_MAX_NAME, *name);
    return 1;
}

/* --- tools ------------------------------------------------------------------------ */

/* tools[i]: {"type": "function", "function": {"name", "description"?, "parameters"?}} */
static int tool__definition(const cJSON *t, int i, const char **name, oai_error *err)
{
    char where[32], param[96];
    snprintf(where, sizeof where, "tools[%d]", i);
    if (!cJSON_IsObject(t)) return oai_error_set(err, 400, where, "'%s' must be an object", where);
    snprintf(param, sizeof param, "%s.type", where);
    const cJSON *fn;
    if (!tool__type(t, param, err) || !tool__function(t, where, &fn, name, err)) return 0;
    const char *description;
    snprintf(param, sizeof param, "%s.function.description", where);
    if (!tool__string(fn, "description", param, 0, &description, err)) return 0;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
    snprintf(param, sizeof param, "%s.function.parameters", where);
    if (p && !cJSON_IsNull(p) && !cJSON_IsObject(p))
        return oai_error_set(err, 400, param, "'%s' must be an object (a JSON Schema)", param);
    const cJSON *strict = cJSON_GetObjectItemCaseSensitive(fn, "strict");
    snprintf(param, sizeof param, "%s.function.strict", where);
    if (strict && !cJSON_IsNull(strict) && !cJSON_IsBool(strict))
        return oai_error_set(err, 400, param, "'%s' must be a boolean", param);
    return 1;
}

static int tool__tools(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "tools");
    if (!v || cJSON_IsNull(v)) return 1;
    if (!cJSON_IsArray(v)) return oai_error_set(err, 400, "tools", "'tools' must be an array");
    int count = cJSON_GetArraySize(v);
    if (count > TOOL_MAX_TOOLS)
        return oai_error_set(err, 400, "tools", "'tools' has %d items, at most %d allowed", count,
                             TOOL_MAX_TOOLS);
    if (count == 0) return 1;
    r->tool_names = calloc((size_t)count, sizeof *r->tool_names);
    if (!r->tool_names) return tool__oom(err);
    int i = 0;
    for (const cJSON *t = v->child; t; t = t->next, i++) {
        const char *name;
        if (!tool__definition(t, i, &name, err)) return 0;
        for (size_t k = 0; k < r->n_tools; k++)
            if (!strcmp(r->tool_names[k], name)) {
                char param[48];
                snprintf(param, sizeof param, "tools[%d].function.name", i);
                return oai_error_set(err, 400, param,
                                     "'%s': the function \"%s\" is defined twice (also tools[%zu])",
                                     param, name, k);
            }
        if (!(r->tool_names[r->n_tools++] = tool__strdup(name))) return tool__oom(err);
    }
    r->tools_json = cJSON_PrintUnformatted(v);
    return r->tools_json ? 1 : tool__oom(err);
}

int tool_request_keep_text(const char *body, size_t len, oai_request *r, oai_error *err)
{
    size_t begin, end;
    if (!r->tools_json || !json_span_member(body, len, "tools", &begin, &end) ||
        json_span_has_control(body + begin, end - begin))
        return 1; /* cJSON's print stays: it escapes control bytes */
    /* the same array as the one checked (not another member spelled
     * "tools" after an escaped one that cJSON took) */
    int same = json_span_prints_as(body + begin, end - begin, r->tools_json);
    if (same < 0) return tool__oom(err);
    if (!same) return 1;
    char *text = malloc(end - begin + 1);
    if (!text) return tool__oom(err);
    memcpy(text, body + begin, end - begin);
    text[end - begin] = '\0';
    free(r->tools_json);
    r->tools_json = text;
    return 1;
}

/* --- tool_choice ------------------------------------------------------------------- */

static int tool__choice_string(const char *s, oai_request *r, oai_error *err)
{
    static const struct {
        const char *name;
        oai_tool_choice choice;
    } names[] = {{"none", OAI_TOOL_NONE}, {"auto", OAI_TOOL_AUTO}, {"required", OAI_TOOL_REQUIRED}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(s, names[k].name)) {
            r->tool_choice = names[k].choice;
            return 1;
        }
    return oai_error_set(err, 400, "tool_choice",
                         "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                         "\"function\", \"function\": {\"name\": ...}}, got \"%.40s\"",
                         s);
}

static int tool__choice_named(const cJSON *v, oai_request *r, oai_error *err)
{
    const cJSON *fn;
    const char *name;
    if (!tool__type(v, "tool_choice.type", err) ||
        !tool__function(v, "tool_choice", &fn, &name, err))
        return 0;
    for (size_t k = 0; k < r->n_tools; k++)
        if (!strcmp(r->tool_names[k], name)) {
            r->tool_choice = OAI_TOOL_NAMED;
            r->tool_choice_name = tool__strdup(name);
            return r->tool_choice_name ? 1 : tool__oom(err);
        }
    return oai_error_set(err, 400, "tool_choice.function.name",
                         "'tool_choice.function.name': \"%s\" is not one of the functions in "
                         "'tools'",
                         name);
}

static int tool__choice(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "tool_choice");
    r->tool_choice = r->n_tools ? OAI_TOOL_AUTO : OAI_TOOL_NONE;
    if (!v || cJSON_IsNull(v)) return 1;
    if (cJSON_IsString(v)) {
        if (!tool__choice_string(v->valuestring, r, err)) return 0;
    } else if (cJSON_IsObject(v)) {
        if (!tool__choice_named(v, r, err)) return 0;
    } else {
        return oai_error_set(err, 400, "tool_choice",
                             "'tool_choice' must be a string or an object");
    }
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(obj, "tools");
    int empty_list = cJSON_IsArray(tools) && !r->n_tools;
    if (empty_list && (r->tool_choice == OAI_TOOL_AUTO || r->tool_choice == OAI_TOOL_REQUIRED))
        r->tool_choice = OAI_TOOL_NONE; /* "tools": [] calls nothing (vLLM, as OpenAI) */
    if (r->tool_choice != OAI_TOOL_NONE && !r->n_tools)
        return oai_error_set(err, 400, "tool_choice",
                             "'tool_choice' other than \"none\" needs functions in 'tools'");
    return 1;
}

/* parallel_tool_calls: false shows a reply's first call only, as vLLM
 * does (the model is not stopped after it). */
static int tool__parallel(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "parallel_tool_calls");
    if (!v || cJSON_IsNull(v)) return 1;
    if (!cJSON_IsBool(v))
        return oai_error_set(err, 400, "parallel_tool_calls",
                             "'parallel_tool_calls' must be a boolean");
    r->parallel_tool_calls = cJSON_IsTrue(v);
    return 1;
}

int tool_request_parse(const cJSON *obj, oai_request *r, oai_error *err)
{
    return tool__tools(obj, r, err) && tool__choice(obj, r, err) && tool__parallel(obj, r, err);
}

/* --- messages ------------------------------------------------------------------------ */

/* tool_calls[k] of message i: {"id", "type", "function": {"name", "arguments"}} */
static int tool__call(const cJSON *c, int i, int k, encore_chat_tool_call *out, oai_error *err)
{
    char where[64], param[96];
    snprintf(where, sizeof where, "messages[%d].tool_calls[%d]", i, k);
    if (!cJSON_IsObject(c)) return oai_error_set(err, 400, where, "'%s' must be an object", where);
    const char *id, *name, *args;
    const cJSON *fn;
    snprintf(param, sizeof param, "%s.id", where);
    if (!tool__string(c, "id", param, 0, &id, err)) return 0;
    snprintf(param, sizeof param, "%s.type", where);
    if (!tool__type(c, param, err) || !tool__function(c, where, &fn, &name, err)) return 0;
    snprintf(param, sizeof param, "%s.function.arguments", where);
    /* vLLM's reading: absent, null or "" is no arguments, {}; an object
     * itself (not its text) is taken as its compact text */
    const cJSON *given = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    char *printed = cJSON_IsObject(given) ? cJSON_PrintUnformatted(given) : NULL;
    if (cJSON_IsObject(given) && !printed) return tool__oom(err);
    if (printed) {
        args = printed;
    } else {
        if (!tool__string(fn, "arguments", param, 0, &args, err)) return 0;
        if (!args || !args[0]) args = "{}";
    }
    cJSON *parsed = cJSON_Parse(args);
    int object = cJSON_IsObject(parsed) && !json_span_has_control(args, strlen(args));
    cJSON_Delete(parsed);
    if (!object) {
        oai_error_set(err, 400, param,
                      "'%s' must be a JSON object or a string holding one, got \"%.60s\"", param,
                      args);
        free(printed);
        return 0;
    }
    out->id = id ? tool__strdup(id) : NULL;
    out->name = tool__strdup(name);
    out->arguments = tool__strdup(args);
    free(printed);
    return (!id || out->id) && out->name && out->arguments ? 1 : tool__oom(err);
}

static int tool__calls(const cJSON *m, int i, encore_chat_message *out, oai_error *err)
{
    char param[48];
    snprintf(param, sizeof param, "messages[%d].tool_calls", i);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (!v || cJSON_IsNull(v)) return 1;
    if (strcmp(out->role, "assistant") != 0)
        return oai_error_set(err, 400, param, "'%s' is only allowed in an assistant message",
                             param);
    if (!cJSON_IsArray(v)) return oai_error_set(err, 400, param, "'%s' must be an array", param);
    int count = cJSON_GetArraySize(v);
    if (count > TOOL_MAX_CALLS)
        return oai_error_set(err, 400, param, "'%s' has %d items, at most %d allowed", param, count,
                             TOOL_MAX_CALLS);
    if (count == 0) return 1;
    encore_chat_tool_call *calls = calloc((size_t)count, sizeof *calls);
    if (!calls) return tool__oom(err);
    out->tool_calls = calls; /* owned by the request from here: freed with it */
    int k = 0;
    for (const cJSON *c = v->child; c; c = c->next, k++) {
        out->n_tool_calls++;
        if (!tool__call(c, i, k, &calls[k], err)) return 0;
    }
    return 1;
}

int tool_request_message(const cJSON *m, int i, encore_chat_message *out, oai_error *err)
{
    char param[48];
    const char *id;
    snprintf(param, sizeof param, "messages[%d].tool_call_id", i);
    if (!tool__calls(m, i, out, err) || !tool__string(m, "tool_call_id", param, 0, &id, err))
        return 0;
    if (id && !(out->tool_call_id = tool__strdup(id))) return tool__oom(err);
    return 1;
}

static int tool__enforced(const oai_request *r)
{
    return r->tool_choice == OAI_TOOL_REQUIRED || r->tool_choice == OAI_TOOL_NAMED;
}

int tool_request_compatible(const oai_request *r, oai_error *err)
{
    if (!tool__enforced(r) || !r->structured.param) return 1;
    return oai_error_set(err, 400, r->structured.param,
                         "'%s' and 'tool_choice' %s both constrain the output; give one",
                         r->structured.param,
                         r->tool_choice == OAI_TOOL_REQUIRED ? "\"required\"" : "(a function)");
}

void tool_request_constrain(const oai_request *r, int in_think, encore_request *out)
{
    if (!tool__enforced(r)) return;
    out->tool_calls = r->tools_json;
    out->tool_call_name = r->tool_choice == OAI_TOOL_NAMED ? r->tool_choice_name : NULL;
    out->think_first = in_think ? 2 : r->enable_thinking;
}

encore_chat_options tool_request_chat_options(const oai_request *r, int plain_content)
{
    return (encore_chat_options){.enable_thinking = r->enable_thinking,
                                 .plain_content = plain_content,
                                 .tools_json = r->tools_json,
                                 .no_generation_prompt = !r->add_generation_prompt,
                                 .continue_final_message = r->continue_final_message};
}

void tool_request_free(oai_request *r)
{
    for (size_t i = 0; i < r->n_messages; i++) {
        encore_chat_message *m = &r->messages[i];
        for (size_t k = 0; k < m->n_tool_calls; k++) {
            free((char *)m->tool_calls[k].id);
            free((char *)m->tool_calls[k].name);
            free((char *)m->tool_calls[k].arguments);
        }
        free((void *)m->tool_calls);
        free((char *)m->tool_call_id);
    }
    for (size_t k = 0; k < r->n_tools; k++)
        free(r->tool_names[k]);
    free(r->tool_names);
    free(r->tools_json);
    free(r->tool_choice_name);
}
