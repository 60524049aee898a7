/* engine_impl.h - the engine's internal state, shared by the four files of
 * the engine: engine.c (creation, requests and the step loop), scheduler.c
 * (what runs in a step), step.c (the step inputs, building and planning
 * every step graph, the arena, eager steps) and decode_slots.c (capture and
 * replay of decode steps). Calls go one way: engine.c calls the other three,
 * decode_slots.c calls step.c, and step.c and scheduler.c call none of them.
 * struct engine says which file writes which of its fields. */
#ifndef ENC_ENGINE_ENGINE_IMPL_H
#define ENC_ENGINE_ENGINE_IMPL_H

#include "backend/backend.h"
#include "base/arena.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "graph/sample_row.h"
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
    int64_t n_cached_tokens; /* prompt tokens the prefix cache served at its first admission
                              * (vLLM's num_cached_tokens: after a preemption its own blocks
                              * found again are no cache hit of the request's) */
    bool admitted;           /* admitted once */
    int64_t max_tokens;
    engine_sampling sampling; /* its logit_bias is logit_bias below */
    graph_sample_bias *logit_bias; /* [sampling.n_logit_bias] the request's, owned */
    bool ignore_eos;
    bool prompt_logits; /* logits rows for every prompt position (for logits_fn or prompt_lps) */
    int32_t stop_ids[ENGINE_MAX_STOP_IDS];
    int n_stop_ids;
    int32_t stop_token;      /* the id engine_request_stop_token reports, else -1 */
    int64_t n_logits_sent; /* prompt positions whose logits were delivered */
    engine_token_logprob *logprobs; /* [max_tokens] when sampling.logprobs, else NULL */
    engine_token_logprob *prompt_lps; /* [n_prompt] when prompt_logprobs, else NULL */
    int prompt_top_logprobs;          /* alternatives in each of them */
    bool host_pick; /* a multi-step replay chose an id >= sample_vocab: the next token is
                     * picked on the host (decode_multi_reserve refuses it) */
    engine_constraint constraint; /* fill_mask NULL: none; its state is dropped at finish */
    uint32_t *allowed; /* [GRAPH_SAMPLE_MASK_WORDS(vocab)] the constraint's mask of the next
                        * token (engine__fill_masks), when constrained */
    char error[160];   /* why it finished with ENGINE_FINISH_ERROR */
    float *embedding;  /* a pooling engine's: [hidden_size] once finished, else NULL */
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
    int64_t n_cached_tokens; /* prefix-cache hits of the sequences admitted */
} sched_batch;

/* The step inputs, in the order of qwen3_step_io's input fields. step.c
 * binds them through its step__inputs table (offsetof each field, by IN_*
 * index), so the order is not relied on; a static assertion there checks
 * that qwen3_step_io has exactly IN_COUNT inputs. */
enum {
    IN_IDS = 0,
    IN_POSITIONS,
    IN_SLOTS,
    IN_TABLES,
    IN_LENS,
    IN_QSL,
    IN_LOGIT_IDX,
    IN_COUNT
};

/* Device buffers for a step's inputs, sized for (n_tokens, n_seqs, n_logits). */
typedef struct step_inputs {
    backend_buffer *buf[IN_COUNT];
    int64_t n_tokens, n_seqs, n_logits;
} step_inputs;

typedef enum slot_state {
    SLOT_COLD = 0, /* never run: the next decode of this size runs eagerly */
    SLOT_WARM,     /* persistent inputs allocated: the next decode records */
    SLOT_CAPTURED, /* recording made: every later decode of this size replays */
} slot_state;

/* The device sampler's persistent inputs of a decode slot of P rows
 * (graph/sample_row.h), rewritten before every multi-step replay. */
typedef struct step_sample_bufs {
    backend_buffer *params;  /* [P, GRAPH_SAMPLE_ROW_WORDS] i32: graph_sample_row per row */
    backend_buffer *history; /* [P, max_model_len] i32: each penalised row's tokens */
    backend_buffer *logprobs; /* [decode_steps_max, P] graph_sample_logprobs: step k's at [k * P] */
    backend_buffer *mask;     /* [P, GRAPH_SAMPLE_MASK_WORDS(vocab)] u32: the constrained rows'
                               * token masks (graph/sample_row.h) */
} step_sample_bufs;

/* A decode slot: the captured decode step of one padded batch size. */
typedef struct decode_slot {
    int64_t size; /* padded batch size P: tokens = sequences = logits rows = P */
    slot_state state;
    uint64_t generation; /* e->generation when recorded; a mismatch re-records */
    step_inputs in;      /* persistent, rewritten in full before every replay */
    backend_recording *rec;
    size_t logits_offset; /* where the recording leaves its logits in the arena */
    /* multi-step decode: K steps per replay, one recording per K
     * (engine_set_decode_mode changes K), each recorded on first use */
    backend_recording *rec_multi[ENGINE_MAX_DECODE_STEPS + 1];  /* [K] */
    uint64_t multi_generation[ENGINE_MAX_DECODE_STEPS + 1];     /* [K] */
    backend_buffer *out_ids; /* [decode_steps_max, P] i32: the ids each step chose */
    step_sample_bufs sample; /* with out_ids, when the engine has the device sampler */
} decode_slot;

/* Who writes what. Every field is set up by engine_create and freed by
 * engine_destroy (engine.c, which leaves the arena to step_arena_init /
 * step_arena_free and the slots to decode_slots_init / decode_slots_free);
 * after creation only the file named writes it (everyone may read):
 *   engine.c        cfg, be, model, max_blocks_per_seq, logits_rows_max,
 *                   decode_steps_max, device_sampler (at creation only; cfg.eager and
 *                   cfg.decode_steps also in engine_set_decode_mode, between
 *                   requests); seqs, n_seqs, cap_seqs, next_id;
 *                   logits_fn, logits_user; stats.n_steps and the token counts
 *   scheduler.c     batch; stats.n_preemptions and the prefix-cache counts
 *   step.c          host[] (step_fill_inputs), eager_in, arena_buf,
 *                   arena_size, graph_arena, generation (bumped when the
 *                   arena grows); logits after an eager step;
 *                   stats.n_eager_steps and stats.n_bytes_read (step_read)
 *   decode_slots.c  slots, n_slots; host[] rows n..P-1 (padding);
 *                   multi_ids, multi_rows, multi_steps, sample_rows, multi_lp;
 *                   logits after a replay;
 *                   verify_logits; stats of captures, replays, multi-step
 *                   round trips and verified steps
 *   kv (the block pool) is shared: the scheduler reserves and preempts,
 *   engine.c commits, finishes and releases, decode_slots.c reserves ahead
 *   for multi-step decode (decode_multi_reserve); the sampler is engine.c's. */
struct engine {
    engine_config cfg; /* defaults resolved */
    backend *be;
    char device[160]; /* backend_describe's line */
    qwen3_model *model;
    kv_cache kv;
    int64_t max_blocks_per_seq;
    enc_dtype kv_dtype; /* of the KV cache, resolved from cfg.kv_cache_dtype */
    int64_t logits_rows_max;
    int64_t decode_steps_max; /* cfg.decode_steps at creation: what buffers are sized for */
    bool device_sampler;      /* the backend runs GRAPH_OP_SAMPLE: multi-step decode
                               * samples on the device, for every request but logprobs */
    graph_sample_row *sample_rows; /* [max_num_seqs] host copy of a slot's sample params */
    graph_sample_logprobs *multi_lp; /* [decode_steps_max, max_num_seqs]: logprobs of a
                                      * multi-step replay, at [k * multi_rows + i] */

    engine_seq **seqs; /* every request not yet released, in arrival order */
    int64_t n_seqs, cap_seqs;
    int64_t next_id;

    sched_batch batch;
    int32_t *host[IN_COUNT]; /* host copies of the inputs, sized for any step */
    int32_t *multi_ids;      /* [decode_steps, multi_rows]: ids of a multi-step replay */
    int64_t multi_rows;      /* the padded batch size of the last multi-step replay */
    int64_t multi_steps;     /* its decode steps: cfg.decode_steps, or 1 for a batch with a
                              * constrained sequence (its mask needs the previous token) */
    step_inputs eager_in;    /* inputs of eager steps */
    backend_buffer *arena_buf; /* the planned intermediates of any step */
    size_t arena_size;
    enc_arena graph_arena; /* host bookkeeping of the step graph */
    int64_t out_width;     /* floats per output row: vocab_size, or hidden_size (pooling) */
    float *logits;         /* [logits_rows_max, out_width] */
    float *verify_logits;  /* [max_num_seqs, vocab], verify mode only */
    sampler sampler;       /* sampling scratch, sized by the vocabulary */

    decode_slot *slots; /* capture sizes 1, 2, 4, 8, 16, 24, ... max_num_seqs */
    int n_slots;
    uint64_t generation; /* bumped whenever a buffer a recording binds changes */

    engine_logits_fn logits_fn;
    void *logits_user;
    engine_stats stats;
};

/* Pick the sequences and token counts of the next step (scheduler.c). */
void sched_plan_step(engine *e, sched_batch *b);
/* Give a sequence's blocks back; it will be recomputed from scratch. */
void sched_preempt(engine *e, engine_seq *s);

/* --- step.c: inputs, graph, eager run ----------------------------------- */
/* Elements (i32) of step input i (an IN_* index) for a step shape (T, S, L). */
int64_t step_input_elems(const engine *e, int i, int64_t T, int64_t S, int64_t L);
enc_status step_inputs_alloc(engine *e, step_inputs *in, int64_t n_tokens, int64_t n_seqs,
                             int64_t n_logits);
void step_inputs_free(engine *e, step_inputs *in);
/* Lay the batch out in the host input arrays. */
void step_fill_inputs(engine *e, const sched_batch *b);
/* Copy the first (T, S, L) host input rows to the device buffers. */
enc_status step_write_inputs(engine *e, step_inputs *in, int64_t T, int64_t S, int64_t L);
/* Build and plan the step graph for shape (T, S, L) bound to `in` (NULL:
 * unbound, to size the arena): one forward pass, its logits in io->logits. */
enc_status step_build(engine *e, graph *g, const step_inputs *in, int64_t T, int64_t S,
                      int64_t L, qwen3_step_io *io);
/* Build and plan the multi-step decode graph of P rows bound to `in`:
 * e->multi_steps forward passes, each followed by the pick (the device
 * sampler reading sb when e->device_sampler, else argmax) and decode_advance
 * on the device; pass k's ids go to out_ids at [k * P]. */
enc_status step_build_multi(engine *e, graph *g, const step_inputs *in, backend_buffer *out_ids,
                            const step_sample_bufs *sb, int64_t P);
/* Read bytes of a device buffer back to the host, counted in
 * stats.n_bytes_read: every read of the engine goes through here. */
enc_status step_read(engine *e, backend_buffer *buf, size_t offset, void *dst, size_t bytes);
/* Run the batch eagerly; its logits land in e->logits. */
enc_status step_run_eager(engine *e, const sched_batch *b);
/* Plan the largest steps (eager, the largest decode slot and its multi-step
 * graph) and allocate the graph bookkeeping arena and the step arena. */
enc_status step_arena_init(engine *e);
void step_arena_free(engine *e);

/* --- decode_slots.c: capture and replay of decode steps ------------------ */
enc_status decode_slots_init(engine *e);
void decode_slots_free(engine *e);
/* True when every sequence of the batch computes one token and samples. */
bool decode_batch(const sched_batch *b);
/* Run a decode batch through its slot (eager while cold, record when warm,
 * replay when captured); its logits land in e->logits. */
enc_status decode_slots_run(engine *e, const sched_batch *b);
/* Take the batch for multi-step decode when it can run K steps in one
 * replay (K = cfg.decode_steps >= 2, or 1 when a sequence is constrained:
 * its next mask needs the token before; every sequence sampled on the
 * device: with the device sampler any request, without it plain greedy
 * unconstrained ones, sampler_is_plain_greedy, and no host_pick; room for
 * K - 1 more tokens; its slot not cold; free blocks for all of them):
 * reserve, in every sequence's block table, the KV blocks those K steps
 * write, set e->multi_steps = K and return true. Otherwise reserve nothing
 * and return false. */
bool decode_multi_reserve(engine *e, const sched_batch *b);
/* Run a batch decode_multi_reserve took: lay out its inputs (step_fill_inputs,
 * after the reservation, so that the block tables the device's
 * decode_advance reads hold the reserved blocks; asserted), then K steps in
 * one replay, the chosen ids in e->multi_ids[k * e->multi_rows + i] (and,
 * when a sequence asked for logprobs, their records in e->multi_lp). */
enc_status decode_slots_run_multi(engine *e, const sched_batch *b);

#endif
