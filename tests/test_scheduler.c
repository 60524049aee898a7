/* test_scheduler.c - the scheduler through the engine API on a tiny
 * checkpoint: prefix caching, chunked prefill, preemption, aborts.
 *
 * White-box where the API says too little: after each step the logits row
 * every sampling sequence used is read from e->logits (every engine here
 * runs eagerly, so every step leaves its logits on the host: a replay picks
 * on the device when the backend samples), and the property test walks the
 * block tables and the pool. The reference for tokens and logits is always
 * the same engine with prefix caching off (and an ample pool): the kernels
 * are batch-invariant, so a hit, a chunk boundary or a recompute must change
 * nothing, bit for bit.
 *
 * Cases (one ctest test each):
 *   prefix_hit      hits skip computation (counted per step) and give the
 *                   logits and tokens of a run without the cache: sequential,
 *                   concurrent, whole prompts at block boundaries, a prompt
 *                   extending an earlier prompt plus its output, a sampled
 *                   request, and a prompt_logits request (which takes no hit)
 *   chunked         with a 8-token budget a 60-token prompt is prefilled in
 *                   chunks of 7 while another sequence decodes every step;
 *                   both give the tokens they give alone
 *   preemption      a tight pool with shared prefixes: sequences are preempted
 *                   and recomputed (hits serving the recompute), same tokens
 *   abort           releasing running, waiting and finished requests drops
 *                   every reference; shared blocks stay with their other
 *                   holders, and everything is free at the end
 *   property        thousands of seeded random submit / abort / step events on
 *                   a small pool, invariants checked after every event
 *   accounting      cached_tokens is the first admission's hit (a preempted
 *                   request's own blocks found again are none); the last
 *                   token allowed finishes "length", a stop id among them
 *
 * Mutation checks (done by hand when this test was written): make
 * engine_release_request skip kv_block_table_release for a running request,
 * and "abort" and "property" fail with "block B has refcount 2 but 1
 * holders"; let the hit in sched__prefix_hit cover the last token
 * (n_tokens / B blocks instead of (n_tokens - 1) / B), and "prefix_hit" fails
 * on the served and computed counts and "property" stalls ("no progress").
 *
 * usage: test_scheduler MODEL_DIR [CASE] */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine_impl.h"

static const char *model_dir;

enum { MAX_REQ = 512, MAX_GEN = 64 };

/* One engine and what its requests saw: per request and generated token, a
 * hash of the logits row that chose it (0 when not recorded). */
typedef struct run {
    engine *e;
    uint64_t logits_hash[MAX_REQ][MAX_GEN];
    engine_step_stats last; /* the last step's stats */
    int64_t n_steps;
} run;

static uint64_t hash_row(const float *row, int64_t n)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)row;
    for (size_t i = 0; i < (size_t)n * sizeof *row; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h | 1;
}

static void run_init(run *r, engine_config cfg)
{
    memset(r, 0, sizeof *r);
    cfg.model_dir = model_dir;
    cfg.n_threads = 1;
    cfg.eager = true; /* every step's logits reach the host (capture has its own tests) */
    CHECK(engine_create(&cfg, &r->e) == ENC_OK);
    if (!r->e) exit(1);
}

/* One step; the logits rows of the sampling sequences are hashed. */
static void run_step(run *r)
{
    engine *e = r->e;
    int64_t multi = e->stats.n_multi_round_trips;
    CHECK(engine_step(e, &r->last) == ENC_OK);
    r->n_steps++;
    if (e->stats.n_multi_round_trips != multi) return; /* a multi-step replay leaves no logits */
    int64_t V = e->model->cfg.vocab_size;
    for (int i = 0; i < e->batch.n_entries; i++) {
        const sched_entry *en = &e->batch.entries[i];
        int64_t k = en->seq->n_tokens - en->seq->n_prompt - 1; /* the token it just sampled */
        if (!en->sample || en->seq->id >= MAX_REQ || k < 0 || k >= MAX_GEN) continue;
        r->logits_hash[en->seq->id][k] = hash_row(&e->logits[(en->logits_row + en->n_logits - 1) * V], V);
    }
}

static void run_until_done(run *r)
{
    for (int guard = 0; engine_has_unfinished(r->e); guard++) {
        if (guard > 5000) {
            CHECK(!"the engine made no progress in 5000 steps");
            exit(1);
        }
        run_step(r);
    }
}

static void run_free(run *r)
{
    engine_destroy(r->e);
    r->e = NULL;
}

typedef struct req {
    int32_t ids[256];
    int64_t n;
    int64_t max_tokens;
    double temperature;
    bool prompt_logits;
} req;

static int64_t submit(run *r, const req *q)
{
    engine_request_params p = {.prompt_ids = q->ids, .n_prompt = q->n, .max_tokens = q->max_tokens,
                               .sampling = {.temperature = q->temperature, .seed = (uint64_t)q->n},
                               .ignore_eos = true, .prompt_logits = q->prompt_logits};
    int64_t id = -1;
    if (engine_add_request(r->e, &p, &id) != ENC_OK) fprintf(stderr, "%s\n", enc_last_error());
    CHECK(id >= 0);
    return id;
}

/* Same tokens and finish in both runs; same logits rows where both recorded. */
static void compare(const run *a, const run *b, int64_t id_a, int64_t id_b, const char *what)
{
    const int32_t *x, *y;
    int64_t nx, ny;
    engine_finish fx, fy;
    CHECK(engine_request_output(a->e, id_a, &x, &nx, &fx) == ENC_OK);
    CHECK(engine_request_output(b->e, id_b, &y, &ny, &fy) == ENC_OK);
    bool same = nx == ny && fx == fy && memcmp(x, y, (size_t)nx * sizeof *x) == 0;
    int64_t n_logits = 0;
    for (int64_t k = 0; same && k < nx && k < MAX_GEN; k++) {
        uint64_t la = a->logits_hash[id_a][k], lb = b->logits_hash[id_b][k];
        if (la && lb) {
            same &= la == lb;
            n_logits++;
        }
    }
    if (!same) fprintf(stderr, "%s: request %lld differs from the reference\n", what, (long long)id_a);
    CHECK(same);
    CHECK(n_logits > 0 || nx == 0);
}

static void make_prompt(req *q, const int32_t *prefix, int64_t n_prefix, int64_t n_suffix, uint64_t seed)
{
    memcpy(q->ids, prefix, (size_t)n_prefix * sizeof *q->ids);
    for (int64_t i = 0; i < n_suffix; i++) q->ids[n_prefix + i] = (int32_t)((seed * 131 + (uint64_t)i * 29) % 997 + 1);
    q->n = n_prefix + n_suffix;
}

/* --- prefix_hit ------------------------------------------------------------ */

/* Submit q to both runs, run both to the end; returns the ids. The step that
 * admits q in `cached` must serve `want_hit` tokens from the cache. */
static void stage(run *cached, run *plain, const req *q, int64_t want_hit, int64_t *id_c, int64_t *id_p)
{
    int64_t hits = cached->e->stats.n_prefix_cache_hits;
    *id_c = submit(cached, q);
    *id_p = submit(plain, q);
    run_step(cached);
    CHECK(cached->last.n_cached_tokens == want_hit);
    CHECK(cached->e->stats.n_prefix_cache_hits - hits == want_hit);
    if (!q->prompt_logits) CHECK(cached->last.n_prefill_tokens == q->n - want_hit); /* only the rest computed */
    run_until_done(cached);
    run_until_done(plain);
    compare(cached, plain, *id_c, *id_p, "prefix_hit");
}

static void case_prefix_hit(void)
{
    static run c, p; /* large: not on the stack */
    engine_config cfg = {.decode_steps = 1};
    run_init(&c, cfg);
    cfg.no_prefix_caching = true;
    run_init(&p, cfg);
    int32_t shared[64];
    for (int i = 0; i < 64; i++) shared[i] = (int32_t)((i * 17 + 3) % 997 + 1);
    req q = {.max_tokens = 20};
    int64_t ic, ip, first_c, first_p;

    /* sequential: 45 tokens, then 43 sharing the first 40 (2 full blocks) */
    make_prompt(&q, shared, 40, 5, 1);
    stage(&c, &p, &q, 0, &first_c, &first_p);
    make_prompt(&q, shared, 40, 3, 2);
    stage(&c, &p, &q, 32, &ic, &ip);
    /* whole prompts at block boundaries: 32 cached tokens serve 16 (the last
     * token is computed, and it sits in the second block); 33 serve 32 */
    make_prompt(&q, shared, 32, 0, 0);
    stage(&c, &p, &q, 16, &ic, &ip);
    make_prompt(&q, shared, 33, 0, 0);
    stage(&c, &p, &q, 32, &ic, &ip);
    /* the first prompt plus its 20 generated tokens plus one: the blocks
     * filled by decoding are cached too (45 + 19 computed = 64 = 4 blocks) */
    const int32_t *gen;
    int64_t n_gen;
    engine_finish fin;
    CHECK(engine_request_output(c.e, first_c, &gen, &n_gen, &fin) == ENC_OK && n_gen == 20);
    make_prompt(&q, shared, 40, 5, 1);
    memcpy(q.ids + 45, gen, 20 * sizeof *gen);
    q.ids[65] = 7;
    q.n = 66;
    stage(&c, &p, &q, 64, &ic, &ip);
    /* a sampled request on a hit */
    make_prompt(&q, shared, 40, 9, 3);
    q.temperature = 0.9;
    stage(&c, &p, &q, 32, &ic, &ip);
    q.temperature = 0;
    /* prompt_logits: no hit, not even a query */
    int64_t queries = c.e->stats.n_prefix_cache_queries;
    make_prompt(&q, shared, 40, 2, 4);
    q.prompt_logits = true;
    stage(&c, &p, &q, 0, &ic, &ip);
    CHECK(c.e->stats.n_prefix_cache_queries == queries);
    q.prompt_logits = false;

    /* concurrent: two requests with a new shared prefix admitted in one step
     * (nothing is cached yet), then a third while they decode */
    int32_t other[64];
    for (int i = 0; i < 64; i++) other[i] = (int32_t)((i * 23 + 11) % 997 + 1);
    int64_t idc[3], idp[3];
    for (int k = 0; k < 2; k++) {
        make_prompt(&q, other, 48, 4 + k, 10 + k);
        idc[k] = submit(&c, &q);
        idp[k] = submit(&p, &q);
    }
    run_step(&c);
    CHECK(c.last.n_cached_tokens == 0 && c.last.n_prefill_tokens == 52 + 53 && c.last.n_running == 2);
    for (int s = 0; s < 3; s++) run_step(&c);
    CHECK(c.last.n_decode_tokens == 2);
    make_prompt(&q, other, 48, 1, 12);
    idc[2] = submit(&c, &q);
    idp[2] = submit(&p, &q);
    run_step(&c);
    CHECK(c.last.n_cached_tokens == 48 && c.last.n_prefill_tokens == 1 && c.last.n_decode_tokens == 2);
    run_until_done(&c);
    run_until_done(&p);
    for (int k = 0; k < 3; k++) compare(&c, &p, idc[k], idp[k], "prefix_hit concurrent");
    engine_stats st = engine_get_stats(c.e);
    CHECK(st.n_running == 0 && st.n_waiting == 0 && st.n_kv_blocks_used == 0 && st.n_kv_blocks_cached > 0);
    CHECK(st.n_prefill_tokens + st.n_prefix_cache_hits == engine_get_stats(p.e).n_prefill_tokens);
    CHECK(kv_pool_validate(&c.e->kv.pool) == ENC_OK);
    run_free(&c);
    run_free(&p);
}

/* --- chunked ----------------------------------------------------------------- */

static void case_chunked(void)
{
    static run mixed, alone;
    engine_config cfg = {.decode_steps = 1, .max_num_batched_tokens = 8};
    run_init(&mixed, cfg);
    req x = {.max_tokens = 40}, y = {.max_tokens = 10};
    int32_t none[1] = {0};
    make_prompt(&x, none, 0, 5, 21);
    make_prompt(&y, none, 0, 60, 22);
    int64_t idx = submit(&mixed, &x);
    for (int s = 0; s < 3; s++) run_step(&mixed);
    int64_t idy = submit(&mixed, &y);
    /* 60 prompt tokens, 7 a step beside x's one decode token: 9 steps */
    int64_t left = 60;
    for (int s = 0; left > 0; s++) {
        run_step(&mixed);
        int64_t chunk = left < 7 ? left : 7;
        CHECK(mixed.last.n_decode_tokens == 1 && mixed.last.n_prefill_tokens == chunk && mixed.last.n_seqs == 2);
        left -= chunk;
    }
    run_step(&mixed);
    CHECK(mixed.last.n_decode_tokens == 2 && mixed.last.n_prefill_tokens == 0);
    run_until_done(&mixed);
    /* each alone, with the default budget */
    cfg.max_num_batched_tokens = 0;
    run_init(&alone, cfg);
    int64_t ax = submit(&alone, &x);
    run_until_done(&alone);
    int64_t ay = submit(&alone, &y);
    run_until_done(&alone);
    compare(&mixed, &alone, idx, ax, "chunked x");
    compare(&mixed, &alone, idy, ay, "chunked y");
    run_free(&mixed);
    run_free(&alone);
}

/* --- preemption -------------------------------------------------------------- */

static void case_preemption(void)
{
    static run tight, ample;
    engine_config cfg = {.decode_steps = 1, .n_kv_blocks = 10, .max_num_batched_tokens = 32};
    run_init(&tight, cfg);
    cfg = (engine_config){.decode_steps = 1, .no_prefix_caching = true};
    run_init(&ample, cfg);
    int32_t shared[40];
    for (int i = 0; i < 40; i++) shared[i] = (int32_t)((i * 41 + 5) % 997 + 1);
    int64_t it[6], ia[6];
    for (int k = 0; k < 6; k++) {
        req q = {.max_tokens = 40, .temperature = k % 3 == 2 ? 0.8 : 0};
        make_prompt(&q, shared, 16 + 8 * (k % 3), 3 + k, 30 + k);
        it[k] = submit(&tight, &q);
        ia[k] = submit(&ample, &q);
        run_step(&tight);
        run_step(&tight);
    }
    run_until_done(&tight);
    run_until_done(&ample);
    for (int k = 0; k < 6; k++) compare(&tight, &ample, it[k], ia[k], "preemption");
    engine_stats st = engine_get_stats(tight.e);
    CHECK(st.n_preemptions > 0 && st.n_prefix_cache_hits > 0 && st.n_kv_blocks_used == 0);
    CHECK(engine_get_stats(ample.e).n_preemptions == 0);
    fprintf(stderr, "preemption: %lld preemptions, %lld of %lld tokens hit\n", (long long)st.n_preemptions,
            (long long)st.n_prefix_cache_hits, (long long)st.n_prefix_cache_queries);
    CHECK(kv_pool_validate(&tight.e->kv.pool) == ENC_OK);
    run_free(&tight);
    run_free(&ample);
}

/* --- invariants ----------------------------------------------------------- */

/* Every block's refcount is the number of tables holding it; the pool is
 * consistent; a block held by two tables is cached and full of computed
 * tokens in both; a cached block in a table holds that table's tokens;
 * waiting and finished sequences hold nothing. Returns false on a failure. */
static bool check_invariants(const engine *e, const char *when)
{
    const kv_pool *p = &e->kv.pool;
    int32_t B = p->block_size, n = p->n_blocks;
    int32_t *holders = calloc((size_t)n, sizeof *holders);
    bool ok = holders != NULL;
    if (kv_pool_validate(p) != ENC_OK) {
        fprintf(stderr, "%s: %s\n", when, enc_last_error());
        ok = false;
    }
    for (int64_t i = 0; ok && i < e->n_seqs; i++) {
        const engine_seq *s = e->seqs[i];
        const kv_block_table *t = &s->table;
        if (s->state != SEQ_RUNNING && t->n_blocks != 0) {
            fprintf(stderr, "%s: request %lld (state %d) holds %d blocks\n", when, (long long)s->id, s->state,
                    t->n_blocks);
            ok = false;
        }
        if (s->state == SEQ_RUNNING && (s->n_computed >= s->n_tokens || (int64_t)t->n_blocks * B < s->n_computed)) {
            fprintf(stderr, "%s: request %lld: %lld computed of %lld, %d blocks\n", when, (long long)s->id,
                    (long long)s->n_computed, (long long)s->n_tokens, t->n_blocks);
            ok = false;
        }
        for (int32_t k = 0; ok && k < t->n_blocks; k++) {
            int32_t b = t->blocks[k];
            holders[b]++;
            bool cached = p->prefix && p->prefix->cached[b];
            if (cached && (int64_t)(k + 1) * B <= s->n_tokens &&
                memcmp(&p->prefix->tokens[(size_t)b * (size_t)B], &s->tokens[(int64_t)k * B], (size_t)B * sizeof(int32_t))) {
                fprintf(stderr, "%s: request %lld block %d (pool block %d) is cached with other tokens\n", when,
                        (long long)s->id, k, b);
                ok = false;
            }
            if (p->refcount[b] > 1 && (!cached || (int64_t)(k + 1) * B > s->n_computed)) {
                fprintf(stderr, "%s: request %lld shares block %d (pool block %d) that is %s\n", when,
                        (long long)s->id, k, b, cached ? "not fully computed" : "not cached");
                ok = false;
            }
        }
    }
    int32_t used = 0;
    for (int32_t b = 0; ok && b < n; b++) {
        used += holders[b] > 0;
        if (holders[b] != p->refcount[b]) {
            fprintf(stderr, "%s: block %d has refcount %d but %d holders\n", when, b, p->refcount[b], holders[b]);
            ok = false;
        }
    }
    if (ok && used + p->n_free != n) {
        fprintf(stderr, "%s: %d used + %d free != %d blocks\n", when, used, p->n_free, n);
        ok = false;
    }
    free(holders);
    return ok;
}

/* --- abort ----------------------------------------------------------------- */

static void case_abort(void)
{
    static run r;
    engine_config cfg = {.decode_steps = 1, .n_kv_blocks = 12};
    run_init(&r, cfg);
    int32_t shared[48];
    for (int i = 0; i < 48; i++) shared[i] = (int32_t)((i * 7 + 2) % 997 + 1);
    req q = {.max_tokens = 30};
    make_prompt(&q, shared, 48, 2, 40);
    int64_t a = submit(&r, &q);
    run_step(&r); /* a: 3 blocks cached */
    make_prompt(&q, shared, 48, 3, 41);
    int64_t b = submit(&r, &q); /* shares a's 3 blocks */
    run_step(&r);
    CHECK(r.last.n_cached_tokens == 48);
    const kv_pool *p = &r.e->kv.pool;
    int32_t shared_block = r.e->seqs[1]->table.blocks[0];
    CHECK(p->refcount[shared_block] == 2);
    engine_release_request(r.e, a); /* running: every reference of a goes at once */
    CHECK(check_invariants(r.e, "after aborting a running request"));
    CHECK(p->refcount[shared_block] == 1); /* still b's */
    int64_t used_b = p->n_blocks - p->n_free;
    /* a request that cannot be admitted while b runs (10 blocks, 8 free),
     * aborted while it waits */
    q.max_tokens = 10;
    make_prompt(&q, shared, 0, 150, 42);
    int64_t w = submit(&r, &q);
    run_step(&r);
    CHECK(r.last.n_waiting == 1 && r.last.n_running == 1);
    engine_release_request(r.e, w);
    CHECK(p->n_blocks - p->n_free == used_b);
    run_until_done(&r);
    engine_release_request(r.e, b); /* finished: holds nothing any more */
    CHECK(check_invariants(r.e, "after releasing everything"));
    CHECK(p->n_free == p->n_blocks && p->prefix->n_cached > 0);
    run_free(&r);
}

/* --- property ---------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

typedef struct prop_req {
    req q;
    int64_t id;
    bool released; /* aborted or collected */
    bool finished;
    int32_t out[64];
    int64_t n_out;
} prop_req;

static void case_property(void)
{
    static run r, ref;
    static prop_req reqs[MAX_REQ];
    engine_config cfg = {.n_kv_blocks = 14, .max_num_seqs = 6, .max_num_batched_tokens = 40,
                         .max_model_len = 160};
    run_init(&r, cfg);
    int32_t prefixes[4][64];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 64; i++) prefixes[k][i] = (int32_t)((k * 211 + i * (13 + 2 * k)) % 997 + 1);
    uint64_t x = 20261130;
    int n_reqs = 0, n_events = 4000, n_steps = 0, n_aborts = 0, n_bad = 0;
    for (int ev = 0; ev < n_events && n_bad == 0; ev++) {
        uint64_t roll = rng_next(&x) % 100;
        int64_t live = 0;
        for (int i = 0; i < n_reqs; i++) live += !reqs[i].released;
        if (roll < 14 && n_reqs < MAX_REQ && live < 12) { /* submit */
            prop_req *pr = &reqs[n_reqs];
            memset(pr, 0, sizeof *pr);
            int k = (int)(rng_next(&x) % 4);
            /* a quarter are whole blocks of a shared prefix and nothing else */
            bool whole = rng_next(&x) % 4 == 0;
            int64_t n_prefix = whole ? 16 * (1 + (int64_t)(rng_next(&x) % 3)) : (int64_t)(rng_next(&x) % 60);
            int64_t n_suffix = whole ? 0 : 1 + (int64_t)(rng_next(&x) % 12);
            make_prompt(&pr->q, prefixes[k], n_prefix, n_suffix, rng_next(&x));
            pr->q.max_tokens = 1 + (int64_t)(rng_next(&x) % 60);
            pr->q.temperature = rng_next(&x) % 4 == 0 ? 0.7 : 0;
            pr->q.prompt_logits = rng_next(&x) % 10 == 0;
            pr->id = submit(&r, &pr->q);
            n_reqs++;
        } else if (roll < 22 && live > 0) { /* abort or collect one */
            int64_t pick = (int64_t)(rng_next(&x) % (uint64_t)live);
            for (int i = 0; i < n_reqs; i++) {
                if (reqs[i].released || pick-- != 0) continue;
                const int32_t *ids;
                engine_finish fin;
                CHECK(engine_request_output(r.e, reqs[i].id, &ids, &reqs[i].n_out, &fin) == ENC_OK);
                reqs[i].finished = fin != ENGINE_NOT_FINISHED;
                memcpy(reqs[i].out, ids, (size_t)reqs[i].n_out * sizeof *ids);
                n_aborts += !reqs[i].finished;
                engine_release_request(r.e, reqs[i].id);
                reqs[i].released = true;
                break;
            }
        } else { /* step */
            run_step(&r);
            n_steps++;
        }
        char when[64];
        snprintf(when, sizeof when, "event %d", ev);
        if (!check_invariants(r.e, when)) n_bad++;
    }
    CHECK(n_bad == 0);
    run_until_done(&r);
    CHECK(check_invariants(r.e, "all finished"));
    for (int i = 0; i < n_reqs; i++) {
        if (reqs[i].released) continue;
        const int32_t *ids;
        engine_finish fin;
        CHECK(engine_request_output(r.e, reqs[i].id, &ids, &reqs[i].n_out, &fin) == ENC_OK);
        reqs[i].finished = true;
        memcpy(reqs[i].out, ids, (size_t)reqs[i].n_out * sizeof *ids);
        engine_release_request(r.e, reqs[i].id);
        reqs[i].released = true;
    }
    const kv_pool *p = &r.e->kv.pool;
    CHECK(check_invariants(r.e, "all released"));
    CHECK(p->n_free == p->n_blocks); /* no leaks */
    for (int32_t b = 0; b < p->n_blocks; b++) CHECK(p->refcount[b] == 0);
    engine_stats st = engine_get_stats(r.e);
    fprintf(stderr, "property: %d requests, %d steps, %d aborts, %lld preemptions, %lld of %lld tokens hit, "
                    "%lld evictions\n", n_reqs, n_steps, n_aborts, (long long)st.n_preemptions,
            (long long)st.n_prefix_cache_hits, (long long)st.n_prefix_cache_queries,
            (long long)p->prefix->n_evictions);
    CHECK(st.n_preemptions > 0 && st.n_prefix_cache_hits > 0 && p->prefix->n_evictions > 0 && n_aborts > 0);

    /* the finished requests, all at once without the cache, give the same tokens */
    cfg = (engine_config){.no_prefix_caching = true, .max_model_len = 160};
    run_init(&ref, cfg);
    int n_compared = 0;
    static int64_t ref_id[MAX_REQ];
    for (int i = 0; i < n_reqs; i++) ref_id[i] = reqs[i].finished ? submit(&ref, &reqs[i].q) : -1;
    run_until_done(&ref);
    for (int i = 0; i < n_reqs; i++) {
        if (ref_id[i] < 0) continue;
        const int32_t *ids;
        int64_t n;
        engine_finish fin;
        CHECK(engine_request_output(ref.e, ref_id[i], &ids, &n, &fin) == ENC_OK);
        bool same = n == reqs[i].n_out && memcmp(ids, reqs[i].out, (size_t)n * sizeof *ids) == 0;
        if (!same) fprintf(stderr, "property: request %d differs from the run without prefix caching\n", i);
        CHECK(same);
        n_compared++;
    }
    CHECK(n_compared > 50);
    run_free(&ref);
    run_free(&r);
}

/* --- accounting -------------------------------------------------------------- */

/* A request's cached_tokens is the hit of its first admission, as vLLM's
 * num_cached_tokens: prompts that share nothing, preempted and recomputed
 * from their own blocks, report 0 (they reported their own blocks as hits).
 * And the last token a request may have is "length" whatever it is, a stop
 * id too (vLLM's check_stop), while a stop id before it is "stop". */
static void case_accounting(void)
{
    static run tight;
    engine_config cfg = {.decode_steps = 1, .n_kv_blocks = 12, .max_num_batched_tokens = 64};
    run_init(&tight, cfg);
    int64_t ids[6];
    int32_t none[1] = {0};
    for (int k = 0; k < 6; k++) {
        req q = {.max_tokens = 40};
        make_prompt(&q, none, 0, 40, 100 + 7 * (uint64_t)k);
        q.ids[0] = 990 + k; /* no two share a first block */
        ids[k] = submit(&tight, &q);
        run_step(&tight);
    }
    run_until_done(&tight);
    engine_stats st = engine_get_stats(tight.e);
    CHECK(st.n_preemptions > 0);
    for (int k = 0; k < 6; k++)
        CHECK(engine_request_cached_tokens(tight.e, ids[k]) == 0);
    CHECK(st.n_prefix_cache_hits == 0);
    fprintf(stderr, "accounting: %lld preemptions, no request's cached tokens counted\n",
            (long long)st.n_preemptions);

    /* the greedy first token of a prompt, then that token as a stop id */
    req q = {.max_tokens = 1};
    make_prompt(&q, none, 0, 12, 5);
    int64_t first = submit(&tight, &q);
    run_until_done(&tight);
    const int32_t *out;
    int64_t n;
    engine_finish f;
    CHECK(engine_request_output(tight.e, first, &out, &n, &f) == ENC_OK && n == 1);
    int32_t stop = out[0];
    for (int64_t max_tokens = 1; max_tokens <= 2; max_tokens++) {
        engine_request_params p = {.prompt_ids = q.ids,
                                   .n_prompt = q.n,
                                   .max_tokens = max_tokens,
                                   .ignore_eos = true,
                                   .stop_ids = &stop,
                                   .n_stop_ids = 1};
        int64_t id = -1;
        CHECK(engine_add_request(tight.e, &p, &id) == ENC_OK);
        run_until_done(&tight);
        CHECK(engine_request_output(tight.e, id, &out, &n, &f) == ENC_OK && n == 1 &&
              out[0] == stop);
        CHECK(f == (max_tokens == 1 ? ENGINE_FINISH_LENGTH : ENGINE_FINISH_STOP));
    }
    run_free(&tight);
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"prefix_hit", case_prefix_hit}, {"chunked", case_chunked},   {"preemption", case_preemption},
    {"abort", case_abort},           {"property", case_property}, {"accounting", case_accounting},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_scheduler MODEL_DIR [CASE]\n");
        return 2;
    }
    model_dir = argv[1];
    int ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (argc > 2 && strcmp(argv[2], cases[i].name)) continue;
        cases[i].run();
        ran++;
    }
    if (!ran) fprintf(stderr, "test_scheduler: no case named '%s'\n", argv[2]);
    if (check_failures) fprintf(stderr, "test_scheduler: %d check(s) failed\n", check_failures);
    return check_failures != 0 || !ran;
}
