/* encode.c - text to ids: added tokens, NFC, pre-tokenizer, BPE.
 *
 *   raw text --added tokens with normalized=false (longest match)--> gaps
 *   gap --NFC--> --added tokens with normalized=true--> gaps
 *   gap --pre-tokenizer--> pieces --BPE (cached)--> ids
 *
 * All ids go to the scratch output, copied out once at the end; the scratch
 * buffers grow to the largest input seen and are reused. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tokenizer_impl.h"

/* --- NFC ------------------------------------------------------------------------------ */

enc_status tok__nfc(tokenizer *t, const char *s, size_t n, tok__bytes *out)
{
    tok__scratch *sc = &t->scratch;
    const utf8proc_option_t opt = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    utf8proc_ssize_t k;
    for (;;) {
        k = utf8proc_decompose((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n,
                               sc->cps, (utf8proc_ssize_t)sc->n_cps_cap, opt);
        if (k < 0)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer: NFC: %s",
                            utf8proc_errmsg(k));
        if ((size_t)k <= sc->n_cps_cap) break;
        ENC_TRY(tok__reserve((void **)&sc->cps, &sc->n_cps_cap, 0, (size_t)k,
                             sizeof *sc->cps));
    }
    k = utf8proc_normalize_utf32(sc->cps, k, opt);
    if (k < 0)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer: NFC: %s", utf8proc_errmsg(k));
    out->len = 0;
    ENC_TRY(tok__reserve((void **)&out->data, &out->cap, 0, 4 * (size_t)k + 1, 1));
    for (utf8proc_ssize_t i = 0; i < k; i++)
        out->len += (size_t)utf8proc_encode_char(sc->cps[i], (utf8proc_uint8_t *)out->data + out->len);
    out->data[out->len] = '\0';
    return ENC_OK;
}

/* Text without a code point from U+0300 up (no byte >= 0xCC) is already NFC:
 * nothing below U+0300 decomposes or combines with what precedes it. */
static int tok__nfc_quick(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0xCC) return 0;
    return 1;
}

/* --- added tokens ---------------------------------------------------------------------- */

/* Unicode White_Space (Rust's char::is_whitespace): its length at s, or 0. */
static size_t tok__ws_at(const unsigned char *s, size_t n)
{
    if (n == 0) return 0;
    if ((s[0] >= 0x09 && s[0] <= 0x0D) || s[0] == 0x20) return 1;
    if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (n < 3) return 0;
    uint32_t cp = 0;
    if (s[0] == 0xE1 || s[0] == 0xE2 || s[0] == 0xE3)
        cp = (s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu);
    int ws = cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
             cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
    return ws ? 3 : 0;
}

/* Start of the whitespace run that ends at s[end], not before lo. */
static size_t tok__ws_before(const unsigned char *s, size_t lo, size_t end)
{
    while (end > lo) {
        size_t k = 1;
        while (k < 3 && end - k > lo && (s[end - k] & 0xC0) == 0x80) k++;
        if (tok__ws_at(s + end - k, k) != k) break;
        end -= k;
    }
    return end;
}

/* 1 when bytes [lo, hi) of the text being encoded overlap a plain range. */
static int tok__overlaps_plain(const tokenizer *t, size_t lo, size_t hi)
{
    const tok__scratch *sc = &t->scratch;
    for (size_t k = 0; k < sc->n_plain; k++)
        if (lo < sc->plain[2 * k + 1] && sc->plain[2 * k] < hi) return 1;
    return 0;
}

/* Find the first added token (of the normalized class given) in s[from..n),
 * longest at the leftmost position. The match [*ms, *me) includes the
 * whitespace an lstrip/rstrip token swallows. Returns NULL when none. */
static const tok__added *tok__find_added(const tokenizer *t, int normalized,
                                         const char *s, size_t n, size_t from,
                                         size_t *ms, size_t *me)
{
    const uint8_t *first = t->added_first[normalized];
    const unsigned char *u = (const unsigned char *)s;
    if (normalized && t->scratch.gap_plain) return NULL;
    for (size_t p = from; p < n; p++) {
        if (!first[u[p]]) continue;
        for (size_t i = 0; i < t->n_added; i++) {
            const tok__added *a = &t->added[i];
            if (a->normalized != normalized || a->len > n - p ||
                memcmp(s + p, t->strs.data + a->off, a->len) != 0)
                continue;
            /* the raw class searches the whole text: p is its offset */
            if (!normalized && tok__overlaps_plain(t, p, p + a->len)) continue;
            *ms = a->lstrip ? tok__ws_before(u, from, p) : p;
            *me = p + a->len;
            while (a->rstrip && *me < n) {
                size_t k = tok__ws_at(u + *me, n - *me);
                if (!k) break;
                *me += k;
            }
            return a;
        }
    }
    return NULL;
}

/* --- the pipeline --------------------------------------------------------------------- */

static enc_status tok__encode_plain(tokenizer *t, const char *s, size_t n)
{
    if (n == 0) return ENC_OK;
    tok__pieces *p;
    ENC_TRY(tok__pretokenize(t, s, n, &p));
    for (size_t i = 0; i < p->n; i++)
        ENC_TRY(tok__bpe_piece(t, p->text.data + p->span[i].off, p->span[i].len));
    return ENC_OK;
}

/* Encode s[0..n): gaps between added tokens of one class go to gap(). */
static enc_status tok__encode_split(tokenizer *t, int normalized, const char *s, size_t n,
                                    enc_status (*gap)(tokenizer *, const char *, size_t))
{
    size_t from = 0, ms, me;
    const tok__added *a;
    while ((a = tok__find_added(t, normalized, s, n, from, &ms, &me)) != NULL) {
        ENC_TRY(gap(t, s + from, ms - from));
        ENC_TRY(tok__ids_push(&t->scratch.out, a->id));
        from = me;
    }
    return gap(t, s + from, n - from);
}

/* A gap of the raw text: normalize, then split by normalized added tokens. */
static enc_status tok__encode_section(tokenizer *t, const char *s, size_t n)
{
    if (n == 0) return ENC_OK;
    size_t at = (size_t)(s - t->scratch.plain_base);
    t->scratch.gap_plain = tok__overlaps_plain(t, at, at + n);
    if (t->nfc && !tok__nfc_quick(s, n)) {
        ENC_TRY(tok__nfc(t, s, n, &t->scratch.norm));
        s = t->scratch.norm.data, n = t->scratch.norm.len;
    }
    return tok__encode_split(t, 1, s, n, tok__encode_plain);
}

enc_status tokenizer_encode(tokenizer *t, const char *text, size_t len,
                            int32_t **ids, size_t *n_ids)
{
    return tokenizer_encode_plain(t, text, len, NULL, 0, ids, n_ids);
}

enc_status tokenizer_encode_plain(tokenizer *t, const char *text, size_t len,
                                  const size_t *plain, size_t n_plain, int32_t **ids,
                                  size_t *n_ids)
{
    *ids = NULL;
    *n_ids = 0;
    if (!text && len) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer_encode: text is NULL");
    size_t bad = tok__utf8_check((const unsigned char *)text, len);
    if (bad < len)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer_encode: invalid UTF-8 at "
                        "byte %zu (0x%02X)", bad, (unsigned char)text[bad]);
    if (n_plain && !plain)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer_encode: plain ranges are NULL");
    tok__ids *out = &t->scratch.out;
    out->len = 0;
    const char *s = text ? text : "";
    t->scratch.plain_base = s;
    t->scratch.plain = plain;
    t->scratch.n_plain = n_plain;
    enc_status st = tok__encode_split(t, 0, s, len, tok__encode_section);
    t->scratch.plain = NULL;
    t->scratch.n_plain = 0;
    ENC_TRY(st);
    *ids = malloc((out->len ? out->len : 1) * sizeof **ids);
    if (!*ids) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer_encode: %zu ids", out->len);
    if (out->len) memcpy(*ids, out->data, out->len * sizeof **ids);
    *n_ids = out->len;
    return ENC_OK;
}

void tok__scratch_free(tok__scratch *s)
{
    free(s->cps);
    free(s->norm.data);
    free(s->prefixed.data);
    tok__pieces_free(&s->pieces[0]);
    tok__pieces_free(&s->pieces[1]);
    free(s->sym);
    free(s->heap);
    free(s->out.data);
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    pcre2_jit_stack_free(s->jit_stack);
    memset(s, 0, sizeof *s);
}
