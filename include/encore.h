/* encore.h - the public C API of encore, an LLM inference engine.
 *
 * Opaque handles and functions only; nothing here exposes the engine's
 * structures. Every function that can fail returns an encore_status and sets
 * a per-thread message read with encore_last_error().
 *
 *   encore_engine *e;
 *   encore_options opt = encore_options_default();
 *   opt.model_dir = "Qwen3-0.6B";
 *   if (encore_engine_create(&opt, &e) != ENCORE_OK) puts(encore_last_error());
 *   ...
 *   encore_engine_destroy(e);
 */
#ifndef ENCORE_H
#define ENCORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions of this header: the library's only exported symbols
 * (it is built with hidden visibility; everything else is internal). */
#if defined(__GNUC__) || defined(__clang__)
#define ENCORE_API __attribute__((visibility("default")))
#else
#define ENCORE_API
#endif

typedef struct encore_engine encore_engine;

typedef enum encore_status {
    ENCORE_OK = 0,
    ENCORE_ERR_INVALID_ARGUMENT,
    ENCORE_ERR_IO,
    ENCORE_ERR_FORMAT,
    ENCORE_ERR_UNSUPPORTED,
    ENCORE_ERR_OUT_OF_MEMORY,
    ENCORE_ERR_CAPTURE,
    ENCORE_ERR_INTERNAL,
} encore_status;

ENCORE_API const char *encore_status_to_string(encore_status s);
/* The release, "MAJOR.MINOR.PATCH" (the build's project version). */
ENCORE_API const char *encore_version(void);
/* This thread's last error message ("" when none). */
ENCORE_API const char *encore_last_error(void);

typedef struct encore_options {
    const char *model_dir;          /* Hugging Face checkpoint directory */
    int n_threads;                  /* 0: one per CPU */
    int block_size;                 /* KV block size, 16 or 32 (0: 16) */
    int64_t n_kv_blocks;            /* 0: sized automatically */
    int max_num_seqs;               /* 0: 64 */
    int64_t max_num_batched_tokens; /* 0: 2048 */
    int64_t max_model_len;          /* 0: min(max_position_embeddings, 8192) */
    int eager;                      /* nonzero: no decode capture */
    int64_t decode_steps;           /* decode steps per replay (0: default); sampled requests
                                     * too where the device samples (the CPU) */
    int no_prefix_caching;          /* nonzero: automatic prefix caching off */
    const char *kv_cache_dtype;     /* "auto" (NULL), "f32", "f16", "bf16" or "q8_0": the KV cache's
                                     * element type; auto is f16 for an f16 model, bf16
                                     * otherwise, where the backend runs it, else f32 */
    const char *device;             /* "cpu" (NULL), "vulkan" or "vulkan:N" (a build with
                                     * the Vulkan backend); an unknown name is an error */
    const char *quantize;           /* NULL: weights as stored; "q8_0", "q4_0", "q4_k",
                                     * "q5_k", "q6_k": every matrix (embedding and
                                     * lm_head included) quantized to that GGUF block
                                     * type at load; "q4_k_m", "q5_k_m": llama-quantize's
                                     * mixes; an unknown name is an error */
    const char *chat_template;      /* NULL: the model's own; else the path of a Jinja
                                     * chat template file to use instead (vLLM's
                                     * --chat-template), or a template name encore
                                     * renders without one: "qwen3", "qwen3-instruct",
                                     * "qwen3-thinking"; a file encore does not render or
                                     * an unknown name is an error */
    const char *runner;             /* "auto" (NULL), "generate" or "pooling" (vLLM's
                                     * --runner): pooling runs an embedding model, each
                                     * request giving the hidden state of its prompt's last
                                     * token (encore_output.embedding), nothing generated;
                                     * auto is pooling for a sentence-transformers
                                     * checkpoint (modules.json with a Pooling module, as
                                     * Qwen3-Embedding ships), else generate */
    /* (optional) called while the weights load, on the calling thread, with
     * the fraction loaded so far (non-decreasing, the last call 1) */
    void (*load_progress)(void *user, double fraction);
    void *load_progress_user;
    int bf16_activations; /* nonzero: matmuls over bf16 weights round their
                           * activations to bf16 and multiply in bf16
                           * (vdpbf16ps), as llama.cpp does; the CPU backend on a
                           * CPU with AVX512-BF16 only, else an error. 0: f32
                           * activations */
} encore_options;

ENCORE_API encore_options encore_options_default(void);
ENCORE_API encore_status encore_engine_create(const encore_options *opt, encore_engine **out);
ENCORE_API void encore_engine_destroy(encore_engine *e); /* NULL is a no-op */

/* How a request picks tokens and when it stops, with vLLM's meanings. Start
 * from encore_sampling_default(): greedy, 16 tokens, every filter off, no
 * seed. A zeroed struct works too: top_p and repetition_penalty read 0 as
 * "off" (and its seed is 0). */
#define ENCORE_SEED_RANDOM UINT64_MAX /* seed: none given; one is drawn at submission */
#define ENCORE_MAX_LOGIT_BIAS 300     /* entries of a request's logit_bias */
typedef struct encore_logit_bias {
    int32_t id; /* a token id of the vocabulary */
    float bias; /* [-100, 100], added to its logit */
} encore_logit_bias;
typedef struct encore_sampling {
    int64_t max_tokens; /* >= 1; 0 with prompt_logprobs: the prompt scored, nothing
                         * generated (finish_reason "length") */
    double temperature; /* 0: greedy */
    uint64_t seed;      /* the draws of a sampled request: the same seed, prompt and
                         * parameters give the same tokens, whatever runs beside it;
                         * ENCORE_SEED_RANDOM (the default): drawn once at submission */
    int ignore_eos;     /* nonzero: do not stop at end-of-sequence tokens */
    int64_t top_k;      /* <= 0: off */
    double top_p;       /* (0, 1]; 1 (or 0): off */
    double min_p;       /* 0: off */
    double repetition_penalty; /* > 0; 1 (or 0): off */
    double presence_penalty;   /* [-2, 2]; 0: off */
    double frequency_penalty;  /* [-2, 2]; 0: off */
    int64_t min_tokens;        /* [0, max_tokens]: no EOS / stop id / stop string before
                                * this many tokens (unless a structured output or
                                * allowed_token_ids allows only those ids: its end wins) */
    int logprobs;              /* nonzero: report each token's log-probability */
    int top_logprobs;          /* and this many alternatives (0..20) */
    int prompt_logprobs;       /* nonzero: also each prompt token's log-probability given
                                * the tokens before it (the first has none) and its rank,
                                * delivered with the first callback that has ids
                                * (max_tokens 0: the last) (encore_output.prompt_*); the
                                * request then skips the prefix cache */
    int prompt_top_logprobs;   /* with prompt_logprobs: this many alternatives per prompt
                                * token too (0..20) */
    const char *const *stop;   /* [n_stop] non-empty stop strings, matched on the output text
                                * across token boundaries; the match is not emitted (copied;
                                * needs the tokenizer) */
    size_t n_stop;
    int include_stop_str_in_output; /* nonzero: a matched stop string stays in the text,
                                     * and so does the text of an EOS or stop id that ended
                                     * the request (vLLM's); what follows is dropped either way */
    const int32_t *stop_token_ids; /* [n_stop_token_ids] more ids that end it, at most 16
                                    * (copied; kept with ignore_eos) */
    size_t n_stop_token_ids;
    int skip_special_tokens;   /* nonzero (default): special tokens give no text */
    const encore_logit_bias *logit_bias; /* [n_logit_bias] added to the raw logits in order
                                          * (a repeated id adds up), before the penalties, as
                                          * OpenAI's logit_bias; logprobs stay the raw
                                          * model's (copied) */
    size_t n_logit_bias;                 /* at most ENCORE_MAX_LOGIT_BIAS */
    const int32_t *allowed_token_ids;    /* [n_allowed_token_ids]: when n > 0 the only ids that
                                          * may be chosen (vLLM's allowed_token_ids), each in
                                          * the model's vocabulary, applied as a token mask (with
                                          * a structured-output constraint, both); an EOS not
                                          * among them never ends the request; logprobs stay
                                          * the raw model's (copied) */
    size_t n_allowed_token_ids;
    const char *const *bad_words; /* [n_bad_words] vLLM's bad_words: words never generated
                                   * (each as written and, where that is another token of as
                                   * many tokens, with a leading space; a word of several
                                   * tokens is masked at its last token only after the
                                   * others); applied as a token mask, so logprobs stay the
                                   * raw model's (copied; needs the tokenizer) */
    size_t n_bad_words;
} encore_sampling;

ENCORE_API encore_sampling encore_sampling_default(void);

/* The sampling parameters a model may recommend: its generation_config.json
 * (temperature, top_k, top_p, min_p, repetition_penalty, as vLLM reads them),
 * or a GGUF file's general.sampling.* keys (as llama.cpp reads them). */
enum {
    ENCORE_SAMPLING_TEMPERATURE = 1,
    ENCORE_SAMPLING_TOP_K = 2,
    ENCORE_SAMPLING_TOP_P = 4,
    ENCORE_SAMPLING_MIN_P = 8,
    ENCORE_SAMPLING_REPETITION_PENALTY = 16,
};
/* Set each field of *s that the model recommends a value for, except those
 * whose ENCORE_SAMPLING_* bit is in `given` (the caller's own); returns the
 * bits of the fields set (0: the model recommends none). */
ENCORE_API unsigned encore_sampling_model_defaults(encore_engine *e, encore_sampling *s,
                                                   unsigned given);

/* Generate from a prompt of token ids and wait until this request finishes:
 * an encore_submit whose callback collects the ids, then a wait on the
 * calling thread (so it may run next to served requests, from any thread
 * but the engine's: never from a callback). Writes up to `cap` generated ids
 * to `out` and their number to *n_out; *stopped is 1 when it finished with
 * "stop" (an end-of-sequence or stop token, or a stop string), else 0. */
ENCORE_API encore_status encore_generate_ids(encore_engine *e, const int32_t *prompt,
                                             size_t n_prompt, const encore_sampling *sampling,
                                             int32_t *out, size_t cap, size_t *n_out,
                                             int *stopped);

/* --- serving: requests answered by an engine thread --------------------------
 *
 * encore_submit may be called from any thread at any time; the first call
 * starts the engine's own thread, which runs steps while any request is
 * unfinished and sleeps otherwise. Each request's output arrives through its
 * callback, on the engine thread, after every step that gave it tokens, and
 * once more (finished != 0) at the end; the callback must return quickly and
 * may call encore_cancel, nothing else of this API. encore_engine_destroy
 * cancels what still runs (each gets its "abort" call) and joins the thread;
 * no other call may run on that engine then or after.
 *
 * Ids and text: `ids` holds every generated token, the EOS or stop id that
 * ended a request included; the text includes that token only with
 * include_stop_str_in_output (a token that ends a request "length" is text
 * like any other). When a stop
 * string matches, the ids end with the token that completed the match and
 * the text ends just before the match. Text is streamed through the
 * tokenizer (nothing without one); concatenated over all calls it is the
 * detokenized output minus the stop token and anything from a stop string on. */

typedef struct encore_logprob {
    int32_t id;
    float logprob;
} encore_logprob;

typedef struct encore_output {
    int64_t request_id;
    const int32_t *ids;         /* [n_ids] tokens new since the last call */
    size_t n_ids;
    const float *logprobs;      /* [n_ids] when requested, else NULL: log-probabilities of
                                 * the raw model distribution (before penalties, filters
                                 * and temperature) */
    const encore_logprob *top;  /* [n_ids * n_top] alternatives, most likely first */
    int n_top;
    /* With sampling.prompt_logprobs, in the first call with ids (max_tokens 0:
     * the last call) only (else NULL, 0):
     * the prompt's ids and their log-probabilities (prompt_logprobs[0] is
     * NAN: nothing comes before it), their ranks (vLLM's: the ids at
     * least as likely, itself included; 0 for the first) and alternatives
     * (n_prompt_top per token, most likely first; the first token's are id -1) */
    const int32_t *prompt_ids;
    const float *prompt_logprobs;
    const int32_t *prompt_ranks;
    const encore_logprob *prompt_top;
    int n_prompt_top;
    size_t n_prompt_logprobs;
    const char *text;           /* text new since the last call: whole UTF-8 characters;
                                 * text that may begin a stop string is held back */
    size_t text_len;
    int finished;
    const char *finish_reason;  /* once finished: "stop", "length", "abort" (cancelled, or the
                                 * engine destroyed) or "error" (the engine failed: a step,
                                 * adding the request, or its text; encore_last_error is not
                                 * set on this thread, the log says why) */
    const char *stop_string;    /* the stop string that matched, else NULL */
    int32_t stop_token_id;      /* the id of stop_token_ids that ended it, or an EOS id other
                                 * than the model's first (vLLM's stop_reason), else -1 */
    size_t n_prompt_tokens;
    size_t n_cached_prompt_tokens; /* served from the prefix cache */
    size_t n_output_tokens;        /* generated so far */
    /* A pooling engine's request, in its last call when it finished "length"
     * (else NULL, 0): the final norm's hidden state of the prompt's last
     * token, [hidden_size] floats, not normalised (encore_embedding_normalize) */
    const float *embedding;
    size_t n_embedding;
} encore_output;

/* Pointers in `out` are valid during the call only. */
typedef void (*encore_output_fn)(void *user, const encore_output *out);

typedef struct encore_request {
    const char *prompt;          /* text, tokenized with the model's tokenizer (special tokens
                                  * in it are recognised; none added: an embedding model's
                                  * input takes the ids of encore_tokenize_special); or NULL */
    const int32_t *prompt_ids;   /* token ids when prompt is NULL (copied) */
    size_t n_prompt_ids;
    encore_sampling sampling;
    /* Structured output: at most one of these (NULL / 0: none). The output
     * is then constrained token by token to the language they describe, and
     * ends (finish_reason "stop") only where a sentence of it is complete;
     * one that does not compile is refused at submission with
     * ENCORE_ERR_INVALID_ARGUMENT naming what is wrong (an unsupported
     * JSON-Schema keyword and its pointer, a regex construct, a grammar's
     * line:col). The supported subsets: docs/STRUCTURED_OUTPUTS.md. */
    const char *json_schema;     /* a JSON Schema (text) */
    const char *regex;           /* the whole output matches it */
    const char *grammar;         /* EBNF, start rule "root" */
    const char *const *choices;  /* [n_choices]: the output is one of them */
    size_t n_choices;
    int json_object;             /* nonzero: any JSON object */
    /* An enforced tool choice (the other kind of constraint): tool_calls is
     * OpenAI's "tools" array as JSON text, and the output is then
     * <tool_call> blocks in the format of the model's chat template
     * (encore_chat_tool_format): Qwen3's
     * <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>, or
     * Qwen3-Coder's <function=...> with one <parameter=...> per argument;
     * each call's arguments valid for its tool's "parameters" schema (JSON:
     * any object when it has none; XML: no parameters then, and the schemas
     * it refuses are in docs/STRUCTURED_OUTPUTS.md): one call of
     * tool_call_name when that is set, else one or more calls of any of the
     * tools, "\n" between them. */
    const char *tool_calls;
    const char *tool_call_name;
    /* Reasoning before a constraint (any of the above but grammar, which
     * holds from the first token): 1, a <think>\n...\n</think>\n\n block
     * may come first (its text never holding "</think>"), as a thinking
     * model writes it before its answer; 2, the prompt has opened that
     * block (encore_chat_opens_reasoning: Thinking-2507), so the output is
     * the reasoning and its "\n</think>\n\n", then the constrained text.
     * Only under a template with think blocks (Qwen3's, Thinking-2507's;
     * not Instruct-2507's nor Qwen3-Coder's, where it is ignored). 0
     * (default): the constraint holds from the first token. */
    int think_first;
} encore_request;

/* Queue a request; fn must not be NULL. Bad parameters, a prompt too long
 * for max_model_len - max_tokens, or a text prompt without a tokenizer are
 * refused at once with ENCORE_ERR_INVALID_ARGUMENT and a message (read on the
 * submitting thread); the callback is then never called. *request_id (may
 * be NULL) is set before the first callback can run; ids start at 1. */
ENCORE_API encore_status encore_submit(encore_engine *e, const encore_request *r,
                                       encore_output_fn fn, void *user, int64_t *request_id);
/* Abort a request: within one engine step its blocks are free and its
 * callback gets its last call (finish_reason "abort"). Unknown or finished
 * ids are ignored. */
ENCORE_API encore_status encore_cancel(encore_engine *e, int64_t request_id);

/* A snapshot the engine thread makes after each step (any thread may read
 * it): the counts are at most one step old. n_waiting includes submitted
 * requests the engine thread has not taken yet. */
typedef struct encore_stats {
    int64_t n_running, n_waiting;        /* requests now */
    int64_t kv_blocks_total, kv_blocks_used;
    int64_t prefix_queries_tokens, prefix_hit_tokens; /* prompt tokens looked up / served */
    int64_t prompt_tokens, output_tokens; /* processed since creation (prompt tokens
                                           * recomputed after preemption count again) */
    int64_t n_finished;                   /* requests */
    int64_t n_steps, n_eager_steps, n_captures, n_replays, n_multi_round_trips;
    int64_t n_step_failures;              /* steps that failed (each ended its requests
                                           * with "error") */
    int64_t n_step_failures_in_a_row;     /* failed steps since the last one that worked */
} encore_stats;

ENCORE_API encore_status encore_get_stats(encore_engine *e, encore_stats *out);

typedef struct encore_model_info {
    const char *name;       /* the model directory's last component */
    int64_t max_model_len;
    int64_t vocab_size;
    int has_tokenizer;      /* tokenizer.json found: text prompts work */
    int has_chat_template;  /* a chat template encore renders */
    int pooling;            /* runs as an embedding model (encore_options.runner) */
    int64_t hidden_size;    /* the width of its embeddings */
} encore_model_info;

ENCORE_API encore_status encore_get_model_info(encore_engine *e, encore_model_info *out);

/* Scale v[0..n) to unit Euclidean length (an embedding as vLLM and
 * sentence-transformers return it); a zero vector stays zero. */
ENCORE_API void encore_embedding_normalize(float *v, size_t n);

/* The engine as created, every default of encore_options resolved (what
 * `encore serve` prints at start). */
typedef struct encore_engine_info {
    const char *device;         /* the backend: "cpu" or "vulkan" */
    const char *device_description; /* "cpu (avx2 kernels, 2 threads)", "vulkan: DEVICE NAME" */
    int n_threads;              /* host compute threads */
    int block_size;             /* tokens per KV block */
    int64_t n_kv_blocks;        /* the KV cache's blocks */
    const char *kv_cache_dtype; /* "F32", "F16", "BF16" or "Q8_0" */
    int64_t kv_bytes_per_token; /* over all layers, K and V */
    int max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t max_model_len;
    int eager;            /* nonzero: no decode capture */
    int64_t decode_steps; /* decode steps per replay */
    int prefix_caching;   /* nonzero: automatic prefix caching on */
    int bf16_activations; /* nonzero: bf16 weights multiplied by bf16 activations */
} encore_engine_info;

ENCORE_API encore_status encore_get_engine_info(encore_engine *e, encore_engine_info *out);

/* --- text ------------------------------------------------------------------- */

/* A function call an assistant message made (OpenAI's tool_calls[i]). */
typedef struct encore_chat_tool_call {
    const char *id;        /* "call_..."; may be NULL (the Qwen3 template does not show it) */
    const char *name;      /* function.name */
    const char *arguments; /* function.arguments: the JSON text of an object, OpenAI's string
                            * form; the template shows it re-printed as Jinja's tojson does */
} encore_chat_tool_call;

typedef struct encore_chat_message {
    const char *role;    /* "system", "user", "assistant" or "tool" */
    const char *content; /* UTF-8 */
    const char *reasoning_content; /* assistant: NULL when absent */
    /* Optional, zero when unused: */
    const encore_chat_tool_call *tool_calls; /* assistant: [n_tool_calls] */
    size_t n_tool_calls;
    const char *tool_call_id; /* tool: the call this answers (NULL when absent; the Qwen3
                               * template does not show it) */
} encore_chat_message;

/* How a conversation becomes a prompt, beyond its messages. Zeroed: thinking
 * off, no tools (start from encore_chat_options_default() for thinking on). */
typedef struct encore_chat_options {
    int enable_thinking;    /* 0 adds the empty think block */
    int plain_content;      /* encore_chat_tokenize_opts: see encore_chat_tokenize */
    const char *tools_json; /* the tools the model may call: a JSON array of OpenAI tool
                             * definitions ({"type": "function", "function": {"name",
                             * "description", "parameters"}}), shown by the template's
                             * tools branch; NULL or "[]": none */
    int no_generation_prompt;   /* nonzero: end after the last message, without the
                                 * assistant header (vLLM's add_generation_prompt false) */
    int continue_final_message; /* nonzero (with no_generation_prompt): end inside the last
                                 * message, after its content, for the model to continue
                                 * it (an assistant's reply begun by the caller), as
                                 * transformers cuts the rendered text */
} encore_chat_options;

ENCORE_API encore_chat_options encore_chat_options_default(void); /* thinking on, no tools */

/* Text functions work on any thread, also while requests run. Without a
 * tokenizer they fail with ENCORE_ERR_INVALID_ARGUMENT.
 *
 * The model's chat template applied to msgs[0..n), ending with the assistant
 * header; enable_thinking 0 adds the empty think block. *out is the
 * caller's to free with encore_free. A template encore cannot render is
 * ENCORE_ERR_UNSUPPORTED (see has_chat_template). */
ENCORE_API encore_status encore_chat_prompt(encore_engine *e, const encore_chat_message *msgs,
                                            size_t n, int enable_thinking, char **out);
/* The ids of that prompt. With plain_content 0 they are encore_tokenize's
 * of encore_chat_prompt's text, where special-token text in a message
 * ("<|im_start|>", "<think>") is the special token, as Hugging Face and vLLM
 * tokenize it. With plain_content 1 the caller's text (the messages' content
 * and reasoning, tool calls' names and arguments, and the tool definitions
 * of encore_chat_tokenize_opts) is tokenized with special-token matching
 * off: what a user typed stays those characters; the template's tokens are
 * unchanged. *ids is the caller's to free with encore_free. */
ENCORE_API encore_status encore_chat_tokenize(encore_engine *e, const encore_chat_message *msgs,
                                              size_t n, int enable_thinking, int plain_content,
                                              int32_t **ids, size_t *n_ids);
/* The same two with tools (and tool calls and results in the messages):
 * encore_chat_prompt_opts is encore_chat_prompt, encore_chat_tokenize_opts
 * is encore_chat_tokenize, with the options' fields for their arguments. A
 * tool call whose arguments are not the JSON text of an object, or
 * tools_json that is not a JSON array, is ENCORE_ERR_INVALID_ARGUMENT naming
 * the message and the call. */
ENCORE_API encore_status encore_chat_prompt_opts(encore_engine *e, const encore_chat_message *msgs,
                                                 size_t n, const encore_chat_options *opt,
                                                 char **out);
ENCORE_API encore_status encore_chat_tokenize_opts(encore_engine *e,
                                                   const encore_chat_message *msgs, size_t n,
                                                   const encore_chat_options *opt, int32_t **ids,
                                                   size_t *n_ids);
/* 1 when the prompt these options render ends inside an open <think> block,
 * so that the reply begins with the model's reasoning and its "</think>"
 * ends it (the generation prompt of Qwen3's Thinking-2507 template), else 0. */
ENCORE_API int encore_chat_opens_reasoning(encore_engine *e, const encore_chat_options *opt);
/* How the model's chat template writes tool calls, so that a reply's calls
 * can be read back: */
typedef enum encore_tool_format {
    /* <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call> (Qwen3, 2507) */
    ENCORE_TOOL_FORMAT_HERMES = 0,
    /* <tool_call>\n<function=f>\n<parameter=k>\nvalue\n</parameter>\n</function>\n
     * </tool_call>, each value its text (Qwen3-Coder) */
    ENCORE_TOOL_FORMAT_XML = 1,
} encore_tool_format;
/* The format of e's template (hermes when it has none or one encore does not know). */
ENCORE_API encore_tool_format encore_chat_tool_format(encore_engine *e);
/* *ids (never NULL on success) and *text are the caller's to free with encore_free. */
ENCORE_API encore_status encore_tokenize(encore_engine *e, const char *text, size_t len,
                                         int32_t **ids, size_t *n_ids);
/* encore_tokenize, and with add_special_tokens nonzero the special tokens
 * the tokenizer's post-processor puts around a sequence (Hugging Face's
 * add_special_tokens, which vLLM applies to completions and embeddings
 * prompts): none for Qwen3's tokenizer, an <|endoftext|> after the text for
 * Qwen3-Embedding's. */
ENCORE_API encore_status encore_tokenize_special(encore_engine *e, const char *text, size_t len,
                                                 int add_special_tokens, int32_t **ids,
                                                 size_t *n_ids);
/* detokenize: ids in [0, the model's vocabulary); the padding rows past the
 * tokenizer's vocabulary decode to nothing, as in Hugging Face's decode. */
ENCORE_API encore_status encore_detokenize(encore_engine *e, const int32_t *ids, size_t n_ids,
                                           int skip_special_tokens, char **text, size_t *len);
/* Token id's string in the vocabulary as tokenizer.json writes it ("Ġworld",
 * "<|im_end|>": transformers' convert_ids_to_tokens), owned by e; NULL for an
 * id with no token, or a model without a tokenizer. */
ENCORE_API const char *encore_token_string(encore_engine *e, int32_t id);
ENCORE_API void encore_free(void *p);

/* --- logging ------------------------------------------------------------------ */

/* One warning line on stderr, "encore: warn: " and the message, as the
 * library writes its own (ENCORE_LOG=error silences them); any thread. */
ENCORE_API void encore_log_warning(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
