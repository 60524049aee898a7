/* server_impl.h - what http.c (connections, routing) and generation.c
 * (requests in the engine, streamed back) share. */
#ifndef ENC_SERVER_SERVER_IMPL_H
#define ENC_SERVER_SERVER_IMPL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "http_clients.h"
#include "http_deadline.h"
#include "metrics.h"
#include "openai_request.h"
#include "server.h"

struct http_server {
    encore_engine *engine;
    struct MHD_Daemon *daemon;
    http_deadline *deadline;    /* --request-read-timeout, watched on a thread of its own */
    http_server_config cfg;     /* strings point into the copies below */
    char *host, *api_key, *model_name, *allowed_hosts;
    int port;
    int check_host;             /* bound to a loopback address, or allowed_hosts set */
    int64_t max_model_len;
    int64_t vocab_size;         /* token ids in stop_token_ids and logit_bias are below it */
    int has_chat_template;
    int pooling;                /* an embedding model: /v1/embeddings, no generation */
    int64_t hidden_size;        /* the width of its embeddings */
    oai_defaults defaults;      /* the model's recommended sampling (unless
                                   no_generation_config), for requests that omit it */
    int64_t created;            /* Unix seconds at start, for /v1/models */
    metrics metrics;
    atomic_int stopping;        /* set by http_server_stop: waits give up */
    atomic_uint_fast64_t next_id;
    atomic_llong n_fault_final_copies; /* ENCORE_FAULT_FINAL_COPIES: last outputs whose copy
                                          fails as out of memory would (tests) */
    pthread_mutex_t mu;                /* guards the counts and signals `idle` and `parse_free` */
    pthread_cond_t idle;
    pthread_cond_t parse_free;  /* n_large_parses fell */
    int n_large_parses;         /* bodies over HTTP_LARGE_BODY being parsed */
    int64_t n_admitted;         /* generation requests (choices) admitted, not yet freed */
    int64_t n_jobs;             /* generation jobs alive (a job holds n choices) */
    http_clients clients;       /* n_admitted per client */
};

/* Queue a JSON reply (body malloc'd, taken) with `status`. */
enum MHD_Result http_reply_json(struct MHD_Connection *conn, unsigned status, char *body);
/* Queue OpenAI's error object for err (503 gets Retry-After). */
enum MHD_Result http_reply_error(http_server *s, struct MHD_Connection *conn, const oai_error *err);

/* Admit n generation requests (choices) and `job` (0 or 1) jobs of
 * `client` (http_client_id) against --max-queue and --max-queue-per-client:
 * 1, or 0 with err filled (503 when the queue is full, 429 when the
 * client's share is, 400 naming param, the field that made n, when n is more
 * than either holds). http_admit_release gives them back. */
int http_admit(http_server *s, const char *client, int64_t n, int job, const char *param,
               oai_error *err);
void http_admit_release(http_server *s, const char *client, int64_t n, int job);
/* The client a request counts against: "api-key" when the server has one
 * (every holder of it is one client), else the peer's IP address. */
void http_client_id(const http_server *s, struct MHD_Connection *conn,
                    char out[HTTP_CLIENT_ID_MAX]);

/* OpenAI's 404 for a model `name` this server does not have. */
void http_error_no_model(const http_server *s, const char *name, oai_error *err);
/* The error for a failed encore call: 400 for bad input, 500 otherwise. */
void http_error_from_encore(oai_error *err, encore_status st, const char *what);

/* A request id with a prefix ("cmpl-", "chatcmpl-") into out[cap]; also a
 * 64-bit random number for seeds. */
void http_new_id(http_server *s, const char *prefix, char *out, size_t cap);
uint64_t http_random(http_server *s);

/* POST /v1/completions and /v1/chat/completions with a parsed request (taken:
 * freed here). `fd` is the client's socket, polled to notice a client that
 * went away while its request waits; `t_arrival` (http_now) when its headers
 * came, the start of its time to first token; `client` its http_client_id. */
enum MHD_Result gen_handle(http_server *s, struct MHD_Connection *conn, oai_request *req, int fd,
                           double t_arrival, const char *client);

/* POST /v1/embeddings with a parsed request (taken: freed here); fd and
 * client as for gen_handle. */
enum MHD_Result emb_handle(http_server *s, struct MHD_Connection *conn, oai_request *req, int fd,
                           const char *client);

/* 1 when the client's socket `fd` (-1: none) shows that it hung up. */
int http_client_gone(int fd);
/* 0 with err filled (a 400 naming param) when `len` bytes of text are too
 * long to tokenize: more than 32 per token of max_model_len. */
int http_check_text(const http_server *s, const char *param, size_t len, oai_error *err);

double http_now(void); /* monotonic seconds */
/* A condition variable whose timed waits run on the monotonic clock, and
 * one such wait of at most ms milliseconds (mu held). */
void http_cond_init(pthread_cond_t *c);
void http_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *mu, int ms);

#endif
