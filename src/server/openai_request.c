/* openai_request.c - OpenAI request bodies (completions, chat completions,
 * tokenize, detokenize) read with cJSON into an oai_request, every field
 * checked for type and range with a message naming it.
 *
 * Defaults are the model's recommended sampling where the server passes them
 * (generation_config.json: temperature, top_k, top_p, min_p,
 * repetition_penalty), else OpenAI's (temperature 1, top_p 1, n 1) and vLLM's
 * for the parameters OpenAI lacks (top_k, min_p, repetition_penalty,
 * min_tokens, stop_token_ids, ignore_eos, skip_special_tokens). logit_bias is OpenAI's
 * map of token ids (as strings) to biases. */
#include "openai_request.h"

#include "json_check.h"
#include "json_out.h"
#include "json_span.h"
#include "tool_request.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int oai_error_set(oai_error *err, int http_status, const char *param, const char *fmt, ...)
{
    err->http_status = http_status;
    err->type = http_status >= 500 ? "server_error" : "invalid_request_error";
    snprintf(err->param, sizeof err->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return 0;
}

/* --- typed field readers ------------------------------------------------------
 * Each returns 1 when the field is absent or null (leaving *out as is) or
 * valid (setting *out), and 0 with `err` filled when it is wrong. */

static int oai__present(const cJSON *obj, const char *name, const cJSON **v)
{
    *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return *v && !cJSON_IsNull(*v);
}

static int oai__bool(const cJSON *obj, const char *name, int *out, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, name, &v)) return 1;
    if (!cJSON_IsBool(v)) return oai_error_set(err, 400, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return 1;
}

static int oai__int_value(const cJSON *v, const char *name, int64_t min, int64_t max,
                          int64_t *out, oai_error *err)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || floor(v->valuedouble) != v->valuedouble)
        return oai_error_set(err, 400, name, "'%s' must be an integer", name);
    double d = v->valuedouble;
    /* (double)INT64_MAX rounds up to 2^63, which is no int64_t: converting
     * it is undefined, so 2^63 and above are refused before. */
    if (d < (double)min || d > (double)max || d >= 0x1p63)
        return oai_error_set(err, 400, name, "'%s' must be in [%lld, %lld], got %.17g", name,
                             (long long)min, (long long)max, d);
    *out = (int64_t)d;
    return 1;
}

static int oai__int(const cJSON *obj, const char *name, int64_t min, int64_t max, int64_t *out,
                    oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, name, &v)) return 1;
    return oai__int_value(v, name, min, max, out, err);
}

static int oai__int32(const cJSON *obj, const char *name, int64_t min, int64_t max, int *out,
                      oai_error *err)
{
    int64_t x = *out;
    if (!oai__int(obj, name, min, max, &x, err)) return 0;
    *out = (int)x;
    return 1;
}

static int oai__num(const cJSON *obj, const char *name, double min, double max, double *out,
                    oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, name, &v)) return 1;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return oai_error_set(err, 400, name, "'%s' must be a number", name);
    if (v->valuedouble < min || v->valuedouble > max)
        return oai_error_set(err, 400, name, "'%s' must be in [%g, %g], got %g", name, min, max,
                             v->valuedouble);
    *out = v->valuedouble;
    return 1;
}

static char *oai__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int oai__oom(oai_error *err) { return oai_error_set(err, 500, NULL, "out of memory"); }

static int oai__string(const cJSON *obj, const char *name, char **out, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, name, &v)) return 1;
    if (!cJSON_IsString(v)) return oai_error_set(err, 400, name, "'%s' must be a string", name);
    free(*out);
    *out = oai__strdup(v->valuestring);
    return *out ? 1 : oai__oom(err);
}

/* An array of token ids, each in [0, INT32_MAX]; `label` names it in the
 * messages ("'tokens'", "'prompt' item 2"), `name` in err->param. */
static int oai__ids(const cJSON *arr, const char *name, const char *label, size_t max_n,
                    int32_t **ids, size_t *n, oai_error *err)
{
    int count = cJSON_GetArraySize(arr);
    if ((size_t)count > max_n)
        return oai_error_set(err, 400, name, "%s has %d items, at most %zu allowed", label, count,
                             max_n);
    int32_t *v = malloc(((size_t)count + 1) * sizeof *v);
    if (!v) return oai__oom(err);
    int i = 0;
    for (const cJSON *x = arr->child; x; x = x->next, i++) {
        int64_t id;
        if (!oai__int_value(x, name, 0, INT32_MAX, &id, err)) {
            snprintf(err->message, sizeof err->message,
                     "%s must hold token ids (integers in [0, %d]); its item %d is not one", label,
                     INT32_MAX, i);
            free(v);
            return 0;
        }
        v[i] = (int32_t)id;
    }
    free(*ids);
    *ids = v;
    *n = (size_t)count;
    return 1;
}

/* --- prompt and messages ------------------------------------------------------ */

/* The field that holds r's prompts: embeddings' "input", else "prompt". */
static const char *oai__prompt_field(const oai_request *r)
{
    return r->kind == OAI_EMBEDDING ? "input" : "prompt";
}

const char *oai_prompt_label(const oai_request *r, size_t i, char *buf, size_t cap)
{
    if (r->n_prompts > 1)
        snprintf(buf, cap, "'%s' item %zu", oai__prompt_field(r), i);
    else
        snprintf(buf, cap, "'%s'", oai__prompt_field(r));
    return buf;
}

/* One prompt of `field`: a string, or a non-empty array of token ids. */
static int oai__prompt_item(const cJSON *v, const char *field, const char *label, oai_prompt *p,
                            oai_error *err)
{
    if (cJSON_IsString(v)) {
        p->text = oai__strdup(v->valuestring);
        return p->text ? 1 : oai__oom(err);
    }
    if (!cJSON_IsArray(v) || (v->child && !cJSON_IsNumber(v->child)))
        return oai_error_set(err, 400, field, "%s must be a string or an array of token ids",
                             label);
    if (!v->child) return oai_error_set(err, 400, field, "%s is empty", label);
    return oai__ids(v, field, label, (size_t)1 << 24, &p->ids, &p->n_ids, err);
}

/* Room for n prompts in r (calloc'd, so that a request refused half-way
 * frees what it has). */
static int oai__prompts_new(oai_request *r, size_t n, oai_error *err)
{
    r->prompts = calloc(n, sizeof *r->prompts);
    if (!r->prompts) return oai__oom(err);
    r->n_prompts = n;
    return 1;
}

/* "prompt" (embeddings: "input"): a string or token ids, or a batch of at
 * most max_n of them (an array of strings and token-id arrays, as OpenAI's
 * and vLLM's /v1/completions and /v1/embeddings take it; a one-item batch
 * is one prompt). */
static int oai__prompt(const cJSON *obj, oai_request *r, int max_n, oai_error *err)
{
    const cJSON *v;
    const char *field = oai__prompt_field(r);
    if (!oai__present(obj, field, &v))
        return oai_error_set(err, 400, field, "'%s' is required", field);
    int batch = cJSON_IsArray(v) && v->child && !cJSON_IsNumber(v->child);
    int count = batch ? cJSON_GetArraySize(v) : 1;
    if (count > max_n && max_n == 1)
        return oai_error_set(err, 400, field,
                             "'%s' must be one string or one array of token ids here, got a "
                             "batch of %d",
                             field, count);
    if (count > max_n)
        return oai_error_set(err, 400, field, "'%s' is a batch of %d, at most %d allowed", field,
                             count, max_n);
    if (!oai__prompts_new(r, (size_t)count, err)) return 0;
    const cJSON *x = batch ? v->child : v;
    for (size_t i = 0; i < r->n_prompts; i++, x = x->next) {
        char label[OAI_PROMPT_LABEL_MAX];
        if (!oai__prompt_item(x, field, oai_prompt_label(r, i, label, sizeof label), &r->prompts[i],
                              err))
            return 0;
    }
    return 1;
}

/* A message's content: a string, null, or an array of {"type": "text", "text": ...}
 * parts, joined with newlines as vLLM does. Sets *out (malloc'd). */
static int oai__content(const cJSON *v, const char *param, char **out, oai_error *err)
{
    if (!v || cJSON_IsNull(v)) {
        *out = oai__strdup("");
        return *out ? 1 : oai__oom(err);
    }
    if (cJSON_IsString(v)) {
        *out = oai__strdup(v->valuestring);
        return *out ? 1 : oai__oom(err);
    }
    if (!cJSON_IsArray(v))
        return oai_error_set(err, 400, param, "'%s' must be a string or an array of parts", param);
    size_t len = 0;
    for (const cJSON *p = v->child; p; p = p->next) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsObject(p) || !cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0)
            return oai_error_set(err, 400, param,
                                 "'%s': only parts of type \"text\" are supported", param);
        if (!cJSON_IsString(text))
            return oai_error_set(err, 400, param, "'%s': a text part needs a string 'text'", param);
        len += strlen(text->valuestring) + 1;
    }
    char *s = malloc(len + 1), *w = s;
    if (!s) return oai__oom(err);
    for (const cJSON *p = v->child; p; p = p->next) {
        const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        if (w != s) *w++ = '\n';
        size_t n = strlen(t);
        memcpy(w, t, n);
        w += n;
    }
    *w = '\0';
    *out = s;
    return 1;
}

static const char *const oai_roles[] = {"system", "user", "assistant", "tool"};

static int oai__messages(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, "messages", &v))
        return oai_error_set(err, 400, "messages", "'messages' is required");
    if (!cJSON_IsArray(v)) return oai_error_set(err, 400, "messages", "'messages' must be an array");
    int count = cJSON_GetArraySize(v);
    if (count == 0) return oai_error_set(err, 400, "messages", "'messages' is empty");
    if (count > OAI_MAX_MESSAGES)
        return oai_error_set(err, 400, "messages", "'messages' has %d items, at most %d allowed",
                             count, OAI_MAX_MESSAGES);
    r->messages = calloc((size_t)count, sizeof *r->messages);
    if (!r->messages) return oai__oom(err);
    char param[64];
    for (const cJSON *m = v->child; m; m = m->next) {
        encore_chat_message *out = &r->messages[r->n_messages];
        int i = (int)r->n_messages++;
        if (!cJSON_IsObject(m)) {
            snprintf(param, sizeof param, "messages[%d]", i);
            return oai_error_set(err, 400, param, "'%s' must be an object", param);
        }
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        snprintf(param, sizeof param, "messages[%d].role", i);
        if (!cJSON_IsString(role)) return oai_error_set(err, 400, param, "'%s' must be a string", param);
        const char *name = role->valuestring;
        if (!strcmp(name, "developer")) name = "system"; /* OpenAI's newer name */
        for (size_t k = 0; k < sizeof oai_roles / sizeof oai_roles[0]; k++)
            if (!strcmp(name, oai_roles[k])) out->role = oai_roles[k];
        if (!out->role)
            return oai_error_set(err, 400, param,
                                 "'%s' must be one of system, developer, user, assistant, tool; "
                                 "got '%.40s'",
                                 param, role->valuestring);
        snprintf(param, sizeof param, "messages[%d].content", i);
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if ((!content || cJSON_IsNull(content)) && out->role != oai_roles[2])
            return oai_error_set(err, 400, param, "'%s' is required", param);
        if (!oai__content(content, param, (char **)&out->content, err)) return 0;
        snprintf(param, sizeof param, "messages[%d].reasoning_content", i);
        char *reasoning = NULL;
        int ok = oai__string(m, "reasoning_content", &reasoning, err);
        out->reasoning_content = reasoning;
        if (!ok) return oai_error_set(err, 400, param, "'%s' must be a string", param);
        if (!tool_request_message(m, i, out, err)) return 0;
    }
    return 1;
}

/* --- sampling ------------------------------------------------------------------ */

/* Field `name`: an array of at most max_n non-empty strings of at most
 * OAI_MAX_STOP_BYTES bytes, copied into *out (n of them; the caller frees
 * them, even after an error). stop's rules (one_string): a string alone is
 * one item, and whitespace is text; else a string of whitespace only is
 * empty too. */
static int oai__strings(const cJSON *obj, const char *name, int one_string, int max_n, char ***out,
                        size_t *n, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, name, &v)) return 1;
    const char *what = one_string ? "a string or an array of strings" : "an array of strings";
    if (!(one_string && cJSON_IsString(v)) && !cJSON_IsArray(v))
        return oai_error_set(err, 400, name, "'%s' must be %s", name, what);
    int count = cJSON_IsString(v) ? 1 : cJSON_GetArraySize(v);
    if (count > max_n)
        return oai_error_set(err, 400, name, "'%s' has %d items, at most %d allowed", name, count,
                             max_n);
    *out = calloc((size_t)count + 1, sizeof **out);
    if (!*out) return oai__oom(err);
    const cJSON *x = cJSON_IsString(v) ? v : v->child;
    for (int i = 0; i < count; i++, x = x->next) {
        if (!cJSON_IsString(x)) return oai_error_set(err, 400, name, "'%s' must be %s", name, what);
        if (!x->valuestring[one_string ? 0 : strspn(x->valuestring, " \t\n\r\f\v")])
            return oai_error_set(err, 400, name, "'%s' strings must not be empty%s", name,
                                 one_string ? "" : " or only whitespace");
        if (strlen(x->valuestring) > OAI_MAX_STOP_BYTES)
            return oai_error_set(err, 400, name, "'%s' strings are at most %d bytes, got %zu", name,
                                 OAI_MAX_STOP_BYTES, strlen(x->valuestring));
        if (!((*out)[(*n)++] = oai__strdup(x->valuestring))) return oai__oom(err);
    }
    return 1;
}

static int oai__stop(const cJSON *obj, oai_request *r, oai_error *err)
{
    if (!oai__strings(obj, "stop", 1, OAI_MAX_STOP, &r->stop, &r->sampling.n_stop, err)) return 0;
    r->sampling.stop = (const char *const *)r->stop;
    return 1;
}

/* vLLM's bad_words: word sequences never generated (the engine encodes them). */
static int oai__bad_words(const cJSON *obj, oai_request *r, oai_error *err)
{
    if (!oai__strings(obj, "bad_words", 0, OAI_MAX_BAD_WORDS, &r->bad_words,
                      &r->sampling.n_bad_words, err))
        return 0;
    r->sampling.bad_words = (const char *const *)r->bad_words;
    return 1;
}

/* logit_bias: {"<token id>": bias in [-100, 100], ...}, at most
 * OAI_MAX_LOGIT_BIAS entries; null and {} are none. The ids' range is the
 * engine's to check (it knows the vocabulary). */
static int oai__logit_bias(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, "logit_bias", &v)) return 1;
    if (!cJSON_IsObject(v))
        return oai_error_set(err, 400, "logit_bias",
                             "'logit_bias' must be an object mapping token ids to biases");
    int count = cJSON_GetArraySize(v);
    if (count > OAI_MAX_LOGIT_BIAS)
        return oai_error_set(err, 400, "logit_bias",
                             "'logit_bias' has %d entries, at most %d allowed", count,
                             OAI_MAX_LOGIT_BIAS);
    if (count == 0) return 1;
    encore_logit_bias *b = malloc((size_t)count * sizeof *b);
    if (!b) return oai__oom(err);
    int n = 0;
    for (const cJSON *x = v->child; x; x = x->next) {
        const char *key = x->string;
        char *end = NULL;
        errno = 0;
        long long id = key && key[0] >= '0' && key[0] <= '9' ? strtoll(key, &end, 10) : -1;
        if (id < 0 || id > INT32_MAX || errno || *end) {
            free(b);
            return oai_error_set(err, 400, "logit_bias",
                                 "'logit_bias' keys must be token ids (integers in [0, %d]); "
                                 "'%.40s' is not one",
                                 INT32_MAX, key ? key : "");
        }
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= -100.0 && x->valuedouble <= 100.0)) {
            free(b);
            return oai_error_set(err, 400, "logit_bias",
                                 "'logit_bias' of token %lld must be a number in [-100, 100]", id);
        }
        int j = 0; /* a repeated id: the last bias wins, as in a Python dict */
        while (j < n && b[j].id != id)
            j++;
        b[j] = (encore_logit_bias){(int32_t)id, (float)x->valuedouble};
        n += j == n;
    }
    r->logit_bias = b;
    r->sampling.logit_bias = b;
    r->sampling.n_logit_bias = (size_t)n;
    return 1;
}

/* vLLM's allowed_token_ids: a non-empty array of token ids, the only ones
 * that may be sampled (the server checks them against the vocabulary). */
static int oai__allowed_ids(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, "allowed_token_ids", &v)) return 1;
    if (!cJSON_IsArray(v) || !v->child)
        return oai_error_set(err, 400, "allowed_token_ids", "'allowed_token_ids' %s",
                             cJSON_IsArray(v) ? "is empty: no token could be sampled"
                                              : "must be an array of token ids");
    if (!oai__ids(v, "allowed_token_ids", "'allowed_token_ids'", OAI_MAX_ALLOWED_IDS,
                  &r->allowed_ids, &r->sampling.n_allowed_token_ids, err))
        return 0;
    r->sampling.allowed_token_ids = r->allowed_ids;
    return 1;
}

static int oai__sampling(const cJSON *obj, oai_request *r, oai_error *err)
{
    encore_sampling *s = &r->sampling;
    const cJSON *v;
    if (!oai__int(obj, "max_tokens", INT64_MIN, INT64_MAX, &r->max_tokens, err)) return 0;
    if (r->kind == OAI_CHAT &&
        !oai__int(obj, "max_completion_tokens", INT64_MIN, INT64_MAX, &r->max_tokens, err))
        return 0;
    int completion_tokens = r->kind == OAI_CHAT && oai__present(obj, "max_completion_tokens", &v);
    if (r->kind == OAI_COMPLETION && !cJSON_GetObjectItemCaseSensitive(obj, "max_tokens"))
        r->max_tokens_absent = OAI_COMPLETION_MAX_TOKENS;
    if (oai__present(obj, "max_tokens", &v) ||
        completion_tokens) { /* a completion ignores the other */
        const char *name = completion_tokens ? "max_completion_tokens" : "max_tokens";
        /* echo with max_tokens 0: the prompt alone, as vLLM answers it */
        r->prompt_only = r->max_tokens == 0 && r->kind == OAI_COMPLETION && r->echo;
        if (r->max_tokens < 1 && !r->prompt_only)
            return oai_error_set(err, 400, name, "'%s' must be at least 1%s, got %lld", name,
                                 r->kind == OAI_COMPLETION ? " (0 only with 'echo': true)" : "",
                                 (long long)r->max_tokens);
        if (r->max_tokens > ((int64_t)1 << 30))
            return oai_error_set(err, 400, name, "'%s' is too large: %lld", name,
                                 (long long)r->max_tokens);
    }
    if (oai__present(obj, "top_p", &v) && cJSON_IsNumber(v) &&
        !(v->valuedouble > 0 && v->valuedouble <= 1)) /* its range is open at 0 */
        return oai_error_set(err, 400, "top_p", "'top_p' must be in (0, 1], got %g",
                             v->valuedouble);
    if (!oai__num(obj, "temperature", 0, 100, &s->temperature, err) ||
        !oai__num(obj, "top_p", 0, 1, &s->top_p, err) ||
        !oai__int(obj, "top_k", -1, INT32_MAX, &s->top_k, err) ||
        !oai__num(obj, "min_p", 0, 1, &s->min_p, err) ||
        !oai__num(obj, "repetition_penalty", 0, 100, &s->repetition_penalty, err) ||
        !oai__num(obj, "presence_penalty", -2, 2, &s->presence_penalty, err) ||
        !oai__num(obj, "frequency_penalty", -2, 2, &s->frequency_penalty, err) ||
        !oai__int(obj, "min_tokens", 0, (int64_t)1 << 30, &s->min_tokens, err) ||
        !oai__bool(obj, "ignore_eos", &s->ignore_eos, err) ||
        !oai__bool(obj, "skip_special_tokens", &s->skip_special_tokens, err) ||
        !oai__bool(obj, "include_stop_str_in_output", &s->include_stop_str_in_output, err) ||
        !oai__int32(obj, "n", 1, OAI_MAX_N, &r->n, err) || !oai__stop(obj, r, err) ||
        !oai__bad_words(obj, r, err))
        return 0;
    r->best_of = r->n;
    if (!oai__logit_bias(obj, r, err) || !oai__allowed_ids(obj, r, err)) return 0;
    if (oai__present(obj, "repetition_penalty", &v) && s->repetition_penalty <= 0)
        return oai_error_set(err, 400, "repetition_penalty",
                             "'repetition_penalty' must be greater than 0, got %g",
                             s->repetition_penalty);
    int64_t cap = r->max_tokens || r->prompt_only ? r->max_tokens : r->max_tokens_absent;
    if ((r->max_tokens || r->prompt_only || r->max_tokens_absent) && s->min_tokens > cap)
        return oai_error_set(err, 400, "min_tokens",
                             "'min_tokens' (%lld) must not exceed max_tokens (%lld%s)",
                             (long long)s->min_tokens, (long long)cap,
                             r->max_tokens || r->prompt_only ? "" : ", the default");
    if (oai__present(obj, "stop_token_ids", &v)) {
        if (!cJSON_IsArray(v))
            return oai_error_set(err, 400, "stop_token_ids", "'stop_token_ids' must be an array");
        if (!oai__ids(v, "stop_token_ids", "'stop_token_ids'", OAI_MAX_STOP_IDS, &r->stop_ids,
                      &s->n_stop_token_ids, err))
            return 0;
        s->stop_token_ids = r->stop_ids;
    }
    /* logprobs: an integer count for completions, a boolean for chat */
    if (r->kind == OAI_CHAT) {
        if (!oai__bool(obj, "logprobs", &r->logprobs, err) ||
            !oai__int32(obj, "top_logprobs", 0, OAI_MAX_TOP_LOGPROBS, &r->top_logprobs, err))
            return 0;
        if (r->top_logprobs > 0 && !r->logprobs)
            return oai_error_set(err, 400, "top_logprobs",
                                 "'top_logprobs' needs 'logprobs' set to true");
    } else if (oai__present(obj, "logprobs", &v)) {
        if (!oai__int32(obj, "logprobs", 0, OAI_MAX_TOP_LOGPROBS, &r->top_logprobs, err)) return 0;
        r->logprobs = 1;
    }
    s->logprobs = r->logprobs;
    s->top_logprobs = r->top_logprobs;
    return oai__bool(obj, "return_tokens_as_token_ids", &r->tokens_as_ids, err);
}

/* 1 when text[0..n) is an integer written as JSON writes one: -?[0-9]+ */
static int oai__integer_text(const char *text, size_t n)
{
    size_t i = n && text[0] == '-';
    if (i == n) return 0;
    for (; i < n; i++)
        if (text[i] < '0' || text[i] > '9') return 0;
    return 1;
}

/* text[0..n), an integer_text, as an int64_t into *out; 0 with err
 * filled (naming `name`) when it is out of range. */
static int oai__int_text(const char *text, size_t n, const char *name, int64_t *out, oai_error *err)
{
    char digits[32];
    long long x = 0;
    errno = 0;
    if (n < sizeof digits) {
        memcpy(digits, text, n);
        digits[n] = '\0';
        x = strtoll(digits, NULL, 10);
    }
    if (n >= sizeof digits || errno == ERANGE)
        return oai_error_set(err, 400, name, "'%s' must be in [%lld, %lld], got %.*s", name,
                             (long long)INT64_MIN, (long long)INT64_MAX, n < 40 ? (int)n : 40,
                             text);
    *out = (int64_t)x;
    return 1;
}

/* "seed", read exactly: cJSON keeps a number as a double, which holds
 * integers exactly only up to 2^53, so an integer written as one is read
 * from the body's text (any int64_t); one written otherwise (1e3, 5.0) must
 * lie within (-2^53, 2^53), where the double is exact. */
static int oai__seed(const cJSON *obj, const char *body, size_t len, oai_request *r, oai_error *err)
{
    const cJSON *v;
    size_t begin = 0, end = 0;
    if (!oai__present(obj, "seed", &v)) return 1;
    int64_t seed = 0;
    int literal = cJSON_IsNumber(v) && json_span_member(body, len, "seed", &begin, &end) &&
                  oai__integer_text(body + begin, end - begin);
    const int64_t exact = ((int64_t)1 << 53) - 1;
    if (literal ? !oai__int_text(body + begin, end - begin, "seed", &seed, err)
                : !oai__int_value(v, "seed", -exact, exact, &seed, err))
        return 0;
    r->seed_given = 1;
    r->sampling.seed = (uint64_t)seed;
    return 1;
}

/* parent.name, a boolean inside an optional object field */
static int oai__member_bool(const cJSON *obj, const char *parent, const char *name, int *out,
                            oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, parent, &v)) return 1;
    if (!cJSON_IsObject(v))
        return oai_error_set(err, 400, parent, "'%s' must be an object", parent);
    char param[64];
    snprintf(param, sizeof param, "%s.%s", parent, name);
    if (!oai__bool(v, name, out, err))
        return oai_error_set(err, 400, param, "'%s' must be a boolean", param);
    return 1;
}

static int oai__stream(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (!oai__bool(obj, "stream", &r->stream, err)) return 0;
    if (oai__present(obj, "stream_options", &v) && !r->stream)
        return oai_error_set(err, 400, "stream_options",
                             "'stream_options' is only allowed with 'stream': true");
    int continuous = 0;
    /* given, stream_options' include_usage defaults to true (vLLM's StreamOptions) */
    r->include_usage = v && cJSON_IsObject(v) &&
                       !cJSON_GetObjectItemCaseSensitive(v, "include_usage");
    if (!oai__member_bool(obj, "stream_options", "include_usage", &r->include_usage, err) ||
        !oai__member_bool(obj, "stream_options", "continuous_usage_stats", &continuous, err))
        return 0;
    r->continuous_usage = r->include_usage && continuous; /* vLLM's: only with include_usage */
    return 1;
}

/* chat_template_kwargs.enable_thinking, and vLLM's add_generation_prompt
 * and continue_final_message (not both). */
static int oai__template_kwargs(const cJSON *obj, oai_request *r, oai_error *err)
{
    if (!oai__member_bool(obj, "chat_template_kwargs", "enable_thinking", &r->enable_thinking,
                          err) ||
        !oai__bool(obj, "include_reasoning", &r->include_reasoning, err) ||
        !oai__bool(obj, "add_generation_prompt", &r->add_generation_prompt, err) ||
        !oai__bool(obj, "continue_final_message", &r->continue_final_message, err))
        return 0;
    if (r->add_generation_prompt && r->continue_final_message)
        return oai_error_set(err, 400, "continue_final_message",
                             "'continue_final_message' needs 'add_generation_prompt': false (the "
                             "last message is continued, not answered)");
    return 1;
}

/* --- the request --------------------------------------------------------------- */

/* vLLM's prompt_logprobs: null, or 0..20 (its max_logprobs; -1, every
 * token of the vocabulary, is refused as vLLM refuses it by default). A
 * stream has nowhere to put them: a 400, unless 0 (vLLM drops that). */
static int oai__prompt_logprobs(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, "prompt_logprobs", &v)) return 1;
    int64_t k = 0;
    if (!oai__int_value(v, "prompt_logprobs", -1, INT64_MAX, &k, err)) return 0;
    if (k < 0 || k > OAI_MAX_TOP_LOGPROBS)
        return oai_error_set(err, 400, "prompt_logprobs",
                             "'prompt_logprobs' must be in [0, %d] (the alternatives per prompt "
                             "token), got %lld",
                             OAI_MAX_TOP_LOGPROBS, (long long)k);
    if (r->stream && k > 0)
        return oai_error_set(err, 400, "prompt_logprobs",
                             "'prompt_logprobs' are not available when 'stream' is true");
    if (!r->stream) r->prompt_logprobs = (int)k;
    return 1;
}

/* The prompt's log-probabilities the engine records: echo with logprobs
 * asks for them too (the first null), as OpenAI's and vLLM's completions
 * give them, with the same alternatives as the generated tokens. */
static int oai__prompt_scores(oai_request *r)
{
    int echoed = r->echo && r->logprobs ? r->top_logprobs : -1;
    int k = echoed > r->prompt_logprobs ? echoed : r->prompt_logprobs;
    r->sampling.prompt_logprobs = k >= 0;
    r->sampling.prompt_top_logprobs = k > 0 ? k : 0;
    return 1;
}

/* vLLM's truncate_prompt_tokens: -1, or at least 1 (null: none); the
 * server checks it against max_model_len and truncates. */
static int oai__truncate(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, "truncate_prompt_tokens", &v)) return 1;
    int64_t k = 0;
    if (!oai__int_value(v, "truncate_prompt_tokens", -1, INT64_MAX, &k, err)) return 0;
    if (k == 0)
        return oai_error_set(err, 400, "truncate_prompt_tokens",
                             "'truncate_prompt_tokens' must be at least 1 (the prompt tokens to "
                             "keep) or -1 (as many as max_model_len leaves), got 0");
    r->truncate_prompt_tokens = k;
    return 1;
}

/* completions' best_of (OpenAI's): at least n; above n not streamed, as
 * OpenAI refuses it (the n shown are known only when every candidate is
 * done). */
static int oai__best_of(const cJSON *obj, oai_request *r, oai_error *err)
{
    if (!oai__int32(obj, "best_of", 1, OAI_MAX_N, &r->best_of, err)) return 0;
    if (r->best_of < r->n)
        return oai_error_set(err, 400, "best_of", "'best_of' (%d) must be at least 'n' (%d)",
                             r->best_of, r->n);
    if (r->best_of > r->n && r->stream)
        return oai_error_set(err, 400, "best_of",
                             "'best_of' (%d) above 'n' (%d) cannot be streamed: the choices "
                             "shown are known when every candidate is done",
                             r->best_of, r->n);
    return 1;
}

/* vLLM's chat_template (and prompt_logprobs in /tokenize): refused by name
 * rather than ignored. */
static int oai__unsupported(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (r->kind == OAI_TOKENIZE && oai__present(obj, "prompt_logprobs", &v))
        return oai_error_set(err, 400, "prompt_logprobs",
                             "'prompt_logprobs' is not supported by /tokenize");
    /* a template in the request: refused, as vLLM refuses an untrusted one,
     * rather than answered with the server's own */
    if (r->kind != OAI_COMPLETION && oai__present(obj, "chat_template", &v))
        return oai_error_set(err, 400, "chat_template",
                             "'chat_template' in a request is not supported: the server renders "
                             "the model's template, or the one given with --chat-template");
    return 1;
}

/* completions' "suffix" (text after the insertion point): refused as vLLM
 * refuses it; null or "" asks for nothing. */
static int oai__suffix(const cJSON *obj, oai_error *err)
{
    const cJSON *v;
    if (!oai__present(obj, "suffix", &v)) return 1;
    if (!cJSON_IsString(v)) return oai_error_set(err, 400, "suffix", "'suffix' must be a string");
    if (v->valuestring[0])
        return oai_error_set(err, 400, "suffix", "'suffix' is not supported (as in vLLM)");
    return 1;
}

/* embeddings' encoding_format, dimensions and vLLM's normalize and
 * add_special_tokens; "user" has no effect. */
static int oai__embedding(const cJSON *obj, oai_request *r, oai_error *err)
{
    const cJSON *v;
    if (oai__present(obj, "encoding_format", &v)) {
        if (!cJSON_IsString(v) ||
            (strcmp(v->valuestring, "float") && strcmp(v->valuestring, "base64")))
            return oai_error_set(err, 400, "encoding_format",
                                 "'encoding_format' must be \"float\" or \"base64\"");
        r->base64 = !strcmp(v->valuestring, "base64");
    }
    if (oai__present(obj, "dimensions", &v) &&
        !oai__int_value(v, "dimensions", 1, INT32_MAX, &r->dimensions, err))
        return 0;
    if (oai__present(obj, "user", &v) && !cJSON_IsString(v))
        return oai_error_set(err, 400, "user", "'user' must be a string");
    return oai__bool(obj, "normalize", &r->normalize, err) &&
           oai__bool(obj, "add_special_tokens", &r->add_special_tokens, err);
}

static int oai__parse_fields(const cJSON *obj, oai_request *r, oai_error *err)
{
    if (!oai__string(obj, "model", &r->model, err)) return 0;
    switch (r->kind) {
    case OAI_COMPLETION:
        return oai__prompt(obj, r, OAI_MAX_PROMPTS, err) && oai__suffix(obj, err) &&
               oai__bool(obj, "add_special_tokens", &r->add_special_tokens, err) &&
               oai__unsupported(obj, r, err) && oai__bool(obj, "echo", &r->echo, err) &&
               oai__stream(obj, r, err) && oai__sampling(obj, r, err) &&
               oai__best_of(obj, r, err) && oai__prompt_logprobs(obj, r, err) &&
               oai__prompt_scores(r) && oai__truncate(obj, r, err) &&
               oai_structured_parse(obj, &r->structured, err);
    case OAI_CHAT:
        return oai__messages(obj, r, err) && oai__unsupported(obj, r, err) &&
               oai__template_kwargs(obj, r, err) && tool_request_parse(obj, r, err) &&
               oai__stream(obj, r, err) && oai__sampling(obj, r, err) &&
               oai__prompt_logprobs(obj, r, err) && oai__prompt_scores(r) &&
               oai__truncate(obj, r, err) && oai_structured_parse(obj, &r->structured, err);
    case OAI_TOKENIZE: {
        const cJSON *v;
        if (!oai__bool(obj, "return_token_strs", &r->return_token_strs, err) ||
            !oai__bool(obj, "add_special_tokens", &r->add_special_tokens, err))
            return 0;
        if (oai__present(obj, "messages", &v))
            return oai__messages(obj, r, err) && oai__template_kwargs(obj, r, err) &&
                   oai__unsupported(obj, r, err) && tool_request_parse(obj, r, err);
        return oai__prompt(obj, r, 1, err);
    }
    case OAI_EMBEDDING:
        return oai__prompt(obj, r, OAI_MAX_INPUTS, err) && oai__embedding(obj, r, err) &&
               oai__truncate(obj, r, err);
    case OAI_DETOKENIZE: {
        const cJSON *v;
        if (!oai__present(obj, "tokens", &v))
            return oai_error_set(err, 400, "tokens", "'tokens' is required");
        if (!cJSON_IsArray(v))
            return oai_error_set(err, 400, "tokens", "'tokens' must be an array of token ids");
        return oai__prompts_new(r, 1, err) &&
               oai__ids(v, "tokens", "'tokens'", (size_t)1 << 24, &r->prompts[0].ids,
                        &r->prompts[0].n_ids, err);
    }
    }
    return oai_error_set(err, 500, NULL, "unknown request kind");
}

/* --- fields nothing reads ---------------------------------------------------------- */

/* The top-level fields read here, in tool_request.c and openai_structured.c
 * (or with no effect on the reply: "user"), by kind: names between spaces. */
static const char oai__known_common[] =
    " model stream stream_options max_tokens temperature top_p top_k min_p repetition_penalty"
    " presence_penalty frequency_penalty min_tokens ignore_eos skip_special_tokens"
    " include_stop_str_in_output n stop logit_bias stop_token_ids logprobs seed"
    " truncate_prompt_tokens allowed_token_ids bad_words prompt_logprobs"
    " return_tokens_as_token_ids response_format structured_outputs guided_json guided_regex"
    " guided_grammar guided_choice guided_whitespace_pattern guided_decoding_backend"
    " structural_tag user ";
static const char oai__known_completion[] = " prompt suffix echo best_of add_special_tokens ";
static const char oai__known_embedding[] =
    " model input encoding_format dimensions user normalize add_special_tokens"
    " truncate_prompt_tokens ";
static const char oai__known_chat[] =
    " messages max_completion_tokens top_logprobs chat_template_kwargs add_generation_prompt"
    " continue_final_message tools tool_choice parallel_tool_calls include_reasoning"
    " chat_template ";

/* 1 when `key` is one of the names in `names` (" a b c "). */
static int oai__in(const char *names, const char *key)
{
    size_t n = strlen(key);
    if (!n || strchr(key, ' ')) return 0;
    for (const char *at = strstr(names, key); at; at = strstr(at + 1, key))
        if (at[-1] == ' ' && at[n] == ' ') return 1;
    return 0;
}

/* r->ignored: the top-level fields of obj in neither `known` nor `own`
 * (see oai_request.ignored). */
static void oai__ignored_names(const cJSON *obj, const char *known, const char *own, oai_request *r)
{
    size_t at = 0, cap = sizeof r->ignored;
    int named = 0, more = 0;
    r->ignored[0] = '\0';
    for (const cJSON *f = obj->child; f; f = f->next) {
        if (cJSON_IsNull(f) || oai__in(known, f->string) || oai__in(own, f->string)) continue;
        if (named == OAI_IGNORED_NAMES) {
            more++;
            continue;
        }
        char name[40];
        size_t n = 0;
        for (const char *s = f->string; *s && n < 32; s++)
            name[n++] = *s >= 0x20 && *s < 0x7f && *s != '\'' ? *s : '?';
        snprintf(name + n, sizeof name - n, "%s", f->string[n] ? "..." : "");
        at += (size_t)snprintf(r->ignored + at, cap - at, "%s'%s'", named ? ", " : "", name);
        named++;
    }
    if (more) snprintf(r->ignored + at, cap - at, " and %d more", more);
}

/* The top-level fields of a completion, chat or embeddings request that
 * nothing reads. */
static void oai__ignored(const cJSON *obj, oai_request *r)
{
    if (r->kind == OAI_EMBEDDING) {
        oai__ignored_names(obj, oai__known_embedding, "", r);
        return;
    }
    const char *own = r->kind == OAI_CHAT ? oai__known_chat : oai__known_completion;
    oai__ignored_names(obj, oai__known_common, own, r);
}

void oai_request_ignored(const cJSON *obj, const char *known, oai_request *r)
{
    oai__ignored_names(obj, known, "", r);
}

/* The body is an object, none of its strings holds U+0000 (which cJSON's
 * NUL-terminated strings would cut short, silently) and no object in it has
 * a key twice (cJSON's lookups would see the first only; Python's json the
 * last). */
static int oai__check_root(const char *body, size_t len, const cJSON *root, oai_error *err)
{
    if (!cJSON_IsObject(root))
        return oai_error_set(err, 400, NULL, "the request body must be a JSON object");
    char path[sizeof err->param];
    if (json_check_nul(body, len, root, path, sizeof path))
        return oai_error_set(err, 400, path,
                             "'%s' holds U+0000 (a NUL character), which encore does not accept "
                             "in a string", path);
    int twice = json_check_dup(root, path, sizeof path);
    if (twice < 0) return oai__oom(err);
    if (twice) return oai_error_set(err, 400, path, "'%s' is given twice in its object", path);
    return 1;
}

/* cJSON's parse of body[0..len), which must be one JSON value with nothing
 * but whitespace after it; NULL with err filled when it is not. */
static cJSON *oai__parse_json(const char *body, size_t len, oai_error *err)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t off = at && at >= body && at <= body + len ? (size_t)(at - body) : 0;
        oai_error_set(err, 400, NULL, "the request body is not valid JSON (near byte %zu)", off);
        return NULL;
    }
    size_t off = end && end >= body && end <= body + len ? (size_t)(end - body) : len;
    while (off < len && (body[off] == ' ' || body[off] == '\t' || body[off] == '\r' ||
                         body[off] == '\n')) /* JSON's whitespace */
        off++;
    if (off == len) return root;
    cJSON_Delete(root);
    oai_error_set(err, 400, NULL,
                  "the request body is not valid JSON: more follows the object at byte %zu", off);
    return NULL;
}

/* The fields of `defaults` that it sets, over OpenAI's. */
static void oai__model_defaults(const oai_defaults *d, encore_sampling *s)
{
    if (!d) return;
    if (d->set & ENCORE_SAMPLING_TEMPERATURE) s->temperature = d->sampling.temperature;
    if (d->set & ENCORE_SAMPLING_TOP_K) s->top_k = d->sampling.top_k;
    if (d->set & ENCORE_SAMPLING_TOP_P) s->top_p = d->sampling.top_p;
    if (d->set & ENCORE_SAMPLING_MIN_P) s->min_p = d->sampling.min_p;
    if (d->set & ENCORE_SAMPLING_REPETITION_PENALTY)
        s->repetition_penalty = d->sampling.repetition_penalty;
}

/* *out empty but for the defaults of a request of `kind`. */
static void oai__request_init(oai_kind kind, const oai_defaults *defaults, oai_request *out)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->n = 1;
    out->enable_thinking = 1;
    out->include_reasoning = 1;
    out->add_generation_prompt = 1;
    out->parallel_tool_calls = 1;
    out->prompt_logprobs = -1;
    out->normalize = 1;
    out->add_special_tokens = 1;
    /* encore_sampling_default() but for OpenAI's temperature; set here
     * field by field so that the parser links without the engine */
    out->sampling.max_tokens = 16;
    out->sampling.temperature = 1.0;
    out->sampling.top_p = 1.0;
    out->sampling.repetition_penalty = 1.0;
    out->sampling.skip_special_tokens = 1;
    oai__model_defaults(defaults, &out->sampling);
}

/* out's fields from the request object root (the body's tree, or one built
 * from it), reading numbers and texts exactly from body[0..len). */
static int oai__parse_root(const cJSON *root, const char *body, size_t len, oai_request *out,
                           oai_error *err)
{
    int generation = out->kind == OAI_COMPLETION || out->kind == OAI_CHAT;
    return oai__parse_fields(root, out, err) &&
           (!generation || oai__seed(root, body, len, out, err)) &&
           tool_request_keep_text(body, len, out, err) &&
           oai_structured_keep_text(body, len, &out->structured, err);
}

cJSON *oai_request_json(const char *body, size_t len, oai_error *err)
{
    if (!json_utf8_valid(body, len)) {
        oai_error_set(err, 400, NULL, "the request body is not valid UTF-8");
        return NULL;
    }
    cJSON *root = oai__parse_json(body, len, err);
    if (root && !oai__check_root(body, len, root, err)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int oai_request_parse(const char *body, size_t len, oai_kind kind, const oai_defaults *defaults,
                      oai_request *out, oai_error *err)
{
    oai__request_init(kind, defaults, out);
    cJSON *root = oai_request_json(body, len, err);
    if (!root) return 0;
    int ok = oai__parse_root(root, body, len, out, err);
    if (ok && (kind == OAI_COMPLETION || kind == OAI_CHAT || kind == OAI_EMBEDDING))
        oai__ignored(root, out);
    cJSON_Delete(root);
    if (!ok) oai_request_free(out);
    return ok;
}

int oai_request_parse_chat(const cJSON *chat, const char *body, size_t len,
                           const oai_defaults *defaults, oai_request *out, oai_error *err)
{
    oai__request_init(OAI_CHAT, defaults, out);
    int ok = oai__parse_root(chat, body, len, out, err);
    if (!ok) oai_request_free(out);
    return ok;
}

void oai_request_free(oai_request *r)
{
    if (!r) return;
    free(r->model);
    for (size_t i = 0; i < r->n_prompts; i++) {
        free(r->prompts[i].text);
        free(r->prompts[i].ids);
    }
    free(r->prompts);
    tool_request_free(r);
    for (size_t i = 0; i < r->n_messages; i++) {
        free((char *)r->messages[i].content);
        free((char *)r->messages[i].reasoning_content);
    }
    free(r->messages);
    for (size_t i = 0; i < r->sampling.n_stop; i++) free(r->stop[i]);
    free(r->stop);
    for (size_t i = 0; i < r->sampling.n_bad_words; i++)
        free(r->bad_words[i]);
    free(r->bad_words);
    free(r->stop_ids);
    free(r->logit_bias);
    free(r->allowed_ids);
    oai_structured_free(&r->structured);
    free(r->responses_echo);
    oai_kind kind = r->kind;
    memset(r, 0, sizeof *r);
    r->kind = kind;
}
