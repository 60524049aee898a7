/* cmd_bench.c - `encore bench`: prefill and decode throughput, medians of
 * several runs, beside the memory-bandwidth roofline measured in the same
 * process.
 *
 *   prefill   one prompt of --prompt-len tokens, time to its first token
 *   decode    B sequences (B = 1, 4, 16 by default) generating --gen-len
 *             tokens each, timed from the step after their prefill
 *   roofline  STREAM-triad bandwidth / weight bytes read per decode step */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "membw.h"

static const char bench_help[] =
    "usage: encore bench -m DIR [options]\n\n"
    "Measure prefill and decode tokens/s (medians of --runs runs) and the decode\n"
    "roofline from the machine's measured memory bandwidth.\n\n"
    "options:\n"
    "  --prompt-len N           prefill prompt length (default 512)\n"
    "  --gen-len N              tokens generated per sequence in decode runs (default 128)\n"
    "  --batches LIST           concurrent sequences for decode, comma-separated (default 1,4,16)\n"
    "  --runs N                 runs per figure, median reported (default 3)\n"
    "  --json                   print one JSON object instead of text\n"
    "  -h, --help               show this help\n\n";

enum { BENCH_MAX_BATCHES = 8, BENCH_MAX_RUNS = 32 };

typedef struct bench_args {
    engine_config cfg;
    int64_t prompt_len, gen_len, runs;
    int64_t batches[BENCH_MAX_BATCHES];
    int n_batches;
    bool json;
} bench_args;

static int bench__cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double bench__median(double *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, bench__cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Deterministic pseudo-random prompt ids in [0, vocab). */
static void bench__prompt(int32_t *ids, int64_t n, int64_t vocab, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((x >> 33) % (uint64_t)vocab);
    }
}

/* Submit n requests of prompt_len tokens generating gen_len each. */
static bool bench__submit(engine *e, int64_t n, int64_t prompt_len, int64_t gen_len, uint64_t seed)
{
    int32_t *ids = malloc((size_t)prompt_len * sizeof *ids);
    bool ok = ids != NULL;
    for (int64_t r = 0; ok && r < n; r++) {
        bench__prompt(ids, prompt_len, engine_model_config(e)->vocab_size, seed + (uint64_t)r);
        engine_request_params p = {.prompt_ids = ids, .n_prompt = prompt_len, .max_tokens = gen_len,
                                   .ignore_eos = true};
        int64_t id;
        ok = engine_add_request(e, &p, &id) == ENC_OK;
    }
    free(ids);
    return ok;
}

/* Step until nothing is left; forget the finished requests. Returns the
 * decode tokens and the seconds spent in steps that decoded only. */
static bool bench__drain(engine *e, int64_t *decode_tokens, double *decode_s, double *total_s)
{
    *decode_tokens = 0;
    *decode_s = *total_s = 0;
    while (engine_has_unfinished(e)) {
        engine_step_stats st;
        double t0 = cli_now_seconds();
        if (engine_step(e, &st) != ENC_OK) return false;
        double dt = cli_now_seconds() - t0;
        *total_s += dt;
        if (st.n_prefill_tokens == 0) {
            *decode_tokens += st.n_decode_tokens;
            *decode_s += dt;
        }
    }
    return true;
}

static void bench__release_all(engine *e, int64_t from_id, int64_t n)
{
    for (int64_t i = 0; i < n; i++) engine_release_request(e, from_id + i);
}

typedef struct bench_result {
    double prefill_tps;
    double decode_tps[BENCH_MAX_BATCHES];
    double bandwidth_gbps;
    double bytes_per_token;
} bench_result;

static bool bench__run_prefill(engine *e, const bench_args *a, int64_t *next_id, double *tps)
{
    double v[BENCH_MAX_RUNS];
    for (int64_t r = -1; r < a->runs; r++) { /* run -1 warms up (page faults, caches) */
        int64_t dtok;
        double ds, total;
        if (!bench__submit(e, 1, a->prompt_len, 1, 7) || !bench__drain(e, &dtok, &ds, &total)) return false;
        bench__release_all(e, (*next_id)++, 1);
        if (r >= 0) v[r] = (double)a->prompt_len / total;
    }
    *tps = bench__median(v, a->runs);
    return true;
}

static bool bench__run_decode(engine *e, const bench_args *a, int64_t batch, int64_t *next_id, double *tps)
{
    double v[BENCH_MAX_RUNS];
    for (int64_t r = 0; r < a->runs; r++) {
        int64_t dtok;
        double ds, total;
        if (!bench__submit(e, batch, 16, a->gen_len, 100 + (uint64_t)r) || !bench__drain(e, &dtok, &ds, &total))
            return false;
        bench__release_all(e, *next_id, batch);
        *next_id += batch;
        v[r] = ds > 0 ? (double)dtok / ds : 0;
    }
    *tps = bench__median(v, a->runs);
    return true;
}

static void bench__print(const bench_args *a, const engine *e, const bench_result *r)
{
    double roofline = r->bandwidth_gbps * 1e9 / r->bytes_per_token;
    const engine_config *c = engine_get_config(e);
    if (a->json) {
        printf("{\"model\":\"%s\",\"threads\":%d,\"runs\":%lld,\"prompt_len\":%lld,\"gen_len\":%lld,"
               "\"prefill_tokens_per_s\":%.2f,\"decode_tokens_per_s\":%.2f",
               c->model_dir, c->n_threads, (long long)a->runs, (long long)a->prompt_len,
               (long long)a->gen_len, r->prefill_tps, r->decode_tps[0]);
        for (int i = 0; i < a->n_batches; i++)
            printf(",\"decode_tokens_per_s_batch%lld\":%.2f", (long long)a->batches[i], r->decode_tps[i]);
        printf(",\"memory_bandwidth_gb_per_s\":%.2f,\"decode_bytes_per_token\":%.0f,"
               "\"decode_roofline_tokens_per_s\":%.2f,\"decode_fraction_of_roofline\":%.3f}\n",
               r->bandwidth_gbps, r->bytes_per_token, roofline, r->decode_tps[0] / roofline);
        return;
    }
    printf("model: %s (%d threads, median of %lld runs)\n", c->model_dir, c->n_threads, (long long)a->runs);
    printf("prefill (%lld-token prompt): %.1f tokens/s\n", (long long)a->prompt_len, r->prefill_tps);
    for (int i = 0; i < a->n_batches; i++)
        printf("decode, %lld concurrent sequence(s): %.1f tokens/s\n", (long long)a->batches[i], r->decode_tps[i]);
    printf("memory bandwidth (STREAM triad): %.1f GB/s; weights read per decode step: %.1f MB\n",
           r->bandwidth_gbps, r->bytes_per_token / 1e6);
    printf("decode roofline: %.1f tokens/s; batch-%lld decode reaches %.0f%% of it\n", roofline,
           (long long)a->batches[0], 100.0 * r->decode_tps[0] / roofline);
}

static int bench__parse(int argc, char **argv, bench_args *a)
{
    const char *cmd = "bench";
    cli_engine_defaults(&a->cfg);
    a->prompt_len = 512;
    a->gen_len = 128;
    a->runs = 3;
    a->n_batches = 3;
    a->batches[0] = 1, a->batches[1] = 4, a->batches[2] = 16;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v;
        int r = cli_engine_option(cmd, argc, argv, &i, &a->cfg);
        if (r < 0) return CLI_BAD_ARGS;
        if (r > 0) continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf("%s%s", bench_help, cli_engine_options_help);
            exit(CLI_OK);
        } else if (!strcmp(o, "--prompt-len")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_parse_i64(cmd, o, v, 1, 1 << 20, &a->prompt_len))
                return CLI_BAD_ARGS;
        } else if (!strcmp(o, "--gen-len")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_parse_i64(cmd, o, v, 2, 1 << 20, &a->gen_len))
                return CLI_BAD_ARGS;
        } else if (!strcmp(o, "--runs")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_parse_i64(cmd, o, v, 1, BENCH_MAX_RUNS, &a->runs))
                return CLI_BAD_ARGS;
        } else if (!strcmp(o, "--batches")) {
            if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_BAD_ARGS;
            int32_t *ids;
            int64_t n;
            if (!cli_parse_ids(cmd, v, &ids, &n)) return CLI_BAD_ARGS;
            if (n > BENCH_MAX_BATCHES) n = BENCH_MAX_BATCHES;
            a->n_batches = (int)n;
            for (int64_t j = 0; j < n; j++) a->batches[j] = ids[j] > 0 ? ids[j] : 1;
            free(ids);
        } else if (!strcmp(o, "--json")) {
            a->json = true;
        } else {
            cli_error(cmd, "unknown option '%s' (try --help)", o);
            return CLI_BAD_ARGS;
        }
    }
    if (!a->cfg.model_dir) {
        cli_error(cmd, "no model given (-m DIR)");
        return CLI_BAD_ARGS;
    }
    int64_t max_batch = 1;
    for (int i = 0; i < a->n_batches; i++) max_batch = a->batches[i] > max_batch ? a->batches[i] : max_batch;
    if (a->cfg.max_num_seqs < max_batch) a->cfg.max_num_seqs = (int)max_batch;
    if (a->cfg.max_num_batched_tokens < a->prompt_len) a->cfg.max_num_batched_tokens = a->prompt_len;
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    bench_args a;
    memset(&a, 0, sizeof a);
    int rc = bench__parse(argc, argv, &a);
    if (rc) return rc;
    engine *e = cli_engine_create("bench", &a.cfg);
    if (!e) return CLI_FAILED;
    if (!a.json) fprintf(stderr, "encore bench: measuring (%lld runs per figure)...\n", (long long)a.runs);
    bench_result r = {0};
    int64_t next_id = 0;
    bool ok = bench__run_prefill(e, &a, &next_id, &r.prefill_tps);
    for (int i = 0; ok && i < a.n_batches; i++) ok = bench__run_decode(e, &a, a.batches[i], &next_id, &r.decode_tps[i]);
    if (!ok) {
        cli_error("bench", "%s", enc_last_error());
        engine_destroy(e);
        return CLI_FAILED;
    }
    r.bandwidth_gbps = membw_triad_gbps(engine_get_config(e)->n_threads, 5);
    r.bytes_per_token = (double)engine_decode_weight_bytes(e);
    bench__print(&a, e, &r);
    engine_destroy(e);
    return CLI_OK;
}
