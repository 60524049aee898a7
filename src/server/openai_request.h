/* openai_request.h - an OpenAI request body (JSON) read into a struct and
 * validated, with the error that goes back when it is wrong.
 *
 * The server tokenizes and submits what this parses; this file only reads
 * JSON and checks fields one by one: types, ranges, the parameters that
 * depend on each other. Everything it returns is owned by the request and
 * freed with oai_request_free. It calls nothing of the engine, so the fuzz
 * target (tests/fuzz_openai_request.c) runs it alone. */
#ifndef ENC_SERVER_OPENAI_REQUEST_H
#define ENC_SERVER_OPENAI_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "encore.h"
#include "openai_structured.h"

enum {
    OAI_MAX_N = 16,                 /* choices per prompt */
    OAI_COMPLETION_MAX_TOKENS = 16, /* completions' max_tokens when absent (OpenAI's, vLLM's) */
    OAI_MAX_PROMPTS = 256,          /* prompts in one completions request (a batch); each gets n
                                     * choices, all of which count in --max-queue */
    OAI_MAX_INPUTS = 2048,          /* inputs in one embeddings request (OpenAI's limit); each
                                     * counts in --max-queue */
    OAI_MAX_STOP = 16,              /* stop strings */
    OAI_MAX_STOP_BYTES = 1024,      /* bytes of one stop string (and of one bad word) */
    OAI_MAX_BAD_WORDS = 256,        /* bad_words entries */
    OAI_MAX_STOP_IDS = 16,          /* stop_token_ids (the engine's limit) */
    OAI_MAX_TOP_LOGPROBS = 20,
    OAI_MAX_LOGIT_BIAS = ENCORE_MAX_LOGIT_BIAS, /* logit_bias entries */
    OAI_MAX_ALLOWED_IDS = 1 << 20,              /* allowed_token_ids entries */
    OAI_MAX_MESSAGES = 4096,
    OAI_PROMPT_LABEL_MAX = 48, /* bytes of oai_prompt_label's buffer */
    OAI_IGNORED_NAMES = 4,     /* unknown fields named in oai_request.ignored */
    OAI_IGNORED_MAX = 192,     /* bytes of oai_request.ignored */
    /* n x max_tokens x top_logprobs: the log-probability alternatives one
     * request may ask for (8 bytes each: 8 MiB) */
    OAI_MAX_LOGPROB_ALTERNATIVES = 1 << 20,
};

typedef enum oai_kind {
    OAI_COMPLETION, /* POST /v1/completions */
    OAI_CHAT,       /* POST /v1/chat/completions */
    OAI_TOKENIZE,   /* POST /tokenize: prompt or messages */
    OAI_DETOKENIZE, /* POST /detokenize: tokens */
    OAI_EMBEDDING,  /* POST /v1/embeddings: input */
} oai_kind;

/* What goes back when a request is refused: the HTTP status and OpenAI's
 * {"error": {"message", "type", "param", "code"}}. */
typedef struct oai_error {
    int http_status;   /* 400, 401, 404, 413, 500, 503, ... */
    const char *type;  /* "invalid_request_error", "server_error", ... */
    char param[64];    /* the offending field, "" when none */
    char message[512];
} oai_error;

/* Fill `err` (printf-style message); returns 0 so that parsers can
 * `return oai_error_set(...)`. */
int oai_error_set(oai_error *err, int http_status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One prompt: text or token ids. The parser fills exactly one of text and
 * ids; the server may fill in the other (the text of ids, to echo it). */
typedef struct oai_prompt {
    char *text;   /* NUL-terminated, or NULL */
    int32_t *ids; /* [n_ids], or NULL */
    size_t n_ids;
} oai_prompt;

/* tool_choice: whether and which tools the reply may call (tool_request.c). */
typedef enum oai_tool_choice {
    OAI_TOOL_NONE,     /* "none", or no tools: the reply is text (tools still shown) */
    OAI_TOOL_AUTO,     /* "auto" (the default with tools): calls parsed when it makes them */
    OAI_TOOL_REQUIRED, /* "required": one or more calls */
    OAI_TOOL_NAMED,    /* {"type": "function", "function": {"name"}}: that one */
} oai_tool_choice;

typedef struct oai_request {
    oai_kind kind;
    char *model;                   /* NULL when absent */
    /* the prompts: completions' "prompt", one or a batch (choice j of prompt
     * p is choice p * n + j of the reply); tokenize's one; detokenize's
     * "tokens", one prompt of ids; embeddings' "input", one or a batch. None
     * for chat. */
    oai_prompt *prompts; /* [n_prompts] */
    size_t n_prompts;
    /* chat (and tokenize with messages): strings owned by the request */
    encore_chat_message *messages; /* [n_messages] */
    size_t n_messages;
    int enable_thinking;           /* chat_template_kwargs.enable_thinking, default 1 */
    int include_reasoning;         /* chat: vLLM's include_reasoning, default 1; 0 leaves
                                    * reasoning_content out of the reply */
    int return_token_strs;         /* /tokenize: also each token's vocabulary string (vLLM's) */
    /* embeddings */
    int base64;                    /* encoding_format "base64": each vector's little-endian
                                    * float32 bytes in base64 (default "float": numbers) */
    int64_t dimensions;            /* keep this many leading dimensions (Matryoshka), 0: all */
    int normalize;                 /* vLLM's normalize, default 1: unit length (after the cut) */
    int add_special_tokens;        /* vLLM's, default 1 (completions, /tokenize's prompt,
                                    * embeddings): the tokenizer's special tokens around a
                                    * text prompt (none for Qwen3's tokenizer,
                                    * Qwen3-Embedding's <|endoftext|>); chat's never */
    int add_generation_prompt;     /* vLLM's: end with the assistant header, default 1 */
    int continue_final_message;    /* vLLM's: continue the last message, default 0 */
    /* tools (tool_request.c): what the template shows and the reply may call */
    char *tools_json;              /* "tools" printed compactly, NULL when none (or []) */
    char **tool_names;             /* [n_tools] function names, in order */
    size_t n_tools;
    oai_tool_choice tool_choice;
    char *tool_choice_name;        /* OAI_TOOL_NAMED: the function, else NULL */
    int parallel_tool_calls;       /* default 1; 0: a reply shows its first call only (vLLM's) */
    /* output */
    int stream;
    int include_usage;             /* stream_options.include_usage */
    int continuous_usage;          /* and stream_options.continuous_usage_stats (vLLM's): every
                                    * chunk carries its choice's usage so far */
    int n;                         /* choices per prompt, 1..OAI_MAX_N */
    int best_of;                   /* completions: candidates generated per prompt, n..OAI_MAX_N
                                    * (n when not given; chat: n); above n, the reply shows the
                                    * n with the highest cumulative logprob */
    int echo;                      /* completions: the prompt before the text */
    int logprobs;                  /* completions: logprobs given; chat: logprobs true */
    int top_logprobs;              /* alternatives per token, 0..20 */
    int prompt_logprobs;           /* vLLM's prompt_logprobs: each prompt token's logprob,
                                    * rank and this many alternatives (0..20); -1: not asked */
    int tokens_as_ids;             /* return_tokens_as_token_ids (vLLM's): logprobs name each
                                    * token "token_id:<id>" */
    int64_t max_tokens;            /* 0: not given (the rest of max_model_len), or prompt_only */
    int64_t max_tokens_absent;     /* not given: at most this many (completions: 16, the default
                                    * of OpenAI and vLLM; an explicit null has none) */
    int prompt_only;               /* completions: echo with max_tokens 0 given: the prompt is
                                    * the reply, nothing generated */
    int64_t truncate_prompt_tokens; /* vLLM's: 0 none; k >= 1 keeps each prompt's last k
                                     * tokens; -1 as many as max_model_len leaves */
    int seed_given;
    /* the engine's parameters; sampling.stop, stop_token_ids, logit_bias and
     * allowed_token_ids point into stop/stop_ids/logit_bias/allowed_ids below. max_tokens is filled
     * in by the server. */
    encore_sampling sampling;
    char **stop;                   /* [n_stop] */
    char **bad_words;              /* [sampling.n_bad_words] */
    int32_t *stop_ids;
    encore_logit_bias *logit_bias; /* [sampling.n_logit_bias]: sampling.logit_bias */
    int32_t *allowed_ids;          /* [sampling.n_allowed_token_ids]: vLLM's allowed_token_ids */
    oai_structured structured;     /* response_format, structured_outputs, guided_* */
    /* completions and chat: the top-level fields nothing reads (null ones
     * aside), for the server's warning, as vLLM logs them: "'a', 'b' and 3
     * more" (at most OAI_IGNORED_NAMES named, each cut to 32 bytes, a byte
     * outside printable ASCII written '?'); "" when none */
    char ignored[OAI_IGNORED_MAX];
    /* POST /v1/responses (responses_request.c): a chat request answered as a
     * Response; responses_echo, the request's fields a Response repeats (JSON
     * members: "\"instructions\":null,\"tools\":[],..."), malloc'd */
    int responses;
    char *responses_echo;
} oai_request;

/* What a server gives the requests that omit a sampling field: the model's
 * recommendation (encore_sampling_model_defaults), the fields whose
 * ENCORE_SAMPLING_* bit is in `set`. */
typedef struct oai_defaults {
    encore_sampling sampling;
    unsigned set;
} oai_defaults;

/* Parse `body` (len bytes, need not be NUL-terminated) as a request of
 * `kind`, a field it omits taken from `defaults` (NULL: none) or else
 * OpenAI's (vLLM's) default. Returns 1 with *out filled, or 0 with `err`
 * filled (HTTP 400 with the field in err->param) and *out empty. Unknown
 * fields are accepted, as OpenAI's clients send more than any one server
 * reads, and named in out->ignored. */
int oai_request_parse(const char *body, size_t len, oai_kind kind, const oai_defaults *defaults,
                      oai_request *out, oai_error *err);
void oai_request_free(oai_request *r); /* frees the contents; NULL is a no-op */

/* For other request formats read as these (responses_request.c): */
/* body[0..len) as a JSON object (UTF-8, no U+0000 in a string, no key given
 * twice in one object), or NULL with err filled (a 400). */
cJSON *oai_request_json(const char *body, size_t len, oai_error *err);
/* *out (OAI_CHAT) from `chat`, a chat request object built from body[0..len)
 * (whose top-level "seed" is read exactly), as oai_request_parse; it leaves
 * out->ignored empty. */
int oai_request_parse_chat(const cJSON *chat, const char *body, size_t len,
                           const oai_defaults *defaults, oai_request *out, oai_error *err);
/* out->ignored: the top-level fields of obj not named in `known` (" a b ")
 * and not null. */
void oai_request_ignored(const cJSON *obj, const char *known, oai_request *r);

/* How messages name prompt i of r: "'prompt'" when it is the only one,
 * "'prompt' item i" in a batch; written into buf[cap] (OAI_PROMPT_LABEL_MAX
 * bytes hold either), which it returns. */
const char *oai_prompt_label(const oai_request *r, size_t i, char *buf, size_t cap);

#endif
