/* test_tool_calls.c - the <tool_call> parser (src/server/tool_calls.c and
 * tool_calls_xml.c) on crafted replies, in the hermes and the XML format:
 * the calls and content each should give, written out by hand from the
 * format's definition (the XML values by vLLM's qwen3_coder rules: Python's
 * int(), float() and json.dumps); then every reply fed again split at every
 * byte boundary, byte by byte, and in three random pieces, which must give
 * the same calls and content as the whole; and every realloc failing in
 * turn. */
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
    expect_call calls[4];
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
    {"text around a call: the whitespace before it between them",
     "Checking.\n\n" CALL("f", "{}") "\n\nDone.",
     "Checking.\n\nDone.",
     {{"f", "{}"}},
     1},
    {"text around two calls: the whitespace after the first when none came before",
     "Checking." CALL("f", "{}") " \n" CALL("g", "{}") "\nDone.\n",
     "Checking. \nDone.\n",
     {{"f", "{}"}, {"g", "{}"}},
     2},
    {"text glued to a call stays glued", "A." CALL("f", "{}") "B.", "A.B.", {{"f", "{}"}}, 1},
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

/* --- the XML format (Qwen3-Coder) ------------------------------------------------------- */

/* The request's tools: the types the values convert to. "flat" has its
 * properties without the "properties" wrapper, which vLLM reads too. */
static const char xml_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, "
    "\"days\": {\"type\": \"integer\"}}}}}, "
    "{\"type\": \"function\", \"function\": {\"name\": \"set\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {"
    "\"s\": {\"type\": \"string\"}, \"i\": {\"type\": \"integer\"}, "
    "\"u\": {\"type\": \" Int64 \"}, \"n\": {\"type\": \"number\"}, "
    "\"f\": {\"type\": \"float\"}, \"b\": {\"type\": \"boolean\"}, "
    "\"o\": {\"type\": \"object\"}, \"a\": {\"type\": \"array\"}, "
    "\"e\": {\"type\": \"string\", \"enum\": [\"1\"]}, "
    "\"t\": {\"type\": [\"integer\", \"null\"]}, \"d\": {\"description\": \"no type\"}, "
    "\"y\": {\"anyOf\": [{\"type\": \"null\"}, {\"type\": \"number\"}]}, "
    "\"z\": {\"oneOf\": [{\"type\": \"boolean\"}, {\"type\": \"null\"}]}}}}}, "
    "{\"type\": \"function\", \"function\": {\"name\": \"flat\", \"parameters\": "
    "{\"k\": {\"type\": \"integer\"}}}}]";

/* As the chat template writes them. */
#define XP(key, value) "<parameter=" key ">\n" value "\n</parameter>\n"
#define XCALL(name, params) "<tool_call>\n<function=" name ">\n" params "</function>\n</tool_call>"

static const tool_case xml_cases[] = {
    {"one call",
     XCALL("get_weather", XP("city", "Paris") XP("days", "3")),
     "",
     {{"get_weather", "{\"city\":\"Paris\",\"days\":3}"}},
     1},
    {"text, then two calls",
     "Let me look both up.\n\n" XCALL("get_weather", XP("city", "Paris")) "\n" XCALL(
         "get_weather", XP("city", "Tokyo") XP("days", "2")),
     "Let me look both up.",
     {{"get_weather", "{\"city\":\"Paris\"}"}, {"get_weather", "{\"city\":\"Tokyo\",\"days\":2}"}},
     2},
    {"text after the call",
     XCALL("set", XP("s", "x")) "\n\nDone.",
     "Done.",
     {{"set", "{\"s\":\"x\"}"}},
     1},
    {"a string: newlines, tags, quotes, a backslash, a control byte, UTF-8",
     XCALL("set", XP("s", "\nline 2 < 3 > 1 <b></b>\n\t\"q\" \\ \x01 \xc3\xa9\n")),
     "",
     {{"set", "{\"s\":\"\\nline 2 < 3 > 1 <b></b>\\n\\t\\\"q\\\" \\\\ \\u0001 \xc3\xa9\\n\"}"}},
     1},
    {"integers as Python's int() reads them",
     XCALL("set", XP("i", "+1_000") XP("u", " -0042 ")),
     "",
     {{"set", "{\"i\":1000,\"u\":-42}"}},
     1},
    {"a big integer keeps its digits",
     XCALL("set", XP("i", "123456789012345678901234567890")),
     "",
     {{"set", "{\"i\":123456789012345678901234567890}"}},
     1},
    {"what is no integer stays a string",
     XCALL("set", XP("i", "4.0") XP("u", "") XP("t", "1__0")),
     "",
     {{"set", "{\"i\":\"4.0\",\"u\":\"\",\"t\":\"1__0\"}"}},
     1},
    {"numbers as Python's float() and repr give them; integral ones as integers",
     XCALL("set", XP("n", "2.50") XP("f", "3.0")) XCALL("set", XP("n", "1e3") XP("f", "-0.0"))
         XCALL("set", XP("n", "1e-7") XP("f", "0.1"))
             XCALL("set", XP("n", "1_0.5") XP("f", "2.5e-3")),
     "",
     {{"set", "{\"n\":2.5,\"f\":3}"},
      {"set", "{\"n\":1000,\"f\":0}"},
      {"set", "{\"n\":1e-07,\"f\":0.1}"},
      {"set", "{\"n\":10.5,\"f\":0.0025}"}},
     4},
    {"more numbers: every digit of a large double, an integer kept as written",
     XCALL("set", XP("n", "1.5e300") XP("f", "12345678901234567890")) XCALL(
         "set", XP("n", "123.456e-2") XP("f", "-2.5E+2")) XCALL("set", XP("n", "5.") XP("f", "+.5"))
         XCALL("set", XP("n", " 7 ") XP("f", "1e-400")),
     "",
     {{"set",
       "{\"n\":"
       "150000000000000007875714038280663037305670287166223873237378117326770368698336229367955706"
       "262067179606555666574932581726541378485304064586346718827718006047427258080138986370560674"
       "535069218213508905342985245619991762167855845146132011197911417021374186888818323008526425"
       "7173504208294580298189100810240,\"f\":12345678901234567890}"},
      {"set", "{\"n\":1.23456,\"f\":-250}"},
      {"set", "{\"n\":5,\"f\":0.5}"},
      {"set", "{\"n\":7,\"f\":0}"}},
     4},
    {"what is no finite number stays a string",
     XCALL("set", XP("n", "nan") XP("f", "1e400")) XCALL("set", XP("n", "-inf") XP("f", "1_.5")),
     "",
     {{"set", "{\"n\":\"nan\",\"f\":\"1e400\"}"}, {"set", "{\"n\":\"-inf\",\"f\":\"1_.5\"}"}},
     2},
    {"booleans: true in any case, anything else false",
     XCALL("set", XP("b", "True")) XCALL("set", XP("b", "yes")) XCALL("set", XP("b", "FALSE")),
     "",
     {{"set", "{\"b\":true}"}, {"set", "{\"b\":false}"}, {"set", "{\"b\":false}"}},
     3},
    {"null in any case, of any type",
     XCALL("set", XP("s", "NULL") XP("i", "null") XP("b", "Null") XP("zz", "nULL")),
     "",
     {{"set", "{\"s\":null,\"i\":null,\"b\":null,\"zz\":null}"}},
     1},
    {"an object and an array, compacted, numbers as written",
     XCALL("set",
           XP("o", "{\"k\": [1, 2.0, {\"x\": null}], \"s\": \"a b\"}") XP("a", "[ 1,\n \"two\" ]")),
     "",
     {{"set", "{\"o\":{\"k\":[1,2.0,{\"x\":null}],\"s\":\"a b\"},\"a\":[1,\"two\"]}"}},
     1},
    {"JSON that does not parse stays a string; JSON of another kind is kept",
     XCALL("set", XP("o", "{bad}") XP("a", "[01]"))
         XCALL("set", XP("o", "{\"a\": \"\x01\"}") XP("a", "5"))
             XCALL("set", XP("o", "NaN") XP("a", "[1,]")),
     "",
     {{"set", "{\"o\":\"{bad}\",\"a\":\"[01]\"}"},
      {"set", "{\"o\":\"{\\\"a\\\": \\\"\\u0001\\\"}\",\"a\":5}"},
      {"set", "{\"o\":\"NaN\",\"a\":\"[1,]\"}"}},
     3},
    {"an unknown parameter, an unknown tool: strings",
     XCALL("set", XP("zz", "5")) XCALL("other", XP("i", "5")),
     "",
     {{"set", "{\"zz\":\"5\"}"}, {"other", "{\"i\":\"5\"}"}},
     2},
    {"an enum, no type: strings; properties without their wrapper",
     XCALL("set", XP("e", "1") XP("d", "5")) XCALL("flat", XP("k", "5")),
     "",
     {{"set", "{\"e\":\"1\",\"d\":\"5\"}"}, {"flat", "{\"k\":5}"}},
     2},
    {"a type list, an anyOf, a oneOf: the first type that is not null (Optional[int])",
     XCALL("set", XP("t", "5") XP("y", "2.50") XP("z", "True"))
         XCALL("set", XP("t", "null") XP("y", "x")),
     "",
     {{"set", "{\"t\":5,\"y\":2.5,\"z\":true}"}, {"set", "{\"t\":null,\"y\":\"x\"}"}},
     2},
    {"a repeated key keeps its first place and its last value",
     XCALL("other", XP("a", "1") XP("b", "2") XP("a", "3")),
     "",
     {{"other", "{\"a\":\"3\",\"b\":\"2\"}"}},
     1},
    {"a value's newlines beyond the template's one on each side are kept",
     XCALL("set", XP("s", "\n\nx\n")) XCALL("set", "<parameter=s>x</parameter>"),
     "",
     {{"set", "{\"s\":\"\\n\\nx\\n\"}"}, {"set", "{\"s\":\"x\"}"}},
     2},
    {"a value that writes the closing tags (code) keeps them",
     XCALL("set", XP("s", "print('</parameter>')\nend = \"</function>\"")),
     "",
     {{"set", "{\"s\":\"print('</parameter>')\\nend = \\\"</function>\\\"\"}"}},
     1},
    {"a </parameter> in a value, then the next parameter",
     XCALL("get_weather", XP("city", "a</parameter>b") XP("days", "2")),
     "",
     {{"get_weather", "{\"city\":\"a</parameter>b\",\"days\":2}"}},
     1},
    {"no </parameter> before the next parameter or </function>",
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n3\n</"
     "function>\n</tool_call>",
     "",
     {{"get_weather", "{\"city\":\"Paris\",\"days\":3}"}},
     1},
    {"no </function>, no </parameter> before </tool_call>",
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</tool_call>",
     "",
     {{"get_weather", "{\"city\":\"Paris\"}"}},
     1},
    {"a bare function, with no <tool_call> around it",
     "Sure.\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\nDone.",
     "Sure.\nDone.",
     {{"get_weather", "{\"city\":\"Paris\"}"}},
     1},
    {"no parameters",
     XCALL("ping", "") "\n" XCALL("pong", "\n\n"),
     "",
     {{"ping", "{}"}, {"pong", "{}"}},
     2},
    {"no '>' after the name stays content",
     "<tool_call>\n<function=f\n</tool_call>",
     "<tool_call>\n<function=f\n</tool_call>",
     {{0}},
     0},
    {"an empty name stays content", XCALL("", XP("a", "1")), XCALL("", XP("a", "1")), {{0}}, 0},
    {"text between parameters stays content",
     "Hi " XCALL("f", XP("a", "1") "so\n" XP("b", "2")),
     "Hi " XCALL("f", XP("a", "1") "so\n" XP("b", "2")),
     {{0}},
     0},
    {"two functions in one <tool_call> stay content",
     "<tool_call>\n<function=f>\n</function>\n<function=g>\n</function>\n</tool_call>",
     "<tool_call>\n<function=f>\n</function>\n<function=g>\n</function>\n</tool_call>",
     {{0}},
     0},
    {"a parameter with no '>' stays content",
     "<tool_call>\n<function=f>\n<parameter=a\n</parameter>\n</function>\n</tool_call>",
     "<tool_call>\n<function=f>\n<parameter=a\n</parameter>\n</function>\n</tool_call>",
     {{0}},
     0},
    {"a hermes block is no XML call", CALL("f", "{\"a\": 1}"), CALL("f", "{\"a\": 1}"), {{0}}, 0},
    {"a bad block, then a good one",
     "<tool_call>oops</tool_call>\n" XCALL("f", XP("a", "1")),
     "<tool_call>oops</tool_call>",
     {{"f", "{\"a\":\"1\"}"}},
     1},
    {"an unclosed call whose last value ended is parsed",
     "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n",
     "",
     {{"f", "{\"a\":\"1\"}"}},
     1},
    {"an unclosed bare function whose last value ended is parsed",
     "x\n<function=f>\n<parameter=a>\n1\n</parameter>",
     "x",
     {{"f", "{\"a\":\"1\"}"}},
     1},
    {"a call cut inside a value stays content",
     "I will call.\n<tool_call>\n<function=f>\n<parameter=a>\nhel",
     "I will call.\n<tool_call>\n<function=f>\n<parameter=a>\nhel",
     {{0}},
     0},
    {"a call cut inside </parameter> stays content",
     "<tool_call>\n<function=f>\n<parameter=a>\n1\n</param",
     "<tool_call>\n<function=f>\n<parameter=a>\n1\n</param",
     {{0}},
     0},
    {"a function tag in prose stays content",
     "Use <function=search> to look, </function> after.",
     "Use <function=search> to look, </function> after.",
     {{0}},
     0},
    {"a function tag in prose, never closed, stays content",
     "Use <function=search> to look.",
     "Use <function=search> to look.",
     {{0}},
     0},
    {"the start of a tag that is not one", "x <functio", "x <functio", {{0}}, 0},
    {"a closing tag alone", "a </function> b", "a </function> b", {{0}}, 0},
};

typedef struct result {
    char *content;
    size_t n_content;
    tool_parser p;
} result;

/* Feed text cut at cuts[0..n_cuts) (ascending), the last piece final. */
static int feed(const char *text, const size_t *cuts, size_t n_cuts, tool_format format, result *r)
{
    size_t len = strlen(text), at = 0;
    memset(r, 0, sizeof *r);
    tool_parser_init(&r->p);
    int ok = 1;
    if (format == TOOL_FORMAT_XML) CHECK(tool_parser_set_format(&r->p, format, xml_tools));
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

static void test_case(const tool_case *c, tool_format format, uint64_t *rng)
{
    result whole;
    CHECK(feed(c->text, NULL, 0, format, &whole));
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
        CHECK(feed(c->text, &cut, 1, format, &r));
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
    CHECK(feed(c->text, every, len, format, &r));
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
        CHECK(feed(c->text, cuts, 2, format, &r));
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

/* tool_call_parse_xml alone: the body between the tags, NUL bytes, no
 * tools, a block the text ended in. */
static void test_parse_xml_block(void)
{
    char *name, *args;
    static const char body[] = "\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n"
                               "</function>\n\0";
    CHECK(tool_call_parse_xml(body, sizeof body - 2, NULL, &name, &args) == 1 &&
          !strcmp(name, "get_weather") && !strcmp(args, "{\"days\":\"3\"}"));
    free(name);
    free(args);
    CHECK(tool_call_parse_xml(body, sizeof body - 1, NULL, &name, &args) == 0 && !name && !args);
    static const char nul_value[] = "<function=f>\n<parameter=a>\nx\0y\n</parameter>";
    CHECK(tool_call_parse_xml(nul_value, sizeof nul_value - 1, NULL, &name, &args) == 0);
    CHECK(tool_call_parse_xml("", 0, NULL, &name, &args) == 0);
    static const char cut[] = "<function=f>\n<parameter=a>\nhel";
    CHECK(tool_call_parse_xml_unclosed(cut, sizeof cut - 1, NULL, &name, &args) == 0 && !name);
    CHECK(tool_call_parse_xml(cut, sizeof cut - 1, NULL, &name, &args) == 1 && !strcmp(name, "f") &&
          !strcmp(args, "{\"a\":\"hel\"}"));
    free(name);
    free(args);
    /* tools that are no JSON; the format set back to hermes drops them */
    tool_parser p;
    tool_parser_init(&p);
    CHECK(!tool_parser_set_format(&p, TOOL_FORMAT_XML, "[{"));
    CHECK(tool_parser_set_format(&p, TOOL_FORMAT_XML, xml_tools) && p.tools);
    CHECK(tool_parser_set_format(&p, TOOL_FORMAT_HERMES, xml_tools) && !p.tools);
    tool_parser_free(&p);
}

/* An XML reply under the hermes format is content, as it was before the
 * XML format came. */
static void test_xml_under_hermes(void)
{
    result r;
    CHECK(feed(xml_cases[0].text, NULL, 0, TOOL_FORMAT_HERMES, &r));
    CHECK(!strcmp(r.content, xml_cases[0].text) && r.p.n_calls == 0);
    result_free(&r);
    CHECK(feed(xml_cases[20].text, NULL, 0, TOOL_FORMAT_HERMES, &r)); /* a bare function */
    CHECK(!strcmp(r.content, xml_cases[20].text) && r.p.n_calls == 0);
    result_free(&r);
}

/* Every realloc failing in turn: put says so, and nothing leaks (ASan). */
static void test_out_of_memory(const char *text, tool_format format)
{
    size_t cut = 30;
    int k = 0;
    for (;; k++) {
        result r;
        realloc_fail_in = k;
        int ok = feed(text, &cut, 1, format, &r);
        int failed = realloc_fail_in < 0; /* the k-th call came and failed */
        realloc_fail_in = -1;
        CHECK(ok != failed);
        result_free(&r);
        if (!failed) break;
    }
    CHECK(k > 3); /* the stream's and (XML) the parser's reallocs were all tried */
}

int main(void)
{
    uint64_t rng = 12345;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_case(&cases[i], TOOL_FORMAT_HERMES, &rng);
    for (size_t i = 0; i < sizeof xml_cases / sizeof xml_cases[0]; i++)
        test_case(&xml_cases[i], TOOL_FORMAT_XML, &rng);
    test_parse_block();
    test_parse_xml_block();
    test_xml_under_hermes();
    test_out_of_memory(cases[3].text, TOOL_FORMAT_HERMES);
    test_out_of_memory(xml_cases[1].text, TOOL_FORMAT_XML);
    if (!check_failures)
        printf("test_tool_calls: %zu hermes and %zu XML replies ok\n",
               sizeof cases / sizeof cases[0], sizeof xml_cases / sizeof xml_cases[0]);
    return check_failures != 0;
}
