/* openai_response.h - the JSON the server sends: OpenAI's completion, chat
 * completion and streaming chunk objects, usage, logprobs, the model list, the
 * model and the error object (with a chat reply's "tool_calls"). Every
 * function returns a malloc'd NUL-terminated string (the caller frees it
 * with free) or NULL when out of memory. */
#ifndef ENC_SERVER_OPENAI_RESPONSE_H
#define ENC_SERVER_OPENAI_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

#include "encore.h"
#include "openai_request.h"

/* What every object of one response shares. */
typedef struct oai_head {
    oai_kind kind;     /* OAI_COMPLETION or OAI_CHAT */
    const char *id;    /* "cmpl-..." or "chatcmpl-..." */
    int64_t created;   /* Unix seconds */
    const char *model;
    int usage_null;    /* chunks: "usage": null (stream_options.include_usage, as OpenAI's
                        * chunks before the last one that carries the usage) */
} oai_head;

typedef struct oai_usage {
    int64_t prompt_tokens, completion_tokens, cached_tokens;
    int64_t reasoning_tokens; /* of completion_tokens: a Response's output_tokens_details */
} oai_usage;

/* The text of a token id, raw bytes (which need not be whole UTF-8
 * characters); returns the length written into buf[cap]. */
typedef size_t (*oai_token_text_fn)(void *user, int32_t id, char *buf, size_t cap);

/* The log-probabilities of n tokens. */
typedef struct oai_logprobs {
    const int32_t *ids;        /* [n] */
    const float *logprobs;     /* [n] */
    const encore_logprob *top; /* [n * n_top] */
    size_t n;
    int n_top;
    size_t text_offset;        /* completions: where the first token's text starts, in
                                * characters (code points) of the choice's text */
    int as_ids;                /* return_tokens_as_token_ids: tokens (completions: "tokens"
                                * and the keys of "top_logprobs"; chat: "token", and an
                                * alternative's "bytes" too, as vLLM writes them) are
                                * "token_id:<id>"; text_offset still counts the text */
    oai_token_text_fn token_text;
    void *user;
} oai_logprobs;

/* vLLM's prompt_logprobs of one prompt: each token's log-probability given
 * those before it, its rank and n_top alternatives (the first token's
 * entry is null). */
typedef struct oai_prompt_logprobs {
    const int32_t *ids;        /* [n] */
    const float *logprobs;     /* [n] */
    const int32_t *ranks;      /* [n] */
    const encore_logprob *top; /* [n * n_top], most likely first */
    size_t n;
    int n_top;
    oai_token_text_fn token_text;
    void *user;
} oai_prompt_logprobs;

/* A function call of a chat reply (tool_calls.h parsed it). */
typedef struct oai_tool_call {
    int index;             /* chunks: its place among the choice's calls */
    const char *id;        /* "call_..."; in a chunk, NULL for one that continues a call */
    const char *name;      /* NULL likewise */
    const char *arguments; /* JSON text (a chunk: the next piece of it) */
} oai_tool_call;

typedef struct oai_choice {
    const char *text;          /* completions: the text; chat: the content (NUL-terminated) */
    const char *reasoning;     /* chat: reasoning_content, NULL when none */
    const char *finish_reason; /* NULL in a chunk that does not finish */
    const char *stop_reason;   /* the stop string that matched, else NULL */
    const int32_t *stop_token_id; /* with no stop string: the stop id that ended it (then
                                   * the stop_reason, as a number), else NULL */
    const oai_logprobs *lp;    /* NULL: "logprobs": null */
    int role;                  /* chat chunks: nonzero adds "role": "assistant" */
    const oai_tool_call *tool_calls; /* chat: [n_tool_calls] ("tool_calls" when n > 0); a
                                      * message: every call, a chunk: its delta */
    size_t n_tool_calls;
    const oai_usage *usage; /* chunks: the choice's usage so far, in place of "usage": null
                             * (stream_options.continuous_usage_stats); NULL: none */
    int has_prompt_lp;      /* a whole reply: "prompt_logprobs" (completions: the choice's;
                             * chat: the response's, from its first choice) */
    const oai_prompt_logprobs *prompt_lp; /* its value; NULL: null */
} oai_choice;

/* The characters (code points) of lp's tokens as "tokens" shows them (bytes
 * that are no whole character count one U+FFFD each): the next text_offset. */
size_t oai_logprobs_chars(const oai_logprobs *lp);

/* lp's tokens as chat's logprobs.content writes them, [{"token", "logprob",
 * "bytes", "top_logprobs"}, ...], into w (a Responses output_text's
 * "logprobs" too). */
struct json_out;
void oai_logprob_entries(struct json_out *w, const oai_logprobs *lp);

/* A whole response: choices[0..n) and usage. */
char *oai_response_body(const oai_head *h, const oai_choice *choices, int n, const oai_usage *u);
/* One streaming chunk of one choice ("text_completion" or "chat.completion.chunk"). */
char *oai_response_chunk(const oai_head *h, int index, const oai_choice *c);
/* Call k of choice `index` streamed: part 0, the chunk with its index, id,
 * type and name (arguments ""); part 1, the chunk with its arguments; u as
 * oai_choice.usage. */
char *oai_response_tool_call_chunk(const oai_head *h, int index, const oai_tool_call *call,
                                   int part, const oai_usage *u);
/* The last chunk of a stream with stream_options.include_usage: no choices, usage. */
char *oai_response_usage_chunk(const oai_head *h, const oai_usage *u);
/* {"error": {"message", "type", "param", "code"}} */
char *oai_response_error(const oai_error *err);
/* GET /v1/models */
char *oai_response_models(const char *name, int64_t created, int64_t max_model_len);
/* GET /v1/models/{id}: the model object alone */
char *oai_response_model(const char *name, int64_t created, int64_t max_model_len);
/* GET /version: {"version": version}, as vLLM answers it. */
char *oai_response_version(const char *version);

/* Copy s[0..len) into out[cap] (NUL-terminated) with every byte that is not
 * part of well-formed UTF-8 replaced by U+FFFD; returns the length written. */
size_t oai_utf8_sanitize(const char *s, size_t len, char *out, size_t cap);

#endif
