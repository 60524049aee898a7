/* openai_response.c - OpenAI's response objects built with cJSON.
 *
 *   completion    {"id","object":"text_completion","created","model",
 *                  "choices":[{"index","text","logprobs","finish_reason","stop_reason"}],
 *                  "usage":{"prompt_tokens","completion_tokens","total_tokens"}}
 *   chat          {"id","object":"chat.completion",...,"choices":[{"index",
 *                  "message":{"role","content","reasoning_content"?},"logprobs",
 *                  "finish_reason","stop_reason"}],"usage"}
 *   chat chunk    {"object":"chat.completion.chunk",...,"choices":[{"index",
 *                  "delta":{"role"?,"content"?,"reasoning_content"?},"logprobs","finish_reason"}]}
 *   logprobs      completions: {"tokens","token_logprobs","top_logprobs":[{text: lp}],"text_offset"}
 *                 chat: {"content":[{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}]}
 */
#include "openai_response.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t oai_utf8_sanitize(const char *str, size_t len, char *out, size_t cap)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t w = 0, i = 0;
    if (cap == 0) return 0;
    while (i < len) {
        size_t n = 1;
        unsigned c = s[i];
        if (c >= 0x80) {
            n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            if (n == 0 || i + n > len || !oai_utf8_valid(str + i, n)) n = 0;
        }
        const char *src = n ? str + i : "\xEF\xBF\xBD";
        size_t m = n ? n : 3;
        if (w + m >= cap) break;
        memcpy(out + w, src, m);
        w += m;
        i += n ? n : 1;
    }
    out[w] = '\0';
    return w;
}

/* --- logprobs ------------------------------------------------------------------ */

enum { OAI_TOKEN_MAX = 256 };

typedef struct oai_token {
    char raw[OAI_TOKEN_MAX];
    size_t n_raw;
    char text[3 * OAI_TOKEN_MAX + 1];
} oai_token;

static void oai__token(const oai_logprobs *lp, int32_t id, oai_token *t)
{
    t->n_raw = lp->token_text(lp->user, id, t->raw, sizeof t->raw);
    if (t->n_raw > sizeof t->raw) t->n_raw = sizeof t->raw;
    oai_utf8_sanitize(t->raw, t->n_raw, t->text, sizeof t->text);
}

static cJSON *oai__bytes(const oai_token *t)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < t->n_raw; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)t->raw[i]));
    return a;
}

static cJSON *oai__chat_logprob(const oai_token *t, float logprob)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "token", t->text);
    cJSON_AddNumberToObject(o, "logprob", logprob);
    cJSON_AddItemToObject(o, "bytes", oai__bytes(t));
    return o;
}

static cJSON *oai__logprobs_chat(const oai_logprobs *lp)
{
    cJSON *o = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(o, "content");
    oai_token *t = malloc(sizeof *t);
    if (!t || !content) {
        free(t);
        cJSON_Delete(o);
        return NULL;
    }
    for (size_t i = 0; i < lp->n; i++) {
        oai__token(lp, lp->ids[i], t);
        cJSON *entry = oai__chat_logprob(t, lp->logprobs[i]);
        cJSON *top = cJSON_AddArrayToObject(entry, "top_logprobs");
        for (int k = 0; k < lp->n_top; k++) {
            const encore_logprob *alt = &lp->top[i * (size_t)lp->n_top + (size_t)k];
            oai__token(lp, alt->id, t);
            cJSON_AddItemToArray(top, oai__chat_logprob(t, alt->logprob));
        }
        cJSON_AddItemToArray(content, entry);
    }
    free(t);
    return o;
}

static cJSON *oai__logprobs_completion(const oai_logprobs *lp)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *tokens = cJSON_AddArrayToObject(o, "tokens");
    cJSON *lps = cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON *tops = cJSON_AddArrayToObject(o, "top_logprobs");
    cJSON *offsets = cJSON_AddArrayToObject(o, "text_offset");
    oai_token *t = malloc(sizeof *t);
    if (!t || !offsets) {
        free(t);
        cJSON_Delete(o);
        return NULL;
    }
    size_t offset = lp->text_offset;
    for (size_t i = 0; i < lp->n; i++) {
        oai__token(lp, lp->ids[i], t);
        cJSON_AddItemToArray(tokens, cJSON_CreateString(t->text));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(lp->logprobs[i]));
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        offset += t->n_raw;
        cJSON *top = cJSON_CreateObject();
        for (int k = 0; k < lp->n_top; k++) {
            const encore_logprob *alt = &lp->top[i * (size_t)lp->n_top + (size_t)k];
            oai__token(lp, alt->id, t);
            cJSON_AddNumberToObject(top, t->text, alt->logprob);
        }
        cJSON_AddItemToArray(tops, top);
    }
    free(t);
    return o;
}

/* --- objects ----------------------------------------------------------------------- */

static cJSON *oai__head(const oai_head *h, const char *object)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", h->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)h->created);
    cJSON_AddStringToObject(o, "model", h->model);
    return o;
}

static void oai__add_string_or_null(cJSON *o, const char *name, const char *s)
{
    if (s)
        cJSON_AddStringToObject(o, name, s);
    else
        cJSON_AddNullToObject(o, name);
}

static cJSON *oai__usage(const oai_usage *u)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "prompt_tokens", (double)u->prompt_tokens);
    cJSON_AddNumberToObject(o, "total_tokens", (double)(u->prompt_tokens + u->completion_tokens));
    cJSON_AddNumberToObject(o, "completion_tokens", (double)u->completion_tokens);
    cJSON *details = cJSON_AddObjectToObject(o, "prompt_tokens_details");
    cJSON_AddNumberToObject(details, "cached_tokens", (double)u->cached_tokens);
    return o;
}

/* One entry of "choices"; `chunk` picks "delta" over "message" for chat. */
static cJSON *oai__choice(oai_kind kind, int index, const oai_choice *c, int chunk)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    if (kind == OAI_CHAT) {
        cJSON *m = cJSON_AddObjectToObject(o, chunk ? "delta" : "message");
        if (!chunk || c->role) cJSON_AddStringToObject(m, "role", "assistant");
        if (!chunk)
            oai__add_string_or_null(m, "content", c->text);
        else if (c->text)
            cJSON_AddStringToObject(m, "content", c->text);
        if (c->reasoning) cJSON_AddStringToObject(m, "reasoning_content", c->reasoning);
    } else {
        cJSON_AddStringToObject(o, "text", c->text ? c->text : "");
    }
    if (c->lp)
        cJSON_AddItemToObject(o, "logprobs", kind == OAI_CHAT ? oai__logprobs_chat(c->lp)
                                                              : oai__logprobs_completion(c->lp));
    else
        cJSON_AddNullToObject(o, "logprobs");
    oai__add_string_or_null(o, "finish_reason", c->finish_reason);
    if ((!chunk || c->finish_reason) && !c->stop_reason && c->stop_token_id)
        cJSON_AddNumberToObject(o, "stop_reason", *c->stop_token_id);
    else if (!chunk || c->finish_reason)
        oai__add_string_or_null(o, "stop_reason", c->stop_reason);
    return o;
}

static char *oai__print(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

char *oai_response_body(const oai_head *h, const oai_choice *choices, int n, const oai_usage *u)
{
    cJSON *o = oai__head(h, h->kind == OAI_CHAT ? "chat.completion" : "text_completion");
    cJSON *arr = cJSON_AddArrayToObject(o, "choices");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, oai__choice(h->kind, i, &choices[i], 0));
    cJSON_AddItemToObject(o, "usage", oai__usage(u));
    return oai__print(o);
}

char *oai_response_chunk(const oai_head *h, int index, const oai_choice *c)
{
    cJSON *o = oai__head(h, h->kind == OAI_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON *arr = cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToArray(arr, oai__choice(h->kind, index, c, 1));
    return oai__print(o);
}

char *oai_response_usage_chunk(const oai_head *h, const oai_usage *u)
{
    cJSON *o = oai__head(h, h->kind == OAI_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToObject(o, "usage", oai__usage(u));
    return oai__print(o);
}

char *oai_response_error(const oai_error *err)
{
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "message", err->message);
    cJSON_AddStringToObject(e, "type", err->type ? err->type : "invalid_request_error");
    oai__add_string_or_null(e, "param", err->param[0] ? err->param : NULL);
    cJSON_AddNumberToObject(e, "code", err->http_status);
    return oai__print(o);
}

char *oai_response_models(const char *name, int64_t created, int64_t max_model_len)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)created);
    cJSON_AddStringToObject(m, "owned_by", "encore");
    cJSON_AddStringToObject(m, "root", name);
    cJSON_AddNumberToObject(m, "max_model_len", (double)max_model_len);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), m);
    return oai__print(o);
}
