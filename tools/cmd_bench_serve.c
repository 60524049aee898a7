/* cmd_bench_serve.c - `encore bench serve`: drive a running OpenAI-compatible
 * server with N concurrent streaming clients and report what a user sees:
 * request throughput, output tokens/s, time to first token, time per output
 * token and inter-token latency (mean, median, p99), like vLLM's serving
 * benchmark.
 *
 * Each request is a /v1/completions call with a prompt of token ids drawn
 * from a fixed seed (lengths uniform in input_len x [1 - r, 1 + r]), greedy,
 * ignore_eos, max_tokens likewise drawn around output_len, streamed with
 * usage. The clients take requests from one shared counter until all are
 * sent, so N requests are in flight at a time. With --json-schema FILE each
 * request carries the schema as response_format (json_schema) and stops at
 * EOS (a complete JSON value ends it) instead of ignoring it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "http_client.h"

static const char bench_serve_help[] =
    "usage: encore bench serve [options]\n\n"
    "Load a running `encore serve` (or any OpenAI-compatible server) with concurrent\n"
    "streaming completion requests and report throughput and latency.\n\n"
    "options:\n"
    "  --url URL                the server (default http://127.0.0.1:8000)\n"
    "  --model NAME             model name in requests (default: the first of /v1/models)\n"
    "  --clients N              concurrent streaming clients (default 8)\n"
    "  --num-prompts N          requests in all (default 64)\n"
    "  --input-len N            prompt tokens (default 128)\n"
    "  --output-len N           tokens generated per request (default 64)\n"
    "  --range-ratio R          lengths uniform in len x [1-R, 1+R] (default 0)\n"
    "  --prompt-vocab N         prompt ids are drawn from [0, N) (default 1000)\n"
    "  --seed N                 seed of the prompts and lengths (default 0)\n"
    "  --api-key KEY            sent as a bearer token (default $ENCORE_API_KEY)\n"
    "  --json-schema FILE       constrain every request to the JSON schema in FILE\n"
    "                           (response_format json_schema; EOS then ends a request)\n"
    "  --timeout S              fail a request whose server is silent this long (default 600)\n"
    "  --json                   print one JSON object instead of text\n"
    "  -h, --help               show this help\n";

typedef struct bench_serve_args {
    http_url url;
    char model[256];
    int64_t clients, num_prompts, input_len, output_len, prompt_vocab, seed, timeout_s;
    double range_ratio;
    const char *api_key;
    bool json;
    cJSON *schema; /* --json-schema, or NULL */
} bench_serve_args;

/* What one request measured. */
typedef struct bench_request {
    bool ok;
    char error[256];
    int64_t prompt_len, max_tokens;
    int64_t output_tokens; /* from the usage chunk */
    double start, first, last; /* seconds: sent, first token chunk, last token chunk */
    double *itl;               /* gaps between token chunks */
    int64_t n_itl, cap_itl;
} bench_request;

typedef struct bench_serve_run {
    const bench_serve_args *args;
    bench_request *reqs;
    atomic_int_fast64_t next;
} bench_serve_run;

static uint64_t bench_serve__rand(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* A length uniform in len x [1 - r, 1 + r], at least 1. */
static int64_t bench_serve__length(int64_t len, double r, uint64_t *x)
{
    double lo = floor((double)len * (1.0 - r)), hi = ceil((double)len * (1.0 + r));
    int64_t n = (int64_t)lo + (int64_t)(bench_serve__rand(x) % (uint64_t)(hi - lo + 1));
    return n < 1 ? 1 : n;
}

/* The JSON body of request i: its lengths and prompt follow from (seed, i). */
static char *bench_serve__body(const bench_serve_args *a, int64_t i, bench_request *r)
{
    uint64_t x = (uint64_t)a->seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull + 1;
    r->prompt_len = bench_serve__length(a->input_len, a->range_ratio, &x);
    r->max_tokens = bench_serve__length(a->output_len, a->range_ratio, &x);
    cJSON *o = cJSON_CreateObject(), *prompt = cJSON_AddArrayToObject(o, "prompt");
    for (int64_t t = 0; t < r->prompt_len; t++)
        cJSON_AddItemToArray(prompt, cJSON_CreateNumber((double)(bench_serve__rand(&x) % (uint64_t)a->prompt_vocab)));
    cJSON_AddStringToObject(o, "model", a->model);
    cJSON_AddNumberToObject(o, "max_tokens", (double)r->max_tokens);
    cJSON_AddNumberToObject(o, "temperature", 0);
    cJSON_AddBoolToObject(o, "ignore_eos", a->schema == NULL);
    if (a->schema) {
        cJSON *rf = cJSON_AddObjectToObject(o, "response_format"), *js;
        cJSON_AddStringToObject(rf, "type", "json_schema");
        js = cJSON_AddObjectToObject(rf, "json_schema");
        cJSON_AddStringToObject(js, "name", "bench");
        cJSON_AddItemToObject(js, "schema", cJSON_Duplicate(a->schema, 1));
    }
    cJSON_AddBoolToObject(o, "stream", 1);
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(o, "stream_options"), "include_usage", 1);
    char *body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return body;
}

static void bench_serve__failed(bench_request *r, const char *what, const char *detail)
{
    if (r->ok) snprintf(r->error, sizeof r->error, "%s: %.200s", what, detail);
    r->ok = false;
}

/* One chunk of the stream: a token chunk (choices), the usage, or an error. */
static bool bench_serve__on_event(void *user, const char *data, size_t len)
{
    bench_request *r = user;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) return true;
    double now = cli_now_seconds();
    cJSON *o = cJSON_ParseWithLength(data, len);
    if (!o) {
        bench_serve__failed(r, "bad event", data);
        return false;
    }
    cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
    cJSON *usage = cJSON_GetObjectItemCaseSensitive(o, "usage");
    cJSON *tokens = usage ? cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens") : NULL;
    if (err) bench_serve__failed(r, "server error", data);
    if (cJSON_IsNumber(tokens)) r->output_tokens = (int64_t)tokens->valuedouble;
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "choices")) > 0) {
        if (r->first == 0) r->first = now;
        else if (r->n_itl < r->cap_itl) r->itl[r->n_itl++] = now - r->last;
        r->last = now;
    }
    cJSON_Delete(o);
    return !err;
}

static void bench_serve__one(const bench_serve_args *a, int64_t i, bench_request *r)
{
    char *body = bench_serve__body(a, i, r);
    r->ok = true;
    r->cap_itl = r->max_tokens;
    r->itl = malloc((size_t)r->cap_itl * sizeof *r->itl);
    sse_reader sse = {.on_data = bench_serve__on_event, .user = r};
    char err[256];
    int status = 0;
    r->start = cli_now_seconds();
    if (!body || !r->itl) bench_serve__failed(r, "out of memory", "");
    else if (!http_request_stream(&a->url, "POST", "/v1/completions", a->api_key, body, &status, sse_feed, &sse,
                                  err, sizeof err))
        bench_serve__failed(r, "connection", err);
    else if (status != 200) bench_serve__failed(r, "HTTP status", sse.buf ? sse.buf : "");
    else if (r->first == 0) bench_serve__failed(r, "no tokens", "the stream ended without a token");
    sse_reader_free(&sse);
    free(body);
}

static void *bench_serve__client(void *user)
{
    bench_serve_run *run = user;
    for (;;) {
        int64_t i = atomic_fetch_add(&run->next, 1);
        if (i >= run->args->num_prompts) return NULL;
        bench_serve__one(run->args, i, &run->reqs[i]);
    }
}

/* --- the report ------------------------------------------------------------- */

typedef struct bench_dist {
    double mean, p50, p99;
} bench_dist;

static int bench_serve__cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Mean, median and 99th percentile (nearest rank) of v[0..n), in ms. */
static bench_dist bench_serve__dist(double *v, int64_t n)
{
    bench_dist d = {0};
    if (n == 0) return d;
    qsort(v, (size_t)n, sizeof *v, bench_serve__cmp);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += v[i];
    int64_t r99 = (int64_t)ceil(0.99 * (double)n) - 1;
    d.mean = 1e3 * sum / (double)n;
    d.p50 = 1e3 * (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
    d.p99 = 1e3 * v[r99 < 0 ? 0 : r99];
    return d;
}

typedef struct bench_serve_report {
    int64_t completed, failed, prompt_tokens, output_tokens;
    double duration, request_rate, output_tps, total_tps;
    double tokens_per_chunk; /* a server that decodes K steps per replay sends K at once */
    bench_dist ttft, tpot, itl, e2e;
} bench_serve_report;

static bool bench_serve__summarise(const bench_serve_run *run, double duration, bench_serve_report *rep)
{
    const bench_serve_args *a = run->args;
    int64_t n = a->num_prompts, n_itl = 0;
    for (int64_t i = 0; i < n; i++) n_itl += run->reqs[i].n_itl;
    double *ttft = malloc((size_t)n * sizeof *ttft), *tpot = malloc((size_t)n * sizeof *tpot);
    double *e2e = malloc((size_t)n * sizeof *e2e), *itl = malloc((size_t)(n_itl + 1) * sizeof *itl);
    if (!ttft || !tpot || !e2e || !itl) return false;
    memset(rep, 0, sizeof *rep);
    int64_t n_tpot = 0, k = 0, n_chunks = 0;
    for (int64_t i = 0; i < n; i++) {
        const bench_request *r = &run->reqs[i];
        if (!r->ok) {
            rep->failed++;
            continue;
        }
        ttft[rep->completed] = r->first - r->start;
        e2e[rep->completed++] = r->last - r->start;
        rep->prompt_tokens += r->prompt_len;
        rep->output_tokens += r->output_tokens;
        if (r->output_tokens > 1) tpot[n_tpot++] = (r->last - r->first) / (double)(r->output_tokens - 1);
        memcpy(itl + k, r->itl, (size_t)r->n_itl * sizeof *itl);
        k += r->n_itl;
        n_chunks += r->first > 0 ? r->n_itl + 1 : 0;
    }
    rep->tokens_per_chunk = n_chunks ? (double)rep->output_tokens / (double)n_chunks : 0.0;
    rep->duration = duration;
    rep->request_rate = (double)rep->completed / duration;
    rep->output_tps = (double)rep->output_tokens / duration;
    rep->total_tps = (double)(rep->output_tokens + rep->prompt_tokens) / duration;
    rep->ttft = bench_serve__dist(ttft, rep->completed);
    rep->e2e = bench_serve__dist(e2e, rep->completed);
    rep->tpot = bench_serve__dist(tpot, n_tpot);
    rep->itl = bench_serve__dist(itl, k);
    free(ttft), free(tpot), free(e2e), free(itl);
    return true;
}

static void bench_serve__print_dist(const char *name, bench_dist d, bool json, bool last)
{
    if (json)
        printf("\"%s_ms\":{\"mean\":%.3f,\"p50\":%.3f,\"p99\":%.3f}%s", name, d.mean, d.p50, d.p99,
               last ? "" : ",");
    else
        printf("%-6s ms   mean %9.2f   p50 %9.2f   p99 %9.2f\n", name, d.mean, d.p50, d.p99);
}

static void bench_serve__print(const bench_serve_args *a, const bench_serve_report *r)
{
    if (a->json) {
        printf("{\"model\":\"%s\",\"clients\":%lld,\"num_prompts\":%lld,\"input_len\":%lld,\"output_len\":%lld,"
               "\"completed\":%lld,\"failed\":%lld,\"duration_s\":%.6f,\"prompt_tokens\":%lld,"
               "\"output_tokens\":%lld,\"request_throughput\":%.4f,\"output_tokens_per_s\":%.3f,"
               "\"total_tokens_per_s\":%.3f,\"tokens_per_chunk\":%.3f,",
               a->model, (long long)a->clients, (long long)a->num_prompts, (long long)a->input_len,
               (long long)a->output_len, (long long)r->completed, (long long)r->failed, r->duration,
               (long long)r->prompt_tokens, (long long)r->output_tokens, r->request_rate, r->output_tps,
               r->total_tps, r->tokens_per_chunk);
    } else {
        printf("encore bench serve: %s, %lld clients, %lld requests (%lld prompt / %lld output tokens)\n",
               a->model, (long long)a->clients, (long long)a->num_prompts, (long long)a->input_len,
               (long long)a->output_len);
        printf("completed %lld, failed %lld, in %.2f s\n", (long long)r->completed, (long long)r->failed,
               r->duration);
        printf("request throughput   %10.3f req/s\noutput tokens        %10.2f tok/s\n"
               "total tokens         %10.2f tok/s\n",
               r->request_rate, r->output_tps, r->total_tps);
    }
    bench_serve__print_dist("ttft", r->ttft, a->json, false);
    bench_serve__print_dist("tpot", r->tpot, a->json, false);
    bench_serve__print_dist("itl", r->itl, a->json, false);
    bench_serve__print_dist("e2e", r->e2e, a->json, true);
    if (a->json) printf("}\n");
    else
        printf("itl is the gap between streamed chunks, %.2f tokens per chunk (a K-step replay's tokens "
               "come in one); tpot is per token\n", r->tokens_per_chunk);
}

/* --- arguments and the run ------------------------------------------------- */

/* --json-schema FILE: read and parsed once. 1, or -1 (said why). */
static int bench_serve__schema(bench_serve_args *a, const char *path)
{
    if (!path) return -1;
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n = -1;
    if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) && (text = malloc((size_t)n + 1)))
        n = (long)fread(text, 1, (size_t)n, f);
    if (f) fclose(f);
    cJSON_Delete(a->schema);
    a->schema = text && n >= 0 ? cJSON_ParseWithLength(text, (size_t)n) : NULL;
    free(text);
    if (!a->schema) return cli_error("bench serve", "--json-schema %s: cannot read it as JSON", path), -1;
    return 1;
}

static int bench_serve__option(bench_serve_args *a, int argc, char **argv, int *i)
{
    const char *cmd = "bench serve", *o = argv[*i];
    if (!strcmp(o, "--url") || !strcmp(o, "--model") || !strcmp(o, "--api-key")) {
        const char *v = cli_value(cmd, argc, argv, i);
        char err[256];
        if (!v) return -1;
        if (!strcmp(o, "--api-key")) a->api_key = v;
        else if (!strcmp(o, "--model")) snprintf(a->model, sizeof a->model, "%s", v);
        else if (!http_url_parse(v, &a->url, err, sizeof err)) return cli_error(cmd, "--url: %s", err), -1;
        return 1;
    }
    if (!strcmp(o, "--json")) return a->json = true;
    if (!strcmp(o, "--json-schema")) return bench_serve__schema(a, cli_value(cmd, argc, argv, i));
    if (!strcmp(o, "--range-ratio")) return cli_option_f64(cmd, argc, argv, i, 0, 1, &a->range_ratio) ? 1 : -1;
    struct { const char *name; int64_t min, max, *out; } ints[] = {
        {"--clients", 1, 1024, &a->clients},          {"--num-prompts", 1, 1 << 20, &a->num_prompts},
        {"--input-len", 1, 1 << 20, &a->input_len},   {"--output-len", 1, 1 << 20, &a->output_len},
        {"--prompt-vocab", 1, 1 << 24, &a->prompt_vocab}, {"--seed", 0, INT64_MAX, &a->seed},
        {"--timeout", 1, 86400, &a->timeout_s},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (!strcmp(o, ints[k].name)) return cli_option_i64(cmd, argc, argv, i, ints[k].min, ints[k].max, ints[k].out) ? 1 : -1;
    return 0;
}

/* The first model the server lists, when --model was not given. */
static bool bench_serve__default_model(bench_serve_args *a)
{
    char *body = NULL, err[256];
    int status = 0;
    bool ok = http_request(&a->url, "GET", "/v1/models", a->api_key, NULL, &status, &body, err,
                           sizeof err);
    if (!ok) cli_error("bench serve", "%s", err);
    else if (status != 200) cli_error("bench serve", "GET /v1/models: HTTP %d: %s", status, body ? body : "");
    cJSON *o = ok && status == 200 ? cJSON_Parse(body) : NULL;
    cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "data"), 0), "id");
    if (cJSON_IsString(id)) snprintf(a->model, sizeof a->model, "%s", id->valuestring);
    else if (ok && status == 200) cli_error("bench serve", "GET /v1/models lists no model; pass --model");
    cJSON_Delete(o);
    free(body);
    return a->model[0] != '\0';
}

static int bench_serve__parse(bench_serve_args *a, int argc, char **argv)
{
    *a = (bench_serve_args){.clients = 8, .num_prompts = 64, .input_len = 128, .output_len = 64,
                            .prompt_vocab = 1000, .timeout_s = 600, .api_key = getenv("ENCORE_API_KEY")};
    char err[256];
    http_url_parse("http://127.0.0.1:8000", &a->url, err, sizeof err);
    for (int i = 1; i < argc; i++) {
        int r = bench_serve__option(a, argc, argv, &i);
        if (r < 0) return CLI_BAD_ARGS;
        if (r > 0) continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(bench_serve_help, stdout);
            exit(CLI_OK);
        }
        cli_error("bench serve", "unknown option '%s' (try --help)", argv[i]);
        return CLI_BAD_ARGS;
    }
    a->url.timeout_s = (int)a->timeout_s;
    return CLI_OK;
}

int cmd_bench_serve(int argc, char **argv)
{
    bench_serve_args a;
    int rc = bench_serve__parse(&a, argc, argv);
    if (rc != CLI_OK) return rc;
    if (!a.model[0] && !bench_serve__default_model(&a)) return CLI_FAILED;
    bench_serve_run run = {.args = &a, .reqs = calloc((size_t)a.num_prompts, sizeof *run.reqs)};
    pthread_t *threads = calloc((size_t)a.clients, sizeof *threads);
    if (!run.reqs || !threads) return cli_error("bench serve", "out of memory"), CLI_FAILED;
    atomic_init(&run.next, 0);
    double t0 = cli_now_seconds();
    int64_t started = 0;
    while (started < a.clients && pthread_create(&threads[started], NULL, bench_serve__client, &run) == 0) started++;
    for (int64_t i = 0; i < started; i++) pthread_join(threads[i], NULL);
    double duration = cli_now_seconds() - t0;
    bench_serve_report rep;
    bool ok = started > 0 && bench_serve__summarise(&run, duration, &rep);
    if (ok) bench_serve__print(&a, &rep);
    for (int64_t i = 0; i < a.num_prompts && ok && rep.failed; i++)
        if (!run.reqs[i].ok) {
            cli_error("bench serve", "request %lld failed: %s", (long long)i, run.reqs[i].error);
            break;
        }
    for (int64_t i = 0; i < a.num_prompts; i++) free(run.reqs[i].itl);
    free(run.reqs);
    free(threads);
    cJSON_Delete(a.schema);
    return ok && rep.failed == 0 ? CLI_OK : CLI_FAILED;
}
