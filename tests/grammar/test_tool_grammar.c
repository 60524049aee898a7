/* test_tool_grammar.c - the grammar of an enforced tool choice
 * (src/api/tool_grammar.c) on hand-written replies: what the Qwen3 template
 * and the hermes parser read as calls of the allowed tools, with arguments
 * valid for their schemas, is a sentence; anything else (another tool, a
 * second call of a named one, arguments against the schema, no call, a
 * think block holding "</think>") is not. Bad tools are refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tool_grammar.h"
#include "check.h"
#include "grammar_util.h"

static const char TOOLS[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
    "\"required\": [\"city\"], \"additionalProperties\": false}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";

#define CALL(name, args)                                                                           \
    "<tool_call>\n{\"name\": \"" name "\", \"arguments\": " args "}\n</tool_call>"
#define WEATHER CALL("get_weather", "{\"city\": \"Oslo\"}")
#define NOW CALL("now", "{}")

static grammar *tg_grammar(const char *name, int thinking)
{
    encore_request r = {
        .tool_calls = TOOLS, .tool_call_name = name, .tool_call_thinking = thinking};
    char *ebnf = NULL;
    if (api_tool_grammar_ebnf(&r, &ebnf) != ENC_OK) {
        fprintf(stderr, "tool grammar: %s\n", enc_last_error());
        exit(1);
    }
    grammar *g = gt_compile(ebnf);
    free(ebnf);
    return g;
}

static int tg_match(const grammar *g, const grammar_vocab *v, const char *s)
{
    return gt_matches(g, v, s, strlen(s));
}

static void test_required(const grammar_vocab *v)
{
    grammar *g = tg_grammar(NULL, 0);
    CHECK(tg_match(g, v, WEATHER));
    CHECK(tg_match(g, v, NOW));
    CHECK(tg_match(g, v, CALL("now", "{\"any\": [1, 2]}"))); /* no parameters: any object */
    CHECK(tg_match(g, v, WEATHER "\n" NOW "\n" WEATHER));
    CHECK(!tg_match(g, v, ""));
    CHECK(!tg_match(g, v, WEATHER NOW));                          /* no "\n" between */
    CHECK(!tg_match(g, v, CALL("other", "{}")));                  /* not a tool */
    CHECK(!tg_match(g, v, CALL("get_weather", "{}")));            /* "city" required */
    CHECK(!tg_match(g, v, CALL("get_weather", "{\"city\": 3}"))); /* not a string */
    CHECK(!tg_match(g, v, CALL("get_weather", "{\"city\": \"a\", \"x\": 1}")));
    CHECK(!tg_match(g, v, CALL("now", "[]")));                 /* not an object */
    CHECK(!tg_match(g, v, "<think>\n\n</think>\n\n" WEATHER)); /* thinking off */
    grammar_free(g);
}

static void test_named(const grammar_vocab *v)
{
    grammar *g = tg_grammar("get_weather", 0);
    CHECK(tg_match(g, v, WEATHER));
    CHECK(!tg_match(g, v, NOW));
    CHECK(!tg_match(g, v, WEATHER "\n" WEATHER)); /* exactly one call */
    grammar_free(g);
}

static void test_thinking(const grammar_vocab *v)
{
    grammar *g = tg_grammar(NULL, 1);
    CHECK(tg_match(g, v, WEATHER));
    CHECK(tg_match(g, v, "<think>\nso < that </thin k> << x\n</think>\n\n" WEATHER));
    CHECK(tg_match(g, v, "<think>\n\n</think>\n\n" NOW));
    CHECK(!tg_match(g, v, "<think>\na</think>b\n</think>\n\n" WEATHER));
    CHECK(!tg_match(g, v, "<think>\n</</think>\n</think>\n\n" WEATHER));
    CHECK(!tg_match(g, v, "<think>\nno end" WEATHER));
    grammar_free(g);
}

static void test_refusals(void)
{
    static const struct {
        const char *tools, *name, *needle;
    } cases[] = {
        {"[{\"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
         "\"minProperties\": 1}}}]",
         NULL, "minProperties"},
        {"[{\"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
         "\"minProperties\": 1}}}]",
         NULL, "\"f\""},
        {TOOLS, "missing", "\"missing\" is not one of the tools"},
        {"[]", NULL, "one or more tools"},
        {"{\"function\": {}}", NULL, "JSON array"},
        {"[{\"function\": {\"name\": \"a b\"}}]", NULL, "tools[0].function.name"},
        {"[{\"type\": \"function\"}]", NULL, "tools[0] has no function.name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        encore_request r = {.tool_calls = cases[i].tools, .tool_call_name = cases[i].name};
        char *ebnf = NULL;
        enc_status st = api_tool_grammar_ebnf(&r, &ebnf);
        CHECK(st == ENC_ERR_INVALID_ARGUMENT && ebnf == NULL);
        if (!strstr(enc_last_error(), cases[i].needle)) {
            fprintf(stderr, "case %zu: \"%s\" lacks \"%s\"\n", i, enc_last_error(),
                    cases[i].needle);
            check_failures++;
        }
        free(ebnf);
    }
}

int main(void)
{
    grammar_vocab *v = gt_byte_vocab();
    test_required(v);
    test_named(v);
    test_thinking(v);
    test_refusals();
    grammar_vocab_free(v);
    if (!check_failures) printf("ok\n");
    return check_failures != 0;
}
