/* ebnf_parse.c - EBNF text -> compiled grammar (grammar_impl.h).
 *
 * A recursive-descent parser builds rules as lists of alternatives of
 * elements; groups and quantifiers become generated rules (X* is
 * `Q ::= X Q | ""`, right-recursive so that the matcher's stacks stay
 * shallow), character classes become byte sets and UTF-8 sequences. Then
 * every reference is checked to be defined, the rules are checked for left
 * recursion (a rule reaching itself without consuming a byte, which a
 * pushdown matcher cannot run), and everything is laid out flat. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/cp_ranges.h"
#include "grammar/grammar_impl.h"
#include "grammar/utf8_ranges.h"

#define EP_MAX_REPEAT 1000 /* {m,n}: bounds above this are refused */

typedef struct ep_alt {
    uint32_t *e;
    size_t n, cap;
} ep_alt;

typedef struct ep_rule {
    char *name;
    ep_alt *alts;
    size_t n_alts, cap_alts;
    int defined;
    int line, col; /* first use or definition, for messages */
} ep_rule;

typedef struct ep {
    const char *s;
    size_t len, pos;
    int line;
    size_t line_start;
    ep_rule *rules;
    size_t n_rules, cap_rules;
    grammar_byteset *sets;
    size_t n_sets, cap_sets;
    int depth; /* nesting of ( ), against stack exhaustion */
} ep;

/* --- small helpers ----------------------------------------------------------- */

static int ep__col(const ep *p)
{
    return (int)(p->pos - p->line_start) + 1;
}

static enc_status ep__fail(const ep *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static enc_status ep__fail(const ep *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar %d:%d: %s", p->line, ep__col(p), msg);
}

static int ep__grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 8;
    while (c < need)
        c *= 2;
    void *nv = realloc(*v, c * elem);
    if (!nv) return -1;
    *v = nv;
    *cap = c;
    return 0;
}

static enc_status ep__oom(void)
{
    return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar: out of memory");
}

static enc_status ep__push(ep_alt *a, uint32_t e)
{
    if (ep__grow((void **)&a->e, &a->cap, a->n + 1, sizeof *a->e)) return ep__oom();
    a->e[a->n++] = e;
    return ENC_OK;
}

static enc_status ep__new_rule(ep *p, const char *name, size_t name_len, uint32_t *out)
{
    if (ep__grow((void **)&p->rules, &p->cap_rules, p->n_rules + 1, sizeof *p->rules))
        return ep__oom();
    ep_rule *r = &p->rules[p->n_rules];
    memset(r, 0, sizeof *r);
    r->name = malloc(name_len + 1);
    if (!r->name) return ep__oom();
    memcpy(r->name, name, name_len);
    r->name[name_len] = 0;
    r->line = p->line;
    r->col = ep__col(p);
    *out = (uint32_t)p->n_rules++;
    return ENC_OK;
}

/* A generated rule, named after its place for messages. */
static enc_status ep__gen_rule(ep *p, uint32_t *out)
{
    char name[48];
    int n = snprintf(name, sizeof name, "(group at %d:%d)", p->line, ep__col(p));
    return ep__new_rule(p, name, (size_t)n, out);
}

static enc_status ep__new_alt(ep *p, uint32_t rule, ep_alt **out)
{
    ep_rule *r = &p->rules[rule];
    if (ep__grow((void **)&r->alts, &r->cap_alts, r->n_alts + 1, sizeof *r->alts)) return ep__oom();
    *out = &r->alts[r->n_alts++];
    memset(*out, 0, sizeof **out);
    return ENC_OK;
}

static enc_status ep__set(ep *p, const grammar_byteset *s, uint32_t *out)
{
    for (size_t i = 0; i < p->n_sets; i++)
        if (!memcmp(&p->sets[i], s, sizeof *s)) {
            *out = (uint32_t)i;
            return ENC_OK;
        }
    if (ep__grow((void **)&p->sets, &p->cap_sets, p->n_sets + 1, sizeof *p->sets)) return ep__oom();
    p->sets[p->n_sets] = *s;
    *out = (uint32_t)p->n_sets++;
    return ENC_OK;
}

static enc_status ep__byte_range_elem(ep *p, uint8_t lo, uint8_t hi, uint32_t *out)
{
    grammar_byteset s;
    memset(&s, 0, sizeof s);
    for (unsigned b = lo; b <= hi; b++)
        s.bits[b >> 5] |= 1u << (b & 31);
    uint32_t id;
    ENC_TRY(ep__set(p, &s, &id));
    *out = GR_ELEM(GR_BYTES, id);
    return ENC_OK;
}

static void ep__skip_space(ep *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c == '\n') {
            p->pos++;
            p->line++;
            p->line_start = p->pos;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            p->pos++;
        } else if (c == '#') {
            while (p->pos < p->len && p->s[p->pos] != '\n')
                p->pos++;
        } else {
            break;
        }
    }
}

static int ep__is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static size_t ep__name_len(const ep *p, size_t at)
{
    size_t n = 0;
    while (at + n < p->len && ep__is_name_char(p->s[at + n]))
        n++;
    return n;
}

/* Whether a rule definition `name ::=` starts at the current position. */
static int ep__at_definition(ep *p)
{
    size_t n = ep__name_len(p, p->pos);
    if (!n) return 0;
    ep save = *p;
    p->pos += n;
    ep__skip_space(p);
    int yes = p->len - p->pos >= 3 && !memcmp(p->s + p->pos, "::=", 3);
    *p = save;
    return yes;
}

static enc_status ep__rule_by_name(ep *p, const char *name, size_t n, uint32_t *out)
{
    for (size_t i = 0; i < p->n_rules; i++)
        if (strlen(p->rules[i].name) == n && !memcmp(p->rules[i].name, name, n)) {
            *out = (uint32_t)i;
            return ENC_OK;
        }
    return ep__new_rule(p, name, n, out);
}

/* --- characters, literals, classes ----------------------------------------- */

static int ep__hex(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One character of a literal or class (an escape or a UTF-8 sequence) as a
 * code point. */
static enc_status ep__char(ep *p, uint32_t *cp)
{
    if (p->pos >= p->len) return ep__fail(p, "unexpected end of text");
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '\n') return ep__fail(p, "line break inside a literal or class");
    if (c == '\\') {
        if (p->pos + 1 >= p->len) return ep__fail(p, "unexpected end of text after '\\'");
        char e = p->s[p->pos + 1];
        int nhex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (nhex) {
            uint32_t v = 0;
            for (int i = 0; i < nhex; i++) {
                int h =
                    p->pos + 2 + (size_t)i < p->len ? ep__hex(p->s[p->pos + 2 + (size_t)i]) : -1;
                if (h < 0) return ep__fail(p, "\\%c needs %d hex digits", e, nhex);
                v = v * 16 + (uint32_t)h;
            }
            if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
                return ep__fail(p, "\\%c%0*X is not a Unicode scalar value", e, nhex, v);
            p->pos += 2 + (size_t)nhex;
            *cp = v;
            return ENC_OK;
        }
        static const char from[] = "nrt\\\"[]-^/'0";
        static const char to[] = "\n\r\t\\\"[]-^/'\0";
        const char *f = strchr(from, e);
        if (!f || !e) return ep__fail(p, "unknown escape '\\%c'", e);
        *cp = (unsigned char)to[f - from];
        p->pos += 2;
        return ENC_OK;
    }
    int n = c < 0x80             ? 1
            : (c & 0xE0) == 0xC0 ? 2
            : (c & 0xF0) == 0xE0 ? 3
            : (c & 0xF8) == 0xF0 ? 4
                                 : 0;
    if (!n || p->pos + (size_t)n > p->len) return ep__fail(p, "invalid UTF-8 byte 0x%02X", c);
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (int i = 1; i < n; i++) {
        unsigned char d = (unsigned char)p->s[p->pos + (size_t)i];
        if ((d & 0xC0) != 0x80) return ep__fail(p, "invalid UTF-8 sequence");
        v = (v << 6) | (d & 0x3Fu);
    }
    p->pos += (size_t)n;
    *cp = v;
    return ENC_OK;
}

static enc_status ep__literal(ep *p, ep_alt *a)
{
    p->pos++; /* the opening quote */
    while (p->pos < p->len && p->s[p->pos] != '"') {
        uint32_t cp;
        ENC_TRY(ep__char(p, &cp));
        uint8_t b[4];
        int n = utf8_encode(cp, b);
        for (int i = 0; i < n; i++) {
            uint32_t e;
            ENC_TRY(ep__byte_range_elem(p, b[i], b[i], &e));
            ENC_TRY(ep__push(a, e));
        }
    }
    if (p->pos >= p->len) return ep__fail(p, "unterminated literal");
    p->pos++;
    return ENC_OK;
}

typedef struct ep_seq_ctx {
    ep *p;
    uint32_t rule;
    enc_status st;
} ep_seq_ctx;

static int ep__emit_seq(const utf8_seq *s, void *vctx)
{
    ep_seq_ctx *c = vctx;
    ep_alt *a;
    if ((c->st = ep__new_alt(c->p, c->rule, &a)) != ENC_OK) return 1;
    for (int i = 0; i < s->n; i++) {
        uint32_t e;
        if ((c->st = ep__byte_range_elem(c->p, s->lo[i], s->hi[i], &e)) != ENC_OK) return 1;
        if ((c->st = ep__push(a, e)) != ENC_OK) return 1;
    }
    return 0;
}

/* Code point ranges as one element: a byte set when all are ASCII, else a
 * generated rule with one alternative per UTF-8 sequence. */
static enc_status ep__ranges_elem(ep *p, const cp_ranges *r, uint32_t *out)
{
    grammar_byteset ascii;
    memset(&ascii, 0, sizeof ascii);
    int only_ascii = 1, any_ascii = 0;
    for (int i = 0; i < r->n; i++) {
        for (uint32_t c = r->lo[i]; c <= r->hi[i] && c < 0x80; c++)
            ascii.bits[c >> 5] |= 1u << (c & 31), any_ascii = 1;
        if (r->hi[i] >= 0x80) only_ascii = 0;
    }
    uint32_t set;
    if (only_ascii) {
        if (!any_ascii) return ep__fail(p, "empty character class");
        ENC_TRY(ep__set(p, &ascii, &set));
        *out = GR_ELEM(GR_BYTES, set);
        return ENC_OK;
    }
    uint32_t rule;
    ENC_TRY(ep__gen_rule(p, &rule));
    p->rules[rule].defined = 1;
    if (any_ascii) {
        ep_alt *a;
        ENC_TRY(ep__set(p, &ascii, &set));
        ENC_TRY(ep__new_alt(p, rule, &a));
        ENC_TRY(ep__push(a, GR_ELEM(GR_BYTES, set)));
    }
    ep_seq_ctx ctx = {p, rule, ENC_OK};
    for (int i = 0; i < r->n; i++) {
        uint32_t lo = r->lo[i] < 0x80 ? 0x80 : r->lo[i];
        if (r->hi[i] >= 0x80 && utf8_ranges_split(lo, r->hi[i], ep__emit_seq, &ctx)) return ctx.st;
    }
    *out = GR_ELEM(GR_REF, rule);
    return ENC_OK;
}

static enc_status ep__class(ep *p, uint32_t *out)
{
    p->pos++; /* '[' */
    int negate = p->pos < p->len && p->s[p->pos] == '^';
    if (negate) p->pos++;
    cp_ranges r;
    r.n = 0;
    while (p->pos < p->len && p->s[p->pos] != ']') {
        uint32_t lo, hi;
        ENC_TRY(ep__char(p, &lo));
        hi = lo;
        if (p->pos + 1 < p->len && p->s[p->pos] == '-' && p->s[p->pos + 1] != ']') {
            p->pos++;
            ENC_TRY(ep__char(p, &hi));
            if (hi < lo) return ep__fail(p, "range out of order in character class");
        }
        if (cp_ranges_add(&r, lo, hi))
            return ep__fail(p, "character class with more than %d ranges", CP_RANGES_MAX);
    }
    if (p->pos >= p->len) return ep__fail(p, "unterminated character class");
    p->pos++;
    cp_ranges_normalize(&r, negate);
    return ep__ranges_elem(p, &r, out);
}

/* --- expressions ------------------------------------------------------------ */

static enc_status ep__alternatives(ep *p, uint32_t rule);

/* The elements a[from..] as one element (a generated rule unless single). */
static enc_status ep__as_one(ep *p, ep_alt **a, uint32_t rule, size_t alt_i, size_t from,
                             uint32_t *out)
{
    size_t n = (*a)->n - from;
    if (n == 1) {
        *out = (*a)->e[from];
        (*a)->n = from;
        return ENC_OK;
    }
    uint32_t r;
    ENC_TRY(ep__gen_rule(p, &r));
    p->rules[r].defined = 1;
    *a = &p->rules[rule].alts[alt_i]; /* rules may have moved */
    ep_alt *na;
    ENC_TRY(ep__new_alt(p, r, &na));
    *a = &p->rules[rule].alts[alt_i];
    for (size_t i = from; i < (*a)->n; i++)
        ENC_TRY(ep__push(na, (*a)->e[i]));
    (*a)->n = from;
    *out = GR_ELEM(GR_REF, r);
    return ENC_OK;
}

/* A new generated rule whose first alternative starts with x. */
static enc_status ep__rule_with(ep *p, uint32_t x, uint32_t *q, ep_alt **a)
{
    ENC_TRY(ep__gen_rule(p, q));
    p->rules[*q].defined = 1;
    ENC_TRY(ep__new_alt(p, *q, a));
    return ep__push(*a, x);
}

/* Q ::= X Q | "" ; returns REF Q. */
static enc_status ep__star_rule(ep *p, uint32_t x, uint32_t *out)
{
    uint32_t q;
    ep_alt *a;
    ENC_TRY(ep__rule_with(p, x, &q, &a));
    ENC_TRY(ep__push(a, GR_ELEM(GR_REF, q)));
    ENC_TRY(ep__new_alt(p, q, &a));
    *out = GR_ELEM(GR_REF, q);
    return ENC_OK;
}

/* O_k ::= X O_{k-1} | "" (O_1 ::= X | ""): up to k more copies of X. */
static enc_status ep__upto_rule(ep *p, uint32_t x, int k, uint32_t *out)
{
    uint32_t prev = 0;
    for (int i = 1; i <= k; i++) {
        uint32_t q;
        ep_alt *a;
        ENC_TRY(ep__rule_with(p, x, &q, &a));
        if (i > 1) ENC_TRY(ep__push(a, prev));
        ENC_TRY(ep__new_alt(p, q, &a));
        prev = GR_ELEM(GR_REF, q);
    }
    *out = prev;
    return ENC_OK;
}

static enc_status ep__int(ep *p, int *v)
{
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
        return ep__fail(p, "expected a number");
    long n = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        n = n * 10 + (p->s[p->pos++] - '0');
        if (n > EP_MAX_REPEAT) return ep__fail(p, "repetition bound above %d", EP_MAX_REPEAT);
    }
    *v = (int)n;
    return ENC_OK;
}

/* {m}, {m,}, {m,n} after the '{'; max -1 when unbounded. */
static enc_status ep__bounds(ep *p, int *min, int *max)
{
    ep__skip_space(p);
    ENC_TRY(ep__int(p, min));
    ep__skip_space(p);
    *max = *min;
    if (p->pos < p->len && p->s[p->pos] == ',') {
        p->pos++;
        ep__skip_space(p);
        *max = -1;
        if (p->pos < p->len && p->s[p->pos] != '}') {
            ENC_TRY(ep__int(p, max));
            ep__skip_space(p);
            if (*max < *min) return ep__fail(p, "repetition {%d,%d}: max below min", *min, *max);
        }
    }
    if (p->pos >= p->len || p->s[p->pos] != '}')
        return ep__fail(p, "expected '}' closing a repetition");
    p->pos++;
    return ENC_OK;
}

static enc_status ep__quantify(ep *p, uint32_t rule, size_t alt_i, size_t from)
{
    char q = p->s[p->pos];
    int min, max;
    p->pos++;
    if (q == '*')
        min = 0, max = -1;
    else if (q == '+')
        min = 1, max = -1;
    else if (q == '?')
        min = 0, max = 1;
    else
        ENC_TRY(ep__bounds(p, &min, &max));
    ep_alt *a = &p->rules[rule].alts[alt_i];
    if (a->n == from) return ENC_OK; /* an empty literal repeated is still empty */
    uint32_t x, tail;
    ENC_TRY(ep__as_one(p, &a, rule, alt_i, from, &x));
    for (int i = 0; i < min; i++)
        ENC_TRY(ep__push(&p->rules[rule].alts[alt_i], x));
    if (max == min) return ENC_OK;
    if (max < 0)
        ENC_TRY(ep__star_rule(p, x, &tail));
    else
        ENC_TRY(ep__upto_rule(p, x, max - min, &tail));
    return ep__push(&p->rules[rule].alts[alt_i], tail);
}

static enc_status ep__item(ep *p, uint32_t rule, size_t alt_i)
{
    char c = p->s[p->pos];
    ep_alt *a = &p->rules[rule].alts[alt_i];
    uint32_t e;
    if (c == '"') return ep__literal(p, a);
    if (c == '[') {
        ENC_TRY(ep__class(p, &e));
        return ep__push(&p->rules[rule].alts[alt_i], e);
    }
    if (c == '.') {
        cp_ranges r;
        r.n = 0;
        p->pos++;
        cp_ranges_normalize(&r, 1);
        ENC_TRY(ep__ranges_elem(p, &r, &e));
        return ep__push(&p->rules[rule].alts[alt_i], e);
    }
    if (c == '(') {
        if (++p->depth > 200) return ep__fail(p, "groups nested deeper than 200");
        p->pos++;
        uint32_t g;
        ENC_TRY(ep__gen_rule(p, &g));
        p->rules[g].defined = 1;
        ENC_TRY(ep__alternatives(p, g));
        if (p->pos >= p->len || p->s[p->pos] != ')') return ep__fail(p, "expected ')'");
        p->pos++;
        p->depth--;
        return ep__push(&p->rules[rule].alts[alt_i], GR_ELEM(GR_REF, g));
    }
    size_t n = ep__name_len(p, p->pos);
    if (n) {
        uint32_t r;
        ENC_TRY(ep__rule_by_name(p, p->s + p->pos, n, &r));
        p->pos += n;
        return ep__push(&p->rules[rule].alts[alt_i], GR_ELEM(GR_REF, r));
    }
    return ep__fail(p, "unexpected character '%c'", c);
}

static enc_status ep__sequence(ep *p, uint32_t rule)
{
    ep_alt *a;
    ENC_TRY(ep__new_alt(p, rule, &a));
    size_t alt_i = p->rules[rule].n_alts - 1;
    for (;;) {
        ep__skip_space(p);
        if (p->pos >= p->len) return ENC_OK;
        char c = p->s[p->pos];
        if (c == '|' || c == ')') return ENC_OK;
        if (ep__at_definition(p)) return ENC_OK;
        size_t from = p->rules[rule].alts[alt_i].n;
        ENC_TRY(ep__item(p, rule, alt_i));
        ep__skip_space(p);
        if (p->pos < p->len && p->s[p->pos] && strchr("*+?{", p->s[p->pos])) {
            ENC_TRY(ep__quantify(p, rule, alt_i, from));
            ep__skip_space(p);
            if (p->pos < p->len && p->s[p->pos] && strchr("*+?{", p->s[p->pos]))
                return ep__fail(p, "two repetition operators in a row (use a group)");
        }
    }
}

static enc_status ep__alternatives(ep *p, uint32_t rule)
{
    ENC_TRY(ep__sequence(p, rule));
    while (p->pos < p->len && p->s[p->pos] == '|') {
        p->pos++;
        ENC_TRY(ep__sequence(p, rule));
    }
    return ENC_OK;
}

static enc_status ep__definitions(ep *p)
{
    for (;;) {
        ep__skip_space(p);
        if (p->pos >= p->len) return ENC_OK;
        size_t n = ep__name_len(p, p->pos);
        if (!n) return ep__fail(p, "expected a rule name");
        uint32_t r;
        ENC_TRY(ep__rule_by_name(p, p->s + p->pos, n, &r));
        if (p->rules[r].defined) return ep__fail(p, "rule '%s' defined twice", p->rules[r].name);
        p->rules[r].defined = 1;
        p->rules[r].line = p->line;
        p->rules[r].col = ep__col(p);
        p->pos += n;
        ep__skip_space(p);
        if (p->len - p->pos < 3 || memcmp(p->s + p->pos, "::=", 3))
            return ep__fail(p, "expected '::='");
        p->pos += 3;
        ENC_TRY(ep__alternatives(p, r));
        if (p->pos < p->len && p->s[p->pos] == ')') return ep__fail(p, "unmatched ')'");
    }
}

/* --- checks and layout ------------------------------------------------------- */

static enc_status ep__check_defined(const ep *p)
{
    for (size_t i = 0; i < p->n_rules; i++)
        if (!p->rules[i].defined)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar %d:%d: undefined rule '%s'",
                            p->rules[i].line, p->rules[i].col, p->rules[i].name);
    return ENC_OK;
}

static void ep__nullable(const ep *p, uint8_t *nullable)
{
    memset(nullable, 0, p->n_rules);
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t r = 0; r < p->n_rules; r++) {
            if (nullable[r]) continue;
            for (size_t a = 0; a < p->rules[r].n_alts && !nullable[r]; a++) {
                const ep_alt *alt = &p->rules[r].alts[a];
                size_t i = 0;
                while (i < alt->n && GR_KIND(alt->e[i]) == GR_REF && nullable[GR_ARG(alt->e[i])])
                    i++;
                if (i == alt->n) nullable[r] = 1, changed = 1;
            }
        }
    }
}

/* Depth-first over "r can start with s" edges; a back edge is left recursion. */
static enc_status ep__left_dfs(const ep *p, uint32_t r, const uint8_t *nullable, uint8_t *color,
                               int depth)
{
    if (depth > 10000)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar: rules nested too deeply");
    color[r] = 1;
    for (size_t a = 0; a < p->rules[r].n_alts; a++) {
        const ep_alt *alt = &p->rules[r].alts[a];
        for (size_t i = 0; i < alt->n && GR_KIND(alt->e[i]) == GR_REF; i++) {
            uint32_t s = GR_ARG(alt->e[i]);
            if (color[s] == 1)
                return enc_fail(
                    ENC_ERR_INVALID_ARGUMENT,
                    "grammar %d:%d: rule '%s' is left-recursive (it can reach itself without "
                    "consuming input)",
                    p->rules[s].line, p->rules[s].col, p->rules[s].name);
            if (color[s] == 0) ENC_TRY(ep__left_dfs(p, s, nullable, color, depth + 1));
            if (!nullable[s]) break;
        }
    }
    color[r] = 2;
    return ENC_OK;
}

static enc_status ep__check_left_recursion(const ep *p)
{
    uint8_t *nullable = malloc(p->n_rules), *color = calloc(p->n_rules, 1);
    enc_status st = (!nullable || !color) ? ep__oom() : ENC_OK;
    if (st == ENC_OK) ep__nullable(p, nullable);
    for (size_t r = 0; r < p->n_rules && st == ENC_OK; r++)
        if (!color[r]) st = ep__left_dfs(p, (uint32_t)r, nullable, color, 0);
    free(nullable);
    free(color);
    return st;
}

static enc_status ep__layout(const ep *p, grammar *g)
{
    size_t n_alts = 0, n_elems = 0;
    for (size_t r = 0; r < p->n_rules; r++) {
        n_alts += p->rules[r].n_alts;
        for (size_t a = 0; a < p->rules[r].n_alts; a++)
            n_elems += p->rules[r].alts[a].n + 1;
    }
    if (n_elems >= GR_ARG(~0u) || p->n_rules >= GR_ARG(~0u))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar: too large");
    g->elems = malloc(n_elems * sizeof *g->elems);
    g->alts = malloc((n_alts ? n_alts : 1) * sizeof *g->alts);
    g->rule_alt = malloc((p->n_rules + 1) * sizeof *g->rule_alt);
    g->sets = malloc((p->n_sets ? p->n_sets : 1) * sizeof *g->sets);
    if (!g->elems || !g->alts || !g->rule_alt || !g->sets) return ep__oom();
    if (p->n_sets) memcpy(g->sets, p->sets, p->n_sets * sizeof *g->sets);
    g->n_sets = (uint32_t)p->n_sets;
    g->n_rules = (uint32_t)p->n_rules;
    g->n_elems = (uint32_t)n_elems;
    size_t ai = 0, ei = 0;
    for (size_t r = 0; r < p->n_rules; r++) {
        g->rule_alt[r] = (uint32_t)ai;
        for (size_t a = 0; a < p->rules[r].n_alts; a++) {
            const ep_alt *alt = &p->rules[r].alts[a];
            g->alts[ai++] = (uint32_t)ei;
            if (alt->n) memcpy(g->elems + ei, alt->e, alt->n * sizeof *alt->e);
            ei += alt->n;
            g->elems[ei++] = GR_ELEM(GR_END, 0);
        }
    }
    g->rule_alt[p->n_rules] = (uint32_t)ai;
    return ENC_OK;
}

static void ep__free(ep *p)
{
    for (size_t r = 0; r < p->n_rules; r++) {
        for (size_t a = 0; a < p->rules[r].n_alts; a++)
            free(p->rules[r].alts[a].e);
        free(p->rules[r].alts);
        free(p->rules[r].name);
    }
    free(p->rules);
    free(p->sets);
}

static enc_status ep__find_root(ep *p, const char *root, uint32_t *out)
{
    for (size_t i = 0; i < p->n_rules; i++)
        if (!strcmp(p->rules[i].name, root)) {
            *out = (uint32_t)i;
            return ENC_OK;
        }
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar: no rule named '%s' (the root rule)", root);
}

enc_status grammar_compile(const char *ebnf, size_t len, const char *root_rule, grammar **out)
{
    *out = NULL;
    if (!ebnf) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar: no text");
    ep p;
    memset(&p, 0, sizeof p);
    p.s = ebnf;
    p.len = len;
    p.line = 1;
    grammar *g = calloc(1, sizeof *g);
    enc_status st = g ? ENC_OK : ep__oom();
    if (g) pthread_mutex_init(&g->lock, NULL);
    if (st == ENC_OK) st = ep__definitions(&p);
    if (st == ENC_OK) st = ep__check_defined(&p);
    if (st == ENC_OK) st = ep__find_root(&p, root_rule ? root_rule : "root", &g->root);
    if (st == ENC_OK) st = ep__check_left_recursion(&p);
    if (st == ENC_OK) st = ep__layout(&p, g);
    ep__free(&p);
    if (st != ENC_OK) {
        grammar_free(g);
        return st;
    }
    *out = g;
    return ENC_OK;
}
