/* decode_slots.c - the captured decode step: one slot per padded batch size,
 * recorded once and replayed every later step of that size.
 *
 * A decode batch (every sequence computes one token and samples) of n
 * sequences runs in the slot of the smallest capture size P >= n (1, 2, 4, 8,
 * then multiples of 8 up to max_num_seqs). Rows n..P-1 are padding: token 0
 * at position 0, slot_mapping -1 (no KV written), seq_len 0 (attention
 * yields zeros), and their logits are ignored. Slot states:
 *
 *   cold ──(first decode of this size: run eagerly)──► warm
 *   warm ──(allocate done; record the step with the slot's inputs bound)──► captured
 *   captured ──(every later decode: rewrite all inputs, replay)──► captured
 *
 * Before every replay every input of the slot is rewritten from the batch
 * (DESIGN principle 3). A slot records the engine generation it was built
 * for; when a buffer it binds has changed since, it records again.
 *
 * Multi-step decode: for plain greedy batches (no penalty, no logit bias, no
 * logprobs, min_tokens met: sampler_is_plain_greedy) a slot also records K forward passes
 * in one recording; after each, argmax picks the tokens and decode_advance
 * moves every row to its next token (input id, position, sequence length,
 * and the slot mapping from the block table, whose blocks the engine
 * reserved beforehand). One replay yields K tokens per sequence.
 *
 * With the device sampler (a backend that runs GRAPH_OP_SAMPLE) the pick is
 * the sampler instead of argmax, and every request runs multi-step: before each replay the slot's sample params get one
 * graph_sample_row per sequence (padding rows zero), and the history rows of
 * the penalised sequences their tokens so far; inside the replay the kernel
 * appends each chosen id to the history, so the penalties of step k see the
 * tokens of steps 0..k-1. The host reads back the ids, and the logprobs
 * records of the K steps when a sequence of the batch asked for them.
 *
 * A constrained sequence's token mask (engine_constraint) is written to the
 * slot's sample mask row before the replay, and its row flagged
 * GRAPH_SAMPLE_MASKED; its next mask needs the token the replay chooses, so
 * a batch holding one runs one step per replay (K = 1). Without the device
 * sampler such a batch takes the single-step path and the host sampler
 * applies the mask. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_impl.h"

static int64_t decode__next_size(int64_t size) { return size < 8 ? size * 2 : size + 8; }

enc_status decode_slots_init(engine *e)
{
    int n = 0;
    for (int64_t p = 1; p < e->cfg.max_num_seqs; p = decode__next_size(p)) n++;
    n++; /* max_num_seqs itself */
    e->slots = calloc((size_t)n, sizeof *e->slots);
    if (!e->slots) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "decode slots");
    int64_t p = 1;
    for (int i = 0; i < n; i++, p = decode__next_size(p))
        e->slots[i].size = p < e->cfg.max_num_seqs ? p : e->cfg.max_num_seqs;
    e->n_slots = n;
    return ENC_OK;
}

void decode_slots_free(engine *e)
{
    for (int i = 0; i < e->n_slots; i++) {
        backend_recording_free(e->be, e->slots[i].rec);
        for (int k = 0; k <= ENGINE_MAX_DECODE_STEPS; k++) backend_recording_free(e->be, e->slots[i].rec_multi[k]);
        backend_buffer_free(e->be, e->slots[i].out_ids);
        backend_buffer_free(e->be, e->slots[i].sample.params);
        backend_buffer_free(e->be, e->slots[i].sample.history);
        backend_buffer_free(e->be, e->slots[i].sample.logprobs);
        backend_buffer_free(e->be, e->slots[i].sample.mask);
        step_inputs_free(e, &e->slots[i].in);
    }
    free(e->slots);
    e->slots = NULL;
    e->n_slots = 0;
}

bool decode_batch(const sched_batch *b)
{
    if (b->n_entries == 0 || b->n_tokens != b->n_entries || b->n_logits != b->n_entries) return false;
    for (int i = 0; i < b->n_entries; i++)
        if (b->entries[i].n_new != 1 || !b->entries[i].sample) return false;
    return true;
}

/* What each state holds (asserted where a slot is run):
 *   cold      nothing: no inputs, no recording, no multi-step recording;
 *   warm      its inputs; no recording;
 *   captured  its inputs and a recording, made at slot->generation (stale,
 *             and dropped before use, once e->generation has moved on).
 * A multi-step recording of K steps needs the inputs and out_ids, in any
 * state but cold, made at slot->multi_generation[K] (K = 1: a batch with
 * a constrained sequence). */
static void decode__check_slot(const engine *e, const decode_slot *slot)
{
    ENC_ASSERT((slot->in.buf[0] != NULL) == (slot->state != SLOT_COLD));
    ENC_ASSERT((slot->rec != NULL) == (slot->state == SLOT_CAPTURED));
    ENC_ASSERT(slot->state != SLOT_CAPTURED || slot->generation <= e->generation);
    for (int k = 0; k <= ENGINE_MAX_DECODE_STEPS; k++)
        ENC_ASSERT(!slot->rec_multi[k] || (k >= 1 && k <= e->decode_steps_max && slot->state != SLOT_COLD &&
                                           slot->out_ids && slot->multi_generation[k] <= e->generation));
}

static decode_slot *decode__slot_for(engine *e, int64_t n)
{
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].size >= n) return &e->slots[i];
    return NULL;
}

/* Fill host rows n..P-1 as padding. */
static void decode__pad(engine *e, int64_t n, int64_t P)
{
    int32_t **h = e->host;
    for (int64_t i = n; i < P; i++) {
        h[IN_IDS][i] = 0;
        h[IN_POSITIONS][i] = 0;
        h[IN_SLOTS][i] = -1;
        memset(&h[IN_TABLES][i * e->max_blocks_per_seq], 0, (size_t)e->max_blocks_per_seq * sizeof(int32_t));
        h[IN_LENS][i] = 0;
        h[IN_QSL][i + 1] = (int32_t)(i + 1);
        h[IN_LOGIT_IDX][i] = (int32_t)i;
    }
}

/* Record a planned graph; on failure nothing is kept. */
/* Record graph g; the host reads `bytes` of `result` at `offset` after
 * each replay. */
static enc_status decode__capture(engine *e, const graph *g, backend_buffer *result, size_t offset, size_t bytes,
                                  backend_recording **out)
{
    ENC_TRY(backend_capture_begin(e->be));
    enc_status s = backend_expect_read(e->be, result, offset, bytes);
    if (s == ENC_OK) s = backend_graph_compute(e->be, g);
    backend_recording *rec = NULL;
    enc_status end = backend_capture_end(e->be, &rec);
    if (s != ENC_OK || end != ENC_OK) {
        backend_recording_free(e->be, rec);
        return s != ENC_OK ? s : end;
    }
    *out = rec;
    e->stats.n_captures++;
    return ENC_OK;
}

static enc_status decode__record(engine *e, decode_slot *slot)
{
    graph g;
    qwen3_step_io io;
    int64_t P = slot->size;
    ENC_TRY(step_build(e, &g, &slot->in, P, P, P, &io));
    size_t logits_bytes = (size_t)(P * e->model->cfg.vocab_size) * sizeof(float);
    ENC_TRY(decode__capture(e, &g, e->arena_buf, io.logits->offset, logits_bytes, &slot->rec));
    slot->logits_offset = io.logits->offset;
    slot->generation = e->generation;
    slot->state = SLOT_CAPTURED;
    return ENC_OK;
}

/* Compare the replayed logits with an eager run of the same batch, bit for bit. */
static enc_status decode__verify(engine *e, const sched_batch *b)
{
    int64_t V = e->model->cfg.vocab_size, n = b->n_entries;
    memcpy(e->verify_logits, e->logits, (size_t)(n * V) * sizeof(float));
    ENC_TRY(step_run_eager(e, b));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < V; j++)
            if (memcmp(&e->verify_logits[i * V + j], &e->logits[i * V + j], sizeof(float)))
                return enc_fail(ENC_ERR_INTERNAL,
                                "verify-capture: step %lld, request %lld (position %lld): logit %lld "
                                "is %.9g replayed but %.9g eager",
                                (long long)e->stats.n_steps, (long long)b->entries[i].seq->id,
                                (long long)b->entries[i].seq->n_computed, (long long)j,
                                (double)e->verify_logits[i * V + j], (double)e->logits[i * V + j]);
    e->stats.n_verified_steps++;
    return ENC_OK;
}

/* On error the slot is left in a state that its next run handles, and no
 * recording is half made; e->logits holds nothing usable:
 *   cold      the eager step or the allocation of the inputs failed: still
 *             cold, with no inputs (step_inputs_alloc keeps none), so the
 *             next decode of this size runs eagerly again;
 *   warm      building or recording failed: still warm (decode__capture
 *             keeps nothing), so the next run records again; the arena may
 *             have grown meanwhile, with the generation bumped;
 *   captured  writing the inputs, the replay, the read or (verify mode) the
 *             comparison failed: still captured, with its recording valid
 *             at the current generation. */
enc_status decode_slots_run(engine *e, const sched_batch *b)
{
    int64_t n = b->n_entries;
    decode_slot *slot = decode__slot_for(e, n);
    if (!slot) return enc_fail(ENC_ERR_INTERNAL, "no decode slot for %lld sequences", (long long)n);
    decode__check_slot(e, slot);
    if (slot->state == SLOT_CAPTURED && slot->generation != e->generation) {
        backend_recording_free(e->be, slot->rec); /* stale: it binds buffers that changed */
        slot->rec = NULL;
        slot->state = SLOT_WARM;
    }
    /* from here the recording exists exactly when the slot is captured at the current generation */
    ENC_ASSERT((slot->rec != NULL) == (slot->state == SLOT_CAPTURED && slot->generation == e->generation));
    if (slot->state == SLOT_COLD) {
        ENC_TRY(step_run_eager(e, b));
        ENC_TRY(step_inputs_alloc(e, &slot->in, slot->size, slot->size, slot->size));
        slot->state = SLOT_WARM;
        return ENC_OK;
    }
    if (slot->state == SLOT_WARM) ENC_TRY(decode__record(e, slot));
    decode__pad(e, n, slot->size);
    ENC_TRY(step_write_inputs(e, &slot->in, slot->size, slot->size, slot->size));
    ENC_TRY(backend_replay(e->be, slot->rec));
    e->stats.n_replays++;
    size_t bytes = (size_t)(n * e->model->cfg.vocab_size) * sizeof(float);
    ENC_TRY(step_read(e, e->arena_buf, slot->logits_offset, e->logits, bytes));
    return e->cfg.verify_capture ? decode__verify(e, b) : ENC_OK;
}

/* --- multi-step decode ----------------------------------------------------- */

/* Can the device pick s's next tokens? The device sampler takes every
 * request (and computes logprobs, and applies token masks); argmax
 * alone takes plain greedy unconstrained ones (penalties, a logit bias, unmet
 * min_tokens, logprobs, sampling and masks need the host), unless the last replay chose
 * a masked id. */
static bool decode__device_picks(const engine *e, const engine_seq *s)
{
    if (e->device_sampler) return true;
    return sampler_is_plain_greedy(&s->sampling, s->n_tokens - s->n_prompt) && !s->host_pick &&
           !s->constraint.fill_mask;
}

/* The decode steps one replay of the batch runs: 1 when a sequence is
 * constrained, else cfg.decode_steps. */
static int64_t decode__steps(const engine *e, const sched_batch *b)
{
    for (int i = 0; i < b->n_entries; i++)
        if (b->entries[i].seq->constraint.fill_mask) return 1;
    return e->cfg.decode_steps;
}

bool decode_multi_reserve(engine *e, const sched_batch *b)
{
    /* one step per replay goes this way too when the device samples: the
     * host then reads ids, not logits rows */
    if (e->cfg.eager || e->cfg.verify_capture || (e->cfg.decode_steps < 2 && !e->device_sampler) ||
        !decode_batch(b))
        return false;
    int64_t K = decode__steps(e, b);
    decode_slot *slot = decode__slot_for(e, b->n_entries);
    if (!slot || slot->state == SLOT_COLD) return false; /* the first decode of a size runs eagerly */
    for (int i = 0; i < b->n_entries; i++) {
        const engine_seq *s = b->entries[i].seq;
        bool prompt_rows = s->prompt_logits && s->n_logits_sent < s->n_prompt; /* still owed */
        if (!decode__device_picks(e, s) || prompt_rows ||
            s->n_tokens + K - 1 > e->cfg.max_model_len)
            return false;
    }
    int32_t need = 0;
    for (int i = 0; i < b->n_entries; i++) {
        const engine_seq *s = b->entries[i].seq;
        need += kv_blocks_needed(&e->kv.pool, &s->table, s->n_tokens + K - 1);
    }
    if (need > e->kv.pool.n_free) return false;
    for (int i = 0; i < b->n_entries; i++) {
        engine_seq *s = b->entries[i].seq;
        ENC_ASSERT(kv_block_table_reserve(&e->kv.pool, &s->table, s->n_tokens + K - 1) == ENC_OK);
    }
    e->multi_steps = K;
    return true;
}

static enc_status decode__record_multi(engine *e, decode_slot *slot)
{
    int64_t P = slot->size, K = e->multi_steps;
    graph g;
    if (!slot->out_ids)
        ENC_TRY(backend_buffer_alloc(e->be, (size_t)(e->decode_steps_max * P) * sizeof(int32_t), "multi-step ids",
                                     &slot->out_ids));
    if (e->device_sampler && !slot->sample.params)
        ENC_TRY(backend_buffer_alloc(e->be, (size_t)P * sizeof(graph_sample_row), "sample params",
                                     &slot->sample.params));
    if (e->device_sampler && !slot->sample.history)
        ENC_TRY(backend_buffer_alloc(e->be, (size_t)(P * e->cfg.max_model_len) * sizeof(int32_t), "sample history",
                                     &slot->sample.history));
    if (e->device_sampler && !slot->sample.logprobs)
        ENC_TRY(backend_buffer_alloc(e->be, (size_t)(e->decode_steps_max * P) * sizeof(graph_sample_logprobs),
                                     "sample logprobs", &slot->sample.logprobs));
    size_t mask_bytes = (size_t)(P * GRAPH_SAMPLE_MASK_WORDS(e->model->cfg.vocab_size)) * sizeof(uint32_t);
    if (e->device_sampler && !slot->sample.mask)
        ENC_TRY(backend_buffer_alloc(e->be, mask_bytes, "sample mask", &slot->sample.mask));
    ENC_TRY(step_build_multi(e, &g, &slot->in, slot->out_ids, &slot->sample, P));
    ENC_TRY(decode__capture(e, &g, slot->out_ids, 0, (size_t)(K * P) * sizeof(int32_t), &slot->rec_multi[K]));
    slot->multi_generation[K] = e->generation;
    return ENC_OK;
}

/* The device sampler's row of a sequence (graph/sample_row.h). */
static graph_sample_row decode__sample_row(const engine *e, const engine_seq *s)
{
    const engine_sampling *sp = &s->sampling;
    const qwen3_config *mc = &e->model->cfg;
    graph_sample_row r = {
        .temperature = sp->temperature,
        .top_p = sp->top_p,
        .min_p = sp->min_p,
        .repetition_penalty = sp->repetition_penalty,
        .presence_penalty = sp->presence_penalty,
        .frequency_penalty = sp->frequency_penalty,
        .seed = sp->seed,
        .top_k = sp->top_k > INT32_MAX ? INT32_MAX : (int32_t)sp->top_k,
        .n_prompt = (int32_t)s->n_prompt,
        .min_tokens = (int32_t)sp->min_tokens,
        .n_sample = (int32_t)e->cfg.sample_vocab,
        .flags = (sampler_penalties_on(sp) ? GRAPH_SAMPLE_PENALTIES : 0) | (sp->logprobs ? GRAPH_SAMPLE_LOGPROBS : 0) |
                 (s->constraint.fill_mask ? GRAPH_SAMPLE_MASKED : 0),
        .n_top = sp->top_logprobs,
    };
    _Static_assert(QWEN3_MAX_EOS + ENGINE_MAX_STOP_IDS <= GRAPH_SAMPLE_MAX_MASK, "every EOS and stop id fits a row");
    /* min_tokens holds off every EOS, under ignore_eos too (vLLM's all_stop_token_ids) */
    for (int i = 0; i < mc->n_eos; i++)
        r.mask_ids[r.n_mask++] = mc->eos_token_ids[i];
    for (int i = 0; i < s->n_stop_ids; i++) r.mask_ids[r.n_mask++] = s->stop_ids[i];
    r.n_bias = sp->n_logit_bias;
    if (r.n_bias) memcpy(r.bias, sp->logit_bias, (size_t)r.n_bias * sizeof *r.bias);
    return r;
}

/* Rewrite the device sampler's inputs of the slot for the batch: every row's
 * parameters (padding rows zero), the history of the penalised rows, and
 * the token mask of the constrained ones. */
static enc_status decode__write_sampling(engine *e, decode_slot *slot, const sched_batch *b)
{
    int64_t P = slot->size, H = e->cfg.max_model_len;
    size_t mask_row = (size_t)GRAPH_SAMPLE_MASK_WORDS(e->model->cfg.vocab_size) * sizeof(uint32_t);
    memset(e->sample_rows, 0, (size_t)P * sizeof *e->sample_rows);
    for (int i = 0; i < b->n_entries; i++) {
        const engine_seq *s = b->entries[i].seq;
        e->sample_rows[i] = decode__sample_row(e, s);
        if (e->sample_rows[i].flags & GRAPH_SAMPLE_PENALTIES)
            ENC_TRY(backend_buffer_write(e->be, slot->sample.history, (size_t)(i * H) * sizeof(int32_t), s->tokens,
                                         (size_t)s->n_tokens * sizeof(int32_t)));
        if (e->sample_rows[i].flags & GRAPH_SAMPLE_MASKED)
            ENC_TRY(backend_buffer_write(e->be, slot->sample.mask, (size_t)i * mask_row, s->allowed, mask_row));
    }
    return backend_buffer_write(e->be, slot->sample.params, 0, e->sample_rows, (size_t)P * sizeof *e->sample_rows);
}

/* On error the slot's multi-step recording is either made at the current
 * generation or absent (decode__capture keeps nothing), out_ids stays with
 * the slot once allocated, and the reserved blocks stay with the sequences
 * (engine_step says what that leaves). */
enc_status decode_slots_run_multi(engine *e, const sched_batch *b)
{
    int64_t n = b->n_entries, K = e->multi_steps;
    decode_slot *slot = decode__slot_for(e, n);
    ENC_ASSERT(slot && slot->state != SLOT_COLD); /* decode_multi_reserve took the batch */
    decode__check_slot(e, slot);
    for (int i = 0; i < n; i++) { /* and reserved the blocks of the K steps */
        const engine_seq *s = b->entries[i].seq;
        ENC_ASSERT(kv_blocks_needed(&e->kv.pool, &s->table, s->n_tokens + K - 1) == 0);
    }
    step_fill_inputs(e, b); /* the block tables now hold every block decode_advance reads */
    if (slot->rec_multi[K] && slot->multi_generation[K] != e->generation) {
        backend_recording_free(e->be, slot->rec_multi[K]);
        slot->rec_multi[K] = NULL;
    }
    if (!slot->rec_multi[K]) ENC_TRY(decode__record_multi(e, slot));
    decode__pad(e, n, slot->size);
    ENC_TRY(step_write_inputs(e, &slot->in, slot->size, slot->size, slot->size));
    if (e->device_sampler) ENC_TRY(decode__write_sampling(e, slot, b));
    ENC_TRY(backend_replay(e->be, slot->rec_multi[K]));
    e->stats.n_multi_round_trips++;
    e->multi_rows = slot->size;
    bool want_lp = false;
    for (int i = 0; i < n; i++) want_lp |= b->entries[i].seq->sampling.logprobs;
    if (want_lp) /* only when asked: K x P records of 172 bytes */
        ENC_TRY(step_read(e, slot->sample.logprobs, 0, e->multi_lp, (size_t)(K * slot->size) * sizeof *e->multi_lp));
    return step_read(e, slot->out_ids, 0, e->multi_ids, (size_t)(K * slot->size) * sizeof(int32_t));
}
