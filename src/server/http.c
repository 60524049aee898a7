/* http.c - the libmicrohttpd daemon: binding, one thread per connection,
 * request bodies (with a size limit), the API key, routing (HEAD answered
 * as GET), and the small endpoints (/health, /metrics, /v1/models,
 * /v1/models/{id}, /tokenize, /detokenize).
 * Completions and chat go to generation.c, embeddings to embeddings.c.
 *
 * Connections: one thread each (a handler blocks while the engine works, so
 * a thread pool would stall), every thread waiting in poll(), not select(),
 * so that sockets numbered 1024 and above work; at most --max-connections,
 * at most --max-connections-per-ip from one address (libmicrohttpd closes
 * the others at accept), and each request read within
 * --request-read-timeout seconds (http_deadline.c).
 *
 * libmicrohttpd calls http__handle several times per request: first with
 * the headers and no data, then with each piece of the body, then once with
 * none left. The first call makes an http_conn and refuses what the headers
 * already condemn (http__refuse_early: route, method, Host, API key, the
 * Content-Type of a POST, Content-Length headers that differ, a
 * Content-Length over max_body_bytes), answering at once, with Connection:
 * close, without reading the body; the pieces are kept (the buffer never
 * grows past max_body_bytes + 1) and the last call answers. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "http_guard.h"
#include "json_out.h"
#include "openai_response.h"
#include "responses_request.h"
#include "server_impl.h"
#include "tool_request.h"

typedef struct http_conn {
    char *body;        /* the request body so far (NUL-terminated) */
    size_t len, cap;
    int too_large;     /* more than max_body_bytes came: the body was dropped */
    int answered;      /* a reply is queued: later pieces are dropped */
    int route;         /* http_route, found on the first call */
    double t_arrival;  /* http_now() when the headers came */
} http_conn;

double http_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

http_server_config http_server_config_default(void)
{
    return (http_server_config){
        .host = "127.0.0.1",
        .port = 8000,
        .max_queue = 256,
        .max_body_bytes = 8u << 20,
        .max_connections = 512,
        .max_connections_per_ip = 32,
        .request_read_timeout_s = 15,
        .timeout_s = 120,
    };
}

/* splitmix64 over a counter seeded from the clock */
uint64_t http_random(http_server *s)
{
    uint64_t z = atomic_fetch_add(&s->next_id, 0x9E3779B97F4A7C15ull) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void http_new_id(http_server *s, const char *prefix, char *out, size_t cap)
{
    snprintf(out, cap, "%s%016llx", prefix, (unsigned long long)http_random(s));
}

/* --- replies ---------------------------------------------------------------- */

/* Queue `body` (malloc'd, taken) as the reply, with the headers in
 * `headers` (name, value, name, value, ..., NULL; NULL for none). */
static enum MHD_Result http__reply(struct MHD_Connection *conn, unsigned status, const char *type,
                                   char *body, const char *const *headers)
{
    if (!body) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    for (size_t i = 0; headers && headers[i]; i += 2)
        MHD_add_response_header(r, headers[i], headers[i + 1]);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result http_reply_json(struct MHD_Connection *conn, unsigned status, char *body)
{
    return http__reply(conn, status, "application/json", body, NULL);
}

/* OpenAI's error object for err: 503 and 429 with Retry-After, 401 with
 * WWW-Authenticate, 405 with Allow: `allow` (the path's methods); `close`
 * adds Connection: close (for a reply made before the body was read, whose
 * bytes must not be taken for a next request). */
static enum MHD_Result http__reply_error(http_server *s, struct MHD_Connection *conn,
                                         const oai_error *err, const char *allow, int close)
{
    metrics_count_error(&s->metrics);
    const char *headers[8];
    size_t n = 0;
    if (err->http_status == 503 || err->http_status == 429)
        headers[n++] = MHD_HTTP_HEADER_RETRY_AFTER, headers[n++] = "1";
    if (err->http_status == 401)
        headers[n++] = MHD_HTTP_HEADER_WWW_AUTHENTICATE, headers[n++] = "Bearer";
    if (err->http_status == 405 && allow && allow[0])
        headers[n++] = MHD_HTTP_HEADER_ALLOW, headers[n++] = allow;
    if (close) headers[n++] = MHD_HTTP_HEADER_CONNECTION, headers[n++] = "close";
    headers[n] = NULL;
    return http__reply(conn, (unsigned)err->http_status, "application/json",
                       oai_response_error(err), headers);
}

enum MHD_Result http_reply_error(http_server *s, struct MHD_Connection *conn, const oai_error *err)
{
    return http__reply_error(s, conn, err, NULL, 0);
}

void http_error_no_model(const http_server *s, const char *name, oai_error *err)
{
    oai_error_set(err, 404, "model",
                  "The model '%.200s' does not exist (this server has '%.200s').", name,
                  s->model_name);
}

void http_error_from_encore(oai_error *err, encore_status st, const char *what)
{
    int code = st == ENCORE_ERR_INVALID_ARGUMENT || st == ENCORE_ERR_UNSUPPORTED ? 400
               : st == ENCORE_ERR_OUT_OF_MEMORY                                   ? 503
                                                                                  : 500;
    oai_error_set(err, code, NULL, "%s: %s", what, encore_last_error());
}

/* --- the small endpoints ------------------------------------------------------ */

enum { HTTP_UNHEALTHY_STEP_FAILURES = 3 }; /* failed engine steps in a row: /health 503 */

/* 200 when up; 503 once HTTP_UNHEALTHY_STEP_FAILURES engine steps in a row
 * have failed, until one works again. */
static enum MHD_Result http__health(http_server *s, struct MHD_Connection *conn)
{
    encore_stats st;
    memset(&st, 0, sizeof st);
    if (encore_get_stats(s->engine, &st) == ENCORE_OK &&
        st.n_step_failures_in_a_row < HTTP_UNHEALTHY_STEP_FAILURES)
        return http__reply(conn, MHD_HTTP_OK, "text/plain", calloc(1, 1), NULL);
    char *body = malloc(128);
    if (body)
        snprintf(body, 128, "unhealthy: the last %lld engine steps failed\n",
                 (long long)st.n_step_failures_in_a_row);
    return http__reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", body, NULL);
}

static enum MHD_Result http__metrics(http_server *s, struct MHD_Connection *conn)
{
    encore_stats st;
    memset(&st, 0, sizeof st);
    if (encore_get_stats(s->engine, &st) != ENCORE_OK) memset(&st, 0, sizeof st);
    return http__reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                       metrics_render(&s->metrics, &st, s->model_name), NULL);
}

/* --- admission ---------------------------------------------------------------- */

/* --max-queue-per-client, or its default: half of --max-queue, at least 1 */
static int64_t http__max_per_client(const http_server *s)
{
    if (s->cfg.max_queue_per_client > 0) return s->cfg.max_queue_per_client;
    return s->cfg.max_queue / 2 > 1 ? s->cfg.max_queue / 2 : 1;
}

int http_admit(http_server *s, const char *client, int64_t n, int job, const char *param,
               oai_error *err)
{
    int64_t was = 0, max = http__max_per_client(s);
    if (n > max || n > s->cfg.max_queue) /* never admitted, however long the client waits */
        return oai_error_set(err, 400, param,
                             "%lld sequences (the prompts times 'best_of' or 'n') are more than "
                             "this server admits at once: %lld from one client "
                             "(--max-queue-per-client), %lld in all (--max-queue)",
                             (long long)n, (long long)max, (long long)s->cfg.max_queue);
    pthread_mutex_lock(&s->mu);
    int full = s->n_admitted + n > s->cfg.max_queue;
    int ok = !full && http_clients_add(&s->clients, client, n, max, &was);
    if (ok) {
        s->n_admitted += n;
        s->n_jobs += job;
    }
    pthread_mutex_unlock(&s->mu);
    if (full)
        oai_error_set(err, 503, NULL,
                      "the server is busy: %lld requests are queued or running (--max-queue); "
                      "retry later",
                      (long long)s->cfg.max_queue);
    else if (!ok && was < 0)
        oai_error_set(err, 503, NULL, "out of memory while admitting the request; retry later");
    else if (!ok)
        oai_error_set(err, 429, NULL,
                      "too many requests from this client: %lld queued or running, %lld more "
                      "asked, at most %lld (--max-queue-per-client); retry later",
                      (long long)was, (long long)n, (long long)max);
    return ok;
}

void http_admit_release(http_server *s, const char *client, int64_t n, int job)
{
    pthread_mutex_lock(&s->mu);
    s->n_admitted -= n;
    s->n_jobs -= job;
    http_clients_sub(&s->clients, client, n);
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

void http_client_id(const http_server *s, struct MHD_Connection *conn,
                    char out[HTTP_CLIENT_ID_MAX])
{
    snprintf(out, HTTP_CLIENT_ID_MAX, "%s", s->api_key ? "api-key" : "unknown");
    if (s->api_key) return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *a = ci ? ci->client_addr : NULL;
    if (a && a->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)a)->sin_addr, out,
                  HTTP_CLIENT_ID_MAX);
    else if (a && a->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr, out,
                  HTTP_CLIENT_ID_MAX);
}

/* 1 when the client's socket shows that it hung up. */
int http_client_gone(int fd)
{
    if (fd < 0) return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
    if (p.revents & POLLIN) {
        char b;
        ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    return 0;
}

void http_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
}

void http_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *mu, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ms * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(c, mu, &ts);
}

/* --- /tokenize and /detokenize ------------------------------------------------- */

/* Text longer than this many bytes per token of max_model_len is refused
 * before it is tokenized (no tokenizer makes tokens that long on average). */
enum { HTTP_TOKENIZE_BYTES_PER_TOKEN = 32 };

/* 0 with err filled when `n` ids of `param` are more than max_model_len. */
static int http__check_ids(const http_server *s, const char *param, size_t n, oai_error *err)
{
    if ((int64_t)n <= s->max_model_len) return 1;
    return oai_error_set(err, 400, param, "'%s' has %zu tokens, more than max_model_len (%lld)",
                         param, n, (long long)s->max_model_len);
}

int http_check_text(const http_server *s, const char *param, size_t len, oai_error *err)
{
    int64_t max = s->max_model_len * HTTP_TOKENIZE_BYTES_PER_TOKEN;
    if ((int64_t)len <= max) return 1;
    return oai_error_set(err, 400, param,
                         "'%s' is %zu bytes long, more than %d bytes per token of max_model_len "
                         "(%lld bytes)",
                         param, len, HTTP_TOKENIZE_BYTES_PER_TOKEN, (long long)max);
}

static enum MHD_Result http__detokenize(http_server *s, struct MHD_Connection *conn,
                                        oai_request *req)
{
    oai_error err;
    char *text = NULL;
    size_t len = 0;
    const oai_prompt *tokens = &req->prompts[0];
    if (!http__check_ids(s, "tokens", tokens->n_ids, &err)) return http_reply_error(s, conn, &err);
    encore_status st = encore_detokenize(s->engine, tokens->ids, tokens->n_ids, 1, &text, &len);
    if (st != ENCORE_OK) {
        http_error_from_encore(&err, st, "cannot detokenize");
        return http_reply_error(s, conn, &err);
    }
    char *clean = malloc(3 * len + 1);
    if (clean) oai_utf8_sanitize(text, len, clean, 3 * len + 1);
    encore_free(text);
    if (!clean) return MHD_NO; /* out of memory: the connection closes unanswered */
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_key(&w, "prompt");
    json_out_string(&w, clean);
    json_out_end_object(&w);
    free(clean);
    return http_reply_json(conn, MHD_HTTP_OK, json_out_finish(&w));
}

/* The ids of /tokenize's prompt or messages into *ids (encore_free) and *n;
 * ids NULL when the prompt is ids already. 0 with err filled when refused. */
static int http__tokenize_ids(http_server *s, const oai_request *req, int32_t **ids, size_t *n,
                              oai_error *err)
{
    const char *param = req->messages ? "messages" : "prompt";
    char *chat = NULL;
    encore_status st = ENCORE_OK;
    if (req->messages) {
        if (!s->has_chat_template)
            return oai_error_set(err, 400, "messages",
                                 "this model has no chat template encore can render (start "
                                 "the server with --chat-template FILE|NAME)");
        encore_chat_options o = tool_request_chat_options(req, 0);
        st = encore_chat_prompt_opts(s->engine, req->messages, req->n_messages, &o, &chat);
    }
    const oai_prompt *prompt = req->messages ? NULL : &req->prompts[0];
    const char *text = chat ? chat : prompt ? prompt->text : NULL;
    int ok = st == ENCORE_OK;
    if (!ok) http_error_from_encore(err, st, "cannot tokenize");
    if (ok && text) ok = http_check_text(s, param, strlen(text), err);
    if (ok && text) {
        encore_chat_options o = tool_request_chat_options(req, s->cfg.plain_content);
        st = chat ? encore_chat_tokenize_opts(s->engine, req->messages, req->n_messages, &o, ids, n)
                  : encore_tokenize_special(s->engine, text, strlen(text), req->add_special_tokens,
                                            ids, n);
        if (st != ENCORE_OK) http_error_from_encore(err, st, "cannot tokenize");
        ok = st == ENCORE_OK;
    }
    encore_free(chat);
    if (ok) ok = http__check_ids(s, param, prompt && !prompt->text ? prompt->n_ids : *n, err);
    return ok;
}

static enum MHD_Result http__tokenize(http_server *s, struct MHD_Connection *conn,
                                      oai_request *req)
{
    oai_error err;
    int32_t *ids = NULL;
    size_t n = 0;
    if (!http__tokenize_ids(s, req, &ids, &n, &err)) {
        encore_free(ids);
        return http_reply_error(s, conn, &err);
    }
    const oai_prompt *given = req->messages ? NULL : &req->prompts[0]; /* ids as sent */
    const int32_t *out = given && !given->text ? given->ids : ids;
    size_t n_out = given && !given->text ? given->n_ids : n;
    json_out w;
    json_out_init(&w);
    json_out_begin_object(&w);
    json_out_key(&w, "count");
    json_out_number(&w, (double)n_out);
    json_out_key(&w, "max_model_len");
    json_out_number(&w, (double)s->max_model_len);
    json_out_key(&w, "tokens");
    json_out_begin_array(&w);
    for (size_t i = 0; i < n_out; i++) json_out_number(&w, out[i]);
    json_out_end_array(&w);
    if (req->return_token_strs) { /* vLLM's: the vocabulary's strings, null for none */
        json_out_key(&w, "token_strs");
        json_out_begin_array(&w);
        for (size_t i = 0; i < n_out; i++) {
            const char *str = encore_token_string(s->engine, out[i]);
            if (str)
                json_out_string(&w, str);
            else
                json_out_null(&w);
        }
        json_out_end_array(&w);
    }
    json_out_end_object(&w);
    encore_free(ids);
    return http_reply_json(conn, MHD_HTTP_OK, json_out_finish(&w));
}

/* /tokenize and /detokenize, each counted as one request in --max-queue
 * while it runs. */
static enum MHD_Result http__tokens(http_server *s, struct MHD_Connection *conn, oai_request *req,
                                    const char *client)
{
    oai_error err;
    if (req->model && strcmp(req->model, s->model_name) != 0) {
        http_error_no_model(s, req->model, &err);
        return http_reply_error(s, conn, &err);
    }
    if (!http_admit(s, client, 1, 0, NULL, &err)) return http_reply_error(s, conn, &err);
    enum MHD_Result r = req->kind == OAI_DETOKENIZE ? http__detokenize(s, conn, req)
                                                    : http__tokenize(s, conn, req);
    http_admit_release(s, client, 1, 0);
    return r;
}

/* --- routing ------------------------------------------------------------------- */

typedef enum http_route {
    HTTP_ROUTE_NONE,
    HTTP_ROUTE_HEALTH,
    HTTP_ROUTE_VERSION,
    HTTP_ROUTE_METRICS,
    HTTP_ROUTE_MODELS,
    HTTP_ROUTE_MODEL, /* /v1/models/{id} */
    HTTP_ROUTE_COMPLETIONS,
    HTTP_ROUTE_EMBEDDINGS,
    HTTP_ROUTE_CHAT,
    HTTP_ROUTE_RESPONSES,
    HTTP_ROUTE_RESPONSE, /* /v1/responses/{id} */
    HTTP_ROUTE_TOKENIZE,
    HTTP_ROUTE_DETOKENIZE,
} http_route;

/* Every POST route takes a JSON body (http__refuse_early checks its
 * Content-Type: a browser's cross-site form or no-cors fetch cannot send
 * application/json without a preflight). A GET route answers HEAD too, with
 * the same headers and no body (libmicrohttpd leaves the body out). A path
 * ending in '/' is a prefix: what follows it is the route's argument. */
static const struct {
    const char *path, *method;
    http_route route;
} http_routes[] = {
    {"/health", "GET", HTTP_ROUTE_HEALTH},
    {"/version", "GET", HTTP_ROUTE_VERSION},
    {"/metrics", "GET", HTTP_ROUTE_METRICS},
    {"/v1/models", "GET", HTTP_ROUTE_MODELS},
    {"/v1/models/", "GET", HTTP_ROUTE_MODEL},
    {"/v1/completions", "POST", HTTP_ROUTE_COMPLETIONS},
    {"/v1/chat/completions", "POST", HTTP_ROUTE_CHAT},
    {"/v1/embeddings", "POST", HTTP_ROUTE_EMBEDDINGS},
    {"/v1/responses", "POST", HTTP_ROUTE_RESPONSES},
    {"/v1/responses/", "GET", HTTP_ROUTE_RESPONSE},
    {"/tokenize", "POST", HTTP_ROUTE_TOKENIZE},
    {"/detokenize", "POST", HTTP_ROUTE_DETOKENIZE},
};

/* 1 when `url` is route i's path (or, for a prefix, starts with it and has
 * more). */
static int http__path_is(const char *url, size_t i)
{
    const char *path = http_routes[i].path;
    size_t n = strlen(path);
    if (path[n - 1] == '/') return !strncmp(url, path, n) && url[n] != '\0';
    return !strcmp(url, path);
}

/* The route of (url, method); when the path exists with other methods only,
 * HTTP_ROUTE_NONE with those methods in allow[cap] ("GET, HEAD"), else
 * allow "". */
static http_route http__route(const char *url, const char *method, char *allow, size_t cap)
{
    allow[0] = '\0';
    for (size_t i = 0; i < sizeof http_routes / sizeof http_routes[0]; i++) {
        if (!http__path_is(url, i)) continue;
        const char *m = http_routes[i].method;
        int get = !strcmp(m, "GET");
        if (!strcmp(method, m) || (get && !strcmp(method, "HEAD"))) return http_routes[i].route;
        snprintf(allow, cap, "%s", get ? "GET, HEAD" : m);
    }
    return HTTP_ROUTE_NONE;
}

static const char *http__header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* The API key, compared in constant time. /health, /version and /metrics
 * need none. */
static int http__authorized(http_server *s, struct MHD_Connection *conn, http_route route)
{
    if (!s->api_key || route == HTTP_ROUTE_HEALTH || route == HTTP_ROUTE_VERSION ||
        route == HTTP_ROUTE_METRICS)
        return 1;
    return http_guard_bearer(http__header(conn, MHD_HTTP_HEADER_AUTHORIZATION), s->api_key);
}

/* The headers that say where a request ends and whom it is for: the first
 * Content-Length and one that differs from it, the Transfer-Encodings and
 * the Hosts. Two lengths, a length beside a Transfer-Encoding, or a coding
 * other than chunked are a request that a proxy in front may frame
 * otherwise than this server (request smuggling), and two Hosts one it may
 * route otherwise (RFC 9112, 6.1 and 3.2). */
typedef struct http__framing {
    const char *first, *other;
    int differ;
    const char *coding; /* the first Transfer-Encoding */
    int n_codings, n_hosts;
} http__framing;

static enum MHD_Result http__each_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value)
{
    http__framing *f = cls;
    (void)kind;
    if (!key || !value) return MHD_YES;
    if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        if (!f->n_codings++) f->coding = value;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
        f->n_hosts++;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (!f->first) {
            f->first = value;
        } else if (strcmp(f->first, value) != 0 && !f->differ) {
            f->other = value;
            f->differ = 1;
        }
    }
    return MHD_YES;
}

/* 1 with err filled when the framing headers are refused (above). */
static int http__refuse_framing(struct MHD_Connection *conn, const char *version, oai_error *err)
{
    http__framing f = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, http__each_framing, &f);
    if (f.differ)
        oai_error_set(err, 400, NULL,
                      "the request has Content-Length headers with different values ('%.30s', "
                      "'%.30s')",
                      f.first, f.other);
    else if (f.n_codings > 1 || (f.coding && strcasecmp(f.coding, "chunked") != 0))
        oai_error_set(err, 501, NULL,
                      "Transfer-Encoding '%.40s'%s: this server reads chunked alone", f.coding,
                      f.n_codings > 1 ? " and more" : "");
    else if (f.coding && f.first)
        oai_error_set(err, 400, NULL, "the request has both Transfer-Encoding and Content-Length");
    else if (f.n_hosts > 1 || (!f.n_hosts && version && !strcmp(version, "HTTP/1.1")))
        oai_error_set(err, 400, NULL, "an HTTP/1.1 request has one Host header; this one has %d",
                      f.n_hosts);
    else
        return 0;
    return 1;
}

/* On the first call, with the headers only: 1 with err filled when the
 * request is refused whatever its body (framing headers refused 400 or 501,
 * unknown route 404, wrong method 405, a Host not answered 421, no API key
 * 401, a POST not of application/json 415, a Content-Length over the limit
 * 413; a 405 has the path's methods in allow[allow_cap]); else 0 with
 * hc->route set. */
static int http__refuse_early(http_server *s, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, http_conn *hc,
                              oai_error *err, char *allow, size_t allow_cap)
{
    if (http__refuse_framing(conn, version, err)) return 1;
    http_route route = http__route(url, method, allow, allow_cap);
    if (route == HTTP_ROUTE_NONE) {
        if (allow[0])
            oai_error_set(err, 405, NULL, "method %.20s is not allowed on %.200s", method, url);
        else
            oai_error_set(err, 404, NULL, "no route %.20s %.200s", method, url);
        return 1;
    }
    const char *host = http__header(conn, MHD_HTTP_HEADER_HOST);
    if (s->check_host && !http_guard_host(host, s->allowed_hosts)) {
        oai_error_set(err, 421, NULL,
                      "Host '%.200s' is not accepted: this server answers localhost, 127.0.0.1, "
                      "[::1] and the names in --allowed-hosts", host);
        return 1;
    }
    if (!http__authorized(s, conn, route)) {
        oai_error_set(err, 401, NULL, "invalid or missing API key (Authorization: Bearer KEY)");
        return 1;
    }
    const char *type = http__header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!strcmp(method, "POST") && !http_guard_json_type(type)) {
        oai_error_set(err, 415, NULL, "%.200s takes Content-Type: application/json, not '%.200s'",
                      url, type ? type : "(none)");
        return 1;
    }
    const char *cl = http__header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body_bytes) {
        oai_error_set(err, 413, NULL, "the request body (%.30s bytes) is larger than %zu bytes", cl,
                      s->cfg.max_body_bytes);
        return 1;
    }
    hc->route = (int)route;
    return 0;
}

/* GET /v1/models/{id}: the model, or OpenAI's 404 for another id. */
static enum MHD_Result http__model(http_server *s, struct MHD_Connection *conn, const char *url)
{
    const char *id = url + strlen("/v1/models/");
    if (!strcmp(id, s->model_name))
        return http_reply_json(conn, MHD_HTTP_OK,
                               oai_response_model(s->model_name, s->created, s->max_model_len));
    oai_error err;
    http_error_no_model(s, id, &err);
    return http_reply_error(s, conn, &err);
}

/* Parsing holds about 40 times a body's bytes in cJSON nodes (a prompt of
 * token ids: a node of 64 bytes per "0,"), before any admission: bodies
 * over HTTP_LARGE_BODY parse HTTP_LARGE_PARSES at a time, the others'
 * threads waiting their turn, so that many connections each sending
 * --max-body-bytes cannot take the memory at once. */
enum { HTTP_LARGE_BODY = 1 << 20, HTTP_LARGE_PARSES = 2 };

/* The body of route as a request of kind (a Responses body: read as chat). */
static int http__parse_body(const http_server *s, const http_conn *hc, http_route route,
                            oai_kind kind, oai_request *req, oai_error *err)
{
    const char *body = hc->body ? hc->body : "";
    if (route == HTTP_ROUTE_RESPONSES)
        return oai_responses_parse(body, hc->len, &s->defaults, req, err);
    return oai_request_parse(body, hc->len, kind, &s->defaults, req, err);
}

static int http__parse(http_server *s, const http_conn *hc, http_route route, oai_kind kind,
                       oai_request *req, oai_error *err)
{
    if (hc->len <= HTTP_LARGE_BODY) return http__parse_body(s, hc, route, kind, req, err);
    pthread_mutex_lock(&s->mu);
    while (s->n_large_parses >= HTTP_LARGE_PARSES && !atomic_load(&s->stopping))
        pthread_cond_wait(&s->parse_free, &s->mu);
    int stopping = atomic_load(&s->stopping);
    if (!stopping) s->n_large_parses++;
    pthread_mutex_unlock(&s->mu);
    if (stopping) return oai_error_set(err, 503, NULL, "the server is stopping");
    int ok = http__parse_body(s, hc, route, kind, req, err);
    pthread_mutex_lock(&s->mu);
    s->n_large_parses--;
    pthread_cond_signal(&s->parse_free);
    pthread_mutex_unlock(&s->mu);
    return ok;
}

/* 1 with err filled (vLLM's 400) when the model does not serve route's
 * API: an embedding model generates nothing, a generative one embeds
 * nothing. */
static int http__unsupported_api(const http_server *s, http_route route, oai_error *err)
{
    const char *api = NULL;
    if (s->pooling && route == HTTP_ROUTE_COMPLETIONS) api = "Completions";
    if (s->pooling && route == HTTP_ROUTE_CHAT) api = "Chat Completions";
    if (s->pooling && route == HTTP_ROUTE_RESPONSES) api = "Responses";
    if (!s->pooling && route == HTTP_ROUTE_EMBEDDINGS) api = "Embeddings";
    if (!api) return 0;
    oai_error_set(err, 400, NULL,
                  "The model does not support %s API (it runs as %s; see `encore serve "
                  "--runner`)",
                  api, s->pooling ? "an embedding model" : "a generative model");
    return 1;
}

/* On the last call, with the whole body in hc. */
static enum MHD_Result http__dispatch(http_server *s, struct MHD_Connection *conn, http_conn *hc,
                                      const char *url)
{
    oai_error err;
    http_route route = (http_route)hc->route;
    if (hc->too_large) {
        oai_error_set(&err, 413, NULL, "the request body is larger than %zu bytes",
                      s->cfg.max_body_bytes);
        return http_reply_error(s, conn, &err);
    }
    switch (route) {
    case HTTP_ROUTE_HEALTH:
        return http__health(s, conn);
    case HTTP_ROUTE_VERSION:
        return http_reply_json(conn, MHD_HTTP_OK, oai_response_version(encore_version()));
    case HTTP_ROUTE_METRICS:
        return http__metrics(s, conn);
    case HTTP_ROUTE_MODELS:
        return http_reply_json(conn, MHD_HTTP_OK,
                               oai_response_models(s->model_name, s->created, s->max_model_len));
    case HTTP_ROUTE_MODEL:
        return http__model(s, conn, url);
    case HTTP_ROUTE_RESPONSE: /* vLLM's answer with its store off (its default) */
        oai_error_set(&err, 404, "response_id",
                      "Response with id '%.64s' not found: encore keeps no responses", url + 14);
        return http_reply_error(s, conn, &err);
    default:
        break;
    }
    oai_kind kind = route == HTTP_ROUTE_COMPLETIONS                             ? OAI_COMPLETION
                    : route == HTTP_ROUTE_CHAT || route == HTTP_ROUTE_RESPONSES ? OAI_CHAT
                    : route == HTTP_ROUTE_EMBEDDINGS                            ? OAI_EMBEDDING
                    : route == HTTP_ROUTE_TOKENIZE                              ? OAI_TOKENIZE
                                                                                : OAI_DETOKENIZE;
    if (http__unsupported_api(s, route, &err)) return http_reply_error(s, conn, &err);
    oai_request req;
    if (!http__parse(s, hc, route, kind, &req, &err)) return http_reply_error(s, conn, &err);
    char client[HTTP_CLIENT_ID_MAX];
    http_client_id(s, conn, client);
    if (kind == OAI_TOKENIZE || kind == OAI_DETOKENIZE) {
        enum MHD_Result r = http__tokens(s, conn, &req, client);
        oai_request_free(&req);
        return r;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? ci->connect_fd : -1;
    if (kind == OAI_EMBEDDING) return emb_handle(s, conn, &req, fd, client);
    return gen_handle(s, conn, &req, fd, hc->t_arrival, client);
}

/* Keep one piece of the body: 1, or 0 when out of memory. Past
 * max_body_bytes the body is dropped and too_large set; the buffer's
 * capacity stays at most max_body_bytes + 1 (the NUL). */
static int http__append(http_server *s, http_conn *hc, const char *data, size_t n)
{
    size_t max = s->cfg.max_body_bytes;
    if (hc->too_large || n > max - hc->len) {
        hc->too_large = 1;
        free(hc->body);
        hc->body = NULL;
        hc->len = hc->cap = 0;
        return 1;
    }
    if (hc->len + n + 1 > hc->cap) {
        size_t cap = (hc->len + n + 1) * 2;
        if (cap > max + 1) cap = max + 1;
        char *p = realloc(hc->body, cap);
        if (!p) return 0;
        hc->body = p;
        hc->cap = cap;
    }
    memcpy(hc->body + hc->len, data, n);
    hc->len += n;
    hc->body[hc->len] = '\0';
    return 1;
}

/* The connection's entry in s->deadline (NULL when it has none). */
static http_deadline_conn *http__watch(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result http__handle(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
    http_server *s = cls;
    http_conn *hc = *con_cls;
    if (!hc) {
        hc = calloc(1, sizeof *hc);
        if (!hc) return MHD_NO;
        hc->t_arrival = http_now();
        *con_cls = hc;
        oai_error err;
        char allow[32];
        allow[0] = '\0';
        if (!http__refuse_early(s, conn, url, method, version, hc, &err, allow, sizeof allow))
            return MHD_YES;
        hc->answered = 1;
        return http__reply_error(s, conn, &err, allow, 1); /* the body is not read: close */
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (hc->answered) return MHD_YES;
        return http__append(s, hc, upload_data, n) ? MHD_YES : MHD_NO;
    }
    if (hc->answered) return MHD_YES;
    hc->answered = 1;
    http_deadline_reading(s->deadline, http__watch(conn), 0); /* the request is in */
    return http__dispatch(s, conn, hc, url);
}

static void http__completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    http_server *s = cls;
    (void)toe;
    /* a kept-alive connection has the same time for its next request */
    http_deadline_reading(s->deadline, http__watch(conn), 1);
    http_conn *hc = *con_cls;
    if (!hc) return;
    free(hc->body);
    free(hc);
    *con_cls = NULL;
}

/* A connection opens (watched by s->deadline from now) or closes. One
 * that cannot be watched (out of memory or descriptors) is shut down. */
static void http__notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                         enum MHD_ConnectionNotificationCode code)
{
    http_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_deadline_remove(s->deadline, *socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? ci->connect_fd : -1;
    *socket_context = fd >= 0 ? http_deadline_add(s->deadline, fd) : NULL;
    if (!*socket_context && fd >= 0) shutdown(fd, SHUT_RDWR);
}

/* Raise the soft limit on open files to what max_connections needs (each
 * connection holds its socket and the deadline's dup of it), within the
 * hard limit. */
static void http__raise_fd_limit(int max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    rlim_t need = 2 * (rlim_t)max_connections + 256;
    if (rl.rlim_cur >= need) return;
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
    setrlimit(RLIMIT_NOFILE, &rl);
}

/* --- start and stop -------------------------------------------------------------- */

static char *http__strdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void http__free(http_server *s)
{
    http_deadline_destroy(s->deadline);
    metrics_destroy(&s->metrics);
    http_clients_free(&s->clients);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->parse_free);
    free(s->host);
    free(s->api_key);
    free(s->model_name);
    free(s->allowed_hosts);
    free(s);
}

/* 1 for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 */
static int http__loopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family != AF_INET6) return 0;
    const struct in6_addr *v6 = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(v6) || (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
}

int http_server_start(encore_engine *e, const http_server_config *cfg, http_server **out,
                      char *err, size_t cap)
{
    *out = NULL;
    encore_model_info info;
    if (encore_get_model_info(e, &info) != ENCORE_OK) {
        snprintf(err, cap, "cannot read the model's info: %s", encore_last_error());
        return 0;
    }
    http_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return 0;
    }
    s->engine = e;
    s->cfg = *cfg;
    if (s->cfg.timeout_s < 1) s->cfg.timeout_s = 120;
    if (s->cfg.request_read_timeout_s < 1) s->cfg.request_read_timeout_s = 15;
    if (s->cfg.max_connections_per_ip < 0) s->cfg.max_connections_per_ip = 0;
    s->host = http__strdup(cfg->host ? cfg->host : "127.0.0.1");
    s->api_key = cfg->api_key && cfg->api_key[0] ? http__strdup(cfg->api_key) : NULL;
    s->model_name = http__strdup(cfg->served_model_name ? cfg->served_model_name
                                 : info.name                ? info.name
                                                            : "encore");
    s->cfg.host = s->host;
    s->cfg.api_key = s->api_key;
    s->cfg.served_model_name = s->model_name;
    s->allowed_hosts = http__strdup(cfg->allowed_hosts);
    s->cfg.allowed_hosts = s->allowed_hosts;
    s->max_model_len = info.max_model_len;
    s->vocab_size = info.vocab_size;
    s->has_chat_template = info.has_chat_template;
    s->pooling = info.pooling;
    s->hidden_size = info.hidden_size;
    if (!cfg->no_generation_config)
        s->defaults.set = encore_sampling_model_defaults(e, &s->defaults.sampling, 0);
    s->created = (int64_t)time(NULL);
    atomic_init(&s->stopping, 0);
    const char *fault = getenv("ENCORE_FAULT_FINAL_COPIES");
    atomic_init(&s->n_fault_final_copies, fault ? strtoll(fault, NULL, 10) : 0);
    atomic_init(&s->next_id, (uint64_t)time(NULL) ^ ((uint64_t)(http_now() * 1e9) << 20));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_cond_init(&s->parse_free, NULL);
    metrics_init(&s->metrics);
    s->deadline = http_deadline_create(s->cfg.request_read_timeout_s, 1);
    if (!s->deadline || !s->host || !s->model_name || (cfg->api_key && cfg->api_key[0] && !s->api_key) ||
        (cfg->allowed_hosts && !s->allowed_hosts)) {
        snprintf(err, cap, "out of memory");
        http__free(s);
        return 0;
    }

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int gai = getaddrinfo(s->host, port, &hints, &ai);
    if (gai != 0 || !ai) {
        snprintf(err, cap, "cannot resolve --host %s: %s", s->host, gai_strerror(gai));
        http__free(s);
        return 0;
    }
    s->check_host = s->allowed_hosts || http__loopback(ai->ai_addr);
    http__raise_fd_limit(cfg->max_connections);
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, http__handle, s,
                                 MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                 (unsigned)s->cfg.max_connections_per_ip,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.timeout_s,
                                 MHD_OPTION_NOTIFY_COMPLETED, http__completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, http__notify, s,
                                 MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->daemon) {
        snprintf(err, cap, "cannot listen on %s port %d (in use, or not an address of this machine?)",
                 s->host, cfg->port);
        http__free(s);
        return 0;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    *out = s;
    return 1;
}

int http_server_port(const http_server *s) { return s->port; }

const char *http_server_model_name(const http_server *s) { return s->model_name; }

void http_server_stop(http_server *s)
{
    if (!s) return;
    atomic_store(&s->stopping, 1);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->parse_free); /* parses waiting their turn give up */
    pthread_mutex_unlock(&s->mu);
    /* Connection threads waiting on the engine see `stopping` within a poll
     * interval, cancel and end; MHD_stop_daemon joins them. */
    MHD_stop_daemon(s->daemon);
    http_deadline_destroy(s->deadline); /* every connection is closed: its list is empty */
    s->deadline = NULL;
    /* Jobs whose last engine call has not come yet still point at s. */
    pthread_mutex_lock(&s->mu);
    double deadline = http_now() + 30;
    while (s->n_jobs > 0 && http_now() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&s->idle, &s->mu, &ts);
    }
    int64_t left = s->n_jobs;
    pthread_mutex_unlock(&s->mu);
    if (left == 0) http__free(s); /* else the engine still holds requests: leave s to them */
}
