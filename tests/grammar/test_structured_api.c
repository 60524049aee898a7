/* test_structured_api.c - structured outputs through the public C API on a
 * real model (random weights, the real Qwen3 vocabulary): for each schema of
 * SCHEMAS.json, N seeded sampled requests with encore_request.json_schema,
 * run concurrently; their text goes to OUT.jsonl for validate_samples.py
 * (finished = finish_reason "stop"). Also: a request with an unsupported
 * keyword, with a bad regex, with a grammar that does not compile and with
 * two constraints is refused at submission with the reason named; regex,
 * choices and json_object requests end in a match (checked here with the
 * grammar-independent rules: PCRE2, string equality, Python's json later).
 * And batch invariance: an unconstrained seeded request gives the same ids
 * alone and while the constrained ones run beside it.
 *
 *   test_structured_api MODEL_DIR SCHEMAS.json N OUT.jsonl */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "encore.h"

typedef struct req_out {
    char text[8192];
    size_t n;
    char finish[16];
    int32_t ids[512];
    size_t n_ids;
} req_out;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int n_done;

static void on_output(void *user, const encore_output *o)
{
    req_out *r = user;
    if (o->text_len && r->n + o->text_len < sizeof r->text) {
        memcpy(r->text + r->n, o->text, o->text_len);
        r->n += o->text_len;
    }
    for (size_t i = 0; i < o->n_ids && r->n_ids < 512; i++)
        r->ids[r->n_ids++] = o->ids[i];
    if (o->finished) {
        pthread_mutex_lock(&mu);
        snprintf(r->finish, sizeof r->finish, "%s", o->finish_reason);
        n_done++;
        pthread_cond_signal(&done_cv);
        pthread_mutex_unlock(&mu);
    }
}

static encore_request base_request(uint64_t seed)
{
    encore_request r = {.prompt = "Answer:"};
    r.sampling = encore_sampling_default();
    r.sampling.max_tokens = 256;
    r.sampling.temperature = 1.0;
    r.sampling.seed = seed;
    return r;
}

static void wait_for(int n)
{
    pthread_mutex_lock(&mu);
    while (n_done < n)
        pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void expect_refused(encore_engine *e, const encore_request *r, const char *needle)
{
    req_out out = {0};
    encore_status s = encore_submit(e, r, on_output, &out, NULL);
    CHECK(s == ENCORE_ERR_INVALID_ARGUMENT);
    if (!strstr(encore_last_error(), needle)) {
        fprintf(stderr, "wanted '%s' in: %s\n", needle, encore_last_error());
        check_failures++;
    }
}

static void test_refusals(encore_engine *e)
{
    encore_request r = base_request(1);
    r.json_schema = "{\"type\": \"array\", \"uniqueItems\": true}";
    expect_refused(e, &r,
                   "request.json_schema: json schema: unsupported keyword 'uniqueItems' at #");
    r = base_request(1);
    r.regex = "(a";
    expect_refused(e, &r, "request.regex: regex: missing ')'");
    r = base_request(1);
    r.grammar = "root ::= undefined-rule";
    expect_refused(e, &r, "request.grammar: grammar 1:10: undefined rule 'undefined-rule'");
    r = base_request(1);
    r.regex = "a";
    r.json_object = 1;
    expect_refused(e, &r, "at most one of");
}

/* Added tokens under a constraint: a non-special one (Qwen3's <think>, id
 * 151667) stands for its text and may be written whole; a special one
 * (<|im_start|>, 151644) is never written, its text only spelled out. Both
 * pushed by logit_bias, greedy. */
static void test_added_tokens(encore_engine *e)
{
    static const struct {
        const char *grammar;
        int32_t id;
        int whole;
    } cases[] = {{"root ::= \"<think>\\nx\"", 151667, 1},
                 {"root ::= \"<|im_start|>x\"", 151644, 0}};
    for (int i = 0; i < 2; i++) {
        encore_logit_bias bias = {cases[i].id, 100.0f};
        encore_request r = base_request(1);
        r.grammar = cases[i].grammar;
        r.sampling.temperature = 0;
        r.sampling.logit_bias = &bias;
        r.sampling.n_logit_bias = 1;
        req_out *out = calloc(1, sizeof *out);
        int before = n_done;
        CHECK(encore_submit(e, &r, on_output, out, NULL) == ENCORE_OK);
        wait_for(before + 1);
        int has = 0;
        for (size_t k = 0; k < out->n_ids; k++)
            has |= out->ids[k] == cases[i].id;
        CHECK(has == cases[i].whole && !strcmp(out->finish, "stop"));
        if (has != cases[i].whole)
            fprintf(stderr, "grammar %s: token %d %s\n", cases[i].grammar, cases[i].id,
                    has ? "written" : "not written");
        free(out);
    }
    pthread_mutex_lock(&mu); /* main's counts start here */
    n_done = 0;
    pthread_mutex_unlock(&mu);
}

/* think_first before a constraint (a regex of one digit), greedy with
 * logit_bias ranking </think> over "\n\n" over <think> (each allowed only
 * where the grammar has that text): 0 gives the digit alone; 1 the block,
 * <think>\n\n</think>\n\n, then the digit; 2 (the prompt opened the
 * block) its text and end, \n\n</think>\n\n, then the digit. */
static void test_think_first(encore_engine *e)
{
    static const char *const want[] = {"", "<think>\n\n</think>\n\n", "\n\n</think>\n\n"};
    encore_logit_bias bias[] = {{151668, 100.0f}, {271, 90.0f}, {151667, 80.0f}};
    for (int t = 0; t < 3; t++) {
        encore_request r = base_request(1);
        r.regex = "[0-9]";
        r.think_first = t;
        r.sampling.temperature = 0;
        r.sampling.logit_bias = bias;
        r.sampling.n_logit_bias = 3;
        req_out *out = calloc(1, sizeof *out);
        int before = n_done;
        CHECK(encore_submit(e, &r, on_output, out, NULL) == ENCORE_OK);
        wait_for(before + 1);
        size_t k = strlen(want[t]);
        int ok = !strcmp(out->finish, "stop") && out->n == k + 1 &&
                 !memcmp(out->text, want[t], k) && out->text[k] >= '0' && out->text[k] <= '9';
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "think_first %d: '%.*s' (%s)\n", t, (int)out->n, out->text,
                    out->finish);
        free(out);
    }
    pthread_mutex_lock(&mu); /* main's counts start here */
    n_done = 0;
    pthread_mutex_unlock(&mu);
}

/* Requests with the other constraints; returns how many were submitted. */
static int submit_others(encore_engine *e, req_out *outs)
{
    static const char *const choices[] = {"alpha", "beta", "gamma delta"};
    int n = 0;
    for (int k = 0; k < 4; k++) {
        encore_request r = base_request(100 + (uint64_t)k);
        if (k == 0) r.regex = "[a-c]{2,5}(x|yz)?";
        if (k == 1) r.choices = choices, r.n_choices = 3;
        if (k == 2) r.json_object = 1;
        if (k == 3) r.grammar = "root ::= \"<\" [0-9]+ \">\"";
        CHECK(encore_submit(e, &r, on_output, &outs[n++], NULL) == ENCORE_OK);
    }
    return n;
}

static int pcre_full(const char *pat, const char *s, size_t n)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0;
}

static void check_others(const req_out *o)
{
    for (int k = 0; k < 4; k++) {
        if (strcmp(o[k].finish, "stop")) continue; /* "length": nothing to check */
        const char *t = o[k].text;
        size_t n = o[k].n;
        int ok = k == 0 ? pcre_full("[a-c]{2,5}(x|yz)?", t, n)
                 : k == 1
                     ? (n == 5 && !memcmp(t, "alpha", 5)) || (n == 4 && !memcmp(t, "beta", 4)) ||
                           (n == 11 && !memcmp(t, "gamma delta", 11))
                 : k == 2 ? n >= 2 && t[0] == '{' && t[n - 1] == '}'
                          : pcre_full("<[0-9]+>", t, n);
        if (!ok) {
            fprintf(stderr, "constraint %d: '%.*s' does not match\n", k, (int)n, t);
            check_failures++;
        }
    }
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* The schemas of the JSON array in text, one per line of the file. */
static int split_schemas(char *text, char **out, int max)
{
    int n = 0;
    for (char *line = strtok(text, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        while (*line == ' ')
            line++;
        if (*line != '{') continue;
        size_t len = strlen(line);
        if (len && line[len - 1] == ',') line[len - 1] = 0;
        out[n++] = line;
    }
    return n;
}

/* The unconstrained request of the invariance check. */
static encore_request plain_request(void)
{
    encore_request r = base_request(4242);
    r.sampling.max_tokens = 48;
    r.sampling.ignore_eos = 1;
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s MODEL_DIR SCHEMAS.json N OUT.jsonl\n", argv[0]);
        return 2;
    }
    encore_options opt = encore_options_default();
    opt.model_dir = argv[1];
    encore_engine *e = NULL;
    if (encore_engine_create(&opt, &e) != ENCORE_OK) {
        fprintf(stderr, "%s\n", encore_last_error());
        return 1;
    }
    test_refusals(e);
    test_added_tokens(e);
    test_think_first(e);
    req_out *alone = calloc(2, sizeof *alone), *beside = alone + 1;
    encore_request plain = plain_request();
    CHECK(encore_submit(e, &plain, on_output, alone, NULL) == ENCORE_OK);
    wait_for(1);
    char *text = read_file(argv[2]);
    char *schemas[64];
    int n_schemas = text ? split_schemas(text, schemas, 64) : 0, per = atoi(argv[3]);
    CHECK(n_schemas > 0 && per > 0);
    req_out *outs = calloc((size_t)(n_schemas * per + 4), sizeof *outs);
    int n_sub = 0;
    for (int i = 0; i < n_schemas; i++)
        for (int k = 0; k < per; k++) {
            encore_request r = base_request(7 + (uint64_t)(i * per + k));
            r.json_schema = schemas[i];
            encore_status s = encore_submit(e, &r, on_output, &outs[n_sub++], NULL);
            if (s != ENCORE_OK)
                fprintf(stderr, "schema %d: %s\n", i, encore_last_error()), check_failures++;
        }
    int n_other = submit_others(e, outs + n_sub);
    CHECK(encore_submit(e, &plain, on_output, beside, NULL) == ENCORE_OK);
    wait_for(1 + n_sub + n_other + 1);
    CHECK(alone->n_ids == 48 && beside->n_ids == alone->n_ids &&
          !memcmp(alone->ids, beside->ids, alone->n_ids * sizeof *alone->ids));
    free(alone);
    check_others(outs + n_sub);
    FILE *f = fopen(argv[4], "w");
    for (int i = 0, j = 0; i < n_schemas; i++)
        for (int k = 0; k < per; k++, j++) {
            fprintf(f, "{\"schema\": %d, \"sample\": %d, \"finished\": %s, \"hex\": \"", i, k,
                    strcmp(outs[j].finish, "stop") ? "false" : "true");
            for (size_t b = 0; b < outs[j].n; b++)
                fprintf(f, "%02x", (unsigned char)outs[j].text[b]);
            fprintf(f, "\"}\n");
            CHECK(!strcmp(outs[j].finish, "stop") || !strcmp(outs[j].finish, "length"));
        }
    fclose(f);
    free(outs);
    encore_engine_destroy(e);
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
