/* test_server_json.c - the server's JSON writer (src/server/json_out.c)
 * against cJSON, the parser and printer the server used before: every number
 * and every string escape as cJSON_PrintUnformatted prints them, byte for
 * byte; replies with thousands of log-probabilities that cJSON parses back to
 * the values given and prints again to the same bytes; nesting mistakes and
 * out of memory give NULL. */
#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fail_realloc.h" /* realloc_fail_in */
#include "server/json_out.h"
#include "server/openai_response.h"


static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* cJSON's text of [d] */
static char *cjson_number(double d)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(d));
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return s;
}

static char *ours_number(double d)
{
    json_out w;
    json_out_init(&w);
    json_out_begin_array(&w);
    json_out_number(&w, d);
    json_out_end_array(&w);
    return json_out_finish(&w);
}

static int same_number(double d)
{
    char *a = cjson_number(d), *b = ours_number(d);
    int same = a && b && !strcmp(a, b);
    if (!same) fprintf(stderr, "  %.17g: cJSON %s, json_out %s\n", d, a, b ? b : "(null)");
    free(a);
    free(b);
    return same;
}

static void test_numbers(void)
{
    const double fixed[] = {0.0,
                            -0.0,
                            1,
                            -1,
                            0.5,
                            -0.1,
                            1e-30,
                            1e300,
                            -1e300,
                            5e-324,
                            DBL_MAX,
                            INT_MAX,
                            INT_MIN,
                            (double)INT_MAX + 1,
                            (double)INT_MIN - 1,
                            1e15,
                            1e16,
                            1e17,
                            123456789012345678.0,
                            0.1f,
                            -9999.0f,
                            NAN,
                            INFINITY,
                            -INFINITY,
                            1700000000,
                            3000000000.0,
                            2.5e-8f};
    int bad = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        bad += !same_number(fixed[i]);
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = next();
        uint32_t fbits = (uint32_t)bits;
        double d;
        float f;
        memcpy(&d, &bits, sizeof d);
        memcpy(&f, &fbits, sizeof f);
        bad += !same_number(d);                                 /* any double */
        bad += !same_number(f);                                 /* any float, as logprobs are */
        bad += !same_number(-(double)(bits % 100000) / 1024.0); /* short fractions */
        bad += !same_number((double)(int64_t)(bits >> 20) * (i % 2 ? 1 : -1)); /* integers */
    }
    CHECK(bad == 0);
}

static void test_strings(void)
{
    /* every ASCII byte but NUL, and well-formed UTF-8 of every length, the
     * ends of its ranges included: written as cJSON writes them */
    static const char *const wide[] = {"\xc2\x80",         "\xc3\xa9",        "\xdf\xbf",
                                       "\xe0\xa0\x80",     "\xe4\xb8\xad",    "\xed\x9f\xbf",
                                       "\xee\x80\x80",     "\xef\xbf\xbf",    "\xf0\x90\x80\x80",
                                       "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"};
    char s[512];
    size_t n = 0;
    for (int c = 1; c < 128; c++)
        s[n++] = (char)c;
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        for (const char *p = wide[i]; *p; p++)
            s[n++] = *p;
    for (int c = 127; c >= 1; c -= 3)
        s[n++] = (char)c;
    s[n] = '\0';
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, s, s);
    cJSON_AddStringToObject(o, "", "");
    char *want = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_key(&w, s);
    json_out_string(&w, s);
    json_out_key(&w, "");
    json_out_string(&w, NULL); /* NULL is "" */
    json_out_end_object(&w);
    char *got = json_out_finish(&w);
    CHECK(got && want && !strcmp(got, want));
    free(got);
    free(want);
}

/* A byte that starts no well-formed UTF-8 sequence (RFC 3629) is \ufffd. */
static void test_strings_not_utf8(void)
{
    static const char *const cases[][2] = {
        {"a\xff"
         "b",
         "\"a\\ufffdb\""},                                          /* never in UTF-8 */
        {"\xc3", "\"\\ufffd\""},                                    /* cut at the end */
        {"\xc3(", "\"\\ufffd(\""},                                  /* cut by ASCII */
        {"\x80\xbf", "\"\\ufffd\\ufffd\""},                         /* continuation bytes alone */
        {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                         /* overlong '/' */
        {"\xe0\x9f\xbf", "\"\\ufffd\\ufffd\\ufffd\""},              /* overlong U+07FF */
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},              /* a surrogate */
        {"\xf0\x8f\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},   /* overlong U+FFFF */
        {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},   /* past U+10FFFF */
        {"\xe4\xb8\xad\xe4\xb8", "\"\xe4\xb8\xad\\ufffd\\ufffd\""}, /* a whole one, a cut one */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_out w;
        json_out_init(&w);
        json_out_string(&w, cases[i][0]);
        char *got = json_out_finish(&w);
        CHECK(got && !strcmp(got, cases[i][1]));
        cJSON *back = got ? cJSON_Parse(got) : NULL; /* and it parses */
        CHECK(back && cJSON_IsString(back));
        cJSON_Delete(back);
        free(got);
    }
}

static void test_nesting(void)
{
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_key(&w, "a");
    json_out_begin_array(&w);
    json_out_begin_array(&w);
    json_out_end_array(&w);
    json_out_begin_object(&w);
    json_out_end_object(&w);
    json_out_null(&w);
    json_out_string_or_null(&w, NULL);
    json_out_string_or_null(&w, "x");
    json_out_end_array(&w);
    json_out_key(&w, "b");
    json_out_number(&w, 2);
    json_out_end_object(&w);
    char *got = json_out_finish(&w);
    CHECK(got && !strcmp(got, "{\"a\":[[],{},null,null,\"x\"],\"b\":2}"));
    free(got);

    json_out_init(&w); /* nothing written: the empty text */
    got = json_out_finish(&w);
    CHECK(got && !strcmp(got, ""));
    free(got);

    json_out_init(&w);
    for (int i = 0; i <= JSON_OUT_MAX_DEPTH; i++)
        json_out_begin_array(&w);
    CHECK(json_out_finish(&w) == NULL); /* too deep */
    json_out_init(&w);
    json_out_end_object(&w);
    CHECK(json_out_finish(&w) == NULL); /* nothing open */

    json_out_init(&w);
    json_out_begin_array(&w);
    for (int i = 0; i < 1000; i++)
        json_out_number(&w, i); /* more than the first 256 bytes */
    realloc_fail_in = 0;
    for (int i = 0; i < 1000; i++)
        json_out_number(&w, i);
    realloc_fail_in = -1;
    json_out_end_array(&w);
    CHECK(w.oom && json_out_finish(&w) == NULL); /* freed, under ASan without a leak */
}

/* --- replies with log-probabilities ------------------------------------------------- */

/* Token texts of 0 to 5 bytes, some not UTF-8, some with quotes and
 * control bytes, so that escapes and U+FFFD both come up. */
static size_t token_text(void *user, int32_t id, char *buf, size_t cap)
{
    (void)user;
    static const char *const pieces[] = {"",     "a",        "\"q\"", "\\", "\n\t", "\x01",
                                         "\xe4", "\xc3\xa9", " the",  "}{", "\x7f"};
    const char *p = pieces[(uint32_t)id % (sizeof pieces / sizeof pieces[0])];
    size_t n = strlen(p);
    if (n > cap) n = cap;
    memcpy(buf, p, n);
    return n;
}

/* The text token_text gives, sanitized as the reply carries it. */
static void token_string(int32_t id, char *out, size_t cap)
{
    char raw[16];
    size_t n = token_text(NULL, id, raw, sizeof raw);
    oai_utf8_sanitize(raw, n, out, cap);
}

enum { N_TOKENS = 3000, N_TOP = 20 };

typedef struct lp_case {
    int32_t ids[N_TOKENS];
    float logprobs[N_TOKENS];
    encore_logprob top[N_TOKENS * N_TOP];
} lp_case;

static void lp_case_fill(lp_case *c)
{
    for (size_t i = 0; i < N_TOKENS; i++) {
        c->ids[i] = (int32_t)(next() % 151936);
        c->logprobs[i] = -(float)(next() % 1000000) / 65536.0f;
        for (int k = 0; k < N_TOP; k++)
            c->top[i * N_TOP + (size_t)k] =
                (encore_logprob){(int32_t)(next() % 151936), -(float)(next() % 1000) / 7.0f};
    }
}

/* cJSON parses `text` and prints it again to the same bytes. (Its 15
 * digits may miss a double by one rounding step, as cJSON's own do, so the
 * values are compared as the floats they were.) */
static cJSON *parses_to_itself(const char *text)
{
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    char *again = o ? cJSON_PrintUnformatted(o) : NULL;
    CHECK(again && !strcmp(again, text));
    free(again);
    return o;
}

static int item_is(const cJSON *v, const char *s)
{
    return cJSON_IsString(v) && !strcmp(v->valuestring, s);
}

static void check_completion_logprobs(const cJSON *l, const lp_case *c, size_t offset0)
{
    const cJSON *tokens = cJSON_GetObjectItem(l, "tokens"),
                *lps = cJSON_GetObjectItem(l, "token_logprobs");
    const cJSON *tops = cJSON_GetObjectItem(l, "top_logprobs"),
                *offs = cJSON_GetObjectItem(l, "text_offset");
    CHECK(cJSON_GetArraySize(tokens) == N_TOKENS && cJSON_GetArraySize(lps) == N_TOKENS &&
          cJSON_GetArraySize(tops) == N_TOKENS && cJSON_GetArraySize(offs) == N_TOKENS);
    int bad = 0;
    size_t offset = offset0;
    char text[64];
    const cJSON *t = tokens->child, *p = lps->child, *tp = tops->child, *of = offs->child;
    for (size_t i = 0; i < N_TOKENS && t && p && tp && of; i++) {
        token_string(c->ids[i], text, sizeof text);
        bad += !item_is(t, text) || (float)p->valuedouble != c->logprobs[i] ||
               of->valuedouble != (double)offset;
        for (const char *ch = text; *ch; ch++) /* characters, as Python's len counts them */
            offset += ((unsigned char)*ch & 0xC0) != 0x80;
        /* the chosen token first, then one key per text, the first alternative that decodes
         * to it (the reply takes them best first; these are not sorted), in order */
        char seen[N_TOP + 1][64];
        int n_seen = 1;
        const cJSON *alt = tp->child;
        snprintf(seen[0], sizeof seen[0], "%s", text);
        bad += !alt || strcmp(alt->string, text) != 0 || (float)alt->valuedouble != c->logprobs[i];
        alt = alt ? alt->next : NULL;
        for (int k = 0; k < N_TOP; k++) {
            const encore_logprob *want = &c->top[i * N_TOP + (size_t)k];
            token_string(want->id, seen[n_seen], sizeof seen[n_seen]);
            int dup = 0;
            for (int s = 0; s < n_seen && !dup; s++)
                dup = !strcmp(seen[s], seen[n_seen]);
            if (dup) continue;
            bad += !alt || strcmp(alt->string, seen[n_seen]) != 0 ||
                   (float)alt->valuedouble != want->logprob;
            alt = alt ? alt->next : NULL;
            n_seen++;
        }
        bad += cJSON_GetArraySize(tp) != n_seen;
        t = t->next, p = p->next, tp = tp->next, of = of->next;
    }
    CHECK(bad == 0);
}

/* {"token", "logprob", "bytes"} of one chat entry against the id's text */
static int chat_entry_bad(const cJSON *e, int32_t id, float logprob)
{
    char text[64], raw[16];
    token_string(id, text, sizeof text);
    size_t n = token_text(NULL, id, raw, sizeof raw);
    const cJSON *bytes = cJSON_GetObjectItem(e, "bytes");
    int bad = !item_is(cJSON_GetObjectItem(e, "token"), text) ||
              (float)cJSON_GetObjectItem(e, "logprob")->valuedouble != logprob ||
              cJSON_GetArraySize(bytes) != (int)n;
    const cJSON *b = bytes ? bytes->child : NULL;
    for (size_t j = 0; j < n && b; j++, b = b->next)
        bad += b->valuedouble != (unsigned char)raw[j];
    return bad;
}

static void check_chat_logprobs(const cJSON *l, const lp_case *c)
{
    const cJSON *content = cJSON_GetObjectItem(l, "content");
    CHECK(cJSON_GetArraySize(content) == N_TOKENS);
    int bad = 0;
    const cJSON *e = content ? content->child : NULL;
    for (size_t i = 0; i < N_TOKENS && e; i++, e = e->next) {
        bad += chat_entry_bad(e, c->ids[i], c->logprobs[i]);
        const cJSON *tops = cJSON_GetObjectItem(e, "top_logprobs");
        bad += cJSON_GetArraySize(tops) != N_TOP;
        const cJSON *alt = tops ? tops->child : NULL;
        for (int k = 0; k < N_TOP && alt; k++, alt = alt->next)
            bad += chat_entry_bad(alt, c->top[i * N_TOP + (size_t)k].id,
                                  c->top[i * N_TOP + (size_t)k].logprob);
    }
    CHECK(bad == 0);
}

static void test_logprobs_replies(void)
{
    lp_case *c = malloc(sizeof *c);
    CHECK(c != NULL);
    if (!c) return;
    lp_case_fill(c);
    oai_logprobs lp = {.ids = c->ids,
                       .logprobs = c->logprobs,
                       .top = c->top,
                       .n = N_TOKENS,
                       .n_top = N_TOP,
                       .text_offset = 7,
                       .token_text = token_text};
    oai_choice ch[2] = {{.text = "x\"y", .finish_reason = "length", .lp = &lp},
                        {.text = "z", .finish_reason = "stop", .stop_reason = "\n"}};
    oai_usage u = {.prompt_tokens = 3, .completion_tokens = 2 * N_TOKENS};
    oai_head h = {.kind = OAI_COMPLETION, .id = "cmpl-2", .created = 1700000000, .model = "tiny"};
    char *text = oai_response_body(&h, ch, 2, &u);
    cJSON *o = parses_to_itself(text);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    check_completion_logprobs(cJSON_GetObjectItem(c0, "logprobs"), c, 7);
    cJSON_Delete(o);
    free(text);

    h.kind = OAI_CHAT;
    text = oai_response_body(&h, ch, 2, &u);
    o = parses_to_itself(text);
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    check_chat_logprobs(cJSON_GetObjectItem(c0, "logprobs"), c);
    cJSON_Delete(o);
    free(text);

    lp.n = 40; /* a chunk takes the same path */
    text = oai_response_chunk(&h, 1, &ch[0]);
    cJSON_Delete(parses_to_itself(text));
    free(text);

    realloc_fail_in = 3; /* out of memory midway: NULL, nothing leaked */
    CHECK(oai_response_body(&h, ch, 2, &u) == NULL);
    realloc_fail_in = -1;
    free(c);
}

int main(void)
{
    test_numbers();
    test_strings();
    test_strings_not_utf8();
    test_nesting();
    test_logprobs_replies();
    if (!check_failures) printf("test_server_json: all checks passed\n");
    return check_failures != 0;
}
