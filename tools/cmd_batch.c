/* cmd_batch.c - `encore batch`: many requests through the engine at once.
 *
 * Input: JSON lines {"prompt_ids":[...] | "prompt":"text", "max_tokens":N,
 * "temperature":T, "seed":S, "arrive_step":K, and vLLM's sampling fields};
 * a request is submitted just before engine step K. Output, in input order,
 * one line per request: {"index":I,"ids":[...],"text":"...","finish_reason":
 * "length"|"stop"}, with "logprobs":[...] when asked for ("text" only where
 * the model has a tokenizer). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/encore_tools.h"
#include "cli.h"
#include "commands.h"

static const char batch_help[] =
    "usage: encore batch -m DIR --requests FILE\n\n"
    "Run every request of FILE (JSON lines) through the engine at once and print\n"
    "one line per request, in input order:\n"
    "  {\"index\":I,\"ids\":[...],\"text\":\"...\",\"finish_reason\":\"length\"|\"stop\"}\n"
    "(\"text\": the ids decoded, special tokens left out; null where an id has no\n"
    "token; absent where the model has no tokenizer)\n"
    "Request fields: prompt_ids (array) or prompt (text), max_tokens (default 16),\n"
    "temperature (default 0), seed (default 0), ignore_eos (default false),\n"
    "arrive_step (the engine step before which it is submitted, default 0),\n"
    "top_k (default -1: off), top_p (1: off), min_p (0: off), repetition_penalty\n"
    "(1: off), presence_penalty (0), frequency_penalty (0), min_tokens (0),\n"
    "logprobs (false; a number N: true with top_logprobs N), top_logprobs (0..20),\n"
    "logit_bias ({\"<token id>\": bias in [-100, 100], ...}, at most 300).\n"
    "With logprobs the line also holds \"logprobs\":[{\"id\":I,\"logprob\":L,\n"
    "\"top\":[[I,L],...]},...], one per generated token, under the raw model\n"
    "distribution.\n\n"
    "options:\n"
    "  --requests FILE          the requests ('-' for stdin)\n"
    "  --stats                  print the engine's counters as JSON to stderr\n"
    "  -h, --help               show this help\n\n";

typedef struct batch_request {
    int32_t *ids;
    int64_t n_ids;
    graph_sample_bias *bias; /* [params.sampling.n_logit_bias] its logit_bias */
    engine_request_params params;
    int64_t arrive_step;
    int64_t engine_id; /* -1 until submitted */
} batch_request;

typedef struct batch_set {
    batch_request *reqs;
    int64_t n, cap;
} batch_set;

static void batch_set_free(batch_set *b)
{
    for (int64_t i = 0; i < b->n; i++) {
        free(b->reqs[i].ids);
        free(b->reqs[i].bias);
    }
    free(b->reqs);
}

static bool batch__number(const cJSON *o, const char *field, double min, double max, double *out,
                          int64_t line)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!v) return true;
    if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max) {
        cli_error("batch", "line %lld: \"%s\" must be a number in [%g, %g]", (long long)line, field, min, max);
        return false;
    }
    *out = v->valuedouble;
    return true;
}

/* batch__number for a field that counts: a whole number. */
static bool batch__integer(const cJSON *o, const char *field, double min, double max, double *out,
                           int64_t line)
{
    if (!batch__number(o, field, min, max, out, line)) return false;
    if (*out == floor(*out)) return true;
    cli_error("batch", "line %lld: \"%s\" must be a whole number, got %g", (long long)line, field,
              *out);
    return false;
}

/* *out = the field's value, false when absent; an error for another type. */
static bool batch__bool(const cJSON *o, const char *field, bool *out, int64_t line)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (v && !cJSON_IsBool(v)) {
        cli_error("batch", "line %lld: \"%s\" must be true or false", (long long)line, field);
        return false;
    }
    *out = cJSON_IsTrue(v);
    return true;
}

static bool batch__prompt_ids(const cJSON *arr, batch_request *r, int64_t line)
{
    int n = cJSON_GetArraySize(arr);
    r->ids = malloc((size_t)(n ? n : 1) * sizeof *r->ids);
    if (!r->ids) return false;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > INT32_MAX ||
            it->valuedouble != (double)(int32_t)it->valuedouble) {
            cli_error("batch", "line %lld: prompt_ids[%lld] is not a token id", (long long)line, (long long)r->n_ids);
            return false;
        }
        r->ids[r->n_ids++] = (int32_t)it->valuedouble;
    }
    return true;
}

/* "logit_bias": {"<token id>": bias, ...}, as the server reads it (a
 * repeated id: the last bias wins); the engine checks ids and biases. */
static bool batch__logit_bias(const cJSON *o, batch_request *r, int64_t line)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "logit_bias");
    if (!v || cJSON_IsNull(v)) return true;
    int n = cJSON_GetArraySize(v);
    if (!cJSON_IsObject(v) || n > ENGINE_MAX_LOGIT_BIAS) {
        cli_error("batch",
                  "line %lld: \"logit_bias\" must be an object of at most %d token ids to biases",
                  (long long)line, ENGINE_MAX_LOGIT_BIAS);
        return false;
    }
    engine_sampling *sp = &r->params.sampling;
    r->bias = malloc((size_t)(n ? n : 1) * sizeof *r->bias);
    if (!r->bias) return false;
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        char *end = NULL;
        long long id =
            it->string[0] >= '0' && it->string[0] <= '9' ? strtoll(it->string, &end, 10) : -1;
        if (id < 0 || id > INT32_MAX || *end || !cJSON_IsNumber(it)) {
            cli_error("batch",
                      "line %lld: \"logit_bias\" maps token ids to numbers; \"%.40s\" is not one",
                      (long long)line, it->string);
            return false;
        }
        int j = 0;
        while (j < sp->n_logit_bias && r->bias[j].id != id)
            j++;
        r->bias[j] = (graph_sample_bias){(int32_t)id, (float)it->valuedouble};
        sp->n_logit_bias += j == sp->n_logit_bias;
    }
    sp->logit_bias = r->bias;
    return true;
}

static bool batch__prompt_text(const char *text, tokenizer *tok, batch_request *r, int64_t line)
{
    size_t n = 0;
    if (!tok) {
        cli_error("batch", "line %lld: \"prompt\" needs the model's tokenizer.json", (long long)line);
        return false;
    }
    if (tokenizer_encode(tok, text, strlen(text), &r->ids, &n) != ENC_OK) {
        cli_error("batch", "line %lld: cannot encode the prompt: %s", (long long)line, enc_last_error());
        return false;
    }
    r->n_ids = (int64_t)n;
    return true;
}

/* vLLM's filters and penalties; the engine checks their ranges. */
static bool batch__sampling(const cJSON *o, engine_sampling *sp, int64_t line)
{
    double top_k = 0, min_tokens = 0, top_logprobs = 0;
    const double big = 1e15;
    if (!batch__integer(o, "top_k", -big, big, &top_k, line) ||
        !batch__number(o, "top_p", -big, big, &sp->top_p, line) ||
        !batch__number(o, "min_p", -big, big, &sp->min_p, line) ||
        !batch__number(o, "repetition_penalty", -big, big, &sp->repetition_penalty, line) ||
        !batch__number(o, "presence_penalty", -big, big, &sp->presence_penalty, line) ||
        !batch__number(o, "frequency_penalty", -big, big, &sp->frequency_penalty, line) ||
        !batch__integer(o, "min_tokens", -big, big, &min_tokens, line) ||
        !batch__integer(o, "top_logprobs", -1e6, 1e6, &top_logprobs, line))
        return false;
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(o, "logprobs");
    if (cJSON_IsNumber(lp)) {
        if (!batch__integer(o, "logprobs", 0, ENGINE_MAX_TOP_LOGPROBS, &top_logprobs, line))
            return false;
        sp->logprobs = true;
    } else if (lp && !cJSON_IsBool(lp)) {
        cli_error("batch", "line %lld: \"logprobs\" must be true, false or a number", (long long)line);
        return false;
    } else {
        sp->logprobs = cJSON_IsTrue(lp);
    }
    sp->top_k = (int64_t)top_k;
    sp->min_tokens = (int64_t)min_tokens;
    sp->top_logprobs = (int)top_logprobs;
    return true;
}

static bool batch__parse_line(const char *text, tokenizer *tok, batch_request *r, int64_t line)
{
    cJSON *o = json_parse_whole(text, strlen(text), NULL);
    bool ok = false;
    double max_tokens = 16, temperature = 0, seed = 0, arrive = 0;
    memset(r, 0, sizeof *r);
    r->engine_id = -1;
    if (!cJSON_IsObject(o)) {
        cli_error("batch", "line %lld: not one JSON object", (long long)line);
        goto done;
    }
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(o, "prompt_ids");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    if (ids && prompt) {
        cli_error("batch", "line %lld: give one of \"prompt_ids\" and \"prompt\", not both",
                  (long long)line);
        goto done;
    }
    if (cJSON_IsArray(ids)) {
        if (!batch__prompt_ids(ids, r, line)) goto done;
    } else if (cJSON_IsString(prompt)) {
        if (!batch__prompt_text(prompt->valuestring, tok, r, line)) goto done;
    } else {
        cli_error("batch", "line %lld: needs \"prompt_ids\" (array) or \"prompt\" (string)", (long long)line);
        goto done;
    }
    bool ignore_eos = false;
    if (!batch__integer(o, "max_tokens", 1, 1 << 24, &max_tokens, line) ||
        !batch__number(o, "temperature", 0, 100, &temperature, line) ||
        !batch__integer(o, "seed", 0, 9007199254740992.0, &seed, line) ||
        !batch__integer(o, "arrive_step", 0, 1e9, &arrive, line) ||
        !batch__bool(o, "ignore_eos", &ignore_eos, line))
        goto done;
    r->params = (engine_request_params){
        .prompt_ids = r->ids,
        .n_prompt = r->n_ids,
        .max_tokens = (int64_t)max_tokens,
        .sampling = {.temperature = temperature, .seed = (uint64_t)seed},
        .ignore_eos = ignore_eos,
    };
    if (!batch__sampling(o, &r->params.sampling, line) || !batch__logit_bias(o, r, line)) goto done;
    r->arrive_step = (int64_t)arrive;
    ok = true;
done:
    cJSON_Delete(o);
    return ok;
}

static bool batch_read(const char *path, tokenizer *tok, batch_set *b)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        cli_error("batch", "cannot open %s", path);
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    int64_t lineno = 0;
    bool ok = true;
    while (ok && getline(&line, &cap, f) >= 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == strlen(line)) continue;
        if (b->n == b->cap) {
            b->cap = b->cap ? b->cap * 2 : 16;
            batch_request *bigger = realloc(b->reqs, (size_t)b->cap * sizeof *bigger);
            if (!bigger) {
                ok = false;
                break;
            }
            b->reqs = bigger;
        }
        ok = batch__parse_line(line, tok, &b->reqs[b->n], lineno);
        b->n++; /* counted even on failure, so its ids are freed */
    }
    free(line);
    if (f != stdin) fclose(f);
    if (ok && b->n == 0) {
        cli_error("batch", "%s holds no requests", path);
        ok = false;
    }
    return ok;
}

/* Submit what arrives now; false (and a message naming the line) on refusal. */
static bool batch_submit(engine *e, batch_set *b, int64_t step)
{
    for (int64_t i = 0; i < b->n; i++) {
        batch_request *r = &b->reqs[i];
        if (r->engine_id >= 0 || r->arrive_step > step) continue;
        if (engine_add_request(e, &r->params, &r->engine_id) != ENC_OK) {
            cli_error("batch", "request %lld: %s", (long long)i, enc_last_error());
            return false;
        }
    }
    return true;
}

static bool batch_pending(const batch_set *b)
{
    for (int64_t i = 0; i < b->n; i++)
        if (b->reqs[i].engine_id < 0) return true;
    return false;
}

static void batch_print_stats(const engine *e)
{
    engine_stats st = engine_get_stats(e);
    fprintf(stderr,
            "{\"steps\":%lld,\"prefill_tokens\":%lld,\"decode_tokens\":%lld,\"preemptions\":%lld,"
            "\"eager_steps\":%lld,\"captures\":%lld,\"replays\":%lld,\"verified_steps\":%lld,"
            "\"multi_step_round_trips\":%lld,\"prefix_cache_queries\":%lld,\"prefix_cache_hits\":%lld,"
            "\"running\":%lld,\"waiting\":%lld,\"kv_blocks_used\":%lld,\"kv_blocks_cached\":%lld,"
            "\"bytes_read\":%lld}\n",
            (long long)st.n_steps, (long long)st.n_prefill_tokens, (long long)st.n_decode_tokens,
            (long long)st.n_preemptions, (long long)st.n_eager_steps, (long long)st.n_captures,
            (long long)st.n_replays, (long long)st.n_verified_steps, (long long)st.n_multi_round_trips,
            (long long)st.n_prefix_cache_queries, (long long)st.n_prefix_cache_hits, (long long)st.n_running,
            (long long)st.n_waiting, (long long)st.n_kv_blocks_used, (long long)st.n_kv_blocks_cached,
            (long long)st.n_bytes_read);
}

/* ,"logprobs":[{"id":I,"logprob":L,"top":[[I,L],...]},...] when asked for. */
static void batch_print_logprobs(const engine *e, int64_t id)
{
    const engine_token_logprob *lp;
    int64_t n = 0;
    if (engine_request_logprobs(e, id, &lp, &n) != ENC_OK || !lp) return;
    printf(",\"logprobs\":[");
    for (int64_t i = 0; i < n; i++) {
        if (i) printf(",");
        cli_print_logprob(&lp[i]);
    }
    printf("]");
}

/* ,"text":... of the generated ids: special tokens left out; null where an
 * id has no token (the embedding's rows past the tokenizer's). */
static void batch_print_text(const tokenizer *tok, const int32_t *ids, int64_t n)
{
    char *text = NULL, *quoted = NULL;
    size_t len = 0;
    if (tokenizer_decode_bytes(tok, ids, (size_t)n, 1, &text, &len) == ENC_OK &&
        tokenizer_json_quote(text, len, &quoted) == ENC_OK)
        printf(",\"text\":%s", quoted);
    else
        printf(",\"text\":null");
    free(text);
    free(quoted);
}

static int batch_run(engine *e, batch_set *b, const tokenizer *tok)
{
    for (int64_t step = 0; batch_pending(b) || engine_has_unfinished(e); step++) {
        if (!batch_submit(e, b, step)) return CLI_FAILED;
        if (engine_step(e, NULL) != ENC_OK) {
            cli_error("batch", "step %lld failed: %s", (long long)step, enc_last_error());
            return CLI_FAILED;
        }
    }
    for (int64_t i = 0; i < b->n; i++) {
        const int32_t *ids;
        int64_t n;
        engine_finish finish;
        engine_request_output(e, b->reqs[i].engine_id, &ids, &n, &finish);
        printf("{\"index\":%lld,\"ids\":[", (long long)i);
        for (int64_t j = 0; j < n; j++) printf(j ? ",%d" : "%d", ids[j]);
        printf("]");
        if (tok) batch_print_text(tok, ids, n);
        printf(",\"finish_reason\":\"%s\"", engine_finish_name(finish));
        batch_print_logprobs(e, b->reqs[i].engine_id);
        printf("}\n");
    }
    return CLI_OK;
}

typedef struct batch_args {
    const char *path;
    bool stats;
} batch_args;

static int batch__option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    batch_args *a = args;
    if (!strcmp(argv[*i], "--requests")) return (a->path = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(argv[*i], "--stats")) return a->stats = true;
    return 0;
}

int cmd_batch(int argc, char **argv)
{
    const char *cmd = "batch";
    engine_config cfg;
    batch_args a = {0};
    int rc = cli_parse_args(cmd, batch_help, argc, argv, &cfg, batch__option, &a);
    if (rc) return rc;
    if (!a.path) {
        cli_error(cmd, "needs --requests FILE");
        return CLI_BAD_ARGS;
    }
    tokenizer *tok = NULL;
    if (model_tokenizer_load(cfg.model_dir, 0, &tok) != ENC_OK) tok = NULL; /* only "prompt" needs it */
    batch_set b = {0};
    rc = batch_read(a.path, tok, &b) ? CLI_OK : CLI_FAILED;
    engine *e = NULL;
    if (!rc) rc = cli_engine_create(cmd, &cfg, tok, &e);
    if (!rc) rc = batch_run(e, &b, tok);
    if (!rc && a.stats) batch_print_stats(e);
    engine_destroy(e);
    batch_set_free(&b);
    tokenizer_free(tok);
    return rc;
}
