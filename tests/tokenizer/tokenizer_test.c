/* tokenizer_test.c - the tokenizer's behaviour beyond the golden encodings.
 *
 *   tokenizer_unit_test TOKENIZER_DIR
 *
 * With the real Qwen3 files: lookups and config tokens, the byte map (checked
 * against GPT-2's bytes_to_unicode computed here, independently), invalid
 * UTF-8, lossy and streaming decode, bad ids, huge inputs, and the places
 * where Hugging Face's regex engine (Oniguruma) and JavaScript's disagree
 * (expected pieces derived by hand from the regex; the JavaScript reference
 * cannot check them). With small tokenizer.json files made here: hand-checked
 * BPE merges, added-token options, Split behaviors, and one clear error per
 * unsupported or malformed field. */
#define _DEFAULT_SOURCE /* mkdtemp, realpath, symlink */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_impl.h"

/* --- helpers --------------------------------------------------------------------------- */

/* GPT-2's bytes_to_unicode, as the Python original computes it. */
static unsigned byte_to_unicode(int b)
{
    int in_bs = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    if (in_bs) return (unsigned)b;
    unsigned n = 0;
    for (int k = 0; k < b; k++) {
        int k_in = (k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF);
        if (!k_in) n++;
    }
    return 256 + n;
}

static size_t utf8_put(char *out, unsigned cp)
{
    if (cp < 0x80) return out[0] = (char)cp, 1;
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* Id of the one-byte token of byte b. */
static int32_t byte_token(const tokenizer *t, int b)
{
    char u[4] = {0};
    utf8_put(u, byte_to_unicode(b));
    return tokenizer_token_id(t, u);
}

static int encode_eq(tokenizer *t, const char *s, size_t n, const int32_t *want, size_t n_want)
{
    int32_t *ids;
    size_t n_ids;
    if (tokenizer_encode(t, s, n, &ids, &n_ids) != ENC_OK) {
        fprintf(stderr, "encode failed: %s\n", enc_last_error());
        return 0;
    }
    int ok = test_ids_equal(ids, n_ids, want, n_want);
    if (!ok) test_print_want_got(want, n_want, ids, n_ids);
    free(ids);
    return ok;
}

static int decode_eq(const tokenizer *t, const int32_t *ids, size_t n, const char *want, size_t n_want)
{
    char *text;
    size_t len;
    if (tokenizer_decode_bytes(t, ids, n, 0, &text, &len) != ENC_OK) return 0;
    int ok = len == n_want && memcmp(text, want, len) == 0;
    free(text);
    return ok;
}

/* --- with the real Qwen3 files ---------------------------------------------------------- */

static void test_lookups(const tokenizer *t)
{
    CHECK(tokenizer_vocab_size(t) == 151669, "vocab size %d", tokenizer_vocab_size(t));
    CHECK(tokenizer_token_id(t, "<|endoftext|>") == 151643, "endoftext");
    CHECK(tokenizer_token_id(t, "<|im_start|>") == 151644, "im_start");
    CHECK(tokenizer_token_id(t, "<|im_end|>") == 151645, "im_end");
    CHECK(tokenizer_token_id(t, "</think>") == 151668, "/think");
    CHECK(tokenizer_token_id(t, "Hello") == 9707, "Hello");
    CHECK(tokenizer_token_id(t, "Ġworld") == 1879, "Ġworld");
    CHECK(tokenizer_token_id(t, "no such token here") == -1, "absent");
    CHECK(strcmp(tokenizer_token_text(t, 151645), "<|im_end|>") == 0, "text of 151645");
    CHECK(tokenizer_token_text(t, -1) == NULL && tokenizer_token_text(t, 151669) == NULL, "no text");
    size_t len;
    const char *b = tokenizer_token_bytes(t, 1879, &len);
    CHECK(b && len == 6 && memcmp(b, " world", 6) == 0, "bytes of Ġworld");
    CHECK(tokenizer_token_bytes(t, 151669, &len) == NULL && len == 0, "no bytes");
    CHECK(tokenizer_is_special(t, 151645) && !tokenizer_is_special(t, 151667) &&
              !tokenizer_is_special(t, 9707), "special flags");
    CHECK(tokenizer_eos_id(t) == 151645, "eos %d", tokenizer_eos_id(t));
    CHECK(tokenizer_pad_id(t) == 151643, "pad %d", tokenizer_pad_id(t));
    CHECK(tokenizer_bos_id(t) == -1, "bos %d", tokenizer_bos_id(t));
    int32_t stop[4];
    size_t n = tokenizer_stop_ids(t, stop, 4);
    CHECK(n == 2 && stop[0] == 151645 && stop[1] == 151643, "stop ids (%zu)", n);
    CHECK(tokenizer_stop_ids(t, stop, 1) == 2, "stop ids count with a short buffer");
    CHECK(chat_template_get_family(t) == CHAT_TEMPLATE_QWEN3, "template family");
}

/* The families by their statements (the templates themselves: tokenizer_chat_*): an
 * Instruct-2507-like text is recognised, and not once it also carries another
 * family's mark (Qwen2.5's default system prompt, Qwen3-Coder's XML calls) or
 * reads enable_thinking without Qwen3's empty think block. */
static void test_template_families(void)
{
    static const char base[] =
        "<|im_start|><|im_end|><tools><tool_response>{{- '<tool_call>\\n{\"name\": \"' }}"
        "{{- '<|im_start|>' + message.role + '\\n' + content }}{{- '<|im_start|>assistant\\n' }}";
    static const struct {
        const char *extra;
        chat_template_family want;
    } cases[] = {
        {"", CHAT_TEMPLATE_QWEN3_INSTRUCT},
        {"You are Qwen, created by Alibaba Cloud.", CHAT_TEMPLATE_UNKNOWN},
        {"<function=", CHAT_TEMPLATE_UNKNOWN},
        {"enable_thinking", CHAT_TEMPLATE_UNKNOWN},
        {"<think>", CHAT_TEMPLATE_UNKNOWN},
        {"reasoning_content{{- '<|im_start|>assistant\\n<think>\\n' }}",
         CHAT_TEMPLATE_QWEN3_THINKING},
    };
    char text[1024];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(text, sizeof text, "%s%s", base, cases[i].extra);
        CHECK(chat_template_detect(text) == cases[i].want, "family of base + \"%s\": %s",
              cases[i].extra, chat_template_family_name(chat_template_detect(text)));
    }
    CHECK(chat_template_detect("<|im_start|>{{ messages }}") == CHAT_TEMPLATE_UNKNOWN,
          "another ChatML template");
}

/* Qwen3-Coder's template is told by its statements and the prose the
 * renderer reads from it: each one altered makes it unknown. */
static void test_coder_family(const char *templates_dir)
{
    char path[512], *text;
    size_t n;
    snprintf(path, sizeof path, "%s/qwen3-coder.jinja", templates_dir);
    REQUIRE(file_read_all(path, &text, &n));
    CHECK(chat_template_detect(text) == CHAT_TEMPLATE_QWEN3_CODER, "qwen3-coder: %s",
          chat_template_family_name(chat_template_detect(text)));
    static const char *const marks[] = {
        "render_extra_keys(tool, handled_keys)", /* a statement */
        "'<parameter=' + args_name",             /* the calls */
        "loop.previtem.role",                    /* tool responses */
        "{{- \"<tools>\" }}",                    /* where the preamble is found */
        "{{- \"\\n</tools>\" }}",               /* where the instructions are */
        "{{- \"<|im_start|>system\\nYou are Qwen", /* the default system prompt */
    };
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++) {
        char *at = strstr(text, marks[i]);
        CHECK(at != NULL, "mark \"%s\" not in the template", marks[i]);
        if (!at) continue;
        char saved = at[2];
        at[2] = '#';
        CHECK(chat_template_detect(text) == CHAT_TEMPLATE_UNKNOWN, "altered \"%s\": %s",
              marks[i], chat_template_family_name(chat_template_detect(text)));
        at[2] = saved;
    }
    free(text);
}

static void test_byte_map(tokenizer *t)
{
    for (int b = 0; b < 256; b++) {
        int32_t id = byte_token(t, b);
        char want = (char)b;
        CHECK(id >= 0, "byte 0x%02X has no token", b);
        size_t len;
        const char *bytes = tokenizer_token_bytes(t, id, &len);
        CHECK(bytes && len == 1 && bytes[0] == want, "byte 0x%02X: wrong bytes", b);
        if (b < 0x80) CHECK(encode_eq(t, &want, 1, &id, 1), "byte 0x%02X encodes wrong", b);
    }
}

static void test_invalid_utf8(tokenizer *t)
{
    static const struct { const char *s; size_t n, at; } bad[] = {
        {"\xff", 1, 0}, {"abc\x80", 4, 3}, {"\xc0\xaf", 2, 0}, {"\xe0\x80\x80", 3, 0},
        {"ok \xed\xa0\x80", 6, 3}, {"\xf4\x90\x80\x80", 4, 0}, {"\xe4\xb8", 2, 0},
        {"x\xf0\x9f\x98", 4, 1}, {"\xf8\x88\x80\x80\x80", 5, 0}, {"<|im_end|>\xc3", 11, 10},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int32_t *ids = (int32_t *)1;
        size_t n = 99;
        enc_status s = tokenizer_encode(t, bad[i].s, bad[i].n, &ids, &n);
        char want[64];
        snprintf(want, sizeof want, "at byte %zu", bad[i].at);
        CHECK(s == ENC_ERR_INVALID_ARGUMENT && ids == NULL && n == 0, "case %zu: status %d", i, s);
        CHECK(strstr(enc_last_error(), want) != NULL, "case %zu: message '%s'", i, enc_last_error());
    }
    /* NUL is a character like any other. */
    int32_t *ids;
    size_t n;
    CHECK(tokenizer_encode(t, "a\0b", 3, &ids, &n) == ENC_OK && n == 3, "NUL");
    if (n == 3) CHECK(decode_eq(t, ids, n, "a\0b", 3), "NUL round trip");
    free(ids);
    CHECK(tokenizer_encode(t, NULL, 0, &ids, &n) == ENC_OK && n == 0 && ids, "NULL, 0");
    free(ids);
}

/* The bytes as byte tokens, then decoded: Rust's from_utf8_lossy (Python's
 * errors="replace" agrees; the expected strings were printed by it). */
static void test_lossy(const tokenizer *t)
{
    static const struct { const char *in, *out; } cases[] = {
        {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
         "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d"},
        {"\xe4\xb8" "a", "\xEF\xBF\xBD" "a"},
        {"\xf0\x9f\x98", "\xEF\xBF\xBD"},
        {"\xed\xa0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xc0\xaf", "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xe0\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xf4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int32_t ids[32];
        size_t n = strlen(cases[i].in);
        for (size_t k = 0; k < n; k++) ids[k] = byte_token(t, (unsigned char)cases[i].in[k]);
        CHECK(decode_eq(t, ids, n, cases[i].out, strlen(cases[i].out)), "lossy case %zu", i);
        /* The stream gives the same text, in whole characters. */
        tokenizer_stream *s;
        REQUIRE(tokenizer_stream_create(t, 0, &s));
        char all[128] = {0};
        const char *piece;
        size_t k, len = 0;
        for (size_t j = 0; j <= n; j++) {
            enc_status st = j < n ? tokenizer_stream_put(s, ids[j], &piece, &k)
                                  : tokenizer_stream_flush(s, &piece, &k);
            CHECK(st == ENC_OK && tok__utf8_check((const unsigned char *)piece, k) == k,
                  "stream case %zu: not whole characters", i);
            memcpy(all + len, piece, k);
            len += k;
        }
        CHECK(strcmp(all, cases[i].out) == 0, "stream case %zu", i);
        tokenizer_stream_destroy(s);
    }
}

/* Feed ids one at a time, expecting the given outputs. */
static void stream_expect(const tokenizer *t, int skip, const int32_t *ids,
                          const char *const *want, size_t n)
{
    tokenizer_stream *s;
    REQUIRE(tokenizer_stream_create(t, skip, &s));
    for (size_t i = 0; i < n; i++) {
        const char *text;
        size_t len;
        CHECK(tokenizer_stream_put(s, ids[i], &text, &len) == ENC_OK, "put %zu", i);
        CHECK(len == strlen(want[i]) && strcmp(text, want[i]) == 0,
              "step %zu: got '%s' want '%s'", i, text, want[i]);
    }
    tokenizer_stream_destroy(s);
}

static void test_stream(const tokenizer *t)
{
    /* "€" (E2 82 AC) and "🙂" (F0 9F 99 82) split into byte tokens. */
    int32_t euro[] = {byte_token(t, 0xE2), byte_token(t, 0x82), byte_token(t, 0xAC),
                      tokenizer_token_id(t, "Hello")};
    const char *euro_out[] = {"", "", "\xE2\x82\xAC", "Hello"};
    stream_expect(t, 0, euro, euro_out, 4);
    int32_t smile[] = {byte_token(t, 0xF0), byte_token(t, 0x9F), byte_token(t, 0x99),
                       byte_token(t, 0x82)};
    const char *smile_out[] = {"", "", "", "\xF0\x9F\x99\x82"};
    stream_expect(t, 0, smile, smile_out, 4);
    /* Broken: E2 then 'a' -> U+FFFD a; special tokens skipped or not. */
    int32_t broken[] = {byte_token(t, 0xE2), tokenizer_token_id(t, "a"), 151645};
    const char *broken_out[] = {"", "\xEF\xBF\xBD\x61", "<|im_end|>"};
    const char *broken_skip[] = {"", "\xEF\xBF\xBD\x61", ""};
    stream_expect(t, 0, broken, broken_out, 3);
    stream_expect(t, 1, broken, broken_skip, 3);
    /* A special token between the bytes of a character does not break it
     * when skipped (the full decode drops it first as well). */
    int32_t split[] = {byte_token(t, 0xE2), 151645, byte_token(t, 0x82), byte_token(t, 0xAC)};
    const char *split_out[] = {"", "", "", "\xE2\x82\xAC"};
    stream_expect(t, 1, split, split_out, 4);
    /* Flush returns a held-back start as U+FFFD; bad ids are refused. */
    tokenizer_stream *s;
    const char *text;
    size_t len;
    REQUIRE(tokenizer_stream_create(t, 0, &s));
    CHECK(tokenizer_stream_put(s, byte_token(t, 0xE2), &text, &len) == ENC_OK && len == 0, "held");
    CHECK(tokenizer_stream_flush(s, &text, &len) == ENC_OK && strcmp(text, "\xEF\xBF\xBD") == 0, "flush");
    CHECK(tokenizer_stream_flush(s, &text, &len) == ENC_OK && len == 0, "flush twice");
    CHECK(tokenizer_stream_put(s, 151669, &text, &len) == ENC_ERR_INVALID_ARGUMENT, "bad id");
    CHECK(strstr(enc_last_error(), "151669") != NULL, "bad id message: %s", enc_last_error());
    tokenizer_stream_destroy(s);
    tokenizer_stream_destroy(NULL);
}

static void test_decode_errors(const tokenizer *t)
{
    int32_t bad[][3] = {{9707, -1, 1}, {9707, 151669, 1}, {9707, 1 << 30, 1}};
    for (size_t i = 0; i < 3; i++) {
        char *text = (char *)1;
        CHECK(tokenizer_decode(t, bad[i], 3, 0, &text) == ENC_ERR_INVALID_ARGUMENT && !text,
              "bad id %d", bad[i][1]);
        CHECK(strstr(enc_last_error(), "ids[1]") != NULL, "message: %s", enc_last_error());
    }
    char *text;
    CHECK(tokenizer_decode(t, NULL, 0, 0, &text) == ENC_OK && text && !*text, "empty decode");
    free(text);
    int32_t chat[] = {151644, 872, 198, 6023, 151645, 151667};
    CHECK(tokenizer_decode(t, chat, 6, 1, &text) == ENC_OK && strcmp(text, "user\nhi<think>") == 0,
          "skip_special keeps non-special added tokens");
    free(text);
}

/* Pieces of the pre-tokenizer for s, against want (NULL-terminated). */
static void pieces_expect(tokenizer *t, const char *s, const char *const *want)
{
    tok__pieces *p;
    REQUIRE(tok__pretokenize(t, s, strlen(s), &p));
    size_t n = 0;
    while (want[n]) n++;
    int ok = p->n == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = p->span[i].len == strlen(want[i]) &&
             memcmp(p->text.data + p->span[i].off, want[i], p->span[i].len) == 0;
    CHECK(ok, "pieces of '%s': got %zu pieces", s, p->n);
}

/* Where JavaScript's regex semantics differ from Oniguruma's (Hugging Face).
 * The Qwen3 pattern, alternatives in order:
 *   1 (?i:'s|'t|'re|'ve|'m|'ll|'d)  2 [^\r\n\p{L}\p{N}]?\p{L}+  3 \p{N}
 *   4 ` ?[^\s\p{L}\p{N}]+[\r\n]*`    5 \s*[\r\n]+  6 \s+(?!\S)  7 \s+ */
static void test_regex_semantics(tokenizer *t)
{
    /* U+0085 is White_Space: at the first one, 6 matches it alone (the second
     * is still space); the second takes the letter by 2. JavaScript (no
     * U+0085 in \s) gives "x", "\u0085\u0085", "y" by 4. */
    const char *nel[] = {"x", "\xC2\x85", "\xC2\x85y", NULL};
    pieces_expect(t, "x\xC2\x85\xC2\x85y", nel);
    /* U+FEFF is not White_Space: 4 takes "!\uFEFF" whole. JavaScript (\s has
     * U+FEFF) splits "!", "\uFEFF". */
    const char *bom[] = {"!\xEF\xBB\xBF", NULL};
    pieces_expect(t, "!\xEF\xBB\xBF", bom);
    /* Case-insensitive 's also matches the long s (U+017F folds to s), by 1.
     * JavaScript's rewrite ('[sS]) does not, and 2 takes "'ſt" whole. */
    const char *long_s[] = {"'\xC5\xBF", "t", NULL};
    pieces_expect(t, "'\xC5\xBFt", long_s);
    /* U+180E is not White_Space either (PCRE2's \s has it; rewritten away):
     * 4 takes " \u180E\u180E", then 6 " " and 2 " b". */
    const char *mvs[] = {"a", " \xE1\xA0\x8E\xE1\xA0\x8E", " ", " b", NULL};
    pieces_expect(t, "a \xE1\xA0\x8E\xE1\xA0\x8E  b", mvs);
    /* Contractions in any case, and only those. */
    const char *contr[] = {"I", "'M", " here", "'S", "'ll", "'LL", "'Ve", "'x", NULL};
    pieces_expect(t, "I'M here'S'll'LL'Ve'x", contr);
}

static void test_huge_inputs(tokenizer *t)
{
    size_t n = 1 << 20;
    char *s = malloc(n);
    const char fill[] = {' ', 'a', '\n', '7'};
    for (size_t k = 0; k < sizeof fill; k++) {
        memset(s, fill[k], n);
        int32_t *ids;
        size_t n_ids;
        CHECK(tokenizer_encode(t, s, n, &ids, &n_ids) == ENC_OK, "1 MiB of '%c': %s",
              fill[k], enc_last_error());
        char *back;
        size_t len;
        CHECK(tokenizer_decode_bytes(t, ids, n_ids, 0, &back, &len) == ENC_OK && len == n &&
                  memcmp(back, s, n) == 0, "1 MiB of '%c' round trip", fill[k]);
        free(back);
        free(ids);
    }
    free(s);
}

/* --- with small tokenizer.json files made here ------------------------------------------------ */

/* A byte-level tokenizer.json: the 256 byte tokens (ids 0..255), extra
 * tokens from 256 on, the merges given, the GPT-2 ByteLevel pre-tokenizer. */
static cJSON *mini_json(const char *const *extra, const char *merges_json)
{
    cJSON *root = cJSON_CreateObject(), *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
    for (int b = 0; b < 256; b++) {
        char u[4] = {0};
        utf8_put(u, byte_to_unicode(b));
        cJSON_AddNumberToObject(vocab, u, b);
    }
    for (int i = 0; extra && extra[i]; i++) cJSON_AddNumberToObject(vocab, extra[i], 256 + i);
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON_AddItemToObject(model, "merges", cJSON_Parse(merges_json ? merges_json : "[]"));
    cJSON_AddItemToObject(root, "model", model);
    cJSON_AddNullToObject(root, "normalizer");
    cJSON_AddItemToObject(root, "pre_tokenizer",
                          cJSON_Parse("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                                      "\"use_regex\":true}"));
    cJSON_AddItemToObject(root, "decoder", cJSON_Parse("{\"type\":\"ByteLevel\"}"));
    cJSON_AddItemToObject(root, "added_tokens", cJSON_CreateArray());
    return root;
}

static enc_status mini_load(cJSON *root, tokenizer **t)
{
    char *json = cJSON_PrintUnformatted(root);
    enc_status s = tokenizer_load_buffer(json, strlen(json), NULL, 0, t);
    free(json);
    cJSON_Delete(root);
    return s;
}

static void set_item(cJSON *obj, const char *key, const char *json)
{
    cJSON_DeleteItemFromObject(obj, key);
    cJSON_AddItemToObject(obj, key, cJSON_Parse(json));
}

static void test_mini_bpe(void)
{
    static const char *const extra[] = {"he", "ll", "hell", "hello", "aa", NULL};
    const char *arrays = "[[\"h\",\"e\"],[\"l\",\"l\"],[\"he\",\"ll\"],[\"hell\",\"o\"],[\"a\",\"a\"]]";
    const char *strings = "[\"h e\",\"l l\",\"he ll\",\"hell o\",\"a a\"]";
    tokenizer *ta, *ts;
    REQUIRE(mini_load(mini_json(extra, arrays), &ta));
    REQUIRE(mini_load(mini_json(extra, strings), &ts));
    tokenizer *both[2] = {ta, ts};
    for (int k = 0; k < 2; k++) {
        tokenizer *t = both[k];
        int32_t hello[] = {259};
        CHECK(encode_eq(t, "hello", 5, hello, 1), "hello (%d)", k);
        /* h e l l o h e: (h,e) twice, then (l,l), (he,ll), (hell,o) -> hello he */
        int32_t hellohe[] = {259, 256};
        CHECK(encode_eq(t, "hellohe", 7, hellohe, 2), "hellohe (%d)", k);
        /* Equal ranks merge leftmost first: aaa -> aa a; aaaa -> aa aa. */
        int32_t aaa[] = {260, 'a'}, aaaa[] = {260, 260};
        CHECK(encode_eq(t, "aaa", 3, aaa, 2), "aaa (%d)", k);
        CHECK(encode_eq(t, "aaaa", 4, aaaa, 2), "aaaa (%d)", k);
        /* " hello": the piece is " hello" (Ġ is 0x20's token, id 32). */
        int32_t sp_hello[] = {' ', 259};
        CHECK(encode_eq(t, " hello", 6, sp_hello, 2), "' hello' (%d)", k);
    }
    tokenizer_free(ta);
    tokenizer_free(ts);
}

static void test_mini_added(void)
{
    static const char *const extra[] = {"<x>", "\xC3\xA9", NULL}; /* 256, 257 "é" */
    cJSON *root = mini_json(extra, NULL);
    set_item(root, "normalizer", "{\"type\":\"NFC\"}");
    set_item(root, "added_tokens",
             "[{\"id\":256,\"content\":\"<x>\",\"special\":true,\"lstrip\":true,\"rstrip\":true,"
             "\"normalized\":false},"
             "{\"id\":257,\"content\":\"e\\u0301\",\"special\":false,\"normalized\":true}]");
    tokenizer *t;
    REQUIRE(mini_load(root, &t));
    /* lstrip/rstrip swallow the whitespace around <x>. */
    int32_t strip[] = {'a', 256, 'b'};
    CHECK(encode_eq(t, "a  <x>\t b", 9, strip, 3), "lstrip/rstrip");
    /* A normalized added token is matched in the NFC text, in either form. */
    int32_t e_acute[] = {'c', 257, 'f'};
    CHECK(encode_eq(t, "ce\xCC\x81" "f", 5, e_acute, 3), "normalized added token (NFD input)");
    CHECK(encode_eq(t, "c\xC3\xA9" "f", 4, e_acute, 3), "normalized added token (NFC input)");
    CHECK(tokenizer_is_special(t, 256) && !tokenizer_is_special(t, 257), "special flags");
    tokenizer_free(t);
}

static void test_mini_split(void)
{
    cJSON *root = mini_json(NULL, NULL);
    set_item(root, "pre_tokenizer",
             "{\"type\":\"Sequence\",\"pretokenizers\":["
             "{\"type\":\"Split\",\"pattern\":{\"String\":\"+\"},\"behavior\":\"Removed\",\"invert\":false},"
             "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":false}]}");
    tokenizer *t;
    REQUIRE(mini_load(root, &t));
    /* "a+b" -> pieces "a", "b" (the literal '+' removed) -> " a", " b". */
    int32_t want[] = {' ', 'a', ' ', 'b'};
    CHECK(encode_eq(t, "a+b", 3, want, 4), "Split Removed + prefix space");
    tokenizer_free(t);
}

/* Each edit must fail to load with status want and a message naming field. */
static void test_mini_errors(void)
{
    static const struct {
        const char *key, *json; /* replace root[key] (a "model.x" key edits model) */
        enc_status want;
        const char *field;
    } cases[] = {
        {"normalizer", "{\"type\":\"NFKC\"}", ENC_ERR_UNSUPPORTED, "normalizer.type \"NFKC\""},
        {"normalizer",
         "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},{\"type\":\"Lowercase\"}]}",
         ENC_ERR_UNSUPPORTED, "normalizer.normalizers[1].type \"Lowercase\""},
        {"model.type", "\"WordPiece\"", ENC_ERR_UNSUPPORTED, "model.type \"WordPiece\""},
        {"model.merges", "[\"a zz\"]", ENC_ERR_FORMAT, "model.merges[0]: \"zz\""},
        {"model.merges", "[\"abc\"]", ENC_ERR_FORMAT, "model.merges[0]: \"abc\" is not two tokens"},
        {"model.merges", "[\"a b\"]", ENC_ERR_FORMAT, "model.merges[0]: \"ab\" is not in"},
        {"model.merges", "[[\"a\"]]", ENC_ERR_FORMAT, "model.merges[0]"},
        {"model.merges", "{}", ENC_ERR_FORMAT, "model.merges"},
        {"model.byte_fallback", "true", ENC_ERR_UNSUPPORTED, "model.byte_fallback"},
        {"model.dropout", "0.1", ENC_ERR_UNSUPPORTED, "model.dropout"},
        {"model.unk_token", "\"<unk>\"", ENC_ERR_FORMAT, "model.unk_token"},
        {"model.end_of_word_suffix", "\"</w>\"", ENC_ERR_UNSUPPORTED, "model.end_of_word_suffix"},
        {"pre_tokenizer", "{\"type\":\"Whitespace\"}", ENC_ERR_UNSUPPORTED,
         "pre_tokenizer.type \"Whitespace\""},
        {"pre_tokenizer",
         "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"MergedWithPrevious\"}",
         ENC_ERR_UNSUPPORTED, "pre_tokenizer.behavior \"MergedWithPrevious\""},
        {"pre_tokenizer",
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
         "\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"},{\"type\":\"ByteLevel\"}]}",
         ENC_ERR_UNSUPPORTED, "pre_tokenizer.pretokenizers[0].pattern: cannot compile"},
        {"pre_tokenizer",
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},"
         "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Isolated\"}]}",
         ENC_ERR_UNSUPPORTED, "a step after ByteLevel"},
        {"pre_tokenizer",
         "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Isolated\",\"invert\":"
         "true}",
         ENC_ERR_UNSUPPORTED, "pre_tokenizer.invert"},
        {"pre_tokenizer", "null", ENC_ERR_UNSUPPORTED, "pre_tokenizer: missing"},
        {"decoder", "{\"type\":\"WordPiece\"}", ENC_ERR_UNSUPPORTED, "decoder.type \"WordPiece\""},
        {"decoder", "null", ENC_ERR_UNSUPPORTED, "decoder: missing"},
        {"post_processor", "{\"type\":\"RobertaProcessing\"}", ENC_ERR_UNSUPPORTED,
         "post_processor.type \"RobertaProcessing\""},
        {"post_processor",
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":"
         "\"A\"}},{\"SpecialToken\":{\"id\":\"<s>\"}}],\"special_tokens\":{\"<s>\":{\"ids\":[256]}}"
         "}",
         ENC_ERR_FORMAT, "post_processor.special_tokens[\"<s>\"].ids[0]: id 256 is not in"},
        {"truncation", "{\"max_length\":5}", ENC_ERR_UNSUPPORTED, "truncation"},
        {"added_tokens", "[{\"id\":300,\"content\":\"<y>\",\"single_word\":true}]",
         ENC_ERR_UNSUPPORTED, "added_tokens[0].single_word"},
        {"added_tokens", "[{\"id\":300,\"content\":\"\"}]", ENC_ERR_FORMAT,
         "added_tokens[0].content"},
        {"added_tokens", "[{\"id\":-3,\"content\":\"<y>\"}]", ENC_ERR_FORMAT,
         "added_tokens[0].id: id -3"},
        {"added_tokens", "[{\"id\":1e12,\"content\":\"<y>\"}]", ENC_ERR_FORMAT, "out of range"},
        {"model.vocab", "{\"a\":0,\"b\":0}", ENC_ERR_FORMAT, "model.vocab: id 0 is used twice"},
        {"model.vocab", "{\"a\":0,\"a\":1}", ENC_ERR_FORMAT,
         "model.vocab: \"a\" is both id 0 and id 1"},
        {"model.vocab", "{\"a\":0,\"a\\u0000b\":1}", ENC_ERR_FORMAT, "\"a\" is both id 0 and id 1"},
        {"model.vocab", "{\"a\":\"x\"}", ENC_ERR_FORMAT,
         "model.vocab[\"a\"]: the id is not a number"},
        {"model.vocab", "{\"a\":1.5}", ENC_ERR_FORMAT, "is not an integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *root = mini_json(NULL, NULL);
        const char *key = cases[i].key;
        if (strncmp(key, "model.", 6) == 0) set_item(cJSON_GetObjectItem(root, "model"), key + 6, cases[i].json);
        else set_item(root, key, cases[i].json);
        tokenizer *t = (tokenizer *)1;
        enc_status s = mini_load(root, &t);
        CHECK(s == cases[i].want && t == NULL, "case %zu (%s): status %d", i, key, s);
        CHECK(strstr(enc_last_error(), cases[i].field) && strstr(enc_last_error(), "tokenizer.json"),
              "case %zu: message '%s' lacks '%s'", i, enc_last_error(), cases[i].field);
    }
    tokenizer *t;
    CHECK(tokenizer_load_buffer("{\"model\": [", 11, NULL, 0, &t) == ENC_ERR_FORMAT &&
              strstr(enc_last_error(), "not valid JSON"), "bad JSON: %s", enc_last_error());
    /* a value and then more: which of them is the tokenizer? */
    CHECK(tokenizer_load_buffer("{\"model\": null} {\"model\": 1}", 30, NULL, 0, &t) ==
                  ENC_ERR_FORMAT &&
              strstr(enc_last_error(), "more than one value (near byte 16)"),
          "two values: %s", enc_last_error());
    CHECK(tokenizer_load("/nonexistent", &t) == ENC_ERR_IO, "missing directory");
    tokenizer_free(NULL);
}

static void test_config(void)
{
    tokenizer *t;
    cJSON *root = mini_json(NULL, NULL);
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    const char *cfg_bad = "{\"eos_token\": \"<nope>\"}";
    CHECK(tokenizer_load_buffer(json, strlen(json), cfg_bad, strlen(cfg_bad), &t) == ENC_ERR_FORMAT &&
              strstr(enc_last_error(), "tokenizer_config.json: eos_token \"<nope>\""),
          "bad eos: %s", enc_last_error());
    const char *cfg = "{\"eos_token\": {\"content\": \"a\", \"__type\": \"AddedToken\"},"
                      " \"pad_token\": null, \"chat_template\": \"{{ messages }}\"}";
    REQUIRE(tokenizer_load_buffer(json, strlen(json), cfg, strlen(cfg), &t));
    CHECK(tokenizer_eos_id(t) == 'a' && tokenizer_pad_id(t) == -1, "eos as an object");
    CHECK(chat_template_get_family(t) == CHAT_TEMPLATE_UNKNOWN, "unknown family");
    chat_message m = {"user", "hi", NULL, NULL, 0};
    char *out = (char *)1;
    CHECK(chat_template_apply(t, &m, 1, 1, 1, &out) == ENC_ERR_UNSUPPORTED && !out &&
              strstr(enc_last_error(), "raw prompt"), "unknown template: %s", enc_last_error());
    tokenizer_free(t);
    REQUIRE(tokenizer_load_buffer(json, strlen(json), NULL, 0, &t));
    CHECK(chat_template_get_family(t) == CHAT_TEMPLATE_NONE, "no template");
    CHECK(chat_template_apply(t, &m, 1, 1, 1, &out) == ENC_ERR_UNSUPPORTED, "no template: apply");
    int32_t stop[2];
    CHECK(tokenizer_stop_ids(t, stop, 2) == 0, "no stop ids");
    tokenizer_free(t);
    free(json);
}

/* A model directory whose template is in chat_template.jinja (newer Hugging
 * Face repositories) rather than in tokenizer_config.json. */
static void test_jinja_file(const char *dir)
{
    char tmp[] = "/tmp/encore-tok-XXXXXX", path[4096], real[4096];
    if (!mkdtemp(tmp)) return;
    snprintf(path, sizeof path, "%s/tokenizer.json", tmp);
    snprintf(real, sizeof real, "%s/tokenizer.json", dir);
    char *abs = realpath(real, NULL);
    CHECK(abs && symlink(abs, path) == 0, "symlink");
    free(abs);
    const char *files[2][2] = {
        {"tokenizer_config.json", "{\"eos_token\": \"<|im_end|>\"}"},
        {"chat_template.jinja", "<|im_start|><|im_end|><tools><tool_response>reasoning_content"
                                "{{- '<tool_call>\\n{\"name\": \"' }}"
                                "enable_thinking<think>\\n\\n</think>\\n\\n"},
    };
    for (size_t i = 0; i < 2; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", tmp, files[i][0]);
        FILE *f = fopen(p, "w");
        if (f) fputs(files[i][1], f), fclose(f);
    }
    tokenizer *t;
    CHECK(tokenizer_load(tmp, &t) == ENC_OK, "load: %s", enc_last_error());
    if (t) CHECK(chat_template_get_family(t) == CHAT_TEMPLATE_QWEN3, "template from the .jinja file");
    tokenizer_free(t);
    for (size_t i = 0; i < 2; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", tmp, files[i][0]);
        remove(p);
    }
    remove(path);
    rmdir(tmp);
}

static void test_chat_errors(const tokenizer *t)
{
    char *out = (char *)1;
    CHECK(chat_template_apply(t, NULL, 0, 1, 1, &out) == ENC_ERR_INVALID_ARGUMENT && !out, "no messages");
    chat_message bad[] = {{"user", "a", NULL, NULL, 0}, {"robot", "b", NULL, NULL, 0}};
    CHECK(chat_template_apply(t, bad, 2, 1, 1, &out) == ENC_ERR_INVALID_ARGUMENT &&
              strstr(enc_last_error(), "messages[1].role \"robot\""), "bad role: %s", enc_last_error());
    chat_template_opts o = {1, 1, "{\"not\": \"an array\"}", 0};
    CHECK(chat_template_render(t, bad, 1, &o, &out) == ENC_ERR_INVALID_ARGUMENT &&
              strstr(enc_last_error(), "tools_json"), "bad tools: %s", enc_last_error());
    CHECK(chat_template_detect(NULL) == CHAT_TEMPLATE_NONE, "detect NULL");
    CHECK(chat_template_detect("{% for m in messages %}<|im_start|>{% endfor %}") == CHAT_TEMPLATE_UNKNOWN,
          "plain ChatML is not qwen3");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR TEMPLATES_DIR\n", argv[0]);
        return 2;
    }
    tokenizer *t;
    REQUIRE(tokenizer_load(argv[1], &t));
    test_lookups(t);
    test_template_families();
    test_coder_family(argv[2]);
    test_byte_map(t);
    test_invalid_utf8(t);
    test_lossy(t);
    test_stream(t);
    test_decode_errors(t);
    test_regex_semantics(t);
    test_huge_inputs(t);
    test_chat_errors(t);
    tokenizer_free(t);
    test_jinja_file(argv[1]);
    test_mini_bpe();
    test_mini_added();
    test_mini_split();
    test_mini_errors();
    test_config();
    return test_summary("tokenizer_unit");
}
