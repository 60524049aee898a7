/* test_constraint_engine.c - per-request constraints (engine_constraint)
 * through the engine on a tiny checkpoint, with a plain test rule written
 * here: "ids = r mod m (never the end id) for n_free tokens, then the end id
 * (a stop id)". The rule's state records what the engine accepted.
 *
 *   obeys       eight constrained requests (greedy, sampled, filtered,
 *               penalised, logprobs; many seeds) among eight unconstrained
 *               ones: every token obeys the rule (checked from the output,
 *               not from what accept saw), each ends with the end id after
 *               n_free tokens ("stop"), accept saw exactly the output, and
 *               destroy ran once
 *   reference   each constrained token is the reference picker's
 *               (tests/ref_sampler.h) under the rule's mask over the logits
 *               the engine gives for the same tokens as a prompt; logprobs
 *               are the raw row's, unmasked
 *   invariance  unconstrained requests give the same tokens alone and mixed
 *               with constrained ones; constrained ones the same alone and
 *               mixed, eager, captured K = 1 and K = 4 requested (run at
 *               K = 1 while constrained: multi-step round trips counted), and
 *               preempted in a small KV pool (accept never sees a token
 *               twice)
 *   errors      a mask that allows nothing and an accept that refuses end the
 *               request with ENGINE_FINISH_ERROR and a message, appending no
 *               token, in every mode; a constraint without accept is refused
 *               (the caller keeps its state); release mid-run and
 *               engine_destroy with requests unfinished destroy the state
 *               once (ASan sees the rest)
 *
 * usage: test_constraint_engine MODEL_DIR [DEVICE]   (DEVICE: vulkan, one seed;
 * its device sampler applies the masks, or with ENCORE_VK_FLOAT64=0 the host
 * sampler does) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_flag.h"
#include "check.h"
#include "engine/engine.h"
#include "engine_or_exit.h"
#include "prompt_logits.h"
#include "ref_sampler.h"

enum { N_REQ = 8, MAX_OUT = 28, MAX_PROMPT = 16, SAMPLE_VOCAB = 480, END_ID = 77 };

static const char *g_model, *g_device;

/* --- the rule ------------------------------------------------------------------ */

/* What the engine did with a rule: kept by the test, so it outlives the state. */
typedef struct rule_log {
    int64_t n_accepted;
    int32_t accepted[MAX_OUT];
    int n_destroyed;
} rule_log;

typedef struct rule {
    int32_t r, m;
    int64_t n_free;    /* tokens before the end id */
    int64_t empty_at;  /* fill nothing for this token (-1: never) */
    int64_t refuse_at; /* accept refuses this token (-1: never) */
    rule_log *log;
} rule;

/* Is id allowed as output token k (0-based)? */
static bool rule_allows(const rule *st, int64_t k, int32_t id)
{
    if (k == st->empty_at) return false;
    if (k >= st->n_free) return id == END_ID;
    return id != END_ID && id % st->m == st->r;
}

static void rule_fill(void *state, uint32_t *allowed, int32_t n_vocab)
{
    const rule *st = state;
    for (int32_t id = 0; id < n_vocab; id++)
        if (rule_allows(st, st->log->n_accepted, id)) allowed[id / 32] |= (uint32_t)1 << (id % 32);
}

static bool rule_accept(void *state, int32_t id)
{
    rule *st = state;
    rule_log *lg = st->log;
    if (lg->n_accepted == st->refuse_at || lg->n_accepted >= MAX_OUT) return false;
    bool ok = rule_allows(st, lg->n_accepted, id);
    lg->accepted[lg->n_accepted++] = id;
    return ok;
}

static void rule_destroy(void *state)
{
    rule *st = state;
    st->log->n_destroyed++;
    free(st);
}

/* Request i's rule: ids = i mod m_i for 6 + 3 i mod 17 tokens, then the end. */
static rule rule_of(int i, rule_log *lg)
{
    static const int32_t m[N_REQ] = {2, 3, 5, 7, 3, 4, 6, 11};
    return (rule){.r = (int32_t)(i % m[i]), .m = m[i], .n_free = 6 + (3 * i) % 17, .empty_at = -1,
                  .refuse_at = -1, .log = lg};
}

/* Request i's rule, logging to lg (zeroed here). */
static engine_constraint rule_new(int i, rule_log *lg)
{
    memset(lg, 0, sizeof *lg);
    rule *st = malloc(sizeof *st);
    CHECK(st != NULL);
    *st = rule_of(i, lg);
    return (engine_constraint){st, rule_fill, rule_accept, rule_destroy};
}

/* --- requests ------------------------------------------------------------------- */

static void prompt_of(int i, int32_t *ids, int64_t *n)
{
    *n = 4 + i % 5 + (i == 3 ? 9 : 0);
    for (int64_t j = 0; j < *n; j++)
        ids[j] = (int32_t)((i * 97 + j * 31 + 11) % 470 + 3);
}

static engine_sampling sampling_of(int i, uint64_t seed)
{
    static const engine_sampling s[N_REQ] = {
        {.temperature = 0.0},
        {.temperature = 1.0},
        {.temperature = 1.7, .min_p = 0.02},
        {.temperature = 0.8, .top_p = 0.9, .repetition_penalty = 1.2},
        {.temperature = 1.0, .top_k = 5, .presence_penalty = 0.5},
        {.temperature = 0.0, .frequency_penalty = 0.7},
        {.temperature = 1.3, .top_k = 40, .top_p = 0.95, .logprobs = true, .top_logprobs = 3},
        {.temperature = 0.6, .top_k = 1},
    };
    engine_sampling r = s[i];
    r.seed = seed + (uint64_t)i * 7919;
    return r;
}

static engine *make_engine(bool eager, int64_t decode_steps, int64_t n_kv_blocks)
{
    engine_config cfg = {.model_dir = g_model, .device = g_device, .n_threads = 2, .max_num_seqs = 2 * N_REQ,
                         .max_model_len = 64, .sample_vocab = SAMPLE_VOCAB};
    cfg.eager = eager;
    cfg.decode_steps = decode_steps;
    cfg.n_kv_blocks = n_kv_blocks;
    return engine_or_exit(&cfg);
}

/* Request i under constraint c (NULL: free); END_ID is a stop id. */
static int64_t add(engine *e, int i, uint64_t seed, const engine_constraint *c)
{
    int32_t prompt[MAX_PROMPT], stop = END_ID;
    engine_request_params p = {.prompt_ids = prompt,
                               .max_tokens = MAX_OUT,
                               .sampling = sampling_of(i, seed),
                               .ignore_eos = true,
                               .stop_ids = &stop,
                               .n_stop_ids = 1,
                               .constraint = c};
    prompt_of(i, prompt, &p.n_prompt);
    int64_t id = -1;
    CHECK(engine_add_request(e, &p, &id) == ENC_OK);
    return id;
}

/* Slots 0..N_REQ-1: request i constrained; N_REQ..2 N_REQ-1: request i free. */
typedef struct run_out {
    int32_t ids[2 * N_REQ][MAX_OUT];
    int64_t n[2 * N_REQ];
    engine_finish finish[2 * N_REQ];
    engine_token_logprob lp[2 * N_REQ][MAX_OUT];
    int64_t n_lp[2 * N_REQ];
    rule_log log[N_REQ];
    engine_stats stats;
} run_out;

static void collect(engine *e, int64_t id, int slot, run_out *r)
{
    const int32_t *out;
    const engine_token_logprob *lp;
    CHECK(engine_request_output(e, id, &out, &r->n[slot], &r->finish[slot]) == ENC_OK);
    memcpy(r->ids[slot], out, (size_t)r->n[slot] * sizeof *out);
    CHECK(engine_request_logprobs(e, id, &lp, &r->n_lp[slot]) == ENC_OK);
    if (r->n_lp[slot]) memcpy(r->lp[slot], lp, (size_t)r->n_lp[slot] * sizeof *lp);
    engine_release_request(e, id);
}

/* The requests of `slots` (a bit per slot), one after the other (`alone`)
 * or the k-th joining at step 2 k, constrained ones and free ones taking
 * turns. */
static void run(engine *e, uint32_t slots, bool alone, uint64_t seed, run_out *r)
{
    memset(r, 0, sizeof *r);
    int64_t ids[2 * N_REQ];
    int order[2 * N_REQ], n_order = 0, added = 0;
    for (int i = 0; i < N_REQ; i++)
        for (int half = 0; half < 2; half++)
            if (slots >> (half * N_REQ + i) & 1u) order[n_order++] = half * N_REQ + i;
    for (int step = 0; added < n_order || engine_has_unfinished(e); step++) {
        bool join = alone ? !engine_has_unfinished(e) : step == 2 * added;
        if (added < n_order && join) {
            int slot = order[added++], i = slot % N_REQ;
            engine_constraint c;
            if (slot < N_REQ) c = rule_new(i, &r->log[i]);
            ids[slot] = add(e, i, seed, slot < N_REQ ? &c : NULL);
        }
        if (engine_has_unfinished(e)) CHECK(engine_step(e, NULL) == ENC_OK);
    }
    for (int k = 0; k < n_order; k++) collect(e, ids[order[k]], order[k], r);
    r->stats = engine_get_stats(e);
}

enum { ALL_CONSTRAINED = (1u << N_REQ) - 1, ALL_FREE = ALL_CONSTRAINED << N_REQ, ALL = ALL_CONSTRAINED | ALL_FREE };

/* --- obeys -------------------------------------------------------------------------- */

/* Every constrained request of r obeys its rule, ends with the end id after
 * n_free tokens, was accepted token by token, and its state destroyed once. */
static int check_obeys(const run_out *r, const char *what)
{
    int bad = 0;
    for (int i = 0; i < N_REQ; i++) {
        if (r->log[i].n_destroyed == 0 && r->n[i] == 0) continue; /* not in this run */
        rule st = rule_of(i, NULL);
        bool ok = r->finish[i] == ENGINE_FINISH_STOP && r->n[i] == st.n_free + 1;
        for (int64_t k = 0; k < r->n[i]; k++) ok &= rule_allows(&st, k, r->ids[i][k]);
        ok &= r->log[i].n_accepted == r->n[i] &&
              !memcmp(r->log[i].accepted, r->ids[i], (size_t)r->n[i] * sizeof(int32_t));
        ok &= r->log[i].n_destroyed == 1;
        if (!ok && bad < 3)
            fprintf(stderr, "%s: constrained request %d: %lld tokens (finish %s), %lld accepted, destroyed %d\n", what,
                    i, (long long)r->n[i], engine_finish_name(r->finish[i]), (long long)r->log[i].n_accepted,
                    r->log[i].n_destroyed);
        bad += !ok;
    }
    return bad;
}

static bool same_slots(const run_out *a, const run_out *b, uint32_t slots, const char *what)
{
    for (int s = 0; s < 2 * N_REQ; s++) {
        if (!(slots >> s & 1u)) continue;
        if (a->n[s] != b->n[s] || memcmp(a->ids[s], b->ids[s], (size_t)a->n[s] * sizeof(int32_t))) {
            fprintf(stderr, "%s: %s request %d differs\n", what, s < N_REQ ? "constrained" : "free", s % N_REQ);
            return false;
        }
    }
    return true;
}

/* --- the reference ---------------------------------------------------------------- */

/* Each constrained token of r is the reference's under the rule's mask over
 * the engine's logits of the same tokens; logprobs are the raw row's. */
static void test_reference(engine *e, const run_out *r, uint64_t seed)
{
    int64_t V = engine_model_config(e)->vocab_size;
    float *x = malloc((size_t)V * sizeof *x);
    ref_w *it = malloc((size_t)V * sizeof *it);
    double *rw = malloc((size_t)V * sizeof *rw);
    bool *rkeep = malloc((size_t)V * sizeof *rkeep);
    uint32_t *mask = malloc((size_t)GRAPH_SAMPLE_MASK_WORDS(V) * sizeof *mask);
    int bad = 0, bad_lp = 0, n_tokens = 0, n_changed = 0;
    for (int i = 0; i < N_REQ; i++) {
        int32_t tokens[MAX_PROMPT + MAX_OUT];
        int64_t n_prompt, vocab;
        prompt_of(i, tokens, &n_prompt);
        memcpy(tokens + n_prompt, r->ids[i], (size_t)r->n[i] * sizeof(int32_t));
        int64_t n = n_prompt + r->n[i];
        float *logits = prompt_logits_of(e, tokens, n, V, &vocab);
        engine_sampling s = sampling_of(i, seed);
        graph_sample_row row = {
            .temperature = s.temperature, .top_p = s.top_p, .min_p = s.min_p,
            .repetition_penalty = s.repetition_penalty, .presence_penalty = s.presence_penalty,
            .frequency_penalty = s.frequency_penalty, .seed = s.seed, .top_k = (int32_t)s.top_k,
            .n_prompt = (int32_t)n_prompt, .n_sample = SAMPLE_VOCAB,
            .flags = GRAPH_SAMPLE_MASKED |
                     ((s.repetition_penalty != 0.0 && s.repetition_penalty != 1.0) || s.presence_penalty != 0.0 ||
                              s.frequency_penalty != 0.0
                          ? GRAPH_SAMPLE_PENALTIES
                          : 0)};
        rule_log lg = {0};
        rule st = rule_of(i, &lg);
        for (int64_t pos = n_prompt; pos < n; pos++, n_tokens++) {
            lg.n_accepted = pos - n_prompt;
            memset(mask, 0, (size_t)GRAPH_SAMPLE_MASK_WORDS(V) * sizeof *mask);
            rule_fill(&st, mask, (int32_t)V);
            const float *raw = &logits[(pos - 1) * V];
            int32_t want = ref_pick_masked(raw, &row, tokens, pos, mask, x, it, rw, rkeep);
            graph_sample_row free_row = row;
            free_row.flags &= ~GRAPH_SAMPLE_MASKED;
            n_changed += ref_pick(raw, &free_row, tokens, pos, x, it, rw, rkeep) != want;
            if (want != tokens[pos] && bad < 5)
                fprintf(stderr, "reference: request %d position %lld: %d, the reference picks %d\n", i,
                        (long long)pos, tokens[pos], want);
            bad += want != tokens[pos];
            if (r->n_lp[i]) { /* the raw distribution: log_softmax over ids < SAMPLE_VOCAB */
                double max = raw[ref_argmax(raw, SAMPLE_VOCAB)], sum = 0.0;
                for (int64_t t = 0; t < SAMPLE_VOCAB; t++) sum += exp((double)raw[t] - max);
                double want_lp = (double)raw[tokens[pos]] - max - log(sum);
                bad_lp += fabs((double)r->lp[i][pos - n_prompt].logprob - want_lp) > 1e-5;
            }
        }
        free(logits);
    }
    CHECK(bad == 0);
    CHECK(bad_lp == 0);
    CHECK(n_changed > n_tokens / 2); /* the mask decided most tokens */
    printf("ok reference: %d constrained tokens (%d differ from the unmasked pick), logprobs raw\n", n_tokens,
           n_changed);
    free(x);
    free(it);
    free(rw);
    free(rkeep);
    free(mask);
}

/* --- errors ----------------------------------------------------------------------- */

/* A request whose rule allows nothing at token 3, one whose accept refuses
 * token 2, beside a free one. */
static void test_errors(bool eager, int64_t K, const char *what)
{
    engine *e = make_engine(eager, K, 0);
    rule_log lg[2];
    int64_t ids[3];
    for (int j = 0; j < 2; j++) {
        engine_constraint c = rule_new(1 + j, &lg[j]);
        rule *st = c.state;
        st->n_free = MAX_OUT; /* no end: only the fault ends it */
        if (j == 0) st->empty_at = 3;
        else st->refuse_at = 2;
        ids[j] = add(e, 1 + j, 5, &c);
    }
    ids[2] = add(e, 4, 5, NULL);
    while (engine_has_unfinished(e)) CHECK(engine_step(e, NULL) == ENC_OK);
    static const char *const needle[2] = {"allows no token", "refused token"};
    for (int j = 0; j < 2; j++) {
        const int32_t *out;
        int64_t n;
        engine_finish f;
        CHECK(engine_request_output(e, ids[j], &out, &n, &f) == ENC_OK);
        const char *msg = engine_request_error(e, ids[j]);
        bool ok = f == ENGINE_FINISH_ERROR && n == (j == 0 ? 3 : 2) && msg && strstr(msg, needle[j]) &&
                  lg[j].n_destroyed == 1 && !strcmp(engine_finish_name(f), "error");
        if (!ok)
            fprintf(stderr, "%s: fault %d: %lld tokens, finish %s, error \"%s\", destroyed %d\n", what, j,
                    (long long)n, engine_finish_name(f), msg ? msg : "(none)", lg[j].n_destroyed);
        CHECK(ok);
        engine_release_request(e, ids[j]);
    }
    const int32_t *out;
    int64_t n;
    engine_finish f;
    CHECK(engine_request_output(e, ids[2], &out, &n, &f) == ENC_OK);
    CHECK(f != ENGINE_FINISH_ERROR && n > 3 && engine_request_error(e, ids[2]) == NULL);
    engine_release_request(e, ids[2]);
    printf("ok errors, %s\n", what);
    engine_destroy(e);
}

/* A rule that allows only its end id (a stop id) at token 3 while
 * min_tokens asks for 10: the constraint wins and the reply ends there with
 * "stop", not with an error for a row that allows nothing; a request whose
 * rule never ends keeps min_tokens and goes on past it. */
static void test_end_before_min_tokens(bool eager, int64_t K, const char *what)
{
    engine *e = make_engine(eager, K, 0);
    rule_log lg[2];
    int64_t ids[2];
    for (int j = 0; j < 2; j++) {
        engine_constraint c = rule_new(1 + j, &lg[j]);
        ((rule *)c.state)->n_free = j == 0 ? 3 : MAX_OUT;
        int32_t prompt[MAX_PROMPT], stop = END_ID;
        engine_request_params p = {.prompt_ids = prompt,
                                   .max_tokens = MAX_OUT,
                                   .sampling = sampling_of(1 + j, 9),
                                   .ignore_eos = true,
                                   .stop_ids = &stop,
                                   .n_stop_ids = 1,
                                   .constraint = &c};
        p.sampling.min_tokens = 10;
        prompt_of(1 + j, prompt, &p.n_prompt);
        CHECK(engine_add_request(e, &p, &ids[j]) == ENC_OK);
    }
    while (engine_has_unfinished(e))
        CHECK(engine_step(e, NULL) == ENC_OK);
    for (int j = 0; j < 2; j++) {
        const int32_t *out;
        int64_t n;
        engine_finish f;
        CHECK(engine_request_output(e, ids[j], &out, &n, &f) == ENC_OK);
        bool ok = j == 0 ? f == ENGINE_FINISH_STOP && n == 4 && out[3] == END_ID
                         : f == ENGINE_FINISH_LENGTH && n == MAX_OUT;
        if (!ok)
            fprintf(stderr, "%s: request %d: %lld tokens, finish %s, error \"%s\"\n", what, j,
                    (long long)n, engine_finish_name(f),
                    engine_request_error(e, ids[j]) ? engine_request_error(e, ids[j]) : "");
        CHECK(ok);
        engine_release_request(e, ids[j]);
    }
    printf("ok end before min_tokens, %s\n", what);
    engine_destroy(e);
}

/* Refused without accept (the caller keeps the state); released mid-run and
 * left unfinished at engine_destroy, the state is destroyed once. */
static void test_ownership(void)
{
    engine *e = make_engine(false, 4, 0);
    rule_log lg[3];
    engine_constraint c = rule_new(0, &lg[0]);
    c.accept = NULL;
    int32_t prompt[4] = {5, 6, 7, 8};
    engine_request_params p = {.prompt_ids = prompt, .n_prompt = 4, .max_tokens = 8, .constraint = &c};
    int64_t id;
    CHECK(engine_add_request(e, &p, &id) == ENC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(enc_last_error(), "constraint") != NULL && lg[0].n_destroyed == 0);
    free(c.state);

    c = rule_new(1, &lg[1]);
    ((rule *)c.state)->n_free = MAX_OUT;
    int64_t a = add(e, 1, 3, &c);
    for (int k = 0; k < 4; k++) CHECK(engine_step(e, NULL) == ENC_OK);
    CHECK(lg[1].n_accepted > 0 && lg[1].n_destroyed == 0);
    engine_release_request(e, a);
    CHECK(lg[1].n_destroyed == 1);

    c = rule_new(2, &lg[2]);
    ((rule *)c.state)->n_free = MAX_OUT;
    add(e, 2, 3, &c);
    CHECK(engine_step(e, NULL) == ENC_OK);
    engine_destroy(e);
    CHECK(lg[2].n_destroyed == 1);
    printf("ok ownership: refused, released and destroyed\n");
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: test_constraint_engine MODEL_DIR [DEVICE]\n");
        return 2;
    }
    g_model = argv[1];
    g_device = argc == 3 ? argv[2] : NULL;
    bool device_sampler = enc_env_flag("ENCORE_VK_FLOAT64", true); /* else on Vulkan: the host's */
    run_out *alone = malloc(sizeof *alone), *free_only = malloc(sizeof *free_only), *r = malloc(sizeof *r);
    static const uint64_t seeds[] = {1, 1000, 77777};
    size_t n_seeds = g_device == NULL ? 3 : 1; /* lavapipe is slow: one seed there */
    for (size_t si = 0; si < n_seeds; si++) {
        engine *e = make_engine(false, 4, 0);
        run(e, ALL_CONSTRAINED, true, seeds[si], alone);
        CHECK(check_obeys(alone, "alone") == 0);
        if (device_sampler) CHECK(alone->stats.n_multi_round_trips > 0); /* masks in the replay */
        if (si == 0) test_reference(e, alone, seeds[si]);
        run(e, ALL_FREE, false, seeds[si], free_only);
        run(e, ALL, false, seeds[si], r);
        CHECK(check_obeys(r, "mixed") == 0);
        CHECK(same_slots(free_only, r, ALL_FREE, "mixed, K = 4"));
        CHECK(same_slots(alone, r, ALL_CONSTRAINED, "mixed, K = 4"));
        printf("ok seed %llu: constrained obey alone and mixed; free ones unchanged by them\n",
               (unsigned long long)seeds[si]);
        engine_destroy(e);
    }
    static const engine_test_mode modes[] = {
        {true, 1, 0, "eager"},
        {false, 1, 0, "K = 1"},
        {false, 4, 9, "K = 4, 9 KV blocks"},
    };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        if (!device_sampler && m == 1) continue; /* K = 1 and eager read the same host path there */
        engine *e = make_engine(modes[m].eager, modes[m].K, modes[m].n_kv_blocks);
        run(e, ALL, false, seeds[n_seeds - 1], r);
        CHECK(check_obeys(r, modes[m].what) == 0);
        CHECK(same_slots(free_only, r, ALL_FREE, modes[m].what));
        CHECK(same_slots(alone, r, ALL_CONSTRAINED, modes[m].what));
        if (modes[m].n_kv_blocks) CHECK(r->stats.n_preemptions > 0);
        printf("ok %s: %lld preemptions\n", modes[m].what, (long long)r->stats.n_preemptions);
        engine_destroy(e);
        if (device_sampler || m == 0) {
            test_errors(modes[m].eager, modes[m].K, modes[m].what);
            test_end_before_min_tokens(modes[m].eager, modes[m].K, modes[m].what);
        }
    }
    test_ownership();
    free(alone);
    free(free_only);
    free(r);
    if (check_failures) fprintf(stderr, "test_constraint_engine: %d checks failed\n", check_failures);
    return check_failures != 0;
}
