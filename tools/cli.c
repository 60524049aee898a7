/* cli.c - option parsing and helpers shared by the subcommands. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/encore_tools.h"

const char cli_engine_options_help[] =
    "engine options:\n"
    "  -m, --model DIR|FILE.gguf    Hugging Face Qwen3 checkpoint directory, or a GGUF file\n"
    "                               (config, tokenizer and chat template inside) (required)\n"
    "  --device NAME                cpu, vulkan (the best Vulkan device) or vulkan:N (see\n"
    "                               `encore devices`; default: ENCORE_DEVICE, else cpu)\n"
    "  -t, --threads N              compute threads (default: ENCORE_THREADS, else one per CPU)\n"
    "  --block-size N               KV cache block size, 16 or 32 (default 16)\n"
    "  --kv-blocks N                KV cache blocks (default: enough for max-num-seqs full\n"
    "                               sequences, at most 2 GiB)\n"
    "  --kv-cache-dtype T           auto, f32, f16, bf16 or q8_0 (blocks of 32 per token and\n"
    "                               head; CPU and Vulkan) (default auto: f16 for an f16 model,\n"
    "                               bf16 otherwise, on a backend that has it; else f32;\n"
    "                               ENCORE_KV_CACHE_DTYPE when set)\n"
    "  --max-num-seqs N             sequences in one step (default 64)\n"
    "  --max-num-batched-tokens N   tokens in one step (default 2048)\n"
    "  --max-model-len N            longest sequence (default min(the model's length, 8192): its\n"
    "                               max_position_embeddings, or as far as its rope scaling\n"
    "                               stretches it)\n"
    "  --eager                      run every step eagerly: no captured decode (ENCORE_EAGER=1)\n"
    "  --verify-capture             run each replayed decode step eagerly too and stop at the\n"
    "                               first difference (ENCORE_VERIFY_CAPTURE=1)\n"
    "  --decode-steps K             decode steps per replay, 1..64 (default 4)\n"
    "  --no-prefix-caching          compute every prompt in full: no KV blocks shared between\n"
    "                               requests with a common prefix (ENCORE_NO_PREFIX_CACHING=1)\n"
    "  --quantize TYPE              q8_0, q4_0, q4_k, q5_k, q6_k, or llama-quantize's mixes\n"
    "                               q4_k_m, q5_k_m: quantize every matrix of a bf16/f16/f32\n"
    "                               checkpoint (embedding and lm_head too) at load\n"
    "  --bf16-activations           round the activations to bf16 before each matmul over bf16\n"
    "                               weights and multiply in bf16 (vdpbf16ps), as llama.cpp does:\n"
    "                               faster where compute sets the pace (prefill, batched decode);\n"
    "                               CPU with AVX512-BF16 only (ENCORE_BF16_ACTIVATIONS=1)\n";

/* The engine options a command refuses (saying why, where it parses them):
 * its --help leaves them out. */
static const struct {
    const char *cmd, *option;
} cli__not_offered[] = {
    {"serve", "--verify-capture"}, /* cmd_serve.c: for generate and bench */
    {"bench", "--eager"},          /* cmd_bench.c: --modes sets both */
    {"bench", "--decode-steps"},
};

static bool cli__offered(const char *cmd, const char *line)
{
    for (size_t i = 0; i < sizeof cli__not_offered / sizeof cli__not_offered[0]; i++) {
        size_t n = strlen(cli__not_offered[i].option);
        if (!strcmp(cmd, cli__not_offered[i].cmd) &&
            !strncmp(line + 2, cli__not_offered[i].option, n) && line[2 + n] == ' ')
            return false;
    }
    return true;
}

/* cli_engine_options_help less the options cmd refuses: an option's lines
 * run from its "  -" line to the next. */
static void cli__print_engine_options(const char *cmd)
{
    bool show = true;
    for (const char *line = cli_engine_options_help; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        if (!strncmp(line, "  -", 3)) show = cli__offered(cmd, line);
        if (show) fwrite(line, 1, len, stdout);
        line += len;
    }
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "encore %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A yes/no variable (base/env_flag.h's words; unset is no); another value
 * is an error naming it. */
static bool cli__env_flag(const char *cmd, const char *name, bool *out)
{
    const char *v = getenv(name);
    int yes = v ? enc_yes_no(v) : 0;
    *out = yes == 1;
    if (yes >= 0) return true;
    cli_error(cmd, "%s: expected 1 or 0 (true/false, yes/no, on/off), got '%s'", name, v);
    return false;
}

static bool cli__kv_dtype_ok(const char *cmd, const char *what, const char *t)
{
    if (!strcmp(t, "auto") || !strcmp(t, "f32") || !strcmp(t, "f16") || !strcmp(t, "bf16") ||
        !strcmp(t, "q8_0"))
        return true;
    cli_error(cmd, "%s: expected auto, f32, f16, bf16 or q8_0, got '%s'", what, t);
    return false;
}

bool cli_engine_defaults(const char *cmd, engine_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    const char *t = getenv("ENCORE_THREADS");
    int64_t threads = 0;
    if (t && *t && !cli_parse_i64(cmd, "ENCORE_THREADS", t, 1, 1024, &threads)) return false;
    cfg->n_threads = (int)threads;
    const char *d = getenv("ENCORE_DEVICE"), *kv = getenv("ENCORE_KV_CACHE_DTYPE");
    cfg->device = d && *d ? d : NULL; /* empty: unset, as ENCORE_THREADS */
    cfg->kv_cache_dtype = kv && *kv ? kv : NULL;
    if (cfg->device && !backend_name_valid(cfg->device)) {
        cli_error(cmd, "ENCORE_DEVICE: expected cpu, vulkan or vulkan:N, got '%s'", cfg->device);
        return false;
    }
    if (cfg->kv_cache_dtype && !cli__kv_dtype_ok(cmd, "ENCORE_KV_CACHE_DTYPE", cfg->kv_cache_dtype))
        return false;
    return cli__env_flag(cmd, "ENCORE_EAGER", &cfg->eager) &&
           cli__env_flag(cmd, "ENCORE_VERIFY_CAPTURE", &cfg->verify_capture) &&
           cli__env_flag(cmd, "ENCORE_NO_PREFIX_CACHING", &cfg->no_prefix_caching) &&
           cli__env_flag(cmd, "ENCORE_BF16_ACTIVATIONS", &cfg->bf16_activations);
}

const char *cli_value(const char *cmd, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        cli_error(cmd, "option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

bool cli_parse_i64(const char *cmd, const char *opt, const char *s, int64_t min, int64_t max,
                   int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        cli_error(cmd, "%s: expected an integer in [%lld, %lld], got '%s'", opt, (long long)min,
                  (long long)max, s);
        return false;
    }
    *out = v;
    return true;
}

/* s as a number in [min, max], or (min, max] when above_min. */
static bool cli__parse_real(const char *cmd, const char *opt, const char *s, double min, double max,
                            bool above_min, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < min || v > max ||
        (above_min && v == min)) {
        cli_error(cmd, "%s: expected a number in %c%g, %g], got '%s'", opt, above_min ? '(' : '[',
                  min, max, s);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_f64(const char *cmd, const char *opt, const char *s, double min, double max,
                   double *out)
{
    return cli__parse_real(cmd, opt, s, min, max, false, out);
}

bool cli_parse_ids(const char *cmd, const char *opt, const char *s, int32_t **ids, int64_t *n)
{
    size_t cap = strlen(s) / 2 + 1, count = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return false;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (errno || end == p || x < 0 || x > INT32_MAX || (*end && !strchr(" ,\t\n", *end))) {
            cli_error(cmd, "%s: item %zu is not a non-negative integer (near '%.20s')", opt, count, p);
            free(v);
            return false;
        }
        v[count++] = (int32_t)x;
        p = end;
    }
    if (count == 0) {
        cli_error(cmd, "%s: no values given", opt);
        free(v);
        return false;
    }
    *ids = v;
    *n = (int64_t)count;
    return true;
}

bool cli_option_i64(const char *cmd, int argc, char **argv, int *i, int64_t min, int64_t max,
                    int64_t *out)
{
    const char *opt = argv[*i];
    const char *v = cli_value(cmd, argc, argv, i);
    return v && cli_parse_i64(cmd, opt, v, min, max, out);
}

bool cli_option_f64(const char *cmd, int argc, char **argv, int *i, double min, double max,
                    double *out)
{
    const char *opt = argv[*i];
    const char *v = cli_value(cmd, argc, argv, i);
    return v && cli_parse_f64(cmd, opt, v, min, max, out);
}

static int cli__i64_option(const char *cmd, int argc, char **argv, int *i, int64_t min,
                           int64_t max, int64_t *out)
{
    return cli_option_i64(cmd, argc, argv, i, min, max, out) ? 1 : -1;
}

/* --logit-bias ID=BIAS, appended to s's list. */
static int cli__logit_bias_option(const char *cmd, int argc, char **argv, int *i, cli_sampling *s)
{
    const char *v = cli_value(cmd, argc, argv, i);
    if (!v) return -1;
    char *end = NULL;
    errno = 0;
    long long id = v[0] >= '0' && v[0] <= '9' ? strtoll(v, &end, 10) : -1;
    double bias = 0.0;
    if (id < 0 || id > INT32_MAX || errno || *end != '=') { /* id < 0 when end is unset */
        cli_error(
            cmd, "--logit-bias: expected ID=BIAS (a token id, a bias in [-100, 100]), got '%s'", v);
        return -1;
    }
    if (!cli_parse_f64(cmd, "--logit-bias", end + 1, -100, 100, &bias)) return -1;
    if (s->n_logit_bias == ENGINE_MAX_LOGIT_BIAS) {
        cli_error(cmd, "--logit-bias: at most %d", ENGINE_MAX_LOGIT_BIAS);
        return -1;
    }
    s->logit_bias[s->n_logit_bias++] = (graph_sample_bias){(int32_t)id, (float)bias};
    return 1;
}

int cli_sampling_option(const char *cmd, int argc, char **argv, int *i, cli_sampling *s)
{
    const char *a = argv[*i];
    if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens"))
        return cli__i64_option(cmd, argc, argv, i, 1, 1 << 24, &s->max_tokens);
    if (!strcmp(a, "--temperature")) {
        s->given |= QWEN3_GEN_TEMPERATURE;
        return cli_option_f64(cmd, argc, argv, i, 0, 100, &s->temperature) ? 1 : -1;
    }
    if (!strcmp(a, "--seed")) {
        s->seed_given = true;
        return cli__i64_option(cmd, argc, argv, i, 0, INT64_MAX, &s->seed);
    }
    if (!strcmp(a, "--top-k")) {
        s->given |= QWEN3_GEN_TOP_K;
        return cli__i64_option(cmd, argc, argv, i, -1, INT32_MAX, &s->top_k);
    }
    if (!strcmp(a, "--min-tokens")) return cli__i64_option(cmd, argc, argv, i, 0, 1 << 24, &s->min_tokens);
    if (!strcmp(a, "--logit-bias")) return cli__logit_bias_option(cmd, argc, argv, i, s);
    if (!strcmp(a, "--logprobs")) {
        s->logprobs = true;
        return cli__i64_option(cmd, argc, argv, i, 0, ENGINE_MAX_TOP_LOGPROBS, &s->top_logprobs);
    }
    static const struct {
        const char *name;
        double min, max;
        bool above_min; /* min itself refused: (min, max] */
        size_t offset;
        unsigned bit; /* QWEN3_GEN_*, or 0 */
    } reals[] = {
        {"--top-p", 0, 1, true, offsetof(cli_sampling, top_p), QWEN3_GEN_TOP_P},
        {"--min-p", 0, 1, false, offsetof(cli_sampling, min_p), QWEN3_GEN_MIN_P},
        {"--repetition-penalty", 0, 1e6, true, offsetof(cli_sampling, repetition_penalty),
         QWEN3_GEN_REPETITION_PENALTY},
        {"--presence-penalty", -2, 2, false, offsetof(cli_sampling, presence_penalty), 0},
        {"--frequency-penalty", -2, 2, false, offsetof(cli_sampling, frequency_penalty), 0},
    };
    for (size_t k = 0; k < sizeof reals / sizeof *reals; k++) {
        if (strcmp(a, reals[k].name)) continue;
        s->given |= reals[k].bit;
        double *out = (double *)((char *)s + reals[k].offset);
        const char *v = cli_value(cmd, argc, argv, i);
        return v && cli__parse_real(cmd, a, v, reals[k].min, reals[k].max, reals[k].above_min, out)
                   ? 1
                   : -1;
    }
    return 0;
}

bool cli_describe_generation(const qwen3_generation_defaults *g, unsigned bits, char *buf,
                             size_t cap)
{
    const struct {
        unsigned bit;
        const char *name;
        double value;
    } fields[] = {
        {QWEN3_GEN_TEMPERATURE, "temperature", g->temperature},
        {QWEN3_GEN_TOP_K, "top_k", (double)g->top_k},
        {QWEN3_GEN_TOP_P, "top_p", g->top_p},
        {QWEN3_GEN_MIN_P, "min_p", g->min_p},
        {QWEN3_GEN_REPETITION_PENALTY, "repetition_penalty", g->repetition_penalty},
    };
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if ((bits & fields[i].bit) && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s %g", n ? ", " : "", fields[i].name,
                                  fields[i].value);
    return n > 0;
}

void cli_sampling_model_defaults(const char *cmd, cli_sampling *s,
                                 const qwen3_generation_defaults *g)
{
    unsigned use = g->set & ~s->given;
    char what[256];
    if (!cli_describe_generation(g, use, what, sizeof what)) return;
    if (use & QWEN3_GEN_TEMPERATURE) s->temperature = g->temperature;
    if (use & QWEN3_GEN_TOP_K) s->top_k = g->top_k;
    if (use & QWEN3_GEN_TOP_P) s->top_p = g->top_p;
    if (use & QWEN3_GEN_MIN_P) s->min_p = g->min_p;
    if (use & QWEN3_GEN_REPETITION_PENALTY) s->repetition_penalty = g->repetition_penalty;
    fprintf(stderr, "encore %s: the model's recommended %s (the options override them)\n", cmd,
            what);
}

int64_t cli_random_seed(void)
{
    return (int64_t)(enc_random_seed() >> 1);
}

void cli_print_logprob(const engine_token_logprob *lp)
{
    printf("{\"id\":%d,\"logprob\":%.9g,\"top\":[", lp->id, (double)lp->logprob);
    for (int j = 0; j < lp->n_top; j++)
        printf("%s[%d,%.9g]", j ? "," : "", lp->top_ids[j], (double)lp->top_logprobs[j]);
    printf("]}");
}

engine_sampling cli_sampling_params(const cli_sampling *s)
{
    return (engine_sampling){
        .temperature = s->temperature,
        .top_k = s->top_k,
        .top_p = s->top_p,
        .min_p = s->min_p,
        .repetition_penalty = s->repetition_penalty,
        .presence_penalty = s->presence_penalty,
        .frequency_penalty = s->frequency_penalty,
        .seed = (uint64_t)s->seed,
        .min_tokens = s->min_tokens,
        .logprobs = s->logprobs,
        .top_logprobs = (int)s->top_logprobs,
        .logit_bias = s->logit_bias,
        .n_logit_bias = s->n_logit_bias,
    };
}

int cli_engine_option(const char *cmd, int argc, char **argv, int *i, engine_config *cfg)
{
    const char *a = argv[*i];
    int64_t v = 0;
    int r;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
        cfg->model_dir = cli_value(cmd, argc, argv, i);
        return cfg->model_dir ? 1 : -1;
    }
    if (!strcmp(a, "--device")) {
        cfg->device = cli_value(cmd, argc, argv, i);
        if (cfg->device && !backend_name_valid(cfg->device)) {
            cli_error(cmd, "--device: expected cpu, vulkan or vulkan:N, got '%s'", cfg->device);
            return -1;
        }
        return cfg->device ? 1 : -1;
    }
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        r = cli__i64_option(cmd, argc, argv, i, 1, 1024, &v);
        cfg->n_threads = (int)v;
        return r;
    }
    if (!strcmp(a, "--block-size")) {
        r = cli__i64_option(cmd, argc, argv, i, 16, 32, &v);
        if (r == 1 && v != 16 && v != 32) {
            cli_error(cmd, "--block-size: must be 16 or 32, got %lld", (long long)v);
            return -1;
        }
        cfg->block_size = (int)v;
        return r;
    }
    if (!strcmp(a, "--eager")) {
        cfg->eager = true;
        return 1;
    }
    if (!strcmp(a, "--verify-capture")) {
        cfg->verify_capture = true;
        return 1;
    }
    if (!strcmp(a, "--quantize")) {
        cfg->quantize = cli_value(cmd, argc, argv, i);
        if (!cfg->quantize) return -1;
        gguf_file_type t; /* the load's own reading of the name (model/quantize.h) */
        if (model_quantize_type(cfg->quantize, &t) == ENC_OK && enc_dtype_is_quantized(t.base))
            return 1;
        cli_error(cmd,
                  "--quantize: expected q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m or q5_k_m, got '%s'",
                  cfg->quantize);
        return -1;
    }
    if (!strcmp(a, "--no-prefix-caching")) {
        cfg->no_prefix_caching = true;
        return 1;
    }
    if (!strcmp(a, "--bf16-activations")) {
        cfg->bf16_activations = true;
        return 1;
    }
    if (!strcmp(a, "--kv-cache-dtype")) {
        cfg->kv_cache_dtype = cli_value(cmd, argc, argv, i);
        return cfg->kv_cache_dtype && cli__kv_dtype_ok(cmd, "--kv-cache-dtype", cfg->kv_cache_dtype)
                   ? 1
                   : -1;
    }
    if (!strcmp(a, "--decode-steps")) return cli__i64_option(cmd, argc, argv, i, 1, 64, &cfg->decode_steps);
    if (!strcmp(a, "--kv-blocks")) return cli__i64_option(cmd, argc, argv, i, 1, 1 << 24, &cfg->n_kv_blocks);
    if (!strcmp(a, "--max-num-seqs")) {
        r = cli__i64_option(cmd, argc, argv, i, 1, 4096, &v);
        cfg->max_num_seqs = (int)v;
        return r;
    }
    if (!strcmp(a, "--max-num-batched-tokens"))
        return cli__i64_option(cmd, argc, argv, i, 1, 1 << 20, &cfg->max_num_batched_tokens);
    if (!strcmp(a, "--max-model-len"))
        return cli__i64_option(cmd, argc, argv, i, 2, 1 << 24, &cfg->max_model_len);
    return 0;
}

int cli_parse_args(const char *cmd, const char *help, int argc, char **argv, engine_config *cfg,
                   cli_option_fn fn, void *args)
{
    if (!cli_engine_defaults(cmd, cfg)) return CLI_BAD_ARGS;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int r = cli_engine_option(cmd, argc, argv, &i, cfg);
        if (r == 0) r = fn(args, cmd, argc, argv, &i);
        if (r < 0) return CLI_BAD_ARGS;
        if (r > 0) continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(help, stdout);
            cli__print_engine_options(cmd);
            exit(CLI_OK);
        }
        cli_error(cmd, "unknown option '%s' (try --help)", o);
        return CLI_BAD_ARGS;
    }
    if (!cfg->model_dir) {
        cli_error(cmd, "no model given (-m DIR or -m FILE.gguf)");
        return CLI_BAD_ARGS;
    }
    return 0;
}

/* A one-line progress bar on a terminal: "encore: loading weights  57%". */
void cli_load_progress(void *user, double fraction)
{
    int *last = user, pct = (int)(fraction * 100.0);
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\rencore: loading weights %3d%%%s", pct, pct == 100 ? "\n" : "");
    fflush(stderr);
}

int cli_engine_create(const char *cmd, const engine_config *cfg, const tokenizer *tok, engine **out)
{
    int last = -1, embedding = 0;
    *out = NULL;
    /* (a malformed modules.json is the server's to report: these commands do not read it) */
    if (pooling_config_detect(cfg->model_dir, &embedding) == ENC_OK && embedding) {
        cli_error(cmd,
                  "%s is an embedding model (its modules.json names a sentence-transformers "
                  "Pooling module): it generates no text and gives no logits; `encore serve` "
                  "answers /v1/embeddings with it",
                  cfg->model_dir);
        return CLI_BAD_ARGS;
    }
    engine_config c = *cfg;
    engine_config_tokenizer_eos(&c, tok ? tokenizer_eos_id(tok) : -1); /* an EOS too, as vLLM's */
    if (isatty(STDERR_FILENO)) {
        c.load_progress = cli_load_progress;
        c.load_progress_user = &last;
    }
    enc_status s = engine_create(&c, out);
    if (s != ENC_OK) {
        cli_error(cmd, "cannot load model from %s: %s (%s)", cfg->model_dir, enc_last_error(),
                  enc_status_to_string(s));
        return s == ENC_ERR_INVALID_ARGUMENT ? CLI_BAD_ARGS : CLI_FAILED;
    }
    return CLI_OK;
}

bool cli_is_demo_model(const char *model_dir)
{
    char path[4096], *text = NULL;
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    if (file_read_all(path, &text, NULL) != ENC_OK) return false;
    bool demo = strstr(text, "\"encore_demo\": true") || strstr(text, "\"encore_demo\":true");
    free(text);
    return demo;
}

double cli_peak_rss_bytes(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 : 0; /* ru_maxrss is in KiB */
}

double cli_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
