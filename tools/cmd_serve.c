/* cmd_serve.c - `encore serve`: the OpenAI-compatible HTTP server
 * (src/server) over one engine, until SIGINT or SIGTERM. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "encore.h"
#include "server/server.h"

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

typedef struct serve_args {
    engine_config cfg;
    http_server_config http;
    int key_flag;         /* --api-key given */
    const char *key_file; /* --api-key-file, else NULL */
    const char *chat_template; /* --chat-template, else NULL */
} serve_args;

static int serve_option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    serve_args *a = args;
    const char *o = argv[*i];
    int64_t v;
    if (!strcmp(o, "--chat-template"))
        return (a->chat_template = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--host")) return (a->http.host = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--api-key")) {
        a->key_flag = 1;
        if (!(a->http.api_key = cli_value(cmd, argc, argv, i))) return -1;
        if (!*a->http.api_key) { /* would turn the check off, ENCORE_API_KEY's included */
            cli_error(cmd, "--api-key: the key is empty");
            return -1;
        }
        return 1;
    }
    if (!strcmp(o, "--api-key-file")) return (a->key_file = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--allowed-hosts")) {
        const char *list = cli_value(cmd, argc, argv, i);
        if (!list) return -1;
        if (list[strspn(list, " ,")] == '\0') {
            cli_error(cmd, "--allowed-hosts needs at least one name (or '*')");
            return -1;
        }
        a->http.allowed_hosts = list;
        return 1;
    }
    if (!strcmp(o, "--generation-config")) {
        const char *mode = cli_value(cmd, argc, argv, i);
        if (!mode) return -1;
        if (strcmp(mode, "auto") && strcmp(mode, "none")) {
            cli_error(cmd, "--generation-config is 'auto' or 'none', got '%s'", mode);
            return -1;
        }
        a->http.no_generation_config = !strcmp(mode, "none");
        return 1;
    }
    if (!strcmp(o, "--no-special-tokens-in-content")) {
        a->http.plain_content = 1;
        return 1;
    }
    if (!strcmp(o, "--served-model-name"))
        return (a->http.served_model_name = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--port")) {
        if (!cli_option_i64(cmd, argc, argv, i, 0, 65535, &v)) return -1;
        a->http.port = (int)v;
        return 1;
    }
    if (!strcmp(o, "--max-queue"))
        return cli_option_i64(cmd, argc, argv, i, 1, 1 << 20, &a->http.max_queue) ? 1 : -1;
    if (!strcmp(o, "--max-queue-per-client"))
        return cli_option_i64(cmd, argc, argv, i, 1, 1 << 20, &a->http.max_queue_per_client) ? 1 : -1;
    if (!strcmp(o, "--max-tokens-default"))
        return cli_option_i64(cmd, argc, argv, i, 1, 1 << 30, &a->http.max_tokens_default) ? 1 : -1;
    if (!strcmp(o, "--max-body-bytes")) {
        if (!cli_option_i64(cmd, argc, argv, i, 1024, (int64_t)1 << 32, &v)) return -1;
        a->http.max_body_bytes = (size_t)v;
        return 1;
    }
    if (!strcmp(o, "--timeout")) {
        if (!cli_option_i64(cmd, argc, argv, i, 1, 86400, &v)) return -1;
        a->http.timeout_s = (int)v;
        return 1;
    }
    if (!strcmp(o, "--max-connections-per-ip")) {
        if (!cli_option_i64(cmd, argc, argv, i, 0, 1 << 16, &v)) return -1;
        a->http.max_connections_per_ip = (int)v;
        return 1;
    }
    if (!strcmp(o, "--request-read-timeout")) {
        if (!cli_option_i64(cmd, argc, argv, i, 1, 3600, &v)) return -1;
        a->http.request_read_timeout_s = (int)v;
        return 1;
    }
    if (!strcmp(o, "--max-connections")) {
        if (!cli_option_i64(cmd, argc, argv, i, 1, 1 << 16, &v)) return -1;
        a->http.max_connections = (int)v;
        return 1;
    }
    return 0;
}

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

/* One line on stderr: the engine as created, every default resolved. */
static void serve__print_engine(encore_engine *e)
{
    encore_engine_info i;
    if (encore_get_engine_info(e, &i) != ENCORE_OK) return;
    char decode[64];
    if (i.eager)
        snprintf(decode, sizeof decode, "eager (no capture)");
    else
        snprintf(decode, sizeof decode, "captured, %lld steps a replay", (long long)i.decode_steps);
    fprintf(stderr,
            "encore serve: %s; KV cache %lld blocks of %d tokens, %s (%.1f MiB); "
            "max_model_len %lld, max_num_seqs %d, max_num_batched_tokens %lld; decode %s; "
            "prefix caching %s\n",
            i.device_description, (long long)i.n_kv_blocks, i.block_size, i.kv_cache_dtype,
            (double)i.n_kv_blocks * i.block_size * i.kv_bytes_per_token / (1024.0 * 1024.0),
            (long long)i.max_model_len, i.max_num_seqs, (long long)i.max_num_batched_tokens, decode,
            i.prefix_caching ? "on" : "off");
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

    encore_options opt = encore_options_default();
    opt.model_dir = a.cfg.model_dir;
    opt.n_threads = a.cfg.n_threads;
    opt.block_size = a.cfg.block_size;
    opt.n_kv_blocks = a.cfg.n_kv_blocks;
    opt.max_num_seqs = a.cfg.max_num_seqs;
    opt.max_num_batched_tokens = a.cfg.max_num_batched_tokens;
    opt.max_model_len = a.cfg.max_model_len;
    opt.eager = a.cfg.eager;
    opt.decode_steps = a.cfg.decode_steps;
    opt.no_prefix_caching = a.cfg.no_prefix_caching;
    opt.kv_cache_dtype = a.cfg.kv_cache_dtype;
    opt.device = a.cfg.device;
    opt.quantize = a.cfg.quantize;
    opt.chat_template = a.chat_template;
    int last_pct = -1;
    if (isatty(STDERR_FILENO)) {
        opt.load_progress = cli_load_progress;
        opt.load_progress_user = &last_pct;
    }
    encore_engine *e = NULL;
    encore_status st = encore_engine_create(&opt, &e);
    if (st != ENCORE_OK) {
        cli_error("serve", "cannot load model from %s: %s", a.cfg.model_dir, encore_last_error());
        return st == ENCORE_ERR_INVALID_ARGUMENT ? CLI_BAD_ARGS : CLI_FAILED;
    }
    encore_model_info info;
    if (encore_get_model_info(e, &info) == ENCORE_OK && info.has_tokenizer &&
        !info.has_chat_template)
        fprintf(stderr, "encore: the model's chat template is not one encore renders: "
                        "/v1/chat/completions will answer 400 (give one with "
                        "--chat-template FILE|NAME)\n");
    serve__print_engine(e);
    char rec[256];
    encore_sampling d = {0};
    unsigned set = encore_sampling_model_defaults(e, &d, 0);
    qwen3_generation_defaults g = {set,     d.temperature, d.top_k,
                                   d.top_p, d.min_p,       d.repetition_penalty};
    if (!a.http.no_generation_config && cli_describe_generation(&g, set, rec, sizeof rec))
        fprintf(stderr,
                "encore serve: requests that omit them take the model's recommended %s "
                "(--generation-config none: OpenAI's defaults)\n",
                rec);
    if (cli_is_demo_model(a.cfg.model_dir))
        fprintf(stderr, "encore: this is the built-in DEMO model (random weights): its text is meaningless.\n");
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
