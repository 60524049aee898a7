/* tool_calls_xml.c - one Qwen3-Coder XML tool call read into its name and a
 * compact JSON arguments object (tool_call_parse_xml, tool_calls.h), by the
 * rules of vLLM's `qwen3_coder` parser. The body it reads:
 *
 *   <function=NAME>          NAME: up to the first '>', not empty
 *   <parameter=KEY>          KEY: up to the first '>' (may be empty)
 *   VALUE                    up to the first "<parameter=", "</parameter>" or
 *   </parameter>               "</function>" that ends it (a closing tag followed by
 *   <parameter=KEY>...         more than a next tag or the body's end is VALUE's text:
 *                              code that writes the tags), else to the end of the
 *                              body: "</parameter>" may be missing
 *   </function>              may be missing at the end of the body
 *
 * with only whitespace between the tags and around the function. One "\n"
 * on each side of VALUE is the template's and is dropped; then VALUE becomes
 * JSON by the type tools[i].function.parameters.properties[KEY].type gives
 * it (parameters itself when it has no "properties", as vLLM has it; of a
 * type list or an anyOf / oneOf, the first type that is not "null"):
 *
 *   "null", any case, any type        null
 *   int*, uint*, long*, short*,       an integer as Python's int() reads it
 *     unsigned*                         ("+0042", "1_000"), digits kept however
 *                                       many; else the string
 *   num*, float*                      Python's float(): an integral value as an
 *                                       integer (3.0 -> 3, an integer written
 *                                       so keeps its digits), else the shortest
 *                                       text that reads back the same double
 *                                       (Python's repr); inf, nan, out of range:
 *                                       the string
 *   boolean, bool, binary             true when VALUE is "true" in any case,
 *                                       else false
 *   object, array, arr, dict*, list*  VALUE when it is JSON (compacted, numbers
 *                                       as written), else the string
 *   anything else, no type, a KEY     the string
 *     or tool not in tools
 *
 * (the type trimmed and lower-cased first). Where vLLM differs: it tries
 * Python's ast.literal_eval for other types and for JSON that does not
 * parse (here: the string; its older parser so reads a type list's "5" as
 * 5, as the first-type rule here does); a "number" goes through a double even when
 * written as an integer (12345678901234567890 loses digits there, not
 * here); "inf" fails its whole reply (here: the string). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_span.h"
#include "tool_calls.h"

static const char tool_xml_function[] = "<function=";
static const char tool_xml_function_end[] = "</function>";
static const char tool_xml_parameter[] = "<parameter=";
static const char tool_xml_parameter_end[] = "</parameter>";
#define TOOL_XML_LEN(tag) (sizeof tag - 1)

enum { TOOL_XML_JSON_MAX_DEPTH = 512 }; /* deeper JSON in a value stays a string */

typedef enum tool_xml_type {
    TOOL_XML_STRING,
    TOOL_XML_INT,
    TOOL_XML_NUMBER,
    TOOL_XML_BOOL,
    TOOL_XML_JSON
} tool_xml_type;

/* --- text ---------------------------------------------------------------------------- */

typedef struct tool_xml_buf {
    char *s; /* [cap], NUL-terminated at n; NULL until the first append */
    size_t n, cap;
} tool_xml_buf;

static int tool__xml_put(tool_xml_buf *b, const char *text, size_t len)
{
    if (b->n + len + 1 > b->cap) {
        size_t cap = (b->n + len + 1) * 2;
        char *g = realloc(b->s, cap);
        if (!g) return 0;
        b->s = g;
        b->cap = cap;
    }
    if (len) memcpy(b->s + b->n, text, len);
    b->n += len;
    b->s[b->n] = '\0';
    return 1;
}

/* s[0..n) as a JSON string, escaped as Python's json.dumps(ensure_ascii=False) escapes it:
 * the quote, the backslash and the bytes below the space; UTF-8 passes through. */
static int tool__xml_put_string(tool_xml_buf *b, const char *s, size_t n)
{
    if (!tool__xml_put(b, "\"", 1)) return 0;
    size_t run = 0; /* s[run..i) needs no escape */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= ' ' && c != '"' && c != '\\') continue;
        char esc[8];
        const char *short_esc = strchr("\"\\\b\f\n\r\t", c);
        if (c && short_esc)
            snprintf(esc, sizeof esc, "\\%c", "\"\\bfnrt"[short_esc - "\"\\\b\f\n\r\t"]);
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        if (!tool__xml_put(b, s + run, i - run) || !tool__xml_put(b, esc, strlen(esc))) return 0;
        run = i + 1;
    }
    return tool__xml_put(b, s + run, n - run) && tool__xml_put(b, "\"", 1);
}

static int tool__xml_starts(const char *s, size_t n, size_t i, const char *tag, size_t tag_len)
{
    return n - i >= tag_len && !memcmp(s + i, tag, tag_len);
}

/* The whitespace between tags. */
static size_t tool__xml_skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
        i++;
    return i;
}

/* Where the value from s[i] ends (one pass, so that a body of many
 * parameters costs its length): the first "</parameter>" that whitespace
 * and then the body's end, "<parameter=" or "</function>" follow, or the
 * first "</function>" that only whitespace follows. A closing tag that
 * something else follows is the value's text (code that writes the tags)
 * when such an end comes later; when "<parameter=" or the body's end comes
 * first, the value ends at the first of those tags (text between two
 * parameters, which makes the call content). */
static size_t tool__xml_value_end(const char *s, size_t n, size_t i)
{
    const size_t p = TOOL_XML_LEN(tool_xml_parameter), pe = TOOL_XML_LEN(tool_xml_parameter_end);
    const size_t fe = TOOL_XML_LEN(tool_xml_function_end);
    size_t first = n; /* the first closing tag passed over */
    for (; i < n; i++) {
        if (s[i] != '<') continue;
        if (tool__xml_starts(s, n, i, tool_xml_parameter, p)) return first < n ? first : i;
        size_t k = n;
        if (tool__xml_starts(s, n, i, tool_xml_parameter_end, pe)) {
            k = tool__xml_skip_ws(s, n, i + pe);
            if (k == n || tool__xml_starts(s, n, k, tool_xml_parameter, p) ||
                tool__xml_starts(s, n, k, tool_xml_function_end, fe))
                return i;
        } else if (tool__xml_starts(s, n, i, tool_xml_function_end, fe)) {
            k = tool__xml_skip_ws(s, n, i + fe);
            if (k == n) return i;
        }
        if (k < n && first == n) first = i;
    }
    return first;
}

/* What Python's str.strip() removes, in ASCII. */
static int tool__xml_is_py_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static char tool__xml_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* s[0..n) is `word` (prefix: begins with it), ASCII case aside. */
static int tool__xml_ieq(const char *s, size_t n, const char *word, int prefix)
{
    size_t w = strlen(word);
    if (prefix ? n < w : n != w) return 0;
    for (size_t i = 0; i < w; i++)
        if (tool__xml_lower(s[i]) != word[i]) return 0;
    return 1;
}

/* --- the parameter's type -------------------------------------------------------------- */

/* The named tool's parameter properties, or NULL: the first tools[i] of type "function" whose
 * function.name is name[0..n). */
static const cJSON *tool__xml_properties(const cJSON *tools, const char *name, size_t n)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, tools)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *fn_name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") ||
            !cJSON_IsString(fn_name) || strlen(fn_name->valuestring) != n ||
            memcmp(fn_name->valuestring, name, n))
            continue;
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (!cJSON_IsObject(params)) return NULL;
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
        if (!props) return params;
        return cJSON_IsObject(props) ? props : NULL;
    }
    return NULL;
}

/* The type name a parameter's schema gives: its "type" string; of a type list
 * (["integer", "null"]) or, with no type, of an anyOf / oneOf of typed
 * schemas (pydantic's Optional[int]), the first that is not "null" (newer
 * vLLM's rule; the value "null" reads as null whatever the type). NULL: none. */
static const char *tool__xml_type_name(const cJSON *schema)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type"), *t;
    if (cJSON_IsString(type)) return type->valuestring;
    const cJSON *list = cJSON_IsArray(type) ? type : NULL;
    cJSON_ArrayForEach(t, list)
    {
        if (cJSON_IsString(t) && strcmp(t->valuestring, "null")) return t->valuestring;
    }
    if (type) return NULL;
    static const char *const unions[] = {"anyOf", "oneOf"};
    for (size_t u = 0; u < sizeof unions / sizeof unions[0]; u++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(schema, unions[u]);
        if (!cJSON_IsArray(arr)) continue;
        cJSON_ArrayForEach(t, arr)
        {
            const cJSON *bt = cJSON_GetObjectItemCaseSensitive(t, "type");
            if (cJSON_IsString(bt) && strcmp(bt->valuestring, "null")) return bt->valuestring;
        }
    }
    return NULL;
}

static tool_xml_type tool__xml_type(const cJSON *props, const char *key, size_t n)
{
    const cJSON *p, *found = NULL;
    cJSON_ArrayForEach(p, props)
    {
        if (p->string && strlen(p->string) == n && !memcmp(p->string, key, n)) {
            found = p;
            break;
        }
    }
    const char *t = tool__xml_type_name(found);
    if (!t) return TOOL_XML_STRING;
    size_t len = strlen(t);
    while (len && tool__xml_is_py_space(t[len - 1]))
        len--;
    while (len && tool__xml_is_py_space(*t))
        t++, len--;
    static const char *const ints[] = {"int", "uint", "long", "short", "unsigned"};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (tool__xml_ieq(t, len, ints[i], 1)) return TOOL_XML_INT;
    if (tool__xml_ieq(t, len, "num", 1) || tool__xml_ieq(t, len, "float", 1))
        return TOOL_XML_NUMBER;
    if (tool__xml_ieq(t, len, "boolean", 0) || tool__xml_ieq(t, len, "bool", 0) ||
        tool__xml_ieq(t, len, "binary", 0))
        return TOOL_XML_BOOL;
    if (tool__xml_ieq(t, len, "object", 0) || tool__xml_ieq(t, len, "array", 0) ||
        tool__xml_ieq(t, len, "arr", 0) || tool__xml_ieq(t, len, "dict", 1) ||
        tool__xml_ieq(t, len, "list", 1))
        return TOOL_XML_JSON;
    return TOOL_XML_STRING; /* string, str, text, varchar, char, enum, and the rest */
}

/* --- numbers, as Python's int() and float() read them ------------------------------------ */

/* Digits at s[*i..n), single underscores allowed between them, appended to out[*n_out..]
 * without the underscores: 1, 0 when there is none, -1 when an underscore is misplaced. */
static int tool__xml_digits(const char *s, size_t n, size_t *i, char *out, size_t *n_out)
{
    size_t k = *i;
    int any = 0;
    if (k < n && s[k] == '_') return -1;
    while (k < n && s[k] >= '0' && s[k] <= '9') {
        out[(*n_out)++] = s[k++];
        any = 1;
        if (k < n && s[k] == '_') {
            if (k + 1 == n || s[k + 1] < '0' || s[k + 1] > '9') return -1;
            k++;
        }
    }
    *i = k;
    return any;
}

/* s[0..n) as Python's float() reads it (whitespace around, a sign, digits with underscores, a
 * point, an exponent; no inf or nan) into lit (room for n + 1 bytes): a C literal without
 * underscores. 1 when it reads, with *integer set when there is neither point nor exponent. */
static int tool__xml_literal(const char *s, size_t n, char *lit, int *integer)
{
    while (n && tool__xml_is_py_space(s[n - 1]))
        n--;
    size_t i = 0, k = 0;
    while (i < n && tool__xml_is_py_space(s[i]))
        i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) lit[k++] = s[i++];
    int whole = tool__xml_digits(s, n, &i, lit, &k), frac = 0;
    if (whole < 0) return 0;
    *integer = 1;
    if (i < n && s[i] == '.') {
        lit[k++] = s[i++];
        *integer = 0;
        if ((frac = tool__xml_digits(s, n, &i, lit, &k)) < 0) return 0;
    }
    if (!whole && !frac) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        lit[k++] = s[i++];
        *integer = 0;
        if (i < n && (s[i] == '+' || s[i] == '-')) lit[k++] = s[i++];
        if (tool__xml_digits(s, n, &i, lit, &k) <= 0) return 0;
    }
    lit[k] = '\0';
    return i == n;
}

/* An integer literal (sign, digits) as JSON: no '+', no leading zeros, no "-0". */
static int tool__xml_put_integer(tool_xml_buf *b, const char *lit)
{
    int neg = *lit == '-';
    lit += *lit == '-' || *lit == '+';
    while (lit[0] == '0' && lit[1])
        lit++;
    if (neg && strcmp(lit, "0") && !tool__xml_put(b, "-", 1)) return 0;
    return tool__xml_put(b, lit, strlen(lit));
}

/* 1 written, 0 not a number of this kind (nothing written), -1 out of memory. */
static int tool__xml_put_number(tool_xml_buf *b, const char *v, size_t n, int integer_only)
{
    char *lit = malloc(n + 1);
    if (!lit) return -1;
    int integer, r = 0;
    if (!tool__xml_literal(v, n, lit, &integer) || (integer_only && !integer)) {
        r = 0;
    } else if (integer) {
        r = tool__xml_put_integer(b, lit) ? 1 : -1;
    } else {
        double d = strtod(lit, NULL);
        char text[400]; /* %.0f of the largest double: 309 digits */
        if (!isfinite(d)) {
            r = 0;
        } else if (d == floor(d)) { /* Python: int(float(v)), every digit of the double */
            snprintf(text, sizeof text, "%.0f", d == 0 ? 0.0 : d);
            r = tool__xml_put(b, text, strlen(text)) ? 1 : -1;
        } else { /* the shortest that reads back the same, as Python's repr */
            for (int prec = 1; prec <= 17; prec++) {
                snprintf(text, sizeof text, "%.*g", prec, d);
                if (strtod(text, NULL) == d) break;
            }
            r = tool__xml_put(b, text, strlen(text)) ? 1 : -1;
        }
    }
    free(lit);
    return r;
}

/* --- JSON values, as Python's json.loads reads them ---------------------------------------- */

static size_t tool__xml_json_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

#define TOOL_XML_BAD SIZE_MAX

static size_t tool__xml_json_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < ' ') return TOOL_XML_BAD; /* strict: no raw control byte */
        if (c == '"') return i + 1;
        if (c != '\\') continue;
        if (++i >= n) return TOOL_XML_BAD;
        if (s[i] == 'u') {
            for (int k = 0; k < 4; k++)
                if (++i >= n || !strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
                    return TOOL_XML_BAD;
        } else if (!s[i] || !strchr("\"\\/bfnrt", s[i])) {
            return TOOL_XML_BAD;
        }
    }
    return TOOL_XML_BAD;
}

static size_t tool__xml_json_number(const char *s, size_t n, size_t i)
{
#define TOOL_XML_DIGIT(k) ((k) < n && s[k] >= '0' && s[k] <= '9')
    if (i < n && s[i] == '-') i++;
    if (i < n && s[i] == '0') {
        i++;
    } else if (TOOL_XML_DIGIT(i)) {
        while (TOOL_XML_DIGIT(i))
            i++;
    } else {
        return TOOL_XML_BAD;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (!TOOL_XML_DIGIT(i)) return TOOL_XML_BAD;
        while (TOOL_XML_DIGIT(i))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (!TOOL_XML_DIGIT(i)) return TOOL_XML_BAD;
        while (TOOL_XML_DIGIT(i))
            i++;
    }
    return i;
#undef TOOL_XML_DIGIT
}

/* The end of the JSON value at s[i] (whitespace before it skipped), or TOOL_XML_BAD. */
static size_t tool__xml_json_value(const char *s, size_t n, size_t i, int depth)
{
    i = tool__xml_json_ws(s, n, i);
    if (i >= n) return TOOL_XML_BAD;
    if (s[i] == '"') return tool__xml_json_string(s, n, i);
    static const char *const words[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++)
        if (tool__xml_starts(s, n, i, words[k], strlen(words[k]))) return i + strlen(words[k]);
    if (s[i] != '{' && s[i] != '[') return tool__xml_json_number(s, n, i);
    if (depth >= TOOL_XML_JSON_MAX_DEPTH) return TOOL_XML_BAD;
    char close = s[i] == '{' ? '}' : ']';
    i = tool__xml_json_ws(s, n, i + 1);
    if (i < n && s[i] == close) return i + 1;
    for (;;) {
        if (close == '}') {
            i = tool__xml_json_ws(s, n, i);
            if (i >= n || s[i] != '"' || (i = tool__xml_json_string(s, n, i)) == TOOL_XML_BAD)
                return TOOL_XML_BAD;
            i = tool__xml_json_ws(s, n, i);
            if (i >= n || s[i] != ':') return TOOL_XML_BAD;
            i++;
        }
        if ((i = tool__xml_json_value(s, n, i, depth + 1)) == TOOL_XML_BAD) return TOOL_XML_BAD;
        i = tool__xml_json_ws(s, n, i);
        if (i < n && s[i] == close) return i + 1;
        if (i >= n || s[i] != ',') return TOOL_XML_BAD;
        i++;
    }
}

/* 1 written (compacted), 0 not JSON, -1 out of memory. */
static int tool__xml_put_json(tool_xml_buf *b, const char *v, size_t n)
{
    size_t end = tool__xml_json_value(v, n, 0, 0);
    if (end == TOOL_XML_BAD || tool__xml_json_ws(v, n, end) != n) return 0;
    char *compact = json_span_compact(v, 0, n);
    if (!compact) return -1;
    int ok = tool__xml_put(b, compact, strlen(compact));
    free(compact);
    return ok ? 1 : -1;
}

/* --- one value ------------------------------------------------------------------------------ */

/* v[0..n) (its template newlines dropped) as JSON of `type`; 0 when out of memory. */
static int tool__xml_put_value(tool_xml_buf *b, const char *v, size_t n, tool_xml_type type)
{
    if (tool__xml_ieq(v, n, "null", 0)) return tool__xml_put(b, "null", 4);
    if (type == TOOL_XML_BOOL)
        return tool__xml_ieq(v, n, "true", 0) ? tool__xml_put(b, "true", 4)
                                              : tool__xml_put(b, "false", 5);
    int r = type == TOOL_XML_INT      ? tool__xml_put_number(b, v, n, 1)
            : type == TOOL_XML_NUMBER ? tool__xml_put_number(b, v, n, 0)
            : type == TOOL_XML_JSON   ? tool__xml_put_json(b, v, n)
                                      : 0;
    if (r) return r > 0;
    return tool__xml_put_string(b, v, n); /* what does not convert stays the string */
}

/* --- the block ---------------------------------------------------------------------------- */

typedef struct tool_xml_param {
    const char *key; /* [n_key], in the body */
    size_t n_key;
    char *value; /* JSON text, malloc'd */
} tool_xml_param;

static int tool__xml_parse(const char *body, size_t len, int closed, const cJSON *tools,
                           char **name, char **arguments)
{
    *name = *arguments = NULL;
    if (memchr(body, '\0', len)) return 0;
    size_t i = tool__xml_skip_ws(body, len, 0);
    if (!tool__xml_starts(body, len, i, tool_xml_function, TOOL_XML_LEN(tool_xml_function)))
        return 0;
    i += TOOL_XML_LEN(tool_xml_function);
    const char *gt = memchr(body + i, '>', len - i);
    if (!gt || gt == body + i) return 0;
    const char *fn = body + i;
    size_t n_fn = (size_t)(gt - fn);
    const cJSON *props = tool__xml_properties(tools, fn, n_fn);
    i += n_fn + 1;

    tool_xml_param *params = NULL;
    size_t n_params = 0, cap_params = 0;
    int r = 1;
    for (;;) {
        i = tool__xml_skip_ws(body, len, i);
        if (i == len) break; /* no </function>: vLLM reads to the end */
        if (tool__xml_starts(body, len, i, tool_xml_function_end,
                             TOOL_XML_LEN(tool_xml_function_end))) {
            i = tool__xml_skip_ws(body, len, i + TOOL_XML_LEN(tool_xml_function_end));
            r = i == len;
            break;
        }
        if (!tool__xml_starts(body, len, i, tool_xml_parameter, TOOL_XML_LEN(tool_xml_parameter))) {
            r = 0;
            break;
        }
        i += TOOL_XML_LEN(tool_xml_parameter);
        size_t end = tool__xml_value_end(body, len, i);
        const char *kgt = memchr(body + i, '>', end - i);
        if (!kgt || (end == len && !closed)) { /* no key, or a value cut short */
            r = 0;
            break;
        }
        const char *key = body + i, *v = kgt + 1;
        size_t n_key = (size_t)(kgt - key), n_v = (size_t)(body + end - v);
        if (n_v && v[0] == '\n') v++, n_v--;
        if (n_v && v[n_v - 1] == '\n') n_v--;
        tool_xml_buf value = {0};
        if (!tool__xml_put_value(&value, v, n_v, tool__xml_type(props, key, n_key))) {
            free(value.s);
            r = -1;
            break;
        }
        size_t k = 0; /* a repeated key keeps its place and takes the new value */
        while (k < n_params && (params[k].n_key != n_key || memcmp(params[k].key, key, n_key)))
            k++;
        if (k == n_params && n_params == cap_params) {
            size_t cap = cap_params ? cap_params * 2 : 4;
            tool_xml_param *g = realloc(params, cap * sizeof *g);
            if (!g) {
                free(value.s);
                r = -1;
                break;
            }
            params = g;
            cap_params = cap;
        }
        if (k == n_params)
            params[n_params++] = (tool_xml_param){.key = key, .n_key = n_key, .value = value.s};
        else
            free(params[k].value), params[k].value = value.s;
        i = end;
        if (tool__xml_starts(body, len, i, tool_xml_parameter_end,
                             TOOL_XML_LEN(tool_xml_parameter_end)))
            i += TOOL_XML_LEN(tool_xml_parameter_end);
    }

    tool_xml_buf args = {0}, out_name = {0};
    if (r > 0) {
        int ok = tool__xml_put(&args, "{", 1);
        for (size_t k = 0; ok && k < n_params; k++)
            ok = (!k || tool__xml_put(&args, ",", 1)) &&
                 tool__xml_put_string(&args, params[k].key, params[k].n_key) &&
                 tool__xml_put(&args, ":", 1) &&
                 tool__xml_put(&args, params[k].value, strlen(params[k].value));
        ok = ok && tool__xml_put(&args, "}", 1) && tool__xml_put(&out_name, fn, n_fn);
        if (!ok) r = -1;
    }
    for (size_t k = 0; k < n_params; k++)
        free(params[k].value);
    free(params);
    if (r <= 0) {
        free(args.s);
        free(out_name.s);
        return r;
    }
    *name = out_name.s;
    *arguments = args.s;
    return 1;
}

int tool_call_parse_xml(const char *body, size_t len, const cJSON *tools, char **name,
                        char **arguments)
{
    return tool__xml_parse(body, len, 1, tools, name, arguments);
}

int tool_call_parse_xml_unclosed(const char *body, size_t len, const cJSON *tools, char **name,
                                 char **arguments)
{
    return tool__xml_parse(body, len, 0, tools, name, arguments);
}
