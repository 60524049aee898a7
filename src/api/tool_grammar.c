/* tool_grammar.c - the grammar of an enforced tool choice (tool_grammar.h):
 * the <tool_call> blocks of the model's chat template, each call's arguments
 * constrained by its tool's "parameters" schema.
 *
 *   root  ::= think? calls               (think only with think_first, hermes)
 *           | think_rest calls           (think_first 2: the prompt opened the
 *                                          think block; the reasoning, then its end)
 *   calls ::= call                       (a named function: that one)
 *           | call ("\n" call)*          ("required": any of the tools)
 *
 * Hermes (Qwen3), tool K:
 *   call  ::= "<tool_call>\n{\"name\": \"" NAME "\", \"arguments\": " tK_root "}\n</tool_call>"
 * tK_root is tool K's parameters schema compiled with the rule prefix "tK_"
 * (a tool without parameters takes any JSON object, as vLLM does).
 *
 * XML (Qwen3-Coder), tool K with properties P0..Pn in the schema's order:
 *   call  ::= "<tool_call>\n<function=NAME>\n" tK_p0 tK_p1? ... "</function>\n</tool_call>"
 *   tK_pJ ::= "<parameter=KEY>\n" VALUE "\n</parameter>\n"   (optional ones with ?)
 * A reader (vLLM's qwen3_coder parser, the server's) takes VALUE with one
 * "\n" stripped from each end and converts it by the property's "type";
 * VALUE is chosen so that the conversion gives a value valid for it:
 *   type "string" (or no type, no other keyword)  xml_text: any text without
 *       the words that end a value early (tg__stop_words) and not "null" in
 *       any case (the reader's null); a leading or trailing "\n" of its own
 *       survives the reader's stripping
 *   "string" with enum / const, or no type with string enum / const  the
 *       strings as raw text (each checked like xml_text)
 *   "string" with format  the format's rule from the schema compiler
 *   a type list of "string" and "null", or (no type) an anyOf / oneOf of
 *       {"type": "string"} and {"type": "null"} (pydantic's Optional[str])
 *       xml_text, and "null" where null is among them: a reader converts
 *       by the first type that is not "null"
 *   a type list of integer, number, boolean, object or array and "null"
 *       (no enum or const beside it), or an anyOf / oneOf of a schema of
 *       such a type and {"type": "null"} (Optional[int])  that type's JSON
 *       text (below), or "null"
 *   integer, number, boolean, null, object, array  the subschema compiled
 *       with the prefix "tK_pJ_" (JSON text; '<' in its strings written as
 *       \u003c, nested patterns refused)
 * Anything else (other anyOf, oneOf and type lists, allOf, $ref, string
 * length or pattern, another keyword beside no type) is refused naming the keyword:
 * the reader would not convert it back to a valid value.
 *
 * The calls are separated by "\n" as the template writes consecutive calls,
 * and the hermes parser (server/tool_calls.c) reads them back. The think
 * block is "<think>\n" text "\n</think>\n\n", the text never holding
 * "</think>" (think_rest, when the prompt opened the block: the same
 * without its "<think>\n"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/tool_grammar.h"
#include "base/json_exact.h"
#include "grammar/ebnf_buf.h"
#include "grammar/grammar.h"

static enc_status tg__fail(const char *what)
{
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request.tool_calls: %s", what);
}

/* tools[i].function: its name (checked) and parameters (may be NULL). */
static enc_status tg__function(const cJSON *t, int i, const char **name, const cJSON **params)
{
    const cJSON *fn = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "function") : NULL;
    const cJSON *n = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    if (!cJSON_IsString(n) || !n->valuestring[0])
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request.tool_calls: tools[%d] has no function.name", i);
    for (const char *c = n->valuestring; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-'))
            return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                            "request.tool_calls: tools[%d].function.name \"%.64s\" must be "
                            "letters, digits, '_' or '-'",
                            i, n->valuestring);
    *name = n->valuestring;
    *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
    if (*params && cJSON_IsNull(*params)) *params = NULL;
    return ENC_OK;
}

/* A schema's text for the compiler into *text, its numbers exact (cJSON's
 * print keeps 15 digits: a bound of 5.000000000000001 would become 5). */
static enc_status tg__schema_text(const cJSON *schema, char **text)
{
    int bad_number = 0;
    *text = json_print_exact(schema, &bad_number);
    if (bad_number)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "json schema: a number that is not finite");
    return *text ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "tool calls: out of memory");
}

/* --- hermes calls (Qwen3) -------------------------------------------------- */

/* Tool i's argument rules (root t<i>_root) appended to b. */
static enc_status tg__arguments(ebnf_buf *b, int i, const char *name, const cJSON *params)
{
    char *text = NULL, prefix[24], *ebnf = NULL;
    enc_status st = params ? tg__schema_text(params, &text) : ENC_OK;
    const char *schema = text ? text : "{\"type\": \"object\"}";
    snprintf(prefix, sizeof prefix, "t%d_", i);
    if (st == ENC_OK) st = grammar_json_schema_to_ebnf(schema, strlen(schema), prefix, &ebnf);
    free(text);
    if (st != ENC_OK)
        return enc_fail_context(st, "tools[%d] (function \"%s\") parameters", i, name);
    ebnf_buf_printf(b, "%s\n", ebnf);
    free(ebnf);
    return ENC_OK;
}

/* The rule t<i>_call: one call of tool i. */
static void tg__call_rule(ebnf_buf *b, int i, const char *name)
{
    ebnf_buf_printf(b, "t%d_call ::= ", i);
    char head[128];
    snprintf(head, sizeof head, "<tool_call>\n{\"name\": \"%s\", \"arguments\": ", name);
    ebnf_buf_literal(b, head, strlen(head), "tool call");
    ebnf_buf_printf(b, " t%d_root ", i);
    ebnf_buf_literal(b, "}\n</tool_call>", 14, "tool call");
    ebnf_buf_append(b, "\n", 1);
}

/* --- XML calls (Qwen3-Coder) ------------------------------------------------ */

/* What a reader takes as the end of a value: vLLM's qwen3_coder parser cuts a
 * value at the first "</parameter>", "<parameter=" or "</function>", and a
 * call at the first "</tool_call>". Each word is '<' and the rest below, which
 * holds no '<' and nothing a [class] or a "literal" must escape. */
static const char *const tg__stop_words[] = {"/parameter>", "/function>", "/tool_call>",
                                             "parameter="};
#define TG_N_STOP ((int)(sizeof tg__stop_words / sizeof *tg__stop_words))

/* Keywords that only annotate a schema (the schema compiler's list). */
static const char *const tg__annotations[] = {
    "description", "title",    "default",   "examples", "$schema",     "$id",    "$comment",
    "deprecated",  "readOnly", "writeOnly", "$defs",    "definitions", "strict", NULL};

static const char *const tg__json_types[] = {"integer", "number", "boolean", "null",
                                             "object",  "array",  NULL};

static int tg__in(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (!strcmp(*list, s)) return 1;
    return 0;
}

/* Where an XML refusal points: the tool and the parameter. */
typedef struct tg_where {
    int tool;
    const char *name; /* the function's */
    const char *key;  /* the parameter's; NULL: the parameters schema itself */
} tg_where;

static enc_status tg__xml_fail(const tg_where *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static enc_status tg__xml_fail(const tg_where *w, const char *fmt, ...)
{
    char msg[256], param[96] = "parameters";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (w->key) snprintf(param, sizeof param, "parameter \"%.64s\"", w->key);
    return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                    "request.tool_calls: tools[%d] (function \"%s\") %s: %s (XML tool calls)",
                    w->tool, w->name, param, msg);
}

/* xml_lt, after '<' and word[0..depth) (a prefix of stop words): either a
 * byte that leaves every stop word (not '<') and a run without '<'; or the
 * next byte of a stop word that does not finish it, and so on; or nothing,
 * the next byte then being '<' (xml_text starts a tag there) or the end. */
static void tg__stop_tail(ebnf_buf *b, const char *word, size_t depth)
{
    char next[TG_N_STOP + 1];
    int n = 0;
    for (int i = 0; i < TG_N_STOP; i++) {
        const char *s = tg__stop_words[i];
        if (strlen(s) > depth && !strncmp(s, word, depth) && !memchr(next, s[depth], (size_t)n))
            next[n++] = s[depth];
    }
    next[n] = 0;
    ebnf_buf_printf(b, "( [^<%s] [^<]*", next);
    for (int k = 0; k < n; k++) {
        const char *on = NULL; /* a stop word going on with next[k] */
        int finishes = 0;
        for (int i = 0; i < TG_N_STOP; i++) {
            const char *s = tg__stop_words[i];
            if (strlen(s) > depth && !strncmp(s, word, depth) && s[depth] == next[k]) {
                on = s;
                finishes |= s[depth + 1] == 0;
            }
        }
        if (finishes) continue;
        ebnf_buf_printf(b, " | \"%c\" ", next[k]);
        tg__stop_tail(b, on, depth + 1);
    }
    ebnf_buf_append(b, " )?", 3);
}

/* xml_text: text holding no stop word, and not "null" in any case (its first
 * four bytes keep it out). Text is a run without '<', then tags: '<' and
 * xml_lt. xml_n is text that does not start with n or N (xml_any: that is
 * not empty), and so on. */
static void tg__xml_text_rules(ebnf_buf *b)
{
    ebnf_buf_printf(b, "xml_text ::= ( xml_n | [nN] ( xml_u | [uU] ( xml_l | [lL] ( xml_l | "
                       "[lL] xml_any )? )? )? )?\n");
    static const char *const first[][2] = {{"n", "nN"}, {"u", "uU"}, {"l", "lL"}, {"any", ""}};
    for (int i = 0; i < 4; i++)
        ebnf_buf_printf(b, "xml_%s ::= ( [^<%s] [^<]* | \"<\" xml_lt ) ( \"<\" xml_lt )*\n",
                        first[i][0], first[i][1]);
    ebnf_buf_printf(b, "xml_lt ::= ");
    tg__stop_tail(b, "", 0);
    ebnf_buf_append(b, "\n", 1);
}

/* The first stop word in s (after its '<'), or NULL. */
static const char *tg__stop_word(const char *s)
{
    for (const char *lt = strchr(s, '<'); lt; lt = strchr(lt + 1, '<'))
        for (int k = 0; k < TG_N_STOP; k++)
            if (!strncmp(lt + 1, tg__stop_words[k], strlen(tg__stop_words[k]))) return lt;
    return NULL;
}

/* s as raw text a reader gives back: no stop word, not "null" in any case. */
static int tg__text_safe(const char *s)
{
    static const char null[] = "null";
    int is_null = strlen(s) == 4;
    for (int i = 0; is_null && i < 4; i++)
        is_null = (s[i] | 0x20) == null[i];
    return !is_null && !tg__stop_word(s);
}

/* VALUE for enum (an array) or const (one value): its strings as raw text. */
static enc_status tg__xml_enum(ebnf_buf *v, const cJSON *c, const tg_where *w)
{
    const char *kw = c->string;
    int is_enum = !strcmp(kw, "enum");
    if (is_enum && (!cJSON_IsArray(c) || !c->child))
        return tg__xml_fail(w, "'enum' must be a non-empty array");
    ebnf_buf_append(v, "(", 1);
    const char *sep = " ";
    for (const cJSON *one = is_enum ? c->child : c; one; one = is_enum ? one->next : NULL) {
        if (!cJSON_IsString(one))
            return tg__xml_fail(w, "'%s' with a value that is not a string is not supported", kw);
        if (!tg__text_safe(one->valuestring))
            return tg__xml_fail(w,
                                "'%s' value \"%.64s\" would not read back (\"null\" or a "
                                "closing tag)",
                                kw, one->valuestring);
        ebnf_buf_printf(v, "%s", sep);
        sep = " | ";
        ENC_TRY(
            ebnf_buf_literal(v, one->valuestring, strlen(one->valuestring), "tool parameter enum"));
    }
    ebnf_buf_append(v, " )", 2);
    return ENC_OK;
}

/* The keyword of a JSON subschema (or of a schema under it) that could write
 * a stop word inside a string: a pattern, an enum / const holding one; or
 * "$ref": "#", which would now point at the parameter rather than the
 * parameters schema. NULL: none. */
static const char *tg__json_unsafe(const cJSON *s)
{
    static const char *const maps[] = {"properties", "$defs", "definitions", NULL};
    for (const cJSON *c = cJSON_IsObject(s) ? s->child : NULL; c; c = c->next) {
        const char *k = c->string, *bad = NULL;
        if (!strcmp(k, "pattern")) return k;
        if (!strcmp(k, "$ref") && cJSON_IsString(c) && !strcmp(c->valuestring, "#")) return k;
        if (!strcmp(k, "enum") || !strcmp(k, "const")) {
            char *text = cJSON_PrintUnformatted(c);
            int safe = text && !tg__stop_word(text);
            free(text);
            if (!safe) return k;
        } else if (tg__in(maps, k)) { /* name -> schema */
            for (const cJSON *e = c->child; e && !bad; e = e->next)
                bad = tg__json_unsafe(e);
        } else if (cJSON_IsArray(c) || cJSON_IsObject(c)) { /* a schema, or a list of them */
            if (tg__in(tg__annotations, k)) continue;
            bad = cJSON_IsObject(c) ? tg__json_unsafe(c) : NULL;
            for (const cJSON *e = cJSON_IsArray(c) ? c->child : NULL; e && !bad; e = e->next)
                bad = tg__json_unsafe(e);
        }
        if (bad) return bad;
    }
    return NULL;
}

/* The schema text (taken: freed here; NULL when printing it ran out of
 * memory) compiled to rules with the prefix, errors naming the parameter. */
static enc_status tg__compile(const cJSON *schema, const char *prefix, const tg_where *w,
                              char **ebnf)
{
    char *text = NULL;
    enc_status st = tg__schema_text(schema, &text);
    if (st == ENC_OK) st = grammar_json_schema_to_ebnf(text, strlen(text), prefix, ebnf);
    free(text);
    if (st != ENC_OK)
        return enc_fail_context(st, "tools[%d] (function \"%s\") parameter \"%.64s\"", w->tool,
                                w->name, w->key);
    return ENC_OK;
}

/* The rules of prop as JSON (rule prefix `prefix`, root <prefix>root), with
 * the parameters' $defs / definitions beside it for its $refs, and '<' in its
 * strings written only escaped (\u003c). */
static enc_status tg__xml_json(ebnf_buf *b, const char *prefix, const cJSON *prop,
                               const cJSON *params, const char *type, const tg_where *w)
{
    cJSON *sub = cJSON_CreateObject(); /* references into prop and params; owns only a type */
    if (!sub) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tool calls: out of memory");
    for (cJSON *k = prop->child; k; k = k->next)
        if (!type || strcmp(k->string, "type")) cJSON_AddItemReferenceToObject(sub, k->string, k);
    if (type && !cJSON_AddStringToObject(sub, "type", type)) {
        cJSON_Delete(sub);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tool calls: out of memory");
    }
    static const char *const defs[] = {"$defs", "definitions"};
    for (int i = 0; i < 2; i++) {
        cJSON *d = cJSON_GetObjectItemCaseSensitive(params, defs[i]);
        if (d && !cJSON_GetObjectItemCaseSensitive(prop, defs[i]))
            cJSON_AddItemReferenceToObject(sub, defs[i], d);
    }
    const char *bad = tg__json_unsafe(sub);
    char *ebnf = NULL;
    enc_status st = bad ? ENC_OK : tg__compile(sub, prefix, w, &ebnf);
    cJSON_Delete(sub);
    if (bad)
        return tg__xml_fail(w,
                            "'%s' inside a JSON value is not supported (it could write a "
                            "closing tag, or point elsewhere)",
                            bad);
    if (st != ENC_OK) return st;
    /* The compiler's one rule for a character inside a string (its layout,
     * ebnf_builtin.c): '<' joins the characters it writes only escaped. */
    char needle[96];
    snprintf(needle, sizeof needle, "\n%schar ::= [^\"\\\\\\x00-\\x1F", prefix);
    const char *at = strstr(ebnf, needle);
    if (at) {
        size_t cut = (size_t)(at - ebnf) + strlen(needle);
        ebnf_buf_append(b, ebnf, cut);
        ebnf_buf_printf(b, "<%s\n", ebnf + cut);
    } else {
        st = enc_fail(ENC_ERR_INTERNAL, "tool calls: no rule %schar in a schema's grammar", prefix);
    }
    free(ebnf);
    return st;
}

/* The rules of prop's string format (the compiler's <prefix>fmt-NAME, the
 * bare text: digits and punctuation, never '<' nor "null"). */
static enc_status tg__xml_format(ebnf_buf *b, ebnf_buf *v, const char *prefix, const cJSON *prop,
                                 const cJSON *format, const tg_where *w)
{
    if (!cJSON_IsString(format)) return tg__xml_fail(w, "'format' must be a string");
    char *ebnf = NULL;
    enc_status st = tg__compile(prop, prefix, w, &ebnf);
    if (st != ENC_OK) return st;
    char needle[128];
    snprintf(needle, sizeof needle, "\n%sfmt-%.64s ::= ", prefix, format->valuestring);
    if (strstr(ebnf, needle)) {
        ebnf_buf_printf(b, "%s", ebnf);
        ebnf_buf_printf(v, "%sfmt-%.64s", prefix, format->valuestring);
    } else {
        st = enc_fail(ENC_ERR_INTERNAL, "tool calls: no rule %sfmt-%.64s in a schema's grammar",
                      prefix, format->valuestring);
    }
    free(ebnf);
    return st;
}

/* Add the type name t to a string-or-null set: *string and *nullable mark
 * "string" and "null"; 0 for any other name (or a type that is not a name). */
static int tg__string_or_null_type(const cJSON *t, int *string, int *nullable)
{
    if (!cJSON_IsString(t)) return 0;
    if (!strcmp(t->valuestring, "string")) return *string = 1;
    if (!strcmp(t->valuestring, "null")) return *nullable = 1;
    return 0;
}

/* 1 when s holds nothing but annotations and its key `key`. */
static int tg__only_annotations_and(const cJSON *s, const char *key)
{
    for (const cJSON *c = s->child; c; c = c->next)
        if (strcmp(c->string, key) && !tg__in(tg__annotations, c->string)) return 0;
    return 1;
}

/* 1 when prop is a string that may be null and nothing more: a type list of
 * "string" and "null", or (no type) an anyOf / oneOf of {"type": "string"}
 * and {"type": "null"} (Optional[str] as pydantic writes it); at least one
 * "string" either way. A reader reads such a parameter as a string (its type
 * is not one type name), "null" as null. *nullable: null allowed. */
static int tg__xml_string_or_null(const cJSON *prop, int *nullable)
{
    int string = 0;
    *nullable = 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(prop, "type");
    if (cJSON_IsArray(type)) {
        if (!tg__only_annotations_and(prop, "type")) return 0;
        for (const cJSON *e = type->child; e; e = e->next)
            if (!tg__string_or_null_type(e, &string, nullable)) return 0;
        return string;
    }
    const char *kw = cJSON_GetObjectItemCaseSensitive(prop, "anyOf") ? "anyOf" : "oneOf";
    const cJSON *branches = cJSON_GetObjectItemCaseSensitive(prop, kw);
    if (type || !cJSON_IsArray(branches) || !tg__only_annotations_and(prop, kw)) return 0;
    for (const cJSON *b = branches->child; b; b = b->next)
        if (!cJSON_IsObject(b) || !tg__only_annotations_and(b, "type") ||
            !tg__string_or_null_type(cJSON_GetObjectItemCaseSensitive(b, "type"), &string,
                                     nullable))
            return 0;
    return string;
}

/* 1 when prop is one JSON type or null (Optional[int] and the like): a type
 * list of such a type and "null" (*schema prop, *type the type), or (no
 * type) an anyOf / oneOf of a schema of such a type and {"type": "null"}
 * (*schema that branch, *type NULL). A reader converts its value by that
 * type (the first that is not "null"), and reads "null" as null. */
static int tg__xml_json_or_null(const cJSON *prop, const cJSON **schema, const char **type)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(prop, "type"), *other = NULL;
    int nulls = 0;
    if (cJSON_IsArray(t) && cJSON_GetArraySize(t) == 2) {
        for (const cJSON *e = t->child; e; e = e->next) {
            if (cJSON_IsString(e) && !strcmp(e->valuestring, "null"))
                nulls++;
            else
                other = e;
        }
        /* an enum or const beside the list would have to hold null for "null" to be valid */
        if (nulls != 1 || !cJSON_IsString(other) || !tg__in(tg__json_types, other->valuestring) ||
            cJSON_GetObjectItemCaseSensitive(prop, "enum") ||
            cJSON_GetObjectItemCaseSensitive(prop, "const"))
            return 0;
        *schema = prop, *type = other->valuestring;
        return 1;
    }
    const char *kw = cJSON_GetObjectItemCaseSensitive(prop, "anyOf") ? "anyOf" : "oneOf";
    const cJSON *branches = cJSON_GetObjectItemCaseSensitive(prop, kw);
    if (t || !cJSON_IsArray(branches) || cJSON_GetArraySize(branches) != 2 ||
        !tg__only_annotations_and(prop, kw))
        return 0;
    for (const cJSON *b = branches->child; b; b = b->next) {
        const cJSON *bt = cJSON_IsObject(b) ? cJSON_GetObjectItemCaseSensitive(b, "type") : NULL;
        if (!cJSON_IsString(bt)) return 0;
        if (!strcmp(bt->valuestring, "null") && tg__only_annotations_and(b, "type"))
            nulls++;
        else
            other = b;
    }
    if (nulls != 1 || !other) return 0;
    const char *ot = cJSON_GetObjectItemCaseSensitive(other, "type")->valuestring;
    if (!tg__in(tg__json_types, ot) || !strcmp(ot, "null")) return 0;
    *schema = other, *type = NULL;
    return 1;
}

/* VALUE of a parameter whose schema is prop (the text after "<parameter=KEY>\n"):
 * its expression in v, the rules it needs in b. */
static enc_status tg__xml_value(ebnf_buf *b, ebnf_buf *v, const char *prefix, const cJSON *prop,
                                const cJSON *params, const tg_where *w, int *uses_text)
{
    if (cJSON_IsTrue(prop)) {
        ebnf_buf_printf(v, "xml_text");
        *uses_text = 1;
        return ENC_OK;
    }
    if (!cJSON_IsObject(prop)) return tg__xml_fail(w, "the schema must be an object or true");
    int nullable = 0;
    if (tg__xml_string_or_null(prop, &nullable)) {
        ebnf_buf_printf(v, nullable ? "( xml_text | \"null\" )" : "xml_text");
        *uses_text = 1;
        return ENC_OK;
    }
    const cJSON *schema;
    const char *as;
    if (tg__xml_json_or_null(prop, &schema, &as)) {
        ENC_TRY(tg__xml_json(b, prefix, schema, params, as, w));
        ebnf_buf_printf(v, "( %sroot | \"null\" )", prefix);
        return ENC_OK;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(prop, "type");
    if (type && !cJSON_IsString(type))
        return tg__xml_fail(w, "'type' must be one type name (a list is supported only of "
                               "one type and \"null\")");
    const char *t = type ? type->valuestring : NULL;
    if (t && tg__in(tg__json_types, t)) {
        ENC_TRY(tg__xml_json(b, prefix, prop, params, NULL, w));
        ebnf_buf_printf(v, "%sroot", prefix);
        return ENC_OK;
    }
    if (t && strcmp(t, "string")) return tg__xml_fail(w, "unsupported 'type' \"%.32s\"", t);
    /* Raw text: a string, or no type (which the reader reads as a string). */
    const cJSON *only = NULL; /* enum, const or format */
    for (const cJSON *c = prop->child; c; c = c->next) {
        const char *k = c->string;
        if (tg__in(tg__annotations, k) || !strcmp(k, "type")) continue;
        int ok = !strcmp(k, "enum") || !strcmp(k, "const") || (t && !strcmp(k, "format"));
        if (!ok)
            return tg__xml_fail(w, "'%s' is not supported %s", k,
                                t ? "on a string parameter" : "without a 'type'");
        if (only) return tg__xml_fail(w, "'%s' beside '%s' is not supported", k, only->string);
        only = c;
    }
    if (only && !strcmp(only->string, "format")) return tg__xml_format(b, v, prefix, prop, only, w);
    if (only) return tg__xml_enum(v, only, w);
    ebnf_buf_printf(v, "xml_text");
    *uses_text = 1;
    return ENC_OK;
}

/* The rule tK_pJ for the parameter w->key (schema prop). */
static enc_status tg__xml_param(ebnf_buf *b, int k, int j, const cJSON *prop, const cJSON *params,
                                const tg_where *w, int *uses_text)
{
    for (const unsigned char *c = (const unsigned char *)w->key; *c; c++)
        if (*c == '<' || *c == '>' || *c < 0x20)
            return tg__xml_fail(w, "the name must not hold '<', '>' or control characters");
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t%d_p%d_", k, j);
    ebnf_buf v = {0};
    enc_status st = tg__xml_value(b, &v, prefix, prop, params, w, uses_text);
    if (st == ENC_OK && v.oom) st = enc_fail(ENC_ERR_OUT_OF_MEMORY, "tool calls: out of memory");
    if (st == ENC_OK) {
        ebnf_buf_printf(b, "t%d_p%d ::= \"<parameter=\" ", k, j);
        st = ebnf_buf_literal(b, w->key, strlen(w->key), "tool parameter name");
    }
    if (st == ENC_OK) ebnf_buf_printf(b, " \">\\n\" %s \"\\n</parameter>\\n\"\n", v.s);
    ebnf_buf_free(&v);
    return st;
}

/* Tool i's parameter rules and its rule t<i>_call. */
static enc_status tg__xml_call(ebnf_buf *b, int i, const char *name, const cJSON *params,
                               int *uses_text)
{
    tg_where w = {i, name, NULL};
    const cJSON *props = NULL, *required = NULL;
    if (params && !cJSON_IsObject(params)) return tg__xml_fail(&w, "must be a schema object");
    for (const cJSON *c = params ? params->child : NULL; c; c = c->next) {
        const char *k = c->string;
        if (!strcmp(k, "type")) {
            if (!cJSON_IsString(c) || strcmp(c->valuestring, "object"))
                return tg__xml_fail(&w, "'type' must be \"object\"");
        } else if (!strcmp(k, "properties")) {
            if (!cJSON_IsObject(c)) return tg__xml_fail(&w, "'properties' must be an object");
            props = c;
        } else if (!strcmp(k, "required")) {
            if (!cJSON_IsArray(c)) return tg__xml_fail(&w, "'required' must be an array");
            required = c;
        } else if (strcmp(k, "additionalProperties") && !tg__in(tg__annotations, k)) {
            return tg__xml_fail(&w, "unsupported keyword '%s'", k);
        }
    }
    for (const cJSON *r = required ? required->child : NULL; r; r = r->next)
        if (!cJSON_IsString(r) || !cJSON_GetObjectItemCaseSensitive(props, r->valuestring))
            return tg__xml_fail(&w, "'required' names \"%.64s\", which is not in 'properties'",
                                cJSON_IsString(r) ? r->valuestring : "(not a string)");
    int j = 0;
    for (const cJSON *p = props ? props->child : NULL; p; p = p->next, j++) {
        w.key = p->string;
        ENC_TRY(tg__xml_param(b, i, j, p, params, &w, uses_text));
    }
    ebnf_buf_printf(b, "t%d_call ::= ", i);
    char head[128];
    snprintf(head, sizeof head, "<tool_call>\n<function=%s>\n", name);
    ebnf_buf_literal(b, head, strlen(head), "tool call");
    j = 0;
    for (const cJSON *p = props ? props->child : NULL; p; p = p->next, j++) {
        int req = 0;
        for (const cJSON *r = required ? required->child : NULL; r && !req; r = r->next)
            req = !strcmp(r->valuestring, p->string);
        ebnf_buf_printf(b, " t%d_p%d%s", i, j, req ? "" : "?");
    }
    ebnf_buf_printf(b, " ");
    ebnf_buf_literal(b, "</function>\n</tool_call>", 24, "tool call");
    ebnf_buf_append(b, "\n", 1);
    return ENC_OK;
}

/* The root: [think] then one call of `only` (>= 0) or calls of any tool. */
static enc_status tg__root(ebnf_buf *b, int n_tools, int only, int thinking)
{
    if (thinking) { /* 2: the prompt opened the block, the reply begins inside it */
        char *think = NULL;
        ENC_TRY(grammar_think_to_ebnf(thinking == 2, "think_", &think));
        ebnf_buf_printf(b, "%s\n", think);
        free(think);
    }
    ebnf_buf_printf(b, "root ::= %s",
                    thinking == 2 ? "think_root "
                    : thinking    ? "think_root? "
                                  : "");
    if (only >= 0) {
        ebnf_buf_printf(b, "t%d_call\n", only);
        return ENC_OK;
    }
    ebnf_buf_printf(b, "call (\"\\n\" call)*\ncall ::= ");
    for (int i = 0; i < n_tools; i++)
        ebnf_buf_printf(b, "%st%d_call", i ? " | " : "", i);
    ebnf_buf_append(b, "\n", 1);
    return ENC_OK;
}

/* --- the whole grammar -------------------------------------------------------- */

static enc_status tg__compose(const cJSON *tools, const encore_request *r, chat_tool_format format,
                              ebnf_buf *b)
{
    int n = cJSON_GetArraySize(tools), only = -1, i = 0, uses_text = 0;
    if (n <= 0) return tg__fail("must be a JSON array of one or more tools");
    for (const cJSON *t = tools->child; t; t = t->next, i++) {
        const char *name = NULL;
        const cJSON *params = NULL;
        ENC_TRY(tg__function(t, i, &name, &params));
        if (r->tool_call_name && !strcmp(name, r->tool_call_name)) only = i;
        if (r->tool_call_name && only != i) continue;
        if (format == CHAT_TOOLS_XML) {
            ENC_TRY(tg__xml_call(b, i, name, params, &uses_text));
            continue;
        }
        ENC_TRY(tg__arguments(b, i, name, params));
        tg__call_rule(b, i, name);
    }
    if (uses_text) tg__xml_text_rules(b);
    if (r->tool_call_name && only < 0)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request.tool_call_name: \"%.64s\" is not one of the tools",
                        r->tool_call_name);
    /* Qwen3-Coder's template has no think block: no reasoning before its calls */
    return tg__root(b, n, only, format == CHAT_TOOLS_HERMES ? r->think_first : 0);
}

enc_status api_tool_grammar_ebnf(const encore_request *r, chat_tool_format format, char **ebnf)
{
    *ebnf = NULL;
    cJSON *tools = cJSON_Parse(r->tool_calls);
    if (!cJSON_IsArray(tools)) {
        cJSON_Delete(tools);
        return tg__fail("must be a JSON array of one or more tools");
    }
    ebnf_buf b = {0};
    enc_status st = tg__compose(tools, r, format, &b);
    cJSON_Delete(tools);
    if (st != ENC_OK) {
        ebnf_buf_free(&b);
        return st;
    }
    return ebnf_buf_finish(&b, ebnf);
}
