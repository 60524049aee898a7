/* step.c - the inputs and the graph of an engine step, and running it
 * eagerly. Every step graph is built and planned here (step__build): the
 * one-pass graph of eager steps and decode slots, and the K-pass graph of
 * multi-step decode; so is the step arena that holds their intermediates.
 * step.c calls nothing else of the engine.
 *
 * The host arrays hold the step inputs laid out from the scheduler's batch:
 *   input_ids[T] positions[T] slot_mapping[T]   (T tokens, sequence by sequence)
 *   block_tables[S, max_blocks_per_seq] seq_lens[S] query_start_loc[S + 1]
 *   logits_indices[L]                          (rows of T whose logits are wanted)
 * and are copied to a step_inputs set of device buffers before the step. */
#include <stddef.h>
#include <string.h>

#include "base/log.h"
#include "engine/engine_impl.h"
#include "graph/sample_row.h"

/* Each step input by IN_* index: its buffer's name, and where the builder
 * leaves its tensor in qwen3_step_io. The binding goes through this table, so
 * the IN_* order is tied to the struct's fields by name, not by convention. */
static const struct {
    const char *name;
    size_t io_offset; /* of a graph_tensor * in qwen3_step_io */
} step__inputs[IN_COUNT] = {
    [IN_IDS] = {"input_ids", offsetof(qwen3_step_io, input_ids)},
    [IN_POSITIONS] = {"positions", offsetof(qwen3_step_io, positions)},
    [IN_SLOTS] = {"slot_mapping", offsetof(qwen3_step_io, slot_mapping)},
    [IN_TABLES] = {"block_tables", offsetof(qwen3_step_io, block_tables)},
    [IN_LENS] = {"seq_lens", offsetof(qwen3_step_io, seq_lens)},
    [IN_QSL] = {"query_start_loc", offsetof(qwen3_step_io, query_start_loc)},
    [IN_LOGIT_IDX] = {"logits_indices", offsetof(qwen3_step_io, logits_indices)},
};
/* qwen3_step_io holds the IN_COUNT input tensors, then the logits: an input
 * added there without an IN_* index (or the other way round) fails here. */
_Static_assert(offsetof(qwen3_step_io, logits) == IN_COUNT * sizeof(graph_tensor *),
               "every input tensor of qwen3_step_io needs an IN_* index and a row of step__inputs");

static graph_tensor *step__io_input(const qwen3_step_io *io, int i)
{
    return *(graph_tensor *const *)((const char *)io + step__inputs[i].io_offset);
}

int64_t step_input_elems(const engine *e, int i, int64_t T, int64_t S, int64_t L)
{
    switch (i) {
    case IN_IDS:
    case IN_POSITIONS:
    case IN_SLOTS: return T;
    case IN_TABLES: return S * e->max_blocks_per_seq;
    case IN_LENS: return S;
    case IN_QSL: return S + 1;
    default: return L;
    }
}

/* On failure the buffers allocated so far are freed and `in` is left empty. */
enc_status step_inputs_alloc(engine *e, step_inputs *in, int64_t T, int64_t S, int64_t L)
{
    memset(in, 0, sizeof *in);
    for (int i = 0; i < IN_COUNT; i++) {
        enc_status s = backend_buffer_alloc(e->be, (size_t)step_input_elems(e, i, T, S, L) * sizeof(int32_t),
                                            step__inputs[i].name, &in->buf[i]);
        if (s != ENC_OK) {
            step_inputs_free(e, in);
            return s;
        }
    }
    in->n_tokens = T;
    in->n_seqs = S;
    in->n_logits = L;
    return ENC_OK;
}

void step_inputs_free(engine *e, step_inputs *in)
{
    for (int i = 0; i < IN_COUNT; i++) backend_buffer_free(e->be, in->buf[i]);
    memset(in, 0, sizeof *in);
}

void step_fill_inputs(engine *e, const sched_batch *b)
{
    int64_t t = 0, W = e->max_blocks_per_seq;
    int32_t **h = e->host;
    h[IN_QSL][0] = 0;
    for (int i = 0; i < b->n_entries; i++) {
        const sched_entry *en = &b->entries[i];
        const engine_seq *s = en->seq;
        for (int64_t j = 0; j < en->n_new; j++, t++) {
            int64_t pos = s->n_computed + j;
            h[IN_IDS][t] = s->tokens[pos];
            h[IN_POSITIONS][t] = (int32_t)pos;
            h[IN_SLOTS][t] = kv_slot(&e->kv.pool, &s->table, pos);
        }
        int32_t *row = &h[IN_TABLES][i * W];
        memcpy(row, s->table.blocks, (size_t)s->table.n_blocks * sizeof *row);
        memset(row + s->table.n_blocks, 0, (size_t)(W - s->table.n_blocks) * sizeof *row);
        h[IN_LENS][i] = (int32_t)(s->n_computed + en->n_new);
        h[IN_QSL][i + 1] = (int32_t)t;
        for (int64_t r = 0; r < en->n_logits; r++) /* the entry's last n_logits tokens */
            h[IN_LOGIT_IDX][en->logits_row + r] = (int32_t)(t - en->n_logits + r);
    }
}

enc_status step_write_inputs(engine *e, step_inputs *in, int64_t T, int64_t S, int64_t L)
{
    if (T > in->n_tokens || S > in->n_seqs || L > in->n_logits)
        return enc_fail(ENC_ERR_INTERNAL, "step of (%lld, %lld, %lld) exceeds its inputs' (%lld, %lld, %lld)",
                        (long long)T, (long long)S, (long long)L, (long long)in->n_tokens,
                        (long long)in->n_seqs, (long long)in->n_logits);
    for (int i = 0; i < IN_COUNT; i++) {
        size_t bytes = (size_t)step_input_elems(e, i, T, S, L) * sizeof(int32_t);
        if (bytes) ENC_TRY(backend_buffer_write(e->be, in->buf[i], 0, e->host[i], bytes));
    }
    return ENC_OK;
}

/* The step arena's headroom over the plans it must hold (size += size / DIV).
 * Neither fraction is derived, and none could be: graph_plan's first fit
 * over live ranges is not monotone in the shape and has no useful worst-case
 * bound, so a smaller step may need more than the largest ones planned at
 * creation. They are margins chosen by judgement, and step__fit_arena
 * catches any step that still does not fit:
 *   at creation, 1/8 over the largest plans, so that small excesses of
 *     smaller shapes fit the first arena;
 *   on growth, 1/4 over the plan that did not fit: a growth makes every
 *     recording again, so it buys room for the next near miss rather than
 *     the exact shortfall. */
enum { STEP__ARENA_HEADROOM_DIV = 8, STEP__ARENA_GROWTH_DIV = 4 };

/* Make the step arena hold a planned graph: when it does not (first fit is
 * not monotone in the shape, so the plan made at creation may fall short),
 * grow it, bump the generation so that recordings bound to the old arena are
 * made again, and plan g into the new one.
 *
 * On error (no buffer for the bigger arena) the arena, its size and the
 * generation are unchanged, and g stays planned into the old arena, which is
 * too small for it: g must not run (every caller returns the error). Once
 * the bigger buffer exists, the old one is freed and the generation bumped
 * before g is planned again, so no later failure leaves a recording bound to
 * a freed arena at the current generation. */
static enc_status step__fit_arena(engine *e, graph *g)
{
    if (g->arena_size <= e->arena_size) return ENC_OK;
    size_t size = g->arena_size + g->arena_size / STEP__ARENA_GROWTH_DIV;
    backend_buffer *bigger;
    ENC_TRY(backend_buffer_alloc(e->be, size, "step arena", &bigger));
    enc_log_info("engine: step arena grows from %zu to %zu bytes; recordings will be made again",
                 e->arena_size, size);
    backend_buffer_free(e->be, e->arena_buf);
    e->arena_buf = bigger;
    e->arena_size = size;
    e->generation++; /* every recording bound to the old arena is stale */
    return graph_plan(g, e->arena_buf);
}

/* What each device step of a multi-step graph adds after its forward pass:
 * the pick (argmax, or the device sampler) and decode_advance nodes; the
 * picked ids and the bound "multi-step ids" row (decode_advance writes into
 * the latter, no tensor of its own), and the sampler's scratch and its
 * bound logprobs records. The sampler also reads three bound inputs shared
 * by every step: its parameters, the token history and the token masks. */
enum { STEP__DEVICE_STEP_NODES = 2, STEP__DEVICE_STEP_TENSORS = 2 };
enum { STEP__SAMPLE_STEP_TENSORS = 2, STEP__SAMPLE_INPUT_TENSORS = 3 }; /* scratch, logprobs; params, history, mask */

/* The tensors a K-step graph adds to its forward passes. */
static int step__device_tensors(const engine *e, int K)
{
    if (!K) return 0;
    int n = K * STEP__DEVICE_STEP_TENSORS;
    return e->device_sampler ? n + K * STEP__SAMPLE_STEP_TENSORS + STEP__SAMPLE_INPUT_TENSORS : n;
}

/* The sampler's inputs of a K-step graph of P rows, bound to the slot's
 * buffers (NULL: unbound, to size the arena). */
static void step__sample_inputs(engine *e, graph *g, int64_t P, const step_sample_bufs *sb, graph_tensor **params,
                                graph_tensor **history, graph_tensor **mask)
{
    *params = graph_tensor_2d(g, GRAPH_INPUT, ENC_I32, P, GRAPH_SAMPLE_ROW_WORDS, "sample params");
    *history = graph_tensor_2d(g, GRAPH_INPUT, ENC_I32, P, e->cfg.max_model_len, "sample history");
    *mask = graph_tensor_2d(g, GRAPH_INPUT, ENC_I32, P, GRAPH_SAMPLE_MASK_WORDS(e->model->cfg.vocab_size),
                            "sample mask");
    if (*params) graph_bind(*params, sb ? sb->params : NULL, 0);
    if (*history) graph_bind(*history, sb ? sb->history : NULL, 0);
    if (*mask) graph_bind(*mask, sb ? sb->mask : NULL, 0);
}

/* The ids device step k of P rows picks from io->logits: the device sampler
 * when the backend has it (its logprobs records bound at step k of
 * sb->logprobs), else the argmax. */
static graph_tensor *step__pick(engine *e, graph *g, qwen3_step_io *io, graph_tensor *const sample_in[3],
                                const step_sample_bufs *sb, int64_t k)
{
    if (!e->device_sampler) return graph_argmax(g, io->logits);
    int64_t P = io->logits->shape[0];
    graph_tensor *lp = graph_tensor_2d(g, GRAPH_INPUT, ENC_I32, P, GRAPH_SAMPLE_LP_WORDS, "sample logprobs");
    if (lp) graph_bind(lp, sb ? sb->logprobs : NULL, (size_t)(k * P) * sizeof(graph_sample_logprobs));
    return graph_sample(g, io->logits, sample_in[0], io->positions, sample_in[1], lp, sample_in[2]);
}

/* Build and plan the graph of a step of shape (T, S, L) bound to `in` (NULL:
 * unbound, to size the arena). n_device_steps 0: one forward pass whose
 * logits the host reads (io->logits). n_device_steps K >= 1 (a decode shape,
 * T = S = L = P): K forward passes over the same inputs, each followed by
 * argmax and decode_advance on the device, pass k's ids bound to out_ids at
 * [k * P] (NULL with `in`). When the engine has an arena, the plan is fitted
 * to it (step__fit_arena). */
static enc_status step__build(engine *e, graph *g, const step_inputs *in, int64_t T, int64_t S,
                              int64_t L, int64_t n_device_steps, backend_buffer *out_ids,
                              const step_sample_bufs *sb, qwen3_step_io *io)
{
    int K = (int)n_device_steps, n_passes = K ? K : 1;
    qwen3_step_shape shape = {T, S, L, e->max_blocks_per_seq};
    arena_reset(&e->graph_arena);
    ENC_TRY(graph_init(g, &e->graph_arena,
                       qwen3_graph_n_nodes(e->model, n_passes) + K * STEP__DEVICE_STEP_NODES,
                       qwen3_graph_n_tensors(e->model, n_passes) + step__device_tensors(e, K)));
    qwen3_step_inputs(g, &shape, io);
    for (int i = 0; i < IN_COUNT; i++) graph_bind(step__io_input(io, i), in ? in->buf[i] : NULL, 0);
    graph_tensor *sample_in[3] = {NULL, NULL, NULL}; /* params, history, mask */
    if (K && e->device_sampler) step__sample_inputs(e, g, T, sb, &sample_in[0], &sample_in[1], &sample_in[2]);
    for (int k = 0; k < n_passes; k++) {
        ENC_TRY(qwen3_build_forward(e->model, &e->kv, g, io));
        if (!K) continue;
        graph_tensor *ids = graph_tensor_1d(g, GRAPH_INPUT, ENC_I32, T, "multi-step ids");
        if (ids) graph_bind(ids, out_ids, (size_t)(k * T) * sizeof(int32_t));
        graph_decode_advance(g, step__pick(e, g, io, sample_in, sb, k), io->input_ids, io->positions,
                             io->seq_lens, io->slot_mapping, io->block_tables, e->cfg.block_size,
                             ids);
    }
    ENC_TRY(graph_plan(g, e->arena_buf));
    ENC_ASSERT(g->n_nodes == g->n_nodes_max && g->n_tensors == g->n_tensors_max); /* the counts are exact */
    return e->arena_buf ? step__fit_arena(e, g) : ENC_OK;
}

enc_status step_build(engine *e, graph *g, const step_inputs *in, int64_t T, int64_t S, int64_t L,
                      qwen3_step_io *io)
{
    return step__build(e, g, in, T, S, L, 0, NULL, NULL, io);
}

enc_status step_build_multi(engine *e, graph *g, const step_inputs *in, backend_buffer *out_ids,
                            const step_sample_bufs *sb, int64_t P)
{
    qwen3_step_io io;
    return step__build(e, g, in, P, P, P, e->multi_steps, out_ids, sb, &io);
}

/* The arena bytes the largest steps need: the largest eager step, the
 * largest decode slot, and its multi-step graph when multi-step decode is on
 * or the device samples (one step per replay then takes that graph too). */
static enc_status step__plan_arena(engine *e, size_t *size)
{
    graph g;
    qwen3_step_io io;
    int64_t S = e->cfg.max_num_seqs;
    int64_t shapes[3][4] = {
        {e->cfg.max_num_batched_tokens, S, e->logits_rows_max, 0},
        {S, S, S, 0},                   /* the largest decode slot */
        {S, S, S, e->decode_steps_max}, /* its multi-step graph */
    };
    int n_shapes = e->decode_steps_max > 1 || e->device_sampler ? 3 : 2;
    if (e->cfg.pooling) n_shapes = 1; /* a pooling engine runs prefill steps only */
    *size = 0;
    for (int i = 0; i < n_shapes; i++) {
        ENC_TRY(step__build(e, &g, NULL, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                            NULL, NULL, &io));
        if (g.arena_size > *size) *size = g.arena_size;
    }
    *size += *size / STEP__ARENA_HEADROOM_DIV;
    return ENC_OK;
}

enum { STEP__HOST_BYTES_PER_TENSOR = 512, STEP__HOST_BYTES_PER_NODE = 256 };
_Static_assert(sizeof(graph_tensor) + 63 + sizeof(graph_tensor *) <= STEP__HOST_BYTES_PER_TENSOR &&
                   sizeof(graph_node) <= STEP__HOST_BYTES_PER_NODE,
               "the graph's host bookkeeping fits the bytes budgeted per tensor and node");

/* Plan the largest steps once; their arena holds every smaller step's too. */
enc_status step_arena_init(engine *e)
{
    /* host bytes per tensor and node, with room to spare: a graph_tensor
     * (64-byte aligned in the arena) and its pointer; a graph_node. K + 1
     * passes cover the multi-step graph (K passes and their device steps)
     * and the one-pass graphs. */
    size_t per_pass = (size_t)qwen3_graph_n_tensors(e->model, 1) * STEP__HOST_BYTES_PER_TENSOR +
                      (size_t)qwen3_graph_n_nodes(e->model, 1) * STEP__HOST_BYTES_PER_NODE;
    ENC_TRY(arena_init(&e->graph_arena, per_pass * (size_t)(e->decode_steps_max + 1) + (1 << 16)));
    ENC_TRY(step__plan_arena(e, &e->arena_size));
    return backend_buffer_alloc(e->be, e->arena_size, "step arena", &e->arena_buf);
}

void step_arena_free(engine *e)
{
    if (e->be) backend_buffer_free(e->be, e->arena_buf);
    e->arena_buf = NULL;
    e->arena_size = 0;
    arena_free(&e->graph_arena);
}

enc_status step_read(engine *e, backend_buffer *buf, size_t offset, void *dst, size_t bytes)
{
    ENC_TRY(backend_buffer_read(e->be, buf, offset, dst, bytes));
    e->stats.n_bytes_read += (int64_t)bytes;
    return ENC_OK;
}

enc_status step_run_eager(engine *e, const sched_batch *b)
{
    graph g;
    qwen3_step_io io;
    ENC_TRY(step_write_inputs(e, &e->eager_in, b->n_tokens, b->n_entries, b->n_logits));
    ENC_TRY(step_build(e, &g, &e->eager_in, b->n_tokens, b->n_entries, b->n_logits, &io));
    size_t bytes = (size_t)(b->n_logits * e->out_width) * sizeof(float);
    if (bytes) ENC_TRY(backend_expect_read(e->be, io.logits->buffer, io.logits->offset, bytes));
    ENC_TRY(backend_graph_compute(e->be, &g));
    e->stats.n_eager_steps++;
    if (b->n_logits == 0) return ENC_OK;
    return step_read(e, io.logits->buffer, io.logits->offset, e->logits, bytes);
}
