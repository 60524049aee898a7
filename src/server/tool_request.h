/* tool_request.h - the tool-calling fields of a chat request: "tools",
 * "tool_choice", an assistant message's "tool_calls" and a tool message's
 * "tool_call_id", read into the oai_request and checked with a message
 * naming the field (openai_request.c calls these; nothing of the engine). */
#ifndef ENC_SERVER_TOOL_REQUEST_H
#define ENC_SERVER_TOOL_REQUEST_H

#include <cjson/cJSON.h>

#include "openai_request.h"

enum {
    TOOL_MAX_TOOLS = 128, /* OpenAI's limit */
    TOOL_MAX_NAME = 64,   /* a function name: [A-Za-z0-9_-]{1,64}, as OpenAI's */
    TOOL_MAX_CALLS = 128, /* tool_calls of one message */
};

/* "tools", "tool_choice" and "parallel_tool_calls" of the request object
 * into r. Returns 1, or 0 with err filled (400, the field in err->param). */
int tool_request_parse(const cJSON *obj, oai_request *r, oai_error *err);

/* After tool_request_parse: r->tools_json becomes the body's own text of
 * "tools" (body[0..len), which cJSON read), so that the template prints its
 * numbers as the client spelled them (1.0 stays 1.0; cJSON would print 1).
 * Returns 0 only when out of memory. */
int tool_request_keep_text(const char *body, size_t len, oai_request *r, oai_error *err);

/* Message i's "tool_calls" (assistant) and "tool_call_id" (tool) into out. */
int tool_request_message(const cJSON *m, int i, encore_chat_message *out, oai_error *err);

/* 1 unless r both enforces a tool choice ("required" or a named
 * function) and asks for structured output: one constraint per request,
 * else 0 with err filled (400 naming the structured field). */
int tool_request_compatible(const oai_request *r, oai_error *err);

/* "required" or a named function as out's constraint: the tools and the
 * name (pointers into r, which outlives the submission) and whether a think
 * block may come first, or (in_think: the prompt opened it) must be closed
 * first. Other choices leave out as it is. */
void tool_request_constrain(const oai_request *r, int in_think, encore_request *out);

/* The chat template's options for r: its thinking switch and tools (shown
 * with every tool_choice, "none" included, as vLLM does). */
encore_chat_options tool_request_chat_options(const oai_request *r, int plain_content);

/* Frees what the two above added to r (its messages included). */
void tool_request_free(oai_request *r);

#endif
