/* engine.c - requests, the KV cache and the step loop: schedule, write the
 * step inputs, build and run the step graph, read the logits, sample. */
#include "engine/engine_impl.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "model/quantize.h"

const char *engine_finish_name(engine_finish f)
{
    switch (f) {
    case ENGINE_FINISH_LENGTH: return "length";
    case ENGINE_FINISH_STOP: return "stop";
    case ENGINE_FINISH_ERROR: return "error";
    default: return "none";
    }
}

/* --- creation ------------------------------------------------------------ */

/* The KV cache dtype of the config's name: the model's 16-bit type for
 * "auto" where the backend runs it (f16 for an f16 model, bf16 otherwise),
 * else f32; a named dtype the backend lacks is an error. */
static enc_status engine__kv_dtype(const engine *e, const qwen3_config *mc, enc_dtype *out)
{
    const char *name = e->cfg.kv_cache_dtype ? e->cfg.kv_cache_dtype : "auto";
    static const struct { const char *name; enc_dtype dtype; } known[] = {
        {"f32", ENC_F32}, {"float32", ENC_F32}, {"f16", ENC_F16}, {"float16", ENC_F16},
        {"half", ENC_F16}, {"bf16", ENC_BF16}, {"bfloat16", ENC_BF16}, {"q8_0", ENC_Q8_0},
    };
    if (strcmp(name, "auto") == 0) {
        enc_dtype want = mc->torch_dtype == ENC_F16 ? ENC_F16 : ENC_BF16;
        *out = backend_supports_kv_cache_dtype(e->be, want) ? want : ENC_F32;
        return ENC_OK;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(name, known[i].name) != 0) continue;
        if (!backend_supports_kv_cache_dtype(e->be, known[i].dtype))
            return enc_fail(ENC_ERR_UNSUPPORTED, "kv_cache_dtype %s: the %s backend has no %s KV cache",
                            name, e->be->iface->name, enc_dtype_name(known[i].dtype));
        if (known[i].dtype == ENC_Q8_0 && mc->head_dim % 32 != 0)
            return enc_fail(ENC_ERR_UNSUPPORTED,
                            "kv_cache_dtype q8_0: head_dim %lld is no multiple of its 32-value blocks",
                            (long long)mc->head_dim);
        *out = known[i].dtype;
        return ENC_OK;
    }
    return enc_fail(ENC_ERR_INVALID_ARGUMENT, "kv_cache_dtype '%s' is not auto, f32, f16, bf16 or q8_0", name);
}

/* Logits rows a step may return beyond one per sequence (the row each
 * sequence samples from): room for prompt_logits requests (encore logits),
 * whose prefill chunks the scheduler cuts to the rows left (sched__chunk), so
 * such a request's prompt advances by at most max_num_seqs + 64 tokens a
 * step, fewer when other sequences take rows. 64 is a trade, not a bound:
 * every row costs vocab_size floats in e->logits and in the step arena. */
enum { ENGINE__PROMPT_LOGITS_ROWS = 64 };

/* The tokenizer's eos_token first among the model's end-of-sequence ids
 * (added when config.json and generation_config.json do not name it: a
 * chat fine-tune of a base model keeps the base's <|endoftext|> there);
 * with the list full, it takes the last one's place. */
static enc_status engine__tokenizer_eos(const engine_config *c, qwen3_config *mc)
{
    if (!c->has_tokenizer_eos) return ENC_OK;
    int32_t id = c->tokenizer_eos;
    if (id < 0 || id >= mc->vocab_size)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "tokenizer_eos %d is outside the vocabulary [0, %lld)", id,
                        (long long)mc->vocab_size);
    int at = -1; /* its place now; the ids before it move up one */
    for (int i = 0; i < mc->n_eos; i++)
        if (mc->eos_token_ids[i] == id) at = i;
    if (at < 0 && mc->n_eos == QWEN3_MAX_EOS)
        enc_log_warn(
            "the model names %d end-of-sequence ids; the tokenizer's eos_token %d takes the "
            "place of the last, %d",
            QWEN3_MAX_EOS, id, mc->eos_token_ids[QWEN3_MAX_EOS - 1]);
    if (at < 0) at = mc->n_eos < QWEN3_MAX_EOS ? mc->n_eos++ : QWEN3_MAX_EOS - 1;
    memmove(mc->eos_token_ids + 1, mc->eos_token_ids, (size_t)at * sizeof *mc->eos_token_ids);
    mc->eos_token_ids[0] = id;
    return ENC_OK;
}

static enc_status engine__resolve_config(engine *e, const qwen3_config *mc)
{
    engine_config *c = &e->cfg;
    if (c->block_size == 0) c->block_size = 16;
    if (c->max_num_seqs == 0) c->max_num_seqs = 64;
    if (c->decode_steps == 0) c->decode_steps = 4;
    if (c->pooling) { /* prefill steps only: nothing is decoded, captured or sampled */
        c->eager = true;
        c->decode_steps = 1;
    }
    if (c->decode_steps < 1 || c->decode_steps > ENGINE_MAX_DECODE_STEPS)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "decode_steps %lld out of range [1, %d]", (long long)c->decode_steps,
                        ENGINE_MAX_DECODE_STEPS);
    e->decode_steps_max = c->decode_steps;
    if (c->sample_vocab == 0) c->sample_vocab = mc->vocab_size;
    if (c->sample_vocab > mc->vocab_size) /* a tokenizer of another model beside these weights */
        return enc_fail(ENC_ERR_FORMAT,
                        "the tokenizer knows %lld ids, more than the model's vocab_size %lld",
                        (long long)c->sample_vocab, (long long)mc->vocab_size);
    if (c->sample_vocab < 1)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "sample_vocab %lld is below 1",
                        (long long)c->sample_vocab);
    if (c->max_num_batched_tokens == 0) c->max_num_batched_tokens = ENGINE_DEFAULT_MAX_NUM_BATCHED_TOKENS;
    /* the model's length: max_position_embeddings, or as far as its rope
     * scaling stretches it (vLLM's rule) */
    int64_t model_len = enc_rope_context_limit(&mc->rope_scaling, mc->max_position_embeddings);
    if (c->max_model_len == 0) c->max_model_len = model_len < 8192 ? model_len : 8192;
    if (c->max_num_seqs < 1 || c->max_num_seqs > 4096)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "max_num_seqs %d out of range [1, 4096]", c->max_num_seqs);
    if (c->max_num_batched_tokens < 1 || c->max_num_batched_tokens > (1 << 20))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "max_num_batched_tokens %lld out of range [1, 1048576]",
                        (long long)c->max_num_batched_tokens);
    if (c->max_model_len < 2 || c->max_model_len > model_len)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "max_model_len %lld out of range [2, %lld] (%s)",
                        (long long)c->max_model_len, (long long)model_len,
                        model_len > mc->max_position_embeddings
                            ? "the rope scaling's context length"
                            : "max_position_embeddings");
    e->max_blocks_per_seq = (c->max_model_len + c->block_size - 1) / c->block_size;
    ENC_TRY(engine__kv_dtype(e, mc, &e->kv_dtype));
    if (c->n_kv_blocks == 0) {
        int64_t per_block =
            kv_cache_bytes_per_token(mc->n_layers, mc->n_kv_heads * mc->head_dim, e->kv_dtype) * c->block_size;
        int64_t budget = c->kv_cache_bytes ? c->kv_cache_bytes : (int64_t)2 << 30;
        int64_t want = e->max_blocks_per_seq * c->max_num_seqs;
        c->n_kv_blocks = budget / per_block < want ? budget / per_block : want;
    }
    if (c->n_kv_blocks < 1 || c->n_kv_blocks > INT32_MAX / 64)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "KV cache of %lld blocks is out of range",
                        (long long)c->n_kv_blocks);
    e->logits_rows_max = c->max_num_seqs + ENGINE__PROMPT_LOGITS_ROWS;
    return ENC_OK;
}

/* Host input arrays sized for any step (an eager one or the largest
 * decode slot), the eager inputs, and the logits buffers. */
static enc_status engine__alloc_inputs(engine *e)
{
    int64_t S = e->cfg.max_num_seqs, L = e->logits_rows_max;
    int64_t T = e->cfg.max_num_batched_tokens > S ? e->cfg.max_num_batched_tokens : S;
    for (int i = 0; i < IN_COUNT; i++) {
        e->host[i] = calloc((size_t)step_input_elems(e, i, T, S, L), sizeof(int32_t));
        if (!e->host[i]) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "step inputs for %lld tokens", (long long)T);
    }
    ENC_TRY(step_inputs_alloc(e, &e->eager_in, e->cfg.max_num_batched_tokens, S, L));
    int64_t V = e->model->cfg.vocab_size;
    e->out_width = qwen3_output_width(e->model);
    e->logits = malloc((size_t)(L * e->out_width) * sizeof *e->logits);
    ENC_TRY(sampler_init(&e->sampler, V));
    e->batch.entries = calloc((size_t)S, sizeof *e->batch.entries);
    e->multi_ids = malloc((size_t)(e->decode_steps_max * S) * sizeof *e->multi_ids);
    e->sample_rows = calloc((size_t)S, sizeof *e->sample_rows);
    e->multi_lp = malloc((size_t)(e->decode_steps_max * S) * sizeof *e->multi_lp);
    if (!e->multi_ids || !e->sample_rows || !e->multi_lp)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "multi-step ids");
    if (e->cfg.verify_capture) e->verify_logits = malloc((size_t)(S * V) * sizeof *e->verify_logits);
    if (!e->logits || !e->batch.entries || (e->cfg.verify_capture && !e->verify_logits))
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "logits buffer of %lld x %lld", (long long)L,
                        (long long)e->out_width);
    return ENC_OK;
}

enc_status engine_create(const engine_config *cfg, engine **out)
{
    *out = NULL;
    engine *e = calloc(1, sizeof *e);
    if (!e) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "engine");
    e->cfg = *cfg;
    enc_status s = backend_create_named(cfg->device, cfg->n_threads, &e->be);
    if (s == ENC_OK) {
        e->cfg.n_threads = backend_host_threads(e->be);
        backend_describe(e->be, e->device, sizeof e->device);
    }
    if (s == ENC_OK)
        e->device_sampler = !cfg->pooling && backend_supports_op(e->be, GRAPH_OP_SAMPLE);
    if (s == ENC_OK && cfg->bf16_activations && !backend_supports_bf16_activations(e->be))
        s = enc_fail(
            ENC_ERR_UNSUPPORTED,
            "bf16 activations need the CPU backend, built by a compiler that knows "
            "-mavx512bf16, on a CPU with AVX512-BF16, with its avx512 kernels (this is %s)",
            e->device);
    gguf_file_type quantize = {ENC_F32, false};
    if (s == ENC_OK) s = model_quantize_type(cfg->quantize, &quantize);
    if (s == ENC_OK)
        s = qwen3_model_load(cfg->model_dir, e->be, quantize, cfg->pooling, cfg->load_progress,
                             cfg->load_progress_user, &e->model);
    if (s == ENC_OK) s = qwen3_model_set_bf16_activations(e->model, cfg->bf16_activations);
    if (s == ENC_OK && cfg->bf16_activations && !qwen3_model_bf16_matmuls(e->model))
        enc_log_warn("bf16 activations: this model has no bf16 matrix (its matmuls are over f32, "
                     "f16 or block-quantized weights), so they change nothing");
    e->cfg.load_progress = NULL; /* used while loading only: its user data may not outlive the call */
    e->cfg.quantize = NULL;      /* likewise (the model keeps the type it chose) */
    e->cfg.load_progress_user = NULL;
    if (s == ENC_OK) s = engine__tokenizer_eos(&e->cfg, &e->model->cfg);
    if (s == ENC_OK) s = engine__resolve_config(e, &e->model->cfg);
    if (s == ENC_OK) {
        const qwen3_config *mc = &e->model->cfg;
        s = kv_cache_init(&e->kv, e->be, mc->n_layers, mc->n_kv_heads * mc->head_dim, e->kv_dtype,
                          (int32_t)e->cfg.n_kv_blocks, e->cfg.block_size);
        if (s == ENC_OK && !e->cfg.no_prefix_caching) s = kv_pool_enable_prefix_caching(&e->kv.pool);
    }
    if (s == ENC_OK) s = engine__alloc_inputs(e);
    if (s == ENC_OK) s = step_arena_init(e);
    if (s == ENC_OK) s = decode_slots_init(e);
    if (s != ENC_OK) {
        engine_destroy(e);
        return s;
    }
    enc_log_info("engine: %lld KV blocks of %d tokens (%s), max_model_len %lld, max_num_seqs %d, arena %.1f MiB",
                 (long long)e->cfg.n_kv_blocks, e->cfg.block_size, enc_dtype_name(e->kv_dtype),
                 (long long)e->cfg.max_model_len,
                 e->cfg.max_num_seqs, (double)e->arena_size / (1 << 20));
    *out = e;
    return ENC_OK;
}

/* Free a sequence's constraint state and mask, once. */
static void engine__drop_constraint(engine_seq *s)
{
    if (s->constraint.destroy) s->constraint.destroy(s->constraint.state);
    memset(&s->constraint, 0, sizeof s->constraint);
    free(s->allowed);
    s->allowed = NULL;
}

/* The records of prompt[0..n): the first (no token before it) holds its id
 * and a NAN logprob; the others are filled as the prompt is computed. */
static engine_token_logprob *engine__prompt_lps_new(const int32_t *prompt, int64_t n)
{
    engine_token_logprob *lp = calloc((size_t)(n ? n : 1), sizeof *lp);
    if (lp) lp[0] = (engine_token_logprob){.id = n ? prompt[0] : -1, .logprob = NAN};
    return lp;
}

static void engine__seq_free(engine_seq *s)
{
    engine__drop_constraint(s);
    kv_block_table_free(&s->table);
    free(s->tokens);
    free(s->logprobs);
    free(s->prompt_lps);
    free(s->logit_bias);
    free(s->embedding);
    free(s);
}

void engine_destroy(engine *e)
{
    if (!e) return;
    for (int64_t i = 0; i < e->n_seqs; i++) {
        kv_block_table_release(&e->kv.pool, &e->seqs[i]->table);
        engine__seq_free(e->seqs[i]);
    }
    free(e->seqs);
    if (e->be) {
        decode_slots_free(e);
        step_inputs_free(e, &e->eager_in);
    }
    step_arena_free(e);
    for (int i = 0; i < IN_COUNT; i++) free(e->host[i]);
    free(e->logits);
    free(e->verify_logits);
    free(e->multi_ids);
    free(e->sample_rows);
    free(e->multi_lp);
    sampler_free(&e->sampler);
    free(e->batch.entries);
    if (e->kv.k) kv_cache_free(&e->kv);
    qwen3_model_free(e->model);
    backend_destroy(e->be);
    free(e);
}

/* --- requests ------------------------------------------------------------ */

/* A logit bias: at most ENGINE_MAX_LOGIT_BIAS entries, ids in the
 * vocabulary, biases in [-100, 100]. Messages name the entry. */
static enc_status engine__check_logit_bias(const engine_sampling *sp, int64_t n_vocab)
{
    const enc_status bad = ENC_ERR_INVALID_ARGUMENT;
    if (sp->n_logit_bias && !sp->logit_bias)
        return enc_fail(bad, "request: logit_bias is NULL with n_logit_bias %d", sp->n_logit_bias);
    if (sp->n_logit_bias < 0 || sp->n_logit_bias > ENGINE_MAX_LOGIT_BIAS)
        return enc_fail(bad, "request: %d logit_bias entries (at most %d)", sp->n_logit_bias,
                        ENGINE_MAX_LOGIT_BIAS);
    for (int i = 0; i < sp->n_logit_bias; i++) {
        const graph_sample_bias *b = &sp->logit_bias[i];
        if (b->id < 0 || b->id >= n_vocab)
            return enc_fail(bad,
                            "request: logit_bias[%d]: token %d is outside the vocabulary [0, %lld)",
                            i, b->id, (long long)n_vocab);
        if (!(b->bias >= -100.0f && b->bias <= 100.0f))
            return enc_fail(
                bad,
                "request: logit_bias[%d]: the bias of token %d must be in [-100, 100] (got %g)", i,
                b->id, (double)b->bias);
    }
    return ENC_OK;
}

/* The sampling parameters' ranges, as vLLM checks them (0 also reads as
 * "off" for top_p and repetition_penalty: a zeroed struct is greedy). */
static enc_status engine__check_sampling(const engine_sampling *sp, int64_t max_tokens)
{
    const enc_status bad = ENC_ERR_INVALID_ARGUMENT;
    if (!(sp->temperature >= 0.0) || sp->temperature > 1e6)
        return enc_fail(bad, "request: temperature must be >= 0 (got %g)", sp->temperature);
    if (sp->top_k < -1)
        return enc_fail(bad, "request: top_k must be >= 1, or -1 or 0 for off (got %lld)", (long long)sp->top_k);
    if (!(sp->top_p >= 0.0 && sp->top_p <= 1.0))
        return enc_fail(bad, "request: top_p must be in (0, 1], or 0 for off (got %g)", sp->top_p);
    if (!(sp->min_p >= 0.0 && sp->min_p <= 1.0))
        return enc_fail(bad, "request: min_p must be in [0, 1] (got %g)", sp->min_p);
    if (!(sp->repetition_penalty >= 0.0) || sp->repetition_penalty > 1e6)
        return enc_fail(bad, "request: repetition_penalty must be > 0, or 0 for off (got %g)",
                        sp->repetition_penalty);
    if (!(sp->presence_penalty >= -2.0 && sp->presence_penalty <= 2.0))
        return enc_fail(bad, "request: presence_penalty must be in [-2, 2] (got %g)", sp->presence_penalty);
    if (!(sp->frequency_penalty >= -2.0 && sp->frequency_penalty <= 2.0))
        return enc_fail(bad, "request: frequency_penalty must be in [-2, 2] (got %g)", sp->frequency_penalty);
    if (sp->min_tokens < 0 || sp->min_tokens > max_tokens)
        return enc_fail(bad, "request: min_tokens must be in [0, max_tokens = %lld] (got %lld)",
                        (long long)max_tokens, (long long)sp->min_tokens);
    if (sp->top_logprobs < 0 || sp->top_logprobs > ENGINE_MAX_TOP_LOGPROBS)
        return enc_fail(bad, "request: top_logprobs must be in [0, %d] (got %d)", ENGINE_MAX_TOP_LOGPROBS,
                        sp->top_logprobs);
    if (sp->top_logprobs > 0 && !sp->logprobs)
        return enc_fail(bad, "request: top_logprobs (%d) needs logprobs", sp->top_logprobs);
    return ENC_OK;
}

enc_status engine_check_request(const engine *e, const engine_request_params *p)
{
    const qwen3_config *mc = &e->model->cfg;
    if (!p->prompt_ids || p->n_prompt < 1)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: the prompt is empty");
    bool scores_prompt = p->prompt_logits || p->prompt_logprobs;
    if (e->cfg.pooling && (p->max_tokens || scores_prompt || p->constraint))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: the model runs as an embedding model (pooling): it generates "
                        "nothing and scores no prompt (max_tokens must be 0)");
    if (p->max_tokens < (scores_prompt || e->cfg.pooling ? 0 : 1))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: max_tokens must be >= %d (got %lld)",
                        scores_prompt ? 0 : 1, (long long)p->max_tokens);
    for (int64_t i = 0; i < p->n_prompt; i++)
        if (p->prompt_ids[i] < 0 || p->prompt_ids[i] >= mc->vocab_size)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: prompt token %lld is %d, outside the vocabulary [0, %lld)",
                            (long long)i, p->prompt_ids[i], (long long)mc->vocab_size);
    ENC_TRY(engine__check_sampling(&p->sampling, p->max_tokens));
    if (p->prompt_logprobs &&
        (p->prompt_top_logprobs < 0 || p->prompt_top_logprobs > ENGINE_MAX_TOP_LOGPROBS))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: prompt_top_logprobs must be in [0, %d] (got %d)",
                        ENGINE_MAX_TOP_LOGPROBS, p->prompt_top_logprobs);
    ENC_TRY(engine__check_logit_bias(&p->sampling, mc->vocab_size));
    if (p->n_stop_ids < 0 || p->n_stop_ids > ENGINE_MAX_STOP_IDS || (p->n_stop_ids && !p->stop_ids))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: %d stop ids (at most %d)", p->n_stop_ids,
                        ENGINE_MAX_STOP_IDS);
    if (p->constraint && (!p->constraint->fill_mask || !p->constraint->accept))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "request: a constraint needs fill_mask and accept");
    if (p->n_prompt + p->max_tokens > e->cfg.max_model_len)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: prompt (%lld tokens) + max_tokens (%lld) exceeds max_model_len %lld",
                        (long long)p->n_prompt, (long long)p->max_tokens, (long long)e->cfg.max_model_len);
    int64_t blocks = (p->n_prompt + p->max_tokens + e->cfg.block_size - 1) / e->cfg.block_size;
    if (blocks > e->kv.pool.n_blocks)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "request: needs %lld KV blocks but the pool has only %d",
                        (long long)blocks, e->kv.pool.n_blocks);
    return ENC_OK;
}

enc_status engine_add_request(engine *e, const engine_request_params *p, int64_t *request_id)
{
    ENC_TRY(engine_check_request(e, p));
    if (e->n_seqs == e->cap_seqs) {
        int64_t cap = e->cap_seqs ? e->cap_seqs * 2 : 16;
        engine_seq **seqs = realloc(e->seqs, (size_t)cap * sizeof *seqs);
        if (!seqs) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request table");
        e->seqs = seqs;
        e->cap_seqs = cap;
    }
    engine_seq *s = calloc(1, sizeof *s);
    if (!s) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request");
    s->tokens = malloc((size_t)(p->n_prompt + p->max_tokens) * sizeof *s->tokens);
    if (p->sampling.logprobs)
        s->logprobs = malloc((size_t)(p->max_tokens + 1) * sizeof *s->logprobs);
    if (p->prompt_logprobs) s->prompt_lps = engine__prompt_lps_new(p->prompt_ids, p->n_prompt);
    size_t mask_bytes = (size_t)GRAPH_SAMPLE_MASK_WORDS(e->model->cfg.vocab_size) * sizeof *s->allowed;
    if (p->constraint) s->allowed = malloc(mask_bytes);
    int n_bias = p->sampling.n_logit_bias;
    if (n_bias) s->logit_bias = malloc((size_t)n_bias * sizeof *s->logit_bias);
    if (!s->tokens || (p->sampling.logprobs && !s->logprobs) || (p->constraint && !s->allowed) ||
        (p->prompt_logprobs && !s->prompt_lps) || (n_bias && !s->logit_bias) ||
        kv_block_table_init(&s->table, (int32_t)e->max_blocks_per_seq) != ENC_OK) {
        engine__seq_free(s);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "request of %lld tokens", (long long)p->n_prompt);
    }
    memcpy(s->tokens, p->prompt_ids, (size_t)p->n_prompt * sizeof *s->tokens);
    s->n_tokens = s->n_prompt = p->n_prompt;
    s->max_tokens = p->max_tokens;
    s->sampling = p->sampling;
    for (int i = 0; i < n_bias; i++) { /* subnormal biases as 0: a device may flush them */
        s->logit_bias[i] = p->sampling.logit_bias[i];
        if (fabsf(s->logit_bias[i].bias) < FLT_MIN) s->logit_bias[i].bias = 0.0f;
    }
    s->sampling.logit_bias = s->logit_bias; /* the request's copy */
    s->ignore_eos = p->ignore_eos;
    s->prompt_logits = p->prompt_logits || p->prompt_logprobs;
    s->prompt_top_logprobs = p->prompt_logprobs ? p->prompt_top_logprobs : 0;
    s->n_stop_ids = p->n_stop_ids;
    s->stop_token = -1;
    if (p->n_stop_ids) memcpy(s->stop_ids, p->stop_ids, (size_t)p->n_stop_ids * sizeof *s->stop_ids);
    if (p->constraint) s->constraint = *p->constraint; /* its state is the engine's from here */
    s->id = e->next_id++;
    e->seqs[e->n_seqs++] = s;
    *request_id = s->id;
    return ENC_OK;
}

static engine_seq *engine__find(const engine *e, int64_t id)
{
    int64_t lo = 0, hi = e->n_seqs; /* ids grow with arrival: binary search */
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (e->seqs[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < e->n_seqs && e->seqs[lo]->id == id ? e->seqs[lo] : NULL;
}

enc_status engine_request_output(const engine *e, int64_t id, const int32_t **ids, int64_t *n_ids,
                                 engine_finish *finish)
{
    const engine_seq *s = engine__find(e, id);
    if (!s) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "no request with id %lld", (long long)id);
    *ids = s->tokens + s->n_prompt;
    *n_ids = s->n_tokens - s->n_prompt;
    *finish = s->finish;
    return ENC_OK;
}

int64_t engine_request_cached_tokens(const engine *e, int64_t id)
{
    const engine_seq *s = engine__find(e, id);
    return s ? s->n_cached_tokens : 0;
}

const char *engine_request_error(const engine *e, int64_t id)
{
    const engine_seq *s = engine__find(e, id);
    return s && s->finish == ENGINE_FINISH_ERROR ? s->error : NULL;
}

enc_status engine_request_embedding(const engine *e, int64_t id, const float **v, int64_t *n)
{
    const engine_seq *s = engine__find(e, id);
    if (!s) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "no request with id %lld", (long long)id);
    *v = s->embedding;
    *n = s->embedding ? e->out_width : 0;
    return ENC_OK;
}

int32_t engine_request_stop_token(const engine *e, int64_t id)
{
    const engine_seq *s = engine__find(e, id);
    return s ? s->stop_token : -1;
}

enc_status engine_request_prompt_logprobs(const engine *e, int64_t id,
                                          const engine_token_logprob **lp, int64_t *n)
{
    const engine_seq *s = engine__find(e, id);
    if (!s) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "no request with id %lld", (long long)id);
    *lp = s->prompt_lps;
    *n = s->prompt_lps ? s->n_prompt : 0;
    return ENC_OK;
}

enc_status engine_request_logprobs(const engine *e, int64_t id, const engine_token_logprob **lp, int64_t *n)
{
    const engine_seq *s = engine__find(e, id);
    if (!s) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "no request with id %lld", (long long)id);
    *lp = s->logprobs;
    *n = s->logprobs ? s->n_tokens - s->n_prompt : 0;
    return ENC_OK;
}

void engine_release_request(engine *e, int64_t id)
{
    engine_seq *s = engine__find(e, id);
    if (!s) return;
    kv_block_table_release(&e->kv.pool, &s->table);
    int64_t i = 0;
    while (e->seqs[i] != s) i++;
    memmove(&e->seqs[i], &e->seqs[i + 1], (size_t)(e->n_seqs - i - 1) * sizeof *e->seqs);
    e->n_seqs--;
    engine__seq_free(s);
}

bool engine_has_unfinished(const engine *e)
{
    for (int64_t i = 0; i < e->n_seqs; i++)
        if (e->seqs[i]->state != SEQ_FINISHED) return true;
    return false;
}

void engine_count_requests(const engine *e, int64_t *n_running, int64_t *n_waiting)
{
    *n_running = *n_waiting = 0;
    for (int64_t i = 0; i < e->n_seqs; i++) {
        *n_running += e->seqs[i]->state == SEQ_RUNNING;
        *n_waiting += e->seqs[i]->state == SEQ_WAITING;
    }
}

/* --- one step ------------------------------------------------------------ */

static bool engine__is_eos(const engine *e, int32_t id)
{
    const qwen3_config *mc = &e->model->cfg;
    for (int i = 0; i < mc->n_eos; i++)
        if (mc->eos_token_ids[i] == id) return true;
    return false;
}

static void engine__finish(engine *e, engine_seq *s, engine_finish why)
{
    s->finish = why;
    s->state = SEQ_FINISHED;
    kv_block_table_release(&e->kv.pool, &s->table);
    engine__drop_constraint(s);
}

/* n more tokens of s have their K/V in the cache; full blocks among them
 * join the prefix cache. */
static void engine__computed(engine *e, engine_seq *s, int64_t n)
{
    s->n_computed += n;
    kv_prefix_commit(&e->kv.pool, &s->table, s->tokens, s->n_computed);
}

/* Append a generated token; finish the sequence on a stop condition.
 * Returns whether it finished. */
static bool engine__append(engine *e, engine_seq *s, int32_t next)
{
    s->tokens[s->n_tokens++] = next;
    engine_finish why = ENGINE_NOT_FINISHED;
    bool stop_id = false, eos = !s->ignore_eos && engine__is_eos(e, next);
    for (int i = 0; i < s->n_stop_ids; i++) stop_id |= s->stop_ids[i] == next;
    /* vLLM's check_stop: the length first, so that the last token allowed is
     * "length" whatever it is; then an EOS, then a stop id (its stop_reason) */
    if (s->n_tokens - s->n_prompt == s->max_tokens || s->n_tokens >= e->cfg.max_model_len)
        why = ENGINE_FINISH_LENGTH;
    else if (stop_id || eos)
        why = ENGINE_FINISH_STOP;
    /* a stop id, or an EOS other than the model's first (generation_config.json's
     * <|endoftext|> beside <|im_end|>), is the stop id reported: vLLM moves those
     * EOS ids into the request's stop_token_ids */
    if (why == ENGINE_FINISH_STOP && (!eos || next != e->model->cfg.eos_token_ids[0]))
        s->stop_token = next;
    if (why == ENGINE_NOT_FINISHED) return false;
    engine__finish(e, s, why);
    return true;
}

/* Take a chosen token: a constrained sequence's constraint accepts it first;
 * GRAPH_SAMPLE_NO_TOKEN (its mask allowed nothing) or a refusal finishes the
 * sequence with an error and appends nothing. Returns whether it finished. */
static bool engine__take(engine *e, engine_seq *s, int32_t id)
{
    int64_t pos = s->n_tokens;
    if (id == GRAPH_SAMPLE_NO_TOKEN)
        snprintf(s->error, sizeof s->error, "request %lld: the constraint allows no token at position %lld",
                 (long long)s->id, (long long)pos);
    else if (s->constraint.accept && !s->constraint.accept(s->constraint.state, id))
        snprintf(s->error, sizeof s->error, "request %lld: the constraint refused token %d at position %lld",
                 (long long)s->id, id, (long long)pos);
    else
        return engine__append(e, s, id);
    enc_log_warn("%s", s->error);
    engine__finish(e, s, ENGINE_FINISH_ERROR);
    return true;
}

/* Whether min_tokens masks id for s: an EOS (under ignore_eos too, as vLLM)
 * or one of its stop ids. */
static bool engine__min_tokens_masks(const engine *e, const engine_seq *s, int64_t id)
{
    for (int i = 0; i < s->n_stop_ids; i++)
        if (s->stop_ids[i] == id) return true;
    return engine__is_eos(e, (int32_t)id);
}

/* A mask that allows some ids below sample_vocab, every one of them an id
 * min_tokens masks (a finished grammar, allowed_token_ids of EOS ids): before
 * min_tokens the row would allow nothing and the request end with an error,
 * so the constraint wins and min_tokens is dropped from here on. The reply
 * ends at the id picked ("stop"), unless ignore_eos carries it past an EOS. */
static void engine__constraint_min_tokens(const engine *e, engine_seq *s, int32_t V)
{
    int64_t n_out = s->n_tokens - s->n_prompt;
    if (n_out >= s->sampling.min_tokens) return;
    int64_t n = e->cfg.sample_vocab < V ? e->cfg.sample_vocab : V; /* the ids a row may pick */
    bool any = false;
    for (int64_t w = 0; w * 32 < n; w++) {
        for (int b = 0; s->allowed[w] && b < 32 && w * 32 + b < n; b++) {
            if (!(s->allowed[w] >> b & 1u)) continue;
            if (!engine__min_tokens_masks(e, s, w * 32 + b)) return;
            any = true;
        }
    }
    if (any) s->sampling.min_tokens = n_out;
}

/* Ask the constraint of every sequence that samples in the batch for the
 * mask of its next token (before the step: the device sampler reads it in
 * the replay, the host sampler after it). */
static void engine__fill_masks(engine *e, const sched_batch *b)
{
    int32_t V = (int32_t)e->model->cfg.vocab_size;
    for (int i = 0; i < b->n_entries; i++) {
        engine_seq *s = b->entries[i].seq;
        if (!b->entries[i].sample || !s->constraint.fill_mask) continue;
        memset(s->allowed, 0, (size_t)GRAPH_SAMPLE_MASK_WORDS(V) * sizeof *s->allowed);
        s->constraint.fill_mask(s->constraint.state, s->allowed, V);
        engine__constraint_min_tokens(e, s, V);
    }
}

/* Pick a sequence's next token from its logits row; record its logprobs
 * when asked. */
static int32_t engine__pick(engine *e, engine_seq *s, const float *row)
{
    const qwen3_config *mc = &e->model->cfg;
    int64_t n_out = s->n_tokens - s->n_prompt;
    sampler_input in = {
        .logits = row,
        .n_sample = e->cfg.sample_vocab,
        .params = &s->sampling,
        .prompt = s->tokens,
        .n_prompt = s->n_prompt,
        .output = s->tokens + s->n_prompt,
        .n_output = n_out,
        .eos_ids = mc->eos_token_ids,
        .n_eos = mc->n_eos, /* masked before min_tokens, under ignore_eos too (vLLM) */
        .stop_ids = s->stop_ids,
        .n_stop_ids = s->n_stop_ids,
        .seed = s->sampling.seed,
        .position = s->n_tokens,
        .allowed = s->constraint.fill_mask ? s->allowed : NULL,
    };
    s->host_pick = false;
    return sampler_pick(&e->sampler, &in, s->logprobs ? &s->logprobs[n_out] : NULL);
}

/* Keep a pooling request's output row, its last prompt token's hidden
 * state; false (the reason in s->error) when memory for it runs out. */
static bool engine__pool(const engine *e, engine_seq *s, const float *row)
{
    s->embedding = malloc((size_t)e->out_width * sizeof *s->embedding);
    if (!s->embedding) {
        snprintf(s->error, sizeof s->error, "request %lld: out of memory for its embedding",
                 (long long)s->id);
        enc_log_warn("%s", s->error);
        return false;
    }
    memcpy(s->embedding, row, (size_t)e->out_width * sizeof *s->embedding);
    return true;
}

/* Deliver prompt logits, sample, and retire finished sequences. */
static int64_t engine__consume(engine *e, const sched_batch *b)
{
    int64_t W = e->out_width, n_finished = 0;
    for (int i = 0; i < b->n_entries; i++) {
        const sched_entry *en = &b->entries[i];
        engine_seq *s = en->seq;
        int64_t first_pos = s->n_computed + en->n_new - en->n_logits;
        engine__computed(e, s, en->n_new);
        for (int64_t r = 0; s->prompt_logits && r < en->n_logits; r++) {
            int64_t pos = first_pos + r;
            if (pos < s->n_logits_sent || pos >= s->n_prompt) continue;
            const float *row = &e->logits[(en->logits_row + r) * W];
            if (e->logits_fn) e->logits_fn(e->logits_user, s->id, pos, row, W);
            if (s->prompt_lps && pos + 1 < s->n_prompt)
                sampler_prompt_logprobs(&e->sampler, row, e->cfg.sample_vocab,
                                        s->prompt_top_logprobs, s->tokens[pos + 1],
                                        &s->prompt_lps[pos + 1]);
            s->n_logits_sent = pos + 1;
        }
        if (!en->sample) continue;
        if (s->max_tokens == 0) { /* the prompt scored or pooled, nothing to generate */
            bool pooled = !e->cfg.pooling || engine__pool(e, s, &e->logits[en->logits_row * W]);
            engine__finish(e, s, pooled ? ENGINE_FINISH_LENGTH : ENGINE_FINISH_ERROR);
            n_finished++;
            continue;
        }
        if (engine__take(e, s,
                         engine__pick(e, s, &e->logits[(en->logits_row + en->n_logits - 1) * W])))
            n_finished++;
    }
    return n_finished;
}

/* Record the device's logprobs of s's next token (before it is appended). */
static void engine__take_logprobs(engine_seq *s, const graph_sample_logprobs *d)
{
    _Static_assert((int)GRAPH_SAMPLE_MAX_TOP == (int)ENGINE_MAX_TOP_LOGPROBS, "a device record holds every alternative");
    engine_token_logprob *lp = &s->logprobs[s->n_tokens - s->n_prompt];
    lp->id = d->id;
    lp->logprob = d->logprob;
    lp->n_top = d->n_top;
    lp->rank = 0;
    memcpy(lp->top_ids, d->top_ids, (size_t)d->n_top * sizeof *lp->top_ids);
    memcpy(lp->top_logprobs, d->top_logprobs, (size_t)d->n_top * sizeof *lp->top_logprobs);
}

/* Take the K (e->multi_steps) tokens per sequence of a multi-step replay, stopping each
 * sequence at its first stop condition (later tokens are discarded). The
 * device's argmax spans the whole vocabulary: an id >= sample_vocab is
 * dropped with every later one, and the step that chose it does not count
 * as computed, so the next step computes the last kept token again (the same
 * K/V, batch invariance) and picks on the host with the mask. */
static int64_t engine__consume_multi(engine *e, const sched_batch *b, engine_step_stats *st)
{
    int64_t n_finished = 0, P = e->multi_rows;
    for (int i = 0; i < b->n_entries; i++) {
        engine_seq *s = b->entries[i].seq;
        for (int64_t k = 0; k < e->multi_steps && s->state == SEQ_RUNNING; k++) {
            int32_t id = e->multi_ids[k * P + i];
            if (id >= e->cfg.sample_vocab) {
                s->host_pick = true;
                break;
            }
            /* a prompt's last token (after a chunk or a prefix hit) counts as prefill */
            if (s->n_computed < s->n_prompt) st->n_prefill_tokens++;
            else st->n_decode_tokens++;
            engine__computed(e, s, 1); /* step k wrote the K/V of the token it read */
            if (s->logprobs && id >= 0) engine__take_logprobs(s, &e->multi_lp[k * P + i]);
            if (engine__take(e, s, id)) n_finished++;
        }
    }
    return n_finished;
}

/* Lay out the inputs and run one step of one token per scheduled token:
 * eager, or a decode slot. */
static enc_status engine__run_single(engine *e, const sched_batch *b, engine_step_stats *st)
{
    step_fill_inputs(e, b);
    if (!e->cfg.eager && decode_batch(b)) ENC_TRY(decode_slots_run(e, b));
    else ENC_TRY(step_run_eager(e, b));
    for (int i = 0; i < b->n_entries; i++) {
        const sched_entry *en = &b->entries[i];
        if (en->n_new == 1 && en->seq->n_computed >= en->seq->n_prompt)
            st->n_decode_tokens++;
        else
            st->n_prefill_tokens += en->n_new;
    }
    st->n_finished = engine__consume(e, b);
    return ENC_OK;
}

/* On error nothing of the step's work is lost or half applied. The
 * scheduler's decisions stand: sequences it admitted are running and hold
 * the blocks of this step's tokens, those it preempted wait to be recomputed.
 * But no sequence has computed, appended or finished anything (n_computed
 * and its tokens are unchanged, and it commits no block to the prefix
 * cache), so the next engine_step
 * schedules those tokens again. A multi-step batch keeps the blocks reserved
 * ahead in its tables, as after a replay that stopped early; they go back
 * with the sequence. The decode slot and the step arena are as
 * decode_slots_run and step.c's arena fitting leave them on error.
 * stats.n_steps does not count the step; the counters of what did happen
 * (eager runs, captures, replays, preemptions) do. *stats is not written. */
enc_status engine_step(engine *e, engine_step_stats *stats)
{
    sched_batch *b = &e->batch;
    sched_plan_step(e, b);
    engine_step_stats st = {.n_seqs = b->n_entries, .n_preempted = b->n_preempted,
                            .n_cached_tokens = b->n_cached_tokens};
    if (b->n_entries > 0) {
        engine__fill_masks(e, b);
        if (decode_multi_reserve(e, b)) {
            ENC_TRY(decode_slots_run_multi(e, b));
            st.n_finished = engine__consume_multi(e, b, &st);
            st.n_passes = e->multi_steps;
        } else {
            ENC_TRY(engine__run_single(e, b, &st));
            st.n_passes = 1;
        }
        e->stats.n_steps++;
        e->stats.n_prefill_tokens += st.n_prefill_tokens;
        e->stats.n_decode_tokens += st.n_decode_tokens;
    }
    engine_count_requests(e, &st.n_running, &st.n_waiting);
    if (stats) *stats = st;
    return ENC_OK;
}

/* --- accessors ----------------------------------------------------------- */

void engine_set_logits_callback(engine *e, engine_logits_fn fn, void *user)
{
    e->logits_fn = fn;
    e->logits_user = user;
}

const qwen3_config *engine_model_config(const engine *e) { return &e->model->cfg; }
const engine_config *engine_get_config(const engine *e) { return &e->cfg; }
engine_stats engine_get_stats(const engine *e)
{
    engine_stats st = e->stats;
    engine_count_requests(e, &st.n_running, &st.n_waiting);
    st.n_kv_blocks_used = e->kv.pool.n_blocks - e->kv.pool.n_free;
    st.n_kv_blocks_cached = e->kv.pool.prefix ? e->kv.pool.prefix->n_cached : 0;
    return st;
}

const char *engine_backend_name(const engine *e)
{
    return e->be->iface->name;
}

const char *engine_device_description(const engine *e)
{
    return e->device;
}

const char *engine_kv_cache_dtype(const engine *e)
{
    return enc_dtype_name(e->kv.dtype);
}

int64_t engine_kv_bytes_per_token(const engine *e)
{
    return kv_cache_bytes_per_token(e->kv.n_layers, e->kv.kv_dim, e->kv.dtype);
}
int64_t engine_decode_weight_bytes(const engine *e) { return e->model->decode_weight_bytes; }
int64_t engine_kv_free_blocks(const engine *e) { return e->kv.pool.n_free; }
double engine_device_seconds(const engine *e) { return backend_device_seconds(e->be); }
int64_t engine_kv_total_blocks(const engine *e) { return e->kv.pool.n_blocks; }

enc_status engine_set_decode_mode(engine *e, bool eager, int64_t decode_steps)
{
    if (engine_has_unfinished(e))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "decode mode: cannot change while requests are unfinished");
    if (e->cfg.pooling)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "decode mode: a pooling engine decodes nothing");
    if (decode_steps < 1 || decode_steps > e->decode_steps_max)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "decode_steps %lld out of range [1, %lld] (the engine's at creation)",
                        (long long)decode_steps, (long long)e->decode_steps_max);
    e->cfg.eager = eager;
    e->cfg.decode_steps = decode_steps;
    return ENC_OK;
}
