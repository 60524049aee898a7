/* api_impl.h - the body of encore_engine, shared by encore.c (creation, model
 * info, text) and serve.c (the engine thread, submit, cancel, stats).
 *
 * Threads: the engine (engine.h) is driven by one thread only. Before the
 * first encore_submit that is the caller's; from then on it is the engine
 * thread serve.c starts. Other threads reach it only through the inbox:
 *
 *   encore_submit  ──► inbox (new requests) ─┐   mu + wake
 *   encore_cancel  ──► cancels (ids)        ─┤
 *                                             ▼
 *   engine thread: take both ─► engine_add_request / abort ─► engine_step
 *                  ─► callbacks (mu not held) ─► stats snapshot (under mu)
 */
#ifndef ENC_API_API_IMPL_H
#define ENC_API_API_IMPL_H

#include <pthread.h>
#include <stdbool.h>

#include "encore.h"
#include "api/structured.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

typedef struct api_request api_request;

/* Logprobs as a callback hands them out, grown as needed. */
typedef struct api_logprobs_buf {
    int32_t *ids;        /* [cap] */
    float *lp;           /* [cap] */
    encore_logprob *top; /* [cap * ENGINE_MAX_TOP_LOGPROBS] */
    int32_t *rank;       /* [cap] */
    size_t cap;
} api_logprobs_buf;

struct encore_engine {
    engine *eng;
    tokenizer *tok;         /* NULL: the model directory has no tokenizer.json */
    pthread_mutex_t tok_mu; /* tokenizer_encode is not thread-safe; decoding is */
    char *name;             /* the model directory's last component */
    api_structured *structured; /* the vocabulary and grammars of constrained requests */

    /* --- serving: mu guards these; the engine thread never holds it during
     * a step or a callback, so a callback may call encore_cancel --- */
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* the inbox or the cancels got something, or shutdown */
    pthread_t thread;
    bool thread_started;
    bool shutdown;              /* encore_engine_destroy began: submit refuses */
    api_request *inbox_head, *inbox_tail; /* submitted, not yet in the engine */
    int64_t n_inbox;
    int64_t *cancels;           /* [n_cancels] ids to abort */
    size_t n_cancels, cap_cancels;
    int64_t next_id;            /* the next request id (ids start at 1) */
    encore_stats stats;         /* snapshot made after each step */

    /* --- the engine thread's own --- */
    api_request *active_head, *active_tail; /* in the engine, in arrival order */
    int64_t *cancels_taken;     /* swapped with cancels under mu */
    size_t cap_cancels_taken;
    int64_t n_output_tokens, n_finished;
    int64_t n_step_failures, n_step_failures_in_a_row;
    int64_t n_fault_steps;      /* ENCORE_FAULT_STEPS: steps still to fail on purpose (tests) */
    int64_t step_delay_ms;      /* ENCORE_STEP_DELAY_MS: sleep before each step (tests), <= 60000 */
    api_logprobs_buf lp;        /* the logprobs of one callback's ids */
    api_logprobs_buf prompt_lp; /* and of its prompt (the first callback's) */
};

/* serve.c: set up and tear down the serving state (mutexes, the thread). */
enc_status serve_init(encore_engine *e);
/* Cancel every request, join the engine thread, free the queues. */
void serve_shutdown(encore_engine *e);

#endif
