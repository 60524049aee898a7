/* sample_row.h - the per-row parameters of the device sampler
 * (GRAPH_OP_SAMPLE): what the engine writes for each row of a decode slot
 * before every replay, and what every backend's sample kernel reads. The
 * meanings and the order of the rules are the host sampler's
 * (engine/sampler.h); this is its contract with the device.
 *
 *   params    [rows, GRAPH_SAMPLE_ROW_WORDS] i32 words, each row one
 *             graph_sample_row (doubles and u64 in native byte order), its
 *             logit bias included (n_bias entries, added to the raw row in
 *             entry order as f32 sums before everything else; logprobs stay
 *             the raw row's)
 *   positions [rows] i32   the position of each row's input token; the row
 *                          chooses the token at positions[i] + 1
 *   history   [rows, H] i32 the row's tokens by position: the prompt at
 *                          [0, n_prompt), then the output; read at [0, pos)
 *                          when penalties are on, and the kernel writes the
 *                          chosen id at [pos] (pos = positions[i] + 1 < H)
 *
 *   logprobs  [rows, GRAPH_SAMPLE_LP_WORDS] (optional) each row's
 *             graph_sample_logprobs, for the rows that ask
 *   mask      [rows, GRAPH_SAMPLE_MASK_WORDS(V)] u32 (optional) the ids a
 *             GRAPH_SAMPLE_MASKED row may choose: bit id % 32 of word
 *             id / 32; rows without the flag read nothing. An id whose bit
 *             is 0 gets -inf after the penalties and min_tokens, before
 *             temperature and the filters (greedy picks among the allowed);
 *             logprobs stay the raw row's. When no allowed id has a finite
 *             logit the row chooses GRAPH_SAMPLE_NO_TOKEN, never a
 *             disallowed id.
 *
 * A row with n_sample == 0 is padding: it chooses 0 and touches nothing. */
#ifndef ENC_GRAPH_SAMPLE_ROW_H
#define ENC_GRAPH_SAMPLE_ROW_H

#include <stdint.h>

enum {
    GRAPH_SAMPLE_MAX_MASK = 32,       /* EOS and stop ids masked until min_tokens */
    GRAPH_SAMPLE_MAX_BIAS = 300,      /* logit bias entries of a row (OpenAI's limit) */
    GRAPH_SAMPLE_PENALTIES = 1,       /* flags: repetition / presence / frequency on */
    GRAPH_SAMPLE_LOGPROBS = 2,        /* flags: write the row's logprobs record */
    GRAPH_SAMPLE_MASKED = 4,          /* flags: only ids whose mask bit is 1 may be chosen */
    GRAPH_SAMPLE_NO_TOKEN = -1,       /* the id of a masked row that allows no token */
    GRAPH_SAMPLE_MAX_TOP = 20,        /* alternatives a logprobs record holds */
    GRAPH_SAMPLE_WORKERS = 4,         /* rows sampled at once (scratch slices) */
    GRAPH_SAMPLE_SCRATCH_WORDS = 12,  /* i32 scratch words per vocabulary id per worker (even) */
    GRAPH_SAMPLE_SCRATCH_EXTRA = 128, /* and per worker beyond them (one chunk's 64 bin masses, for
                                       * shaders/sample.comp on a vocabulary under 18 ids) */
    GRAPH_SAMPLE_CHUNK_IDS = 256,     /* and per worker, per this many ids (rounded up), */
    GRAPH_SAMPLE_CHUNK_WORDS = 258    /* this many (even): the CPU kernel's chunk record */
};

/* The i32 words of one worker's scratch slice for a vocabulary of n_vocab. */
static inline int64_t graph_sample_scratch_words(int64_t n_vocab)
{
    return n_vocab * GRAPH_SAMPLE_SCRATCH_WORDS + GRAPH_SAMPLE_SCRATCH_EXTRA +
           (n_vocab + GRAPH_SAMPLE_CHUNK_IDS - 1) / GRAPH_SAMPLE_CHUNK_IDS *
               GRAPH_SAMPLE_CHUNK_WORDS;
}

/* One logit bias entry: bias is added to the logit of id. */
typedef struct graph_sample_bias {
    int32_t id;
    float bias;
} graph_sample_bias;

typedef struct graph_sample_row {
    double temperature;        /* 0: greedy (argmax after the bias, penalties and masks) */
    double top_p;              /* 0 or 1: off */
    double min_p;              /* 0: off */
    double repetition_penalty; /* applied when GRAPH_SAMPLE_PENALTIES is set */
    double presence_penalty;
    double frequency_penalty;
    uint64_t seed;      /* the draw is philox_uniform(seed, position) */
    int32_t top_k;      /* <= 0 or >= n_sample: off */
    int32_t n_prompt;   /* history [0, n_prompt) is the prompt */
    int32_t min_tokens; /* mask_ids are -inf while n_output < min_tokens */
    int32_t n_sample;   /* ids >= n_sample are never chosen; 0: padding row */
    int32_t n_mask;     /* entries of mask_ids */
    int32_t flags;      /* GRAPH_SAMPLE_PENALTIES, GRAPH_SAMPLE_LOGPROBS, GRAPH_SAMPLE_MASKED */
    int32_t n_top;      /* alternatives in the logprobs record, 0..GRAPH_SAMPLE_MAX_TOP */
    int32_t mask_ids[GRAPH_SAMPLE_MAX_MASK];
    int32_t n_bias;     /* entries of bias, applied first: x[id] += bias for ids < n_sample */
    graph_sample_bias bias[GRAPH_SAMPLE_MAX_BIAS];
} graph_sample_row;

/* A row's logprobs record, under the raw model distribution (log_softmax of
 * the unprocessed logits over ids < n_sample), written when the row has
 * GRAPH_SAMPLE_LOGPROBS: the chosen id and its logprob, and the n_top most
 * likely ids (ties: lower id first) with theirs. */
typedef struct graph_sample_logprobs {
    int32_t id;
    float logprob;
    int32_t n_top;
    int32_t top_ids[GRAPH_SAMPLE_MAX_TOP];
    float top_logprobs[GRAPH_SAMPLE_MAX_TOP];
} graph_sample_logprobs;

enum {
    GRAPH_SAMPLE_ROW_WORDS = (int)(sizeof(graph_sample_row) / sizeof(int32_t)),
    GRAPH_SAMPLE_LP_WORDS = (int)(sizeof(graph_sample_logprobs) / sizeof(int32_t)),
};
_Static_assert(sizeof(graph_sample_row) % sizeof(int32_t) == 0, "a sample row is whole i32 words");

/* The u32 words of one row's token mask over a vocabulary of v ids. */
#define GRAPH_SAMPLE_MASK_WORDS(v) (((v) + 31) / 32)

/* Is id allowed by a token mask? */
static inline int graph_sample_allowed(const uint32_t *mask, int64_t id)
{
    return (int)((mask[id >> 5] >> (id & 31)) & 1u);
}

#endif
