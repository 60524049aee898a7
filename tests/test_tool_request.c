/* test_tool_request.c - the tool-calling fields of a chat request
 * (src/server/tool_request.c): tools, tool_choice, an assistant's tool_calls
 * and a tool message's tool_call_id read as sent, each malformed shape
 * refused with 400 naming its field; and the reply objects that carry calls
 * (src/server/openai_response.c), read back with cJSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "fail_realloc.h" /* linked with --wrap=realloc, as the server's other tests */
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/tool_request.h"

#define TOOLS                                                                                      \
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "        \
    "\"The weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "          \
    "{\"type\": \"string\"}}, \"required\": [\"city\"]}}}, {\"type\": \"function\", "              \
    "\"function\": {\"name\": \"get-time_2\"}}]"
#define USER "\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]"

static int parse(const char *body, oai_request *r, oai_error *err)
{
    return oai_request_parse(body, strlen(body), OAI_CHAT, NULL, r, err);
}

/* body refused with 400 naming param */
static void expect_refused(const char *body, const char *param)
{
    oai_request r;
    oai_error err = {0};
    int ok = parse(body, &r, &err);
    CHECK(!ok && err.http_status == 400 && !strcmp(err.param, param));
    if (ok || strcmp(err.param, param))
        fprintf(stderr, "  %s: param \"%s\" (%s), want \"%s\"\n", body, err.param, err.message,
                param);
    if (ok) oai_request_free(&r);
}

static void test_tools(void)
{
    oai_request r;
    oai_error err;
    CHECK(parse("{" USER ", \"tools\": " TOOLS "}", &r, &err));
    CHECK(r.n_tools == 2 && !strcmp(r.tool_names[0], "get_weather") &&
          !strcmp(r.tool_names[1], "get-time_2") && r.tool_choice == OAI_TOOL_AUTO);
    cJSON *sent = cJSON_Parse(TOOLS), *kept = cJSON_Parse(r.tools_json ? r.tools_json : "");
    CHECK(kept && cJSON_Compare(sent, kept, 1)); /* what the template gets: the tools as sent */
    cJSON_Delete(sent);
    cJSON_Delete(kept);
    oai_request_free(&r);

    static const struct {
        const char *choice;
        oai_tool_choice want;
    } choices[] = {
        {"\"none\"", OAI_TOOL_NONE},
        {"\"auto\"", OAI_TOOL_AUTO},
        {"\"required\"", OAI_TOOL_REQUIRED},
        {"null", OAI_TOOL_AUTO},
        {"{\"type\": \"function\", \"function\": {\"name\": \"get-time_2\"}}", OAI_TOOL_NAMED}};
    for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++) {
        char body[2048];
        snprintf(body, sizeof body, "{" USER ", \"tools\": " TOOLS ", \"tool_choice\": %s}",
                 choices[i].choice);
        CHECK(parse(body, &r, &err) && r.tool_choice == choices[i].want);
        CHECK(r.tool_choice != OAI_TOOL_NAMED || !strcmp(r.tool_choice_name, "get-time_2"));
        /* "required" and a named function become the request's constraint */
        int enforced = r.tool_choice == OAI_TOOL_REQUIRED || r.tool_choice == OAI_TOOL_NAMED;
        encore_request er = {0}, opened = {0};
        tool_request_constrain(&r, 0, &er);
        tool_request_constrain(&r, 1, &opened); /* the prompt opened the think block */
        CHECK(tool_request_compatible(&r, &err));
        CHECK(enforced ? er.tool_calls == r.tools_json : er.tool_calls == NULL);
        CHECK(r.tool_choice == OAI_TOOL_NAMED ? !strcmp(er.tool_call_name, "get-time_2")
                                              : er.tool_call_name == NULL);
        CHECK(er.think_first == (enforced && r.enable_thinking));
        CHECK(opened.think_first == (enforced ? 2 : 0));
        oai_request_free(&r);
    }
    /* an enforced tool choice and structured output: one constraint only */
    {
        char body[2048];
        snprintf(body, sizeof body,
                 "{" USER ", \"tools\": " TOOLS ", \"tool_choice\": \"required\", "
                 "\"response_format\": {\"type\": \"json_object\"}}");
        CHECK(parse(body, &r, &err) && !tool_request_compatible(&r, &err));
        CHECK(err.http_status == 400 && !strcmp(err.param, "response_format"));
        oai_request_free(&r);
    }
    /* the tools' own text, numbers as spelled (cJSON would print 0 and 100) */
    const char *spelled = "[ {\"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
                          "\"number\", \"minimum\": 0.0, \"maximum\": 1e2}}} ]";
    char body[1024];
    snprintf(body, sizeof body, "{" USER ", \"tools\":  %s , \"n\": 1}", spelled);
    CHECK(parse(body, &r, &err) && r.tools_json && !strcmp(r.tools_json, spelled));
    oai_request_free(&r);
    /* a control byte cJSON took as whitespace: its own print, escaped */
    snprintf(body, sizeof body,
             "{" USER
             ", \"tools\": [\x15{\"function\": {\"name\": \"f\", \"description\": \"a\x15\"}}]}");
    CHECK(parse(body, &r, &err) && r.tools_json && !strchr(r.tools_json, '\x15') &&
          strstr(r.tools_json, "a\\u0015"));
    oai_request_free(&r);
    /* a key spelled with an escape and plainly is one key twice: refused, naming it */
    snprintf(body, sizeof body,
             "{" USER ", \"t\\u006fols\": [{\"function\": {\"name\": \"first\"}}], \"tools\": %s}",
             spelled);
    expect_refused(body, "tools");
    /* spelled with an escape alone: still the tools */
    snprintf(body, sizeof body,
             "{" USER ", \"t\\u006fols\": [{\"function\": {\"name\": \"first\"}}]}");
    CHECK(parse(body, &r, &err) && r.n_tools == 1 && !strcmp(r.tool_names[0], "first") &&
          r.tools_json && strstr(r.tools_json, "\"first\""));
    oai_request_free(&r);
    /* no tools: tool_choice "none" (or absent) only; [] is none, with "auto" or "required" too
     * (vLLM's check_tool_usage); a named choice among none is refused (below) */
    static const char *const on_empty[] = {"\"none\"", "\"auto\"", "\"required\"", "null"};
    for (size_t i = 0; i < sizeof on_empty / sizeof on_empty[0]; i++) {
        char b[256];
        snprintf(b, sizeof b, "{" USER ", \"tools\": [], \"tool_choice\": %s}", on_empty[i]);
        CHECK(parse(b, &r, &err) && !r.tools_json && r.tool_choice == OAI_TOOL_NONE);
        oai_request_free(&r);
    }
    /* /tokenize with messages takes tools too */
    const char *tok = "{" USER ", \"tools\": " TOOLS "}";
    CHECK(oai_request_parse(tok, strlen(tok), OAI_TOKENIZE, NULL, &r, &err) && r.n_tools == 2);
    oai_request_free(&r);
}

/* Each body refused with 400 naming `param`. */
/* Tools nested deep (a parameter holding an object holding one ... 200
 * levels) are kept as the body's text at once (the check that the text is
 * the array cJSON read once took time exponential in the depth). */
static void test_deep_tools(void)
{
    char body[16384];
    size_t n = (size_t)snprintf(body, sizeof body,
                                "{" USER ", \"tools\": [{\"type\": \"function\", "
                                "\"function\": {\"name\": \"f\", \"parameters\": ");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(body + n, sizeof body - n,
                              "{\"type\": \"object\", \"properties\": {\"x\": ");
    n += (size_t)snprintf(body + n, sizeof body - n, "{\"type\": \"number\", \"minimum\": 1.0}");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, "}}");
    snprintf(body + n, sizeof body - n, "}}]}");
    oai_request r;
    oai_error err;
    CHECK(parse(body, &r, &err));
    CHECK(r.tools_json && strstr(r.tools_json, "\"minimum\": 1.0")); /* the body's own text */
    oai_request_free(&r);
}

static void test_refused(void)
{
    static const struct {
        const char *fields, *param;
    } bad[] = {
        {"\"tools\": {}", "tools"},
        {"\"tools\": [1]", "tools[0]"},
        {"\"tools\": [{\"type\": \"code\", \"function\": {\"name\": \"f\"}}]", "tools[0].type"},
        {"\"tools\": [{\"type\": \"function\"}]", "tools[0].function"},
        {"\"tools\": [{\"function\": []}]", "tools[0].function"},
        {"\"tools\": [{\"function\": {}}]", "tools[0].function.name"},
        {"\"tools\": [{\"function\": {\"name\": 3}}]", "tools[0].function.name"},
        {"\"tools\": [{\"function\": {\"name\": \"get weather\"}}]", "tools[0].function.name"},
        {"\"tools\": [{\"function\": {\"name\": \"a\\\"b\"}}]", "tools[0].function.name"},
        {"\"tools\": [{\"function\": {\"name\": \"\"}}]", "tools[0].function.name"},
        {"\"tools\": [{\"function\": {\"name\": \"f\", \"description\": 1}}]",
         "tools[0].function.description"},
        {"\"tools\": [{\"function\": {\"name\": \"f\", \"parameters\": \"{}\"}}]",
         "tools[0].function.parameters"},
        {"\"tools\": [{\"function\": {\"name\": \"f\", \"strict\": \"yes\"}}]",
         "tools[0].function.strict"},
        {"\"tools\": [{\"function\": {\"name\": \"f\"}}, {\"function\": {\"name\": \"f\"}}]",
         "tools[1].function.name"},
        {"\"tools\": " TOOLS ", \"tool_choice\": \"always\"", "tool_choice"},
        {"\"tools\": " TOOLS ", \"tool_choice\": 1", "tool_choice"},
        {"\"tools\": " TOOLS
         ", \"tool_choice\": {\"type\": \"x\", \"function\": {\"name\": \"f\"}}",
         "tool_choice.type"},
        {"\"tools\": " TOOLS ", \"tool_choice\": {\"type\": \"function\"}", "tool_choice.function"},
        {"\"tools\": " TOOLS ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
         "\"send_mail\"}}",
         "tool_choice.function.name"},
        {"\"tool_choice\": \"auto\"", "tool_choice"},
        {"\"tool_choice\": \"required\"", "tool_choice"},
        {"\"tools\": [], \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
         "\"f\"}}",
         "tool_choice.function.name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[4096];
        snprintf(body, sizeof body, "{" USER ", %s}", bad[i].fields);
        expect_refused(body, bad[i].param);
    }
}

#define CALLS(args)                                                                                \
    "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"call_1\", "          \
    "\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": " args       \
    "}}]}"

static void test_messages(void)
{
    const char *body = "{\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}, " CALLS(
        "\"{\\\"city\\\": "
        "\\\"Paris\\\"}\"") ", {\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": "
                            "\"18 C\"}], \"tools\": " TOOLS "}";
    oai_request r;
    oai_error err;
    CHECK(parse(body, &r, &err));
    CHECK(r.n_messages == 3 && r.messages[1].n_tool_calls == 1);
    if (r.n_messages == 3 && r.messages[1].n_tool_calls == 1) {
        const encore_chat_tool_call *c = &r.messages[1].tool_calls[0];
        CHECK(!strcmp(c->id, "call_1") && !strcmp(c->name, "get_weather") &&
              !strcmp(c->arguments, "{\"city\": \"Paris\"}"));
        CHECK(!strcmp(r.messages[1].content, ""));
        CHECK(!strcmp(r.messages[2].role, "tool") &&
              !strcmp(r.messages[2].tool_call_id, "call_1") &&
              !strcmp(r.messages[2].content, "18 C"));
    }
    oai_request_free(&r);

    /* vLLM's reading of an earlier call's arguments: absent, null or "" is {}; an object is its
     * compact text */
    static const struct {
        const char *message, *want;
    } lenient[] = {
        {CALLS("\"\""), "{}"},
        {CALLS("null"), "{}"},
        {"{\"role\": \"assistant\", \"tool_calls\": [{\"function\": {\"name\": \"get_weather\"}}]}",
         "{}"},
        {CALLS("{\"city\": \"Paris\", \"days\": [1, 2]}"), "{\"city\":\"Paris\",\"days\":[1,2]}"},
    };
    for (size_t i = 0; i < sizeof lenient / sizeof lenient[0]; i++) {
        char b[4096];
        snprintf(b, sizeof b, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, %s]}",
                 lenient[i].message);
        CHECK(parse(b, &r, &err));
        CHECK(r.n_messages == 2 && r.messages[1].n_tool_calls == 1 &&
              !strcmp(r.messages[1].tool_calls[0].arguments, lenient[i].want));
        oai_request_free(&r);
    }

    static const struct {
        const char *message, *param;
    } bad[] = {
        {CALLS("[1, 2]"), "messages[1].tool_calls[0].function.arguments"},
        {CALLS("\"[1, 2]\""), "messages[1].tool_calls[0].function.arguments"},
        {CALLS("\"{bad\""), "messages[1].tool_calls[0].function.arguments"},
        {CALLS("\"{\\\"a\\\":\x15 1}\""), "messages[1].tool_calls[0].function.arguments"},
        {"{\"role\": \"assistant\", \"tool_calls\": {}}", "messages[1].tool_calls"},
        {"{\"role\": \"assistant\", \"tool_calls\": [\"x\"]}", "messages[1].tool_calls[0]"},
        {"{\"role\": \"assistant\", \"tool_calls\": [{\"id\": 5, \"function\": {\"name\": \"f\", "
         "\"arguments\": \"{}\"}}]}",
         "messages[1].tool_calls[0].id"},
        {"{\"role\": \"assistant\", \"tool_calls\": [{\"type\": \"x\", \"function\": {\"name\": "
         "\"f\", \"arguments\": \"{}\"}}]}",
         "messages[1].tool_calls[0].type"},
        {"{\"role\": \"user\", \"content\": \"x\", \"tool_calls\": []}", "messages[1].tool_calls"},
        {"{\"role\": \"tool\", \"content\": \"x\", \"tool_call_id\": 7}",
         "messages[1].tool_call_id"},
        {"{\"role\": \"tool\"}", "messages[1].content"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char b[4096];
        snprintf(b, sizeof b, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, %s]}",
                 bad[i].message);
        expect_refused(b, bad[i].param);
    }
}

static const cJSON *at(const cJSON *v, const char *path)
{
    char key[64];
    while (*path && v) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(key))
                             : cJSON_GetObjectItemCaseSensitive(v, key);
        path += n + (path[n] == '.');
    }
    return v;
}

static int is_string(const cJSON *root, const char *path, const char *want)
{
    const cJSON *v = at(root, path);
    return cJSON_IsString(v) && !strcmp(v->valuestring, want);
}

static void test_replies(void)
{
    oai_head h = {.kind = OAI_CHAT, .id = "chatcmpl-1", .created = 1, .model = "m"};
    oai_tool_call calls[2] = {{0, "call_a", "get_weather", "{\"city\":\"Paris\"}"},
                              {1, "call_b", "get-time_2", "{}"}};
    oai_choice c = {
        .text = NULL, .finish_reason = "tool_calls", .tool_calls = calls, .n_tool_calls = 2};
    oai_usage u = {0};
    char *body = oai_response_body(&h, &c, 1, &u);
    cJSON *root = cJSON_Parse(body);
    const cJSON *m = at(root, "choices.0.message");
    CHECK(cJSON_IsNull(at(m, "content")) &&
          is_string(root, "choices.0.finish_reason", "tool_calls"));
    CHECK(cJSON_GetArraySize(at(m, "tool_calls")) == 2);
    CHECK(is_string(m, "tool_calls.0.id", "call_a") &&
          is_string(m, "tool_calls.0.type", "function") &&
          is_string(m, "tool_calls.0.function.name", "get_weather") &&
          is_string(m, "tool_calls.0.function.arguments", "{\"city\":\"Paris\"}") &&
          is_string(m, "tool_calls.1.function.name", "get-time_2") &&
          is_string(m, "tool_calls.1.function.arguments", "{}"));
    CHECK(!at(m, "tool_calls.0.index")); /* a message's calls have no index */
    cJSON_Delete(root);
    free(body);

    /* a chunk that starts a call, and one that continues it */
    oai_tool_call call = {1, "call_b", "get-time_2", "{\"tz\":"};
    body = oai_response_tool_call_chunk(&h, 0, &call, 0, NULL);
    root = cJSON_Parse(body);
    const cJSON *d = at(root, "choices.0.delta");
    CHECK(cJSON_IsNumber(at(d, "tool_calls.0.index")) &&
          at(d, "tool_calls.0.index")->valueint == 1 && is_string(d, "tool_calls.0.id", "call_b") &&
          is_string(d, "tool_calls.0.type", "function") &&
          is_string(d, "tool_calls.0.function.name", "get-time_2") &&
          is_string(d, "tool_calls.0.function.arguments", "") && !at(d, "content"));
    cJSON_Delete(root);
    free(body);
    body = oai_response_tool_call_chunk(&h, 0, &call, 1, NULL);
    root = cJSON_Parse(body);
    d = at(root, "choices.0.delta");
    CHECK(at(d, "tool_calls.0.index")->valueint == 1 && !at(d, "tool_calls.0.id") &&
          !at(d, "tool_calls.0.type") && !at(d, "tool_calls.0.function.name") &&
          is_string(d, "tool_calls.0.function.arguments", "{\"tz\":"));
    cJSON_Delete(root);
    free(body);
}

int main(void)
{
    test_tools();
    test_refused();
    test_deep_tools();
    test_messages();
    test_replies();
    if (!check_failures) printf("test_tool_request: ok\n");
    return check_failures != 0;
}
