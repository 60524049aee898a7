/* chat_template_coder.c - Qwen3-Coder's chat template, rendered natively.
 *
 * The template (Qwen3-Coder-*-Instruct's tokenizer_config.json) is ChatML
 * without think blocks; it describes the tools in XML and shows calls as
 *
 *   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
 *
 * each VALUE printed as Python's str() of the argument (a string as itself,
 * True, None, 1.5; an object or array as its tojson). The arguments are
 * those of an OpenAI request parsed with json.loads, as vLLM does before it
 * renders: they must be a JSON object.
 *
 * Three stretches of prose differ between releases of the template (the
 * default system prompt, the preamble of the tools block, the instructions
 * after it), so they are not written here: they are read from the template
 * itself, each a statement {{- '...' }} found by its neighbours. The rest
 * follows the template statement by statement; the comments quote it. The
 * tests render the real template with Jinja2 and compare byte for byte.
 * Known differences: a repeated key in a JSON object is printed each time
 * (Python keeps one), and a number beyond a double's range is refused. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/chat_template_impl.h"

/* --- the template's own prose ----------------------------------------------------------- */

/* The statements {{- 'literal' }} of a template, unescaped, in order. */
typedef struct coder__literals {
    tok__bytes text; /* every literal, each NUL-terminated */
    size_t *at;      /* [n] offsets into text */
    size_t n, cap;
} coder__literals;

static void coder__literals_free(coder__literals *l)
{
    free(l->text.data);
    free(l->at);
}

/* The Jinja string literal at s[*i] (its quote), unescaped as Jinja's lexer
 * does (Python's unicode-escape: \n \t \r \\ \' \" \xNN; other escapes stay
 * as written) into out. 0 when it does not close. */
static int coder__literal(const char *s, size_t *i, tok__bytes *out)
{
    char q = s[(*i)++];
    for (; s[*i] && s[*i] != q; (*i)++) {
        char c = s[*i];
        if (c == '\\' && s[*i + 1]) {
            const char *e = strchr("nrt\\'\"", s[++*i]);
            static const char plain[] = "\n\r\t\\'\"";
            if (e) {
                c = plain[e - "nrt\\'\""];
            } else {
                (*i)--; /* kept as written */
            }
        }
        if (tok__bytes_append(out, &c, 1) != ENC_OK) return 0;
    }
    if (s[*i] != q) return 0;
    (*i)++;
    return tok__bytes_append(out, "", 1) == ENC_OK;
}

/* Every statement of text that prints one literal and nothing else. */
static int coder__scan(const char *text, coder__literals *l)
{
    for (const char *p = strstr(text, "{{-"); p; p = strstr(p + 3, "{{-")) {
        size_t i = (size_t)(p - text) + 3, at = l->text.len;
        while (text[i] == ' ')
            i++;
        if (text[i] != '\'' && text[i] != '"') continue;
        if (!coder__literal(text, &i, &l->text)) return 0;
        while (text[i] == ' ')
            i++;
        if (strncmp(text + i, "}}", 2) != 0) { /* more than a literal */
            l->text.len = at;
            continue;
        }
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 32;
            size_t *g = realloc(l->at, l->cap * sizeof *g);
            if (!g) return 0;
            l->at = g;
        }
        l->at[l->n++] = at;
    }
    return 1;
}

static const char *coder__lit(const coder__literals *l, size_t k)
{
    return l->text.data + l->at[k];
}

/* The prose: the system turn's head when tools come without a system
 * message, the text before "<tools>", and the text after "\n</tools>". */
typedef struct coder__prose {
    const char *default_system, *tools_before, *tools_after; /* into lits */
    coder__literals lits;
} coder__prose;

static int coder__prose_read(const char *text, coder__prose *p)
{
    memset(p, 0, sizeof *p);
    if (!coder__scan(text, &p->lits)) return 0;
    const coder__literals *l = &p->lits;
    for (size_t k = 0; k < l->n; k++) {
        const char *s = coder__lit(l, k);
        if (!p->default_system && !strncmp(s, "<|im_start|>system\n", 19) && s[19])
            p->default_system = s;
        if (k > 0 && !p->tools_before && !strcmp(s, "<tools>"))
            p->tools_before = coder__lit(l, k - 1);
        if (k + 1 < l->n && !p->tools_after && !strcmp(s, "\n</tools>"))
            p->tools_after = coder__lit(l, k + 1);
    }
    return p->default_system && p->tools_before && p->tools_after;
}

int chat__coder_detect(const char *text)
{
    /* the statements the renderer below follows */
    static const char *const statements[] = {
        "{% macro render_extra_keys(json_dict, handled_keys) %}",
        "{%- for json_key in json_dict if json_key not in handled_keys %}",
        "{%- if json_dict[json_key] is mapping or (json_dict[json_key] is sequence and "
        "json_dict[json_key] is not string) %}",
        "{{- '\\n<' ~ json_key ~ '>' ~ (json_dict[json_key] | tojson | safe) ~ '</' ~ json_key "
        "~ '>' }}",
        "{{-'\\n<' ~ json_key ~ '>' ~ (json_dict[json_key] | string) ~ '</' ~ json_key ~ '>' }}",
        "{%- set system_message = messages[0][\"content\"] %}",
        "{{- \"<|im_start|>system\\n\" + system_message }}",
        "{{- \"\\n<function>\\n<name>\" ~ tool.name ~ \"</name>\" }}",
        "{%- if tool.description is defined %}",
        "{{- '\\n<description>' ~ (tool.description | trim) ~ '</description>' }}",
        "{{- '\\n<parameters>' }}",
        "{%- if tool.parameters is defined and tool.parameters is mapping and "
        "tool.parameters.properties is defined and tool.parameters.properties is mapping %}",
        "{%- for param_name, param_fields in tool.parameters.properties|items %}",
        "{{- '\\n<parameter>' }}",
        "{{- '\\n<name>' ~ param_name ~ '</name>' }}",
        "{%- if param_fields.type is defined %}",
        "{{- '\\n<type>' ~ (param_fields.type | string) ~ '</type>' }}",
        "{%- if param_fields.description is defined %}",
        "{{- '\\n<description>' ~ (param_fields.description | trim) ~ '</description>' }}",
        "{%- set handled_keys = ['name', 'type', 'description'] %}",
        "{{- render_extra_keys(param_fields, handled_keys) }}",
        "{{- '\\n</parameter>' }}",
        "{% set handled_keys = ['type', 'properties'] %}",
        "{{- render_extra_keys(tool.parameters, handled_keys) }}",
        "{{- '\\n</parameters>' }}",
        "{%- set handled_keys = ['type', 'name', 'description', 'parameters'] %}",
        "{{- render_extra_keys(tool, handled_keys) }}",
        "{{- '\\n</function>' }}",
        "{{- '<|im_start|>' + message.role }}",
        "{%- if message.content is defined and message.content is string and "
        "message.content | trim | length > 0 %}",
        "{{- '\\n' + message.content | trim + '\\n' }}",
        "{{- '\\n<tool_call>\\n<function=' + tool_call.name + '>\\n' }}",
        "{%- for args_name, args_value in tool_call.arguments|items %}",
        "{{- '<parameter=' + args_name + '>\\n' }}",
        "{%- set args_value = args_value | tojson | safe if args_value is mapping or "
        "(args_value is sequence and args_value is not string) else args_value | string %}",
        "{{- args_value }}",
        "{{- '\\n</parameter>\\n' }}",
        "{{- '</function>\\n</tool_call>' }}",
        "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}",
        "{%- if loop.previtem and loop.previtem.role != \"tool\" %}",
        "{{- '<tool_response>\\n' }}",
        "{{- '\\n</tool_response>\\n' }}",
        "{%- if not loop.last and loop.nextitem.role != \"tool\" %}",
        "{{- '<|im_start|>assistant\\n' }}",
    };
    for (size_t i = 0; i < sizeof statements / sizeof *statements; i++)
        if (!strstr(text, statements[i])) return 0;
    if (strstr(text, "<think>") || strstr(text, "reasoning_content")) return 0;
    coder__prose p;
    int ok = coder__prose_read(text, &p);
    coder__literals_free(&p.lits);
    return ok;
}

/* --- values as the template prints them --------------------------------------------------- */

/* Python's str() of the JSON value v[0..n) (the `string` filter, `~`), a
 * caller's string. */
static enc_status coder__str(chat__out *out, const char *v, size_t n)
{
    tok__bytes b = {0};
    enc_status s = tok__json_py_str(v, n, &b);
    if (s == ENC_OK) s = chat__puts(out, (chat__str){b.data, b.len});
    free(b.data);
    return s;
}

static enc_status coder__tojson(chat__out *out, const char *v, size_t n)
{
    char *j = NULL;
    enc_status s = chat_template_tojson(v, n, &j);
    if (s == ENC_OK) s = chat__puts(out, chat__s(j));
    free(j);
    return s;
}

/* {{ x | tojson }} for a mapping or a sequence that is not a string, else {{ x | string }} */
static enc_status coder__value(chat__out *out, const tok__json_member *m)
{
    char kind = tok__json_kind(m->value, m->value_len);
    return kind == '{' || kind == '[' ? coder__tojson(out, m->value, m->value_len)
                                      : coder__str(out, m->value, m->value_len);
}

/* {{ x | trim }}: str(x).strip() */
static enc_status coder__trimmed(chat__out *out, const tok__json_member *m)
{
    tok__bytes b = {0};
    enc_status s = tok__json_py_str(m->value, m->value_len, &b);
    if (s == ENC_OK) s = chat__puts(out, chat__strip((chat__str){b.data ? b.data : "", b.len}));
    free(b.data);
    return s;
}

/* The members of the object v[0..n) (NULL, 0 when it is not one). */
static enc_status coder__members(const char *v, size_t n, tok__json_member **m, size_t *count)
{
    *m = NULL;
    *count = 0;
    if (tok__json_kind(v, n) != '{') return ENC_OK;
    return tok__json_members(v, n, m, count);
}

/* m's member `key` when it is defined, else NULL. */
static const tok__json_member *coder__get(const tok__json_member *m, size_t n, const char *key)
{
    long at = tok__json_member_find(m, n, key);
    return at >= 0 ? &m[at] : NULL;
}

/* --- the tools block ---------------------------------------------------------------------- */

/* {% macro render_extra_keys(json_dict, handled_keys) %}: each member not
 * handled, as \n<KEY>value</KEY>. */
static enc_status coder__extra_keys(chat__out *out, const tok__json_member *m, size_t n,
                                    const char *const *handled)
{
    for (size_t i = 0; i < n; i++) {
        int skip = 0;
        for (const char *const *h = handled; *h && !skip; h++)
            skip = !strcmp(m[i].key, *h);
        if (skip) continue;
        ENC_TRY(chat__put(out, "\n<"));
        ENC_TRY(chat__puts(out, (chat__str){m[i].key, m[i].key_len}));
        ENC_TRY(chat__put(out, ">"));
        ENC_TRY(coder__value(out, &m[i]));
        ENC_TRY(chat__put(out, "</"));
        ENC_TRY(chat__puts(out, (chat__str){m[i].key, m[i].key_len}));
        ENC_TRY(chat__put(out, ">"));
    }
    return ENC_OK;
}

/* One of tool.parameters.properties: \n<parameter> ... \n</parameter> */
static enc_status coder__parameter(chat__out *out, const tok__json_member *param)
{
    static const char *const handled[] = {"name", "type", "description", NULL};
    tok__json_member *f;
    size_t n;
    ENC_TRY(coder__members(param->value, param->value_len, &f, &n));
    const tok__json_member *type = coder__get(f, n, "type"),
                           *desc = coder__get(f, n, "description");
    enc_status s = chat__put(out, "\n<parameter>\n<name>");
    if (s == ENC_OK) s = chat__puts(out, (chat__str){param->key, param->key_len});
    if (s == ENC_OK) s = chat__put(out, "</name>");
    if (s == ENC_OK && type) s = chat__put(out, "\n<type>");
    if (s == ENC_OK && type) s = coder__str(out, type->value, type->value_len);
    if (s == ENC_OK && type) s = chat__put(out, "</type>");
    if (s == ENC_OK && desc) s = chat__put(out, "\n<description>");
    if (s == ENC_OK && desc) s = coder__trimmed(out, desc);
    if (s == ENC_OK && desc) s = chat__put(out, "</description>");
    if (s == ENC_OK) s = coder__extra_keys(out, f, n, handled);
    if (s == ENC_OK) s = chat__put(out, "\n</parameter>");
    tok__json_members_free(f, n);
    return s;
}

/* tool.parameters: its properties, then its other keys */
static enc_status coder__parameters(chat__out *out, const tok__json_member *params)
{
    static const char *const handled[] = {"type", "properties", NULL};
    tok__json_member *p = NULL, *props = NULL;
    size_t n = 0, n_props = 0;
    enc_status s = params ? coder__members(params->value, params->value_len, &p, &n) : ENC_OK;
    const tok__json_member *pr = coder__get(p, n, "properties");
    if (s == ENC_OK && pr) s = coder__members(pr->value, pr->value_len, &props, &n_props);
    for (size_t i = 0; s == ENC_OK && i < n_props; i++)
        s = coder__parameter(out, &props[i]);
    if (s == ENC_OK) s = coder__extra_keys(out, p, n, handled);
    tok__json_members_free(props, n_props);
    tok__json_members_free(p, n);
    return s;
}

/* One tool: {%- if tool.function is defined %}{%- set tool = tool.function %} ... */
static enc_status coder__tool(chat__out *out, const tok__json_member *item)
{
    static const char *const handled[] = {"type", "name", "description", "parameters", NULL};
    tok__json_member *t, *fn = NULL;
    size_t n, n_fn = 0;
    ENC_TRY(coder__members(item->value, item->value_len, &t, &n));
    const tok__json_member *f = coder__get(t, n, "function");
    enc_status s = f ? coder__members(f->value, f->value_len, &fn, &n_fn) : ENC_OK;
    if (f) {
        tok__json_members_free(t, n);
        t = fn, n = n_fn;
    }
    const tok__json_member *name = coder__get(t, n, "name"),
                           *desc = coder__get(t, n, "description");
    if (s == ENC_OK) s = chat__put(out, "\n<function>\n<name>");
    if (s == ENC_OK && name) s = coder__str(out, name->value, name->value_len);
    if (s == ENC_OK) s = chat__put(out, "</name>");
    if (s == ENC_OK && desc) s = chat__put(out, "\n<description>");
    if (s == ENC_OK && desc) s = coder__trimmed(out, desc);
    if (s == ENC_OK && desc) s = chat__put(out, "</description>");
    if (s == ENC_OK) s = chat__put(out, "\n<parameters>");
    if (s == ENC_OK) s = coder__parameters(out, coder__get(t, n, "parameters"));
    if (s == ENC_OK) s = chat__put(out, "\n</parameters>");
    if (s == ENC_OK) s = coder__extra_keys(out, t, n, handled);
    if (s == ENC_OK) s = chat__put(out, "\n</function>");
    tok__json_members_free(t, n);
    return s;
}

/* The system turn: the caller's system message or the default, then the
 * tools block when there are tools. */
static enc_status coder__head(const chat_message *m, const coder__prose *p,
                              const tok__json_member *tools, size_t n_tools, chat__out *out)
{
    int system = chat__is(&m[0], "system");
    if (system) {
        ENC_TRY(chat__put(out, "<|im_start|>system\n"));
        ENC_TRY(chat__puts(out, chat__s(m[0].content)));
    } else if (n_tools) {
        ENC_TRY(chat__put(out, p->default_system));
    }
    if (n_tools) {
        ENC_TRY(chat__put(out, p->tools_before));
        ENC_TRY(chat__put(out, "<tools>"));
        for (size_t i = 0; i < n_tools; i++)
            ENC_TRY(coder__tool(out, &tools[i]));
        ENC_TRY(chat__put(out, "\n</tools>"));
        ENC_TRY(chat__put(out, p->tools_after));
    }
    if (system || n_tools) ENC_TRY(chat__put(out, "<|im_end|>\n"));
    return ENC_OK;
}

/* --- the turns ---------------------------------------------------------------------------- */

/* {%- for args_name, args_value in tool_call.arguments|items %} */
static enc_status coder__arguments(chat__out *out, const chat_tool_call *tc, size_t i, size_t k)
{
    const char *args = tc->arguments ? tc->arguments : "";
    tok__json_member *a = NULL;
    size_t n = 0;
    if (tok__json_kind(args, strlen(args)) != '{' ||
        tok__json_members(args, strlen(args), &a, &n) != ENC_OK)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "messages[%zu].tool_calls[%zu].arguments: the qwen3-coder template "
                        "needs the JSON text of an object",
                        i, k);
    enc_status s = ENC_OK;
    for (size_t j = 0; s == ENC_OK && j < n; j++) {
        s = chat__put(out, "<parameter=");
        if (s == ENC_OK) s = chat__puts(out, (chat__str){a[j].key, a[j].key_len});
        if (s == ENC_OK) s = chat__put(out, ">\n");
        if (s == ENC_OK) s = coder__value(out, &a[j]);
        if (s == ENC_OK) s = chat__put(out, "\n</parameter>\n");
    }
    tok__json_members_free(a, n);
    return s;
}

static enc_status coder__assistant_calls(const chat_message *m, size_t i, chat__out *out)
{
    ENC_TRY(chat__put(out, "<|im_start|>assistant"));
    chat__str content = chat__strip(chat__s(m->content));
    if (content.n) { /* '\n' + message.content | trim + '\n' */
        ENC_TRY(chat__put(out, "\n"));
        ENC_TRY(chat__puts(out, content));
        ENC_TRY(chat__put(out, "\n"));
    }
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        ENC_TRY(chat__put(out, "\n<tool_call>\n<function="));
        ENC_TRY(chat__puts(out, chat__s(m->tool_calls[k].name)));
        ENC_TRY(chat__put(out, ">\n"));
        ENC_TRY(coder__arguments(out, &m->tool_calls[k], i, k));
        ENC_TRY(chat__put(out, "</function>\n</tool_call>"));
    }
    return chat__put(out, "<|im_end|>\n");
}

/* A tool response; first..n are the loop's messages (after a leading system one). */
static enc_status coder__tool_response(const chat_message *m, size_t i, size_t first, size_t n,
                                       chat__out *out)
{
    /* loop.previtem is undefined (false) for the loop's first message */
    if (i > first && !chat__is(&m[i - 1], "tool")) ENC_TRY(chat__put(out, "<|im_start|>user\n"));
    ENC_TRY(chat__put(out, "<tool_response>\n"));
    ENC_TRY(chat__puts(out, chat__s(m[i].content)));
    ENC_TRY(chat__put(out, "\n</tool_response>\n"));
    if (i == n - 1 || !chat__is(&m[i + 1], "tool")) ENC_TRY(chat__put(out, "<|im_end|>\n"));
    return ENC_OK;
}

static enc_status coder__turns(const chat_message *m, size_t n, const chat_template_opts *o,
                               chat__out *out)
{
    size_t first = chat__is(&m[0], "system") ? 1 : 0;
    for (size_t i = first; i < n; i++) {
        if (chat__is(&m[i], "assistant") && m[i].n_tool_calls) {
            ENC_TRY(coder__assistant_calls(&m[i], i, out));
        } else if (chat__is(&m[i], "tool")) {
            ENC_TRY(coder__tool_response(m, i, first, n, out));
        } else {
            ENC_TRY(chat__put(out, "<|im_start|>"));
            ENC_TRY(chat__put(out, m[i].role));
            ENC_TRY(chat__put(out, "\n"));
            ENC_TRY(chat__puts(out, chat__s(m[i].content)));
            ENC_TRY(chat__put(out, "<|im_end|>\n"));
        }
    }
    return o->add_generation_prompt ? chat__put(out, "<|im_start|>assistant\n") : ENC_OK;
}

enc_status chat__coder(const tokenizer *t, const chat_message *m, size_t n,
                       const chat_template_opts *o, chat__out *out)
{
    coder__prose p;
    tok__json_member *tools = NULL;
    size_t n_tools = 0;
    enc_status s = ENC_OK;
    if (!coder__prose_read(t->chat_template, &p))
        s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "chat template: reading the qwen3-coder template");
    if (s == ENC_OK && o->tools_json) {
        if (tok__json_kind(o->tools_json, strlen(o->tools_json)) != '[')
            s = enc_fail(ENC_ERR_INVALID_ARGUMENT, "tools_json: not a JSON array");
        else if ((s = tok__json_members(o->tools_json, strlen(o->tools_json), &tools, &n_tools)) !=
                 ENC_OK)
            s = enc_fail_context(s, "tools_json");
    }
    if (s == ENC_OK) s = coder__head(m, &p, tools, n_tools, out);
    if (s == ENC_OK) s = coder__turns(m, n, o, out);
    tok__json_members_free(tools, n_tools);
    coder__literals_free(&p.lits);
    return s;
}
