/* test_sample_engine.c - sampled requests through the engine, with the
 * device sampler (GRAPH_OP_SAMPLE) inside the multi-step replay, on a tiny
 * checkpoint.
 *
 *   reference  each token of eight seeded requests (temperature 0.3 / 1 /
 *              1.7, top-k, top-p, min-p, each penalty, min_tokens with a stop
 *              id, a greedy penalised one, a logit bias on a sampled and the
 *              greedy one; ids >= sample_vocab masked) is the
 *              pick of the plain reference picker (tests/ref_sampler.h) over
 *              the logits the engine gives for the same tokens as a prompt
 *   modes      the same tokens alone, in a staggered batch of 8 (one request
 *              joining every second step), eager, K = 1, 4 and 16, and with a
 *              KV pool so small that sequences are preempted and recomputed;
 *              the K = 4 and 16 runs are multi-step (round trips counted) and
 *              the small pool preempts
 *   readback   a multi-step round trip of a sampled request reads back K ids
 *              (K = 1 and 4) and nothing else (K logprobs records more when it asks for
 *              them), counted by engine_stats.n_bytes_read
 *
 * usage: test_sample_engine MODEL_DIR [DEVICE]   (DEVICE: vulkan runs the same
 * on shaders/sample.comp) */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine_or_exit.h"
#include "engine/engine.h"
#include "prompt_logits.h"
#include "ref_sampler.h"

enum { N_REQ = 8, MAX_OUT = 24, MAX_PROMPT = 16, SAMPLE_VOCAB = 480, STOP_ID = 77 };

static const char *g_model, *g_device;

typedef struct run_out {
    int32_t ids[N_REQ][MAX_OUT];
    int64_t n[N_REQ];
    engine_stats stats;
} run_out;

static void prompt_of(int i, int32_t *ids, int64_t *n)
{
    *n = 4 + i % 5 + (i == 3 ? 9 : 0);
    for (int64_t j = 0; j < *n; j++)
        ids[j] = (int32_t)((i * 131 + j * 29 + 5) % 470 + 3);
}

/* Requests 1 and 5 carry a logit bias: a boost in two entries, a ban. */
static const graph_sample_bias g_bias[] = {{100, 5.0f}, {200, -100.0f}, {100, 2.5f}, {321, -1.5f}};

static engine_sampling sampling_of(int i)
{
    static const engine_sampling s[N_REQ] = {
        {.temperature = 0.3, .top_k = 20},
        {.temperature = 1.0, .top_p = 0.9},
        {.temperature = 1.7, .min_p = 0.05},
        {.temperature = 0.8, .top_p = 0.95, .repetition_penalty = 1.1},
        {.temperature = 1.0, .presence_penalty = 0.5, .frequency_penalty = 0.7},
        {.temperature = 0.0, .repetition_penalty = 1.3},
        {.temperature = 1.0, .top_k = 40, .min_tokens = 20},
        {.temperature = 1.2, .top_k = 1, .top_p = 0.5, .frequency_penalty = -0.4},
    };
    engine_sampling r = s[i];
    r.seed = 9000 + (uint64_t)i * 7919;
    if (i == 1 || i == 5) {
        r.logit_bias = g_bias;
        r.n_logit_bias = (int)(sizeof g_bias / sizeof g_bias[0]);
    }
    return r;
}

static engine *make_engine(bool eager, int64_t decode_steps, int64_t n_kv_blocks)
{
    engine_config cfg = {.model_dir = g_model,
                         .device = g_device,
                         .n_threads = 2,
                         .max_num_seqs = 8,
                         .max_model_len = 64,
                         .eager = eager,
                         .decode_steps = decode_steps,
                         .n_kv_blocks = n_kv_blocks,
                         .sample_vocab = SAMPLE_VOCAB};
    return engine_or_exit(&cfg);
}

static int64_t add(engine *e, int i)
{
    int32_t prompt[MAX_PROMPT], stop = STOP_ID;
    engine_request_params p = {.prompt_ids = prompt,
                               .max_tokens = MAX_OUT,
                               .sampling = sampling_of(i),
                               .ignore_eos = i != 6,
                               .stop_ids = i == 6 ? &stop : NULL,
                               .n_stop_ids = i == 6};
    prompt_of(i, prompt, &p.n_prompt);
    int64_t id = -1;
    CHECK(engine_add_request(e, &p, &id) == ENC_OK);
    return id;
}

static void collect(engine *e, const int64_t *ids, int first, int n, run_out *r)
{
    for (int i = first; i < first + n; i++) {
        const int32_t *out;
        engine_finish f;
        CHECK(engine_request_output(e, ids[i], &out, &r->n[i], &f) == ENC_OK);
        memcpy(r->ids[i], out, (size_t)r->n[i] * sizeof *out);
        engine_release_request(e, ids[i]);
    }
}

/* Every request alone, one after the other. */
static void run_alone(engine *e, run_out *r)
{
    int64_t ids[N_REQ];
    memset(r, 0, sizeof *r);
    for (int i = 0; i < N_REQ; i++) {
        ids[i] = add(e, i);
        while (engine_has_unfinished(e))
            CHECK(engine_step(e, NULL) == ENC_OK);
        collect(e, ids, i, 1, r);
    }
    r->stats = engine_get_stats(e);
}

/* All of them, request i joining at step 2 i. */
static void run_staggered(engine *e, run_out *r)
{
    int64_t ids[N_REQ];
    int added = 0;
    memset(r, 0, sizeof *r);
    for (int step = 0; added < N_REQ || engine_has_unfinished(e); step++) {
        if (added < N_REQ && step == 2 * added) ids[added] = add(e, added), added++;
        CHECK(engine_step(e, NULL) == ENC_OK);
    }
    collect(e, ids, 0, N_REQ, r);
    r->stats = engine_get_stats(e);
}

static bool same(const run_out *a, const run_out *b, const char *what)
{
    for (int i = 0; i < N_REQ; i++)
        if (a->n[i] != b->n[i] || memcmp(a->ids[i], b->ids[i], (size_t)a->n[i] * sizeof(int32_t))) {
            fprintf(stderr, "%s: request %d differs from its tokens alone\n", what, i);
            return false;
        }
    return true;
}

/* --- the reference ------------------------------------------------------------- */

static graph_sample_row ref_row(int i, int64_t n_prompt, const qwen3_config *mc)
{
    engine_sampling s = sampling_of(i);
    graph_sample_row r = {
        .temperature = s.temperature,
        .top_p = s.top_p,
        .min_p = s.min_p,
        .repetition_penalty = s.repetition_penalty,
        .presence_penalty = s.presence_penalty,
        .frequency_penalty = s.frequency_penalty,
        .seed = s.seed,
        .top_k = (int32_t)s.top_k,
        .n_prompt = (int32_t)n_prompt,
        .min_tokens = (int32_t)s.min_tokens,
        .n_sample = SAMPLE_VOCAB,
        .flags = (s.repetition_penalty != 0.0 && s.repetition_penalty != 1.0) ||
                         s.presence_penalty != 0.0 || s.frequency_penalty != 0.0
                     ? GRAPH_SAMPLE_PENALTIES
                     : 0,
    };
    r.n_bias = s.n_logit_bias;
    if (s.n_logit_bias) memcpy(r.bias, s.logit_bias, (size_t)s.n_logit_bias * sizeof *r.bias);
    if (i == 6) {
        for (int j = 0; j < mc->n_eos; j++)
            r.mask_ids[r.n_mask++] = mc->eos_token_ids[j];
        r.mask_ids[r.n_mask++] = STOP_ID;
    }
    return r;
}

static void test_reference(engine *e, const run_out *alone)
{
    const qwen3_config *mc = engine_model_config(e);
    int64_t V = mc->vocab_size;
    float *x = malloc((size_t)V * sizeof *x);
    ref_w *it = malloc((size_t)V * sizeof *it);
    double *rw = malloc(sizeof *rw * (size_t)V);
    bool *rkeep = malloc(sizeof *rkeep * (size_t)V);
    int bad = 0, n_tokens = 0;
    for (int i = 0; i < N_REQ; i++) {
        int32_t tokens[MAX_PROMPT + MAX_OUT];
        int64_t n_prompt;
        prompt_of(i, tokens, &n_prompt);
        memcpy(tokens + n_prompt, alone->ids[i], (size_t)alone->n[i] * sizeof(int32_t));
        int64_t n = n_prompt + alone->n[i];
        int64_t vocab;
        float *logits = prompt_logits_of(e, tokens, n, V, &vocab);
        CHECK(vocab == V);
        graph_sample_row row = ref_row(i, n_prompt, mc);
        for (int64_t pos = n_prompt; pos < n; pos++, n_tokens++) {
            int32_t want = ref_pick(&logits[(pos - 1) * V], &row, tokens, pos, x, it, rw, rkeep);
            if (want != tokens[pos] && bad < 5)
                fprintf(stderr, "reference: request %d position %lld: %d, the reference picks %d\n",
                        i, (long long)pos, tokens[pos], want);
            bad += want != tokens[pos];
        }
        if (i == 6) CHECK(alone->n[i] >= 20); /* min_tokens held the stop id back */
        free(logits);
    }
    CHECK(bad == 0);
    printf("ok reference: %d tokens of %d requests\n", n_tokens, N_REQ);
    free(x);
    free(it);
    free(rw);
    free(rkeep);
}

/* --- what the host reads --------------------------------------------------------- */

/* A sampled request with penalties, and one with logprobs: every multi-step
 * round trip of one sequence reads K ids (and K logprobs records), nothing
 * else; at K = 1 too (one step per replay, still sampled on the device). */
static void test_readback(int64_t K)
{
    engine *e = make_engine(false, K, 0);
    for (int lp = 0; lp < 2; lp++) {
        int32_t prompt[MAX_PROMPT];
        engine_request_params p = {.prompt_ids = prompt,
                                   .max_tokens = MAX_OUT,
                                   .sampling = sampling_of(3),
                                   .ignore_eos = true};
        p.sampling.logprobs = lp;
        p.sampling.top_logprobs = lp ? 5 : 0;
        prompt_of(3, prompt, &p.n_prompt);
        int64_t id;
        CHECK(engine_add_request(e, &p, &id) == ENC_OK);
        int64_t want = K * (int64_t)(sizeof(int32_t) + (lp ? sizeof(graph_sample_logprobs) : 0)),
                n_trips = 0;
        int bad = 0;
        while (engine_has_unfinished(e)) {
            engine_stats before = engine_get_stats(e);
            CHECK(engine_step(e, NULL) == ENC_OK);
            engine_stats after = engine_get_stats(e);
            if (after.n_multi_round_trips == before.n_multi_round_trips) continue;
            n_trips++;
            bad += after.n_bytes_read - before.n_bytes_read != want;
        }
        engine_release_request(e, id);
        CHECK(n_trips >= MAX_OUT / K - 2 && bad == 0);
        printf("%s readback%s, K = %lld: %lld round trips of %lld bytes each\n", bad ? "FAIL" : "ok",
               lp ? " with logprobs" : "", (long long)K, (long long)n_trips, (long long)want);
    }
    engine_destroy(e);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: test_sample_engine MODEL_DIR [DEVICE]\n");
        return 2;
    }
    g_model = argv[1];
    g_device = argc == 3 ? argv[2] : NULL;
    run_out *alone = malloc(sizeof *alone), *r = malloc(sizeof *r);
    engine *e = make_engine(false, 4, 0);
    run_alone(e, alone);
    CHECK(alone->stats.n_multi_round_trips > 0);
    test_reference(e, alone);
    run_staggered(e, r);
    CHECK(same(alone, r, "staggered, K = 4"));
    engine_destroy(e);

    static const engine_test_mode modes[] = {
        {true, 1, 0, "eager"},
        {false, 1, 0, "K = 1"},
        {false, 16, 0, "K = 16"},
        {false, 4, 9, "K = 4, 9 KV blocks"},
    };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        e = make_engine(modes[m].eager, modes[m].K, modes[m].n_kv_blocks);
        run_staggered(e, r);
        CHECK(same(alone, r, modes[m].what));
        if (modes[m].K > 1) CHECK(r->stats.n_multi_round_trips > 0);
        if (modes[m].n_kv_blocks) CHECK(r->stats.n_preemptions > 0);
        printf("ok %s: %lld multi-step round trips, %lld preemptions\n", modes[m].what,
               (long long)r->stats.n_multi_round_trips, (long long)r->stats.n_preemptions);
        engine_destroy(e);
    }
    test_readback(1);
    test_readback(4);
    free(alone);
    free(r);
    if (check_failures) fprintf(stderr, "test_sample_engine: %d checks failed\n", check_failures);
    return check_failures != 0;
}
