/* util.c - growable buffers, hashing and UTF-8 checks for the tokenizer layer. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"

enc_status tok__reserve(void **data, size_t *cap, size_t len, size_t n,
                        size_t elem)
{
    if (n <= *cap - len) return ENC_OK;
    size_t want = len + n;
    if (want < len || want > SIZE_MAX / elem / 2)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer: buffer too large");
    size_t new_cap = *cap ? *cap : 64;
    while (new_cap < want) new_cap *= 2;
    void *p = realloc(*data, new_cap * elem);
    if (!p)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY,
                        "tokenizer: out of memory (%zu bytes)", new_cap * elem);
    *data = p;
    *cap = new_cap;
    return ENC_OK;
}

enc_status tok__bytes_append(tok__bytes *b, const void *p, size_t n)
{
    ENC_TRY(tok__reserve((void **)&b->data, &b->cap, b->len, n + 1, 1));
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0'; /* room was reserved: always NUL-terminated */
    return ENC_OK;
}

enc_status tok__ids_push(tok__ids *a, int32_t id)
{
    ENC_TRY(tok__reserve((void **)&a->data, &a->cap, a->len, 1, sizeof *a->data));
    a->data[a->len++] = id;
    return ENC_OK;
}

/* FNV-1a, 64-bit, finished with a multiply-xorshift so that the low bits
 * (the table index) depend on every byte. */
uint64_t tok__hash(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3u;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93u;
    h ^= h >> 32;
    return h;
}

/* Unicode's table 3-7 of well-formed UTF-8 byte sequences. */
size_t tok__utf8_seq_len(const unsigned char *s, size_t n)
{
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F; /* no surrogates */
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

size_t tok__utf8_check(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        size_t k = tok__utf8_seq_len(s + i, n - i);
        if (!k) return i;
        i += k;
    }
    return n;
}
