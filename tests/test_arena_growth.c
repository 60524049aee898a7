/* test_arena_growth.c - a step arena that grows invalidates the recordings
 * bound to it.
 *
 * White-box: two engines run the same requests, one captured and one eager.
 * Midway, the captured engine is told its arena is tiny and gets one more
 * request, so the eager prefill step that follows grows the arena (a new
 * buffer; the old one is unmapped). The recordings made
 * against the old arena must be made again (the generation check); replaying
 * one would read unmapped memory. The tokens must still equal the eager
 * engine's, and the counters must show the new recordings.
 *
 * usage: test_arena_growth MODEL_DIR */
#include <string.h>

#include "check.h"
#include "engine/engine_impl.h"

enum { N_REQ = 4, N_GEN = 40 };

static void submit(engine *e, int r)
{
    int32_t prompt[12];
    for (int i = 0; i < 12; i++) prompt[i] = (int32_t)(1 + (r * 37 + i * 11) % 400);
    engine_request_params p = {.prompt_ids = prompt, .n_prompt = 4 + 2 * r, .max_tokens = N_GEN,
                               .ignore_eos = true};
    int64_t id;
    CHECK(engine_add_request(e, &p, &id) == ENC_OK && id == r);
}

/* An engine with requests [0, n) submitted. */
static engine *start(const char *dir, bool eager, int n)
{
    engine_config cfg = {.model_dir = dir, .n_threads = 2, .eager = eager, .decode_steps = 4};
    engine *e = NULL;
    CHECK(engine_create(&cfg, &e) == ENC_OK);
    for (int r = 0; e && r < n; r++) submit(e, r);
    return e;
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    engine *cap = start(argv[1], false, N_REQ - 1), *ref = start(argv[1], true, N_REQ);
    if (!cap || !ref) return 1;
    while (cap->stats.n_replays + cap->stats.n_multi_round_trips < 3) CHECK(engine_step(cap, NULL) == ENC_OK);
    uint64_t generation = cap->generation;
    int64_t captures = cap->stats.n_captures;
    cap->arena_size = 64; /* the next plan will not fit: the arena grows */
    submit(cap, N_REQ - 1); /* its prefill builds a graph; then the slot of 4 must record again */
    while (engine_has_unfinished(cap)) CHECK(engine_step(cap, NULL) == ENC_OK);
    while (engine_has_unfinished(ref)) CHECK(engine_step(ref, NULL) == ENC_OK);
    /* at least once: a multi-step graph planned later (the device sampler's
     * scratch) may outgrow the grown arena again */
    CHECK(cap->generation > generation);
    CHECK(cap->stats.n_captures > captures); /* recorded again against the new arena */
    for (int64_t r = 0; r < N_REQ; r++) {
        const int32_t *a, *b;
        int64_t na, nb;
        engine_finish fa, fb;
        CHECK(engine_request_output(cap, r, &a, &na, &fa) == ENC_OK);
        CHECK(engine_request_output(ref, r, &b, &nb, &fb) == ENC_OK);
        CHECK(na == N_GEN && nb == N_GEN && memcmp(a, b, sizeof *a * (size_t)na) == 0);
    }
    engine_destroy(cap);
    engine_destroy(ref);
    if (check_failures) fprintf(stderr, "test_arena_growth: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
