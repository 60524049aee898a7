/* responses_response.h - the JSON of OpenAI's Responses API: the Response
 * object and the streaming events that build it.
 *
 *   Response  {"id": "resp_...", "object": "response", "created_at", "status",
 *              "error": null, "incomplete_details", <the request's fields, as
 *              oai_request.responses_echo gives them>, "model", "output": [items],
 *              "temperature", "top_p", "store": false, "background": false, "usage"}
 *   items     {"id": "rs_...", "type": "reasoning", "summary": [], "content":
 *              [{"type": "reasoning_text", "text"}], "status"}
 *             {"id": "msg_...", "type": "message", "status", "role": "assistant",
 *              "content": [{"type": "output_text", "text", "annotations": [],
 *              "logprobs": [...]}]}
 *             {"id": "fc_...", "type": "function_call", "status", "call_id", "name",
 *              "arguments"}
 *   events    {"type", "sequence_number", ...}: response.created / in_progress /
 *              completed / incomplete {"response"}; response.output_item.added /
 *              done {"output_index", "item"}; response.content_part.added / done
 *              {"item_id", "output_index", "content_index", "part"};
 *              response.output_text.delta / response.reasoning_text.delta
 *              {"item_id", "output_index", "content_index", "delta"(, "logprobs")};
 *              ... .done {..., "text"}; response.function_call_arguments.delta
 *              {"item_id", "output_index", "delta"}; ... .done {..., "name",
 *              "arguments"}
 *
 * Every function returns a malloc'd NUL-terminated string (the caller frees
 * it) or NULL when out of memory. */
#ifndef ENC_SERVER_RESPONSES_RESPONSE_H
#define ENC_SERVER_RESPONSES_RESPONSE_H

#include <stdint.h>

#include "openai_response.h"

/* What every object of one Response shares. */
typedef struct resp_head {
    const char *id; /* "resp_..." */
    int64_t created_at;
    const char *model;
    const char *echo; /* oai_request.responses_echo */
    double temperature, top_p;
} resp_head;

typedef enum resp_item_kind { RESP_REASONING, RESP_MESSAGE, RESP_CALL } resp_item_kind;

/* One output item, as far as it has come. */
typedef struct resp_item {
    resp_item_kind kind;
    const char *id;         /* "rs_...", "msg_...", "fc_..." */
    const char *status;     /* "in_progress", "completed", "incomplete" */
    const char *text;       /* reasoning and message: the text (NULL: no part yet); call: the
                             * arguments so far */
    const char *call_id;    /* call: "call_..." */
    const char *name;       /* call: the function */
    const oai_logprobs *lp; /* message: the output_text's logprobs, NULL: [] */
} resp_item;

/* The Response as far as it has come. */
typedef struct resp_state {
    const char *status;            /* "in_progress", "completed", "incomplete" */
    const char *incomplete_reason; /* "max_output_tokens", or NULL */
    const resp_item *items;        /* [n_items]: "output" */
    size_t n_items;
    const oai_usage *usage; /* NULL: "usage": null */
} resp_state;

/* A streaming event: "type" and "sequence_number", then the members given
 * (-1 and NULL leave a member out). */
typedef struct resp_event {
    const char *type;
    int64_t sequence_number;
    const resp_state *response; /* "response" */
    int output_index;
    const resp_item *item; /* "item" (output_item.*), or the item whose "item_id" it is */
    int content_index;
    int part; /* content_part.*: "part", the item's text part */
    const char *delta;
    const char *text;       /* "text" (output_text.done, reasoning_text.done) */
    int arguments;          /* function_call_arguments.done: "name" and "arguments" */
    const oai_logprobs *lp; /* output_text.*: "logprobs" (NULL: []) */
} resp_event;

/* The Response object (stream: false, and inside the lifecycle events). */
char *resp_response_body(const resp_head *h, const resp_state *s);
/* One event's JSON (the SSE frame's data). */
char *resp_event_json(const resp_head *h, const resp_event *e);

/* The stream's error event, {"type": "error", "sequence_number", "code",
 * "message", "param"} (a failure after the stream began). */
char *resp_error_event(int64_t sequence_number, const oai_error *err);

#endif
