/* engine_impl.h - the engine's internal state, shared by engine.c (requests
 * and the step loop) and scheduler.c (what runs in a step). */
#ifndef ENC_ENGINE_ENGINE_IMPL_H
#define ENC_ENGINE_ENGINE_IMPL_H

#include "backend/backend.h"
#include "base/arena.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "kv/kv_cache.h"
#include "model/qwen3.h"

typedef enum seq_state {
    SEQ_WAITING = 0, /* queued, or preempted and waiting to be recomputed */
    SEQ_RUNNING,     /* holds KV blocks */
    SEQ_FINISHED,
} seq_state;

typedef struct engine_seq {
    int64_t id;      /* request id; also the arrival order */
    seq_state state;
    int32_t *tokens; /* [n_prompt + max_tokens]: prompt, then generated */
    int64_t n_tokens;
    int64_t n_prompt;
    int64_t n_computed; /* leading tokens whose K/V are in the cache */
    int64_t max_tokens;
    double temperature;
    bool ignore_eos;
    bool prompt_logits;
    int64_t n_logits_sent; /* prompt positions whose logits were delivered */
    sampler_rng rng;
    kv_block_table table;
    engine_finish finish;
} engine_seq;

/* One sequence's share of a step. */
typedef struct sched_entry {
    engine_seq *seq;
    int64_t n_new;      /* tokens computed this step: [n_computed, n_computed + n_new) */
    int64_t logits_row; /* first row of its logits in the step output, -1 if none */
    int64_t n_logits;   /* rows of logits it gets (1 when sampling; n_new for prompt logits) */
    bool sample;        /* the step reaches its last known token: sample the next */
} sched_entry;

typedef struct sched_batch {
    sched_entry *entries; /* [max_num_seqs] */
    int n_entries;
    int64_t n_tokens;
    int64_t n_logits;
    int64_t n_preempted;
} sched_batch;

struct engine {
    engine_config cfg; /* defaults resolved */
    backend *be;
    qwen3_model *model;
    kv_cache kv;
    int64_t max_blocks_per_seq;
    int64_t logits_rows_max;

    engine_seq **seqs; /* every request not yet released, in arrival order */
    int64_t n_seqs, cap_seqs;
    int64_t next_id;

    sched_batch batch;
    /* host copies of the step inputs, sized for the maximum step */
    int32_t *input_ids, *positions, *slot_mapping, *block_tables, *seq_lens, *query_start_loc,
        *logits_indices;
    /* the same on the device, written before every step */
    backend_buffer *in_ids, *in_positions, *in_slots, *in_tables, *in_lens, *in_qsl, *in_logit_idx;
    backend_buffer *arena_buf; /* the planned intermediates */
    size_t arena_size;
    enc_arena graph_arena; /* host bookkeeping of the step graph */
    float *logits;         /* [logits_rows_max, vocab] */
    double *probs;         /* [vocab] sampling scratch */

    engine_logits_fn logits_fn;
    void *logits_user;
    engine_stats stats;
};

/* Pick the sequences and token counts of the next step (scheduler.c). */
void sched_plan_step(engine *e, sched_batch *b);
/* Give a sequence's blocks back; it will be recomputed from scratch. */
void sched_preempt(engine *e, engine_seq *s);

#endif
