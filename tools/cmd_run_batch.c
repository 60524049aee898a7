/* cmd_run_batch.c - `encore run-batch`: a file of OpenAI batch requests
 * (the Batch API's input lines, as `vllm run-batch` reads them) answered
 * into a file of results, one line per request in input order.
 *
 * The requests run exactly as `encore serve` runs them: the command starts
 * the server (src/server) on a loopback port of its own and sends each
 * line's body to its URL over http_client.c, --concurrency requests in
 * flight at once, so continuous batching packs them into the engine's
 * steps. A writer thread (this one) puts each result out as soon as every
 * earlier one is out. The input is checked whole before the model loads:
 * a malformed line stops the command, naming it. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "http_client.h"
#include "serve_setup.h"

static const char run_batch_help[] =
    "usage: encore run-batch -m DIR -i INPUT.jsonl -o OUTPUT.jsonl [options]\n\n"
    "Answer a file of OpenAI batch requests, one JSON object a line, as `encore serve`\n"
    "answers them (vLLM's run-batch, the OpenAI Batch API's format):\n"
    "  {\"custom_id\": \"r1\", \"method\": \"POST\", \"url\": \"/v1/chat/completions\",\n"
    "   \"body\": {\"model\": NAME, \"messages\": [...], ...}}\n"
    "URLs: /v1/chat/completions, /v1/completions, /v1/responses, and /v1/embeddings\n"
    "for an embedding model (--runner). Each result line, in the input's order:\n"
    "  {\"id\": \"batch_req_...\", \"custom_id\": \"r1\", \"response\": {\"status_code\": 200,\n"
    "   \"request_id\": \"req_...\", \"body\": {...}}, \"error\": null}\n"
    "A request the server refuses has its status_code, \"body\": null and the error\n"
    "object as \"error\"; a streamed one (\"stream\": true) or another URL is refused\n"
    "the same way. The body's \"model\" is the served model name (default: DIR's\n"
    "last component).\n\n"
    "options:\n"
    "  -i, --input-file PATH    the requests ('-': standard input)\n"
    "  -o, --output-file PATH   the results, written as they finish ('-': standard\n"
    "                           output)\n"
    "  --concurrency N          requests in flight at once (default: 2 x max_num_seqs)\n"
    "  --served-model-name NAME, --chat-template FILE|NAME, --generation-config\n"
    "  auto|none, --no-special-tokens-in-content, --max-tokens-default N,\n"
    "  --runner auto|generate|pooling: as for `encore serve`\n"
    "  -h, --help               show this help\n\n";

/* The URLs a line may name. */
static const char *const run_batch_urls[] = {"/v1/chat/completions", "/v1/completions",
                                             "/v1/responses", "/v1/embeddings"};

/* One input line, checked. */
typedef struct batch_line {
    char *custom_id;
    char *url;
    char *body;          /* the body's JSON text */
    const char *refusal; /* set: answered with this error, not sent */
} batch_line;

typedef struct run_batch_args {
    serve_args serve;
    const char *input, *output;
    int64_t concurrency; /* 0: 2 x max_num_seqs */
} run_batch_args;

/* The shared state of the senders and the writer. */
typedef struct batch_run {
    batch_line *lines;
    size_t n;
    http_url url;
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    size_t next;    /* the next line to send */
    char **results; /* [n] each result line, NULL until it is done */
    size_t n_done, n_ok;
} batch_run;

static int run_batch_option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    run_batch_args *a = args;
    const char *o = argv[*i];
    if (!strcmp(o, "-i") || !strcmp(o, "--input-file"))
        return (a->input = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "-o") || !strcmp(o, "--output-file"))
        return (a->output = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--concurrency"))
        return cli_option_i64(cmd, argc, argv, i, 1, 4096, &a->concurrency) ? 1 : -1;
    static const char *const shared[] = {"--served-model-name", "--chat-template",
                                         "--generation-config", "--no-special-tokens-in-content",
                                         "--max-tokens-default"};
    for (size_t k = 0; k < sizeof shared / sizeof shared[0]; k++)
        if (!strcmp(o, shared[k])) return serve_option(&a->serve, cmd, argc, argv, i);
    return 0;
}

/* --- the input ------------------------------------------------------------- */

/* The string member `name` of o, or NULL after a message naming the line. */
static const char *run_batch_member(const char *path, size_t line_no, const cJSON *o,
                                    const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (cJSON_IsString(v)) return v->valuestring;
    cli_error("run-batch", "%s:%zu: '%s' must be a string%s", path, line_no, name,
              v ? "" : " (it is missing)");
    return NULL;
}

/* Why the server is not asked: a method or URL it does not take, a stream. */
static const char *run_batch_refusal(const char *method, const char *url, const cJSON *body)
{
    if (strcmp(method, "POST")) return "only the POST method is supported";
    bool known = false;
    for (size_t k = 0; k < sizeof run_batch_urls / sizeof run_batch_urls[0]; k++)
        known |= !strcmp(url, run_batch_urls[k]);
    if (!known)
        return "this URL is not supported: /v1/chat/completions, /v1/completions, "
               "/v1/responses and /v1/embeddings are";
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "stream")))
        return "Request must not be sent in stream mode";
    return NULL;
}

/* The bytes of the first member `name` of the JSON object `text` (which
 * parsed whole), as written, into [*begin, *end): a body goes to the
 * server as the client wrote it (cJSON would print a seed of 2^63 - 1 as
 * 9.2233720368547758e+18). cJSON finds where each value ends. */
static bool run_batch_member_span(const char *text, const char *name, const char **begin,
                                  const char **end)
{
    static const char ws[] = " \t\r\n";
    const char *p = text + strspn(text, ws);
    if (*p++ != '{') return false;
    for (;;) {
        const char *after_key = NULL, *after_value = NULL;
        cJSON *key = cJSON_ParseWithOpts(p, &after_key, 0);
        bool match = cJSON_IsString(key) && !strcmp(key->valuestring, name);
        cJSON_Delete(key);
        if (!key || !after_key) return false;
        p = after_key + strspn(after_key, ws);
        if (*p++ != ':') return false;
        p += strspn(p, ws);
        cJSON *value = cJSON_ParseWithOpts(p, &after_value, 0);
        cJSON_Delete(value);
        if (!value || !after_value) return false;
        if (match) {
            *begin = p, *end = after_value;
            return true;
        }
        p = after_value + strspn(after_value, ws);
        if (*p++ != ',') return false;
        p += strspn(p, ws);
    }
}

/* One non-empty line into *out; false after a message naming it. */
static bool run_batch_parse_line(const char *path, size_t line_no, const char *text,
                                 batch_line *out)
{
    cJSON *o = cJSON_Parse(text);
    if (!cJSON_IsObject(o)) {
        cli_error("run-batch", "%s:%zu: not a JSON object", path, line_no);
        cJSON_Delete(o);
        return false;
    }
    const char *id = run_batch_member(path, line_no, o, "custom_id");
    const char *method = id ? run_batch_member(path, line_no, o, "method") : NULL;
    const char *url = method ? run_batch_member(path, line_no, o, "url") : NULL;
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(o, "body");
    if (url && !cJSON_IsObject(body))
        cli_error("run-batch", "%s:%zu: 'body' must be an object%s", path, line_no,
                  body ? "" : " (it is missing)");
    bool ok = url && cJSON_IsObject(body);
    if (ok) {
        const char *b0 = NULL, *b1 = NULL;
        out->custom_id = strdup(id);
        out->url = strdup(url);
        out->body =
            run_batch_member_span(text, "body", &b0, &b1) ? strndup(b0, (size_t)(b1 - b0)) : NULL;
        out->refusal = run_batch_refusal(method, url, body);
        if (!out->custom_id || !out->url || !out->body) {
            cli_error("run-batch", "%s:%zu: %s", path, line_no,
                      b0 ? "out of memory" : "cannot find the bytes of 'body'");
            ok = false;
        }
    }
    cJSON_Delete(o);
    return ok;
}

static void run_batch_lines_free(batch_line *lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(lines[i].custom_id);
        free(lines[i].url);
        free(lines[i].body);
    }
    free(lines);
}

/* Every non-empty line of path ('-': stdin), checked; false after a
 * message. */
static bool run_batch_read_lines(const char *path, batch_line **out, size_t *n_out,
                                 size_t *longest_body)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        cli_error("run-batch", "--input-file %s: %s", path, strerror(errno));
        return false;
    }
    char *text = NULL;
    size_t text_cap = 0, cap = 0, n = 0, line_no = 0;
    batch_line *lines = NULL;
    bool ok = true;
    *longest_body = 0;
    while (ok && getline(&text, &text_cap, f) >= 0) {
        line_no++;
        if (!text[strspn(text, " \t\r\n")]) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            batch_line *grown = realloc(lines, cap * sizeof *lines);
            if (!grown) {
                cli_error("run-batch", "%s: out of memory", path);
                ok = false;
                break;
            }
            lines = grown;
        }
        memset(&lines[n], 0, sizeof lines[n]);
        ok = run_batch_parse_line(path, line_no, text, &lines[n]);
        if (lines[n].body && strlen(lines[n].body) > *longest_body)
            *longest_body = strlen(lines[n].body);
        n++;
    }
    if (ok && ferror(f)) {
        cli_error("run-batch", "--input-file %s: read error", path);
        ok = false;
    }
    free(text);
    if (f != stdin) fclose(f);
    if (ok && n == 0) {
        cli_error("run-batch", "%s: no requests in it", path);
        ok = false;
    }
    if (!ok) {
        run_batch_lines_free(lines, n);
        return false;
    }
    *out = lines, *n_out = n;
    return true;
}

/* --- one request ---------------------------------------------------------- */

/* "PREFIX" and 24 random hex digits. */
static void run_batch_id(const char *prefix, char *out, size_t cap)
{
    uint64_t a = (uint64_t)cli_random_seed(), b = (uint64_t)cli_random_seed();
    snprintf(out, cap, "%s%012llx%012llx", prefix, (unsigned long long)(a & 0xffffffffffffULL),
             (unsigned long long)(b & 0xffffffffffffULL));
}

/* The result line of one request (malloc'd, with its newline), or NULL
 * when out of memory: the server's reply to status as `body` (200) or as
 * `error` (else), or `message` as the error of a request not answered
 * (status then the one given). *answered: 200 with a JSON reply. */
static char *run_batch_result(const batch_line *l, int status, const char *reply,
                              const char *message, bool *answered)
{
    cJSON *parsed = reply ? cJSON_Parse(reply) : NULL;
    if (reply && !parsed) {
        message = "the server's reply is not JSON";
        status = status == 200 ? 500 : status;
    }
    if (parsed && !strpbrk(reply, "\r\n")) { /* one line: its bytes as sent, numbers too */
        cJSON_Delete(parsed);
        if (!(parsed = cJSON_CreateRaw(reply))) return NULL;
    }
    *answered = status == 200 && parsed;
    char id[64], request_id[64];
    run_batch_id("batch_req_", id, sizeof id);
    run_batch_id("req_", request_id, sizeof request_id);
    cJSON *o = cJSON_CreateObject(), *resp = cJSON_CreateObject();
    cJSON *body = *answered ? parsed : cJSON_CreateNull();
    cJSON *error = *answered ? cJSON_CreateNull() : parsed ? parsed : cJSON_CreateString(message);
    bool ok = o && resp && body && error && cJSON_AddStringToObject(o, "id", id) &&
              cJSON_AddStringToObject(o, "custom_id", l->custom_id) &&
              cJSON_AddNumberToObject(resp, "status_code", status) &&
              cJSON_AddStringToObject(resp, "request_id", request_id);
    /* each item added is its parent's to free from here on */
    ok = ok && cJSON_AddItemToObject(resp, "body", body);
    if (!ok) cJSON_Delete(body);
    ok = ok && cJSON_AddItemToObject(o, "response", resp);
    if (!ok) cJSON_Delete(resp);
    ok = ok && cJSON_AddItemToObject(o, "error", error);
    if (!ok) cJSON_Delete(error);
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    char *line = text ? malloc(strlen(text) + 2) : NULL;
    if (line) sprintf(line, "%s\n", text);
    cJSON_free(text);
    return line;
}

/* Send line i (or refuse it) and return its result line (NULL: out of
 * memory); *answered: the server answered 200. */
static char *run_batch_one(batch_run *r, size_t i, bool *answered)
{
    const batch_line *l = &r->lines[i];
    if (l->refusal) return run_batch_result(l, 400, NULL, l->refusal, answered);
    char *reply = NULL, err[512];
    int status = 0;
    bool sent =
        http_request(&r->url, "POST", l->url, NULL, l->body, &status, &reply, err, sizeof err);
    char *line = sent && reply ? run_batch_result(l, status, reply, NULL, answered)
                 : sent        ? run_batch_result(l, status == 200 ? 500 : status, NULL,
                                                  "the server's reply is empty", answered)
                               : run_batch_result(l, 500, NULL, err, answered);
    free(reply);
    return line;
}

/* A result that could not be made (out of memory): the writer stops there. */
static char run_batch_no_result[] = "";

static void *run_batch_sender(void *user)
{
    batch_run *r = user;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        size_t i = r->next < r->n ? r->next++ : r->n;
        pthread_mutex_unlock(&r->mu);
        if (i == r->n) return NULL;
        bool answered = false;
        char *line = run_batch_one(r, i, &answered);
        pthread_mutex_lock(&r->mu);
        r->results[i] = line ? line : run_batch_no_result;
        r->n_done++;
        r->n_ok += line && answered;
        pthread_cond_signal(&r->done_cv);
        pthread_mutex_unlock(&r->mu);
    }
}

/* --- the run ---------------------------------------------------------------- */

/* Write each result in order as it is done, a progress line on stderr every
 * 5 s; false (after a message) when a result cannot be made or written:
 * then no request is sent any more (those in flight finish). */
static bool run_batch_write(batch_run *r, FILE *out, const char *path, double t0)
{
    bool ok = true;
    double last = t0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; ok && i < r->n; i++) {
        while (!r->results[i]) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&r->done_cv, &r->mu, &until);
            double now = cli_now_seconds();
            if (now - last >= 5.0) {
                fprintf(stderr, "encore run-batch: %zu of %zu requests done (%.1f s)\n", r->n_done,
                        r->n, now - t0);
                last = now;
            }
        }
        char *line = r->results[i];
        r->results[i] = NULL;
        pthread_mutex_unlock(&r->mu);
        if (line == run_batch_no_result) {
            cli_error("run-batch", "out of memory making the result of request %zu", i + 1);
            ok = false;
        } else if (fputs(line, out) < 0 || fflush(out) != 0) {
            cli_error("run-batch", "--output-file %s: %s", path, strerror(errno));
            ok = false;
        }
        if (line != run_batch_no_result) free(line);
        pthread_mutex_lock(&r->mu);
    }
    if (!ok) r->next = r->n; /* send nothing more */
    pthread_mutex_unlock(&r->mu);
    return ok;
}

/* The server the requests go to: loopback, a port of its own, no key, room
 * for every request in flight and bodies as long as the longest line's. */
static http_server_config run_batch_server_config(const run_batch_args *a, int64_t concurrency,
                                                  size_t longest_body)
{
    http_server_config c = a->serve.http;
    c.host = "127.0.0.1";
    c.port = 0;
    c.api_key = NULL;
    /* a request is up to 256 prompts x 16 choices: room for any */
    c.max_queue = (int64_t)1 << 40;
    c.max_queue_per_client = c.max_queue;
    c.max_connections = (int)concurrency + 8;
    c.max_connections_per_ip = 0;
    c.timeout_s = 86400;
    if (longest_body + 1024 > c.max_body_bytes) c.max_body_bytes = longest_body + 1024;
    return c;
}

static int run_batch_run(run_batch_args *a, batch_line *lines, size_t n, FILE *out,
                         size_t longest_body)
{
    encore_engine *e = NULL;
    int rc = serve_engine_create("run-batch", &a->serve, &e);
    if (rc != CLI_OK) return rc;
    encore_engine_info info;
    int64_t conc = a->concurrency;
    if (!conc) conc = encore_get_engine_info(e, &info) == ENCORE_OK ? 2 * info.max_num_seqs : 16;
    if ((size_t)conc > n) conc = (int64_t)n;
    http_server_config hc = run_batch_server_config(a, conc, longest_body);
    http_server *s = NULL;
    char err[512];
    if (!http_server_start(e, &hc, &s, err, sizeof err)) {
        cli_error("run-batch", "%s", err);
        encore_engine_destroy(e);
        return CLI_FAILED;
    }
    batch_run r = {.lines = lines, .n = n, .results = calloc(n, sizeof(char *))};
    pthread_t *senders = calloc((size_t)conc, sizeof *senders);
    snprintf(r.url.host, sizeof r.url.host, "127.0.0.1");
    snprintf(r.url.port, sizeof r.url.port, "%d", http_server_port(s));
    r.url.timeout_s = 86400;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.done_cv, NULL);
    int64_t started = 0;
    while (r.results && senders && started < conc &&
           pthread_create(&senders[started], NULL, run_batch_sender, &r) == 0)
        started++;
    double t0 = cli_now_seconds();
    fprintf(stderr, "encore run-batch: %zu requests, %lld at a time\n", n, (long long)started);
    bool ok = started > 0 && run_batch_write(&r, out, a->output, t0);
    if (!started) cli_error("run-batch", "cannot start the requests' threads");
    for (int64_t t = 0; t < started; t++)
        pthread_join(senders[t], NULL);
    for (size_t i = 0; r.results && i < n; i++)
        if (r.results[i] != run_batch_no_result) free(r.results[i]);
    if (ok)
        fprintf(stderr, "encore run-batch: %zu requests in %.1f s: %zu answered 200, %zu not\n", n,
                cli_now_seconds() - t0, r.n_ok, n - r.n_ok);
    free(r.results);
    free(senders);
    pthread_cond_destroy(&r.done_cv);
    pthread_mutex_destroy(&r.mu);
    http_server_stop(s);
    encore_engine_destroy(e);
    return ok ? CLI_OK : CLI_FAILED;
}

int cmd_run_batch(int argc, char **argv)
{
    run_batch_args a;
    memset(&a, 0, sizeof a);
    a.serve.http = http_server_config_default();
    int rc =
        cli_parse_args("run-batch", run_batch_help, argc, argv, &a.serve.cfg, run_batch_option, &a);
    if (rc) return rc;
    if (!a.input || !a.output) {
        cli_error("run-batch", "give the requests with -i FILE and the results' file with -o FILE");
        return CLI_BAD_ARGS;
    }
    if (a.serve.cfg.verify_capture) {
        cli_error("run-batch", "--verify-capture (or ENCORE_VERIFY_CAPTURE) is for generate and "
                               "bench, not run-batch");
        return CLI_BAD_ARGS;
    }
    batch_line *lines;
    size_t n, longest;
    if (!run_batch_read_lines(a.input, &lines, &n, &longest)) return CLI_BAD_ARGS;
    FILE *out = strcmp(a.output, "-") ? fopen(a.output, "w") : stdout;
    if (!out) {
        cli_error("run-batch", "--output-file %s: %s", a.output, strerror(errno));
        run_batch_lines_free(lines, n);
        return CLI_BAD_ARGS;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = run_batch_run(&a, lines, n, out, longest);
    if (out != stdout && fclose(out) != 0 && rc == CLI_OK) {
        cli_error("run-batch", "--output-file %s: %s", a.output, strerror(errno));
        rc = CLI_FAILED;
    }
    run_batch_lines_free(lines, n);
    return rc;
}
