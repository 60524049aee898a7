/* http_client.c - a minimal blocking HTTP/1.1 client with a streamed
 * body (chunked transfer coding or Content-Length) and an SSE splitter. */
#define _POSIX_C_SOURCE 200809L
#include "http_client.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static bool http__fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return false;
}

bool http_url_parse(const char *url, http_url *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    out->timeout_s = 600;
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0)
        return http__fail(err, err_cap, "'%s' is not an http:// URL", url);
    p += 7;
    size_t host_len = strcspn(p, ":/");
    if (host_len == 0 || host_len >= sizeof out->host)
        return http__fail(err, err_cap, "'%s' has no host", url);
    memcpy(out->host, p, host_len);
    p += host_len;
    strcpy(out->port, "80");
    if (*p == ':') {
        size_t port_len = strspn(p + 1, "0123456789");
        long port = port_len > 0 && port_len < 6 ? strtol(p + 1, NULL, 10) : 0;
        if (port < 1 || port > 65535)
            return http__fail(err, err_cap, "'%s' has a bad port (1 to 65535)", url);
        memcpy(out->port, p + 1, port_len);
        out->port[port_len] = '\0';
        p += 1 + port_len;
    }
    size_t rest = strlen(p);
    while (rest > 0 && p[rest - 1] == '/') rest--;
    if (rest >= sizeof out->path_prefix) return http__fail(err, err_cap, "'%s' is too long", url);
    if (rest > 0 && *p != '/') return http__fail(err, err_cap, "'%s' is malformed", url);
    memcpy(out->path_prefix, p, rest);
    return true;
}

static int http__connect(const http_url *u, char *err, size_t cap)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        http__fail(err, cap, "cannot resolve %s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        http__fail(err, cap, "cannot connect to %s:%s: %s", u->host, u->port, strerror(errno));
        return -1;
    }
    struct timeval tv = {.tv_sec = u->timeout_s};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static bool http__send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Bytes received and not yet consumed. */
typedef struct http_buf {
    char *p;
    size_t len, cap;
} http_buf;

static bool http__recv_more(int fd, http_buf *b)
{
    if (b->cap - b->len < 4096) {
        size_t cap = b->cap ? b->cap * 2 : 16384;
        char *p = realloc(b->p, cap);
        if (!p) return false;
        b->p = p;
        b->cap = cap;
    }
    ssize_t r;
    do r = recv(fd, b->p + b->len, b->cap - b->len - 1, 0);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return false;
    b->len += (size_t)r;
    b->p[b->len] = '\0';
    return true;
}

static void http__consume(http_buf *b, size_t n)
{
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    b->p[b->len] = '\0';
}

/* The value of header `name` in the header block, or NULL. */
static const char *http__header(const char *headers, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = strstr(headers, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
        const char *h = line + 2;
        if (strncasecmp(h, name, n) == 0 && h[n] == ':') return h + n + 1 + strspn(h + n + 1, " \t");
    }
    return NULL;
}

/* Deliver a chunked body: "SIZE\r\nDATA\r\n" ... "0\r\n\r\n". */
static bool http__read_chunked(int fd, http_buf *b, http_body_fn fn, void *user, char *err, size_t cap)
{
    for (;;) {
        char *eol;
        while (!(eol = strstr(b->p, "\r\n")))
            if (!http__recv_more(fd, b)) return http__fail(err, cap, "connection closed in a chunk header");
        char *end;
        unsigned long size = strtoul(b->p, &end, 16);
        if (end == b->p) return http__fail(err, cap, "bad chunk size line");
        size_t head = (size_t)(eol + 2 - b->p);
        while (b->len < head + size + 2)
            if (!http__recv_more(fd, b)) return http__fail(err, cap, "connection closed in a chunk");
        if (size == 0) return true;
        if (!fn(user, b->p + head, size)) return true;
        http__consume(b, head + size + 2);
    }
}

static bool http__read_body(int fd, http_buf *b, const char *headers, http_body_fn fn, void *user,
                            char *err, size_t cap)
{
    const char *te = http__header(headers, "transfer-encoding");
    if (te && strncasecmp(te, "chunked", 7) == 0) return http__read_chunked(fd, b, fn, user, err, cap);
    const char *cl = http__header(headers, "content-length");
    long long left = cl ? atoll(cl) : -1;
    for (;;) {
        size_t n = b->len;
        if (left >= 0 && (long long)n > left) n = (size_t)left;
        if (n > 0 && !fn(user, b->p, n)) return true;
        http__consume(b, n);
        if (left >= 0 && (left -= (long long)n) == 0) return true;
        if (!http__recv_more(fd, b)) {
            if (left < 0) return true; /* the body ends with the connection */
            return http__fail(err, cap, "connection closed %lld bytes before the end of the body", left);
        }
    }
}

bool http_request_stream(const http_url *url, const char *method, const char *path,
                         const char *api_key, const char *body, int *status, http_body_fn fn,
                         void *user, char *err, size_t err_cap)
{
    if (!body) body = "";
    int fd = http__connect(url, err, err_cap);
    if (fd < 0) return false;
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "%s %s%s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                     "Accept: text/event-stream\r\nContent-Length: %zu\r\nConnection: close\r\n%s%s%s\r\n",
                     method, url->path_prefix, path, url->host, url->port, strlen(body),
                     api_key ? "Authorization: Bearer " : "", api_key ? api_key : "", api_key ? "\r\n" : "");
    http_buf b = {0};
    bool ok = n > 0 && (size_t)n < sizeof head;
    if (!ok) http__fail(err, err_cap, "request head too long");
    if (ok && !(http__send_all(fd, head, (size_t)n) && http__send_all(fd, body, strlen(body))))
        ok = http__fail(err, err_cap, "sending the request: %s", strerror(errno));
    char *end = NULL;
    while (ok && !(b.p && (end = strstr(b.p, "\r\n\r\n"))))
        if (!http__recv_more(fd, &b)) ok = http__fail(err, err_cap, "no response (connection closed)");
    if (ok && sscanf(b.p, "HTTP/1.%*d %d", status) != 1) ok = http__fail(err, err_cap, "bad status line");
    if (ok) {
        *end = '\0';
        char *headers = strdup(b.p);
        http__consume(&b, (size_t)(end + 4 - b.p));
        ok = headers && http__read_body(fd, &b, headers, fn, user, err, err_cap);
        free(headers);
    }
    free(b.p);
    close(fd);
    return ok;
}

/* --- Server-Sent Events ----------------------------------------------------- */

/* Hand each complete event's data lines (joined by '\n') to on_data. */
static bool sse__dispatch(sse_reader *r, char *event, size_t len)
{
    char *data = malloc(len + 1);
    if (!data) return false;
    size_t n = 0;
    for (char *line = event; line < event + len;) {
        char *eol = memchr(line, '\n', (size_t)(event + len - line));
        size_t l = eol ? (size_t)(eol - line) : (size_t)(event + len - line);
        if (l >= 5 && !strncmp(line, "data:", 5)) {
            size_t skip = 5 + (l > 5 && line[5] == ' ');
            if (n) data[n++] = '\n';
            memcpy(data + n, line + skip, l - skip);
            n += l - skip;
        }
        line += l + 1;
    }
    data[n] = '\0';
    bool go = n == 0 || r->on_data(r->user, data, n);
    free(data);
    return go;
}

bool sse_feed(void *reader, const char *data, size_t len)
{
    sse_reader *r = reader;
    if (r->len + len + 1 > r->cap) {
        size_t cap = (r->len + len + 1) * 2;
        char *p = realloc(r->buf, cap);
        if (!p) return false;
        r->buf = p;
        r->cap = cap;
    }
    for (size_t i = 0; i < len; i++) /* events are separated by blank lines; drop CRs */
        if (data[i] != '\r') r->buf[r->len++] = data[i];
    r->buf[r->len] = '\0';
    char *sep;
    while ((sep = strstr(r->buf, "\n\n"))) {
        size_t event_len = (size_t)(sep - r->buf);
        if (!sse__dispatch(r, r->buf, event_len)) return false;
        memmove(r->buf, sep + 2, r->len - event_len - 2 + 1);
        r->len -= event_len + 2;
    }
    return true;
}

void sse_reader_free(sse_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->len = r->cap = 0;
}

static bool http__collect(void *user, const char *data, size_t len)
{
    http_buf *b = user;
    if (b->len + len + 1 > b->cap) {
        size_t cap = (b->len + len + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) return false;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
    return true;
}

bool http_request(const http_url *url, const char *method, const char *path, const char *api_key,
                  const char *body, int *status, char **reply, char *err, size_t err_cap)
{
    http_buf b = {0};
    bool ok = http_request_stream(url, method, path, api_key, body, status, http__collect, &b, err,
                                  err_cap);
    if (!ok) {
        free(b.p);
        b.p = NULL;
    }
    *reply = b.p;
    return ok;
}
