/* post_test.c - the post-processor: tokenizer_special_template.
 *
 *   tokenizer_post TOKENIZER_DIR
 *
 * The real Qwen3 tokenizer.json (ByteLevel post-processor: no template), and
 * copies of it with another post_processor put in, made here with cJSON: the
 * one Qwen/Qwen3-Embedding-* ship (a Sequence of ByteLevel and a
 * TemplateProcessing that appends <|endoftext|>), variants with a prefix and a
 * several-id special token, and one clear error per malformed or unsupported
 * template. The expected ids are Qwen3's as the shared tokenizer's SOURCE.md
 * lists them (test_real checks them too): <|endoftext|> 151643,
 * <|im_start|> 151644, <|im_end|> 151645. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

enum { ENDOFTEXT = 151643, IM_START = 151644, IM_END = 151645 };

/* The post_processor of Qwen/Qwen3-Embedding-0.6B's tokenizer.json (JSON
 * written with ' for "; see quoted). */
#define EMBEDDING_SINGLE                                                                           \
    "'single': [{'Sequence': {'id': 'A', 'type_id': 0}},"                                          \
    "           {'SpecialToken': {'id': '<|endoftext|>', 'type_id': 0}}],"                         \
    "'pair': [{'Sequence': {'id': 'A', 'type_id': 0}},"                                            \
    "         {'SpecialToken': {'id': '<|endoftext|>', 'type_id': 0}},"                            \
    "         {'Sequence': {'id': 'B', 'type_id': 1}},"                                            \
    "         {'SpecialToken': {'id': '<|endoftext|>', 'type_id': 1}}],"
#define EOT_SPECIALS                                                                               \
    "'special_tokens': {'<|endoftext|>': {'id': '<|endoftext|>', 'ids': [151643],"                 \
    "                                     'tokens': ['<|endoftext|>']}}"
#define BYTELEVEL                                                                                  \
    "{'type': 'ByteLevel', 'add_prefix_space': false, 'trim_offsets': false, 'use_regex': false}"
#define EMBEDDING                                                                                  \
    "{'type': 'Sequence', 'processors': [" BYTELEVEL ","                                           \
    "  {'type': 'TemplateProcessing', " EMBEDDING_SINGLE EOT_SPECIALS "}]}"

/* A malloc'd copy of s with every ' turned into " (token texts here hold none). */
static char *quoted(const char *s)
{
    char *q = strdup(s);
    for (char *p = q; *p; p++)
        if (*p == '\'') *p = '"';
    return q;
}

/* Load the real tokenizer.json (parsed once: root) with its post_processor
 * replaced by post (JSON written with '). */
static enc_status load_with_post(cJSON *root, const char *post, tokenizer **t)
{
    char *q = quoted(post);
    cJSON *node = cJSON_Parse(q);
    free(q);
    if (!node) {
        fprintf(stderr, "bad test JSON: %s\n", post);
        exit(1);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(root, "post_processor", node);
    char *json = cJSON_PrintUnformatted(root);
    enc_status s = tokenizer_load_buffer(json, strlen(json), NULL, 0, t);
    free(json);
    return s;
}

/* One side of the template, got[n_got], is want[n_want]; an empty one must
 * come as (NULL, 0). Says what differs. */
static int part_eq(const char *part, const int32_t *got, size_t n_got, const int32_t *want,
                   size_t n_want)
{
    int ok = test_ids_equal(got, n_got, want, n_want) && (n_got || !got);
    if (!ok) {
        fprintf(stderr, "%s (%s): ", part, got ? "non-NULL" : "NULL");
        test_print_want_got(want, n_want, got, n_got);
    }
    return ok;
}

/* tokenizer_special_template(t) gives want_prefix and want_suffix. */
static int template_eq(const tokenizer *t, const int32_t *want_prefix, size_t n_want_prefix,
                       const int32_t *want_suffix, size_t n_want_suffix)
{
    const int32_t *prefix = (const int32_t *)1, *suffix = (const int32_t *)1;
    size_t n_prefix = 99, n_suffix = 99;
    tokenizer_special_template(t, &prefix, &n_prefix, &suffix, &n_suffix);
    int ok = part_eq("prefix", prefix, n_prefix, want_prefix, n_want_prefix);
    return part_eq("suffix", suffix, n_suffix, want_suffix, n_want_suffix) && ok;
}

/* The real files: a ByteLevel post-processor, so no template. */
static void test_real(const char *dir, const cJSON *root)
{
    const cJSON *post = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(post, "type");
    CHECK(cJSON_IsString(type) && strcmp(type->valuestring, "ByteLevel") == 0,
          "the real tokenizer.json's post_processor is ByteLevel");
    tokenizer *t;
    REQUIRE(tokenizer_load(dir, &t));
    CHECK(template_eq(t, NULL, 0, NULL, 0), "real Qwen3: no template");
    CHECK(tokenizer_token_id(t, "<|endoftext|>") == ENDOFTEXT &&
              tokenizer_token_id(t, "<|im_start|>") == IM_START &&
              tokenizer_token_id(t, "<|im_end|>") == IM_END,
          "the special tokens' ids");
    tokenizer_free(t);
}

/* Templates that load, and what they put around a sequence. */
static void test_templates(cJSON *root)
{
    static const int32_t eot[] = {ENDOFTEXT}, im_start[] = {IM_START};
    static const int32_t start_end[] = {IM_START, IM_END};
    static const struct {
        const char *name, *post;
        const int32_t *prefix, *suffix;
        size_t n_prefix, n_suffix;
    } cases[] = {
        {"Qwen3-Embedding", EMBEDDING, NULL, eot, 0, 1},
        {"prefix and suffix",
         "{'type': 'Sequence', 'processors': [" BYTELEVEL ", {'type': 'TemplateProcessing',"
         " 'single': [{'SpecialToken': {'id': '<|im_start|>', 'type_id': 0}},"
         "            {'Sequence': {'id': 'A', 'type_id': 0}},"
         "            {'SpecialToken': {'id': '<|endoftext|>', 'type_id': 0}}],"
         " 'special_tokens': {"
         "   '<|im_start|>': {'id': '<|im_start|>', 'ids': [151644], 'tokens': ['<|im_start|>']},"
         "   '<|endoftext|>': {'id': '<|endoftext|>', 'ids': [151643], 'tokens': ['<|endoftext|>']}"
         "}}]}",
         im_start, eot, 1, 1},
        {"a special token of two ids, alone",
         "{'type': 'TemplateProcessing',"
         " 'single': [{'SpecialToken': {'id': '<two>', 'type_id': 0}},"
         "            {'Sequence': {'id': 'A', 'type_id': 0}}],"
         " 'pair': [],"
         " 'special_tokens': {'<two>': {'id': '<two>', 'ids': [151644, 151645],"
         "                              'tokens': ['<|im_start|>', '<|im_end|>']}}}",
         start_end, NULL, 2, 0},
        {"no special token",
         "{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}}]}", NULL, NULL, 0, 0},
        {"ByteLevel alone", BYTELEVEL, NULL, NULL, 0, 0},
        {"null", "null", NULL, NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tokenizer *t = NULL;
        enc_status s = load_with_post(root, cases[i].post, &t);
        CHECK(s == ENC_OK, "%s: %s", cases[i].name, enc_last_error());
        if (s != ENC_OK) continue;
        CHECK(
            template_eq(t, cases[i].prefix, cases[i].n_prefix, cases[i].suffix, cases[i].n_suffix),
            "%s", cases[i].name);
        tokenizer_free(t);
    }
}

/* The template is the caller's to add: encode gives the same ids with it. */
static void test_encode_unchanged(const char *dir, cJSON *root)
{
    tokenizer *plain, *embed;
    REQUIRE(tokenizer_load(dir, &plain));
    REQUIRE(load_with_post(root, EMBEDDING, &embed));
    const char *text = "Hello world<|im_end|>";
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    REQUIRE(tokenizer_encode(plain, text, strlen(text), &a, &na));
    REQUIRE(tokenizer_encode(embed, text, strlen(text), &b, &nb));
    CHECK(na == 3 && test_ids_equal(a, na, b, nb) && b[nb - 1] == IM_END,
          "encode adds no special token");
    free(a);
    free(b);
    tokenizer_free(plain);
    tokenizer_free(embed);
}

/* Each post_processor must fail to load with status want and a message naming field. */
static void test_errors(cJSON *root)
{
    static const struct {
        const char *post;
        enc_status want;
        const char *field;
    } cases[] = {
        {"{'type': 'Sequence', 'processors': [" BYTELEVEL ", {'type': 'RobertaProcessing'}]}",
         ENC_ERR_UNSUPPORTED,
         "post_processor.processors[1].type \"RobertaProcessing\" is not supported (encore "
         "supports ByteLevel, TemplateProcessing and a Sequence of them)"},
        {"{'type': 'BertProcessing'}", ENC_ERR_UNSUPPORTED,
         "post_processor.type \"BertProcessing\""},
        {"{'type': 'Sequence', 'processors': [{'add_prefix_space': false}]}", ENC_ERR_UNSUPPORTED,
         "post_processor.processors[0].type \"\""},
        {"{'type': 'Sequence', 'processors': {}}", ENC_ERR_FORMAT,
         "post_processor.processors: expected an array"},
        {"{'type': 'Sequence', 'processors': [" BYTELEVEL ", {'type': 'TemplateProcessing',"
         " 'single': [{'Sequence': {'id': 'A'}}, {'SpecialToken': {'id': "
         "'<|eot|>'}}], " EOT_SPECIALS "}]}",
         ENC_ERR_FORMAT,
         "post_processor.processors[1].single[1].SpecialToken.id \"<|eot|>\" is not in "
         "post_processor.processors[1].special_tokens"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}},"
         " {'SpecialToken': {'id': '<|endoftext|>'}}]}",
         ENC_ERR_FORMAT, "post_processor.single[1].SpecialToken.id \"<|endoftext|>\" is not in"},
        {"{'type': 'TemplateProcessing', 'single': [{'SpecialToken': {'id': "
         "'<|endoftext|>'}}], " EOT_SPECIALS "}",
         ENC_ERR_FORMAT, "post_processor.single: 0 {\"Sequence\": {\"id\": \"A\"}} pieces"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}},"
         " {'Sequence': {'id': 'A'}}]}",
         ENC_ERR_UNSUPPORTED, "post_processor.single: 2 {\"Sequence\""},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'B'}}]}",
         ENC_ERR_UNSUPPORTED, "post_processor.single[0].Sequence.id \"B\" is not supported"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'type_id': 0}}]}", ENC_ERR_FORMAT,
         "post_processor.single[0].Sequence.id: missing"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 7}}]}", ENC_ERR_FORMAT,
         "post_processor.single[0].Sequence.id: expected a string"},
        {"{'type': 'TemplateProcessing', 'single': ['$A']}", ENC_ERR_FORMAT,
         "post_processor.single[0]: expected {\"Sequence\": {...}} or {\"SpecialToken\": {...}}"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'},"
         " 'SpecialToken': {'id': '<|endoftext|>'}}], " EOT_SPECIALS "}",
         ENC_ERR_FORMAT, "post_processor.single[0]: expected"},
        {"{'type': 'TemplateProcessing', 'single': [{'Special': {'id': 'A'}}]}", ENC_ERR_FORMAT,
         "post_processor.single[0]: expected"},
        {"{'type': 'TemplateProcessing', 'pair': []}", ENC_ERR_FORMAT,
         "post_processor.single: missing or not an array"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}}],"
         " 'special_tokens': []}",
         ENC_ERR_FORMAT, "post_processor.special_tokens: expected an object"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}},"
         " {'SpecialToken': {'id': 'x'}}], 'special_tokens': {'x': {'ids': 151643}}}",
         ENC_ERR_FORMAT, "post_processor.special_tokens[\"x\"].ids: expected an array"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}},"
         " {'SpecialToken': {'id': 'x'}}], 'special_tokens': {'x': {'ids': [151643, 151669]}}}",
         ENC_ERR_FORMAT,
         "post_processor.special_tokens[\"x\"].ids[1]: id 151669 is not in the vocabulary"},
        {"{'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}},"
         " {'SpecialToken': {'id': 'x'}}], 'special_tokens': {'x': {'ids': ['151643']}}}",
         ENC_ERR_FORMAT, "post_processor.special_tokens[\"x\"].ids[0]: the id is not a number"},
        {"{'type': 'Sequence', 'processors': ["
         "  {'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}}]},"
         "  {'type': 'TemplateProcessing', 'single': [{'Sequence': {'id': 'A'}}]}]}",
         ENC_ERR_UNSUPPORTED,
         "post_processor.processors[1]: a second TemplateProcessing is not supported"},
        {"[" BYTELEVEL "]", ENC_ERR_FORMAT, "post_processor: expected an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tokenizer *t = (tokenizer *)1;
        enc_status s = load_with_post(root, cases[i].post, &t);
        CHECK(s == cases[i].want && t == NULL, "case %zu: status %d (%s)", i, s, enc_last_error());
        CHECK(strstr(enc_last_error(), cases[i].field) &&
                  strstr(enc_last_error(), "tokenizer.json"),
              "case %zu: message '%s' lacks '%s'", i, enc_last_error(), cases[i].field);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR\n", argv[0]);
        return 2;
    }
    char path[4096], *text;
    size_t size;
    snprintf(path, sizeof path, "%s/tokenizer.json", argv[1]);
    REQUIRE(file_read_all(path, &text, &size));
    cJSON *root = cJSON_ParseWithLength(text, size);
    free(text);
    if (!root) {
        fprintf(stderr, "%s: cannot parse\n", path);
        return 1;
    }
    test_real(argv[1], root);
    test_templates(root);
    test_encode_unchanged(argv[1], root);
    test_errors(root);
    cJSON_Delete(root);
    return test_summary("tokenizer_post");
}
