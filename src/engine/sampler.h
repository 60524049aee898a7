/* sampler.h - choosing the next token from a row of logits, with vLLM's
 * sampling parameters (engine_sampling).
 *
 * One call processes a row in vLLM's order:
 *
 *   raw logits ──► (logprobs: log_softmax of the raw row, ids < n_sample)
 *      │
 *      ├─ logit bias          x[id] += bias per entry, in entry order (f32 sums)
 *      ├─ repetition penalty  over ids in prompt or output: l > 0 ? l / r : l * r
 *      ├─ frequency, presence over ids in the output: l -= f * count + p * (count > 0)
 *      ├─ min_tokens          EOS and stop ids -> -inf while n_output < min_tokens
 *      ├─ token mask          (a constrained request) ids not allowed -> -inf; when
 *      │                      no allowed id is left the pick is GRAPH_SAMPLE_NO_TOKEN
 *      │
 *      ├─ temperature 0: the first id of the largest logit (greedy); done
 *      ├─ temperature T:  w = exp((l - max) x (1 / T)), in double precision, in
 *      │                  base/sample_math.h's arithmetic (the device's bits)
 *      ├─ min_p   keep the ids whose weight is >= min_p x the largest weight
 *      ├─ top_k   keep the ids whose weight is >= the k-th largest (ties kept)
 *      ├─ top_p   keep the smallest prefix (weight descending, id ascending) of
 *      │          the top-k set whose mass reaches top_p of that set's mass
 *      └─ draw    inverse CDF with u = philox_uniform(seed, position of the
 *                 token) (base/philox.h): a counter-based draw, so a seeded
 *                 request gives the same tokens whatever runs beside it, on
 *                 the host or in the device's sample op (GRAPH_OP_SAMPLE)
 *
 * Ids >= n_sample (ids the tokenizer does not know) are never chosen and are
 * left out of the logprobs. Logprobs are those of the raw model distribution
 * (vLLM's default "raw_logprobs"): the logit bias, penalties, masks, temperature
 * and filters do not change them; nor does the token mask.
 *
 * A sampler owns scratch sized by the vocabulary, allocated once; picking a
 * token allocates nothing. Top-k and top-p, the masses and the draw are
 * base/sample_select.h's, which the CPU kernel of GRAPH_OP_SAMPLE runs too:
 * one bin of weights is sorted, not the whole vocabulary. */
#ifndef ENC_ENGINE_SAMPLER_H
#define ENC_ENGINE_SAMPLER_H

#include <stdint.h>

#include "base/sample_select.h"
#include "base/status.h"
#include "engine/engine.h"
#include "graph/sample_row.h"

/* The first index of the largest of n logits. */
int32_t sampler_argmax(const float *logits, int64_t n);

/* Scratch for one vocabulary. */
typedef struct sampler {
    int64_t n_vocab;
    float *work;        /* [n_vocab] the row after penalties and masks */
    double *w;          /* [n_vocab] sampling weights */
    sample_cand *cand;  /* [n_vocab] the kept set (sampler_candidates), a sorted bin */
    sample_cand *tmp;   /* [n_vocab] the sort's other half */
    int32_t *ids;       /* [n_vocab] a boundary bin's members */
    smath_chunk *chunks; /* [n_vocab / SMATH_CHUNK rounded up] the row's chunk records */
    int32_t *counts;    /* [n_vocab] output occurrences; all zero between calls */
    uint8_t *done;      /* [n_vocab] penalised this call; all zero between calls */
} sampler;

enc_status sampler_init(sampler *s, int64_t n_vocab);
void sampler_free(sampler *s); /* a zeroed sampler is fine */

/* One sequence's row and what its parameters read. */
typedef struct sampler_input {
    const float *logits; /* [n_vocab] the raw row */
    int64_t n_sample;    /* ids >= n_sample are never chosen; 1..n_vocab */
    const engine_sampling *params;
    const int32_t *prompt; /* the tokens the repetition penalty sees, with the output */
    int64_t n_prompt;
    const int32_t *output; /* generated so far */
    int64_t n_output;
    const int32_t *eos_ids; /* masked while n_output < min_tokens (the engine gives them
                             * under ignore_eos too, as vLLM masks all_stop_token_ids) */
    int n_eos;
    const int32_t *stop_ids; /* masked likewise */
    int n_stop_ids;
    uint64_t seed;    /* the request's seed */
    int64_t position; /* of the token being chosen (n_prompt + n_output): the draw's counter */
    const uint32_t *allowed; /* NULL: every id; else the token mask, bit id % 32 of word
                              * id / 32 (graph/sample_row.h) */
} sampler_input;

/* The row after the logit bias, penalties, the min_tokens mask and the token
 * mask (ids < n_sample), in s->work. The scratch counters are back to zero on return. */
const float *sampler_process(sampler *s, const sampler_input *in);

/* The ids a sampled pick (temperature > 0) draws from the row x[0..n) after
 * temperature, top-k, top-p and min-p: in s->cand with their weights (not
 * normalised; the largest is 1), in id order; returns their count. */
int64_t sampler_candidates(sampler *s, const float *x, int64_t n, const engine_sampling *p);

/* Pick the next token. When lp is not NULL it gets the chosen id, its raw
 * log-probability and params->top_logprobs most likely alternatives.
 * GRAPH_SAMPLE_NO_TOKEN (and lp means nothing) when the token mask leaves
 * no id with a finite logit. */
int32_t sampler_pick(sampler *s, const sampler_input *in, engine_token_logprob *lp);
/* *lp = prompt token id's log-probability under the raw row logits[0..n)
 * and the n_top most likely ids (ties: lower id first), as sampler_pick
 * records them, and its rank: the ids whose log-probability, rounded as
 * its own, is at least its own (vLLM's). */
void sampler_prompt_logprobs(sampler *s, const float *logits, int64_t n, int n_top, int32_t id,
                             engine_token_logprob *lp);

/* True when the next pick is the argmax of the raw row (the device's greedy
 * multi-step decode computes that): temperature 0, no penalty, no logit bias,
 * no logprobs, min_tokens met. The n_sample mask is the caller's to handle. */
bool sampler_is_plain_greedy(const engine_sampling *p, int64_t n_output);

/* True when a repetition, presence or frequency penalty is on. */
bool sampler_penalties_on(const engine_sampling *p);

#endif
