/* test_grammar.c - the EBNF compiler and the matcher on hand-written
 * grammars: syntax errors with line:col, accept/reject of whole strings,
 * UTF-8 classes, repetition bounds, end ids, and masks over a small
 * vocabulary against a brute-force check of every token. */
#include <stdint.h>

#include "check.h"
#include "grammar_util.h"

static void expect_error(const char *ebnf, const char *needle)
{
    grammar *g = NULL;
    enc_status st = grammar_compile(ebnf, strlen(ebnf), NULL, &g);
    CHECK(st == ENC_ERR_INVALID_ARGUMENT);
    CHECK(g == NULL);
    if (!strstr(enc_last_error(), needle)) {
        fprintf(stderr, "for %s\n  wanted '%s' in: %s\n", ebnf, needle, enc_last_error());
        check_failures++;
    }
}

static void test_errors(void)
{
    expect_error("root ::= \"a", "1:12: unterminated literal");
    expect_error("root ::= foo", "1:10: undefined rule 'foo'");
    expect_error("start ::= \"a\"", "no rule named 'root'");
    expect_error("root ::= \"a\"\nroot ::= \"b\"", "2:1: rule 'root' defined twice");
    expect_error("root ::= ( \"a\" ", "expected ')'");
    expect_error("root ::= [b-a]", "1:14: range out of order");
    expect_error("root ::= root \"a\" | \"b\"", "left-recursive");
    expect_error("root ::= x\nx ::= \"\" root", "left-recursive");
    expect_error("root ::= \"a\"{3,2}", "max below min");
    expect_error("root ::= \"a\"{5000}", "above 1000");
    expect_error("root ::= \"\\q\"", "unknown escape");
    expect_error("root ::= \"a\" )", "unmatched ')'");
    expect_error("root ::= \"a\"*+", "two repetition operators");
    expect_error("root ::= @", "1:10: unexpected character '@'");
    expect_error("root := \"a\"", "1:6: expected '::='");
}

typedef struct sample {
    const char *s;
    int ok;
} sample;

static void expect_matches(const char *ebnf, const sample *cases, size_t n)
{
    grammar_vocab *v = gt_byte_vocab();
    grammar *g = gt_compile(ebnf);
    for (size_t i = 0; i < n; i++) {
        int got = gt_matches(g, v, cases[i].s, strlen(cases[i].s));
        if (got != cases[i].ok) {
            fprintf(stderr, "grammar %s\n  '%s': matched %d, want %d\n", ebnf, cases[i].s, got,
                    cases[i].ok);
            check_failures++;
        }
    }
    grammar_free(g);
    grammar_vocab_free(v);
}

static void test_matching(void)
{
    static const sample kv[] = {{"{}", 1},   {"{a=1}", 1},  {"{a=1,bb=22}", 1},
                                {"{a=}", 0}, {"{a=1,}", 0}, {"{", 0},
                                {"", 0},     {"{A=1}", 0},  {"{a=01}", 1}};
    expect_matches("# objects\nroot ::= \"{\" ( pair ( \",\" pair )* )? \"}\"\n"
                   "pair ::= [a-z]+ \"=\" [0-9]+",
                   kv, sizeof kv / sizeof *kv);
    static const sample rep[] = {{"ab", 0}, {"abb", 1}, {"abbbb", 1}, {"abbbbb", 0}, {"a", 0}};
    expect_matches("root ::= \"a\" \"b\"{2,4}", rep, sizeof rep / sizeof *rep);
    static const sample atleast[] = {{"xx", 0}, {"xxx", 1}, {"xxxxxxxx", 1}};
    expect_matches("root ::= \"x\"{3,}", atleast, sizeof atleast / sizeof *atleast);
    static const sample exact[] = {{"", 0}, {"zz", 1}, {"zzz", 0}};
    expect_matches("root ::= z{2}\nz ::= \"z\"", exact, sizeof exact / sizeof *exact);
    /* multi-line rule bodies, comments, alternatives and empty alternatives */
    static const sample alt[] = {{"", 1}, {"cat", 1}, {"dog", 1}, {"cow", 0}, {"catdog", 0}};
    expect_matches("root ::= \"cat\" # a comment\n   | \"dog\"\n   | ( )", alt,
                   sizeof alt / sizeof *alt);
    /* negated and non-ASCII classes: UTF-8 sequences, never a lone byte */
    static const sample utf[] = {
        {"\"h\xC3\xA9llo\"", 1}, {"\"\xE2\x82\xAC\"", 1}, {"\"\xF0\x9F\x98\x80\"", 1},
        {"\"\xC3\"", 0},         {"\"a\"b\"", 0},         {"\"\xED\xA0\x80\"", 0},
        {"\"\xC0\xAF\"", 0}};
    expect_matches("root ::= \"\\\"\" [^\"]* \"\\\"\"", utf, sizeof utf / sizeof *utf);
    static const sample greek[] = {{"\xCE\xB1\xCE\xB2", 1}, {"ab", 0}, {"\xCE\xB1z", 0}};
    expect_matches("root ::= [\\u03B1-\\u03C9]+", greek, sizeof greek / sizeof *greek);
    static const sample dot[] = {{"\xE4\xB8\xAD", 1}, {"q", 1}, {"", 0}, {"qq", 0}};
    expect_matches("root ::= .", dot, sizeof dot / sizeof *dot);
    /* right recursion (nesting) */
    static const sample nest[] = {{"()", 1}, {"(())", 1}, {"((())", 0}, {"(()())", 1}};
    expect_matches("root ::= \"(\" root* \")\"", nest, sizeof nest / sizeof *nest);
    /* ambiguity: both alternatives stay alive */
    static const sample amb[] = {{"aaa", 1}, {"aab", 1}, {"ab", 1}, {"b", 0}};
    expect_matches("root ::= \"a\"* \"a\" | \"a\"+ \"b\"", amb, sizeof amb / sizeof *amb);
    /* an escaped name char and nested quantified groups */
    static const sample grp[] = {{"ab-ab-", 1}, {"", 1}, {"ab", 0}, {"ab-a", 0}};
    expect_matches("root ::= ( \"a\" \"b\" \"-\" )*", grp, sizeof grp / sizeof *grp);
}

/* The mask of every state on a path against trying each token on its own. */
static void test_masks(void)
{
    static const char *toks[] = {"{",   "}", "\"", "a", "ab", "\"a", "a\"",
                                 "\"}", ":", ": ", "1", "12", "x"};
    const int n = (int)(sizeof toks / sizeof *toks), end = n;
    const uint8_t *tb[16];
    size_t lens[16];
    for (int i = 0; i < n; i++)
        tb[i] = (const uint8_t *)toks[i], lens[i] = strlen(toks[i]);
    tb[n] = NULL, lens[n] = 0; /* the end id */
    grammar_vocab *v = NULL;
    CHECK(grammar_vocab_new(tb, lens, n + 1, &v) == ENC_OK);
    grammar *g = gt_compile("root ::= \"{\" ( \"\\\"\" [a-b]+ \"\\\": \" [0-9]+ )? \"}\"");
    const char *path[] = {"{", "\"a", "ab", "\"", ": ", "12", "}"};
    grammar_matcher *m = NULL;
    CHECK(grammar_matcher_new(g, v, &end, 1, &m) == ENC_OK);
    char prefix[64] = "";
    for (size_t step = 0; step <= sizeof path / sizeof *path; step++) {
        uint32_t mask[1] = {0};
        CHECK(grammar_matcher_fill_mask(m, mask) == ENC_OK);
        for (int t = 0; t < n; t++) { /* brute force: a fresh matcher on prefix + token */
            grammar_matcher *b = NULL;
            CHECK(grammar_matcher_new(g, v, &end, 1, &b) == ENC_OK);
            int ok = grammar_matcher_accept_bytes(b, (const uint8_t *)prefix, strlen(prefix)) &&
                     grammar_matcher_accept_bytes(b, (const uint8_t *)toks[t], strlen(toks[t]));
            grammar_matcher_free(b);
            if (ok != (int)((mask[0] >> t) & 1)) {
                fprintf(stderr, "after '%s': token '%s' mask %u, brute force %d\n", prefix, toks[t],
                        (mask[0] >> t) & 1, ok);
                check_failures++;
            }
        }
        int complete = step == sizeof path / sizeof *path;
        CHECK((int)((mask[0] >> end) & 1) == complete);
        CHECK(grammar_matcher_can_end(m) == complete);
        if (step < sizeof path / sizeof *path) {
            int32_t id = -1;
            for (int t = 0; t < n; t++)
                if (!strcmp(toks[t], path[step])) id = t;
            CHECK(!grammar_matcher_accept(m, end) || complete); /* end only when complete */
            CHECK(grammar_matcher_accept(m, id));
            strcat(prefix, path[step]);
        }
    }
    CHECK(grammar_matcher_is_complete(m)); /* nothing can follow "}" */
    CHECK(!grammar_matcher_accept(m, 0));  /* "{" now: refused, state unchanged */
    CHECK(grammar_matcher_accept(m, end));
    CHECK(grammar_matcher_is_complete(m));
    CHECK(!grammar_matcher_accept(m, end)); /* nothing after the end */
    uint32_t after[1] = {~0u};
    CHECK(grammar_matcher_fill_mask(m, after) == ENC_OK && after[0] == 0);
    grammar_matcher_free(m);
    /* a second matcher shares the first's tables and starts fresh */
    CHECK(grammar_matcher_new(g, v, &end, 1, &m) == ENC_OK);
    CHECK(!grammar_matcher_accept(m, 1) && grammar_matcher_accept(m, 0));
    int32_t bad = 99;
    grammar_matcher *m2 = NULL;
    CHECK(grammar_matcher_new(g, v, &bad, 1, &m2) == ENC_ERR_INVALID_ARGUMENT && !m2);
    CHECK(!grammar_matcher_accept(m, -1) && !grammar_matcher_accept(m, 1000));
    grammar_matcher_free(m);
    grammar_free(g);
    grammar_vocab_free(v);
}

static void test_builtins(void)
{
    grammar_vocab *v = gt_byte_vocab();
    grammar *g = gt_compile(grammar_json_object_ebnf());
    static const sample js[] = {{"{}", 1},
                                {"{\"a\": 1}", 1},
                                {"{\"a\": [1, -2.5e+3, \"x\\n\\u00e9\", null, true, {}]}", 1},
                                {"{\"a\":1}", 0}, /* the layout is fixed: one space after ':' */
                                {"[1]", 0},
                                {"{\"a\": 01}", 0},
                                {"{\"a\": \"\\ud800\"}", 0}};
    for (size_t i = 0; i < sizeof js / sizeof *js; i++)
        if (gt_matches(g, v, js[i].s, strlen(js[i].s)) != js[i].ok) {
            fprintf(stderr, "json object '%s': want %d\n", js[i].s, js[i].ok);
            check_failures++;
        }
    grammar_free(g);
    const char *choices[] = {"yes", "no", "maybe \"so\"", "\xC3\xA9t\xC3\xA9"};
    char *ebnf = NULL;
    CHECK(grammar_choice_to_ebnf(choices, 4, "c-", &ebnf) == ENC_OK);
    grammar *c = NULL;
    CHECK(grammar_compile(ebnf, strlen(ebnf), "c-root", &c) == ENC_OK);
    for (int i = 0; i < 4; i++)
        CHECK(gt_matches(c, v, choices[i], strlen(choices[i])));
    CHECK(!gt_matches(c, v, "ye", 2) && !gt_matches(c, v, "yesno", 5));
    grammar_free(c);
    free(ebnf);
    const char *bad[] = {"ok", "\xC3"};
    CHECK(grammar_choice_to_ebnf(bad, 2, "", &ebnf) == ENC_ERR_INVALID_ARGUMENT && !ebnf);
    CHECK(strstr(enc_last_error(), "choice 1: invalid UTF-8") != NULL);
    CHECK(grammar_choice_to_ebnf(bad, 0, "", &ebnf) == ENC_ERR_INVALID_ARGUMENT);
    grammar_vocab_free(v);
}

int main(void)
{
    test_errors();
    test_matching();
    test_masks();
    test_builtins();
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    else
        printf("grammar_unit: ok\n");
    return check_failures != 0;
}
