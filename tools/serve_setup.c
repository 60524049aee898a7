/* serve_setup.c - the options of `encore serve` (also run-batch's) and
 * the engine they create, said on stderr. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "serve_setup.h"

int serve_option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    serve_args *a = args;
    const char *o = argv[*i];
    int64_t v;
    if (!strcmp(o, "--chat-template"))
        return (a->chat_template = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--runner")) {
        if (!(a->runner = cli_value(cmd, argc, argv, i))) return -1;
        if (strcmp(a->runner, "auto") && strcmp(a->runner, "generate") &&
            strcmp(a->runner, "pooling")) {
            cli_error(cmd, "--runner is 'auto', 'generate' or 'pooling', got '%s'", a->runner);
            return -1;
        }
        return 1;
    }
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
        return cli_option_i64(cmd, argc, argv, i, 1, 1 << 20, &a->http.max_queue_per_client) ? 1
                                                                                             : -1;
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

/* One line on stderr: the engine as created, every default resolved. */
static void serve__print_engine(const char *cmd, encore_engine *e)
{
    encore_engine_info i;
    if (encore_get_engine_info(e, &i) != ENCORE_OK) return;
    char decode[64];
    encore_model_info m = {0};
    (void)encore_get_model_info(e, &m);
    if (m.pooling)
        snprintf(decode, sizeof decode, "none (pooling: prefill steps only)");
    else if (i.eager)
        snprintf(decode, sizeof decode, "eager (no capture)");
    else
        snprintf(decode, sizeof decode, "captured, %lld steps a replay", (long long)i.decode_steps);
    fprintf(stderr,
            "encore %s: %s; KV cache %lld blocks of %d tokens, %s (%.1f MiB); "
            "max_model_len %lld, max_num_seqs %d, max_num_batched_tokens %lld; decode %s; "
            "prefix caching %s%s\n",
            cmd, i.device_description, (long long)i.n_kv_blocks, i.block_size, i.kv_cache_dtype,
            (double)i.n_kv_blocks * i.block_size * i.kv_bytes_per_token / (1024.0 * 1024.0),
            (long long)i.max_model_len, i.max_num_seqs, (long long)i.max_num_batched_tokens, decode,
            i.prefix_caching ? "on" : "off", i.bf16_activations ? "; bf16 activations" : "");
}

int serve_engine_create(const char *cmd, const serve_args *a, encore_engine **out)
{
    encore_options opt = encore_options_default();
    opt.model_dir = a->cfg.model_dir;
    opt.n_threads = a->cfg.n_threads;
    opt.block_size = a->cfg.block_size;
    opt.n_kv_blocks = a->cfg.n_kv_blocks;
    opt.max_num_seqs = a->cfg.max_num_seqs;
    opt.max_num_batched_tokens = a->cfg.max_num_batched_tokens;
    opt.max_model_len = a->cfg.max_model_len;
    opt.eager = a->cfg.eager;
    opt.decode_steps = a->cfg.decode_steps;
    opt.no_prefix_caching = a->cfg.no_prefix_caching;
    opt.kv_cache_dtype = a->cfg.kv_cache_dtype;
    opt.bf16_activations = a->cfg.bf16_activations;
    opt.device = a->cfg.device;
    opt.quantize = a->cfg.quantize;
    opt.chat_template = a->chat_template;
    opt.runner = a->runner;
    int last_pct = -1;
    if (isatty(STDERR_FILENO)) {
        opt.load_progress = cli_load_progress;
        opt.load_progress_user = &last_pct;
    }
    encore_engine *e = NULL;
    encore_status st = encore_engine_create(&opt, &e);
    if (st != ENCORE_OK) {
        cli_error(cmd, "cannot load model from %s: %s", a->cfg.model_dir, encore_last_error());
        return st == ENCORE_ERR_INVALID_ARGUMENT ? CLI_BAD_ARGS : CLI_FAILED;
    }
    encore_model_info info = {0};
    (void)encore_get_model_info(e, &info);
    if (info.pooling)
        fprintf(stderr,
                "encore %s: an embedding model (runner pooling): /v1/embeddings answers with "
                "%lld-dimensional vectors; completions, chat and responses answer 400\n",
                cmd, (long long)info.hidden_size);
    else if (info.has_tokenizer && !info.has_chat_template)
        fprintf(stderr, "encore: the model's chat template is not one encore renders: "
                        "/v1/chat/completions will answer 400 (give one with "
                        "--chat-template FILE|NAME)\n");
    serve__print_engine(cmd, e);
    char rec[256];
    encore_sampling d = {0};
    unsigned set = encore_sampling_model_defaults(e, &d, 0);
    qwen3_generation_defaults g = {set,     d.temperature, d.top_k,
                                   d.top_p, d.min_p,       d.repetition_penalty};
    if (!a->http.no_generation_config && cli_describe_generation(&g, set, rec, sizeof rec))
        fprintf(stderr,
                "encore %s: requests that omit them take the model's recommended %s "
                "(--generation-config none: OpenAI's defaults)\n",
                cmd, rec);
    if (cli_is_demo_model(a->cfg.model_dir))
        fprintf(
            stderr,
            "encore: this is the built-in DEMO model (random weights): its text is meaningless.\n");
    *out = e;
    return CLI_OK;
}
