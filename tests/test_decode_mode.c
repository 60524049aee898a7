/* test_decode_mode.c - engine_set_decode_mode: one engine, every decode mode
 * in turn, the same greedy tokens as an engine that runs eagerly throughout.
 *
 * White-box: the engine is created for 16 decode steps per replay and then
 * switched between eager, captured (1 step), 4 and 16 steps and back; each
 * round runs the same requests. A slot keeps one multi-step recording per
 * step count, so going back to 4 steps after 16 records nothing new; a
 * switch while a request is unfinished, or to more steps than the engine was
 * created with, is refused and changes nothing. A request that scores its
 * prompt runs multi-step once its prompt's logits are delivered.
 *
 * usage: test_decode_mode MODEL_DIR */
#include <string.h>

#include "check.h"
#include "engine/engine_impl.h"

enum { N_REQ = 3, N_GEN = 40 };

/* The requests; score_first: the first also asks for its prompt's logits. */
static void submit_all(engine *e, bool score_first)
{
    for (int r = 0; r < N_REQ; r++) {
        int32_t prompt[12];
        for (int i = 0; i < 12; i++) prompt[i] = (int32_t)(1 + (r * 37 + i * 11) % 400);
        engine_request_params p = {.prompt_ids = prompt,
                                   .n_prompt = 5 + 3 * r,
                                   .max_tokens = N_GEN,
                                   .ignore_eos = true,
                                   .prompt_logits = score_first && r == 0};
        int64_t id;
        CHECK(engine_add_request(e, &p, &id) == ENC_OK);
    }
}

/* Run the requests to the end; their tokens into out[N_REQ][N_GEN]. */
static void run_all(engine *e, int32_t out[N_REQ][N_GEN], bool score_first)
{
    int64_t first = e->next_id;
    submit_all(e, score_first);
    while (engine_has_unfinished(e)) CHECK(engine_step(e, NULL) == ENC_OK);
    for (int r = 0; r < N_REQ; r++) {
        const int32_t *ids;
        int64_t n;
        engine_finish f;
        CHECK(engine_request_output(e, first + r, &ids, &n, &f) == ENC_OK && n == N_GEN);
        if (n == N_GEN) memcpy(out[r], ids, sizeof out[r]);
        engine_release_request(e, first + r);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    engine_config cfg = {.model_dir = argv[1], .n_threads = 2, .decode_steps = 16, .no_prefix_caching = true};
    engine *e = NULL;
    CHECK(engine_create(&cfg, &e) == ENC_OK);
    cfg.eager = true;
    cfg.decode_steps = 1;
    engine *ref = NULL;
    CHECK(engine_create(&cfg, &ref) == ENC_OK);
    if (!e || !ref) return 1;
    static int32_t want[N_REQ][N_GEN], got[N_REQ][N_GEN];
    run_all(ref, want, false);

    const struct { bool eager; int64_t steps; } modes[] = {{true, 1}, {false, 1}, {false, 4}, {false, 16}, {false, 4}};
    int64_t captures_before_last = 0;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        CHECK(engine_set_decode_mode(e, modes[m].eager, modes[m].steps) == ENC_OK);
        if (m + 1 == sizeof modes / sizeof modes[0]) captures_before_last = e->stats.n_captures;
        int64_t trips = e->stats.n_multi_round_trips;
        run_all(e, got, false);
        CHECK(memcmp(got, want, sizeof got) == 0);
        /* the device-pick recording: K > 1, or K = 1 captured when the device samples */
        bool device_picks = !modes[m].eager && (modes[m].steps > 1 || e->device_sampler);
        CHECK((e->stats.n_multi_round_trips > trips) == device_picks);
    }
    CHECK(e->stats.n_captures == captures_before_last); /* 4 steps again: its recordings were kept */

    /* a request that scores its prompt (echo with logprobs) holds its batch to one step a
     * replay only until its prompt's logits are delivered, not for its whole generation */
    int64_t trips = e->stats.n_multi_round_trips;
    run_all(e, got, true);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK(e->stats.n_multi_round_trips > trips);

    CHECK(engine_set_decode_mode(e, false, 17) != ENC_OK); /* more than at creation */
    CHECK(engine_set_decode_mode(e, false, 0) != ENC_OK);
    submit_all(e, false);
    CHECK(engine_set_decode_mode(e, true, 1) != ENC_OK); /* requests unfinished */
    CHECK(!e->cfg.eager && e->cfg.decode_steps == 4);    /* and nothing changed */
    while (engine_has_unfinished(e)) CHECK(engine_step(e, NULL) == ENC_OK);
    engine_destroy(e);
    engine_destroy(ref);
    if (check_failures) fprintf(stderr, "test_decode_mode: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
