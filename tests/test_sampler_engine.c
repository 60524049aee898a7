/* test_sampler_engine.c - sampling through the engine on a tiny checkpoint.
 *
 *   sample_vocab  with ids >= 256 of 512 masked, greedy requests give the same
 *                 tokens eagerly, single-step captured and multi-step (K = 4,
 *                 16), never an id >= 256, each the argmax over ids < 256 of
 *                 the logits the engine gives for the same tokens as a prompt;
 *                 unmasked, the same prompts do produce ids >= 256 (so the
 *                 multi-step path had device picks to drop)
 *   logprobs      each generated token's logprob and top alternatives equal a
 *                 double-precision log-softmax of the prompt logits of the
 *                 same tokens (over ids < sample_vocab), for sampled requests
 *                 with penalties
 *   min_tokens    a stop id is not produced before min_tokens, and the
 *                 request runs the same in every decode mode
 *   refusals      every sampling field out of range (a logit bias's ids,
 *                 values and count too), sample_vocab out of range
 *
 * usage: test_sampler_engine MODEL_DIR */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine.h"
#include "prompt_logits.h"

enum { N_PROMPTS = 4, MAX_OUT = 40, V_MAX = 512 };

typedef struct run_result {
    int32_t ids[N_PROMPTS][MAX_OUT];
    int64_t n[N_PROMPTS];
    engine_token_logprob lp[N_PROMPTS][MAX_OUT];
    int64_t n_lp[N_PROMPTS];
    engine_stats stats;
} run_result;

static const char *g_model;

static void prompt_of(int i, int32_t *ids, int64_t *n)
{
    *n = 5 + 3 * i;
    for (int64_t j = 0; j < *n; j++) ids[j] = (int32_t)((i * 97 + j * 31 + 11) % 500 + 2);
}

static engine *make_engine(int64_t sample_vocab, bool eager, int64_t decode_steps)
{
    engine_config cfg = {.model_dir = g_model, .n_threads = 1, .max_num_seqs = 8, .max_model_len = 256,
                         .eager = eager, .decode_steps = decode_steps, .sample_vocab = sample_vocab};
    engine *e = NULL;
    if (engine_create(&cfg, &e) != ENC_OK) {
        fprintf(stderr, "engine_create: %s\n", enc_last_error());
        exit(1);
    }
    return e;
}

/* Run N_PROMPTS requests with these parameters at once. */
static void run(engine *e, const engine_request_params *base, run_result *r)
{
    int64_t id[N_PROMPTS];
    int32_t prompt[N_PROMPTS][32];
    memset(r, 0, sizeof *r);
    for (int i = 0; i < N_PROMPTS; i++) {
        engine_request_params p = *base;
        prompt_of(i, prompt[i], &p.n_prompt);
        p.prompt_ids = prompt[i];
        p.sampling.seed += (uint64_t)i;
        CHECK(engine_add_request(e, &p, &id[i]) == ENC_OK);
    }
    while (engine_has_unfinished(e)) CHECK(engine_step(e, NULL) == ENC_OK);
    for (int i = 0; i < N_PROMPTS; i++) {
        const int32_t *ids;
        const engine_token_logprob *lp;
        engine_finish f;
        CHECK(engine_request_output(e, id[i], &ids, &r->n[i], &f) == ENC_OK);
        memcpy(r->ids[i], ids, (size_t)r->n[i] * sizeof *ids);
        CHECK(engine_request_logprobs(e, id[i], &lp, &r->n_lp[i]) == ENC_OK);
        CHECK(base->sampling.logprobs ? lp != NULL && r->n_lp[i] == r->n[i] : lp == NULL && r->n_lp[i] == 0);
        if (lp) memcpy(r->lp[i], lp, (size_t)r->n_lp[i] * sizeof *lp);
        engine_release_request(e, id[i]);
    }
    r->stats = engine_get_stats(e);
}

static bool same_tokens(const run_result *a, const run_result *b)
{
    for (int i = 0; i < N_PROMPTS; i++)
        if (a->n[i] != b->n[i] || memcmp(a->ids[i], b->ids[i], (size_t)a->n[i] * sizeof(int32_t))) return false;
    return true;
}

/* --- the prompt logits of prompt + output ------------------------------------ */

/* The logits at every position of prompt i followed by its first n_out tokens. */
static float *logits_of(engine *e, int i, const int32_t *out, int64_t n_out, int64_t *vocab)
{
    int32_t ids[32 + MAX_OUT];
    int64_t n;
    prompt_of(i, ids, &n);
    memcpy(ids + n, out, (size_t)n_out * sizeof *out);
    return prompt_logits_of(e, ids, n + n_out, V_MAX, vocab);
}

static int64_t prompt_len(int i)
{
    int32_t ids[32];
    int64_t n;
    prompt_of(i, ids, &n);
    return n;
}

/* --- the checks --------------------------------------------------------------------- */

static void test_sample_vocab(void)
{
    const int64_t SV = 256;
    engine_request_params base = {.max_tokens = MAX_OUT, .ignore_eos = true};
    run_result *full = malloc(sizeof *full), *r[4];
    engine *e = make_engine(0, false, 0);
    run(e, &base, full);
    engine_destroy(e);
    int64_t high = 0;
    for (int i = 0; i < N_PROMPTS; i++)
        for (int64_t j = 0; j < full->n[i]; j++) high += full->ids[i][j] >= SV;
    CHECK(high > 0);
    struct {
        bool eager;
        int64_t k;
    } modes[4] = {{true, 0}, {false, 1}, {false, 4}, {false, 16}};
    for (int m = 0; m < 4; m++) {
        r[m] = malloc(sizeof *r[m]);
        e = make_engine(SV, modes[m].eager, modes[m].k);
        run(e, &base, r[m]);
        if (m == 0) { /* each token is the masked argmax of its logits */
            int bad = 0;
            for (int i = 0; i < N_PROMPTS; i++) {
                int64_t V, np = prompt_len(i);
                float *rows = logits_of(e, i, r[0]->ids[i], r[0]->n[i], &V);
                for (int64_t j = 0; j < r[0]->n[i]; j++) {
                    const float *row = &rows[(np - 1 + j) * V];
                    int64_t best = 0;
                    for (int64_t v = 1; v < SV; v++)
                        if (row[v] > row[best]) best = v;
                    bad += r[0]->ids[i][j] != best;
                }
                free(rows);
            }
            CHECK(bad == 0);
        }
        engine_destroy(e);
        for (int i = 0; i < N_PROMPTS; i++)
            for (int64_t j = 0; j < r[m]->n[i]; j++) CHECK(r[m]->ids[i][j] < SV);
        CHECK(same_tokens(r[0], r[m]));
    }
    CHECK(r[2]->stats.n_multi_round_trips > 0 && r[3]->stats.n_multi_round_trips > 0);
    printf("ok sample_vocab: %lld of %d unmasked greedy ids were >= %lld; masked runs agree "
           "(eager, K=1, K=4 with %lld round trips, K=16)\n",
           (long long)high, N_PROMPTS * MAX_OUT, (long long)SV, (long long)r[2]->stats.n_multi_round_trips);
    for (int m = 0; m < 4; m++) free(r[m]);
    free(full);
}

static void test_logprobs(int64_t sample_vocab)
{
    engine_request_params base = {
        .max_tokens = 24,
        .ignore_eos = true,
        .sampling = {.temperature = 0.9, .top_k = 40, .top_p = 0.9, .repetition_penalty = 1.3,
                     .frequency_penalty = 0.2, .seed = 5, .logprobs = true, .top_logprobs = 7},
    };
    run_result *r = malloc(sizeof *r);
    engine *e = make_engine(sample_vocab, false, 0);
    run(e, &base, r);
    int64_t n_sample = sample_vocab ? sample_vocab : V_MAX;
    int bad = 0, n_checked = 0;
    for (int i = 0; i < N_PROMPTS; i++) {
        int64_t V, np = prompt_len(i);
        float *rows = logits_of(e, i, r->ids[i], r->n[i], &V);
        CHECK(V == V_MAX);
        for (int64_t j = 0; j < r->n[i]; j++) {
            const float *row = &rows[(np - 1 + j) * V];
            const engine_token_logprob *lp = &r->lp[i][j];
            double max = -INFINITY, sum = 0.0;
            for (int64_t v = 0; v < n_sample; v++) max = fmax(max, row[v]);
            for (int64_t v = 0; v < n_sample; v++) sum += exp((double)row[v] - max);
            double lse = max + log(sum);
            int32_t id = r->ids[i][j];
            bad += lp->id != id || fabs(lp->logprob - (row[id] - lse)) > 1e-5 || lp->n_top != 7;
            /* the alternatives: the 7 largest, in order, ties by id */
            for (int t = 0; t < lp->n_top; t++) {
                int32_t a = lp->top_ids[t];
                int64_t above = 0;
                for (int64_t v = 0; v < n_sample; v++) above += row[v] > row[a] || (row[v] == row[a] && v < a);
                bad += a >= n_sample || above != t || fabs(lp->top_logprobs[t] - (row[a] - lse)) > 1e-5;
            }
            n_checked++;
        }
        free(rows);
    }
    CHECK(bad == 0);
    engine_destroy(e);
    printf("ok logprobs (sample_vocab %lld): %d tokens against the prompt logits\n", (long long)n_sample, n_checked);
    free(r);
}

static void test_min_tokens(void)
{
    engine_request_params base = {.max_tokens = MAX_OUT, .ignore_eos = true};
    run_result *free_run = malloc(sizeof *free_run), *r[3];
    engine *e = make_engine(0, false, 0);
    run(e, &base, free_run);
    engine_destroy(e);
    /* stop at a token that prompt 0's free run first makes at index >= 3;
     * hold it off for 12 */
    int64_t first = 3, seen = 0;
    for (;; first++) {
        for (seen = 0; seen < first && free_run->ids[0][seen] != free_run->ids[0][first];) seen++;
        if (seen == first) break;
    }
    int32_t stop = free_run->ids[0][first];
    base.stop_ids = &stop;
    base.n_stop_ids = 1;
    base.sampling.min_tokens = 12;
    struct {
        bool eager;
        int64_t k;
    } modes[3] = {{true, 0}, {false, 1}, {false, 4}};
    for (int m = 0; m < 3; m++) {
        r[m] = malloc(sizeof *r[m]);
        e = make_engine(0, modes[m].eager, modes[m].k);
        run(e, &base, r[m]);
        engine_destroy(e);
        CHECK(same_tokens(r[0], r[m]));
    }
    CHECK(r[0]->n[0] >= 12);
    for (int64_t j = 0; j < 12 && j < r[0]->n[0]; j++) CHECK(r[0]->ids[0][j] != stop);
    for (int64_t j = 0; j < first; j++) CHECK(r[0]->ids[0][j] == free_run->ids[0][j]);
    printf("ok min_tokens: stop id %d (free run: at token %lld) held off; prompt 0 ran %lld tokens\n", stop,
           (long long)first, (long long)r[0]->n[0]);
    for (int m = 0; m < 3; m++) free(r[m]);
    free(free_run);
}

static void expect_refused(engine *e, engine_sampling sp, int64_t max_tokens, const char *needle)
{
    int32_t prompt[3] = {5, 6, 7};
    engine_request_params p = {.prompt_ids = prompt, .n_prompt = 3, .max_tokens = max_tokens, .sampling = sp};
    int64_t id;
    enc_status s = engine_add_request(e, &p, &id);
    bool ok = s == ENC_ERR_INVALID_ARGUMENT && strstr(enc_last_error(), needle);
    if (!ok) fprintf(stderr, "expected a refusal naming %s, got %d: %s\n", needle, (int)s, enc_last_error());
    CHECK(ok);
}

static void test_refusals(void)
{
    engine *e = make_engine(0, false, 0);
    expect_refused(e, (engine_sampling){.temperature = -0.5}, 4, "temperature");
    expect_refused(e, (engine_sampling){.temperature = NAN}, 4, "temperature");
    expect_refused(e, (engine_sampling){.top_k = -2}, 4, "top_k");
    expect_refused(e, (engine_sampling){.top_p = 1.01}, 4, "top_p");
    expect_refused(e, (engine_sampling){.top_p = -0.1}, 4, "top_p");
    expect_refused(e, (engine_sampling){.min_p = 1.5}, 4, "min_p");
    expect_refused(e, (engine_sampling){.repetition_penalty = -1}, 4, "repetition_penalty");
    expect_refused(e, (engine_sampling){.presence_penalty = 2.5}, 4, "presence_penalty");
    expect_refused(e, (engine_sampling){.frequency_penalty = -2.01}, 4, "frequency_penalty");
    expect_refused(e, (engine_sampling){.min_tokens = 5}, 4, "min_tokens");
    expect_refused(e, (engine_sampling){.min_tokens = -1}, 4, "min_tokens");
    expect_refused(e, (engine_sampling){.logprobs = true, .top_logprobs = 21}, 4, "top_logprobs");
    expect_refused(e, (engine_sampling){.top_logprobs = 3}, 4, "needs logprobs");
    static const graph_sample_bias bad_id[] = {{3, 1.0f}, {V_MAX, 1.0f}},
                                   bad_bias[] = {{3, 100.5f}}, nan_bias[] = {{3, NAN}},
                                   edges[] = {{0, -100.0f}, {V_MAX - 1, 100.0f}};
    expect_refused(e, (engine_sampling){.logit_bias = bad_id, .n_logit_bias = 2}, 4,
                   "logit_bias[1]: token 512 is outside the vocabulary");
    expect_refused(e, (engine_sampling){.logit_bias = bad_bias, .n_logit_bias = 1}, 4,
                   "[-100, 100]");
    expect_refused(e, (engine_sampling){.logit_bias = nan_bias, .n_logit_bias = 1}, 4,
                   "[-100, 100]");
    expect_refused(
        e, (engine_sampling){.logit_bias = edges, .n_logit_bias = ENGINE_MAX_LOGIT_BIAS + 1}, 4,
        "at most 300");
    expect_refused(e, (engine_sampling){.n_logit_bias = 1}, 4, "logit_bias is NULL");
    /* the edges are fine */
    int32_t prompt[3] = {5, 6, 7};
    engine_request_params p = {.prompt_ids = prompt,
                               .n_prompt = 3,
                               .max_tokens = 4,
                               .sampling = {.temperature = 1,
                                            .top_k = -1,
                                            .top_p = 1,
                                            .min_p = 1,
                                            .repetition_penalty = 1e-3,
                                            .presence_penalty = -2,
                                            .frequency_penalty = 2,
                                            .min_tokens = 4,
                                            .logprobs = true,
                                            .top_logprobs = 20,
                                            .logit_bias = edges,
                                            .n_logit_bias = 2}};
    int64_t id;
    CHECK(engine_add_request(e, &p, &id) == ENC_OK);
    const engine_token_logprob *lp;
    int64_t n;
    CHECK(engine_request_logprobs(e, id + 100, &lp, &n) == ENC_ERR_INVALID_ARGUMENT);
    engine_destroy(e);
    engine_config cfg = {.model_dir = g_model, .n_threads = 1, .sample_vocab = V_MAX + 1};
    CHECK(engine_create(&cfg, &e) == ENC_ERR_FORMAT &&
          strstr(enc_last_error(), "the tokenizer knows") &&
          strstr(enc_last_error(), "vocab_size"));
    cfg.sample_vocab = -3;
    CHECK(engine_create(&cfg, &e) == ENC_ERR_INVALID_ARGUMENT && strstr(enc_last_error(), "sample_vocab"));
    printf("ok refusals\n");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_sampler_engine MODEL_DIR\n");
        return 2;
    }
    g_model = argv[1];
    test_sample_vocab();
    test_logprobs(0);
    test_logprobs(300);
    test_min_tokens();
    test_refusals();
    if (check_failures) fprintf(stderr, "%d checks failed\n", check_failures);
    return check_failures != 0;
}
