/* decode.c - ids to text, whole or streamed.
 *
 * Each id's bytes were worked out at load time (tokenizer.c); decoding
 * concatenates them and makes the result valid UTF-8 the way Rust's
 * String::from_utf8_lossy does (which is what Hugging Face's ByteLevel decoder
 * calls): every maximal ill-formed subsequence becomes one U+FFFD.
 *
 * The stream keeps back the bytes of a character that may still be completed
 * by the next token (at most 3), so its outputs are always whole characters
 * and add up to exactly the full decode. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"

static const char tok__replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* The bytes of id, or an error naming its position at (SIZE_MAX: a stream). */
static enc_status tok__id_bytes(const tokenizer *t, int32_t id, size_t at,
                                const char **p, size_t *n)
{
    if (id < 0 || id >= t->n_ids || t->tokens[id].kind == TOK__HOLE) {
        if (at == SIZE_MAX)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer stream: id %d is "
                            "not a token (vocabulary size %d)", id, t->n_ids);
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer_decode: ids[%zu] = %d "
                        "is not a token (vocabulary size %d)", at, id, t->n_ids);
    }
    *p = t->strs.data + t->tokens[id].bytes_off;
    *n = t->tokens[id].bytes_len;
    return ENC_OK;
}

/* Length of the ill-formed prefix at s: the longest start of a well-formed
 * sequence (1..3 bytes), or 1 when s[0] can start none. Also says whether
 * that prefix runs to the end of the input (it may yet be completed). */
static size_t tok__bad_len(const unsigned char *s, size_t n, int *at_end)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t want;
    if (c >= 0xC2 && c <= 0xDF) want = 2;
    else if (c == 0xE0) want = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) want = 3;
    else if (c == 0xED) want = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) want = 3;
    else if (c == 0xF0) want = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) want = 4;
    else if (c == 0xF4) want = 4, hi = 0x8F;
    else want = 1;
    size_t i = 1;
    while (i < want && i < n && s[i] >= (i == 1 ? lo : 0x80) && s[i] <= (i == 1 ? hi : 0xBF))
        i++;
    *at_end = want > 1 && i == n;
    return i;
}

/* Append s[0..n) to out as valid UTF-8. With hold, an incomplete character
 * at the end is not converted; its length is returned in *held. */
static enc_status tok__lossy(tok__bytes *out, const unsigned char *s, size_t n,
                             int hold, size_t *held)
{
    size_t i = 0, run = 0; /* run: valid bytes not yet copied, ending at i */
    *held = 0;
    if (n == 0) return ENC_OK; /* s may be NULL */
    while (i < n) {
        size_t k = s[i] < 0x80 ? 1 : tok__utf8_seq_len(s + i, n - i);
        if (k) {
            i += k, run += k;
            continue;
        }
        int at_end;
        size_t bad = tok__bad_len(s + i, n - i, &at_end);
        ENC_TRY(tok__bytes_append(out, s + i - run, run));
        run = 0;
        if (hold && at_end) {
            *held = n - i;
            return ENC_OK;
        }
        ENC_TRY(tok__bytes_append(out, tok__replacement, 3));
        i += bad;
    }
    return tok__bytes_append(out, s + i - run, run);
}

enc_status tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n,
                            int skip_special, char **text)
{
    size_t len;
    return tokenizer_decode_bytes(t, ids, n, skip_special, text, &len);
}

enc_status tokenizer_decode_bytes(const tokenizer *t, const int32_t *ids, size_t n,
                                  int skip_special, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    tok__bytes raw = {0}, out = {0};
    enc_status s = ENC_OK;
    for (size_t i = 0; i < n && s == ENC_OK; i++) {
        const char *p = NULL;
        size_t k = 0;
        s = tok__id_bytes(t, ids[i], i, &p, &k);
        if (s == ENC_OK && !(skip_special && t->tokens[ids[i]].kind == TOK__SPECIAL))
            s = tok__bytes_append(&raw, p, k);
    }
    size_t held;
    if (s == ENC_OK) s = tok__lossy(&out, (const unsigned char *)raw.data, raw.len, 0, &held);
    if (s == ENC_OK) s = tok__bytes_append(&out, "", 0); /* allocates for n == 0 */
    free(raw.data);
    if (s != ENC_OK) {
        free(out.data);
        return s;
    }
    *text = out.data;
    *len = out.len;
    return ENC_OK;
}

/* --- streaming -------------------------------------------------------------------------- */

struct tokenizer_stream {
    const tokenizer *t;
    int skip_special;
    unsigned char held[4]; /* start of a character not yet complete */
    size_t n_held;
    tok__bytes in;  /* held bytes + the new token's bytes */
    tok__bytes out; /* what the last call returned */
};

enc_status tokenizer_stream_create(const tokenizer *t, int skip_special,
                                   tokenizer_stream **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer stream");
    (*out)->t = t;
    (*out)->skip_special = skip_special;
    return ENC_OK;
}

enc_status tokenizer_stream_put(tokenizer_stream *s, int32_t id, const char **text,
                                size_t *len)
{
    const char *p = NULL;
    size_t k = 0, held;
    *text = "";
    *len = 0;
    ENC_TRY(tok__id_bytes(s->t, id, SIZE_MAX, &p, &k));
    if (s->skip_special && s->t->tokens[id].kind == TOK__SPECIAL) k = 0;
    s->in.len = 0;
    s->out.len = 0;
    ENC_TRY(tok__bytes_append(&s->in, s->held, s->n_held));
    ENC_TRY(tok__bytes_append(&s->in, p, k));
    ENC_TRY(tok__lossy(&s->out, (const unsigned char *)s->in.data, s->in.len, 1, &held));
    ENC_TRY(tok__bytes_append(&s->out, "", 0));
    memcpy(s->held, s->in.data + s->in.len - held, held); /* held <= 3 */
    s->n_held = held;
    *text = s->out.data;
    *len = s->out.len;
    return ENC_OK;
}

enc_status tokenizer_stream_flush(tokenizer_stream *s, const char **text, size_t *len)
{
    size_t held;
    *text = "";
    *len = 0;
    s->out.len = 0;
    ENC_TRY(tok__lossy(&s->out, s->held, s->n_held, 0, &held));
    ENC_TRY(tok__bytes_append(&s->out, "", 0));
    s->n_held = 0;
    *text = s->out.data;
    *len = s->out.len;
    return ENC_OK;
}

void tokenizer_stream_destroy(tokenizer_stream *s)
{
    if (!s) return;
    free(s->in.data);
    free(s->out.data);
    free(s);
}
