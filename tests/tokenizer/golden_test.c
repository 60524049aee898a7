/* golden_test.c - encore's encodings against the JavaScript reference.
 *
 *   tokenizer_golden_test TOKENIZER_DIR STRINGS.jsonl GOLDEN.jsonl
 *
 * STRINGS has one JSON string a line; GOLDEN the matching line of
 * reference.js ({"ids", "gpt2", "gpt2_prefix", "nfc"}). For every string:
 *   - encode with the real Qwen3 tokenizer == ids (byte-exact, every id)
 *   - the same tokenizer.json with merges written as "a b" strings == ids
 *   - with the plain ByteLevel pre-tokenizer (GPT-2 regex) == gpt2, and with
 *     add_prefix_space == gpt2_prefix
 *   - decode(ids) == nfc, the stream decode adds up to the same text, and
 *     decoding with skip_special drops exactly the special tokens. */
#include <cjson/cJSON.h>

#include "test_util.h"

typedef struct golden {
    int32_t *ids, *gpt2, *gpt2_prefix;
    size_t n_ids, n_gpt2, n_gpt2_prefix;
    char *nfc;
    size_t n_nfc;
} golden;

static int32_t *ids_from_json(const cJSON *a, size_t *n)
{
    *n = (size_t)cJSON_GetArraySize(a);
    int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) ids[i++] = (int32_t)e->valuedouble;
    return ids;
}

/* "nfc" is the last key: unquote its raw text, which may hold \u0000. */
static void golden_parse(const char *line, golden *g)
{
    cJSON *j = cJSON_Parse(line);
    if (!j) {
        fprintf(stderr, "golden: bad line: %.80s\n", line);
        exit(1);
    }
    g->ids = ids_from_json(cJSON_GetObjectItem(j, "ids"), &g->n_ids);
    g->gpt2 = ids_from_json(cJSON_GetObjectItem(j, "gpt2"), &g->n_gpt2);
    g->gpt2_prefix = ids_from_json(cJSON_GetObjectItem(j, "gpt2_prefix"), &g->n_gpt2_prefix);
    cJSON_Delete(j);
    const char *nfc = strstr(line, ",\"nfc\":");
    size_t len = strlen(line);
    if (!nfc || line[len - 1] != '}') {
        fprintf(stderr, "golden: no nfc in: %.80s\n", line);
        exit(1);
    }
    nfc += 7;
    REQUIRE(tokenizer_json_unquote(nfc, (size_t)(line + len - 1 - nfc), &g->nfc, &g->n_nfc));
}

static void golden_free(golden *g)
{
    free(g->ids);
    free(g->gpt2);
    free(g->gpt2_prefix);
    free(g->nfc);
}

/* A tokenizer.json variant: the real one, changed by edit, loaded from memory. */
static tokenizer *load_variant(const char *dir, void (*edit)(cJSON *root))
{
    char path[4096], *text;
    size_t size;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    REQUIRE(file_read_all(path, &text, &size));
    cJSON *root = cJSON_ParseWithLength(text, size);
    free(text);
    edit(root);
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    tokenizer *t;
    REQUIRE(tokenizer_load_buffer(json, strlen(json), NULL, 0, &t));
    free(json);
    return t;
}

static void edit_merges_as_strings(cJSON *root)
{
    cJSON *model = cJSON_GetObjectItem(root, "model");
    cJSON *strings = cJSON_CreateArray(), *pair;
    cJSON_ArrayForEach(pair, cJSON_GetObjectItem(model, "merges")) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s %s", pair->child->valuestring,
                 pair->child->next->valuestring);
        cJSON_AddItemToArray(strings, cJSON_CreateString(buf));
    }
    cJSON_ReplaceItemInObject(model, "merges", strings);
}

static void set_bytelevel(cJSON *root, int prefix)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "ByteLevel");
    cJSON_AddBoolToObject(p, "add_prefix_space", prefix);
    cJSON_AddBoolToObject(p, "trim_offsets", 0);
    cJSON_AddBoolToObject(p, "use_regex", 1);
    cJSON_ReplaceItemInObject(root, "pre_tokenizer", p);
}

static void edit_gpt2(cJSON *root) { set_bytelevel(root, 0); }
static void edit_gpt2_prefix(cJSON *root) { set_bytelevel(root, 1); }

/* Encode s and compare with want; print the difference once. */
static int check_encode(tokenizer *t, const char *what, size_t line, const char *s,
                        size_t n, const int32_t *want, size_t n_want)
{
    int32_t *ids;
    size_t n_ids;
    if (tokenizer_encode(t, s, n, &ids, &n_ids) != ENC_OK) {
        fprintf(stderr, "line %zu (%s): encode failed: %s\n", line, what, enc_last_error());
        return 0;
    }
    int ok = test_ids_equal(ids, n_ids, want, n_want);
    if (!ok) {
        fprintf(stderr, "line %zu (%s): ids differ\n  want ", line, what);
        test_print_ids(stderr, want, n_want);
        fprintf(stderr, "\n  got  ");
        test_print_ids(stderr, ids, n_ids);
        fprintf(stderr, "\n");
    }
    free(ids);
    return ok;
}

/* The stream outputs, concatenated, against the full decode. */
static int check_stream(const tokenizer *t, const int32_t *ids, size_t n,
                        const char *want, size_t n_want, int skip)
{
    tokenizer_stream *s;
    REQUIRE(tokenizer_stream_create(t, skip, &s));
    char *all = malloc(n_want + 1);
    size_t len = 0;
    int ok = 1;
    for (size_t i = 0; i <= n && ok; i++) {
        const char *piece;
        size_t k;
        enc_status st = i < n ? tokenizer_stream_put(s, ids[i], &piece, &k)
                              : tokenizer_stream_flush(s, &piece, &k);
        ok = st == ENC_OK && len + k <= n_want;
        if (ok) memcpy(all + len, piece, k), len += k;
    }
    ok = ok && len == n_want && memcmp(all, want, len) == 0;
    free(all);
    tokenizer_stream_destroy(s);
    return ok;
}

/* Decoding with skip_special equals decoding the ids without special ones. */
static int check_skip_special(const tokenizer *t, const int32_t *ids, size_t n)
{
    int32_t *kept = malloc((n ? n : 1) * sizeof *kept);
    size_t n_kept = 0;
    for (size_t i = 0; i < n; i++)
        if (!tokenizer_is_special(t, ids[i])) kept[n_kept++] = ids[i];
    char *a, *b;
    size_t na, nb;
    REQUIRE(tokenizer_decode_bytes(t, ids, n, 1, &a, &na));
    REQUIRE(tokenizer_decode_bytes(t, kept, n_kept, 0, &b, &nb));
    int ok = na == nb && memcmp(a, b, na) == 0 && check_stream(t, ids, n, b, nb, 1);
    free(a);
    free(b);
    free(kept);
    return ok;
}

static int check_decode(const tokenizer *t, size_t line, const golden *g)
{
    char *text;
    size_t len;
    REQUIRE(tokenizer_decode_bytes(t, g->ids, g->n_ids, 0, &text, &len));
    int ok = len == g->n_nfc && memcmp(text, g->nfc, len) == 0;
    if (!ok) fprintf(stderr, "line %zu: decode(ids) != NFC(s)\n", line);
    if (ok && !check_stream(t, g->ids, g->n_ids, text, len, 0)) {
        fprintf(stderr, "line %zu: the stream decode differs\n", line);
        ok = 0;
    }
    if (ok && !check_skip_special(t, g->ids, g->n_ids)) {
        fprintf(stderr, "line %zu: skip_special decode differs\n", line);
        ok = 0;
    }
    free(text);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR STRINGS.jsonl GOLDEN.jsonl\n", argv[0]);
        return 2;
    }
    tokenizer *qwen3, *strings_form, *gpt2, *gpt2_prefix;
    REQUIRE(tokenizer_load(argv[1], &qwen3));
    strings_form = load_variant(argv[1], edit_merges_as_strings);
    gpt2 = load_variant(argv[1], edit_gpt2);
    gpt2_prefix = load_variant(argv[1], edit_gpt2_prefix);

    char **strings, **goldens;
    size_t n = test_read_lines(argv[2], &strings);
    size_t n_golden = test_read_lines(argv[3], &goldens);
    CHECK(n == n_golden, "%zu strings but %zu golden lines", n, n_golden);
    CHECK(n >= 500, "only %zu strings", n);
    size_t ok[5] = {0};
    for (size_t i = 0; i < n && i < n_golden; i++) {
        char *s;
        size_t len;
        REQUIRE(tokenizer_json_unquote(strings[i], strlen(strings[i]), &s, &len));
        golden g;
        golden_parse(goldens[i], &g);
        ok[0] += check_encode(qwen3, "qwen3", i + 1, s, len, g.ids, g.n_ids);
        ok[1] += check_encode(strings_form, "merges as strings", i + 1, s, len, g.ids, g.n_ids);
        ok[2] += check_encode(gpt2, "gpt2", i + 1, s, len, g.gpt2, g.n_gpt2);
        ok[3] += check_encode(gpt2_prefix, "gpt2 prefix", i + 1, s, len, g.gpt2_prefix,
                              g.n_gpt2_prefix);
        ok[4] += check_decode(qwen3, i + 1, &g);
        golden_free(&g);
        free(s);
    }
    static const char *const what[5] = {"qwen3 ids", "merges as \"a b\"", "gpt2 regex",
                                        "gpt2 + prefix space", "decode/stream/skip"};
    for (size_t k = 0; k < 5; k++) {
        printf("%-22s %zu/%zu match\n", what[k], ok[k], n);
        CHECK(ok[k] == n, "%s: %zu of %zu differ", what[k], n - ok[k], n);
    }
    if (n) free(strings[0]);
    if (n_golden) free(goldens[0]);
    free(strings);
    free(goldens);
    tokenizer_free(qwen3);
    tokenizer_free(strings_form);
    tokenizer_free(gpt2);
    tokenizer_free(gpt2_prefix);
    return test_summary("tokenizer_golden");
}
