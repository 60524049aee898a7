/* test_tool_calls.c - the <tool_call> parser (src/server/tool_calls.c) on
 * crafted replies: the calls and content each should give, written out by
 * hand from the format's definition; then every reply fed again split at
 * every byte boundary, byte by byte, and in three random pieces, which
 * must give the same calls and content as the whole; and every realloc
 * failing in turn. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fail_realloc.h"
#include "server/tool_calls.h"

typedef struct expect_call {
    const char *name, *arguments;
} expect_call;

typedef struct tool_case {
    const char *what;
    const char *text;
    const char *content;
    expect_call calls[3];
    size_t n_calls;
} tool_case;

#define CALL(name, args)                                                                           \
    "<tool_call>\n{\"name\": \"" name "\", \"arguments\": " args "}\n</tool_call>"

static const tool_case cases[] = {
    {"plain text", "Paris is the capital of France.", "Paris is the capital of France.", {{0}}, 0},
    {"empty reply", "", "", {{0}}, 0},
    {"one call",
     CALL("get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}"),
     "",
     {{"get_weather", "{\"city\":\"Paris\",\"unit\":\"celsius\"}"}},
     1},
    {"text, then two calls",
     "Let me look both up.\n\n" CALL("get_weather", "{\"city\": \"Paris\"}") "\n" CALL(
         "get_time", "{\"tz\": \"Europe/Paris\"}"),
     "Let me look both up.",
     {{"get_weather", "{\"city\":\"Paris\"}"}, {"get_time", "{\"tz\":\"Europe/Paris\"}"}},
     2},
    {"text after the calls", CALL("f", "{}") "\n\nDone.", "Done.", {{"f", "{}"}}, 1},
    {"strings, escapes, nesting and numbers kept as written",
     CALL("search",
          "{ \"q\" : \"a  b\\n\\\" }\", \"list\": [1, 2.0, 1e5, {\"k\": [ ]}], "
          "\"big\": 12345678901234567890, \"u\": \"\xc3\xa9\\u00e9\", \"t\": true, \"n\": null }"),
     "",
     {{"search", "{\"q\":\"a  b\\n\\\" }\",\"list\":[1,2.0,1e5,{\"k\":[]}],"
                 "\"big\":12345678901234567890,\"u\":\"\xc3\xa9\\u00e9\",\"t\":true,\"n\":null}"}},
     1},
    {"arguments before the name",
     "<tool_call>\n{\"arguments\": {\"x\": 1}, \"name\": \"g\"}\n</tool_call>",
     "",
     {{"g", "{\"x\":1}"}},
     1},
    {"no newlines around the JSON",
     "<tool_call>{\"name\":\"h\",\"arguments\":{\"a\":[1]}}</tool_call>",
     "",
     {{"h", "{\"a\":[1]}"}},
     1},
    {"bad JSON stays content",
     "<tool_call>\n{\"name\": \"x\", \"arguments\": {bad}}\n</tool_call>",
     "<tool_call>\n{\"name\": \"x\", \"arguments\": {bad}}\n</tool_call>",
     {{0}},
     0},
    {"no name stays content",
     "Hi <tool_call>\n{\"arguments\": {}}\n</tool_call>",
     "Hi <tool_call>\n{\"arguments\": {}}\n</tool_call>",
     {{0}},
     0},
    {"empty name stays content",
     "<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>",
     "<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>",
     {{0}},
     0},
    {"arguments not an object stay content",
     "<tool_call>{\"name\": \"x\", \"arguments\": \"{}\"}</tool_call>",
     "<tool_call>{\"name\": \"x\", \"arguments\": \"{}\"}</tool_call>",
     {{0}},
     0},
    {"trailing garbage stays content",
     "<tool_call>{\"name\": \"x\", \"arguments\": {}} x</tool_call>",
     "<tool_call>{\"name\": \"x\", \"arguments\": {}} x</tool_call>",
     {{0}},
     0},
    {"a bad call, then a good one",
     "<tool_call>oops</tool_call>\n" CALL("f", "{\"a\": 1}"),
     "<tool_call>oops</tool_call>",
     {{"f", "{\"a\":1}"}},
     1},
    {"an unclosed call at the end is parsed",
     "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n",
     "",
     {{"f", "{}"}},
     1},
    {"a call cut short stays content",
     "I will call.\n<tool_call>\n{\"name\": \"f\", \"argu",
     "I will call.\n<tool_call>\n{\"name\": \"f\", \"argu",
     {{0}},
     0},
    {"the start of a tag that is not one", "x <tool_cal", "x <tool_cal", {{0}}, 0},
    {"a tag's name in text",
     "Use <tool_call> tags, and </tool_call> after.",
     "Use <tool_call> tags, and </tool_call> after.",
     {{0}},
     0},
    {"a closing tag alone", "a </tool_call> b", "a </tool_call> b", {{0}}, 0},
    {"three calls glued",
     CALL("a", "{}") CALL("b", "{\"k\": \"v\"}") CALL("c", "{\"z\": [null]}"),
     "",
     {{"a", "{}"}, {"b", "{\"k\":\"v\"}"}, {"c", "{\"z\":[null]}"}},
     3},
    {"whitespace-only reply", "\n\n", "\n\n", {{0}}, 0},
    {"control bytes cJSON skips as whitespace",
     "<tool_call>{\"name\": \"f\", \"arguments\":\x15\x01 {\"a\":\x15 1,\x1f\"b\": "
     "\"\\u0015\"}}</tool_call>",
     "",
     {{"f", "{\"a\":1,\"b\":\"\\u0015\"}"}},
     1},
    {"a control byte inside a string is no JSON: content",
     "<tool_call>{\"name\": \"f\", \"arguments\": {\"b\": \"\x15\"}}</tool_call>",
     "<tool_call>{\"name\": \"f\", \"arguments\": {\"b\": \"\x15\"}}</tool_call>",
     {{0}},
     0},
    {"a name with escapes",
     "<tool_call>{\"name\": \"get\\u005fx\", \"arguments\": {}}</tool_call>",
     "",
     {{"get_x", "{}"}},
     1},
};

typedef struct result {
    char *content;
    size_t n_content;
    tool_parser p;
} result;

/* Feed text cut at cuts[0..n_cuts) (ascending), the last piece final. */
static int feed(const char *text, const size_t *cuts, size_t n_cuts, result *r)
{
    size_t len = strlen(text), at = 0;
    memset(r, 0, sizeof *r);
    tool_parser_init(&r->p);
    int ok = 1;
    for (size_t k = 0; k <= n_cuts; k++) {
        size_t end = k < n_cuts ? cuts[k] : len;
        ok &= tool_parser_put(&r->p, text + at, end - at, k == n_cuts, &r->content, &r->n_content);
        at = end;
    }
    return ok;
}

static void result_free(result *r)
{
    free(r->content);
    tool_parser_free(&r->p);
}

static int same(const result *a, const result *b)
{
    if (a->n_content != b->n_content || memcmp(a->content, b->content, a->n_content)) return 0;
    if (a->p.n_calls != b->p.n_calls) return 0;
    for (size_t i = 0; i < a->p.n_calls; i++)
        if (strcmp(a->p.calls[i].name, b->p.calls[i].name) ||
            strcmp(a->p.calls[i].arguments, b->p.calls[i].arguments))
            return 0;
    return 1;
}

static int matches(const tool_case *c, const result *r)
{
    if (strlen(r->content) != r->n_content || strcmp(r->content, c->content)) return 0;
    if (r->p.n_calls != c->n_calls) return 0;
    for (size_t i = 0; i < c->n_calls; i++)
        if (strcmp(r->p.calls[i].name, c->calls[i].name) ||
            strcmp(r->p.calls[i].arguments, c->calls[i].arguments))
            return 0;
    return 1;
}

static void test_case(const tool_case *c, uint64_t *rng)
{
    result whole;
    CHECK(feed(c->text, NULL, 0, &whole));
    if (!matches(c, &whole)) {
        fprintf(stderr, "case \"%s\": got content \"%s\" and %zu calls\n", c->what, whole.content,
                whole.p.n_calls);
        for (size_t i = 0; i < whole.p.n_calls; i++)
            fprintf(stderr, "  %s %s\n", whole.p.calls[i].name, whole.p.calls[i].arguments);
        check_failures++;
    }
    size_t len = strlen(c->text);
    for (size_t cut = 0; cut <= len; cut++) { /* two pieces, at every boundary */
        result r;
        CHECK(feed(c->text, &cut, 1, &r));
        if (!same(&whole, &r)) {
            fprintf(stderr, "case \"%s\": split at %zu differs\n", c->what, cut);
            check_failures++;
        }
        result_free(&r);
    }
    size_t *every = malloc((len + 1) * sizeof *every);
    for (size_t i = 0; i < len; i++)
        every[i] = i + 1; /* byte by byte */
    result r;
    CHECK(feed(c->text, every, len, &r));
    CHECK(same(&whole, &r));
    result_free(&r);
    free(every);
    for (int t = 0; t < 50 && len > 0; t++) { /* three random pieces */
        size_t cuts[2];
        for (int k = 0; k < 2; k++) {
            *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
            cuts[k] = (size_t)(*rng >> 33) % (len + 1);
        }
        if (cuts[0] > cuts[1]) {
            size_t x = cuts[0];
            cuts[0] = cuts[1], cuts[1] = x;
        }
        CHECK(feed(c->text, cuts, 2, &r));
        CHECK(same(&whole, &r));
        result_free(&r);
    }
    result_free(&whole);
}

/* tool_call_parse alone: a NUL byte inside a block is no call. */
static void test_parse_block(void)
{
    char *name, *args;
    static const char nul[] = "{\"name\": \"f\", \"arguments\": {}}\0";
    CHECK(tool_call_parse(nul, sizeof nul - 2, &name, &args) && !strcmp(name, "f") &&
          !strcmp(args, "{}"));
    free(name);
    free(args);
    CHECK(!tool_call_parse(nul, sizeof nul - 1, &name, &args) && !name && !args);
    CHECK(!tool_call_parse("", 0, &name, &args));
    CHECK(!tool_call_parse("[]", 2, &name, &args));
}

/* Every realloc failing in turn: put says so, and nothing leaks (ASan). */
static void test_out_of_memory(void)
{
    const char *text = cases[3].text;
    size_t cut = 30;
    for (int k = 0; k < 40; k++) {
        result r;
        realloc_fail_in = k;
        int ok = feed(text, &cut, 1, &r);
        int failed = realloc_fail_in < 0; /* the k-th call came and failed */
        realloc_fail_in = -1;
        CHECK(ok != failed);
        result_free(&r);
    }
}

int main(void)
{
    uint64_t rng = 12345;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_case(&cases[i], &rng);
    test_parse_block();
    test_out_of_memory();
    if (!check_failures)
        printf("test_tool_calls: %zu replies ok\n", sizeof cases / sizeof cases[0]);
    return check_failures != 0;
}
