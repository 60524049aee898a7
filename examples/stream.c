/* stream.c - embedding encore: load a model, submit one prompt, print the
 * text as it streams. Uses nothing but include/encore.h.
 *
 * usage: stream MODEL_DIR [PROMPT [MAX_TOKENS]]
 *
 * The callback runs on the engine's own thread after each step that gave the
 * request tokens; main waits for the last one (finished != 0). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "encore.h"

typedef struct stream_state {
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    int done;
    char finish_reason[16];
    size_t n_prompt_tokens, n_output_tokens;
} stream_state;

/* Called on the engine thread: print the new text, and note the end. */
static void on_output(void *user, const encore_output *out)
{
    stream_state *st = user;
    fwrite(out->text, 1, out->text_len, stdout);
    fflush(stdout);
    if (!out->finished) return;
    pthread_mutex_lock(&st->mu);
    snprintf(st->finish_reason, sizeof st->finish_reason, "%s", out->finish_reason);
    st->n_prompt_tokens = out->n_prompt_tokens;
    st->n_output_tokens = out->n_output_tokens;
    st->done = 1;
    pthread_cond_signal(&st->done_cv);
    pthread_mutex_unlock(&st->mu);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: stream MODEL_DIR [PROMPT [MAX_TOKENS]]\n");
        return 2;
    }
    encore_options opt = encore_options_default();
    opt.model_dir = argv[1];
    encore_engine *e;
    if (encore_engine_create(&opt, &e) != ENCORE_OK) {
        fprintf(stderr, "stream: %s\n", encore_last_error());
        return 1;
    }
    encore_request req = {.prompt = argc > 2 ? argv[2] : "The capital of France is"};
    req.sampling = encore_sampling_default();
    req.sampling.max_tokens = argc > 3 ? atoi(argv[3]) : 32;

    stream_state st = {.done = 0};
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.done_cv, NULL);
    int64_t id;
    int rc = 0;
    if (encore_submit(e, &req, on_output, &st, &id) != ENCORE_OK) {
        fprintf(stderr, "stream: %s\n", encore_last_error());
        rc = 1;
    } else {
        pthread_mutex_lock(&st.mu);
        while (!st.done) pthread_cond_wait(&st.done_cv, &st.mu);
        pthread_mutex_unlock(&st.mu);
        printf("\n");
        fprintf(stderr, "[request %lld: %zu prompt tokens, %zu generated, finish_reason %s]\n", (long long)id,
                st.n_prompt_tokens, st.n_output_tokens, st.finish_reason);
    }
    encore_engine_destroy(e);
    pthread_cond_destroy(&st.done_cv);
    pthread_mutex_destroy(&st.mu);
    return rc;
}
