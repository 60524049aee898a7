/* encore.c - the public C API (include/encore.h): creating an engine, the
 * model's facts, and text (tokenize, detokenize, chat prompts). Serving
 * (submit, cancel, stats, generate) is in serve.c. */
#include "encore.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_impl.h"
#include "api/model_tokenizer.h"
#include "base/log.h"
#include "model/pooling_config.h"
#include "tokenizer/chat_template.h"

const char *encore_status_to_string(encore_status s)
{
    return enc_status_to_string((enc_status)s);
}

const char *encore_last_error(void) { return enc_last_error(); }

void encore_free(void *p) { free(p); }

void encore_log_warning(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    enc_log_warn("%s", line);
}

encore_options encore_options_default(void)
{
    encore_options o = {0};
    return o;
}

encore_sampling encore_sampling_default(void)
{
    encore_sampling s = {.max_tokens = 16, .top_p = 1.0, .repetition_penalty = 1.0,
                         .seed = ENCORE_SEED_RANDOM, .skip_special_tokens = 1};
    return s;
}

/* --- creation ------------------------------------------------------------ */

/* The model directory's last component ("a/b/Qwen3-0.6B/" -> "Qwen3-0.6B"). */
static char *encore__model_name(const char *dir)
{
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    char *name = malloc(end - start + 1);
    if (name) {
        memcpy(name, dir + start, end - start);
        name[end - start] = '\0';
    }
    return name;
}

/* What the engine takes from the tokenizer: sampling never picks an id it
 * has no token for (the embedding has padding rows past its vocabulary);
 * its eos_token ends a sequence, as the model's first EOS (vLLM's
 * tokenizer.eos_token_id: a chat fine-tune of a base model names
 * <|im_end|> there while config.json keeps <|endoftext|>). */
static void encore__from_tokenizer(engine_config *cfg, const tokenizer *tok)
{
    if (!tok) return;
    cfg->sample_vocab = tokenizer_vocab_size(tok);
    engine_config_tokenizer_eos(cfg, tokenizer_eos_id(tok));
}

/* vLLM's --runner: generate, pooling, or auto (pooling for a
 * sentence-transformers checkpoint). Pooling checks the checkpoint's
 * pooling mode where it names one. */
static enc_status encore__runner(const encore_options *opt, bool *pooling)
{
    const char *runner = opt->runner ? opt->runner : "auto";
    int embedding = 0;
    *pooling = false;
    if (!strcmp(runner, "generate")) return ENC_OK;
    if (strcmp(runner, "auto") && strcmp(runner, "pooling"))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "runner '%s' is not auto, generate or pooling",
                        runner);
    ENC_TRY(pooling_config_detect(opt->model_dir, &embedding));
    *pooling = embedding || !strcmp(runner, "pooling");
    if (embedding && !strcmp(runner, "auto"))
        enc_log_info("%s: a sentence-transformers embedding model (modules.json): runner pooling",
                     opt->model_dir);
    return ENC_OK;
}

static enc_status encore__config(const encore_options *opt, engine_config *cfg)
{
    if (!opt || !opt->model_dir)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_engine_create: no model_dir");
    bool pooling = false;
    ENC_TRY(encore__runner(opt, &pooling));
    *cfg = (engine_config){
        .model_dir = opt->model_dir,
        .n_threads = opt->n_threads,
        .block_size = opt->block_size,
        .n_kv_blocks = opt->n_kv_blocks,
        .max_num_seqs = opt->max_num_seqs,
        .max_num_batched_tokens = opt->max_num_batched_tokens,
        .max_model_len = opt->max_model_len,
        .eager = opt->eager != 0,
        .decode_steps = opt->decode_steps,
        .no_prefix_caching = opt->no_prefix_caching != 0,
        .kv_cache_dtype = opt->kv_cache_dtype,
        .device = opt->device,
        .quantize = opt->quantize,
        .load_progress = opt->load_progress,
        .load_progress_user = opt->load_progress_user,
        .pooling = pooling,
        .bf16_activations = opt->bf16_activations != 0,
    };
    return ENC_OK;
}

encore_status encore_engine_create(const encore_options *opt, encore_engine **out)
{
    *out = NULL;
    engine_config cfg;
    enc_status s = encore__config(opt, &cfg);
    if (s != ENC_OK) return (encore_status)s;
    encore_engine *e = calloc(1, sizeof *e);
    if (!e) return (encore_status)enc_fail(ENC_ERR_OUT_OF_MEMORY, "encore_engine_create");
    s = serve_init(e);
    if (s != ENC_OK) {
        free(e);
        return (encore_status)s;
    }
    e->name = encore__model_name(opt->model_dir);
    if (!e->name) s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "encore_engine_create");
    if (s == ENC_OK) s = model_tokenizer_load(opt->model_dir, 1, &e->tok);
    if (s == ENC_OK && opt->chat_template) {
        s = e->tok ? model_tokenizer_chat_template(e->tok, opt->chat_template)
                   : enc_fail(ENC_ERR_INVALID_ARGUMENT,
                              "chat template %s: the model %s has no tokenizer", opt->chat_template,
                              opt->model_dir);
    }
    if (s == ENC_OK) {
        encore__from_tokenizer(&cfg, e->tok);
        s = engine_create(&cfg, &e->eng);
    }
    if (s == ENC_OK)
        s = api_structured_create(e->tok, (int32_t)engine_model_config(e->eng)->vocab_size, &e->structured);
    if (s == ENC_OK) {
        e->stats.kv_blocks_total = engine_kv_total_blocks(e->eng);
        *out = e;
        return ENCORE_OK;
    }
    encore_engine_destroy(e);
    return (encore_status)s;
}

void encore_engine_destroy(encore_engine *e)
{
    if (!e) return;
    serve_shutdown(e);
    engine_destroy(e->eng); /* frees the constraints still running: before their grammars */
    api_structured_destroy(e->structured);
    tokenizer_free(e->tok);
    free(e->name);
    free(e);
}

encore_status encore_get_model_info(encore_engine *e, encore_model_info *out)
{
    if (!e || !out) return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_get_model_info: NULL argument");
    *out = (encore_model_info){
        .name = e->name,
        .max_model_len = engine_get_config(e->eng)->max_model_len,
        .vocab_size = engine_model_config(e->eng)->vocab_size,
        .has_tokenizer = e->tok != NULL,
        .has_chat_template = e->tok && chat_template_family_known(chat_template_get_family(e->tok)),
        .pooling = engine_get_config(e->eng)->pooling,
        .hidden_size = engine_model_config(e->eng)->hidden_size,
    };
    return ENCORE_OK;
}

void encore_embedding_normalize(float *v, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += (double)v[i] * v[i];
    if (!(sum > 0.0)) return;
    double scale = 1.0 / sqrt(sum);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(v[i] * scale);
}

unsigned encore_sampling_model_defaults(encore_engine *e, encore_sampling *s, unsigned given)
{
    if (!e || !s) return 0;
    const qwen3_generation_defaults *g = &engine_model_config(e->eng)->generation;
    static const struct {
        unsigned model, api;
    } bits[] = {
        {QWEN3_GEN_TEMPERATURE, ENCORE_SAMPLING_TEMPERATURE},
        {QWEN3_GEN_TOP_K, ENCORE_SAMPLING_TOP_K},
        {QWEN3_GEN_TOP_P, ENCORE_SAMPLING_TOP_P},
        {QWEN3_GEN_MIN_P, ENCORE_SAMPLING_MIN_P},
        {QWEN3_GEN_REPETITION_PENALTY, ENCORE_SAMPLING_REPETITION_PENALTY},
    };
    unsigned set = 0;
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if ((g->set & bits[i].model) && !(given & bits[i].api)) set |= bits[i].api;
    if (set & ENCORE_SAMPLING_TEMPERATURE) s->temperature = g->temperature;
    if (set & ENCORE_SAMPLING_TOP_K) s->top_k = g->top_k;
    if (set & ENCORE_SAMPLING_TOP_P) s->top_p = g->top_p;
    if (set & ENCORE_SAMPLING_MIN_P) s->min_p = g->min_p;
    if (set & ENCORE_SAMPLING_REPETITION_PENALTY) s->repetition_penalty = g->repetition_penalty;
    return set;
}

encore_status encore_get_engine_info(encore_engine *e, encore_engine_info *out)
{
    if (!e || !out)
        return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT,
                                       "encore_get_engine_info: NULL argument");
    const engine_config *c = engine_get_config(e->eng);
    *out = (encore_engine_info){
        .device = engine_backend_name(e->eng),
        .device_description = engine_device_description(e->eng),
        .n_threads = c->n_threads,
        .block_size = c->block_size,
        .n_kv_blocks = engine_kv_total_blocks(e->eng),
        .kv_cache_dtype = engine_kv_cache_dtype(e->eng),
        .kv_bytes_per_token = engine_kv_bytes_per_token(e->eng),
        .max_num_seqs = c->max_num_seqs,
        .max_num_batched_tokens = c->max_num_batched_tokens,
        .max_model_len = c->max_model_len,
        .eager = c->eager,
        .decode_steps = c->decode_steps,
        .prefix_caching = !c->no_prefix_caching,
        .bf16_activations = c->bf16_activations,
    };
    return ENCORE_OK;
}

/* --- text ------------------------------------------------------------------ */

static enc_status encore__need_tokenizer(const encore_engine *e, const char *what)
{
    if (!e) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: no engine", what);
    if (!e->tok) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: the model %s has no tokenizer.json", what, e->name);
    return ENC_OK;
}

/* --- chat --------------------------------------------------------------------------- */

/* The chat template's messages and tool calls, converted from the API's:
 * every call's arguments re-printed as the template's tojson prints the
 * parsed object. One allocation each for msgs, calls and arguments; the
 * caller frees them with encore__chat_free. */
typedef struct encore__chat {
    chat_message *msgs;    /* [n] */
    chat_tool_call *calls; /* [all messages' tool calls] */
    char **args;           /* [same]: the re-printed arguments */
    size_t n_calls;
} encore__chat;

static void encore__chat_free(encore__chat *c)
{
    for (size_t i = 0; i < c->n_calls; i++) free(c->args[i]);
    free(c->msgs);
    free(c->calls);
    free(c->args);
}

/* Message i's tool call k into c->calls[c->n_calls]. */
static enc_status encore__chat_call(encore__chat *c, const encore_chat_message *m, size_t i,
                                    size_t k, const char *what)
{
    const encore_chat_tool_call *tc = &m->tool_calls[k];
    if (!tc->name || !tc->arguments)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: message %zu, tool call %zu has no %s", what,
                        i, k, tc->name ? "arguments" : "name");
    char *args = NULL;
    enc_status s = chat_template_tojson(tc->arguments, strlen(tc->arguments), &args);
    if (s != ENC_OK) /* the reader's reason: where the JSON is wrong, or too deep */
        return enc_fail_context(ENC_ERR_INVALID_ARGUMENT,
                                "%s: message %zu, tool call %zu (%s): the arguments", what, i, k,
                                tc->name);
    if (args[0] != '{') {
        free(args);
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: message %zu, tool call %zu (%s): the "
                        "arguments are not the JSON text of an object", what, i, k, tc->name);
    }
    c->args[c->n_calls] = args;
    c->calls[c->n_calls++] = (chat_tool_call){.name = tc->name, .arguments = args};
    return ENC_OK;
}

static enc_status encore__chat_messages(const encore_chat_message *msgs, size_t n,
                                        encore__chat *c, const char *what)
{
    memset(c, 0, sizeof *c);
    size_t n_calls = 0;
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: message %zu has no role", what, i);
        if (msgs[i].n_tool_calls && !msgs[i].tool_calls)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: message %zu: tool_calls is NULL",
                            what, i);
        n_calls += msgs[i].n_tool_calls;
    }
    c->msgs = calloc(n ? n : 1, sizeof *c->msgs);
    c->calls = calloc(n_calls ? n_calls : 1, sizeof *c->calls);
    c->args = calloc(n_calls ? n_calls : 1, sizeof *c->args);
    if (!c->msgs || !c->calls || !c->args) {
        encore__chat_free(c);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s: %zu messages", what, n);
    }
    for (size_t i = 0; i < n; i++) {
        chat_tool_call *first = c->calls + c->n_calls;
        for (size_t k = 0; k < msgs[i].n_tool_calls; k++) {
            enc_status s = encore__chat_call(c, &msgs[i], i, k, what);
            if (s == ENC_OK) continue;
            encore__chat_free(c);
            return s;
        }
        c->msgs[i] = (chat_message){.role = msgs[i].role, .content = msgs[i].content,
                                    .reasoning_content = msgs[i].reasoning_content,
                                    .tool_calls = first, .n_tool_calls = msgs[i].n_tool_calls};
    }
    return ENC_OK;
}

encore_chat_options encore_chat_options_default(void)
{
    return (encore_chat_options){.enable_thinking = 1};
}

static chat_template_opts encore__template_opts(const encore_chat_options *opt)
{
    return (chat_template_opts){.add_generation_prompt = !opt->no_generation_prompt,
                                .enable_thinking = opt->enable_thinking,
                                .tools_json = opt->tools_json,
                                .continue_final_message = opt->continue_final_message};
}

int encore_chat_opens_reasoning(encore_engine *e, const encore_chat_options *opt)
{
    if (!e || !e->tok || !opt) return 0;
    chat_template_opts o = encore__template_opts(opt);
    return chat_template_opens_reasoning(e->tok, &o);
}

encore_tool_format encore_chat_tool_format(encore_engine *e)
{
    if (!e || !e->tok) return ENCORE_TOOL_FORMAT_HERMES;
    return chat_template_tool_format(e->tok) == CHAT_TOOLS_XML ? ENCORE_TOOL_FORMAT_XML
                                                               : ENCORE_TOOL_FORMAT_HERMES;
}

/* The conversation rendered; with spans (not NULL) also where its strings went. */
static enc_status encore__chat_render(encore_engine *e, const encore_chat_message *msgs, size_t n,
                                      const encore_chat_options *opt, char **text, size_t **spans,
                                      size_t *n_spans, const char *what)
{
    enc_status s = encore__need_tokenizer(e, what);
    if (s != ENC_OK) return s;
    if (!opt || (n && !msgs)) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
    encore__chat c;
    chat_template_opts o = encore__template_opts(opt);
    s = encore__chat_messages(msgs, n, &c, what);
    if (s != ENC_OK) return s;
    if (spans)
        s = chat_template_render_spans(e->tok, c.msgs, n, &o, text, spans, n_spans);
    else
        s = chat_template_render(e->tok, c.msgs, n, &o, text);
    encore__chat_free(&c);
    return s;
}

encore_status encore_chat_prompt_opts(encore_engine *e, const encore_chat_message *msgs, size_t n,
                                      const encore_chat_options *opt, char **out)
{
    if (!out) return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_chat_prompt: NULL argument");
    *out = NULL;
    return (encore_status)encore__chat_render(e, msgs, n, opt, out, NULL, NULL,
                                              "encore_chat_prompt");
}

encore_status encore_chat_prompt(encore_engine *e, const encore_chat_message *msgs, size_t n,
                                 int enable_thinking, char **out)
{
    encore_chat_options o = {.enable_thinking = enable_thinking};
    return encore_chat_prompt_opts(e, msgs, n, &o, out);
}

encore_status encore_chat_tokenize_opts(encore_engine *e, const encore_chat_message *msgs,
                                        size_t n, const encore_chat_options *opt, int32_t **ids,
                                        size_t *n_ids)
{
    if (!ids || !n_ids)
        return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_chat_tokenize: NULL argument");
    *ids = NULL;
    *n_ids = 0;
    char *text = NULL;
    size_t *spans = NULL, n_spans = 0;
    enc_status s = encore__chat_render(e, msgs, n, opt, &text, &spans, &n_spans,
                                       "encore_chat_tokenize");
    if (s == ENC_OK) {
        pthread_mutex_lock(&e->tok_mu);
        s = tokenizer_encode_plain(e->tok, text, strlen(text), spans,
                                   opt->plain_content ? n_spans : 0, ids, n_ids);
        pthread_mutex_unlock(&e->tok_mu);
    }
    free(text);
    free(spans);
    return (encore_status)s;
}

encore_status encore_chat_tokenize(encore_engine *e, const encore_chat_message *msgs, size_t n,
                                   int enable_thinking, int plain_content, int32_t **ids,
                                   size_t *n_ids)
{
    encore_chat_options o = {.enable_thinking = enable_thinking, .plain_content = plain_content};
    return encore_chat_tokenize_opts(e, msgs, n, &o, ids, n_ids);
}

encore_status encore_tokenize(encore_engine *e, const char *text, size_t len, int32_t **ids,
                              size_t *n_ids)
{
    return encore_tokenize_special(e, text, len, 0, ids, n_ids);
}

/* ids[0..n) between the tokenizer's special-token template (its
 * post-processor's prefix and suffix); *ids reallocated. */
static enc_status encore__add_special(const tokenizer *tok, int32_t **ids, size_t *n)
{
    const int32_t *pre, *suf;
    size_t n_pre, n_suf;
    tokenizer_special_template(tok, &pre, &n_pre, &suf, &n_suf);
    if (!n_pre && !n_suf) return ENC_OK;
    int32_t *out = malloc((n_pre + *n + n_suf) * sizeof *out);
    if (!out) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "encore_tokenize: %zu ids", *n);
    if (n_pre) memcpy(out, pre, n_pre * sizeof *out);
    if (*n) memcpy(out + n_pre, *ids, *n * sizeof *out);
    if (n_suf) memcpy(out + n_pre + *n, suf, n_suf * sizeof *out);
    free(*ids);
    *ids = out;
    *n += n_pre + n_suf;
    return ENC_OK;
}

encore_status encore_tokenize_special(encore_engine *e, const char *text, size_t len,
                                      int add_special_tokens, int32_t **ids, size_t *n_ids)
{
    enc_status s = encore__need_tokenizer(e, "encore_tokenize");
    if (s != ENC_OK) return (encore_status)s;
    if ((!text && len) || !ids || !n_ids) return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_tokenize: NULL argument");
    pthread_mutex_lock(&e->tok_mu);
    s = tokenizer_encode(e->tok, text ? text : "", len, ids, n_ids);
    pthread_mutex_unlock(&e->tok_mu);
    if (s == ENC_OK && add_special_tokens &&
        (s = encore__add_special(e->tok, ids, n_ids)) != ENC_OK) {
        free(*ids);
        *ids = NULL;
    }
    return (encore_status)s;
}

/* ids without the model's padding rows, the ids in [tokenizer vocabulary,
 * model vocabulary), which decode to nothing as in Hugging Face's decode
 * (it skips ids it has no token for); an id outside the model's vocabulary
 * is refused. *kept is malloc'd, NULL when no id is dropped (decode ids). */
static enc_status encore__drop_padding_ids(encore_engine *e, const int32_t *ids, size_t n,
                                           int32_t **kept, size_t *n_kept)
{
    int64_t tok_vocab = tokenizer_vocab_size(e->tok);
    int64_t model_vocab = engine_model_config(e->eng)->vocab_size;
    size_t n_padding = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= model_vocab)
            return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                            "encore_detokenize: ids[%zu] = %d is outside the vocabulary [0, %lld)",
                            i, ids[i], (long long)model_vocab);
        n_padding += ids[i] >= tok_vocab;
    }
    *kept = NULL;
    *n_kept = n;
    if (!n_padding) return ENC_OK;
    *kept = malloc(n * sizeof **kept);
    if (!*kept) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "encore_detokenize: %zu ids", n);
    *n_kept = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < tok_vocab) (*kept)[(*n_kept)++] = ids[i];
    return ENC_OK;
}

const char *encore_version(void)
{
    return ENCORE_VERSION_STRING;
}

const char *encore_token_string(encore_engine *e, int32_t id)
{
    return e && e->tok ? tokenizer_token_text(e->tok, id) : NULL;
}

encore_status encore_detokenize(encore_engine *e, const int32_t *ids, size_t n_ids,
                                int skip_special_tokens, char **text, size_t *len)
{
    enc_status s = encore__need_tokenizer(e, "encore_detokenize");
    if (s != ENC_OK) return (encore_status)s;
    if ((!ids && n_ids) || !text) return (encore_status)enc_fail(ENC_ERR_INVALID_ARGUMENT, "encore_detokenize: NULL argument");
    int32_t *kept = NULL;
    size_t n = 0, n_kept = 0;
    s = encore__drop_padding_ids(e, ids, n_ids, &kept, &n_kept);
    if (s == ENC_OK)
        s = tokenizer_decode_bytes(e->tok, kept ? kept : ids, n_kept, skip_special_tokens, text,
                                   &n);
    free(kept);
    if (len) *len = n;
    return (encore_status)s;
}
