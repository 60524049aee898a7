/* test_schema.c - the JSON Schema compiler's refusals: every unsupported
 * keyword (and every unsupported use of a supported one) is
 * ENC_ERR_INVALID_ARGUMENT with the keyword and its JSON pointer named; the
 * rule prefix reaches every rule; a few exact layouts. */
#include "check.h"
#include "grammar_util.h"

static void expect_refused(const char *schema, const char *needle)
{
    char *ebnf = NULL;
    enc_status st = grammar_json_schema_to_ebnf(schema, strlen(schema), "t-", &ebnf);
    CHECK(st == ENC_ERR_INVALID_ARGUMENT);
    CHECK(ebnf == NULL);
    if (!strstr(enc_last_error(), needle)) {
        fprintf(stderr, "schema %s\n  wanted '%s' in: %s\n", schema, needle, enc_last_error());
        check_failures++;
    }
}

static void test_refusals(void)
{
    static const char *const unsupported[] = {"not",
                                              "if",
                                              "then",
                                              "else",
                                              "uniqueItems",
                                              "contains",
                                              "minContains",
                                              "maxContains",
                                              "patternProperties",
                                              "propertyNames",
                                              "minProperties",
                                              "maxProperties",
                                              "dependentRequired",
                                              "dependentSchemas",
                                              "unevaluatedProperties",
                                              "unevaluatedItems",
                                              "multipleOf",
                                              "contentEncoding",
                                              "contentMediaType",
                                              "$anchor",
                                              "$dynamicRef",
                                              "dependencies",
                                              "additionalItems"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        char schema[200], needle[100];
        snprintf(schema, sizeof schema,
                 "{\"type\": \"object\", \"properties\": {\"a~/b\": {\"%s\": 1}}}", unsupported[i]);
        snprintf(needle, sizeof needle, "unsupported keyword '%s' at #/properties/a~0~1b",
                 unsupported[i]);
        expect_refused(schema, needle);
    }
    expect_refused("{\"type\": \"string\", \"format\": \"hostname\"}",
                   "unsupported keyword 'format: hostname' at #");
    expect_refused("{\"type\": \"number\", \"minimum\": 0}",
                   "'minimum' on type number is not supported");
    expect_refused("{\"type\": \"integer\", \"maximum\": 1e20}", "'maximum' beyond +-10^15");
    expect_refused("{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 4}", "hold no value");
    expect_refused("{\"type\": \"array\", \"maxItems\": 5000}", "'maxItems' above 1000");
    expect_refused("{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 2}",
                   "'maxItems' below 'minItems'");
    expect_refused("{\"type\": \"string\", \"minLength\": -1}",
                   "'minLength' must be a non-negative integer");
    expect_refused("{\"type\": \"string\", \"pattern\": \"(a\"}", "'pattern' at #: missing ')'");
    expect_refused("{\"type\": \"string\", \"pattern\": \"a\", \"maxLength\": 3}",
                   "together with 'pattern'");
    expect_refused("{\"allOf\": [{}, {}]}", "'allOf' with more than one schema");
    expect_refused("{\"anyOf\": [{}], \"type\": \"string\"}", "'anyOf' together with 'type'");
    expect_refused("{\"anyOf\": []}", "'anyOf' must be a non-empty array");
    expect_refused("{\"$ref\": \"#/$defs/missing\"}",
                   "'$ref' to '#/$defs/missing', which does not exist");
    expect_refused("{\"$ref\": \"http://x/y.json\"}",
                   "only #, #/$defs/NAME and #/definitions/NAME");
    expect_refused("{\"type\": \"object\", \"properties\": {\"a\": {}}, \"required\": [\"b\"]}",
                   "required property 'b' is not in 'properties'");
    expect_refused("{\"type\": \"wat\"}", "unknown type 'wat'");
    expect_refused("{\"type\": 3}", "'type' must be a string or a non-empty array");
    expect_refused("{\"items\": [{}]}", "'items' as an array");
    expect_refused("false", "the schema 'false' matches nothing");
    expect_refused("{\"properties\": {\"b\": false}, \"required\": [\"b\"]}",
                   "required property 'b' has the schema false");
    expect_refused("3", "a schema must be an object or a boolean");
    expect_refused("{\"type\": ", "not valid JSON");
    expect_refused(
        "{\"type\": \"array\", \"items\": {\"type\": \"array\", \"items\": {\"enum\": 1}}}",
        "'enum' must be a non-empty array at #/items/items");
    /* enum and const: their values must satisfy what stands beside them (type, each other);
     * another constraint beside them is refused, not dropped */
    expect_refused("{\"type\": \"string\", \"maxLength\": 2, \"enum\": [\"abcdef\", \"x\"]}",
                   "'enum' together with 'maxLength' is not supported at #");
    expect_refused("{\"type\": \"integer\", \"minimum\": 10, \"const\": 3}",
                   "'const' together with 'minimum' is not supported");
    expect_refused("{\"type\": \"string\", \"enum\": [1, null]}",
                   "no value of 'enum' satisfies 'type'");
    expect_refused("{\"const\": \"z\", \"enum\": [\"x\", \"y\"]}",
                   "no value of 'enum' satisfies 'const' and 'type'");
    expect_refused("{\"const\": {\"x\": 1, \"y\": 1}, \"enum\": [{\"x\": 1, \"x\": 1}]}",
                   "no value of 'enum' satisfies 'const' and 'type'");
    expect_refused("{\"const\": 9007199254740993}", "an integer of 2^53 or more");
    expect_refused("{\"enum\": [{\"a\": [123456789012345678]}]}", "an integer of 2^53 or more");
    expect_refused("{\"const\": 1e400}", "not finite");
    expect_refused(
        "{\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"string\", \"uniqueItems\": true}]}",
        "'uniqueItems' at #/anyOf/1");
    expect_refused("{\"$defs\": {\"d\": {\"maxProperties\": 1}}, \"$ref\": \"#/$defs/d\"}",
                   "'maxProperties' at #/$defs/d");
    /* recursion that reads no byte before it comes round is an endless rule */
    expect_refused("{\"$ref\": \"#\"}", "'$ref' to '#' recurses without an object or array");
    expect_refused("{\"anyOf\": [{\"type\": \"null\"}, {\"$ref\": \"#\"}]}",
                   "'$ref' to '#' recurses without an object or array between (it never reads a "
                   "byte) at #/anyOf/1");
    expect_refused("{\"$defs\": {\"a\": {\"allOf\": [{\"$ref\": \"#/$defs/b\"}]}, \"b\": "
                   "{\"oneOf\": [{\"type\": \"string\"}, {\"$ref\": \"#/$defs/a\"}]}}, "
                   "\"$ref\": \"#/$defs/a\"}",
                   "'$ref' to '#/$defs/a' recurses");
    /* deep nesting is refused, not a stack overflow */
    char deep[4096] = "";
    for (int i = 0; i < 100; i++)
        strcat(deep, "{\"items\": ");
    strcat(deep, "{}");
    for (int i = 0; i < 100; i++)
        strcat(deep, "}");
    expect_refused(deep, "nested deeper than 64");
}

/* The exact text of a few outputs, and the prefix on every rule. */
static void test_layout(void)
{
    static const struct {
        const char *schema, *good, *bad;
    } cases[] = {
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": "
         "{\"type\": \"boolean\"}}, "
         "\"required\": [\"b\"]}",
         "{\"a\": -3, \"b\": true}", "{\"b\": true, \"a\": 1}"},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": "
         "{\"type\": \"boolean\"}}}",
         "{}", "{, \"b\": true}"},
        {"{\"type\": \"array\", \"items\": {\"type\": \"null\"}, \"minItems\": 2}",
         "[null, null, null]", "[null]"},
        /* recursion through an array, and back to the same definition once closed */
        {"{\"$defs\": {\"n\": {\"anyOf\": [{\"type\": \"null\"}, {\"type\": \"array\", "
         "\"items\": {\"$ref\": \"#/$defs/n\"}}]}}, \"type\": \"array\", \"prefixItems\": "
         "[{\"$ref\": \"#/$defs/n\"}, {\"$ref\": \"#/$defs/n\"}], \"items\": false}",
         "[[null, [[]]], null]", "[[null, [1]], null]"},
        {"{\"type\": \"integer\", \"minimum\": -5, \"maximum\": 120}", "-5", "121"},
        {"{\"type\": \"integer\", \"minimum\": -5, \"maximum\": 120}", "120", "-6"},
        {"{\"type\": \"integer\", \"minimum\": -5, \"maximum\": 120}", "0", "-0"},
        {"{\"type\": \"integer\", \"minimum\": -5, \"maximum\": 120}", "99", "007"},
        {"{\"type\": \"string\", \"format\": \"date\"}", "\"2024-02-28\"", "\"2024-02-30\""},
        {"{\"type\": \"string\", \"format\": \"date\"}", "\"2024-04-30\"", "\"2024-04-31\""},
        {"{\"type\": \"string\", \"format\": \"date\"}", "\"2023-12-31\"", "\"2023-02-29\""},
        {"{\"type\": \"integer\", \"minimum\": 100, \"maximum\": 399}", "250", "400"},
        {"{\"type\": \"integer\", \"minimum\": 100, \"maximum\": 399}", "399", "99"},
        {"{\"type\": \"integer\", \"minimum\": 105, \"maximum\": 394}", "250", "395"},
        {"{\"type\": \"integer\", \"minimum\": 105, \"maximum\": 394}", "105", "104"},
        {"{\"type\": \"integer\", \"minimum\": 105, \"maximum\": 394}", "394", "1050"},
        {"{\"type\": \"string\", \"format\": \"ipv4\"}", "\"255.0.10.1\"", "\"256.0.0.1\""},
        {"{\"type\": \"string\", \"format\": \"ipv4\"}", "\"1.2.3.4\"", "\"01.2.3.4\""},
        {"{\"type\": \"string\", \"pattern\": \"^a\\\"b$\"}", "\"a\\\"b\"", "\"a\"b\""},
        {"{\"type\": \"string\", \"pattern\": \"x\"}", "\"yyxyy\"", "\"yyy\""},
        {"{\"type\": \"string\", \"maxLength\": 2}", "\"\\u00e9\\n\"", "\"abc\""},
        {"{\"type\": [\"string\", \"null\"]}", "null", "nul"},
    };
    grammar_vocab *v = gt_byte_vocab();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *ebnf = NULL;
        grammar *g = NULL;
        CHECK(grammar_json_schema_to_ebnf(cases[i].schema, strlen(cases[i].schema), "q_", &ebnf) ==
              ENC_OK);
        if (!ebnf) continue;
        for (const char *line = ebnf; *line; line = strchr(line, '\n') + 1)
            CHECK(!strncmp(line, "q_", 2));
        CHECK(grammar_compile(ebnf, strlen(ebnf), "q_root", &g) == ENC_OK);
        if (g && (!gt_matches(g, v, cases[i].good, strlen(cases[i].good)) ||
                  gt_matches(g, v, cases[i].bad, strlen(cases[i].bad)))) {
            fprintf(stderr, "schema %s: want '%s' in, '%s' out\n%s\n", cases[i].schema,
                    cases[i].good, cases[i].bad, ebnf);
            check_failures++;
        }
        grammar_free(g);
        free(ebnf);
    }
    grammar_vocab_free(v);
}

/* Two schemas under different prefixes inside one wrapping grammar, as a
 * caller composing tool calls writes it. */
static void test_compose(void)
{
    const char *sa = "{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"integer\"}}, "
                     "\"required\": [\"x\"]}";
    const char *sb = "{\"type\": \"array\", \"items\": {\"type\": \"string\"}}";
    char *ea = NULL, *eb = NULL;
    CHECK(grammar_json_schema_to_ebnf(sa, strlen(sa), "a-", &ea) == ENC_OK);
    CHECK(grammar_json_schema_to_ebnf(sb, strlen(sb), "b-", &eb) == ENC_OK);
    if (!ea || !eb) return;
    size_t n = strlen(ea) + strlen(eb) + 100;
    char *text = malloc(n);
    snprintf(text, n, "root ::= \"<a>\" a-root \"</a>\" | \"<b>\" b-root \"</b>\"\n%s%s", ea, eb);
    grammar *g = NULL;
    CHECK(grammar_compile(text, strlen(text), "root", &g) == ENC_OK);
    grammar_vocab *v = gt_byte_vocab();
    if (g) {
        CHECK(gt_matches(g, v, "<a>{\"x\": 5}</a>", strlen("<a>{\"x\": 5}</a>")));
        CHECK(gt_matches(g, v, "<b>[\"q\", \"\"]</b>", strlen("<b>[\"q\", \"\"]</b>")));
        CHECK(!gt_matches(g, v, "<a>[\"q\"]</a>", strlen("<a>[\"q\"]</a>")));
    }
    grammar_free(g);
    grammar_vocab_free(v);
    free(text);
    free(ea);
    free(eb);
}

int main(void)
{
    test_refusals();
    test_layout();
    test_compose();
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    else
        printf("grammar_schema: ok\n");
    return check_failures != 0;
}
