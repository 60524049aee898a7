/* test_tool_grammar.c - the grammar of an enforced tool choice
 * (src/api/tool_grammar.c) on hand-written replies: what the Qwen3 template
 * and the hermes parser read as calls of the allowed tools, with arguments
 * valid for their schemas, is a sentence; anything else (another tool, a
 * second call of a named one, arguments against the schema, no call, a
 * think block holding "</think>") is not. Bad tools are refused by name.
 * The same for Qwen3-Coder's XML calls, whose string values are checked
 * against a reference (no closing tag a reader cuts at, not "null") on
 * seeded random texts, and whose unsupported parameter schemas are refused
 * naming the tool, the parameter and the keyword. */
#include <ctype.h>
#include <stdint.h>
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

static grammar *tg_build(const char *tools, chat_tool_format format, const char *name, int thinking)
{
    encore_request r = {.tool_calls = tools, .tool_call_name = name, .think_first = thinking};
    char *ebnf = NULL;
    if (api_tool_grammar_ebnf(&r, format, &ebnf) != ENC_OK) {
        fprintf(stderr, "tool grammar: %s\n", enc_last_error());
        exit(1);
    }
    grammar *g = gt_compile(ebnf);
    free(ebnf);
    return g;
}

static grammar *tg_grammar(const char *name, int thinking)
{
    return tg_build(TOOLS, CHAT_TOOLS_HERMES, name, thinking);
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
    /* 2: the prompt opened the block (Thinking-2507): the reasoning and its end come first */
    g = tg_grammar(NULL, 2);
    CHECK(tg_match(g, v, "so < that </thin k>\n</think>\n\n" WEATHER));
    CHECK(tg_match(g, v, "\n</think>\n\n" NOW));
    CHECK(!tg_match(g, v, WEATHER));                           /* the block left open */
    CHECK(tg_match(g, v, "<think>\nx\n</think>\n\n" WEATHER)); /* "<think>" is text here */
    CHECK(!tg_match(g, v, "a</think>b\n</think>\n\n" WEATHER));
    CHECK(!tg_match(g, v, "no end" WEATHER));
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
        enc_status st = api_tool_grammar_ebnf(&r, CHAT_TOOLS_HERMES, &ebnf);
        CHECK(st == ENC_ERR_INVALID_ARGUMENT && ebnf == NULL);
        if (!strstr(enc_last_error(), cases[i].needle)) {
            fprintf(stderr, "case %zu: \"%s\" lacks \"%s\"\n", i, enc_last_error(),
                    cases[i].needle);
            check_failures++;
        }
        free(ebnf);
    }
}

/* --- XML calls (Qwen3-Coder) ------------------------------------------------ */

static const char XTOOLS[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"search\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {"
    "\"query\": {\"type\": \"string\", \"description\": \"what\"}, "
    "\"limit\": {\"type\": \"integer\", \"minimum\": 1}, "
    "\"exact\": {\"type\": \"boolean\"}, "
    "\"order\": {\"type\": \"string\", \"enum\": [\"asc\", \"desc\"]}, "
    "\"filter\": {\"type\": \"object\", \"properties\": {\"lang\": {\"type\": \"string\"}}, "
    "\"required\": [\"lang\"], \"additionalProperties\": false}, "
    "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "
    "\"at\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/point\"}}, "
    "\"day\": {\"type\": \"string\", \"format\": \"date\"}, "
    "\"note\": {\"title\": \"anything\"}}, "
    "\"required\": [\"query\", \"limit\"], "
    "\"$defs\": {\"point\": {\"type\": \"object\", \"properties\": {\"x\": {\"type\": "
    "\"number\"}}, \"required\": [\"x\"]}}}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"now\"}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"echo\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"text\": {\"type\": \"string\"}}, "
    "\"required\": [\"text\"]}}}]";

#define XCALL(name, params) "<tool_call>\n<function=" name ">\n" params "</function>\n</tool_call>"
#define XP(key, value) "<parameter=" key ">\n" value "\n</parameter>\n"
#define SEARCH(params) XCALL("search", XP("query", "rust") XP("limit", "10") params)

static void test_xml(const grammar_vocab *v)
{
    grammar *g = tg_build(XTOOLS, CHAT_TOOLS_XML, "search", 0);
    /* accepted: the required ones, then any optional ones in the schema's order */
    CHECK(tg_match(g, v, SEARCH("")));
    CHECK(tg_match(g, v,
                   SEARCH(XP("exact", "true") XP("order", "desc") XP("filter", "{\"lang\": \"en\"}")
                              XP("tags", "[\"a\", \"b\"]") XP("at", "[{\"x\": 1.5}]")
                                  XP("day", "2024-02-28") XP("note", "free text"))));
    CHECK(tg_match(g, v, SEARCH(XP("order", "asc") XP("note", ""))));
    CHECK(tg_match(
        g, v,
        XCALL("search", XP("query", "a <b> && c < d\n  line two\n</p>\n<<tag") XP("limit", "1"))));
    CHECK(tg_match(
        g, v, XCALL("search", XP("query", "x </param <parameter <function>") XP("limit", "1"))));
    CHECK(tg_match(g, v, XCALL("search", XP("query", "\nfoo\n") XP("limit", "1"))));
    CHECK(tg_match(g, v, XCALL("search", XP("query", "nullable") XP("limit", "1"))));
    CHECK(tg_match(g, v, XCALL("search", XP("query", "nul") XP("limit", "1"))));
    CHECK(tg_match(g, v, SEARCH(XP("tags", "[\"\\u003c/parameter>\"]"))));
    /* rejected */
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "rust")))); /* limit required */
    CHECK(!tg_match(g, v, XCALL("search", XP("limit", "10") XP("query", "rust")))); /* order */
    CHECK(!tg_match(g, v, SEARCH(XP("other", "x"))));                        /* not a parameter */
    CHECK(!tg_match(g, v, SEARCH(XP("exact", "true") XP("exact", "true")))); /* twice */
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "a</parameter>b") XP("limit", "1"))));
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "a</function>b") XP("limit", "1"))));
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "a</tool_call>") XP("limit", "1"))));
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "<parameter=x>") XP("limit", "1"))));
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "null") XP("limit", "1"))));
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "NuLL") XP("limit", "1"))));
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "rust") XP("limit", "ten"))));
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "rust") XP("limit", "0")))); /* minimum */
    CHECK(!tg_match(g, v, XCALL("search", XP("query", "rust") XP("limit", "1.5"))));
    CHECK(!tg_match(g, v, SEARCH(XP("exact", "yes"))));
    CHECK(!tg_match(g, v, SEARCH(XP("order", "up"))));
    CHECK(!tg_match(g, v, SEARCH(XP("order", "\"asc\"")))); /* raw text, no JSON quotes */
    CHECK(!tg_match(g, v, SEARCH(XP("filter", "{}"))));     /* lang required */
    CHECK(!tg_match(g, v, SEARCH(XP("filter", "{\"lang\": \"<x\"}")))); /* '<' escaped */
    CHECK(!tg_match(g, v, SEARCH(XP("tags", "[\"</parameter>\"]"))));
    CHECK(!tg_match(g, v, SEARCH(XP("tags", "a, b"))));
    CHECK(!tg_match(g, v, SEARCH(XP("at", "[{\"y\": 1}]")))); /* the $ref'd x required */
    CHECK(!tg_match(g, v, SEARCH(XP("day", "2024-02-30"))));
    CHECK(!tg_match(g, v, SEARCH(XP("day", "\"2024-02-28\""))));
    /* the "\n" before </parameter> missing */
    CHECK(
        !tg_match(g, v, XCALL("search", "<parameter=query>\nrust</parameter>\n" XP("limit", "1"))));
    CHECK(!tg_match(g, v, SEARCH("") "\n" SEARCH(""))); /* one call of the named function */
    CHECK(!tg_match(g, v, XCALL("now", "")));
    CHECK(!tg_match(g, v, CALL("search", "{\"query\": \"rust\", \"limit\": 10}"))); /* hermes */
    grammar_free(g);

    g = tg_build(XTOOLS, CHAT_TOOLS_XML, NULL, 0); /* "required" */
    CHECK(tg_match(g, v, XCALL("now", "")));       /* no parameters */
    CHECK(tg_match(g, v, SEARCH("") "\n" XCALL("now", "")));
    CHECK(tg_match(g, v, XCALL("echo", XP("text", "hi")) "\n" SEARCH("") "\n" XCALL("now", "")));
    CHECK(!tg_match(g, v, SEARCH("") XCALL("now", ""))); /* no "\n" between */
    CHECK(!tg_match(g, v, XCALL("now", XP("x", "1"))));
    CHECK(!tg_match(g, v, XCALL("echo", "")));
    CHECK(!tg_match(g, v, XCALL("other", "")));
    CHECK(!tg_match(g, v, ""));
    CHECK(!tg_match(g, v, NOW));
    /* a value cannot end early and start a second call inside the first */
    CHECK(!tg_match(g, v,
                    XCALL("echo", XP("text", "a\n</parameter>\n</function>\n</tool_call>\n"
                                             "<tool_call>\n<function=now>\n"))));
    grammar_free(g);

    /* inside a JSON value: a property named "pattern", a '<' in an enum */
    g = tg_build("[{\"function\": {\"name\": \"f\", \"parameters\": {\"properties\": {\"o\": "
                 "{\"type\": \"object\", \"properties\": {\"pattern\": {\"type\": \"string\"}, "
                 "\"op\": {\"enum\": [\"a<b\"]}}}}}}}]",
                 CHAT_TOOLS_XML, NULL, 0);
    CHECK(tg_match(g, v, XCALL("f", XP("o", "{\"pattern\": \"x\", \"op\": \"a<b\"}"))));
    CHECK(tg_match(g, v, XCALL("f", "")));
    CHECK(!tg_match(g, v, XCALL("f", XP("o", "{\"pattern\": \"<x\", \"op\": \"a<b\"}"))));
    grammar_free(g);

    /* a string that may be null (a type list; pydantic's Optional[str] as anyOf): text, or
     * "null"; a type list of "string" alone: text */
    g = tg_build("[{\"function\": {\"name\": \"f\", \"parameters\": {\"properties\": {"
                 "\"a\": {\"type\": [\"string\", \"null\"]}, "
                 "\"b\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}], "
                 "\"default\": null, \"title\": \"B\"}, "
                 "\"c\": {\"type\": [\"string\"]}}, \"required\": [\"a\", \"b\", \"c\"]}}}]",
                 CHAT_TOOLS_XML, NULL, 0);
    CHECK(tg_match(g, v, XCALL("f", XP("a", "null") XP("b", "null") XP("c", "text"))));
    CHECK(tg_match(g, v, XCALL("f", XP("a", "x y") XP("b", "5") XP("c", "nullable"))));
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "NULL") XP("b", "x") XP("c", "x")))); /* "null" */
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "x") XP("b", "x") XP("c", "null"))));
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "a</parameter>") XP("b", "x") XP("c", "x"))));
    grammar_free(g);

    /* one JSON type or null (a type list; Optional[int] as anyOf, its branch's keywords kept):
     * that type's JSON text, or "null" */
    g = tg_build(
        "[{\"function\": {\"name\": \"f\", \"parameters\": {\"properties\": {"
        "\"a\": {\"type\": [\"integer\", \"null\"], \"minimum\": 0}, "
        "\"b\": {\"anyOf\": [{\"type\": \"null\"}, {\"type\": \"integer\", \"maximum\": 2}], "
        "\"default\": null}, "
        "\"c\": {\"oneOf\": [{\"type\": \"array\", \"items\": {\"type\": \"boolean\"}}, "
        "{\"type\": \"null\"}]}}, \"required\": [\"a\", \"b\", \"c\"]}}}]",
        CHAT_TOOLS_XML, NULL, 0);
    CHECK(tg_match(g, v, XCALL("f", XP("a", "null") XP("b", "null") XP("c", "null"))));
    CHECK(tg_match(g, v, XCALL("f", XP("a", "7") XP("b", "-4") XP("c", "[true, false]"))));
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "-1") XP("b", "1") XP("c", "[]")))); /* minimum */
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "1") XP("b", "3") XP("c", "[]"))));  /* maximum */
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "1") XP("b", "1") XP("c", "[1]")))); /* items */
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "NULL") XP("b", "1") XP("c", "[]"))));
    CHECK(!tg_match(g, v, XCALL("f", XP("a", "x") XP("b", "1") XP("c", "[]"))));
    grammar_free(g);

    /* a number is a finite double (a 2-digit exponent: 9e999 would read back as a string) */
    g = tg_build("[{\"function\": {\"name\": \"f\", \"parameters\": {\"properties\": {"
                 "\"n\": {\"type\": [\"number\", \"null\"]}}, \"required\": [\"n\"]}}}]",
                 CHAT_TOOLS_XML, NULL, 0);
    CHECK(tg_match(g, v, XCALL("f", XP("n", "-1.5e99"))));
    CHECK(tg_match(g, v, XCALL("f", XP("n", "null"))));
    CHECK(!tg_match(g, v, XCALL("f", XP("n", "9e999"))));
    CHECK(!tg_match(g, v, XCALL("f", XP("n", "1e100"))));
    grammar_free(g);

    /* Qwen3-Coder's template has no think block: thinking asked for, none comes */
    g = tg_build(XTOOLS, CHAT_TOOLS_XML, NULL, 1);
    CHECK(!tg_match(g, v, "<think>\nhmm\n</think>\n\n" XCALL("now", "")));
    CHECK(tg_match(g, v, XCALL("now", "")));
    grammar_free(g);
}

/* The reference for a string value: what a reader gives back unchanged. */
static int xml_text_ok(const char *s)
{
    static const char *const cut[] = {"</parameter>", "</function>", "</tool_call>", "<parameter="};
    for (int i = 0; i < 4; i++)
        if (strstr(s, cut[i])) return 0;
    if (strlen(s) != 4) return 1;
    for (int i = 0; i < 4; i++)
        if (tolower((unsigned char)s[i]) != "null"[i]) return 1;
    return 0; /* "null" in some case */
}

/* Seeded random values made of pieces of the closing tags, against the
 * reference: the grammar must accept exactly the texts it passes. */
static void test_xml_text_random(const grammar_vocab *v)
{
    static const char *const pieces[] = {"<",
                                         "/",
                                         "parameter",
                                         "parameter>",
                                         "parameter=",
                                         "function",
                                         ">",
                                         "function>",
                                         "tool",
                                         "_call",
                                         "tool_call>",
                                         "=",
                                         "para",
                                         "p",
                                         "n",
                                         "N",
                                         "u",
                                         "U",
                                         "l",
                                         "L",
                                         "null",
                                         "\n",
                                         "x",
                                         "<<",
                                         "</",
                                         "\xc3\xa9",
                                         "meter",
                                         " ",
                                         "</parameter>",
                                         "</function>",
                                         "</tool_call>",
                                         "<parameter=",
                                         "</param",
                                         "eter>"};
    const int n_pieces = (int)(sizeof pieces / sizeof *pieces);
    grammar *g = tg_build(XTOOLS, CHAT_TOOLS_XML, "echo", 0);
    uint64_t seed = 12345;
    int n_ok = 0, n_bad = 0;
    for (int it = 0; it < 20000; it++) {
        char value[256] = "", text[512];
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int n = (int)(seed >> 60) % 8;
        for (int k = 0; k < n; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            strcat(value, pieces[(seed >> 33) % (uint64_t)n_pieces]);
        }
        snprintf(text, sizeof text, XCALL("echo", XP("text", "%s")), value);
        int want = xml_text_ok(value);
        if (tg_match(g, v, text) != want) {
            fprintf(stderr, "value \"%s\": grammar %s, reference %s\n", value,
                    want ? "rejects" : "accepts", want ? "accepts" : "rejects");
            check_failures++;
        }
        n_ok += want, n_bad += !want;
    }
    CHECK(n_ok > 2000 && n_bad > 2000); /* both kinds drawn */
    grammar_free(g);
}

/* Parameter schemas the XML format cannot carry: refused naming the tool,
 * the parameter and the keyword. */
static void test_xml_refusals(void)
{
#define XTOOL(props)                                                                               \
    "[{\"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", \"properties\": "    \
    "{" props "}}}}]"
    static const struct {
        const char *tools, *needle[3];
    } cases[] = {
        {XTOOL("\"x\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}"),
         {"\"f\"", "parameter \"x\"", "'anyOf'"}},
        {XTOOL("\"x\": {\"type\": [\"integer\", \"string\"]}"), {"\"f\"", "\"x\"", "'type'"}},
        {XTOOL("\"x\": {\"type\": [\"integer\", \"null\", \"boolean\"]}"),
         {"\"f\"", "\"x\"", "'type'"}},
        /* an enum or const beside the list: "null" would be no value of it */
        {XTOOL("\"x\": {\"type\": [\"integer\", \"null\"], \"enum\": [1, 2]}"),
         {"\"f\"", "\"x\"", "'type'"}},
        {XTOOL("\"x\": {\"type\": [\"integer\", \"null\"], \"const\": 3}"),
         {"\"f\"", "\"x\"", "'type'"}},
        {XTOOL("\"x\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}, {\"type\": "
               "\"boolean\"}]}"),
         {"\"f\"", "\"x\"", "'anyOf'"}},
        {XTOOL("\"x\": {\"type\": [\"string\", \"null\"], \"maxLength\": 3}"),
         {"\"f\"", "\"x\"", "'type'"}},
        {XTOOL("\"x\": {\"anyOf\": [{\"type\": \"string\", \"format\": \"date\"}, {\"type\": "
               "\"null\"}]}"),
         {"\"f\"", "\"x\"", "'anyOf'"}},
        {XTOOL("\"x\": {\"oneOf\": [{\"type\": \"null\"}]}"), {"\"f\"", "\"x\"", "'oneOf'"}},
        {XTOOL("\"x\": {\"$ref\": \"#/$defs/a\"}"), {"\"f\"", "\"x\"", "'$ref'"}},
        {XTOOL("\"x\": {\"type\": \"string\", \"pattern\": \"^a+$\"}"),
         {"\"f\"", "\"x\"", "'pattern'"}},
        {XTOOL("\"x\": {\"type\": \"string\", \"maxLength\": 3}"),
         {"\"f\"", "\"x\"", "'maxLength'"}},
        {XTOOL("\"x\": {\"type\": \"string\", \"enum\": [\"a\", \"NULL\"]}"),
         {"\"f\"", "\"x\"", "'enum' value \"NULL\""}},
        {XTOOL("\"x\": {\"const\": \"a</function>\"}"), {"\"f\"", "\"x\"", "'const'"}},
        {XTOOL("\"x\": {\"enum\": [\"a\", 1]}"), {"\"f\"", "\"x\"", "not a string"}},
        {XTOOL("\"x\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"pattern\": "
               "\"a\"}}"),
         {"\"f\"", "\"x\"", "'pattern' inside a JSON value"}},
        {XTOOL("\"x\": {\"type\": \"object\", \"properties\": {\"y\": {\"$ref\": \"#\"}}}"),
         {"\"f\"", "\"x\"", "'$ref' inside a JSON value"}},
        {XTOOL("\"x\": {\"type\": \"array\", \"items\": {\"enum\": [\"</parameter>\"]}}"),
         {"\"f\"", "\"x\"", "'enum' inside a JSON value"}},
        {XTOOL("\"x\": {\"type\": \"integer\", \"multipleOf\": 2}"),
         {"\"f\"", "\"x\"", "'multipleOf'"}},
        {XTOOL("\"x\": {\"type\": \"str\"}"), {"\"f\"", "\"x\"", "'type' \"str\""}},
        {XTOOL("\"x>\": {\"type\": \"string\"}"), {"\"f\"", "\"x>\"", "'>'"}},
        {XTOOL("\"x\\ny\": {\"type\": \"string\"}"), {"\"f\"", "\"x\ny\"", "control"}},
        {"[{\"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
         "\"minProperties\": 1}}}]",
         {"\"f\"", "parameters", "'minProperties'"}},
        {"[{\"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
         "\"properties\": {}, \"required\": [\"y\"]}}}]",
         {"\"f\"", "'required'", "\"y\""}},
    };
#undef XTOOL
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        encore_request r = {.tool_calls = cases[i].tools};
        char *ebnf = NULL;
        enc_status st = api_tool_grammar_ebnf(&r, CHAT_TOOLS_XML, &ebnf);
        CHECK(st == ENC_ERR_INVALID_ARGUMENT && ebnf == NULL);
        for (int k = 0; k < 3; k++)
            if (!strstr(enc_last_error(), cases[i].needle[k])) {
                fprintf(stderr, "xml case %zu: \"%s\" lacks \"%s\"\n", i, enc_last_error(),
                        cases[i].needle[k]);
                check_failures++;
            }
        free(ebnf);
    }
}

/* Schema numbers as written: a bound or a const past cJSON's 15 printed digits keeps its
 * value (a minimum of 5.000000000000001 would allow 5), in a hermes call and inside an XML
 * call's JSON value. */
static void test_exact_numbers(const grammar_vocab *v)
{
    static const char tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
        "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\", \"minimum\": "
        "5.000000000000001, \"maximum\": 6}, \"b\": {\"const\": 0.30000000000000004}, \"o\": "
        "{\"type\": \"object\", \"properties\": {\"v\": {\"const\": 1.0000000000000002}}, "
        "\"required\": [\"v\"]}}, \"required\": [\"a\", \"b\", \"o\"]}}}]";
    grammar *g = tg_build(tools, CHAT_TOOLS_HERMES, "f", 0);
    CHECK(tg_match(g, v,
                   CALL("f", "{\"a\": 6, \"b\": 0.30000000000000004, \"o\": {\"v\": "
                             "1.0000000000000002}}")));
    CHECK(!tg_match(g, v,
                    CALL("f", "{\"a\": 5, \"b\": 0.30000000000000004, \"o\": {\"v\": "
                              "1.0000000000000002}}")));
    CHECK(!tg_match(g, v, CALL("f", "{\"a\": 6, \"b\": 0.3, \"o\": {\"v\": 1.0000000000000002}}")));
    grammar_free(g);
    static const char xtools[] = /* an XML parameter's const must be a string: no "b" */
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
        "{\"type\": \"object\", \"properties\": {\"o\": {\"type\": \"object\", \"properties\": "
        "{\"v\": {\"const\": 1.0000000000000002}}, \"required\": [\"v\"]}}, \"required\": "
        "[\"o\"]}}}]";
    g = tg_build(xtools, CHAT_TOOLS_XML, "f", 0);
    CHECK(tg_match(g, v, XCALL("f", XP("o", "{\"v\": 1.0000000000000002}"))));
    CHECK(!tg_match(g, v, XCALL("f", XP("o", "{\"v\": 1}"))));
    grammar_free(g);
}

int main(void)
{
    grammar_vocab *v = gt_byte_vocab();
    test_exact_numbers(v);
    test_required(v);
    test_named(v);
    test_thinking(v);
    test_refusals();
    test_xml(v);
    test_xml_text_random(v);
    test_xml_refusals();
    grammar_vocab_free(v);
    if (!check_failures) printf("ok\n");
    return check_failures != 0;
}
