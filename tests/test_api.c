/* test_api.c - the public C API, using nothing but include/encore.h.
 *
 * usage: test_api MODEL_DIR EXPECTED_IDS_FILE
 * EXPECTED_IDS_FILE holds the greedy continuation of the prompt below as
 * computed by the independent NumPy reference (tests/reference/qwen3_ref.py),
 * space-separated. Checks: a bad model directory fails with a message naming
 * it; greedy generation through the API equals the reference; a bad request
 * is refused and the engine still works after it. */
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
    CHECK(encore_engine_create(&opt, &e) == ENCORE_OK);
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

    encore_engine_destroy(e);
    encore_engine_destroy(NULL);
    if (check_failures) fprintf(stderr, "test_api: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
