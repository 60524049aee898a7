/* openai_response.c - OpenAI's response objects, written out as JSON text
 * (json_out.c) as they are walked: no tree is built, so a reply with
 * log-probabilities costs its text and no node per token, byte or
 * alternative.
 *
 *   completion    {"id","object":"text_completion","created","model",
 *                  "choices":[{"index","text","logprobs","finish_reason","stop_reason"}],
 *                  "usage":{"prompt_tokens","completion_tokens","total_tokens"}}
 *   chat          {"id","object":"chat.completion",...,"choices":[{"index",
 *                  "message":{"role","content","reasoning_content"?,"tool_calls"?},"logprobs",
 *                  "finish_reason","stop_reason"}],"usage"}
 *   chat chunk    {"object":"chat.completion.chunk",...,"choices":[{"index",
 *                  "delta":{"role"?,"content"?,"reasoning_content"?,"tool_calls"?},"logprobs",
 *                  "finish_reason"}],"usage"?:null or the choice's so far}
 *   logprobs      completions: {"tokens","token_logprobs","top_logprobs":[{text: lp}],
 *                  "text_offset"} (offsets in characters, as Python's len counts them)
 *                 chat: {"content":[{"token","logprob","bytes",
 *                  "top_logprobs":[{"token","logprob","bytes"}]}]}
 *                 (return_tokens_as_token_ids: each token named "token_id:<id>")
 */
#include "openai_response.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

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
            if (n == 0 || i + n > len || !json_utf8_valid(str + i, n)) n = 0;
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
    char id_name[24]; /* "token_id:<id>" */
    const char *name; /* how the reply names it: text, or id_name (as_ids) */
} oai_token;

static void oai__token(const oai_logprobs *lp, int32_t id, oai_token *t)
{
    t->n_raw = lp->token_text(lp->user, id, t->raw, sizeof t->raw);
    if (t->n_raw > sizeof t->raw) t->n_raw = sizeof t->raw;
    oai_utf8_sanitize(t->raw, t->n_raw, t->text, sizeof t->text);
    snprintf(t->id_name, sizeof t->id_name, "token_id:%d", (int)id);
    t->name = lp->as_ids ? t->id_name : t->text;
}

/* The characters (code points) of UTF-8 text: what Python's len() counts,
 * and so OpenAI's and vLLM's text_offset. */
static size_t oai__chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

size_t oai_logprobs_chars(const oai_logprobs *lp)
{
    oai_token t;
    size_t n = 0;
    for (size_t i = 0; i < lp->n; i++) {
        oai__token(lp, lp->ids[i], &t);
        n += oai__chars(t.text);
    }
    return n;
}

static const encore_logprob *oai__alt(const oai_logprobs *lp, size_t i, int k)
{
    return &lp->top[i * (size_t)lp->n_top + (size_t)k];
}

/* {"token","logprob","bytes":[...]} without its closing brace (the entry of
 * "content" adds its top_logprobs first); bytes: the token's, or with
 * name_bytes those of its name (vLLM's alternatives under
 * return_tokens_as_token_ids). */
static void oai__chat_logprob_open(json_out *w, const oai_token *t, float logprob, int name_bytes)
{
    json_out_begin_object(w);
    json_out_key(w, "token");
    json_out_string(w, t->name);
    json_out_key(w, "logprob");
    json_out_number(w, logprob);
    json_out_key(w, "bytes");
    json_out_begin_array(w);
    const char *b = name_bytes ? t->name : t->raw;
    size_t n = name_bytes ? strlen(t->name) : t->n_raw;
    for (size_t i = 0; i < n; i++)
        json_out_number(w, (unsigned char)b[i]);
    json_out_end_array(w);
}

/* [{"token","logprob","bytes","top_logprobs":[...]}, ...]: chat's
 * logprobs.content, and a Responses output_text's logprobs. */
static void oai__logprob_entries(json_out *w, const oai_logprobs *lp, oai_token *t)
{
    json_out_begin_array(w);
    for (size_t i = 0; i < lp->n && !w->oom; i++) {
        oai__token(lp, lp->ids[i], t);
        oai__chat_logprob_open(w, t, lp->logprobs[i], 0);
        json_out_key(w, "top_logprobs");
        json_out_begin_array(w);
        for (int k = 0; k < lp->n_top; k++) {
            oai__token(lp, oai__alt(lp, i, k)->id, t);
            oai__chat_logprob_open(w, t, oai__alt(lp, i, k)->logprob, lp->as_ids);
            json_out_end_object(w);
        }
        json_out_end_array(w);
        json_out_end_object(w);
    }
    json_out_end_array(w);
}

static void oai__logprobs_chat(json_out *w, const oai_logprobs *lp, oai_token *t)
{
    json_out_begin_object(w);
    json_out_key(w, "content");
    oai__logprob_entries(w, lp, t);
    json_out_end_object(w);
}

void oai_logprob_entries(json_out *w, const oai_logprobs *lp)
{
    oai_token *t = malloc(sizeof *t);
    if (!t) {
        w->oom = 1;
        return;
    }
    oai__logprob_entries(w, lp, t);
    free(t);
}

/* One position's top_logprobs object of completions, {text: logprob}: the
 * chosen token first, then the n_top alternatives best first (so up to
 * n_top + 1 entries: OpenAI's "the logprob of the sampled token, so there may
 * be up to logprobs+1 elements", in vLLM's order). A text met twice (the
 * chosen token among the alternatives, or two ids that decode alike) keeps
 * its first entry: a JSON object's keys are distinct. alts: n_top + 1 tokens
 * of scratch. */
static void oai__top_object(json_out *w, const oai_logprobs *lp, size_t i, oai_token *alts)
{
    json_out_begin_object(w);
    oai__token(lp, lp->ids[i], &alts[0]);
    json_out_key(w, alts[0].name);
    json_out_number(w, lp->logprobs[i]);
    for (int k = 1; k <= lp->n_top; k++) {
        oai__token(lp, oai__alt(lp, i, k - 1)->id, &alts[k]);
        int seen = 0;
        for (int j = 0; j < k && !seen; j++)
            seen = !strcmp(alts[j].name, alts[k].name);
        if (seen) continue;
        json_out_key(w, alts[k].name);
        json_out_number(w, oai__alt(lp, i, k - 1)->logprob);
    }
    json_out_end_object(w);
}

/* completions: four arrays of one entry per token, written one after the
 * other (the token texts are looked up again for each that needs them). */
static void oai__logprobs_completion(json_out *w, const oai_logprobs *lp, oai_token *t)
{
    json_out_begin_object(w);
    json_out_key(w, "tokens");
    json_out_begin_array(w);
    for (size_t i = 0; i < lp->n && !w->oom; i++) {
        oai__token(lp, lp->ids[i], t);
        json_out_string(w, t->name);
    }
    json_out_end_array(w);
    json_out_key(w, "token_logprobs");
    json_out_begin_array(w);
    for (size_t i = 0; i < lp->n; i++)
        json_out_number(w, lp->logprobs[i]);
    json_out_end_array(w);
    json_out_key(w, "top_logprobs");
    json_out_begin_array(w);
    oai_token *alts = malloc((size_t)(lp->n_top + 1) * sizeof *alts);
    if (!alts) w->oom = 1;
    for (size_t i = 0; i < lp->n && !w->oom; i++) {
        if (isnan(lp->logprobs[i])) /* an echoed prompt's first token: nothing before it */
            json_out_null(w);
        else
            oai__top_object(w, lp, i, alts);
    }
    free(alts);
    json_out_end_array(w);
    json_out_key(w, "text_offset");
    json_out_begin_array(w);
    size_t offset = lp->text_offset;
    for (size_t i = 0; i < lp->n && !w->oom; i++) {
        json_out_number(w, (double)offset);
        oai__token(lp, lp->ids[i], t);
        offset += oai__chars(t->text);
    }
    json_out_end_array(w);
    json_out_end_object(w);
}

/* The entry of one id at a prompt position: {"logprob", "rank", "decoded_token"}
 * (vLLM's Logprob; -inf written as -9999.0, as vLLM clamps it). */
static void oai__prompt_entry(json_out *w, const oai_logprobs *names, int32_t id, float logprob,
                              int rank, oai_token *t)
{
    char key[16];
    snprintf(key, sizeof key, "%d", (int)id);
    oai__token(names, id, t);
    json_out_key(w, key);
    json_out_begin_object(w);
    json_out_member_number(w, "logprob", isinf(logprob) ? -9999.0 : logprob);
    json_out_member_number(w, "rank", rank);
    json_out_member_string(w, "decoded_token", t->text);
    json_out_end_object(w);
}

/* "prompt_logprobs": [null, {id: entry, ...}, ...]: at each position the
 * prompt's token first (its rank its place among the alternatives when it
 * is one of them), then the alternatives not yet written, ranks 1, 2, ...
 * (vLLM's order). */
static void oai__prompt_logprobs(json_out *w, const oai_prompt_logprobs *p)
{
    json_out_key(w, "prompt_logprobs");
    oai_token *t = p ? malloc(sizeof *t) : NULL;
    if (!p || !t) {
        if (p) w->oom = 1;
        json_out_null(w);
        return;
    }
    oai_logprobs names = {.token_text = p->token_text, .user = p->user}; /* ids as text */
    json_out_begin_array(w);
    for (size_t i = 0; i < p->n && !w->oom; i++) {
        if (i == 0) {
            json_out_null(w);
            continue;
        }
        const encore_logprob *alt = p->top + i * (size_t)p->n_top;
        int rank = p->ranks[i];
        for (int k = 0; k < p->n_top; k++)
            if (alt[k].id == p->ids[i]) rank = k + 1;
        json_out_begin_object(w);
        oai__prompt_entry(w, &names, p->ids[i], p->logprobs[i], rank, t);
        for (int k = 0; k < p->n_top; k++)
            if (alt[k].id >= 0 && alt[k].id != p->ids[i])
                oai__prompt_entry(w, &names, alt[k].id, alt[k].logprob, k + 1, t);
        json_out_end_object(w);
    }
    json_out_end_array(w);
    free(t);
}

/* "logprobs": null, or the object of the choice's kind. */
static void oai__logprobs(json_out *w, oai_kind kind, const oai_logprobs *lp)
{
    json_out_key(w, "logprobs");
    oai_token *t = lp ? malloc(sizeof *t) : NULL;
    if (!lp) {
        json_out_null(w);
    } else if (!t) {
        w->oom = 1;
    } else if (kind == OAI_CHAT) {
        oai__logprobs_chat(w, lp, t);
    } else {
        oai__logprobs_completion(w, lp, t);
    }
    free(t);
}

/* --- objects ----------------------------------------------------------------------- */

/* The object opened, with "id", "object", "created", "model". */
static void oai__head(json_out *w, const oai_head *h, const char *object)
{
    json_out_begin_object(w);
    json_out_member_string(w, "id", h->id);
    json_out_member_string(w, "object", object);
    json_out_member_number(w, "created", (double)h->created);
    json_out_member_string(w, "model", h->model);
}

static void oai__usage(json_out *w, const oai_usage *u)
{
    json_out_key(w, "usage");
    json_out_begin_object(w);
    json_out_member_number(w, "prompt_tokens", (double)u->prompt_tokens);
    json_out_member_number(w, "total_tokens", (double)(u->prompt_tokens + u->completion_tokens));
    json_out_member_number(w, "completion_tokens", (double)u->completion_tokens);
    json_out_key(w, "prompt_tokens_details");
    json_out_begin_object(w);
    json_out_member_number(w, "cached_tokens", (double)u->cached_tokens);
    json_out_end_object(w);
    json_out_end_object(w);
}

/* "tool_calls": [{"id", "type", "function": {"name", "arguments"}}, ...]; in a
 * chunk each has its "index", and one that continues a call only
 * "function": {"arguments"}. */
static void oai__tool_calls(json_out *w, const oai_choice *c, int chunk)
{
    json_out_key(w, "tool_calls");
    json_out_begin_array(w);
    for (size_t k = 0; k < c->n_tool_calls; k++) {
        const oai_tool_call *t = &c->tool_calls[k];
        json_out_begin_object(w);
        if (chunk) json_out_member_number(w, "index", t->index);
        if (t->id) {
            json_out_member_string(w, "id", t->id);
            json_out_member_string(w, "type", "function");
        }
        json_out_key(w, "function");
        json_out_begin_object(w);
        if (t->name) json_out_member_string(w, "name", t->name);
        json_out_member_string(w, "arguments", t->arguments);
        json_out_end_object(w);
        json_out_end_object(w);
    }
    json_out_end_array(w);
}

/* chat: "message" (a whole reply) or "delta" (a chunk). */
static void oai__message(json_out *w, const oai_choice *c, int chunk)
{
    json_out_key(w, chunk ? "delta" : "message");
    json_out_begin_object(w);
    if (!chunk || c->role) json_out_member_string(w, "role", "assistant");
    if (!chunk) {
        json_out_key(w, "content");
        json_out_string_or_null(w, c->text);
    } else if (c->text) {
        json_out_member_string(w, "content", c->text);
    }
    if (c->reasoning) json_out_member_string(w, "reasoning_content", c->reasoning);
    if (c->n_tool_calls) oai__tool_calls(w, c, chunk);
    json_out_end_object(w);
}

/* One entry of "choices"; `chunk` picks "delta" over "message" for chat. */
static void oai__choice(json_out *w, oai_kind kind, int index, const oai_choice *c, int chunk)
{
    json_out_begin_object(w);
    json_out_member_number(w, "index", index);
    if (kind == OAI_CHAT)
        oai__message(w, c, chunk);
    else
        json_out_member_string(w, "text", c->text ? c->text : "");
    oai__logprobs(w, kind, c->lp);
    json_out_key(w, "finish_reason");
    json_out_string_or_null(w, c->finish_reason);
    if ((!chunk || c->finish_reason) && !c->stop_reason && c->stop_token_id) {
        json_out_member_number(w, "stop_reason", *c->stop_token_id);
    } else if (!chunk || c->finish_reason) {
        json_out_key(w, "stop_reason");
        json_out_string_or_null(w, c->stop_reason);
    }
    if (kind != OAI_CHAT && c->has_prompt_lp) oai__prompt_logprobs(w, c->prompt_lp);
    json_out_end_object(w);
}

static const char *oai__object(const oai_head *h, int chunk)
{
    if (h->kind != OAI_CHAT) return "text_completion";
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

char *oai_response_body(const oai_head *h, const oai_choice *choices, int n, const oai_usage *u)
{
    json_out w;
    json_out_init(&w);
    oai__head(&w, h, oai__object(h, 0));
    json_out_key(&w, "choices");
    json_out_begin_array(&w);
    for (int i = 0; i < n; i++)
        oai__choice(&w, h->kind, i, &choices[i], 0);
    json_out_end_array(&w);
    oai__usage(&w, u);
    if (h->kind == OAI_CHAT && n > 0 && choices[0].has_prompt_lp)
        oai__prompt_logprobs(&w, choices[0].prompt_lp);
    json_out_end_object(&w);
    return json_out_finish(&w);
}

char *oai_response_chunk(const oai_head *h, int index, const oai_choice *c)
{
    json_out w;
    json_out_init(&w);
    oai__head(&w, h, oai__object(h, 1));
    json_out_key(&w, "choices");
    json_out_begin_array(&w);
    oai__choice(&w, h->kind, index, c, 1);
    json_out_end_array(&w);
    if (c->usage) {
        oai__usage(&w, c->usage);
    } else if (h->usage_null) {
        json_out_key(&w, "usage");
        json_out_null(&w);
    }
    json_out_end_object(&w);
    return json_out_finish(&w);
}

char *oai_response_tool_call_chunk(const oai_head *h, int index, const oai_tool_call *call,
                                   int part, const oai_usage *u)
{
    oai_tool_call t = {call->index, call->id, call->name, ""};
    if (part) t = (oai_tool_call){call->index, NULL, NULL, call->arguments};
    oai_choice c = {.tool_calls = &t, .n_tool_calls = 1, .usage = u};
    return oai_response_chunk(h, index, &c);
}

char *oai_response_usage_chunk(const oai_head *h, const oai_usage *u)
{
    json_out w;
    json_out_init(&w);
    oai__head(&w, h, oai__object(h, 1));
    json_out_key(&w, "choices");
    json_out_begin_array(&w);
    json_out_end_array(&w);
    oai__usage(&w, u);
    json_out_end_object(&w);
    return json_out_finish(&w);
}

char *oai_response_error(const oai_error *err)
{
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_key(&w, "error");
    json_out_begin_object(&w);
    json_out_member_string(&w, "message", err->message);
    json_out_member_string(&w, "type", err->type ? err->type : "invalid_request_error");
    json_out_key(&w, "param");
    json_out_string_or_null(&w, err->param[0] ? err->param : NULL);
    json_out_member_number(&w, "code", err->http_status);
    json_out_end_object(&w);
    json_out_end_object(&w);
    return json_out_finish(&w);
}

/* One entry of GET /v1/models, also GET /v1/models/{id}'s reply. */
static void oai__model(json_out *w, const char *name, int64_t created, int64_t max_model_len)
{
    json_out_begin_object(w);
    json_out_member_string(w, "id", name);
    json_out_member_string(w, "object", "model");
    json_out_member_number(w, "created", (double)created);
    json_out_member_string(w, "owned_by", "encore");
    json_out_member_string(w, "root", name);
    json_out_member_number(w, "max_model_len", (double)max_model_len);
    json_out_end_object(w);
}

char *oai_response_models(const char *name, int64_t created, int64_t max_model_len)
{
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_member_string(&w, "object", "list");
    json_out_key(&w, "data");
    json_out_begin_array(&w);
    oai__model(&w, name, created, max_model_len);
    json_out_end_array(&w);
    json_out_end_object(&w);
    return json_out_finish(&w);
}

char *oai_response_version(const char *version)
{
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_member_string(&w, "version", version);
    json_out_end_object(&w);
    return json_out_finish(&w);
}

char *oai_response_model(const char *name, int64_t created, int64_t max_model_len)
{
    json_out w;
    json_out_init(&w);
    oai__model(&w, name, created, max_model_len);
    return json_out_finish(&w);
}
