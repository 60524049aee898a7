/* encore.h - the public C API of encore, an LLM inference engine.
 *
 * Opaque handles and functions only; nothing here exposes the engine's
 * structures. Every function that can fail returns an encore_status and sets
 * a per-thread message read with encore_last_error().
 *
 *   encore_engine *e;
 *   encore_options opt = encore_options_default();
 *   opt.model_dir = "Qwen3-0.6B";
 *   if (encore_engine_create(&opt, &e) != ENCORE_OK) puts(encore_last_error());
 *   ...
 *   encore_engine_destroy(e);
 */
#ifndef ENCORE_H
#define ENCORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct encore_engine encore_engine;

typedef enum encore_status {
    ENCORE_OK = 0,
    ENCORE_ERR_INVALID_ARGUMENT,
    ENCORE_ERR_IO,
    ENCORE_ERR_FORMAT,
    ENCORE_ERR_UNSUPPORTED,
    ENCORE_ERR_OUT_OF_MEMORY,
    ENCORE_ERR_CAPTURE,
    ENCORE_ERR_INTERNAL,
} encore_status;

const char *encore_status_to_string(encore_status s);
/* This thread's last error message ("" when none). */
const char *encore_last_error(void);

typedef struct encore_options {
    const char *model_dir;          /* Hugging Face checkpoint directory */
    int n_threads;                  /* 0: one per CPU */
    int block_size;                 /* KV block size, 16 or 32 (0: 16) */
    int64_t n_kv_blocks;            /* 0: sized automatically */
    int max_num_seqs;               /* 0: 64 */
    int64_t max_num_batched_tokens; /* 0: 2048 */
    int64_t max_model_len;          /* 0: min(max_position_embeddings, 8192) */
} encore_options;

encore_options encore_options_default(void);
encore_status encore_engine_create(const encore_options *opt, encore_engine **out);
void encore_engine_destroy(encore_engine *e); /* NULL is a no-op */

typedef struct encore_sampling {
    int64_t max_tokens; /* >= 1 */
    double temperature; /* 0: greedy */
    uint64_t seed;
    int ignore_eos;     /* nonzero: do not stop at end-of-sequence tokens */
} encore_sampling;

/* Generate from a prompt of token ids, running the engine until this request
 * finishes. Writes up to `cap` generated ids to `out` and their number to
 * *n_out; *stopped is 1 when an end-of-sequence token ended it, else 0. */
encore_status encore_generate_ids(encore_engine *e, const int32_t *prompt, size_t n_prompt,
                                  const encore_sampling *sampling, int32_t *out, size_t cap,
                                  size_t *n_out, int *stopped);

#ifdef __cplusplus
}
#endif

#endif
