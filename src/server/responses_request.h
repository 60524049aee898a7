/* responses_request.h - a body of OpenAI's Responses API (POST
 * /v1/responses) read as the chat request it asks for.
 *
 * "input" (a string, or items: messages, function calls and their
 * outputs, reasoning) and "instructions" become the chat messages; the flat
 * function tools, "tool_choice", "text.format" and "max_output_tokens"
 * become their chat spellings; the sampling fields are the chat request's.
 * The chat parser (openai_request.c) then checks and reads the whole, so a
 * Responses request means exactly what the same chat request means. Errors
 * name the Responses fields. Calls nothing of the engine. */
#ifndef ENC_SERVER_RESPONSES_REQUEST_H
#define ENC_SERVER_RESPONSES_REQUEST_H

#include <stddef.h>

#include "openai_request.h"

/* Parse `body` (len bytes) as a Responses request: *out is an OAI_CHAT
 * request with out->responses set and out->responses_echo the request
 * fields a Response repeats. Returns 1, or 0 with err filled (a 400 naming
 * the field) and *out empty. */
int oai_responses_parse(const char *body, size_t len, const oai_defaults *defaults,
                        oai_request *out, oai_error *err);

/* err, from a chat request that a Responses request became (refused after
 * parsing: its length, a template failure, ...), naming the Responses
 * fields: "messages" -> "input", "max_tokens" -> "max_output_tokens",
 * "response_format" -> "text.format", a tool's "function." left out. */
void oai_responses_error_names(oai_error *err);

#endif
