/* cmd_serve.c - `encore serve`: the OpenAI-compatible HTTP server
 * (src/server) over one engine, until SIGINT or SIGTERM. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "serve_setup.h"

static const char serve_help[] =
    "usage: encore serve -m DIR [options]\n\n"
    "Serve a Qwen3 checkpoint over HTTP with OpenAI's API: POST /v1/completions,\n"
    "/v1/chat/completions, /v1/responses, /tokenize, /detokenize; GET /v1/models,\n"
    "/health, /version, /metrics.\n\n"
    "options:\n"
    "  --host ADDR              address to bind (default 127.0.0.1; 0.0.0.0 for every\n"
    "                           interface)\n"
    "  --port N                 port (default 8000; 0 picks a free one, printed at start)\n"
    "  --api-key KEY            require 'Authorization: Bearer KEY' on every route but\n"
    "                           /health, /version and /metrics (default: ENCORE_API_KEY, else\n"
    "                           none)\n"
    "  --api-key-file PATH      the key is PATH's first line (kept out of the process's\n"
    "                           command line, which other users can read)\n"
    "  --served-model-name NAME the model's name in the API (default: DIR's last component)\n"
    "  --chat-template FILE|NAME  the chat template of /v1/chat/completions instead of the\n"
    "                           model's: a Jinja file (the official Qwen3, Qwen3-2507 or\n"
    "                           Qwen3-Coder template), or qwen3, qwen3-instruct or\n"
    "                           qwen3-thinking (default: the model's own)\n"
    "  --runner auto|generate|pooling  pooling: serve an embedding model (/v1/embeddings,\n"
    "                           the last token's hidden state; Qwen3-Embedding); auto\n"
    "                           (default): pooling for a sentence-transformers checkpoint\n"
    "                           (modules.json with a Pooling module), else generate\n"
    "  --max-queue N            generation requests admitted at once, running or waiting;\n"
    "                           more get 503 with Retry-After (default 256)\n"
    "  --max-queue-per-client N of those, from one client (the API key's holders when\n"
    "                           a key is set, else one IP address); more get 429 with\n"
    "                           Retry-After (default: half of --max-queue, at least 1)\n"
    "  --max-tokens-default N   max_tokens of a request that gives none, at most N\n"
    "                           (default: the rest of --max-model-len)\n"
    "  --max-body-bytes N       largest request body; larger get 413 (default 8388608)\n"
    "  --max-connections N      open connections, one thread each (default 512)\n"
    "  --max-connections-per-ip N  of those, from one IP address; more are closed at\n"
    "                           once (default 32; 0: no limit; behind a proxy every\n"
    "                           client has the proxy's address)\n"
    "  --request-read-timeout SECONDS  a request's headers and body must all arrive\n"
    "                           within SECONDS of the connection's accept (or of its\n"
    "                           previous reply), however slowly they trickle; else the\n"
    "                           connection is closed (default 15)\n"
    "  --timeout SECONDS        close a connection silent this long (default 120); a\n"
    "                           stream still waiting for tokens sends an SSE comment\n"
    "                           every min(5, SECONDS/4) seconds meanwhile\n"
    "  --no-special-tokens-in-content  tokenize chat messages' and tools' text with\n"
    "                           special-token matching off: a '<|im_start|>' a user\n"
    "                           typed stays text\n"
    "                           (default: it is the special token, as in Hugging Face\n"
    "                           and vLLM); the template's own tokens are unchanged\n"
    "  --generation-config auto|none  auto (default): a request that omits temperature,\n"
    "                           top_k, top_p, min_p or repetition_penalty takes the\n"
    "                           model's recommended value (its generation_config.json,\n"
    "                           as vLLM; a GGUF file's general.sampling.* keys), printed\n"
    "                           at start; none: OpenAI's defaults (vLLM's 'vllm')\n"
    "  --allowed-hosts LIST     Host names accepted besides localhost, 127.0.0.1 and\n"
    "                           [::1], comma-separated, '*' for any (default none); the\n"
    "                           Host is checked when bound to a loopback address or when\n"
    "                           this is set (others get 421)\n"
    "  -h, --help               show this help\n\n";

/* The API key in `path`: its first line without the line end, malloc'd
 * (the caller frees it); NULL, the reason printed, when the file cannot be
 * read or its first line is empty. */
static char *serve__read_key(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error("serve", "--api-key-file %s: %s", path, strerror(errno));
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(&line, &cap, f);
    int read_error = n < 0 && ferror(f), e = errno;
    fclose(f);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (n > 0) return line;
    free(line);
    if (read_error)
        cli_error("serve", "--api-key-file %s: %s", path, strerror(e));
    else
        cli_error("serve", "--api-key-file %s: the first line (the key) is empty", path);
    return NULL;
}

/* Whether --host resolves, asked before the weights load (minutes for a
 * large model): a name that does not is a bad argument, said at once. */
static bool serve__host_resolves(const char *host)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host, NULL, &hints, &ai);
    if (ai) freeaddrinfo(ai);
    if (gai == 0) return true;
    cli_error("serve", "--host %s: cannot resolve it: %s", host, gai_strerror(gai));
    return false;
}

/* Load the engine, serve until SIGINT or SIGTERM, stop. */
static int serve__run(serve_args a)
{
    /* SIGINT and SIGTERM are taken by sigwait below: block them before any
     * thread starts, so that every thread inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    encore_engine *e = NULL;
    int rc = serve_engine_create("serve", &a, &e);
    if (rc != CLI_OK) return rc;
    http_server *s = NULL;
    char err[512];
    if (!http_server_start(e, &a.http, &s, err, sizeof err)) {
        cli_error("serve", "%s", err);
        encore_engine_destroy(e);
        return CLI_FAILED;
    }
    const char *host = a.http.host;
    int v6 = strchr(host, ':') != NULL;
    printf("encore serve: listening on http://%s%s%s:%d (model %s)\n", v6 ? "[" : "", host,
           v6 ? "]" : "", http_server_port(s), http_server_model_name(s));
    fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "encore serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    http_server_stop(s);
    encore_engine_destroy(e);
    return CLI_OK;
}

int cmd_serve(int argc, char **argv)
{
    serve_args a;
    memset(&a, 0, sizeof a);
    a.http = http_server_config_default();
    const char *key = getenv("ENCORE_API_KEY");
    if (key && *key) a.http.api_key = key;
    int rc = cli_parse_args("serve", serve_help, argc, argv, &a.cfg, serve_option, &a);
    if (rc) return rc;
    if (a.cfg.verify_capture) {
        cli_error("serve", "--verify-capture (or ENCORE_VERIFY_CAPTURE) is for generate and "
                           "bench, not serve");
        return CLI_BAD_ARGS;
    }
    if (a.key_flag && a.key_file) {
        cli_error("serve", "give --api-key or --api-key-file, not both");
        return CLI_BAD_ARGS;
    }
    if (!serve__host_resolves(a.http.host)) return CLI_BAD_ARGS;
    char *file_key = a.key_file ? serve__read_key(a.key_file) : NULL; /* freed at the end */
    if (a.key_file && !file_key) return CLI_BAD_ARGS;
    if (file_key) a.http.api_key = file_key;
    rc = serve__run(a);
    free(file_key);
    return rc;
}
