/* engine_or_exit.h - the engine tests' engine_create: on failure it prints
 * the message and exits, since nothing can be tested without the engine;
 * and the decode modes they run the same requests in. */
#ifndef ENC_TESTS_ENGINE_OR_EXIT_H
#define ENC_TESTS_ENGINE_OR_EXIT_H

#include <stdio.h>
#include <stdlib.h>

#include "engine/engine.h"

static engine *engine_or_exit(const engine_config *cfg)
{
    engine *e = NULL;
    if (engine_create(cfg, &e) != ENC_OK) {
        fprintf(stderr, "engine_create: %s\n", enc_last_error());
        exit(1);
    }
    return e;
}

/* A way to run decode steps: eager or captured, K steps per replay, a KV
 * pool of n_kv_blocks (0: the default; small ones preempt). */
typedef struct engine_test_mode {
    bool eager;
    int64_t K, n_kv_blocks;
    const char *what;
} engine_test_mode;

#endif
