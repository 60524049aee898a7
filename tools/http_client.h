/* http_client.h - a minimal blocking HTTP/1.1 client for `encore bench
 * serve`: one request per connection, the response body delivered as it
 * arrives (chunked or not), with a Server-Sent-Events splitter on top.
 *
 * Plain http:// only; the benchmark talks to a server on this machine. */
#ifndef ENC_TOOLS_HTTP_CLIENT_H
#define ENC_TOOLS_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct http_url {
    char host[256];
    char port[16];
    char path_prefix[256]; /* what followed host:port, without a trailing '/' */
    int timeout_s;         /* a read that waits longer fails (default 600) */
} http_url;

/* "http://host[:port][/prefix]" -> parts; false (and a message in err) if malformed. */
bool http_url_parse(const char *url, http_url *out, char *err, size_t err_cap);

/* Called with each piece of the decoded body, in order; return false to stop. */
typedef bool (*http_body_fn)(void *user, const char *data, size_t len);

/* Send `method` (GET, POST) with `body` (JSON, or NULL for none) to url's
 * host at path, with an optional bearer token. Fills *status with the HTTP
 * status. Returns false with a message in err on a connection or protocol
 * failure (a non-2xx status is not a failure). */
bool http_request_stream(const http_url *url, const char *method, const char *path,
                         const char *api_key, const char *body, int *status, http_body_fn fn,
                         void *user, char *err, size_t err_cap);

/* The same, the whole body collected into *reply (malloc'd, NUL-terminated;
 * NULL when the response had none, or after a failure). */
bool http_request(const http_url *url, const char *method, const char *path, const char *api_key,
                  const char *body, int *status, char **reply, char *err, size_t err_cap);

/* Splits an event stream into the `data:` payloads of its events. */
typedef struct sse_reader {
    char *buf;
    size_t len, cap;
    bool (*on_data)(void *user, const char *data, size_t len); /* false stops */
    void *user;
} sse_reader;

/* Feed body bytes (an http_body_fn with user = the reader). */
bool sse_feed(void *reader, const char *data, size_t len);
void sse_reader_free(sse_reader *r);

#endif
