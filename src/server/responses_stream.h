/* responses_stream.h - a chat reply as it grows (reasoning, content, tool
 * calls), turned into a Response's output items: the events each step adds
 * to a stream, and the whole Response at the end.
 *
 * Items open in the order their text comes: reasoning, a message, each
 * call; a message open when a call comes is closed first (content after it
 * opens a new message), reasoning when anything else comes. Item ids are
 * the response's id with the item's prefix and its output index
 * ("resp_X" -> "msg_X_1"), unique within the response. */
#ifndef ENC_SERVER_RESPONSES_STREAM_H
#define ENC_SERVER_RESPONSES_STREAM_H

#include <stddef.h>

#include "responses_response.h"
#include "tool_calls.h"

/* The reply so far, as the chat side keeps it. */
typedef struct resp_progress {
    const char *reasoning; /* NULL or [n_reasoning] */
    size_t n_reasoning;
    const char *content; /* NULL or [n_content] */
    size_t n_content;
    const tool_call *calls; /* [n_calls], parsed whole */
    size_t n_calls;
    const oai_logprobs *lp;       /* include's logprobs: every token's, the first message's
                                   * in the whole Response (a stream's response.completed);
                                   * NULL: not asked */
    const oai_logprobs *delta_lp; /* an output_text.delta's: those of the content tokens
                                   * no delta carried yet (the done events carry none, as
                                   * vLLM's) */
} resp_progress;

/* One SSE frame's JSON goes out (taken: the callee frees it; NULL: out of
 * memory). */
typedef void (*resp_emit_fn)(void *user, const char *type, char *json);

/* An output item of the stream: where its text lies in the progress. */
typedef struct resp_slot {
    resp_item_kind kind;
    size_t begin, end;  /* reasoning: [begin, end) of the reasoning; message: of the content */
    size_t call;        /* RESP_CALL: its index among the calls */
    const char *status; /* "in_progress" until closed */
    char id[80];
} resp_slot;

typedef struct resp_stream {
    resp_head head;
    int64_t seq;      /* the next event's sequence_number */
    resp_slot *slots; /* [n_slots]: the items opened so far, in output order */
    size_t n_slots, cap;
    int reasoning_open;                     /* the open reasoning item's index, -1 none */
    int message_open;                       /* the open message's index, -1 none */
    size_t n_reasoning, n_content, n_calls; /* of the progress, taken into items */
    int oom;
} resp_stream;

void resp_stream_init(resp_stream *s, const resp_head *head);
void resp_stream_free(resp_stream *s);

/* response.created and response.in_progress. */
void resp_stream_begin(resp_stream *s, resp_emit_fn emit, void *user);
/* The events for what p added since the last call. */
void resp_stream_update(resp_stream *s, const resp_progress *p, resp_emit_fn emit, void *user);
/* The open items closed, then response.completed with the whole Response
 * and its usage (status "incomplete" when finish_reason is "length"). */
void resp_stream_end(resp_stream *s, const resp_progress *p, const char *finish_reason,
                     const oai_usage *u, resp_emit_fn emit, void *user);

/* The whole Response of a finished reply (stream: false): the items a
 * stream of it ends with (call_marks[k]: the content's length when call k
 * was parsed; a stream takes an event's text before its calls), p->lp on
 * the first message. */
char *resp_whole(const resp_head *head, const resp_progress *p, const size_t *call_marks,
                 const char *finish_reason, const oai_usage *u);

#endif
