/* responses_stream.c - a chat reply's progress as a Response's items and
 * events (responses_stream.h).
 *
 * Per item, the events a stream sends:
 *   reasoning  output_item.added, content_part.added, reasoning_text.delta...,
 *              reasoning_text.done, content_part.done, output_item.done
 *   message    output_item.added, content_part.added, output_text.delta...,
 *              output_text.done, content_part.done, output_item.done
 *   call       output_item.added, function_call_arguments.delta (the whole
 *              arguments: a call is parsed whole before it goes out),
 *              function_call_arguments.done, output_item.done */
#include "responses_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void resp_stream_init(resp_stream *s, const resp_head *head)
{
    memset(s, 0, sizeof *s);
    s->head = *head;
    s->reasoning_open = s->message_open = -1;
}

void resp_stream_free(resp_stream *s)
{
    free(s->slots);
    s->slots = NULL;
    s->n_slots = s->cap = 0;
}

/* The item view of slot i over the progress p (text "" while it has none). */
static resp_item resp__view(const resp_slot *slot, const resp_progress *p, char *scratch_text)
{
    resp_item it = {.kind = slot->kind, .id = slot->id, .status = slot->status};
    if (slot->kind == RESP_CALL) {
        it.call_id = p->calls[slot->call].id;
        it.name = p->calls[slot->call].name;
        it.text = p->calls[slot->call].arguments;
        return it;
    }
    const char *src = slot->kind == RESP_REASONING ? p->reasoning : p->content;
    size_t n = slot->end - slot->begin;
    if (scratch_text) {
        memcpy(scratch_text, src ? src + slot->begin : "", n);
        scratch_text[n] = '\0';
        it.text = scratch_text;
    }
    return it;
}

/* --- events ------------------------------------------------------------------ */

static void resp__emit(resp_stream *s, resp_event *e, resp_emit_fn emit, void *user)
{
    e->sequence_number = s->seq++;
    emit(user, e->type, resp_event_json(&s->head, e));
}

/* An event about slot i: type, with the item's text as it stands. */
static void resp__item_event(resp_stream *s, size_t i, const resp_progress *p, const char *type,
                             int part, int whole_text, const char *delta, resp_emit_fn emit,
                             void *user)
{
    const resp_slot *slot = &s->slots[i];
    size_t n = slot->kind == RESP_CALL ? 0 : slot->end - slot->begin;
    char *text = slot->kind == RESP_CALL ? NULL : malloc(n + 1);
    if (slot->kind != RESP_CALL && !text) {
        emit(user, type, NULL);
        return;
    }
    resp_item it = resp__view(slot, p, text);
    int item_event = !strncmp(type, "response.output_item.", 21);
    if (!strcmp(type, "response.output_item.added")) /* before any text: content [], arguments "" */
        it.text = slot->kind == RESP_CALL ? "" : NULL;
    resp_event e = {
        .type = type,
        .output_index = (int)i,
        .item = &it,
        .content_index = item_event || slot->kind == RESP_CALL ? -1 : 0,
        .part = part,
        .delta = delta,
        .text = whole_text && slot->kind != RESP_CALL ? it.text : NULL,
        .arguments = whole_text && slot->kind == RESP_CALL,
        .lp = !strcmp(type, "response.output_text.delta") ? p->delta_lp : NULL,
    };
    resp__emit(s, &e, emit, user);
    free(text);
}

/* Item i of response `id` ("resp_X"): "rs_X_i", "msg_X_i" or "fc_X_i". */
static void resp__slot_id(resp_slot *slot, const char *id, size_t i)
{
    static const char *const prefix[] = {"rs_", "msg_", "fc_"};
    const char *hex = strchr(id, '_');
    snprintf(slot->id, sizeof slot->id, "%s%s_%zu", prefix[slot->kind], hex ? hex + 1 : id, i);
}

static int resp__open(resp_stream *s, resp_item_kind kind, size_t begin, size_t call)
{
    if (s->n_slots == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4;
        resp_slot *p = realloc(s->slots, cap * sizeof *p);
        if (!p) return -1;
        s->slots = p;
        s->cap = cap;
    }
    resp_slot *slot = &s->slots[s->n_slots];
    *slot = (resp_slot){kind, begin, begin, call, "in_progress", ""};
    resp__slot_id(slot, s->head.id, s->n_slots);
    return (int)s->n_slots++;
}

/* Opened: output_item.added (and the text part's content_part.added). */
static void resp__added(resp_stream *s, int i, const resp_progress *p, resp_emit_fn emit,
                        void *user)
{
    resp__item_event(s, (size_t)i, p, "response.output_item.added", 0, 0, NULL, emit, user);
    if (s->slots[i].kind != RESP_CALL)
        resp__item_event(s, (size_t)i, p, "response.content_part.added", 1, 0, NULL, emit, user);
}

/* Closed with `status`: the done events of its kind. */
static void resp__close(resp_stream *s, int i, const resp_progress *p, const char *status,
                        resp_emit_fn emit, void *user)
{
    resp_slot *slot = &s->slots[i];
    const char *done = slot->kind == RESP_REASONING ? "response.reasoning_text.done"
                       : slot->kind == RESP_MESSAGE ? "response.output_text.done"
                                                    : "response.function_call_arguments.done";
    resp__item_event(s, (size_t)i, p, done, 0, 1, NULL, emit, user);
    if (slot->kind != RESP_CALL)
        resp__item_event(s, (size_t)i, p, "response.content_part.done", 1, 0, NULL, emit, user);
    slot->status = status;
    resp__item_event(s, (size_t)i, p, "response.output_item.done", 0, 0, NULL, emit, user);
    if (i == s->reasoning_open) s->reasoning_open = -1;
    if (i == s->message_open) s->message_open = -1;
}

/* Text added to the open item of `kind` (opened first when none is):
 * its delta event. */
static void resp__text(resp_stream *s, resp_item_kind kind, const resp_progress *p, size_t from,
                       size_t to, resp_emit_fn emit, void *user)
{
    int *open = kind == RESP_REASONING ? &s->reasoning_open : &s->message_open;
    const char *src = kind == RESP_REASONING ? p->reasoning : p->content;
    if (to <= from) return;
    if (kind == RESP_MESSAGE && s->reasoning_open >= 0)
        resp__close(s, s->reasoning_open, p, "completed", emit, user);
    if (*open < 0) {
        if ((*open = resp__open(s, kind, from, 0)) < 0) {
            s->oom = 1;
            return;
        }
        resp__added(s, *open, p, emit, user);
    }
    char *delta = malloc(to - from + 1);
    if (!delta) {
        s->oom = 1;
        return;
    }
    memcpy(delta, src + from, to - from);
    delta[to - from] = '\0';
    s->slots[*open].end = to;
    resp__item_event(s, (size_t)*open, p,
                     kind == RESP_REASONING ? "response.reasoning_text.delta"
                                            : "response.output_text.delta",
                     0, 0, delta, emit, user);
    free(delta);
}

/* Call k, whole: opened, its arguments in one delta, closed. */
static void resp__call(resp_stream *s, size_t k, const resp_progress *p, resp_emit_fn emit,
                       void *user)
{
    if (s->reasoning_open >= 0) resp__close(s, s->reasoning_open, p, "completed", emit, user);
    if (s->message_open >= 0) resp__close(s, s->message_open, p, "completed", emit, user);
    int i = resp__open(s, RESP_CALL, 0, k);
    if (i < 0) {
        s->oom = 1;
        return;
    }
    resp__added(s, i, p, emit, user);
    resp__item_event(s, (size_t)i, p, "response.function_call_arguments.delta", 0, 0,
                     p->calls[k].arguments, emit, user);
    resp__close(s, i, p, "completed", emit, user);
}

/* The whole Response over the slots (statuses as they stand), p->lp on the
 * first message. */
static char *resp__response(const resp_head *h, const resp_slot *slots, size_t n,
                            const resp_progress *p, const char *status, const char *reason,
                            const oai_usage *u)
{
    const oai_logprobs *lp = p->lp;
    resp_item *items = calloc(n ? n : 1, sizeof *items);
    char **texts = calloc(n ? n : 1, sizeof *texts);
    int ok = items && texts;
    for (size_t i = 0; ok && i < n; i++) {
        if (slots[i].kind != RESP_CALL && !(texts[i] = malloc(slots[i].end - slots[i].begin + 1)))
            ok = 0;
        if (ok) items[i] = resp__view(&slots[i], p, texts[i]);
        if (ok && slots[i].kind == RESP_MESSAGE) items[i].lp = lp, lp = NULL; /* the first's */
    }
    resp_state st = {status, reason, items, n, u};
    char *json = ok ? resp_response_body(h, &st) : NULL;
    for (size_t i = 0; texts && i < n; i++)
        free(texts[i]);
    free(texts);
    free(items);
    return json;
}

static void resp__lifecycle(resp_stream *s, const char *type, const resp_progress *p,
                            const char *status, const char *reason, const oai_usage *u,
                            resp_emit_fn emit, void *user)
{
    static const resp_progress none = {0};
    char *response =
        resp__response(&s->head, s->slots, s->n_slots, p ? p : &none, status, reason, u);
    if (!response) {
        emit(user, type, NULL);
        return;
    }
    /* {"type","sequence_number","response":{...}} around the object made above */
    size_t n = strlen(response) + strlen(type) + 96;
    char *json = malloc(n);
    if (json)
        snprintf(json, n, "{\"type\":\"%s\",\"sequence_number\":%lld,\"response\":%s}", type,
                 (long long)s->seq, response);
    s->seq++;
    free(response);
    emit(user, type, json);
}

void resp_stream_begin(resp_stream *s, resp_emit_fn emit, void *user)
{
    resp__lifecycle(s, "response.created", NULL, "in_progress", NULL, NULL, emit, user);
    resp__lifecycle(s, "response.in_progress", NULL, "in_progress", NULL, NULL, emit, user);
}

void resp_stream_update(resp_stream *s, const resp_progress *p, resp_emit_fn emit, void *user)
{
    resp__text(s, RESP_REASONING, p, s->n_reasoning, p->n_reasoning, emit, user);
    s->n_reasoning = p->n_reasoning;
    resp__text(s, RESP_MESSAGE, p, s->n_content, p->n_content, emit, user);
    s->n_content = p->n_content;
    for (; s->n_calls < p->n_calls; s->n_calls++)
        resp__call(s, s->n_calls, p, emit, user);
}

/* "incomplete" when the reply ran out of tokens, else "completed". */
static const char *resp__status(const char *finish_reason)
{
    return !strcmp(finish_reason, "length") ? "incomplete" : "completed";
}

/* The rest of p taken in, and every item closed (an empty message when
 * the reply made neither a message nor a call). */
static void resp__finish(resp_stream *s, const resp_progress *p, const char *status,
                         resp_emit_fn emit, void *user)
{
    resp_stream_update(s, p, emit, user);
    if (s->reasoning_open >= 0) resp__close(s, s->reasoning_open, p, "completed", emit, user);
    int answered = 0; /* a message or a call: else an empty message, as resp_whole has */
    for (size_t i = 0; i < s->n_slots; i++)
        answered |= s->slots[i].kind != RESP_REASONING;
    if (!answered && (s->message_open = resp__open(s, RESP_MESSAGE, p->n_content, 0)) < 0)
        s->oom = 1;
    if (!answered && s->message_open >= 0) resp__added(s, s->message_open, p, emit, user);
    if (s->message_open >= 0) resp__close(s, s->message_open, p, status, emit, user);
}

void resp_stream_end(resp_stream *s, const resp_progress *p, const char *finish_reason,
                     const oai_usage *u, resp_emit_fn emit, void *user)
{
    const char *status = resp__status(finish_reason);
    resp__finish(s, p, status, emit, user);
    /* response.completed either way, its status inside (as vLLM sends it):
     * the openai package's ResponseStream before 5.x takes its final
     * snapshot from response.completed only */
    resp__lifecycle(s, "response.completed", p, status,
                    !strcmp(status, "incomplete") ? "max_output_tokens" : NULL, u, emit, user);
}

static void resp__discard(void *user, const char *type, char *json)
{
    (void)type;
    if (!json) *(int *)user = 1;
    free(json);
}

char *resp_whole(const resp_head *head, const resp_progress *p, const size_t *call_marks,
                 const char *finish_reason, const oai_usage *u)
{
    /* the stream of the same reply replayed, so the items are the ones a
     * stream ends with: the content each call came after, then the call */
    const char *status = resp__status(finish_reason);
    int oom = 0;
    resp_stream s;
    resp_stream_init(&s, head);
    for (size_t k = 0; k < p->n_calls; k++) {
        resp_progress q = *p;
        q.n_content = call_marks[k] < p->n_content ? call_marks[k] : p->n_content;
        q.n_calls = k + 1;
        resp_stream_update(&s, &q, resp__discard, &oom);
    }
    resp__finish(&s, p, status, resp__discard, &oom);
    char *json = NULL;
    if (!oom && !s.oom)
        json = resp__response(head, s.slots, s.n_slots, p, status,
                              !strcmp(status, "incomplete") ? "max_output_tokens" : NULL, u);
    resp_stream_free(&s);
    return json;
}
