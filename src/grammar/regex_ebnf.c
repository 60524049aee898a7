/* regex_ebnf.c - regular expressions -> EBNF.
 *
 * Supported: literals and escapes (\n \t \r \f \v \0 \xHH \uHHHH, escaped
 * punctuation), . (anything but \n), classes [a-z] [^...] with \d \w \s
 * \D \W \S inside and out, groups ( ) (?: ) (?P<n> ) (?<n> ), |, and the
 * quantifiers * + ? {m} {m,} {m,n} (lazy forms match the same strings). ^
 * and $ only at the very start and end. Refused with the construct named:
 * backreferences, lookaround, word boundaries, inline flags, possessive
 * quantifiers. The translation is structural: the EBNF has the same
 * operators, so each regex item becomes one EBNF item. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/regex_ebnf.h"

typedef struct rx {
    const char *s;
    size_t n, pos;
    const regex_ebnf_mode *mode;
    ebnf_buf *out;
    int depth;
} rx;

static enc_status rx__fail(const rx *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static enc_status rx__fail(const rx *r, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: %s at offset %zu", r->mode->where, msg, r->pos);
}

static int rx__hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* --- characters and classes --------------------------------------------------- */

/* \d \w \s and their negations into r; 0 when e is none of them, -1 when r
 * has no room for their ranges. */
static int rx__shorthand(char e, cp_ranges *r)
{
    cp_ranges t;
    t.n = 0;
    char l = (char)(e | 0x20);
    if (l == 'd')
        cp_ranges_add(&t, '0', '9');
    else if (l == 'w')
        cp_ranges_add(&t, '0', '9'), cp_ranges_add(&t, 'A', 'Z'), cp_ranges_add(&t, '_', '_'),
            cp_ranges_add(&t, 'a', 'z');
    else if (l == 's') /* ECMA-262's WhiteSpace and LineTerminator, as JSON Schema reads it */
        cp_ranges_add(&t, '\t', '\r'), cp_ranges_add(&t, ' ', ' '), cp_ranges_add(&t, 0xA0, 0xA0),
            cp_ranges_add(&t, 0x1680, 0x1680), cp_ranges_add(&t, 0x2000, 0x200A),
            cp_ranges_add(&t, 0x2028, 0x2029), cp_ranges_add(&t, 0x202F, 0x202F),
            cp_ranges_add(&t, 0x205F, 0x205F), cp_ranges_add(&t, 0x3000, 0x3000),
            cp_ranges_add(&t, 0xFEFF, 0xFEFF);
    else
        return 0;
    cp_ranges_normalize(&t, e != l); /* upper case: the complement */
    int full = 0;
    for (int i = 0; i < t.n; i++)
        full |= cp_ranges_add(r, t.lo[i], t.hi[i]) != 0;
    return full ? -1 : 1;
}

/* One UTF-8 character at r->pos. */
static enc_status rx__utf8(rx *r, uint32_t *cp)
{
    size_t i = r->pos;
    int32_t c = ebnf_utf8_next(r->s, r->n, &i);
    if (c < 0) return rx__fail(r, "invalid UTF-8");
    r->pos = i;
    *cp = (uint32_t)c;
    return ENC_OK;
}

/* An escaped single character after the backslash (r->pos at the letter). */
static enc_status rx__escape_char(rx *r, uint32_t *cp)
{
    char e = r->s[r->pos];
    const char *simple = strchr("ntrfv0", e);
    if (e && simple) {
        static const uint32_t v[] = {'\n', '\t', '\r', '\f', '\v', 0};
        *cp = v[simple - "ntrfv0"];
        r->pos++;
        return ENC_OK;
    }
    if (e == 'x' || e == 'u') {
        int nd = e == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int i = 0; i < nd; i++) {
            int h = r->pos + 1 + (size_t)i < r->n ? rx__hexval(r->s[r->pos + 1 + (size_t)i]) : -1;
            if (h < 0) return rx__fail(r, "\\%c needs %d hex digits", e, nd);
            v = v * 16 + (uint32_t)h;
        }
        if (v >= 0xD800 && v <= 0xDFFF) return rx__fail(r, "\\u%04X is a surrogate", v);
        r->pos += 1 + (size_t)nd;
        *cp = v;
        return ENC_OK;
    }
    if (e >= '1' && e <= '9') return rx__fail(r, "backreferences (\\%c) are not supported", e);
    if (strchr("bBAzZGkpPQEK", e) && e) return rx__fail(r, "\\%c is not supported", e);
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
        return rx__fail(r, "unknown escape \\%c", e);
    if (!e || r->pos >= r->n) return rx__fail(r, "a trailing backslash");
    return rx__utf8(r, cp);
}

static enc_status rx__char(rx *r, uint32_t *cp)
{
    if (r->s[r->pos] == '\\') {
        r->pos++;
        return rx__escape_char(r, cp);
    }
    return rx__utf8(r, cp);
}

static enc_status rx__class(rx *r, cp_ranges *cls)
{
    r->pos++; /* '[' */
    int negate = r->pos < r->n && r->s[r->pos] == '^';
    if (negate) r->pos++;
    cls->n = 0;
    int first = 1;
    while (r->pos < r->n && (r->s[r->pos] != ']' || first)) {
        first = 0;
        if (r->s[r->pos] == '[' && r->pos + 1 < r->n && r->s[r->pos + 1] == ':')
            return rx__fail(r, "POSIX classes ([:name:]) are not supported");
        int shorthand =
            r->s[r->pos] == '\\' && r->pos + 1 < r->n ? rx__shorthand(r->s[r->pos + 1], cls) : 0;
        if (shorthand < 0) return rx__fail(r, "a class with more than %d ranges", CP_RANGES_MAX);
        if (shorthand) {
            r->pos += 2;
            continue;
        }
        uint32_t lo, hi;
        ENC_TRY(rx__char(r, &lo));
        hi = lo;
        if (r->pos + 1 < r->n && r->s[r->pos] == '-' && r->s[r->pos + 1] != ']') {
            r->pos++;
            ENC_TRY(rx__char(r, &hi));
            if (hi < lo) return rx__fail(r, "range out of order in a class");
        }
        if (cp_ranges_add(cls, lo, hi))
            return rx__fail(r, "a class with more than %d ranges", CP_RANGES_MAX);
    }
    if (r->pos >= r->n) return rx__fail(r, "unterminated class");
    r->pos++;
    cp_ranges_normalize(cls, negate);
    return ENC_OK;
}

static int rx__has(const cp_ranges *c, uint32_t cp)
{
    for (int i = 0; i < c->n; i++)
        if (cp >= c->lo[i] && cp <= c->hi[i]) return 1;
    return 0;
}

/* A character as it is written inside a JSON string. */
static void rx__json_cp(ebnf_buf *b, uint32_t cp)
{
    static const char esc_from[] = "\"\\\n\t\r\b\f";
    static const char *const esc_to[] = {"\\\"", "\\\\", "\\n", "\\t", "\\r", "\\b", "\\f"};
    const char *f = cp < 0x80 && cp ? strchr(esc_from, (int)cp) : NULL;
    if (f) {
        ebnf_buf_literal(b, esc_to[f - esc_from], 2, "");
    } else if (cp < 0x20) {
        char u[8];
        snprintf(u, sizeof u, "\\u%04X", cp);
        ebnf_buf_literal(b, u, 6, "");
    } else {
        ebnf_buf_literal_cp(b, cp);
    }
}

static void rx__emit_cp(rx *r, uint32_t cp)
{
    if (r->mode->json_string)
        rx__json_cp(r->out, cp);
    else
        ebnf_buf_literal_cp(r->out, cp);
}

/* A class; inside a JSON string the characters that must be escaped there
 * become alternatives of their escapes (control characters other than
 * \n \t \r are left out: the output is a subset, still matching). */
static enc_status rx__emit_class(rx *r, const cp_ranges *cls)
{
    if (!cls->n) return rx__fail(r, "a class that matches nothing");
    if (!r->mode->json_string) {
        ebnf_buf_class(r->out, cls);
        return ENC_OK;
    }
    cp_ranges safe = *cls;
    cp_ranges_normalize(&safe, 1);
    cp_ranges_add(&safe, 0, 0x1F);
    cp_ranges_add(&safe, '"', '"');
    cp_ranges_add(&safe, '\\', '\\');
    cp_ranges_normalize(&safe, 1);
    ebnf_buf_append(r->out, "(", 1);
    const char *sep = "";
    if (safe.n) {
        ebnf_buf_class(r->out, &safe);
        sep = " | ";
    }
    static const uint32_t extra[] = {'"', '\\', '\n', '\t', '\r'};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        if (rx__has(cls, extra[i])) {
            ebnf_buf_printf(r->out, "%s", sep);
            rx__json_cp(r->out, extra[i]);
            sep = " | ";
        }
    if (!*sep) return rx__fail(r, "a class that matches only control characters");
    ebnf_buf_append(r->out, ")", 1);
    return ENC_OK;
}

/* --- structure ----------------------------------------------------------------- */

static enc_status rx__alt(rx *r, int *nullable);

/* *nullable: whether the group can match the empty string. */
static enc_status rx__group(rx *r, int *nullable)
{
    r->pos++; /* '(' */
    if (r->pos < r->n && r->s[r->pos] == '?') {
        const char *t = r->s + r->pos + 1;
        size_t left = r->n - r->pos - 1;
        if (left >= 1 && t[0] == ':')
            r->pos += 2;
        else if ((left >= 2 && t[0] == 'P' && t[1] == '<') ||
                 (left >= 1 && t[0] == '<' && t[1] != '=' && t[1] != '!')) {
            const char *close = memchr(t, '>', left);
            if (!close) return rx__fail(r, "unterminated group name");
            r->pos = (size_t)(close - r->s) + 1;
        } else if (left >= 1 && (t[0] == '=' || t[0] == '!' || t[0] == '<'))
            return rx__fail(r, "lookaround groups are not supported");
        else
            return rx__fail(r, "inline flags and (?...) extensions are not supported");
    }
    if (++r->depth > 100) return rx__fail(r, "groups nested deeper than 100");
    ebnf_buf_append(r->out, "(", 1);
    ENC_TRY(rx__alt(r, nullable));
    if (r->pos >= r->n || r->s[r->pos] != ')') return rx__fail(r, "missing ')'");
    r->pos++;
    r->depth--;
    ebnf_buf_append(r->out, ")", 1);
    return ENC_OK;
}

static enc_status rx__atom(rx *r, int *nullable)
{
    char c = r->s[r->pos];
    cp_ranges cls;
    *nullable = 0;
    if (c == '(') return rx__group(r, nullable);
    if (c == '[') {
        ENC_TRY(rx__class(r, &cls));
        return rx__emit_class(r, &cls);
    }
    if (c == '.') {
        r->pos++;
        cls.n = 0;
        cp_ranges_add(&cls, '\n', '\n');
        cp_ranges_normalize(&cls, 1);
        return rx__emit_class(r, &cls);
    }
    if (c == '\\' && r->pos + 1 < r->n) {
        cls.n = 0;
        if (rx__shorthand(r->s[r->pos + 1], &cls)) {
            r->pos += 2;
            cp_ranges_normalize(&cls, 0);
            return rx__emit_class(r, &cls);
        }
    }
    if (c == '^' || c == '$')
        return rx__fail(r, "'%c' is only supported at the start / end of the pattern", c);
    if (c == '*' || c == '+' || c == '?' || c == '{')
        return rx__fail(r, "'%c' with nothing to repeat", c);
    uint32_t cp;
    ENC_TRY(rx__char(r, &cp));
    rx__emit_cp(r, cp);
    return ENC_OK;
}

static int rx__digits(rx *r, long *v)
{
    size_t start = r->pos;
    *v = 0;
    while (r->pos < r->n && r->s[r->pos] >= '0' && r->s[r->pos] <= '9' && *v <= 100000)
        *v = *v * 10 + (r->s[r->pos++] - '0');
    return r->pos > start;
}

/* A quantifier after an atom, written in the EBNF's syntax. An unbounded
 * repetition of an atom that can match the empty string ((a|)*) would be a
 * rule that reaches itself without consuming input, which the grammar
 * compiler refuses: it is refused here, by name. *nullable: in, whether the
 * atom can match the empty string; out, whether the repeated atom can. */
static enc_status rx__quantifier(rx *r, int *nullable)
{
    char c = r->s[r->pos];
    if ((c == '*' || c == '+') && *nullable)
        return rx__fail(r, "'%c' after a group that can match the empty string (write (a)%c, not (a|)%c)", c, c, c);
    if (c == '*' || c == '?') *nullable = 1;
    if (c == '*' || c == '+' || c == '?') {
        r->pos++;
        ebnf_buf_append(r->out, &c, 1);
    } else {
        size_t save = r->pos;
        long lo, hi = -1;
        r->pos++;
        if (!rx__digits(r, &lo)) { /* not a quantifier: a literal '{' (as in Python) */
            r->pos = save;
            return rx__fail(r, "a '{' that does not start {m}, {m,} or {m,n}");
        }
        int comma = r->pos < r->n && r->s[r->pos] == ',';
        if (comma) r->pos++;
        if (comma && !rx__digits(r, &hi)) hi = -2;
        if (r->pos >= r->n || r->s[r->pos] != '}') return rx__fail(r, "unterminated {m,n}");
        r->pos++;
        if (lo > 1000 || hi > 1000) return rx__fail(r, "repetition bounds above 1000");
        if (hi >= 0 && hi < lo) return rx__fail(r, "{%ld,%ld}: max below min", lo, hi);
        if (hi == -2 && *nullable)
            return rx__fail(r, "{%ld,} after a group that can match the empty string", lo);
        if (lo == 0) *nullable = 1;
        if (!comma)
            ebnf_buf_printf(r->out, "{%ld}", lo);
        else if (hi == -2)
            ebnf_buf_printf(r->out, "{%ld,}", lo);
        else
            ebnf_buf_printf(r->out, "{%ld,%ld}", lo, hi);
    }
    if (r->pos < r->n && r->s[r->pos] == '?')
        r->pos++; /* lazy: the same strings */
    else if (r->pos < r->n && r->s[r->pos] == '+')
        return rx__fail(r, "possessive quantifiers are not supported");
    if (r->pos < r->n && strchr("*+?{", r->s[r->pos]) && r->s[r->pos])
        return rx__fail(r, "a quantifier after a quantifier");
    return ENC_OK;
}

/* An empty branch is the empty literal. *nullable: whether the branch can
 * match the empty string. */
static enc_status rx__concat(rx *r, int *nullable)
{
    int any = 0;
    *nullable = 1;
    while (r->pos < r->n && r->s[r->pos] != '|' && r->s[r->pos] != ')') {
        if (r->depth == 0 && r->s[r->pos] == '$' && r->pos + 1 == r->n) break;
        if (any) ebnf_buf_append(r->out, " ", 1);
        int item_nullable;
        ENC_TRY(rx__atom(r, &item_nullable));
        if (r->pos < r->n && strchr("*+?{", r->s[r->pos]) && r->s[r->pos])
            ENC_TRY(rx__quantifier(r, &item_nullable));
        *nullable = *nullable && item_nullable;
        any = 1;
    }
    if (!any) ebnf_buf_append(r->out, "\"\"", 2);
    return ENC_OK;
}

static enc_status rx__alt(rx *r, int *nullable)
{
    ENC_TRY(rx__concat(r, nullable));
    while (r->pos < r->n && r->s[r->pos] == '|') {
        int branch_nullable;
        r->pos++;
        ebnf_buf_append(r->out, " | ", 3);
        ENC_TRY(rx__concat(r, &branch_nullable));
        *nullable = *nullable || branch_nullable;
    }
    return ENC_OK;
}

/* Whether the pattern has a '|' outside every group (anchors then bind to
 * one branch only, which this translation does not do). */
static int rx__top_level_bar(const char *s, size_t n)
{
    int depth = 0, in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\')
            i++;
        else if (in_class)
            in_class = c != ']';
        else if (c == '[')
            in_class = 1;
        else if (c == '(')
            depth++;
        else if (c == ')')
            depth--;
        else if (c == '|' && depth == 0)
            return 1;
    }
    return 0;
}

enc_status regex_ebnf_expr(const char *regex, const regex_ebnf_mode *mode, ebnf_buf *out)
{
    rx r = {regex, strlen(regex), 0, mode, out, 0};
    int start = r.n && regex[0] == '^';
    int end = r.n > (size_t)start && regex[r.n - 1] == '$' && (r.n < 2 || regex[r.n - 2] != '\\');
    if ((start || end) && rx__top_level_bar(regex, r.n))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "%s: ^ or $ with a top-level '|' is not supported (write ^(a|b)$)",
                        mode->where);
    r.pos = (size_t)start;
    ebnf_buf_append(out, "(", 1);
    if (mode->search && !start) ebnf_buf_printf(out, "%s* ", mode->any_rule);
    ebnf_buf_append(out, "(", 1);
    int nullable;
    ENC_TRY(rx__alt(&r, &nullable));
    if (r.pos < r.n && regex[r.pos] == ')') return rx__fail(&r, "unmatched ')'");
    if (end) r.pos++;
    if (r.pos != r.n) return rx__fail(&r, "unexpected '%c'", regex[r.pos]);
    ebnf_buf_append(out, ")", 1);
    if (mode->search && !end) ebnf_buf_printf(out, " %s*", mode->any_rule);
    ebnf_buf_append(out, ")", 1);
    return ENC_OK;
}

enc_status grammar_regex_to_ebnf(const char *regex, const char *rule_prefix, char **ebnf_out)
{
    *ebnf_out = NULL;
    if (!regex) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "regex: NULL");
    regex_ebnf_mode mode = {0, 0, NULL, "regex"};
    ebnf_buf b = {0};
    ebnf_buf_printf(&b, "%sroot ::= ", rule_prefix ? rule_prefix : "");
    enc_status st = regex_ebnf_expr(regex, &mode, &b);
    if (st != ENC_OK) {
        ebnf_buf_free(&b);
        return st;
    }
    ebnf_buf_append(&b, "\n", 1);
    return ebnf_buf_finish(&b, ebnf_out);
}
