/* engine.h - the engine: requests in, tokens out, one scheduler step at a
 * time over a paged KV cache.
 *
 * A request is a prompt (token ids) and its sampling parameters. The engine
 * runs many at once: each step the scheduler picks every running sequence's
 * next token (decode) and fills the rest of the token budget with prompt
 * chunks of waiting sequences (prefill), in arrival order; a finished
 * sequence frees its blocks at once. When the pool cannot hold a new prompt,
 * the request waits; when a running sequence cannot grow, the newest running
 * sequence is preempted and later recomputed, so nothing is ever truncated.
 *
 * Automatic prefix caching (on unless no_prefix_caching): full KV blocks are
 * kept under a hash of their tokens and shared; a sequence that starts with
 * cached blocks reads them instead of computing them. Its tokens and logits
 * are bit-identical either way (the kernels are batch-invariant).
 *
 * Decode steps are captured: recorded once per padded batch size and then
 * replayed with rewritten inputs (decode_slots.c); prefill and mixed steps
 * run eagerly. Both give bit-identical results.
 *
 * The engine is single-threaded: one caller drives engine_step. */
#ifndef ENC_ENGINE_ENGINE_H
#define ENC_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "graph/sample_row.h"
#include "model/config.h"

typedef struct engine engine;

enum {
    ENGINE_MAX_STOP_IDS = 16,
    ENGINE_MAX_TOP_LOGPROBS = 20,
    ENGINE_MAX_LOGIT_BIAS = GRAPH_SAMPLE_MAX_BIAS
};

enum { ENGINE_MAX_DECODE_STEPS = 64 }; /* the most decode steps one replay may run */
enum { ENGINE_DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048 }; /* the token budget of a step when unset */

typedef struct engine_config {
    const char *model_dir;
    const char *device;             /* "cpu" (NULL: the same), "vulkan" or "vulkan:N"; not copied */
    int n_threads;                  /* <= 0: one per CPU */
    int block_size;                 /* 16 (default) or 32 */
    int64_t n_kv_blocks;            /* 0: sized from kv_cache_bytes */
    int64_t kv_cache_bytes;         /* 0: 2 GiB, capped at what max_num_seqs x max_model_len needs */
    const char *kv_cache_dtype;     /* "auto" (NULL: the same), "f32", "f16" or "bf16"; auto is
                                     * f16 for an f16 model, bf16 otherwise, where the backend
                                     * runs it, else f32; not copied */
    int max_num_seqs;               /* 0: 64 */
    int64_t max_num_batched_tokens; /* 0: ENGINE_DEFAULT_MAX_NUM_BATCHED_TOKENS */
    int64_t max_model_len;          /* 0: min(max_position_embeddings, 8192) */
    bool eager;                     /* run every step eagerly (no capture) */
    bool verify_capture;            /* run each replayed step eagerly too; stop at a difference */
    int64_t decode_steps;           /* decode steps per replay (0: the default, 4;
                                     * 1: one step per round trip; at most
                                     * ENGINE_MAX_DECODE_STEPS); every request where the
                                     * backend has the device sampler, else greedy ones */
    int64_t sample_vocab;           /* ids >= this are never sampled (those the tokenizer
                                     * does not know); 0: the whole vocabulary. Multi-step
                                     * decode stays on: a masked id the device picks is
                                     * dropped and that token picked again on the host */
    bool no_prefix_caching;         /* turn automatic prefix caching off (on by default) */
    bool has_tokenizer_eos;         /* tokenizer_eos is the tokenizer's eos_token: */
    int32_t tokenizer_eos;          /* an end of sequence too, and the model's first (the
                                     * one whose stop reports no stop id), as vLLM's
                                     * tokenizer.eos_token_id (engine_config_tokenizer_eos) */
    const char *quantize;           /* NULL: weights as stored; "q8_0", "q4_0", "q4_k",
                                     * "q5_k", "q6_k", "q4_k_m" or "q5_k_m": every matrix
                                     * quantized at load (model/quantize.h); not copied */
    void (*load_progress)(void *user, double fraction); /* (optional) weights loaded so far */
    void *load_progress_user;
    bool bf16_activations; /* matmuls over bf16 weights round their activations to bf16 and
                            * multiply in bf16 (vdpbf16ps: twice an FMA's multiply-adds an
                            * instruction), as llama.cpp does; faster where compute sets the
                            * pace (prefill, batched decode); CPU backend with AVX512-BF16
                            * only (else an error); off: f32 activations */
    bool pooling; /* an embedding model (vLLM's --runner pooling): no lm_head; every request
                   * has max_tokens 0 and gives the final norm's hidden state of its last
                   * prompt token (engine_request_embedding), nothing is generated */
} engine_config;

/* Give c the tokenizer's eos_token id (-1: the tokenizer names none). */
static inline void engine_config_tokenizer_eos(engine_config *c, int32_t eos_id)
{
    c->tokenizer_eos = eos_id;
    c->has_tokenizer_eos = eos_id >= 0;
}

/* How a request picks its tokens, with vLLM's meanings (sampler.h gives the
 * order). A zero-initialised struct is greedy with every filter off: top_p
 * and repetition_penalty read 0 as "off", like 1. The ranges are checked by
 * engine_add_request. */
typedef struct engine_sampling {
    double temperature;        /* >= 0; 0: greedy (argmax after the bias, penalties and masks) */
    int64_t top_k;             /* keep the k most likely tokens (ties kept); 0 or -1: off */
    double top_p;              /* keep the smallest set with this mass, (0, 1]; 0 or 1: off */
    double min_p;              /* drop tokens below min_p x the top probability, [0, 1]; 0: off */
    double repetition_penalty; /* > 1 discourages tokens of prompt and output; 0 or 1: off */
    double presence_penalty;   /* [-2, 2], subtracted once from a generated token's logit */
    double frequency_penalty;  /* [-2, 2], subtracted per occurrence in the output */
    uint64_t seed;             /* the request's random stream */
    int64_t min_tokens;        /* EOS and stop ids are masked before this many tokens, <= max_tokens
                                * (dropped when a constraint allows only them) */
    bool logprobs;             /* record each sampled token's log-probability */
    int top_logprobs;          /* and this many most likely alternatives, 0..20 (needs logprobs) */
    const graph_sample_bias *logit_bias; /* [n_logit_bias] added to the raw logits in order,
                                          * before the penalties (OpenAI's logit_bias): ids in
                                          * [0, vocab), biases in [-100, 100]; copied */
    int n_logit_bias;                    /* at most ENGINE_MAX_LOGIT_BIAS */
} engine_sampling;

/* One generated token's log-probabilities under the raw model distribution
 * (log_softmax of the unprocessed logits over ids < sample_vocab, vLLM's
 * default): what the model thought, whatever the penalties and filters. */
typedef struct engine_token_logprob {
    int32_t id;     /* the token chosen */
    float logprob;  /* its log-probability */
    int n_top;      /* alternatives below: the request's top_logprobs */
    int32_t top_ids[ENGINE_MAX_TOP_LOGPROBS]; /* most likely first; ties: lower id first */
    float top_logprobs[ENGINE_MAX_TOP_LOGPROBS];
    int32_t rank; /* a prompt token's: the ids whose log-probability is at least its own,
                   * itself included (vLLM's rank: 1 for the most likely); 0 where not
                   * computed (generated tokens, the first prompt token) */
} engine_token_logprob;

/* A constraint on a request's tokens (a grammar's matcher, say), run on the
 * host. Before every step that samples the request's next token the engine
 * asks fill_mask for the ids allowed next; the sampler applies the mask after
 * the penalties and min_tokens, before temperature and the filters, so
 * greedy picks among the allowed ids (logprobs stay the raw model's). After
 * the token is chosen the engine calls accept with it, once per token
 * (recompute after preemption calls nothing again). A request whose mask
 * allows no id with a finite logit, or whose accept returns false, finishes
 * with ENGINE_FINISH_ERROR and engine_request_error says why; no disallowed
 * id is ever appended. */
typedef struct engine_constraint {
    void *state; /* the matcher's; the engine's once the request is queued */
    /* Set bit id % 32 of allowed[id / 32] for every id allowed next; the
     * (n_vocab + 31) / 32 words arrive zeroed. n_vocab is the model's (its
     * logits row); ids >= sample_vocab are never chosen whatever their bit.
     * Called again for the same position when a step is retried: it must
     * not change state. */
    void (*fill_mask)(void *state, uint32_t *allowed, int32_t n_vocab);
    /* id was chosen: advance; false ends the request with an error. */
    bool (*accept)(void *state, int32_t id);
    /* (optional) free state: once, when the request finishes (any reason),
     * is released unfinished (an abort), or at engine_destroy */
    void (*destroy)(void *state);
} engine_constraint;

typedef struct engine_request_params {
    const int32_t *prompt_ids; /* copied */
    int64_t n_prompt;
    int64_t max_tokens;   /* tokens to generate, >= 1 (0 when prompt_logits or
                           * prompt_logprobs: the prompt scored, nothing generated) */
    engine_sampling sampling;
    bool ignore_eos;
    bool prompt_logits;   /* deliver the logits of every prompt position */
    bool prompt_logprobs; /* record each prompt token's log-probability given the tokens
                           * before it, and its rank, with prompt_top_logprobs alternatives
                           * (the raw model distribution, as generated tokens' logprobs):
                           * engine_request_prompt_logprobs */
    int prompt_top_logprobs; /* 0..ENGINE_MAX_TOP_LOGPROBS */
    const int32_t *stop_ids; /* more tokens that end the request (copied); kept even
                              * with ignore_eos, as in vLLM */
    int n_stop_ids;          /* at most ENGINE_MAX_STOP_IDS */
    const engine_constraint *constraint; /* NULL: none. Copied; the engine owns its state
                                          * once engine_add_request returns ENC_OK (on a
                                          * refusal the caller keeps it) */
} engine_request_params;

typedef enum engine_finish {
    ENGINE_NOT_FINISHED = 0,
    ENGINE_FINISH_LENGTH, /* max_tokens or max_model_len reached */
    ENGINE_FINISH_STOP,   /* an EOS / stop token was sampled */
    ENGINE_FINISH_ERROR,  /* its constraint allowed no token or refused one
                           * (engine_request_error) */
} engine_finish;

const char *engine_finish_name(engine_finish f);

/* Called for a prompt_logits request with the logits of each prompt
 * position, in order; `logits` is valid during the call only. */
typedef void (*engine_logits_fn)(void *user, int64_t request_id, int64_t pos,
                                 const float *logits, int64_t vocab);

typedef struct engine_step_stats {
    int64_t n_prefill_tokens; /* prompt tokens computed this step */
    int64_t n_decode_tokens;  /* sequences that decoded one token */
    int64_t n_cached_tokens;  /* prompt tokens of sequences admitted this step that
                               * the prefix cache served (not computed) */
    int64_t n_seqs;           /* sequences in the step */
    int64_t n_finished;       /* requests that finished this step */
    int64_t n_preempted;      /* sequences preempted this step */
    int64_t n_running;        /* after the step: sequences holding KV blocks */
    int64_t n_waiting;        /* after the step: queued or preempted requests */
    int64_t n_passes;         /* forward passes the step ran: K for a replay of K
                               * decode steps, else 1 (0: nothing scheduled) */
} engine_step_stats;

/* Counters since creation, and gauges (marked "now") for a /metrics page. */
typedef struct engine_stats {
    int64_t n_steps;
    int64_t n_prefill_tokens; /* prompt tokens computed (a recomputed sequence's
                               * generated tokens count too) */
    int64_t n_decode_tokens;
    int64_t n_preemptions;
    int64_t n_prefix_cache_queries; /* tokens of admitted sequences looked up in the
                                     * prefix cache (not prompt_logits requests) */
    int64_t n_prefix_cache_hits;    /* of those, tokens served from the cache */
    int64_t n_running;              /* now: sequences holding KV blocks */
    int64_t n_waiting;              /* now: queued or preempted requests */
    int64_t n_kv_blocks_used;       /* now: blocks referenced by some sequence */
    int64_t n_kv_blocks_cached;     /* now: blocks in the prefix cache, used or not */
    int64_t n_eager_steps;    /* steps run eagerly (prefill, mixed, cold decode) */
    int64_t n_captures;       /* decode steps recorded */
    int64_t n_replays;        /* replays of a one-step recording whose logits the host samples */
    int64_t n_verified_steps; /* replays checked against eager (verify mode) */
    int64_t n_multi_round_trips; /* replays of a recording that picks its K (>= 1) tokens on the device */
    int64_t n_bytes_read;        /* bytes the host read back from the device: logits
                                  * rows, sampled ids, logprobs records */
} engine_stats;

enc_status engine_create(const engine_config *cfg, engine **out);
void engine_destroy(engine *e); /* NULL is a no-op */

/* Validate and queue a request. Bad input (empty prompt, ids outside the
 * vocabulary, prompt + max_tokens beyond max_model_len, a prompt that could
 * never fit the KV pool, sampling parameters out of range) is refused with ENC_ERR_INVALID_ARGUMENT and a
 * message; nothing is queued then. */
enc_status engine_add_request(engine *e, const engine_request_params *p, int64_t *request_id);
/* The checks of engine_add_request alone. They read only what is fixed at
 * creation (the model, the resolved config, the pool size), so another
 * thread may call this while one drives engine_step (the API's submit does). */
enc_status engine_check_request(const engine *e, const engine_request_params *p);
/* Run one scheduler step. With nothing to run it does nothing. */
enc_status engine_step(engine *e, engine_step_stats *stats);
bool engine_has_unfinished(const engine *e);
/* Change how decode steps run from now on: eagerly or captured, and the
 * decode steps per replay, 1 to the decode_steps the engine was created
 * with (its buffers are sized for that). Refused while a request is
 * unfinished. A slot keeps one multi-step recording per step count, so
 * switching back and forth records nothing new. (`encore bench` measures
 * every mode on one engine and one copy of the weights this way.) */
enc_status engine_set_decode_mode(engine *e, bool eager, int64_t decode_steps);
/* Requests holding KV blocks, and those queued or preempted. */
void engine_count_requests(const engine *e, int64_t *n_running, int64_t *n_waiting);

/* The tokens a request has generated so far (valid until the next step or
 * release) and whether it finished. */
enc_status engine_request_output(const engine *e, int64_t request_id, const int32_t **ids,
                                 int64_t *n_ids, engine_finish *finish);
/* The log-probabilities of the tokens a request has generated so far, one
 * per token (valid until the next step or release); NULL and 0 when it did
 * not ask for logprobs. */
enc_status engine_request_logprobs(const engine *e, int64_t request_id, const engine_token_logprob **lp,
                                   int64_t *n);
/* A prompt_logprobs request's records, one per prompt token, each with its
 * id (the first has no logprob: NAN, no alternatives), complete once the prompt is computed
 * (when its first token is sampled); NULL and 0 when it did not ask. Valid
 * until its release. */
enc_status engine_request_prompt_logprobs(const engine *e, int64_t request_id,
                                          const engine_token_logprob **lp, int64_t *n);
/* A pooling engine's request, once finished: the final norm's hidden state
 * of its last prompt token, [hidden_size] floats, not normalised (valid
 * until its release); NULL and 0 before, or in a generating engine. */
enc_status engine_request_embedding(const engine *e, int64_t request_id, const float **v,
                                    int64_t *n);
/* Prompt tokens of a request that the prefix cache served when it was last
 * admitted (0 for an unknown id). */
int64_t engine_request_cached_tokens(const engine *e, int64_t request_id);
/* The id from the request's stop ids that finished it, or an EOS id other
 * than the model's first (vLLM's stop_reason: it makes the others stop ids;
 * the first EOS counts as none); -1 if none or an unknown id. */
int32_t engine_request_stop_token(const engine *e, int64_t request_id);
/* Why a request finished with ENGINE_FINISH_ERROR (NULL otherwise, or for
 * an unknown id); valid until its release. */
const char *engine_request_error(const engine *e, int64_t request_id);
/* Forget a request: a running one is aborted and its block references
 * dropped at once (blocks still shared stay with their other holders;
 * cached ones stay cached). */
void engine_release_request(engine *e, int64_t request_id);

void engine_set_logits_callback(engine *e, engine_logits_fn fn, void *user);
const qwen3_config *engine_model_config(const engine *e);
const engine_config *engine_get_config(const engine *e); /* with defaults resolved */
/* The backend's short name ("cpu", "vulkan"). */
const char *engine_backend_name(const engine *e);
/* Its line naming the device (backend_describe). */
const char *engine_device_description(const engine *e);
/* The KV cache's dtype ("F32", "F16", "BF16") and the bytes one token takes in
 * it over all layers (K and V). */
const char *engine_kv_cache_dtype(const engine *e);
int64_t engine_kv_bytes_per_token(const engine *e);
engine_stats engine_get_stats(const engine *e);
/* Weight bytes one decode step reads (all matrices, the lm_head, norms). */
int64_t engine_decode_weight_bytes(const engine *e);
int64_t engine_kv_free_blocks(const engine *e);
/* Seconds the device has spent on this engine's work so far (0 on the CPU). */
double engine_device_seconds(const engine *e);
int64_t engine_kv_total_blocks(const engine *e);

#endif
