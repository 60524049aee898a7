/* responses_response.c - the Response object and its streaming events, as
 * JSON text (responses_response.h), written with json_out as they are
 * walked. */
#include "responses_response.h"

#include <stdlib.h>
#include <string.h>

#include "json_out.h"

static void resp__empty_array(json_out *w, const char *name)
{
    json_out_key(w, name);
    json_out_begin_array(w);
    json_out_end_array(w);
}

/* An item's text part: output_text (with annotations and logprobs) or
 * reasoning_text; text NULL writes "". */
static void resp__part(json_out *w, const resp_item *it)
{
    json_out_begin_object(w);
    json_out_member_string(w, "type", it->kind == RESP_MESSAGE ? "output_text" : "reasoning_text");
    json_out_member_string(w, "text", it->text);
    if (it->kind == RESP_MESSAGE) {
        resp__empty_array(w, "annotations");
        json_out_key(w, "logprobs");
        if (it->lp) {
            oai_logprob_entries(w, it->lp);
        } else {
            json_out_begin_array(w);
            json_out_end_array(w);
        }
    }
    json_out_end_object(w);
}

/* "content": [] before the text part is added, [part] after. */
static void resp__content(json_out *w, const resp_item *it)
{
    json_out_key(w, "content");
    json_out_begin_array(w);
    if (it->text) resp__part(w, it);
    json_out_end_array(w);
}

static void resp__item(json_out *w, const resp_item *it)
{
    json_out_begin_object(w);
    json_out_member_string(w, "id", it->id);
    switch (it->kind) {
    case RESP_REASONING:
        json_out_member_string(w, "type", "reasoning");
        resp__empty_array(w, "summary");
        resp__content(w, it);
        json_out_key(w, "encrypted_content");
        json_out_null(w);
        json_out_member_string(w, "status", it->status);
        break;
    case RESP_MESSAGE:
        json_out_member_string(w, "type", "message");
        json_out_member_string(w, "status", it->status);
        json_out_member_string(w, "role", "assistant");
        resp__content(w, it);
        break;
    case RESP_CALL:
        json_out_member_string(w, "type", "function_call");
        json_out_member_string(w, "status", it->status);
        json_out_member_string(w, "call_id", it->call_id);
        json_out_member_string(w, "name", it->name);
        json_out_member_string(w, "arguments", it->text);
        break;
    }
    json_out_end_object(w);
}

static void resp__usage(json_out *w, const resp_state *s)
{
    json_out_key(w, "usage");
    const oai_usage *u = s->usage;
    if (!u) {
        json_out_null(w);
        return;
    }
    json_out_begin_object(w);
    json_out_member_number(w, "input_tokens", (double)u->prompt_tokens);
    json_out_key(w, "input_tokens_details");
    json_out_begin_object(w);
    json_out_member_number(w, "cached_tokens", (double)u->cached_tokens);
    json_out_end_object(w);
    json_out_member_number(w, "output_tokens", (double)u->completion_tokens);
    json_out_key(w, "output_tokens_details");
    json_out_begin_object(w);
    json_out_member_number(w, "reasoning_tokens", (double)u->reasoning_tokens);
    json_out_end_object(w);
    json_out_member_number(w, "total_tokens", (double)(u->prompt_tokens + u->completion_tokens));
    json_out_end_object(w);
}

static void resp__response(json_out *w, const resp_head *h, const resp_state *s)
{
    json_out_begin_object(w);
    json_out_member_string(w, "id", h->id);
    json_out_member_string(w, "object", "response");
    json_out_member_number(w, "created_at", (double)h->created_at);
    json_out_member_string(w, "status", s->status);
    json_out_key(w, "error");
    json_out_null(w);
    json_out_key(w, "incomplete_details");
    if (s->incomplete_reason) {
        json_out_begin_object(w);
        json_out_member_string(w, "reason", s->incomplete_reason);
        json_out_end_object(w);
    } else {
        json_out_null(w);
    }
    json_out_members(w, h->echo);
    json_out_member_string(w, "model", h->model);
    json_out_key(w, "output");
    json_out_begin_array(w);
    for (size_t i = 0; i < s->n_items; i++)
        resp__item(w, &s->items[i]);
    json_out_end_array(w);
    json_out_member_number(w, "temperature", h->temperature);
    json_out_member_number(w, "top_p", h->top_p);
    json_out_key(w, "store");
    json_out_raw(w, "false");
    json_out_key(w, "background");
    json_out_raw(w, "false");
    resp__usage(w, s);
    json_out_end_object(w);
}

char *resp_response_body(const resp_head *h, const resp_state *s)
{
    json_out w;
    json_out_init(&w);
    resp__response(&w, h, s);
    return json_out_finish(&w);
}

char *resp_event_json(const resp_head *h, const resp_event *e)
{
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_member_string(&w, "type", e->type);
    json_out_member_number(&w, "sequence_number", (double)e->sequence_number);
    if (e->response) {
        json_out_key(&w, "response");
        resp__response(&w, h, e->response);
    }
    int item_event = !strncmp(e->type, "response.output_item.", 21);
    if (e->item && !item_event) json_out_member_string(&w, "item_id", e->item->id);
    if (e->output_index >= 0) json_out_member_number(&w, "output_index", e->output_index);
    if (e->content_index >= 0) json_out_member_number(&w, "content_index", e->content_index);
    if (e->item && item_event) {
        json_out_key(&w, "item");
        resp__item(&w, e->item);
    }
    if (e->part) {
        json_out_key(&w, "part");
        resp__part(&w, e->item);
    }
    if (e->delta) json_out_member_string(&w, "delta", e->delta);
    if (e->text) json_out_member_string(&w, "text", e->text);
    if (e->arguments) {
        json_out_member_string(&w, "name", e->item->name);
        json_out_member_string(&w, "arguments", e->item->text);
    }
    if (!strncmp(e->type, "response.output_text.", 21)) {
        json_out_key(&w, "logprobs");
        if (e->lp) {
            oai_logprob_entries(&w, e->lp);
        } else {
            json_out_begin_array(&w);
            json_out_end_array(&w);
        }
    }
    json_out_end_object(&w);
    return json_out_finish(&w);
}

char *resp_error_event(int64_t sequence_number, const oai_error *err)
{
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_member_string(&w, "type", "error");
    json_out_member_number(&w, "sequence_number", (double)sequence_number);
    json_out_key(&w, "code");
    json_out_null(&w);
    json_out_member_string(&w, "message", err->message);
    json_out_key(&w, "param");
    json_out_string_or_null(&w, err->param[0] ? err->param : NULL);
    json_out_end_object(&w);
    return json_out_finish(&w);
}
