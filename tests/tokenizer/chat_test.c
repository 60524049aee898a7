/* chat_test.c - the native chat template against Jinja2 rendering the real one.
 *
 *   tokenizer_chat_test TOKENIZER_DIR CASES.json RENDERED.json
 *
 * RENDERED.json is what render_chat.py made from CASES.json with the official
 * template in TOKENIZER_DIR/tokenizer_config.json, the way Hugging Face renders
 * it. Every case must come out byte for byte the same; so must every tojson
 * text. Tool-call arguments given as objects are formatted with
 * chat_template_tojson first, as the template's `| tojson` does. */
#include <cjson/cJSON.h>

#include "test_util.h"
#include "tokenizer/chat_template.h"

enum { MAX_MESSAGES = 32, MAX_CALLS = 8 };

typedef struct conversation {
    chat_message msgs[MAX_MESSAGES];
    chat_tool_call calls[MAX_MESSAGES][MAX_CALLS];
    char *owned[MAX_MESSAGES * MAX_CALLS + 1]; /* formatted arguments, tools */
    size_t n, n_owned;
    chat_template_opts opts;
} conversation;

static const char *str_or_null(const cJSON *obj, const char *key)
{
    const cJSON *j = cJSON_GetObjectItem(obj, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

/* JSON text of j, formatted as tojson would (kept in c->owned). */
static const char *tojson_of(conversation *c, const cJSON *j)
{
    char *raw = cJSON_PrintUnformatted(j), *out;
    REQUIRE(chat_template_tojson(raw, strlen(raw), &out));
    free(raw);
    c->owned[c->n_owned++] = out;
    return out;
}

static void build_calls(conversation *c, size_t i, const cJSON *calls)
{
    const cJSON *tc;
    size_t k = 0;
    cJSON_ArrayForEach(tc, calls) {
        const cJSON *fn = cJSON_GetObjectItem(tc, "function");
        if (!fn) fn = tc; /* {%- if tool_call.function %} ... */
        const cJSON *args = cJSON_GetObjectItem(fn, "arguments");
        c->calls[i][k].name = str_or_null(fn, "name");
        c->calls[i][k].arguments = cJSON_IsString(args) ? args->valuestring : tojson_of(c, args);
        k++;
    }
    c->msgs[i].tool_calls = c->calls[i];
    c->msgs[i].n_tool_calls = k;
}

static void build(conversation *c, const cJSON *cs)
{
    memset(c, 0, sizeof *c);
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(cs, "messages")) {
        size_t i = c->n++;
        c->msgs[i].role = str_or_null(m, "role");
        c->msgs[i].content = str_or_null(m, "content");
        c->msgs[i].reasoning_content = str_or_null(m, "reasoning_content");
        const cJSON *calls = cJSON_GetObjectItem(m, "tool_calls");
        if (calls) build_calls(c, i, calls);
    }
    const cJSON *tools = cJSON_GetObjectItem(cs, "tools");
    const cJSON *tools_text = cJSON_GetObjectItem(cs, "tools_text"); /* numbers as spelled */
    if (cJSON_IsString(tools_text)) {
        c->opts.tools_json = tools_text->valuestring;
    } else if (tools && !cJSON_IsNull(tools)) {
        c->opts.tools_json = cJSON_PrintUnformatted(tools);
        c->owned[c->n_owned++] = (char *)c->opts.tools_json;
    }
    c->opts.add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItem(cs, "add_generation_prompt"));
    c->opts.continue_final_message =
        cJSON_IsTrue(cJSON_GetObjectItem(cs, "continue_final_message"));
    const cJSON *think = cJSON_GetObjectItem(cs, "enable_thinking");
    c->opts.enable_thinking = !cJSON_IsFalse(think); /* absent: thinking */
}

static void conversation_free(conversation *c)
{
    for (size_t i = 0; i < c->n_owned; i++) free(c->owned[i]);
}

static void report_diff(const char *name, const char *want, const char *got)
{
    size_t i = 0;
    while (want[i] && want[i] == got[i]) i++;
    fprintf(stderr, "case \"%s\" differs at byte %zu\n--- jinja2:\n%s\n--- encore:\n%s\n---\n",
            name, i, want, got);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR CASES.json RENDERED.json FAMILY\n", argv[0]);
        return 2;
    }
    tokenizer *t;
    REQUIRE(tokenizer_load(argv[1], &t));
    /* the template's family, and whether its generation prompt opens the think block */
    chat_template_family family = chat_template_get_family(t);
    CHECK(!strcmp(chat_template_family_name(family), argv[4]), "family %s, want %s",
          chat_template_family_name(family), argv[4]);
    chat_template_opts gen = {.add_generation_prompt = 1}, cont = {.continue_final_message = 1};
    CHECK(chat_template_thinks(t) ==
              (!strcmp(argv[4], "qwen3") || !strcmp(argv[4], "qwen3-thinking")),
          "think blocks");
    CHECK(chat_template_tool_format(t) ==
              (!strcmp(argv[4], "qwen3-coder") ? CHAT_TOOLS_XML : CHAT_TOOLS_HERMES),
          "tool format");
    CHECK(chat_template_opens_reasoning(t, &gen) == !strcmp(argv[4], "qwen3-thinking") &&
              !chat_template_opens_reasoning(t, &cont),
          "opens reasoning");
    char *cases_text, *rendered_text;
    size_t n;
    REQUIRE(file_read_all(argv[2], &cases_text, &n));
    REQUIRE(file_read_all(argv[3], &rendered_text, &n));
    cJSON *cases = cJSON_Parse(cases_text), *rendered = cJSON_Parse(rendered_text);
    if (!cases || !rendered) {
        fprintf(stderr, "cannot parse %s or %s\n", argv[2], argv[3]);
        return 1;
    }
    const cJSON *cs = cJSON_GetObjectItem(cases, "cases");
    const cJSON *want = cJSON_GetObjectItem(rendered, "renders");
    CHECK(cJSON_GetArraySize(cs) == cJSON_GetArraySize(want), "case count");
    size_t n_cases = 0, n_same = 0;
    for (const cJSON *c = cs ? cs->child : NULL, *w = want ? want->child : NULL; c && w;
         c = c->next, w = w->next) {
        conversation conv;
        build(&conv, c);
        char *out = NULL;
        enc_status s = chat_template_render(t, conv.msgs, conv.n, &conv.opts, &out);
        const char *name = str_or_null(c, "name");
        if (cJSON_IsNull(w)) { /* the template raised: so must encore, naming what */
            CHECK(s == ENC_ERR_INVALID_ARGUMENT && !out,
                  "case \"%s\": Jinja2 fails, encore "
                  "rendered it",
                  name);
            n_cases++, n_same += s == ENC_ERR_INVALID_ARGUMENT;
            conversation_free(&conv);
            continue;
        }
        CHECK(s == ENC_OK, "case \"%s\": %s", name, enc_last_error());
        int same = s == ENC_OK && strcmp(out, w->valuestring) == 0;
        if (s == ENC_OK && !same) report_diff(name, w->valuestring, out);
        CHECK(same, "case \"%s\"", name);
        n_cases++;
        n_same += (size_t)same;
        free(out);
        conversation_free(&conv);
    }
    printf("chat template: %zu/%zu conversations identical to Jinja2\n", n_same, n_cases);

    const cJSON *texts = cJSON_GetObjectItem(cases, "tojson");
    const cJSON *want_json = cJSON_GetObjectItem(rendered, "tojson");
    size_t n_json = 0, n_json_same = 0;
    for (const cJSON *x = texts ? texts->child : NULL, *w = want_json ? want_json->child : NULL;
         x && w; x = x->next, w = w->next) {
        char *out = NULL;
        enc_status s = chat_template_tojson(x->valuestring, strlen(x->valuestring), &out);
        int same = s == ENC_OK && strcmp(out, w->valuestring) == 0;
        CHECK(same, "tojson(%s): got %s want %s", x->valuestring, out ? out : enc_last_error(),
              w->valuestring);
        n_json++;
        n_json_same += (size_t)same;
        free(out);
    }
    printf("tojson: %zu/%zu texts identical to Python's json.dumps\n", n_json_same, n_json);
    CHECK(n_cases >= 5 && n_json >= 5, "too few cases");

    /* Malformed JSON is refused, not reformatted. */
    static const char *const bad[] = {"{", "[1,]", "{\"a\" 1}", "\"\\ud800\"", "01", "1.", "tru",
                                      "\"a\x01\"", "[1] x", "\"\\x\"", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out = (char *)1;
        CHECK(chat_template_tojson(bad[i], strlen(bad[i]), &out) == ENC_ERR_INVALID_ARGUMENT && !out,
              "tojson accepted '%s'", bad[i]);
    }
    cJSON_Delete(cases);
    cJSON_Delete(rendered);
    free(cases_text);
    free(rendered_text);
    tokenizer_free(t);
    return test_summary("tokenizer_chat");
}
