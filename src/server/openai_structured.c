/* openai_structured.c - response_format, structured_outputs and guided_*
 * read into an oai_structured (see openai_structured.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_span.h"
#include "openai_request.h"
#include "openai_structured.h"

static char *os__dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int os__oom(oai_error *err)
{
    return oai_error_set(err, 500, NULL, "out of memory");
}

/* Only one constraint per request. */
static int os__claim(oai_structured *s, const char *param, oai_error *err)
{
    if (s->param)
        return oai_error_set(err, 400, param, "'%s' and '%s' both constrain the output; give one",
                             s->param, param);
    s->param = param;
    return 1;
}

/* A schema given as an object (or, for vLLM's fields, as its JSON text). */
static int os__schema(const cJSON *v, const char *param, int text_ok, oai_structured *s,
                      oai_error *err)
{
    if (!os__claim(s, param, err)) return 0;
    if (cJSON_IsString(v) && text_ok)
        s->json_schema = os__dup(v->valuestring);
    else if (cJSON_IsObject(v) || cJSON_IsBool(v))
        s->json_schema = cJSON_PrintUnformatted(v), s->schema_printed = 1;
    else
        return oai_error_set(err, 400, param, "'%s' must be a JSON schema (an object)", param);
    return s->json_schema ? 1 : os__oom(err);
}

static int os__text(const cJSON *v, const char *param, char **out, oai_structured *s,
                    oai_error *err)
{
    if (!os__claim(s, param, err)) return 0;
    if (!cJSON_IsString(v)) return oai_error_set(err, 400, param, "'%s' must be a string", param);
    *out = os__dup(v->valuestring);
    return *out ? 1 : os__oom(err);
}

static int os__choices(const cJSON *v, const char *param, oai_structured *s, oai_error *err)
{
    if (!os__claim(s, param, err)) return 0;
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (n <= 0 || n > 4096)
        return oai_error_set(err, 400, param, "'%s' must be an array of 1 to 4096 strings", param);
    s->choices = calloc((size_t)n, sizeof *s->choices);
    if (!s->choices) return os__oom(err);
    for (const cJSON *c = v->child; c; c = c->next) {
        if (!cJSON_IsString(c))
            return oai_error_set(err, 400, param, "'%s' must be an array of strings", param);
        if (!(s->choices[s->n_choices++] = os__dup(c->valuestring))) return os__oom(err);
    }
    return 1;
}

static int os__response_format(const cJSON *v, oai_structured *s, oai_error *err)
{
    const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : NULL;
    if (!cJSON_IsString(type))
        return oai_error_set(err, 400, "response_format",
                             "'response_format' must be an object with a 'type'");
    const char *t = type->valuestring;
    if (!strcmp(t, "text")) return 1;
    if (!strcmp(t, "json_object"))
        return os__claim(s, "response_format", err) && (s->json_object = 1);
    if (strcmp(t, "json_schema"))
        return oai_error_set(
            err, 400, "response_format.type",
            "response_format type '%s' is not supported (text, json_object, json_schema)", t);
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(v, "json_schema");
    if (!cJSON_IsObject(js))
        return oai_error_set(
            err, 400, "response_format.json_schema",
            "'response_format.json_schema' must be an object with 'name' and 'schema'");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(js, "name"),
                *strict = cJSON_GetObjectItemCaseSensitive(js, "strict"),
                *schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
    if (name && !cJSON_IsString(name))
        return oai_error_set(err, 400, "response_format.json_schema.name",
                             "'name' must be a string");
    if (strict && !cJSON_IsBool(strict) && !cJSON_IsNull(strict))
        return oai_error_set(err, 400, "response_format.json_schema.strict",
                             "'strict' must be a boolean");
    if (!schema)
        return oai_error_set(err, 400, "response_format.json_schema.schema",
                             "'response_format.json_schema.schema' is required");
    return os__schema(schema, "response_format.json_schema.schema", 0, s, err);
}

/* vLLM's structured_outputs object. */
static int os__structured_outputs(const cJSON *v, oai_structured *s, oai_error *err)
{
    if (!cJSON_IsObject(v))
        return oai_error_set(err, 400, "structured_outputs",
                             "'structured_outputs' must be an object");
    for (const cJSON *f = v->child; f; f = f->next) {
        if (cJSON_IsNull(f)) continue;
        const char *k = f->string;
        int ok;
        if (!strcmp(k, "json"))
            ok = os__schema(f, "structured_outputs.json", 1, s, err);
        else if (!strcmp(k, "regex"))
            ok = os__text(f, "structured_outputs.regex", &s->regex, s, err);
        else if (!strcmp(k, "grammar"))
            ok = os__text(f, "structured_outputs.grammar", &s->grammar, s, err);
        else if (!strcmp(k, "choice"))
            ok = os__choices(f, "structured_outputs.choice", s, err);
        else if (!strcmp(k, "json_object")) {
            if (!cJSON_IsBool(f))
                return oai_error_set(err, 400, "structured_outputs.json_object",
                                     "'json_object' must be a boolean");
            ok = cJSON_IsFalse(f) ||
                 (os__claim(s, "structured_outputs.json_object", err) && (s->json_object = 1));
        } else {
            char param[64];
            snprintf(param, sizeof param, "structured_outputs.%s", k);
            return oai_error_set(err, 400, param, "'%s' is not supported", param);
        }
        if (!ok) return 0;
    }
    return 1;
}

int oai_structured_parse(const cJSON *obj, oai_structured *s, oai_error *err)
{
    memset(s, 0, sizeof *s);
    static const char *const refused[] = {"guided_whitespace_pattern", "guided_decoding_backend",
                                          "structural_tag", NULL};
    for (int i = 0; refused[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, refused[i]);
        if (v && !cJSON_IsNull(v))
            return oai_error_set(err, 400, refused[i], "'%s' is not supported", refused[i]);
    }
    for (const cJSON *f = obj->child; f; f = f->next) {
        if (cJSON_IsNull(f)) continue;
        const char *k = f->string;
        int ok = 1;
        if (!strcmp(k, "response_format"))
            ok = os__response_format(f, s, err);
        else if (!strcmp(k, "structured_outputs"))
            ok = os__structured_outputs(f, s, err);
        else if (!strcmp(k, "guided_json"))
            ok = os__schema(f, "guided_json", 1, s, err);
        else if (!strcmp(k, "guided_regex"))
            ok = os__text(f, "guided_regex", &s->regex, s, err);
        else if (!strcmp(k, "guided_grammar"))
            ok = os__text(f, "guided_grammar", &s->grammar, s, err);
        else if (!strcmp(k, "guided_choice"))
            ok = os__choices(f, "guided_choice", s, err);
        if (!ok) {
            oai_structured_free(s);
            return 0;
        }
    }
    return 1;
}

int oai_structured_keep_text(const char *body, size_t len, oai_structured *s, oai_error *err)
{
    if (!s->json_schema || !s->schema_printed) return 1;
    size_t begin = 0, end = len;
    char key[64];
    for (const char *p = s->param; *p;) { /* down the dotted path, member by member */
        size_t n = strcspn(p, ".");
        if (n >= sizeof key) return 1;
        memcpy(key, p, n);
        key[n] = '\0';
        size_t b, e;
        if (!json_span_member(body + begin, end - begin, key, &b, &e)) return 1;
        end = begin + e;
        begin += b;
        p += n + (p[n] == '.');
    }
    char *text = json_span_compact(body, begin, end);
    if (!text) return os__oom(err);
    /* the same value as the one checked (not another member spelled alike
     * after an escaped one that cJSON took): printed alike */
    int same = json_span_prints_as(text, strlen(text), s->json_schema);
    if (same < 0) {
        free(text);
        return os__oom(err);
    }
    if (!same) {
        free(text);
        return 1;
    }
    free(s->json_schema);
    s->json_schema = text;
    s->schema_printed = 0;
    return 1;
}

void oai_structured_free(oai_structured *s)
{
    if (!s) return;
    free(s->json_schema);
    free(s->regex);
    free(s->grammar);
    for (size_t i = 0; i < s->n_choices; i++)
        free(s->choices[i]);
    free(s->choices);
    memset(s, 0, sizeof *s);
}
