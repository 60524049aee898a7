/* tool_grammar.c - the grammar of an enforced tool choice (tool_grammar.h):
 * the <tool_call> blocks of Qwen3's chat template, each call's arguments
 * constrained by its tool's "parameters" schema.
 *
 *   root  ::= think? calls               (think only with tool_call_thinking)
 *   calls ::= call                       (a named function: that one)
 *           | call ("\n" call)*          ("required": any of the tools)
 *   call  ::= "<tool_call>\n{\"name\": \"" NAME "\", \"arguments\": " tK_root "}\n</tool_call>"
 *
 * tK_root is tool K's parameters schema compiled with the rule prefix "tK_"
 * (a tool without parameters takes any JSON object, as vLLM does). The
 * calls are separated by "\n" as the template writes consecutive calls, and
 * the hermes parser (server/tool_calls.c) reads them back. The think block
 * is "<think>\n" text "\n</think>\n\n", the text never holding "</think>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/tool_grammar.h"
#include "grammar/ebnf_buf.h"
#include "grammar/grammar.h"

/* Text without "</think>" (and not ending inside a partial "</think>"). */
static const char tg__think_regex[] =
    "<think>\n([^<]|<+([^</]|/([^t<]|t([^h<]|h([^i<]|i([^n<]|n([^k<]|k[^><])))))))*\n</think>\n\n";

static enc_status tg__fail(const char *what)
{
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request.tool_calls: %s", what);
}

/* tools[i].function: its name (checked) and parameters (may be NULL). */
static enc_status tg__function(const cJSON *t, int i, const char **name, const cJSON **params)
{
    const cJSON *fn = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "function") : NULL;
    const cJSON *n = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    if (!cJSON_IsString(n) || !n->valuestring[0])
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request.tool_calls: tools[%d] has no function.name", i);
    for (const char *c = n->valuestring; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-'))
            return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                            "request.tool_calls: tools[%d].function.name \"%.64s\" must be "
                            "letters, digits, '_' or '-'",
                            i, n->valuestring);
    *name = n->valuestring;
    *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
    if (*params && cJSON_IsNull(*params)) *params = NULL;
    return ENC_OK;
}

/* Tool i's argument rules (root t<i>_root) appended to b. */
static enc_status tg__arguments(ebnf_buf *b, int i, const char *name, const cJSON *params)
{
    char *text = params ? cJSON_PrintUnformatted(params) : NULL;
    if (params && !text) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tool calls: out of memory");
    const char *schema = text ? text : "{\"type\": \"object\"}";
    char prefix[24], *ebnf = NULL;
    snprintf(prefix, sizeof prefix, "t%d_", i);
    enc_status st = grammar_json_schema_to_ebnf(schema, strlen(schema), prefix, &ebnf);
    free(text);
    if (st != ENC_OK)
        return enc_fail_context(st, "tools[%d] (function \"%s\") parameters", i, name);
    ebnf_buf_printf(b, "%s\n", ebnf);
    free(ebnf);
    return ENC_OK;
}

/* The rule t<i>_call: one call of tool i. */
static void tg__call_rule(ebnf_buf *b, int i, const char *name)
{
    ebnf_buf_printf(b, "t%d_call ::= ", i);
    char head[128];
    snprintf(head, sizeof head, "<tool_call>\n{\"name\": \"%s\", \"arguments\": ", name);
    ebnf_buf_literal(b, head, strlen(head), "tool call");
    ebnf_buf_printf(b, " t%d_root ", i);
    ebnf_buf_literal(b, "}\n</tool_call>", 14, "tool call");
    ebnf_buf_append(b, "\n", 1);
}

/* The root: [think] then one call of `only` (>= 0) or calls of any tool. */
static enc_status tg__root(ebnf_buf *b, int n_tools, int only, int thinking)
{
    if (thinking) {
        char *think = NULL;
        ENC_TRY(grammar_regex_to_ebnf(tg__think_regex, "think_", &think));
        ebnf_buf_printf(b, "%s\n", think);
        free(think);
    }
    ebnf_buf_printf(b, "root ::= %s", thinking ? "think_root? " : "");
    if (only >= 0) {
        ebnf_buf_printf(b, "t%d_call\n", only);
        return ENC_OK;
    }
    ebnf_buf_printf(b, "call (\"\\n\" call)*\ncall ::= ");
    for (int i = 0; i < n_tools; i++)
        ebnf_buf_printf(b, "%st%d_call", i ? " | " : "", i);
    ebnf_buf_append(b, "\n", 1);
    return ENC_OK;
}

static enc_status tg__compose(const cJSON *tools, const encore_request *r, ebnf_buf *b)
{
    int n = cJSON_GetArraySize(tools), only = -1, i = 0;
    if (n <= 0) return tg__fail("must be a JSON array of one or more tools");
    for (const cJSON *t = tools->child; t; t = t->next, i++) {
        const char *name = NULL;
        const cJSON *params = NULL;
        ENC_TRY(tg__function(t, i, &name, &params));
        if (r->tool_call_name && !strcmp(name, r->tool_call_name)) only = i;
        if (r->tool_call_name && only != i) continue;
        ENC_TRY(tg__arguments(b, i, name, params));
        tg__call_rule(b, i, name);
    }
    if (r->tool_call_name && only < 0)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request.tool_call_name: \"%.64s\" is not one of the tools",
                        r->tool_call_name);
    return tg__root(b, n, only, r->tool_call_thinking);
}

enc_status api_tool_grammar_ebnf(const encore_request *r, char **ebnf)
{
    *ebnf = NULL;
    cJSON *tools = cJSON_Parse(r->tool_calls);
    if (!cJSON_IsArray(tools)) {
        cJSON_Delete(tools);
        return tg__fail("must be a JSON array of one or more tools");
    }
    ebnf_buf b = {0};
    enc_status st = tg__compose(tools, r, &b);
    cJSON_Delete(tools);
    if (st != ENC_OK) {
        ebnf_buf_free(&b);
        return st;
    }
    return ebnf_buf_finish(&b, ebnf);
}
