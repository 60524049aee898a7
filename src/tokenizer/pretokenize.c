/* pretokenize.c - the pre-tokenizer: regex splitting and the byte-level map.
 *
 * A section of normalized text goes through the steps of tokenizer.json's
 * pre_tokenizer in order; each step turns a list of pieces into a new list:
 *
 *   Split(regex, Isolated)   every match and every gap between matches is a piece
 *   Split(regex, Removed)    only the gaps are pieces
 *   ByteLevel                ' ' prepended if add_prefix_space, then (use_regex)
 *                            split with GPT-2's regex, Isolated
 *
 * Pieces are spans of a buffer, double-buffered in the tokenizer's scratch.
 * The byte-to-unicode map itself is never applied to text: BPE starts from
 * the id of each byte's one-character token (tokenizer.c fills byte_id[]).
 *
 * Regexes run on PCRE2 with JIT. Hugging Face runs them on Oniguruma, whose
 * \s is Unicode's White_Space; PCRE2's \s also matches U+180E, so \s and \S
 * are rewritten into explicit White_Space classes before compiling. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"

/* --- bytes_to_unicode (GPT-2) ------------------------------------------------------ */

/* Printable Latin-1 bytes map to themselves; the other 68 bytes, in order, to
 * U+0100.. so that every byte is a visible character. */
#define R4(b) b, b + 1, b + 2, b + 3
#define R16(b) R4(b), R4(b + 4), R4(b + 8), R4(b + 12)
const uint16_t tok__byte_to_cp[256] = {
    /* 0x00-0x20 -> U+0100-U+0120 */
    R16(0x100), R16(0x110), 0x120,
    /* 0x21-0x7E -> themselves */
    0x21, 0x22, 0x23, R4(0x24), R4(0x28), R4(0x2C), R16(0x30), R16(0x40), R16(0x50),
    R16(0x60), R4(0x70), R4(0x74), R4(0x78), 0x7C, 0x7D, 0x7E,
    /* 0x7F-0xA0 -> U+0121-U+0142 */
    R16(0x121), R16(0x131), 0x141, 0x142,
    /* 0xA1-0xAC -> themselves */
    0xA1, 0xA2, 0xA3, R4(0xA4), R4(0xA8), 0xAC,
    /* 0xAD -> U+0143 */
    0x143,
    /* 0xAE-0xFF -> themselves */
    0xAE, 0xAF, R16(0xB0), R16(0xC0), R16(0xD0), R16(0xE0), R16(0xF0),
};
#undef R16
#undef R4

int tok__cp_to_byte(uint32_t cp)
{
    if (cp >= 0x21 && cp <= 0x7E) return (int)cp;
    if ((cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) return (int)cp;
    if (cp >= 0x100 && cp <= 0x120) return (int)(cp - 0x100);
    if (cp >= 0x121 && cp <= 0x142) return (int)(cp - 0x121 + 0x7F);
    if (cp == 0x143) return 0xAD;
    return -1;
}

/* --- compiling ------------------------------------------------------------------ */

/* Unicode White_Space, as a class body (Oniguruma's \s). */
#define TOK__WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}" \
                "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

/* Copy pattern with \s and \S replaced by White_Space classes. Tracks
 * character classes (where the replacement must not add brackets) and \Q..\E
 * quoting; everything else is copied as is. */
static enc_status tok__rewrite(const char *p, tok__bytes *out)
{
    int in_class = 0;
    size_t n = strlen(p);
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        size_t copy = 1;
        if (p[i] == '\\' && i + 1 < n) {
            copy = 2;
            if (p[i + 1] == 's') rep = in_class ? TOK__WS : "[" TOK__WS "]";
            else if (p[i + 1] == 'S') rep = in_class ? "\\S\\x{180E}" : "[\\S\\x{180E}]";
            else if (p[i + 1] == 'Q') { /* literal up to \E */
                const char *e = strstr(p + i + 2, "\\E");
                copy = e ? (size_t)(e - (p + i)) + 2 : n - i;
            }
        } else if (in_class && p[i] == '[' && p[i + 1] == ':') { /* [:alpha:] */
            const char *e = strstr(p + i + 2, ":]");
            copy = e ? (size_t)(e - (p + i)) + 2 : 1;
        } else if (!in_class && p[i] == '[') {
            in_class = 1;
            if (p[i + 1] == '^') copy++;
            if (p[i + copy] == ']') copy++; /* a leading ']' is literal */
        } else if (in_class && p[i] == ']') {
            in_class = 0;
        }
        if (rep) ENC_TRY(tok__bytes_append(out, rep, strlen(rep)));
        else ENC_TRY(tok__bytes_append(out, p + i, copy));
        i += copy - 1;
    }
    return ENC_OK;
}

enc_status tok__regex_compile(const char *pattern, int literal, const char *field,
                              pcre2_code **out)
{
    *out = NULL;
    tok__bytes src = {0};
    enc_status s = literal ? tok__bytes_append(&src, pattern, strlen(pattern))
                           : tok__rewrite(pattern, &src);
    if (s != ENC_OK) {
        free(src.data);
        return s;
    }
    int err;
    PCRE2_SIZE at;
    uint32_t opt = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP); /* LITERAL refuses UCP */
    *out = pcre2_compile((PCRE2_SPTR)src.data, src.len, opt, &err, &at, NULL);
    free(src.data);
    if (!*out) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: cannot compile the regex: %s",
                        field, (const char *)msg);
    }
    /* JIT when the platform has it; the interpreter gives the same matches. */
    (void)pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE);
    return ENC_OK;
}

/* --- splitting -------------------------------------------------------------------- */

static enc_status tok__piece_push(tok__pieces *p, const char *s, size_t n)
{
    if (n == 0) return ENC_OK; /* empty pieces are dropped, as in Hugging Face */
    ENC_TRY(tok__reserve((void **)&p->span, &p->cap, p->n, 1, sizeof *p->span));
    p->span[p->n].off = p->text.len;
    p->span[p->n].len = n;
    p->n++;
    return tok__bytes_append(&p->text, s, n);
}

static enc_status tok__match_setup(tok__scratch *sc)
{
    if (sc->md) return ENC_OK;
    sc->md = pcre2_match_data_create(1, NULL);
    sc->mctx = pcre2_match_context_create(NULL);
    sc->jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
    if (!sc->md || !sc->mctx || !sc->jit_stack)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer: regex match data");
    pcre2_jit_stack_assign(sc->mctx, NULL, sc->jit_stack);
    return ENC_OK;
}

/* Split s[0..n) by re into out: matches (unless remove) and the gaps. An
 * empty match splits a gap but adds no piece; the search then moves on by
 * one character (Oniguruma's find_iter). */
static enc_status tok__split(tok__scratch *sc, const pcre2_code *re, int remove,
                             const char *s, size_t n, tok__pieces *out)
{
    size_t last = 0, from = 0;
    while (from <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, sc->md,
                             sc->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return enc_fail(ENC_ERR_UNSUPPORTED, "tokenizer: the pre-tokenizer regex "
                            "failed at byte %zu of a %zu-byte piece: %s", from, n,
                            (const char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(sc->md);
        size_t ms = ov[0], me = ov[1];
        ENC_TRY(tok__piece_push(out, s + last, ms - last));
        if (!remove) ENC_TRY(tok__piece_push(out, s + ms, me - ms));
        last = me;
        if (me > ms) {
            from = me;
        } else if (ms < n) {
            size_t k = tok__utf8_seq_len((const unsigned char *)s + ms, n - ms);
            from = ms + (k ? k : 1);
        } else {
            break;
        }
    }
    return tok__piece_push(out, s + last, n - last);
}

static enc_status tok__apply_step(tokenizer *t, const tok__step *st,
                                  const tok__pieces *in, tok__pieces *out)
{
    tok__scratch *sc = &t->scratch;
    tok__bytes *tmp = &sc->prefixed;
    out->n = 0;
    out->text.len = 0;
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->text.data + in->span[i].off;
        size_t n = in->span[i].len;
        if (st->add_prefix_space && s[0] != ' ') {
            tmp->len = 0;
            ENC_TRY(tok__bytes_append(tmp, " ", 1));
            ENC_TRY(tok__bytes_append(tmp, s, n));
            s = tmp->data, n = tmp->len;
        }
        if (st->re) ENC_TRY(tok__split(sc, st->re, st->remove, s, n, out));
        else ENC_TRY(tok__piece_push(out, s, n));
    }
    return ENC_OK;
}

enc_status tok__pretokenize(tokenizer *t, const char *s, size_t n, tok__pieces **out)
{
    tok__scratch *sc = &t->scratch;
    ENC_TRY(tok__match_setup(sc));
    tok__pieces *cur = &sc->pieces[0], *next = &sc->pieces[1];
    cur->n = 0;
    cur->text.len = 0;
    ENC_TRY(tok__piece_push(cur, s, n));
    for (size_t i = 0; i < t->n_steps; i++) {
        const tok__step *st = &t->steps[i];
        if (!st->re && !st->add_prefix_space) continue; /* the identity */
        ENC_TRY(tok__apply_step(t, st, cur, next));
        tok__pieces *x = cur;
        cur = next, next = x;
    }
    *out = cur;
    return ENC_OK;
}

void tok__pieces_free(tok__pieces *p)
{
    free(p->text.data);
    free(p->span);
    memset(p, 0, sizeof *p);
}
