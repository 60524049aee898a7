/* scheduler.c - deciding what one engine step computes.
 *
 * Continuous batching under a token budget (max_num_batched_tokens) and a
 * sequence cap (max_num_seqs), first come first served:
 *   1. every running sequence, oldest first: one token if it is decoding,
 *      else the next chunk of its prompt (chunked prefill);
 *   2. then waiting sequences, oldest first, while budget, sequence slots and
 *      KV blocks last. A waiting sequence that does not fit stops the queue
 *      (no overtaking).
 * When a running sequence cannot get the block it needs, the newest running
 * sequence is preempted (its block references dropped, recomputed later).
 *
 * Prefix caching: a sequence being admitted (new, or preempted and now
 * recomputed) first takes the longest run of cached full blocks equal to its
 * first tokens and starts computing after them. The run stops short of the
 * last token, whose logits pick the next token, and covers whole blocks only,
 * so the first token computed lands in a fresh block the sequence holds
 * alone: a shared block is never written. A prompt_logits request takes no
 * hit (it wants every position's logits). */
#include "engine/engine_impl.h"

void sched_preempt(engine *e, engine_seq *s)
{
    kv_block_table_release(&e->kv.pool, &s->table);
    s->n_computed = 0;
    s->state = SEQ_WAITING;
    e->stats.n_preemptions++;
}

/* The newest running sequence not yet in the batch. */
static engine_seq *sched__newest_running(engine *e)
{
    for (int64_t i = e->n_seqs - 1; i >= 0; i--)
        if (e->seqs[i]->state == SEQ_RUNNING) return e->seqs[i];
    return NULL;
}

/* How many of a sequence's remaining tokens fit the budget and the logits
 * rows left; 0 means it sits this step out. */
static int64_t sched__chunk(const engine *e, const engine_seq *s, int64_t budget, int64_t rows)
{
    int64_t n = s->n_tokens - s->n_computed;
    if (n > budget) n = budget;
    int64_t rows_left = e->logits_rows_max - rows;
    if (s->prompt_logits && n > rows_left) n = rows_left;
    if (!s->prompt_logits && rows_left < 1) n = 0;
    return n;
}

/* Logits rows an entry gets: one per computed token for a prompt_logits
 * request (the step delivers those of prompt positions), else one row, the
 * last token's, when it samples. */
static void sched__add(engine *e, sched_batch *b, engine_seq *s, int64_t n_new)
{
    const kv_pool *p = &e->kv.pool;
    int32_t first = s->table.blocks[s->n_computed / p->block_size];
    /* the first token computed must land in a block no one else holds or may take */
    ENC_ASSERT(p->refcount[first] == 1 && !(p->prefix && p->prefix->cached[first]));
    sched_entry *en = &b->entries[b->n_entries++];
    en->seq = s;
    en->n_new = n_new;
    en->sample = s->n_computed + n_new == s->n_tokens;
    en->n_logits = s->prompt_logits ? n_new : (en->sample ? 1 : 0);
    en->logits_row = en->n_logits ? b->n_logits : -1;
    b->n_logits += en->n_logits;
    b->n_tokens += n_new;
}

static bool sched__reserve(engine *e, engine_seq *s, int64_t n_new)
{
    return kv_block_table_reserve(&e->kv.pool, &s->table, s->n_computed + n_new) == ENC_OK;
}

/* Start a waiting sequence's table with its cached prefix; returns the
 * tokens it covers (whole blocks, never the last token). */
static int64_t sched__prefix_hit(engine *e, engine_seq *s)
{
    if (!e->kv.pool.prefix || s->prompt_logits) return 0;
    int32_t B = e->kv.pool.block_size;
    return (int64_t)kv_prefix_match(&e->kv.pool, &s->table, s->tokens, (int32_t)((s->n_tokens - 1) / B)) * B;
}

void sched_plan_step(engine *e, sched_batch *b)
{
    b->n_entries = 0;
    b->n_tokens = b->n_logits = b->n_preempted = b->n_cached_tokens = 0;
    int64_t budget = e->cfg.max_num_batched_tokens;

    for (int64_t i = 0; i < e->n_seqs; i++) {
        engine_seq *s = e->seqs[i];
        if (s->state != SEQ_RUNNING) continue;
        int64_t n_new = sched__chunk(e, s, budget, b->n_logits);
        if (n_new <= 0) continue;
        bool ok;
        while (!(ok = sched__reserve(e, s, n_new))) {
            engine_seq *victim = sched__newest_running(e);
            sched_preempt(e, victim);
            b->n_preempted++;
            if (victim == s) break;
        }
        if (!ok) continue;
        sched__add(e, b, s, n_new);
        budget -= n_new;
    }

    int64_t n_running = 0;
    for (int64_t i = 0; i < e->n_seqs; i++) n_running += e->seqs[i]->state == SEQ_RUNNING;
    for (int64_t i = 0; i < e->n_seqs && budget > 0 && n_running < e->cfg.max_num_seqs; i++) {
        engine_seq *s = e->seqs[i];
        if (s->state != SEQ_WAITING) continue;
        if (b->n_preempted) break; /* the pool just ran dry: admit nobody this step */
        int64_t hit = sched__prefix_hit(e, s);
        s->n_computed = hit;
        int64_t n_new = sched__chunk(e, s, budget, b->n_logits);
        if (n_new <= 0 || !sched__reserve(e, s, n_new)) {
            kv_block_table_release(&e->kv.pool, &s->table); /* the hit goes back to the cache */
            s->n_computed = 0;
            break;
        }
        if (e->kv.pool.prefix && !s->prompt_logits && !s->admitted) {
            e->stats.n_prefix_cache_queries += s->n_tokens;
            e->stats.n_prefix_cache_hits += hit;
        }
        b->n_cached_tokens += hit;
        if (!s->admitted) s->n_cached_tokens = hit < s->n_prompt ? hit : s->n_prompt;
        s->admitted = true;
        s->state = SEQ_RUNNING;
        n_running++;
        sched__add(e, b, s, n_new);
        budget -= n_new;
    }
}
