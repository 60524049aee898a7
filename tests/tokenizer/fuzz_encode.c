/* fuzz_encode.c - libFuzzer target: encode, decode and the JSON helpers.
 *
 * Uses the real Qwen3 tokenizer from $ENCORE_TOKENIZER_DIR (or the directory
 * compiled in as ENCORE_FUZZ_TOKENIZER_DIR). For every input:
 *   - valid UTF-8 encodes, and decode(encode(s)) == NFC(s), also streamed;
 *   - invalid UTF-8 is refused with ENC_ERR_INVALID_ARGUMENT;
 *   - with a plain range over all of it (tokenizer_encode_plain) no added
 *     token is matched and the ids decode to NFC(s);
 *   - the JSON helpers (unquote, tojson) return a status on it, never crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef ENCORE_FUZZ_TOKENIZER_DIR
#define ENCORE_FUZZ_TOKENIZER_DIR "build/tokenizer/qwen3"
#endif

static tokenizer *fuzz_tokenizer(void)
{
    static tokenizer *t;
    if (t) return t;
    const char *dir = getenv("ENCORE_TOKENIZER_DIR");
    if (tokenizer_load(dir ? dir : ENCORE_FUZZ_TOKENIZER_DIR, &t) != ENC_OK) {
        fprintf(stderr, "fuzz_encode: %s\n", enc_last_error());
        abort();
    }
    return t;
}

static int fuzz_valid_utf8(const uint8_t *s, size_t n)
{
    utf8proc_int32_t cp;
    for (size_t i = 0; i < n;) {
        utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* The stream's outputs, concatenated, equal want. */
static void fuzz_check_stream(const tokenizer *t, const int32_t *ids, size_t n,
                              const char *want, size_t n_want)
{
    tokenizer_stream *s;
    if (tokenizer_stream_create(t, 0, &s) != ENC_OK) abort();
    size_t at = 0;
    for (size_t i = 0; i <= n; i++) {
        const char *piece;
        size_t k;
        enc_status st = i < n ? tokenizer_stream_put(s, ids[i], &piece, &k)
                              : tokenizer_stream_flush(s, &piece, &k);
        if (st != ENC_OK || at + k > n_want || memcmp(want + at, piece, k) != 0) abort();
        at += k;
    }
    if (at != n_want) abort();
    tokenizer_stream_destroy(s);
}

static void fuzz_roundtrip(tokenizer *t, const uint8_t *data, size_t size)
{
    int32_t *ids;
    size_t n_ids;
    enc_status s = tokenizer_encode(t, (const char *)data, size, &ids, &n_ids);
    if (!fuzz_valid_utf8(data, size)) {
        if (s != ENC_ERR_INVALID_ARGUMENT) abort();
        return;
    }
    if (s != ENC_OK) abort();
    char *text;
    size_t len;
    if (tokenizer_decode_bytes(t, ids, n_ids, 0, &text, &len) != ENC_OK) abort();
    /* NFC by utf8proc on the whole text: the same as NFC section by section
     * unless an added token sits right before a combining mark. */
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t n_nfc = utf8proc_map(data, (utf8proc_ssize_t)size, &nfc,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n_nfc >= 0 && !memchr(data, '<', size) &&
        ((size_t)n_nfc != len || memcmp(nfc, text, len) != 0))
        abort();
    fuzz_check_stream(t, ids, n_ids, text, len);
    free(nfc);
    free(text);
    free(ids);
}

/* With one plain range over all of valid UTF-8 text no added token is
 * matched, so the text is one section: its ids decode to NFC of it. A range
 * over part of it encodes too. */
static void fuzz_plain(tokenizer *t, const uint8_t *data, size_t size)
{
    if (!fuzz_valid_utf8(data, size)) return;
    size_t all[2] = {0, size}, part[2] = {size / 3, 2 * size / 3};
    int32_t *ids;
    size_t n_ids;
    if (tokenizer_encode_plain(t, (const char *)data, size, part, 1, &ids, &n_ids) != ENC_OK)
        abort();
    free(ids);
    if (tokenizer_encode_plain(t, (const char *)data, size, all, 1, &ids, &n_ids) != ENC_OK)
        abort();
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] >= 151643) abort(); /* Qwen3's added tokens are 151643 and up */
    char *text;
    size_t len;
    if (tokenizer_decode_bytes(t, ids, n_ids, 0, &text, &len) != ENC_OK) abort();
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t n_nfc = utf8proc_map(data, (utf8proc_ssize_t)size, &nfc,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n_nfc >= 0 && ((size_t)n_nfc != len || memcmp(nfc, text, len) != 0)) abort();
    free(nfc);
    free(text);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tokenizer *t = fuzz_tokenizer();
    fuzz_roundtrip(t, data, size);
    fuzz_plain(t, data, size);
    char *out;
    size_t n;
    if (tokenizer_json_unquote((const char *)data, size, &out, &n) == ENC_OK) free(out);
    if (chat_template_tojson((const char *)data, size, &out) == ENC_OK) free(out);
    return 0;
}
