/* test_api.c - the public C API, using nothing but include/encore.h.
 *
 * usage: test_api MODEL_DIR EXPECTED_IDS_FILE
 * EXPECTED_IDS_FILE holds the greedy continuation of the prompt below as
 * computed by the independent NumPy reference (tests/reference/qwen3_ref.py),
 * space-separated. Checks: a bad model directory fails with a message naming
 * it; greedy generation through the API equals the reference; a bad request
 * is refused and the engine still works after it; sampled requests without a
 * seed (encore_sampling_default's ENCORE_SEED_RANDOM) each draw their own, so
 * three such runs are not all the same, while a seeded one (0 included)
 * gives the same tokens every time. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "encore.h"


enum { N_GEN = 24 };
static const int32_t prompt[] = {7, 100, 13, 42, 5, 77, 300, 12, 9, 1000 % 512, 64, 3};

static int read_expected(const char *path, int32_t *ids, int cap)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    if (!f) return -1;
    while (n < cap && fscanf(f, "%d", &ids[n]) == 1) n++;
    fclose(f);
    return n;
}

/* Sampled runs of the prompt under `seed`, the first N_GEN ids of each. */
static void sampled_runs(encore_engine *e, uint64_t seed, int32_t runs[3][N_GEN])
{
    encore_sampling s = encore_sampling_default();
    s.max_tokens = N_GEN;
    s.temperature = 1.5;
    s.ignore_eos = 1;
    s.seed = seed;
    for (int r = 0; r < 3; r++) {
        size_t n = 0;
        int stopped = -1;
        CHECK(encore_generate_ids(e, prompt, sizeof prompt / sizeof prompt[0], &s, runs[r], N_GEN, &n,
                                  &stopped) == ENCORE_OK);
        CHECK(n == N_GEN);
    }
}

static void test_seeds(encore_engine *e)
{
    int32_t runs[3][N_GEN];
    CHECK(encore_sampling_default().seed == ENCORE_SEED_RANDOM);
    sampled_runs(e, ENCORE_SEED_RANDOM, runs);
    int differ = memcmp(runs[0], runs[1], sizeof runs[0]) != 0 || memcmp(runs[1], runs[2], sizeof runs[0]) != 0;
    CHECK(differ); /* three equal runs of 24 tokens at T = 1.5: the seed did not vary */
    static const uint64_t seeds[] = {0, 42};
    for (int i = 0; i < 2; i++) {
        sampled_runs(e, seeds[i], runs);
        CHECK(!memcmp(runs[0], runs[1], sizeof runs[0]) && !memcmp(runs[1], runs[2], sizeof runs[0]));
    }
    printf("ok seeds: unseeded runs differ, seeded ones repeat\n");
}

/* The load_progress calls: how many, the last fraction, and whether every
 * one was in [0, 1] and no smaller than the one before. */
typedef struct progress_calls {
    int n, ok;
    double last;
} progress_calls;

static void record_progress(void *user, double fraction)
{
    progress_calls *pc = user;
    pc->ok = (pc->n == 0 || pc->ok) && fraction >= 0.0 && fraction <= 1.0 && fraction >= pc->last;
    pc->last = fraction;
    pc->n++;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_api MODEL_DIR EXPECTED_IDS_FILE\n");
        return 2;
    }
    int32_t expected[N_GEN];
    CHECK(read_expected(argv[2], expected, N_GEN) == N_GEN);

    encore_engine *e = NULL;
    encore_options opt = encore_options_default();
    opt.model_dir = "/nonexistent/model";
    CHECK(encore_engine_create(&opt, &e) == ENCORE_ERR_IO && e == NULL);
    CHECK(strstr(encore_last_error(), "/nonexistent/model") != NULL);

    opt.model_dir = argv[1];
    progress_calls pc = {.last = -1.0};
    opt.load_progress = record_progress;
    opt.load_progress_user = &pc;
    CHECK(encore_engine_create(&opt, &e) == ENCORE_OK);
    CHECK(pc.n >= 2 && pc.last == 1.0 && pc.ok); /* a call per layer, ending at 1 */
    printf("ok load progress: %d calls, non-decreasing, ending at 1\n", pc.n);
    if (!e) return 1;
    encore_sampling greedy = {.max_tokens = N_GEN, .temperature = 0, .ignore_eos = 1};
    int32_t out[N_GEN];
    size_t n = 0;
    int stopped = -1;
    size_t n_prompt = sizeof prompt / sizeof prompt[0];
    CHECK(encore_generate_ids(e, prompt, n_prompt, &greedy, out, N_GEN, &n, &stopped) == ENCORE_OK);
    CHECK(n == N_GEN && stopped == 0);
    CHECK(memcmp(out, expected, sizeof out) == 0);

    int32_t bad[] = {1, -5};
    CHECK(encore_generate_ids(e, bad, 2, &greedy, out, N_GEN, &n, &stopped) == ENCORE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(encore_last_error(), "vocabulary") != NULL);
    CHECK(encore_generate_ids(e, prompt, n_prompt, &greedy, out, N_GEN, &n, &stopped) == ENCORE_OK);
    CHECK(n == N_GEN && memcmp(out, expected, sizeof out) == 0);
    test_seeds(e);

    encore_engine_destroy(e);
    encore_engine_destroy(NULL);
    if (check_failures) fprintf(stderr, "test_api: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
