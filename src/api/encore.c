/* encore.c - the public C API (include/encore.h) over the engine. */
#include "encore.h"

#include <stdlib.h>

#include "engine/engine.h"

struct encore_engine {
    engine *eng;
};

const char *encore_status_to_string(encore_status s)
{
    return enc_status_to_string((enc_status)s);
}

const char *encore_last_error(void) { return enc_last_error(); }

encore_options encore_options_default(void)
{
    encore_options o = {0};
    return o;
}

encore_status encore_engine_create(const encore_options *opt, encore_engine **out)
{
    *out = NULL;
    if (!opt || !opt->model_dir)
        return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_engine_create: no model_dir");
    engine_config cfg = {
        .model_dir = opt->model_dir,
        .n_threads = opt->n_threads,
        .block_size = opt->block_size,
        .n_kv_blocks = opt->n_kv_blocks,
        .max_num_seqs = opt->max_num_seqs,
        .max_num_batched_tokens = opt->max_num_batched_tokens,
        .max_model_len = opt->max_model_len,
    };
    encore_engine *e = calloc(1, sizeof *e);
    if (!e) return (encore_status)enc_fail(ENC_ERR_OUT_OF_MEMORY, "encore_engine_create");
    enc_status s = engine_create(&cfg, &e->eng);
    if (s != ENC_OK) {
        free(e);
        return (encore_status)s;
    }
    *out = e;
    return ENCORE_OK;
}

void encore_engine_destroy(encore_engine *e)
{
    if (!e) return;
    engine_destroy(e->eng);
    free(e);
}

encore_status encore_generate_ids(encore_engine *e, const int32_t *prompt, size_t n_prompt,
                                  const encore_sampling *sampling, int32_t *out, size_t cap,
                                  size_t *n_out, int *stopped)
{
    if (!e || !sampling || !n_out || (!out && cap))
        return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_generate_ids: NULL argument");
    engine_request_params p = {
        .prompt_ids = prompt,
        .n_prompt = (int64_t)n_prompt,
        .max_tokens = sampling->max_tokens,
        .sampling = {.temperature = sampling->temperature, .seed = sampling->seed},
        .ignore_eos = sampling->ignore_eos != 0,
    };
    int64_t id = -1;
    enc_status s = engine_add_request(e->eng, &p, &id);
    const int32_t *ids = NULL;
    int64_t n = 0;
    engine_finish finish = ENGINE_NOT_FINISHED;
    while (s == ENC_OK && finish == ENGINE_NOT_FINISHED) {
        s = engine_step(e->eng, NULL);
        if (s == ENC_OK) s = engine_request_output(e->eng, id, &ids, &n, &finish);
    }
    if (s == ENC_OK) {
        *n_out = (size_t)n < cap ? (size_t)n : cap;
        for (size_t i = 0; i < *n_out; i++) out[i] = ids[i];
        if (stopped) *stopped = finish == ENGINE_FINISH_STOP;
    }
    if (id >= 0) engine_release_request(e->eng, id);
    return (encore_status)s;
}
