/* fuzz_http.c - libFuzzer target for the server's HTTP layer: request lines,
 * header framing, the checks made on the headers (route, method, Host, API
 * key, Content-Type, Content-Length), chunked and plain bodies, several
 * requests on one connection.
 *
 * Each input is the bytes a client sends on one connection. A real server
 * (src/server over an engine of the model in $ENCORE_FUZZ_MODEL, started
 * once, with an API key and small limits) gets them over TCP on 127.0.0.1;
 * the client then half-closes and reads until the server closes. The server
 * must answer or close within FUZZ_HTTP_WAIT_S, every reply must be an HTTP
 * status line, and nothing may crash (ASan, UBSan). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "encore.h"
#include "server/server.h"

enum { FUZZ_HTTP_WAIT_S = 10 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static http_server *fuzz_server;

static void fuzz_die(const char *what)
{
    fprintf(stderr, "fuzz_http: %s\n", what);
    abort();
}

static void fuzz_start(void)
{
    const char *model = getenv("ENCORE_FUZZ_MODEL");
    if (!model)
        fuzz_die("set ENCORE_FUZZ_MODEL to a model directory (build/models/tiny-qwen3vocab)");
    encore_options opt = encore_options_default();
    opt.model_dir = model;
    opt.n_threads = 1;
    opt.max_num_seqs = 4;
    opt.max_model_len = 256;
    opt.eager = 1;
    encore_engine *e = NULL;
    if (encore_engine_create(&opt, &e) != ENCORE_OK) fuzz_die(encore_last_error());
    http_server_config cfg = http_server_config_default();
    cfg.port = 0;
    cfg.api_key = "sesame";
    cfg.max_queue = 8;
    cfg.max_tokens_default = 2;
    cfg.max_body_bytes = 4096;
    cfg.timeout_s = 5;
    cfg.request_read_timeout_s = 5;
    char err[256];
    if (!http_server_start(e, &cfg, &fuzz_server, err, sizeof err)) fuzz_die(err);
    /* the engine and the server live until the process exits */
}

static double fuzz_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read until the server closes; the first bytes into head[cap]. */
static size_t fuzz_read_reply(int fd, char *head, size_t cap)
{
    size_t n = 0;
    double deadline = fuzz_now() + FUZZ_HTTP_WAIT_S;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left_ms = (int)((deadline - fuzz_now()) * 1000);
        int r_poll = left_ms > 0 ? poll(&p, 1, left_ms) : 0;
        if (r_poll < 0 && errno == EINTR) continue; /* libFuzzer's SIGALRM every ~16 s */
        if (r_poll <= 0) fuzz_die("the server neither answered nor closed");
        char buf[4096];
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0) return n; /* closed (or reset) */
        size_t k = (size_t)r < cap - n ? (size_t)r : cap - n;
        memcpy(head + n, buf, k);
        n += k;
    }
}

/* connect(), finished when a signal (libFuzzer's SIGALRM) interrupts it. */
static int fuzz_connect(int fd, const struct sockaddr_in *a)
{
    if (connect(fd, (const struct sockaddr *)a, sizeof *a) == 0) return 1;
    if (errno != EINTR) return 0;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    while (poll(&p, 1, FUZZ_HTTP_WAIT_S * 1000) < 0)
        if (errno != EINTR) return 0;
    int err = 0;
    socklen_t len = sizeof err;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fuzz_server) fuzz_start();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)http_server_port(fuzz_server))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Hundreds of connections a second leave each (address, port) pair in
     * TIME_WAIT for a minute: from one source address the ephemeral ports
     * run out after some 28,000 and connect() fails or stalls. So each
     * connection comes from the next of 127.0.0.2 .. 127.0.0.251, each with
     * a port range of its own. */
    static unsigned next_source;
    struct sockaddr_in from = {.sin_family = AF_INET};
    from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + next_source++ % 250);
    if (fd < 0 || bind(fd, (struct sockaddr *)&from, sizeof from) != 0 || !fuzz_connect(fd, &a))
        fuzz_die("cannot connect");
    /* the server may close before it has read everything: that is allowed */
    for (size_t off = 0; off < size;) {
        ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    char head[16];
    size_t n = fuzz_read_reply(fd, head, sizeof head);
    close(fd);
    if (n > 0 && (n < 9 || memcmp(head, "HTTP/1.", 7) != 0)) fuzz_die("a reply that is not HTTP");
    return 0;
}
