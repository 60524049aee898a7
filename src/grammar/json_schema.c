/* json_schema.c - JSON Schema -> EBNF.
 *
 * Each schema node becomes one rule <prefix>s<N>; a $ref target gets its rule
 * once (recursion allowed). The output's layout is fixed: properties in the
 * schema's order, one space after ':' and ',', no other whitespace. Every
 * keyword is either handled, ignored as an annotation, or refused with its
 * name and JSON pointer; nothing is silently dropped. The supported subset is
 * listed in docs/STRUCTURED_OUTPUTS.md. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_exact.h"
#include "base/json_whole.h"
#include "grammar/ebnf_builtin.h"
#include "grammar/json_schema_formats.h"
#include "grammar/regex_ebnf.h"

#define JS_MAX_DEPTH 64
#define JS_MAX_COUNT 1000               /* minItems, maxItems, minLength, maxLength */
#define JS_INT_LIMIT 1000000000000000LL /* integer bounds within +-10^15 */

typedef struct js_ref {
    char *ptr; /* "#/$defs/x" */
    int rule;
    int open;   /* its target is being compiled */
    int guards; /* js.guards when it opened */
} js_ref;

typedef struct js {
    const char *prefix;
    const cJSON *root;
    ebnf_buf out;
    int n_rules;
    js_ref *refs;
    size_t n_refs, cap_refs;
    unsigned formats; /* json_schema_formats.h bits used */
    int depth;
    int guards; /* objects and arrays around the node being compiled: each reads a byte first */
} js;

static enc_status js__fail(const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static enc_status js__fail(const char *ptr, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "json schema: %s at #%s", msg, ptr);
}

/* ptr + "/" + key with ~ and / escaped (RFC 6901); malloc'ed. */
static char *js__child(const char *ptr, const char *key)
{
    size_t n = strlen(ptr), k = strlen(key);
    char *s = malloc(n + 2 * k + 2);
    if (!s) return NULL;
    memcpy(s, ptr, n);
    s[n++] = '/';
    for (size_t i = 0; i < k; i++) {
        if (key[i] == '~' || key[i] == '/') {
            s[n++] = '~';
            s[n++] = key[i] == '~' ? '0' : '1';
        } else {
            s[n++] = key[i];
        }
    }
    s[n] = 0;
    return s;
}

static char *js__child_index(const char *ptr, int i)
{
    char k[16];
    snprintf(k, sizeof k, "%d", i);
    return js__child(ptr, k);
}

static enc_status js__oom(void)
{
    return enc_fail(ENC_ERR_OUT_OF_MEMORY, "json schema: out of memory");
}

static enc_status js__node(js *c, const cJSON *s, const char *ptr, int *rule);

/* The rule for the child schema at key of s. */
static enc_status js__sub(js *c, const cJSON *s, const char *ptr, const char *key, int *rule)
{
    char *p = js__child(ptr, key);
    if (!p) return js__oom();
    enc_status st = js__node(c, cJSON_GetObjectItemCaseSensitive(s, key), p, rule);
    free(p);
    return st;
}

static enc_status js__sub_index(js *c, const cJSON *arr, const char *ptr, int i, int *rule)
{
    char *p = js__child_index(ptr, i);
    if (!p) return js__oom();
    enc_status st = js__node(c, cJSON_GetArrayItem(arr, i), p, rule);
    free(p);
    return st;
}

/* --- keywords ------------------------------------------------------------------- */

static const char *const js_ignored[] = {
    "description", "title",    "default",   "examples", "$schema",     "$id",    "$comment",
    "deprecated",  "readOnly", "writeOnly", "$defs",    "definitions", "strict", NULL};
static const char *const js_handled[] = {"type",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "allOf",
                                         "$ref",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "prefixItems",
                                         "minItems",
                                         "maxItems",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         NULL};

static int js__in(const char *const *list, const char *k)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], k)) return 1;
    return 0;
}

static enc_status js__check_keywords(const cJSON *s, const char *ptr)
{
    for (const cJSON *k = s->child; k; k = k->next)
        if (!js__in(js_ignored, k->string) && !js__in(js_handled, k->string))
            return js__fail(ptr, "unsupported keyword '%s'", k->string);
    return ENC_OK;
}

/* Whether s has any keyword from list. */
static const char *js__any_of(const cJSON *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (cJSON_GetObjectItemCaseSensitive(s, list[i])) return list[i];
    return NULL;
}

static const char *const js_object_kw[] = {"properties", "required", "additionalProperties", NULL};
static const char *const js_array_kw[] = {"items", "prefixItems", "minItems", "maxItems", NULL};
static const char *const js_string_kw[] = {"minLength", "maxLength", "pattern", "format", NULL};
static const char *const js_number_kw[] = {"minimum", "maximum", "exclusiveMinimum",
                                           "exclusiveMaximum", NULL};
static const char *const js_combo_kw[] = {"enum", "const", "anyOf", "oneOf", "allOf", "$ref", NULL};
static const char *const js_all_constraints[] = {
    "type",      "properties",  "required",         "additionalProperties",
    "items",     "prefixItems", "minItems",         "maxItems",
    "minLength", "maxLength",   "pattern",          "format",
    "minimum",   "maximum",     "exclusiveMinimum", "exclusiveMaximum",
    NULL};

static enc_status js__count(const cJSON *s, const char *ptr, const char *key, long dflt, long *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);
    *out = dflt;
    if (!v) return ENC_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble))
        return js__fail(ptr, "'%s' must be a non-negative integer", key);
    if (v->valuedouble > JS_MAX_COUNT)
        return js__fail(ptr, "'%s' above %d is not supported", key, JS_MAX_COUNT);
    *out = (long)v->valuedouble;
    return ENC_OK;
}

/* A min/max pair of counts; hi -1 when absent. */
static enc_status js__count_range(const cJSON *s, const char *ptr, const char *min_key,
                                  const char *max_key, long *lo, long *hi)
{
    ENC_TRY(js__count(s, ptr, min_key, 0, lo));
    ENC_TRY(js__count(s, ptr, max_key, -1, hi));
    if (*hi >= 0 && *hi < *lo) return js__fail(ptr, "'%s' below '%s'", max_key, min_key);
    return ENC_OK;
}

/* --- rules ---------------------------------------------------------------------- */

static int js__new_rule(js *c)
{
    return c->n_rules++;
}

static void js__rule_begin(js *c, ebnf_buf *b, int rule)
{
    memset(b, 0, sizeof *b);
    ebnf_buf_printf(b, "%ss%d ::= ", c->prefix, rule);
}

static void js__rule_end(js *c, ebnf_buf *b)
{
    ebnf_buf_append(b, "\n", 1);
    if (b->oom)
        c->out.oom = 1;
    else
        ebnf_buf_append(&c->out, b->s, b->n);
    ebnf_buf_free(b);
}

/* Whether v holds an integer a double may not hold exactly (2^53 or more):
 * the client's digits are lost, so no output could be its value. */
static int js__wide_integer(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble) &&
               fabs(v->valuedouble) >= 9007199254740992.0;
    for (const cJSON *c = cJSON_IsArray(v) || cJSON_IsObject(v) ? v->child : NULL; c; c = c->next)
        if (js__wide_integer(c)) return 1;
    return 0;
}

/* A JSON value as a literal of its compact text, every number exact. */
static enc_status js__value_literal(ebnf_buf *b, const cJSON *v, const char *ptr)
{
    if (js__wide_integer(v))
        return js__fail(ptr, "an integer of 2^53 or more in 'enum' or 'const' (a double may "
                             "not hold its digits exactly)");
    int bad_number = 0;
    char *text = json_print_exact(v, &bad_number);
    if (bad_number) return js__fail(ptr, "a number in 'enum' or 'const' that is not finite");
    if (!text) return js__oom();
    enc_status st = ebnf_buf_literal(b, text, strlen(text), "json schema enum/const");
    free(text);
    return st != ENC_OK ? js__fail(ptr, "a value that is not valid UTF-8") : ENC_OK;
}

/* JSON Schema's equality of two instances: numbers by value (1 equals 1.0),
 * objects whatever their key order. */
static int js__equal(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) || cJSON_IsNumber(b))
        return cJSON_IsNumber(a) && cJSON_IsNumber(b) && a->valuedouble == b->valuedouble;
    if ((a->type & 0xFF) != (b->type & 0xFF)) return 0;
    if (cJSON_IsString(a)) return !strcmp(a->valuestring, b->valuestring);
    if (cJSON_IsArray(a)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!js__equal(x, y)) return 0;
        return !x && !y;
    }
    if (cJSON_IsObject(a)) { /* each one's keys in the other (a key given twice is no key of
                              * another's) */
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return 0;
        for (const cJSON *x = a->child; x; x = x->next) {
            const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
            if (!y || !js__equal(x, y)) return 0;
        }
        for (const cJSON *y = b->child; y; y = y->next)
            if (!cJSON_GetObjectItemCaseSensitive(a, y->string)) return 0;
    }
    return 1; /* true, false, null: the type said it */
}

/* Whether v is an instance of the type name t. */
static int js__of_type(const cJSON *v, const char *t)
{
    if (!strcmp(t, "string")) return cJSON_IsString(v);
    if (!strcmp(t, "number")) return cJSON_IsNumber(v);
    if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
    if (!strcmp(t, "null")) return cJSON_IsNull(v);
    if (!strcmp(t, "object")) return cJSON_IsObject(v);
    return !strcmp(t, "array") && cJSON_IsArray(v);
}

/* Whether v satisfies the schema's "type" (a name or a list; none: any). */
static int js__fits_type(const cJSON *v, const cJSON *type)
{
    if (!type) return 1;
    if (cJSON_IsString(type)) return js__of_type(v, type->valuestring);
    for (const cJSON *t = cJSON_IsArray(type) ? type->child : NULL; t; t = t->next)
        if (cJSON_IsString(t) && js__of_type(v, t->valuestring)) return 1;
    return 0;
}

/* enum and const: the values that also satisfy the schema's "type" and the
 * other of the two, each a literal; any other constraint beside them is
 * refused (the values would have to be checked against it). */
static enc_status js__enum(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    (void)c;
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(s, "const");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    const char *kw = cst ? "const" : "enum";
    for (int i = 0; js_all_constraints[i]; i++)
        if (strcmp(js_all_constraints[i], "type") &&
            cJSON_GetObjectItemCaseSensitive(s, js_all_constraints[i]))
            return js__fail(ptr, "'%s' together with '%s' is not supported", kw,
                            js_all_constraints[i]);
    if (en && (!cJSON_IsArray(en) || !cJSON_GetArraySize(en)))
        return js__fail(ptr, "'enum' must be a non-empty array");
    int n = 0;
    for (const cJSON *v = en ? en->child : cst; v; v = en ? v->next : NULL) {
        if (!js__fits_type(v, type) || (en && cst && !js__equal(v, cst))) continue;
        if (n++) ebnf_buf_append(b, " | ", 3);
        ENC_TRY(js__value_literal(b, v, ptr));
    }
    if (!n)
        return js__fail(ptr, "no value of '%s' satisfies %s", en ? "enum" : "const",
                        en && cst ? "'const' and 'type'" : "'type'");
    return ENC_OK;
}

static enc_status js__any(js *c, ebnf_buf *b, const cJSON *s, const char *ptr, const char *key)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(s, key);
    if (!cJSON_IsArray(arr) || !cJSON_GetArraySize(arr))
        return js__fail(ptr, "'%s' must be a non-empty array", key);
    char *p = js__child(ptr, key);
    if (!p) return js__oom();
    enc_status st = ENC_OK;
    int n = cJSON_GetArraySize(arr);
    if (!strcmp(key, "allOf") && n != 1)
        st = js__fail(ptr, "'allOf' with more than one schema is not supported");
    for (int i = 0; i < n && st == ENC_OK; i++) {
        int r;
        st = js__sub_index(c, arr, p, i, &r);
        if (st == ENC_OK) ebnf_buf_printf(b, "%s%ss%d", i ? " | " : "", c->prefix, r);
    }
    free(p);
    return st;
}

static enc_status js__ref(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (!cJSON_IsString(ref)) return js__fail(ptr, "'$ref' must be a string");
    const char *r = ref->valuestring;
    for (size_t i = 0; i < c->n_refs; i++)
        if (!strcmp(c->refs[i].ptr, r)) {
            /* Recursion must pass through an object or an array: one that
             * reaches its own '$ref' before any byte is an endless rule. */
            if (c->refs[i].open && c->refs[i].guards == c->guards)
                return js__fail(ptr,
                                "'$ref' to '%s' recurses without an object or array between "
                                "(it never reads a byte)",
                                r);
            ebnf_buf_printf(b, "%ss%d", c->prefix, c->refs[i].rule);
            return ENC_OK;
        }
    const cJSON *target = NULL;
    const char *name = NULL;
    if (!strcmp(r, "#"))
        target = c->root;
    else if (!strncmp(r, "#/$defs/", 8))
        name = r + 8, target = cJSON_GetObjectItemCaseSensitive(c->root, "$defs");
    else if (!strncmp(r, "#/definitions/", 14))
        name = r + 14, target = cJSON_GetObjectItemCaseSensitive(c->root, "definitions");
    else
        return js__fail(
            ptr, "'$ref' to '%s' (only #, #/$defs/NAME and #/definitions/NAME are supported)", r);
    if (name) {
        if (strchr(name, '/') || strchr(name, '~'))
            return js__fail(ptr, "'$ref' to '%s' (a nested or escaped definition name)", r);
        target = target ? cJSON_GetObjectItemCaseSensitive(target, name) : NULL;
    }
    if (!target) return js__fail(ptr, "'$ref' to '%s', which does not exist", r);
    /* The rule is named before it is compiled, so that recursion refers to it. */
    if (c->n_refs == c->cap_refs) {
        size_t cap = c->cap_refs ? c->cap_refs * 2 : 8;
        js_ref *nr = realloc(c->refs, cap * sizeof *nr);
        if (!nr) return js__oom();
        c->refs = nr;
        c->cap_refs = cap;
    }
    int rule = js__new_rule(c);
    c->refs[c->n_refs].ptr = malloc(strlen(r) + 1);
    if (!c->refs[c->n_refs].ptr) return js__oom();
    strcpy(c->refs[c->n_refs].ptr, r);
    size_t at = c->n_refs++;
    c->refs[at].rule = rule;
    c->refs[at].open = 1;
    c->refs[at].guards = c->guards;
    int inner;
    ENC_TRY(js__node(c, target, r + 1, &inner));
    c->refs[at].open = 0;
    ebnf_buf d;
    js__rule_begin(c, &d, rule);
    ebnf_buf_printf(&d, "%ss%d", c->prefix, inner);
    js__rule_end(c, &d);
    ebnf_buf_printf(b, "%ss%d", c->prefix, rule);
    return ENC_OK;
}

/* --- types ------------------------------------------------------------------------ */

static enc_status js__string(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    long lo, hi;
    ENC_TRY(js__count_range(s, ptr, "minLength", "maxLength", &lo, &hi));
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
    int counted = lo > 0 || hi >= 0;
    if ((pat || fmt) && counted)
        return js__fail(ptr, "'minLength'/'maxLength' together with '%s' is not supported",
                        pat ? "pattern" : "format");
    if (pat && fmt) return js__fail(ptr, "'pattern' together with 'format' is not supported");
    ebnf_buf_append(b, "\"\\\"\" ", 5);
    if (fmt) {
        if (!cJSON_IsString(fmt)) return js__fail(ptr, "'format' must be a string");
        unsigned bit = json_schema_format_bit(fmt->valuestring);
        if (!bit) return js__fail(ptr, "unsupported keyword 'format: %s'", fmt->valuestring);
        c->formats |= bit;
        ebnf_buf_printf(b, "%sfmt-%s", c->prefix, fmt->valuestring);
    } else if (pat) {
        if (!cJSON_IsString(pat)) return js__fail(ptr, "'pattern' must be a string");
        char where[256], any[64];
        snprintf(where, sizeof where, "json schema: 'pattern' at #%s", ptr);
        snprintf(any, sizeof any, "%schar", c->prefix);
        regex_ebnf_mode mode = {1, 1, any, where};
        ENC_TRY(regex_ebnf_expr(pat->valuestring, &mode, b));
    } else if (!counted) {
        ebnf_buf_printf(b, "%schar*", c->prefix);
    } else if (hi < 0) {
        ebnf_buf_printf(b, "%schar{%ld,}", c->prefix, lo);
    } else {
        ebnf_buf_printf(b, "%schar{%ld,%ld}", c->prefix, lo, hi);
    }
    ebnf_buf_append(b, " \"\\\"\"", 5);
    return ENC_OK;
}

static int js__all(const char *s, int n, char c)
{
    for (int i = 0; i < n; i++)
        if (s[i] != c) return 0;
    return 1;
}

/* Non-negative integers in [x, y] with the same number of digits (digit
 * strings of length n): split at the first digit. A side whose rest is all
 * 0s (x) or all 9s (y) joins the middle class, so every recursive call has
 * one full side and the text stays linear in n. */
static void js__digits_range(ebnf_buf *b, const char *x, const char *y, int n)
{
    if (n == 0) {
        ebnf_buf_append(b, "\"\"", 2);
        return;
    }
    if (x[0] == y[0]) {
        ebnf_buf_printf(b, "\"%c\" ", x[0]);
        js__digits_range(b, x + 1, y + 1, n - 1);
        return;
    }
    char nines[20], zeros[20];
    memset(nines, '9', (size_t)n);
    memset(zeros, '0', (size_t)n);
    int lo_full = js__all(x + 1, n - 1, '0'), hi_full = js__all(y + 1, n - 1, '9');
    char mid_lo = lo_full ? x[0] : (char)(x[0] + 1), mid_hi = hi_full ? y[0] : (char)(y[0] - 1);
    const char *sep = "";
    ebnf_buf_append(b, "( ", 2);
    if (!lo_full) {
        ebnf_buf_printf(b, "\"%c\" (", x[0]);
        js__digits_range(b, x + 1, nines, n - 1);
        ebnf_buf_append(b, ")", 1);
        sep = " | ";
    }
    if (mid_lo <= mid_hi) {
        ebnf_buf_printf(b, "%s[%c-%c] [0-9]{%d}", sep, mid_lo, mid_hi, n - 1);
        sep = " | ";
    }
    if (!hi_full) {
        ebnf_buf_printf(b, "%s\"%c\" (", sep, y[0]);
        js__digits_range(b, zeros, y + 1, n - 1);
        ebnf_buf_append(b, ")", 1);
    }
    ebnf_buf_append(b, " )", 2);
}

/* Non-negative integers in [lo, hi], split by digit count. */
static void js__nonneg_range(ebnf_buf *b, long long lo, long long hi)
{
    int first = 1;
    long long p = 1;
    ebnf_buf_append(b, "(", 1);
    for (int d = 1; d <= 16; d++, p *= 10) {
        long long dlo = d == 1 ? 0 : p, dhi = p * 10 - 1;
        long long a = lo > dlo ? lo : dlo, z = hi < dhi ? hi : dhi;
        if (a > z) continue;
        char xa[20], xz[20];
        snprintf(xa, sizeof xa, "%lld", a);
        snprintf(xz, sizeof xz, "%lld", z);
        ebnf_buf_printf(b, "%s(", first ? "" : " | ");
        js__digits_range(b, xa, xz, d);
        ebnf_buf_append(b, ")", 1);
        first = 0;
    }
    ebnf_buf_append(b, ")", 1);
}

static enc_status js__bound(const cJSON *s, const char *ptr, const char *key, int upper,
                            long long *v, int *set)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(s, key);
    if (!x) return ENC_OK;
    if (!cJSON_IsNumber(x)) return js__fail(ptr, "'%s' must be a number", key);
    double d = x->valuedouble;
    int exclusive = key[0] == 'e';
    if (fabs(d) > (double)JS_INT_LIMIT)
        return js__fail(ptr, "'%s' beyond +-10^15 is not supported", key);
    long long n = upper ? (long long)floor(d) : (long long)ceil(d);
    if (exclusive && (double)n == d) n += upper ? -1 : 1;
    if (!*set || (upper ? n < *v : n > *v)) *v = n;
    *set = 1;
    return ENC_OK;
}

static enc_status js__integer(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    long long lo = -(JS_INT_LIMIT - 1), hi = JS_INT_LIMIT - 1;
    int has_lo = 0, has_hi = 0;
    ENC_TRY(js__bound(s, ptr, "minimum", 0, &lo, &has_lo));
    ENC_TRY(js__bound(s, ptr, "exclusiveMinimum", 0, &lo, &has_lo));
    ENC_TRY(js__bound(s, ptr, "maximum", 1, &hi, &has_hi));
    ENC_TRY(js__bound(s, ptr, "exclusiveMaximum", 1, &hi, &has_hi));
    if (!has_lo && !has_hi) {
        ebnf_buf_printf(b, "%sint", c->prefix);
        return ENC_OK;
    }
    if (!has_lo) lo = -(JS_INT_LIMIT - 1);
    if (!has_hi) hi = JS_INT_LIMIT - 1;
    if (lo > hi) return js__fail(ptr, "integer bounds [%lld, %lld] hold no value", lo, hi);
    ebnf_buf_append(b, "(", 1);
    if (lo < 0) {
        long long nlo = hi < -1 ? -hi : 1; /* the magnitudes of the negative part */
        ebnf_buf_append(b, "\"-\" ", 4);
        js__nonneg_range(b, nlo, -lo);
        if (hi >= 0) ebnf_buf_append(b, " | ", 3);
    }
    if (hi >= 0) js__nonneg_range(b, lo > 0 ? lo : 0, hi);
    ebnf_buf_append(b, ")", 1);
    return ENC_OK;
}

static enc_status js__number(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    const char *k = js__any_of(s, js_number_kw);
    if (k) return js__fail(ptr, "'%s' on type number is not supported (only on integer)", k);
    ebnf_buf_printf(b, "%snumber", c->prefix);
    return ENC_OK;
}

/* "key": value for property i. */
static enc_status js__kv(js *c, ebnf_buf *b, const cJSON *prop, const int *rules, int i)
{
    cJSON *key = cJSON_CreateString(prop->string);
    char *text = key ? cJSON_PrintUnformatted(key) : NULL;
    cJSON_Delete(key);
    if (!text) return js__oom();
    enc_status st = ebnf_buf_literal(b, text, strlen(text), "json schema property name");
    free(text);
    ebnf_buf_printf(b, " \": \" %ss%d", c->prefix, rules[i]);
    return st;
}

/* From property i on, something already written: each one ", " kv. */
static enc_status js__props_tail(js *c, ebnf_buf *b, const cJSON *props, const int *rules,
                                 const uint8_t *req, int i, int n)
{
    const cJSON *p = cJSON_GetArrayItem(props, i);
    for (; i < n; i++, p = p->next) {
        if (rules[i] < 0) continue; /* its schema is false: never written */
        ebnf_buf_append(b, req[i] ? " \", \" " : " ( \", \" ", req[i] ? 6 : 8);
        ENC_TRY(js__kv(c, b, p, rules, i));
        if (!req[i]) ebnf_buf_append(b, " )?", 3);
    }
    return ENC_OK;
}

/* From property i on, nothing written yet. */
static enc_status js__props_head(js *c, ebnf_buf *b, const cJSON *props, const int *rules,
                                 const uint8_t *req, int i, int n)
{
    if (i == n) return ENC_OK;
    if (rules[i] < 0) return js__props_head(c, b, props, rules, req, i + 1, n);
    const cJSON *p = cJSON_GetArrayItem(props, i);
    if (req[i]) {
        ENC_TRY(js__kv(c, b, p, rules, i));
        return js__props_tail(c, b, props, rules, req, i + 1, n);
    }
    ebnf_buf_append(b, "( ", 2);
    ENC_TRY(js__kv(c, b, p, rules, i));
    ENC_TRY(js__props_tail(c, b, props, rules, req, i + 1, n));
    ebnf_buf_append(b, " | ", 3);
    ENC_TRY(js__props_head(c, b, props, rules, req, i + 1, n));
    ebnf_buf_append(b, " )", 2);
    return ENC_OK;
}

static enc_status js__required(const cJSON *s, const cJSON *props, const char *ptr, uint8_t *req,
                               int n)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(s, "required");
    if (!r) return ENC_OK;
    if (!cJSON_IsArray(r)) return js__fail(ptr, "'required' must be an array of names");
    for (const cJSON *name = r->child; name; name = name->next) {
        if (!cJSON_IsString(name)) return js__fail(ptr, "'required' must be an array of names");
        int i = 0, found = 0;
        for (const cJSON *p = props ? props->child : NULL; p; p = p->next, i++)
            if (!strcmp(p->string, name->valuestring)) req[i] = 1, found = 1;
        if (!found)
            return js__fail(ptr, "required property '%s' is not in 'properties' (not supported)",
                            name->valuestring);
    }
    return ENC_OK;
}

/* additionalProperties with no properties: a map of its schema (or any value). */
static enc_status js__map(js *c, ebnf_buf *b, const cJSON *s, const char *ptr, const cJSON *extra)
{
    if (cJSON_IsFalse(extra)) {
        ebnf_buf_append(b, "\"{}\"", 4);
        return ENC_OK;
    }
    char val[64];
    if (extra && !cJSON_IsTrue(extra)) {
        int r;
        ENC_TRY(js__sub(c, s, ptr, "additionalProperties", &r));
        snprintf(val, sizeof val, "%ss%d", c->prefix, r);
    } else {
        snprintf(val, sizeof val, "%svalue", c->prefix);
    }
    const char *p = c->prefix;
    ebnf_buf_printf(b, "\"{\" ( %sstring \": \" %s ( \", \" %sstring \": \" %s )* )? \"}\"", p, val,
                    p, val);
    return ENC_OK;
}

static enc_status js__object(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (props && !cJSON_IsObject(props)) return js__fail(ptr, "'properties' must be an object");
    if (extra && !cJSON_IsBool(extra) && !cJSON_IsObject(extra))
        return js__fail(ptr, "'additionalProperties' must be a boolean or a schema");
    int n = props ? cJSON_GetArraySize(props) : 0;
    uint8_t *req = calloc((size_t)n + 1, 1);
    int *rules = malloc(((size_t)n + 1) * sizeof *rules);
    enc_status st = req && rules ? ENC_OK : js__oom();
    if (st == ENC_OK) st = js__required(s, props, ptr, req, n);
    if (st == ENC_OK && n == 0) {
        st = js__map(c, b, s, ptr, extra);
        goto done;
    }
    char *pp = st == ENC_OK ? js__child(ptr, "properties") : NULL;
    if (st == ENC_OK && !pp) st = js__oom();
    int i = 0;
    for (const cJSON *p = props ? props->child : NULL; p && st == ENC_OK; p = p->next, i++) {
        rules[i] = -1; /* a property whose schema is false may not appear */
        if (!cJSON_IsFalse(p))
            st = js__sub(c, props, pp, p->string, &rules[i]);
        else if (req[i])
            st = js__fail(ptr, "required property '%s' has the schema false (no value fits it)",
                          p->string);
    }
    free(pp);
    if (st == ENC_OK) {
        ebnf_buf_append(b, "\"{\" ", 4);
        st = js__props_head(c, b, props, rules, req, 0, n);
        ebnf_buf_append(b, " \"}\"", 4);
    }
done:
    free(req);
    free(rules);
    return st;
}

/* The items from position i on (first: nothing written yet); k prefix items. */
static void js__items_from(js *c, ebnf_buf *b, const int *prefix, int k, int item, int i, int first,
                           long lo, long hi)
{
    if (hi >= 0 && i >= hi) return;
    const char *sep = first ? "" : "\", \" ";
    if (i < k) {
        int need = i < lo;
        ebnf_buf_printf(b, "%s%s %ss%d ", need ? "" : "( ", sep, c->prefix, prefix[i]);
        js__items_from(c, b, prefix, k, item, i + 1, 0, lo, hi);
        if (!need) ebnf_buf_append(b, ")? ", 3);
        return;
    }
    if (item < 0) return; /* items: false */
    long rlo = lo > i ? lo - i : 0, rhi = hi < 0 ? -1 : hi - i;
    char rep[64];
    if (first) { /* item ( ", " item ){rlo-1, rhi-1}, optional when rlo is 0 */
        long a = rlo ? rlo - 1 : 0, z = rhi < 0 ? -1 : rhi - 1;
        if (z < 0 && rhi >= 0) return;
        if (z < 0)
            snprintf(rep, sizeof rep, "{%ld,}", a);
        else
            snprintf(rep, sizeof rep, "{%ld,%ld}", a, z);
        ebnf_buf_printf(b, "%s%ss%d ( \", \" %ss%d )%s%s ", rlo ? "" : "( ", c->prefix, item,
                        c->prefix, item, rep, rlo ? "" : " )?");
        return;
    }
    if (rhi < 0)
        snprintf(rep, sizeof rep, "{%ld,}", rlo);
    else
        snprintf(rep, sizeof rep, "{%ld,%ld}", rlo, rhi);
    ebnf_buf_printf(b, "( \", \" %ss%d )%s ", c->prefix, item, rep);
}

static enc_status js__array(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    long lo, hi;
    ENC_TRY(js__count_range(s, ptr, "minItems", "maxItems", &lo, &hi));
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
    if (items && cJSON_IsArray(items))
        return js__fail(ptr, "'items' as an array (use 'prefixItems')");
    if (pre && !cJSON_IsArray(pre)) return js__fail(ptr, "'prefixItems' must be an array");
    int k = pre ? cJSON_GetArraySize(pre) : 0, item = -1;
    if (k > JS_MAX_COUNT) return js__fail(ptr, "'prefixItems' longer than %d", JS_MAX_COUNT);
    if (cJSON_IsFalse(items)) {
        if (lo > k) return js__fail(ptr, "'minItems' above the prefixItems with 'items': false");
    } else if (items && !cJSON_IsTrue(items)) {
        ENC_TRY(js__sub(c, s, ptr, "items", &item));
    } else {
        item = js__new_rule(c); /* any value */
        ebnf_buf d;
        js__rule_begin(c, &d, item);
        ebnf_buf_printf(&d, "%svalue", c->prefix);
        js__rule_end(c, &d);
    }
    int *prefix = malloc(((size_t)k + 1) * sizeof *prefix);
    if (!prefix) return js__oom();
    char *pp = k ? js__child(ptr, "prefixItems") : NULL;
    enc_status st = k && !pp ? js__oom() : ENC_OK;
    for (int i = 0; i < k && st == ENC_OK; i++)
        st = js__sub_index(c, pre, pp, i, &prefix[i]);
    free(pp);
    if (st == ENC_OK) {
        ebnf_buf_append(b, "\"[\" ", 4);
        js__items_from(c, b, prefix, k, item, 0, 1, lo, hi);
        ebnf_buf_append(b, "\"]\"", 3);
    }
    free(prefix);
    return st;
}

/* An object or an array: its first byte is read before any child, so a
 * recursion through it is no endless rule (js__ref). */
static enc_status js__guarded(enc_status (*body)(js *, ebnf_buf *, const cJSON *, const char *),
                              js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    c->guards++;
    enc_status st = body(c, b, s, ptr);
    c->guards--;
    return st;
}

static enc_status js__type(js *c, ebnf_buf *b, const cJSON *s, const char *ptr, const char *t)
{
    if (!strcmp(t, "null"))
        ebnf_buf_append(b, "\"null\"", 6);
    else if (!strcmp(t, "boolean"))
        ebnf_buf_append(b, "( \"true\" | \"false\" )", 20);
    else if (!strcmp(t, "string"))
        return js__string(c, b, s, ptr);
    else if (!strcmp(t, "integer"))
        return js__integer(c, b, s, ptr);
    else if (!strcmp(t, "number"))
        return js__number(c, b, s, ptr);
    else if (!strcmp(t, "object"))
        return js__guarded(js__object, c, b, s, ptr);
    else if (!strcmp(t, "array"))
        return js__guarded(js__array, c, b, s, ptr);
    else
        return js__fail(ptr, "unknown type '%s'", t);
    return ENC_OK;
}

/* The type(s): given, or implied by the keywords present, or any value. */
static enc_status js__typed(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (!type) {
        const char *t = js__any_of(s, js_object_kw)   ? "object"
                        : js__any_of(s, js_array_kw)  ? "array"
                        : js__any_of(s, js_string_kw) ? "string"
                        : js__any_of(s, js_number_kw) ? "integer"
                                                      : NULL;
        if (t && js__any_of(s, js_number_kw) && strcmp(t, "integer"))
            return js__fail(ptr, "'%s' without a type", js__any_of(s, js_number_kw));
        if (!t) {
            ebnf_buf_printf(b, "%svalue", c->prefix);
            return ENC_OK;
        }
        return js__type(c, b, s, ptr, t);
    }
    if (cJSON_IsString(type)) return js__type(c, b, s, ptr, type->valuestring);
    if (!cJSON_IsArray(type) || !cJSON_GetArraySize(type))
        return js__fail(ptr, "'type' must be a string or a non-empty array");
    int i = 0;
    for (const cJSON *t = type->child; t; t = t->next, i++) {
        if (!cJSON_IsString(t))
            return js__fail(ptr, "'type' must be a string or a non-empty array");
        ebnf_buf_append(b, i ? " | ( " : "( ", i ? 5 : 2);
        ENC_TRY(js__type(c, b, s, ptr, t->valuestring));
        ebnf_buf_append(b, " )", 2);
    }
    return ENC_OK;
}

static enc_status js__body(js *c, ebnf_buf *b, const cJSON *s, const char *ptr)
{
    if (cJSON_IsTrue(s)) {
        ebnf_buf_printf(b, "%svalue", c->prefix);
        return ENC_OK;
    }
    if (cJSON_IsFalse(s)) return js__fail(ptr, "the schema 'false' matches nothing");
    if (!cJSON_IsObject(s)) return js__fail(ptr, "a schema must be an object or a boolean");
    ENC_TRY(js__check_keywords(s, ptr));
    const char *combo = js__any_of(s, js_combo_kw);
    if (!combo) return js__typed(c, b, s, ptr);
    for (const cJSON *k = s->child; k; k = k->next)
        if (js__in(js_combo_kw, k->string) && strcmp(k->string, combo) && strcmp(combo, "enum") &&
            strcmp(combo, "const"))
            return js__fail(ptr, "'%s' together with '%s' is not supported", combo, k->string);
    if (strcmp(combo, "enum") && strcmp(combo, "const")) {
        const char *other = js__any_of(s, js_all_constraints);
        if (other) return js__fail(ptr, "'%s' together with '%s' is not supported", combo, other);
    }
    if (!strcmp(combo, "enum") || !strcmp(combo, "const")) {
        if (cJSON_GetObjectItemCaseSensitive(s, "anyOf") ||
            cJSON_GetObjectItemCaseSensitive(s, "oneOf") ||
            cJSON_GetObjectItemCaseSensitive(s, "allOf") ||
            cJSON_GetObjectItemCaseSensitive(s, "$ref"))
            return js__fail(ptr, "'%s' together with a combinator is not supported", combo);
        return js__enum(c, b, s, ptr);
    }
    if (!strcmp(combo, "$ref")) return js__ref(c, b, s, ptr);
    return js__any(c, b, s, ptr, combo);
}

static enc_status js__node(js *c, const cJSON *s, const char *ptr, int *rule)
{
    if (++c->depth > JS_MAX_DEPTH)
        return js__fail(ptr, "schemas nested deeper than %d", JS_MAX_DEPTH);
    *rule = js__new_rule(c);
    ebnf_buf b;
    js__rule_begin(c, &b, *rule);
    enc_status st = js__body(c, &b, s, ptr);
    if (st == ENC_OK)
        js__rule_end(c, &b);
    else
        ebnf_buf_free(&b);
    c->depth--;
    return st;
}

enc_status grammar_json_schema_to_ebnf(const char *schema_json, size_t len, const char *rule_prefix,
                                       char **ebnf_out)
{
    *ebnf_out = NULL;
    if (!schema_json) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "json schema: NULL");
    size_t bad_at = 0;
    cJSON *root = json_parse_whole(schema_json, len, &bad_at);
    if (!root)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "json schema: not valid JSON, or more than one value (at byte %zu)",
                        bad_at);
    js c;
    memset(&c, 0, sizeof c);
    c.prefix = rule_prefix ? rule_prefix : "";
    c.root = root;
    int r;
    enc_status st = js__node(&c, root, "", &r);
    if (st == ENC_OK) {
        ebnf_buf_printf(&c.out, "%sroot ::= %ss%d\n", c.prefix, c.prefix, r);
        ebnf_json_basics(&c.out, c.prefix);
        json_schema_formats_write(&c.out, c.prefix, c.formats);
        st = ebnf_buf_finish(&c.out, ebnf_out);
    } else {
        ebnf_buf_free(&c.out);
    }
    for (size_t i = 0; i < c.n_refs; i++)
        free(c.refs[i].ptr);
    free(c.refs);
    cJSON_Delete(root);
    return st;
}
