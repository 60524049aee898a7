/* server.h - encore's OpenAI-compatible HTTP server over an engine made with
 * include/encore.h (the only engine interface the server uses).
 *
 *   http_server *s;
 *   char err[256];
 *   http_server_config cfg = http_server_config_default();
 *   if (!http_server_start(engine, &cfg, &s, err, sizeof err)) puts(err);
 *   printf("listening on port %d\n", http_server_port(s));
 *   ...
 *   http_server_stop(s);
 *
 * Routes: POST /v1/completions, /v1/chat/completions, /tokenize, /detokenize;
 * GET /v1/models, /health, /metrics. */
#ifndef ENC_SERVER_SERVER_H
#define ENC_SERVER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "encore.h"

typedef struct http_server http_server;

typedef struct http_server_config {
    const char *host;              /* address to bind (default "127.0.0.1") */
    int port;                      /* 0: any free port (default 8000) */
    const char *api_key;           /* NULL: none; else "Authorization: Bearer KEY" required */
    int64_t max_queue;             /* generation requests admitted at once; beyond: 503 */
    int64_t max_queue_per_client;  /* of those, from one client (the API key's holders when a
                                      key is set, else one peer IP); beyond: 429. 0: half of
                                      max_queue, at least 1 */
    int64_t max_tokens_default;    /* max_tokens of a request that gives none: at most this;
                                      0: no cap (the rest of max_model_len) */
    size_t max_body_bytes;         /* larger request bodies: 413 */
    const char *served_model_name; /* NULL: the model directory's name */
    int max_connections;           /* open connections (one thread each) */
    int max_connections_per_ip;    /* of those, from one IP address; 0: no limit (default 32) */
    int request_read_timeout_s;    /* a request's headers and body must all arrive within this
                                      many seconds of its connection's accept (or of the end of
                                      its previous request), however they trickle (default 15) */
    int timeout_s;                 /* a connection silent this long is closed (default 120);
                                      a stream still waiting sends SSE keep-alive comments */
    int plain_content;             /* chat: the messages' and the tools' text is tokenized
                                      with special-token matching off (encore_chat_tokenize);
                                      0 (default): a "<|im_start|>" in it is the special
                                      token */
    int no_generation_config;      /* nonzero: requests that omit temperature, top_k, top_p,
                                      min_p or repetition_penalty take OpenAI's and vLLM's
                                      defaults; 0 (default): the model's recommended values
                                      where it gives them (generation_config.json, as vLLM's
                                      --generation-config auto) */
    const char *allowed_hosts;     /* comma-separated Host names accepted besides localhost,
                                      127.0.0.1 and ::1 ("*": any); NULL: none. The Host header
                                      is checked when bound to a loopback address or when set */
} http_server_config;

http_server_config http_server_config_default(void);

/* Bind and start serving on threads of its own. Returns 1, or 0 with a
 * message in err[cap]. The engine must outlive the server. */
int http_server_start(encore_engine *e, const http_server_config *cfg, http_server **out,
                      char *err, size_t cap);
/* The port bound (the one chosen when cfg.port was 0). */
int http_server_port(const http_server *s);
/* The model's name in the API (--served-model-name or the directory's). */
const char *http_server_model_name(const http_server *s);
/* Stop accepting, abort what still runs, wait for its connections, free.
 * NULL is a no-op. */
void http_server_stop(http_server *s);

#endif
