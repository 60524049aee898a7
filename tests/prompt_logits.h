/* prompt_logits.h - the tests' way to get the logits the engine computes at
 * every position of a token sequence: run it as a prompt_logits request and
 * collect the rows the engine's callback delivers. The reference for what a
 * decode step must have seen (the kernels are batch invariant: prefill and
 * decode give the same logits, bit for bit). */
#ifndef ENC_TESTS_PROMPT_LOGITS_H
#define ENC_TESTS_PROMPT_LOGITS_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine.h"

typedef struct prompt_logits_sink {
    float *rows; /* [n_pos, vocab] */
    int64_t n_pos, vocab;
} prompt_logits_sink;

static void prompt_logits__fn(void *user, int64_t request_id, int64_t pos, const float *logits,
                              int64_t vocab)
{
    (void)request_id;
    prompt_logits_sink *k = user;
    if (pos < k->n_pos && vocab <= k->vocab)
        memcpy(&k->rows[pos * vocab], logits, (size_t)vocab * sizeof(float));
    k->vocab = vocab;
}

/* The logits at every position of tokens[0..n), [n, *vocab], malloc'd (the
 * caller frees); vocab_max bounds the vocabulary. The engine must be idle. */
static float *prompt_logits_of(engine *e, const int32_t *tokens, int64_t n, int64_t vocab_max,
                               int64_t *vocab)
{
    prompt_logits_sink k = {
        .rows = malloc((size_t)(n * vocab_max) * sizeof(float)), .n_pos = n, .vocab = vocab_max};
    engine_set_logits_callback(e, prompt_logits__fn, &k);
    engine_request_params p = {
        .prompt_ids = tokens, .n_prompt = n, .max_tokens = 1, .prompt_logits = true};
    int64_t id;
    CHECK(engine_add_request(e, &p, &id) == ENC_OK);
    while (engine_has_unfinished(e))
        CHECK(engine_step(e, NULL) == ENC_OK);
    engine_release_request(e, id);
    engine_set_logits_callback(e, NULL, NULL);
    *vocab = k.vocab;
    return k.rows;
}

#endif
