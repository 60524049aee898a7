/* step.c - the inputs and the graph of one engine step, and running it
 * eagerly.
 *
 * The host arrays hold the step inputs laid out from the scheduler's batch:
 *   input_ids[T] positions[T] slot_mapping[T]   (T tokens, sequence by sequence)
 *   block_tables[S, max_blocks_per_seq] seq_lens[S] query_start_loc[S + 1]
 *   logits_indices[L]                          (rows of T whose logits are wanted)
 * and are copied to a step_inputs set of device buffers before the step. */
#include <string.h>

#include "base/log.h"
#include "engine/engine_impl.h"

static const char *const step__input_names[IN_COUNT] = {
    "input_ids", "positions", "slot_mapping", "block_tables", "seq_lens", "query_start_loc",
    "logits_indices",
};

/* Elements of input i for a step shape. */
static int64_t step__elems(const engine *e, int i, int64_t T, int64_t S, int64_t L)
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

enc_status step_inputs_alloc(engine *e, step_inputs *in, int64_t T, int64_t S, int64_t L)
{
    memset(in, 0, sizeof *in);
    for (int i = 0; i < IN_COUNT; i++)
        ENC_TRY(backend_buffer_alloc(e->be, (size_t)step__elems(e, i, T, S, L) * sizeof(int32_t),
                                     step__input_names[i], &in->buf[i]));
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
        size_t bytes = (size_t)step__elems(e, i, T, S, L) * sizeof(int32_t);
        if (bytes) ENC_TRY(backend_buffer_write(e->be, in->buf[i], 0, e->host[i], bytes));
    }
    return ENC_OK;
}

enc_status step_build(engine *e, graph *g, const step_inputs *in, int64_t T, int64_t S, int64_t L,
                      qwen3_step_io *io)
{
    arena_reset(&e->graph_arena);
    qwen3_step_shape shape = {T, S, L, e->max_blocks_per_seq};
    ENC_TRY(graph_init(g, &e->graph_arena, qwen3_graph_nodes_max(e->model),
                       qwen3_graph_tensors_max(e->model)));
    ENC_TRY(qwen3_build_step(e->model, &e->kv, g, &shape, io));
    graph_tensor *t[IN_COUNT] = {io->input_ids, io->positions, io->slot_mapping, io->block_tables,
                                 io->seq_lens, io->query_start_loc, io->logits_indices};
    for (int i = 0; i < IN_COUNT; i++) graph_bind(t[i], in ? in->buf[i] : NULL, 0);
    ENC_TRY(graph_plan(g, e->arena_buf));
    return e->arena_buf ? step_fit_arena(e, g) : ENC_OK;
}

enc_status step_fit_arena(engine *e, graph *g)
{
    if (g->arena_size <= e->arena_size) return ENC_OK;
    size_t size = g->arena_size + g->arena_size / 4;
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

enc_status step_plan_arena(engine *e, size_t *size)
{
    graph g;
    qwen3_step_io io;
    int64_t shapes[2][3] = {
        {e->cfg.max_num_batched_tokens, e->cfg.max_num_seqs, e->logits_rows_max},
        {e->cfg.max_num_seqs, e->cfg.max_num_seqs, e->cfg.max_num_seqs}, /* the largest decode slot */
    };
    *size = 0;
    for (int i = 0; i < 2; i++) {
        ENC_TRY(step_build(e, &g, NULL, shapes[i][0], shapes[i][1], shapes[i][2], &io));
        if (g.arena_size > *size) *size = g.arena_size;
    }
    if (e->cfg.decode_steps > 1) {
        ENC_TRY(decode_build_multi(e, &g, NULL, NULL, e->cfg.max_num_seqs));
        if (g.arena_size > *size) *size = g.arena_size;
    }
    *size += *size / 8; /* headroom: first fit is not monotone in the shape */
    return ENC_OK;
}

enc_status step_run_eager(engine *e, const sched_batch *b)
{
    graph g;
    qwen3_step_io io;
    ENC_TRY(step_write_inputs(e, &e->eager_in, b->n_tokens, b->n_entries, b->n_logits));
    ENC_TRY(step_build(e, &g, &e->eager_in, b->n_tokens, b->n_entries, b->n_logits, &io));
    size_t bytes = (size_t)(b->n_logits * e->model->cfg.vocab_size) * sizeof(float);
    if (bytes) ENC_TRY(backend_expect_read(e->be, io.logits->buffer, io.logits->offset, bytes));
    ENC_TRY(backend_graph_compute(e->be, &g));
    e->stats.n_eager_steps++;
    if (b->n_logits == 0) return ENC_OK;
    return backend_buffer_read(e->be, io.logits->buffer, io.logits->offset, e->logits, bytes);
}
