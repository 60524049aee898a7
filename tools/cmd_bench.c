/* cmd_bench.c - `encore bench`: prefill and decode throughput, medians of
 * several runs, beside the memory-bandwidth roofline measured in the same
 * process.
 *
 *   prefill   one prompt of --prompt-len tokens, time to its first token
 *   decode    B sequences (B = 1, 4, 16 by default) generating --gen-len
 *             greedy tokens each, timed from the step after their prefill,
 *             in four modes side by side (runs interleaved, on one engine
 *             and one copy of the weights: engine_set_decode_mode between
 *             runs): eager, captured (one step per replay), and captured
 *             with 4 and 16 decode steps per replay (2 and 8 on request)
 *   roofline  read bandwidth (a read-only sum over a huge buffer, as decode
 *             reads its weights; membw.h) / weight bytes read per decode
 *             step; the STREAM triad is printed beside it
 *   memory    the process's peak resident set (the bandwidth is measured
 *             first, its buffers freed before the engine is made)
 *   per step  for each decode mode, the wall time of one decode step (a
 *             forward pass over the batch, a token of each running sequence)
 *             split into device time (timestamps, on a device backend) and
 *             host time (the rest), and of one host round trip, which runs
 *             K decode steps in the k4 / k16 modes
 *   sampling  (--sampling) every decode run twice, side by side: greedy, and
 *             sampled with temperature 0.8, top-p 0.95, repetition penalty
 *             1.1 (seeded); tokens/s of both, and the bytes the host reads
 *             back per generated token (engine_stats.n_bytes_read)
 *   constrained (--constrained) the first request of every decode batch
 *             carries a constraint that allows every id: what writing its
 *             mask each step and one decode step per replay cost the batch */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "membw.h"

static const char bench_help[] =
    "usage: encore bench -m DIR [options]\n"
    "       encore bench serve [options]   (load a running server; see --help there)\n\n"
    "Measure prefill and decode tokens/s (medians of --runs runs) and the decode\n"
    "roofline from the machine's measured memory bandwidth.\n\n"
    "options:\n"
    "  --prompt-len N           prefill prompt length (default 512)\n"
    "  --gen-len N              tokens generated per sequence in decode runs (default 128)\n"
    "  --depth N                prompt tokens of each decode sequence: decode at a context of N\n"
    "                           tokens and more, as llama-bench -d (default 16)\n"
    "  --batches LIST           concurrent sequences for decode, comma-separated (default 1,4,16)\n"
    "  --runs N                 runs per figure, median reported (default 3)\n"
    "  --modes LIST             decode modes, comma-separated, of eager, captured, k2, k4,\n"
    "                           k8, k16 (default eager,captured,k4,k16; the first is also\n"
    "                           the headline figure)\n"
    "  --sampling               also measure sampled decode (temperature 0.8, top-p 0.95,\n"
    "                           repetition penalty 1.1, seeded) beside greedy, and the\n"
    "                           bytes read back per token\n"
    "  --constrained            the first sequence of every decode batch carries a\n"
    "                           constraint allowing every id (a token mask each step,\n"
    "                           one decode step per replay for its batch)\n"
    "  --json                   print one JSON object instead of text\n"
    "  -h, --help               show this help\n\n";

enum { BENCH_MAX_BATCHES = 8, BENCH_MAX_RUNS = 32, BENCH_N_MODES = 6, BENCH_N_DEFAULT_MODES = 4 };
enum { BENCH_DECODE_PROMPT_LEN = 16 }; /* tokens of each prompt of a decode run, unless --depth */

/* What the decode requests do: greedy, or (--sampling) the sampled kind. */
enum { BENCH_GREEDY = 0, BENCH_SAMPLED, BENCH_N_KINDS };
static const char *const bench_kinds[BENCH_N_KINDS] = {"greedy", "sampled"};

/* A decode mode: how the engine runs decode steps. */
typedef struct bench_mode {
    const char *name;
    bool eager;
    int64_t decode_steps;
} bench_mode;

/* The first BENCH_N_DEFAULT_MODES are measured unless --modes says otherwise. */
static const bench_mode bench_modes[BENCH_N_MODES] = {
    {"eager", true, 1}, {"captured", false, 1}, {"k4", false, 4},
    {"k16", false, 16}, {"k2", false, 2},       {"k8", false, 8},
};

typedef struct bench_args {
    engine_config cfg;
    int64_t prompt_len, gen_len, runs;
    int64_t depth; /* tokens of each prompt of a decode run: the context its steps attend to */
    int64_t batches[BENCH_MAX_BATCHES];
    int n_batches;
    int modes[BENCH_N_MODES]; /* indices into bench_modes */
    int n_modes;
    bool json;
    bool sampling; /* also the sampled kind */
    bool constrained; /* the first request of each decode batch is constrained */
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

/* The sampling of a request of a kind (seeded with the prompt's seed). */
static engine_sampling bench__sampling(int kind, uint64_t seed)
{
    if (kind == BENCH_GREEDY) return (engine_sampling){0};
    return (engine_sampling){.temperature = 0.8, .top_p = 0.95, .repetition_penalty = 1.1, .seed = seed};
}

/* --constrained: a constraint that allows every id, so that only its costs
 * show. It has no state. */
static void bench__allow_all(void *state, uint32_t *allowed, int32_t n_vocab)
{
    (void)state;
    memset(allowed, 0xff, (size_t)(n_vocab + 31) / 32 * sizeof *allowed);
}

static bool bench__accept_all(void *state, int32_t id)
{
    (void)state;
    (void)id;
    return true;
}

static const engine_constraint bench__allow_all_constraint = {NULL, bench__allow_all, bench__accept_all, NULL};

/* Submit n requests of prompt_len tokens generating gen_len each; the
 * first constrained (to every id) when asked. */
static bool bench__submit(engine *e, int64_t n, int64_t prompt_len, int64_t gen_len, uint64_t seed, int kind,
                          bool constrain_first)
{
    int32_t *ids = malloc((size_t)prompt_len * sizeof *ids);
    bool ok = ids != NULL;
    for (int64_t r = 0; ok && r < n; r++) {
        bench__prompt(ids, prompt_len, engine_model_config(e)->vocab_size, seed + (uint64_t)r);
        engine_request_params p = {.prompt_ids = ids, .n_prompt = prompt_len, .max_tokens = gen_len,
                                   .sampling = bench__sampling(kind, seed + (uint64_t)r), .ignore_eos = true,
                                   .constraint = constrain_first && r == 0 ? &bench__allow_all_constraint : NULL};
        int64_t id;
        ok = engine_add_request(e, &p, &id) == ENC_OK;
    }
    free(ids);
    return ok;
}

/* What bench__drain measured. */
typedef struct bench_drain {
    int64_t decode_tokens, decode_steps; /* in engine steps that decoded only */
    int64_t decode_passes;               /* their forward passes (K per multi-step replay) */
    double decode_s, decode_device_s;    /* their wall and device seconds */
    int64_t decode_bytes_read;           /* what the host read back in them */
    double total_s;                      /* every step */
} bench_drain;

/* Step until nothing is left. */
static bool bench__drain(engine *e, bench_drain *d)
{
    memset(d, 0, sizeof *d);
    while (engine_has_unfinished(e)) {
        engine_step_stats st;
        double t0 = cli_now_seconds(), dev0 = engine_device_seconds(e);
        int64_t read0 = engine_get_stats(e).n_bytes_read;
        if (engine_step(e, &st) != ENC_OK) return false;
        double dt = cli_now_seconds() - t0;
        d->total_s += dt;
        if (st.n_prefill_tokens == 0) {
            d->decode_tokens += st.n_decode_tokens;
            d->decode_steps++;
            d->decode_passes += st.n_passes;
            d->decode_s += dt;
            d->decode_device_s += engine_device_seconds(e) - dev0;
            d->decode_bytes_read += engine_get_stats(e).n_bytes_read - read0;
        }
    }
    return true;
}

static void bench__release_all(engine *e, int64_t from_id, int64_t n)
{
    for (int64_t i = 0; i < n; i++) engine_release_request(e, from_id + i);
}

/* What one decode run gives (bench__decode_once), by index. */
enum { BENCH_TPS, BENCH_STEP_MS, BENCH_DEVICE_MS, BENCH_READ_BYTES, BENCH_TRIP_MS, BENCH_N_FIGURES };

/* The medians of one decode kind, [mode][batch]. */
typedef struct bench_decode {
    double tps[BENCH_N_MODES][BENCH_MAX_BATCHES];
    double step_ms[BENCH_N_MODES][BENCH_MAX_BATCHES];    /* wall time of a decode step (a token per sequence) */
    double device_ms[BENCH_N_MODES][BENCH_MAX_BATCHES];  /* its device time */
    double read_bytes[BENCH_N_MODES][BENCH_MAX_BATCHES]; /* read back per token */
    double trip_ms[BENCH_N_MODES][BENCH_MAX_BATCHES];    /* wall time of a host round trip (K steps) */
} bench_decode;

typedef struct bench_result {
    double prefill_tps;
    bench_decode dec[BENCH_N_KINDS];
    membw_result bw;
    double peak_rss_bytes;
    double bytes_per_token;
} bench_result;

static bool bench__run_prefill(engine *e, const bench_args *a, int64_t *next_id, double *tps)
{
    double v[BENCH_MAX_RUNS];
    for (int64_t r = -1; r < a->runs; r++) { /* run -1 warms up (page faults, caches) */
        bench_drain d;
        /* a new prompt each run: the prefix cache would serve most of a repeated one */
        uint64_t seed = 1000 + (uint64_t)(r + 1);
        if (!bench__submit(e, 1, a->prompt_len, 1, seed, BENCH_GREEDY, false) || !bench__drain(e, &d)) return false;
        bench__release_all(e, (*next_id)++, 1);
        if (r >= 0) v[r] = (double)a->prompt_len / d.total_s;
    }
    *tps = bench__median(v, a->runs);
    return true;
}

/* One decode run of `batch` sequences of a kind (BENCH_*): tokens/s of the
 * decode-only engine steps; the wall and device milliseconds of one decode
 * step, a forward pass over the batch (an engine step replaying K decode
 * steps counts K); the bytes read back per token; the wall milliseconds of
 * one engine step (a host round trip). */
static bool bench__decode_once(engine *e, const bench_args *a, int64_t batch, int64_t *next_id,
                               uint64_t seed, int kind, double out[BENCH_N_FIGURES])
{
    bench_drain d;
    if (!bench__submit(e, batch, a->depth, a->gen_len, seed, kind, a->constrained) || !bench__drain(e, &d)) return false;
    bench__release_all(e, *next_id, batch);
    *next_id += batch;
    double trips = d.decode_steps > 0 ? (double)d.decode_steps : 1.0;
    double steps = d.decode_passes > 0 ? (double)d.decode_passes : 1.0;
    out[BENCH_TPS] = d.decode_s > 0 ? (double)d.decode_tokens / d.decode_s : 0;
    out[BENCH_STEP_MS] = 1e3 * d.decode_s / steps;
    out[BENCH_DEVICE_MS] = 1e3 * d.decode_device_s / steps;
    out[BENCH_READ_BYTES] = d.decode_tokens > 0 ? (double)d.decode_bytes_read / (double)d.decode_tokens : 0;
    out[BENCH_TRIP_MS] = 1e3 * d.decode_s / trips;
    return true;
}

/* Every mode, batch size and kind, runs interleaved so that drift in the
 * machine's speed hits all alike; a warm-up run first (it also records the
 * decode slots). Each (run, mode) has prompts of its own, the same for both
 * kinds. */
static bool bench__run_decode(engine *e, int64_t *next_id, const bench_args *a, bench_result *r)
{
    static double v[BENCH_N_FIGURES][BENCH_N_KINDS][BENCH_N_MODES][BENCH_MAX_BATCHES][BENCH_MAX_RUNS];
    int n_kinds = a->sampling ? BENCH_N_KINDS : 1;
    for (int64_t run = -1; run < a->runs; run++)
        for (int m = 0; m < a->n_modes; m++) {
            const bench_mode *mode = &bench_modes[a->modes[m]];
            if (engine_set_decode_mode(e, mode->eager, mode->decode_steps) != ENC_OK) return false;
            for (int b = 0; b < a->n_batches; b++)
                for (int kind = 0; kind < n_kinds; kind++) {
                    double got[BENCH_N_FIGURES];
                    uint64_t seed = 100 + (uint64_t)(run + 1) * BENCH_N_MODES + (uint64_t)m;
                    if (!bench__decode_once(e, a, a->batches[b], next_id, seed, kind, got)) return false;
                    for (int k = 0; k < BENCH_N_FIGURES && run >= 0; k++) v[k][kind][m][b][run] = got[k];
                }
        }
    for (int kind = 0; kind < n_kinds; kind++)
        for (int m = 0; m < a->n_modes; m++)
            for (int b = 0; b < a->n_batches; b++) {
                bench_decode *d = &r->dec[kind];
                d->tps[m][b] = bench__median(v[BENCH_TPS][kind][m][b], a->runs);
                d->step_ms[m][b] = bench__median(v[BENCH_STEP_MS][kind][m][b], a->runs);
                d->device_ms[m][b] = bench__median(v[BENCH_DEVICE_MS][kind][m][b], a->runs);
                d->read_bytes[m][b] = bench__median(v[BENCH_READ_BYTES][kind][m][b], a->runs);
                d->trip_ms[m][b] = bench__median(v[BENCH_TRIP_MS][kind][m][b], a->runs);
            }
    return true;
}

/* ,"bytes_read_per_token":{...}, and with --sampling ,"sampled":{...} beside it. */
static void bench__print_json_sampled(const bench_args *a, const bench_result *r)
{
    int n_kinds = a->sampling ? BENCH_N_KINDS : 1;
    for (int kind = 0; kind < n_kinds; kind++) {
        const bench_decode *d = &r->dec[kind];
        if (kind == BENCH_SAMPLED) {
            printf(",\"sampled\":{");
            for (int m = 0; m < a->n_modes; m++) {
                printf("%s\"%s\":{", m ? "," : "", bench_modes[a->modes[m]].name);
                for (int b = 0; b < a->n_batches; b++)
                    printf("%s\"%lld\":%.2f", b ? "," : "", (long long)a->batches[b], d->tps[m][b]);
                printf("}");
            }
            printf("}");
        }
        printf(",\"%s_bytes_read_per_token\":{", bench_kinds[kind]);
        for (int m = 0; m < a->n_modes; m++) {
            printf("%s\"%s\":{", m ? "," : "", bench_modes[a->modes[m]].name);
            for (int b = 0; b < a->n_batches; b++)
                printf("%s\"%lld\":%.1f", b ? "," : "", (long long)a->batches[b], d->read_bytes[m][b]);
            printf("}");
        }
        printf("}");
    }
}

/* The sampled kind's tokens/s against greedy's, and what each reads back. */
static void bench__print_sampled(const bench_args *a, const bench_result *r)
{
    const bench_decode *g = &r->dec[BENCH_GREEDY], *sd = &r->dec[BENCH_SAMPLED];
    if (a->sampling) {
        printf("sampled decode tokens/s (temperature 0.8, top-p 0.95, repetition penalty 1.1, seeded):\n");
        for (int m = 0; m < a->n_modes; m++) {
            printf("  %-10s", bench_modes[a->modes[m]].name);
            for (int b = 0; b < a->n_batches; b++)
                printf(" %7.1f %3.2fx", sd->tps[m][b], sd->tps[m][b] / g->tps[m][b]);
            printf("\n");
        }
        printf("  (ratios against greedy in the same mode, measured side by side)\n");
    }
    printf("bytes read back per decoded token%s:\n", a->sampling ? " (greedy / sampled)" : "");
    for (int m = 0; m < a->n_modes; m++) {
        printf("  %-10s", bench_modes[a->modes[m]].name);
        for (int b = 0; b < a->n_batches; b++) {
            printf("  %lld seq: %.0f", (long long)a->batches[b], g->read_bytes[m][b]);
            if (a->sampling) printf(" / %.0f", sd->read_bytes[m][b]);
        }
        printf("\n");
    }
}

static void bench__print_json(const bench_args *a, const engine *e, const bench_result *r, double roofline)
{
    const engine_config *c = engine_get_config(e);
    printf("{\"model\":\"%s\",\"device\":\"%s\",\"cpu_kernels\":\"%s\",\"threads\":%d,\"runs\":%lld,"
           "\"prompt_len\":%lld,\"gen_len\":%lld,"
           "\"depth\":%lld,\"prefill_tokens_per_s\":%.2f,\"decode_mode\":\"%s\",\"decode_tokens_per_s\":%.2f",
           c->model_dir, c->device ? c->device : "cpu", cpu_isa_name(cpu_kernels_init()), c->n_threads,
           (long long)a->runs, (long long)a->prompt_len, (long long)a->gen_len, (long long)a->depth, r->prefill_tps, bench_modes[a->modes[0]].name, r->dec[0].tps[0][0]);
    for (int b = 0; b < a->n_batches; b++)
        printf(",\"decode_tokens_per_s_batch%lld\":%.2f", (long long)a->batches[b], r->dec[0].tps[0][b]);
    printf(",\"modes\":{");
    for (int m = 0; m < a->n_modes; m++) {
        printf("%s\"%s\":{", m ? "," : "", bench_modes[a->modes[m]].name);
        for (int b = 0; b < a->n_batches; b++)
            printf("%s\"%lld\":%.2f", b ? "," : "", (long long)a->batches[b], r->dec[0].tps[m][b]);
        printf("}");
    }
    printf("},\"step_ms\":{");
    for (int m = 0; m < a->n_modes; m++) {
        printf("%s\"%s\":{", m ? "," : "", bench_modes[a->modes[m]].name);
        for (int b = 0; b < a->n_batches; b++)
            printf("%s\"%lld\":{\"wall\":%.4f,\"device\":%.4f,\"host\":%.4f,\"round_trip\":%.4f}", b ? "," : "",
                   (long long)a->batches[b], r->dec[0].step_ms[m][b], r->dec[0].device_ms[m][b],
                   r->dec[0].step_ms[m][b] - r->dec[0].device_ms[m][b], r->dec[0].trip_ms[m][b]);
        printf("}");
    }
    printf("}");
    bench__print_json_sampled(a, r);
    printf(",\"memory_read_gb_per_s\":%.2f,\"memory_triad_gb_per_s\":%.2f", r->bw.read_gbps,
           r->bw.triad_gbps);
    printf(",\"decode_bytes_per_token\":%.0f,\"decode_roofline_tokens_per_s\":%.2f",
           r->bytes_per_token, roofline);
    printf(",\"decode_fraction_of_roofline\":%.3f,\"peak_rss_bytes\":%.0f",
           r->dec[0].tps[0][0] / roofline, r->peak_rss_bytes);
    printf(",\"kv_cache_dtype\":\"%s\",\"kv_bytes_per_token\":%lld,\"bf16_activations\":%s}\n",
           engine_kv_cache_dtype(e), (long long)engine_kv_bytes_per_token(e),
           engine_get_config(e)->bf16_activations ? "true" : "false");
}

static void bench__print(const bench_args *a, const engine *e, const bench_result *r)
{
    double roofline = r->bw.read_gbps * 1e9 / r->bytes_per_token;
    const engine_config *c = engine_get_config(e);
    if (a->json) {
        bench__print_json(a, e, r, roofline);
        return;
    }
    const char *device = c->device ? c->device : "cpu";
    int on_cpu = strcmp(device, "cpu") == 0;
    printf("model: %s (device %s%s%s%s, %d threads, median of %lld runs)\n", c->model_dir, device,
           on_cpu ? ", kernels " : "", on_cpu ? cpu_isa_name(cpu_kernels_init()) : "",
           c->bf16_activations ? ", bf16 activations" : "", c->n_threads, (long long)a->runs);
    printf("prefill (%lld-token prompt): %.1f tokens/s\n", (long long)a->prompt_len, r->prefill_tps);
    printf("decode tokens/s (%lld tokens per sequence):\n  %-10s", (long long)a->gen_len, "mode");
    for (int b = 0; b < a->n_batches; b++) printf(" %9lld seq", (long long)a->batches[b]);
    printf("\n");
    for (int m = 0; m < a->n_modes; m++) {
        printf("  %-10s", bench_modes[a->modes[m]].name);
        for (int b = 0; b < a->n_batches; b++) {
            double ratio = r->dec[0].tps[m][b] / r->dec[0].tps[0][b];
            printf(" %7.1f", r->dec[0].tps[m][b]);
            printf(m ? " %3.2fx" : "      ", ratio);
        }
        printf("\n");
    }
    printf("  (ratios against %s, measured side by side)\n", bench_modes[a->modes[0]].name);
    printf("per decode step (a forward pass over the batch), ms: wall = device + host; [a host round trip]\n");
    for (int m = 0; m < a->n_modes; m++) {
        printf("  %-10s", bench_modes[a->modes[m]].name);
        for (int b = 0; b < a->n_batches; b++)
            printf("  %lld seq: %.3f = %.3f + %.3f [%.3f]", (long long)a->batches[b], r->dec[0].step_ms[m][b],
                   r->dec[0].device_ms[m][b], r->dec[0].step_ms[m][b] - r->dec[0].device_ms[m][b],
                   r->dec[0].trip_ms[m][b]);
        printf("\n");
    }
    bench__print_sampled(a, r);
    printf("memory bandwidth: read %.1f GB/s (read-only sum, best of 5), STREAM triad %.1f GB/s "
           "(write-allocate counted); weights read per decode step: %.1f MB\n",
           r->bw.read_gbps, r->bw.triad_gbps, r->bytes_per_token / 1e6);
    printf("decode roofline (read bandwidth / weight bytes): %.1f tokens/s; %s batch-%lld decode reaches %.0f%% of it\n",
           roofline, bench_modes[a->modes[0]].name, (long long)a->batches[0], 100.0 * r->dec[0].tps[0][0] / roofline);
    printf("peak resident memory: %.2f GB; KV cache %s, %lld bytes per token\n", r->peak_rss_bytes / 1e9,
           engine_kv_cache_dtype(e), (long long)engine_kv_bytes_per_token(e));
}

static bool bench__parse_modes(const char *list, bench_args *a)
{
    a->n_modes = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int m = 0;
        while (m < BENCH_N_MODES && strcmp(bench_modes[m].name, tok)) m++;
        if (m == BENCH_N_MODES || a->n_modes == BENCH_N_MODES) {
            cli_error("bench", "--modes: unknown mode '%s' or too many (eager, captured, k2, k4, k8, k16)", tok);
            return false;
        }
        for (int j = 0; j < a->n_modes; j++)
            if (a->modes[j] == m) {
                cli_error("bench", "--modes: '%s' given twice", tok);
                return false;
            }
        a->modes[a->n_modes++] = m;
    }
    if (a->n_modes == 0) cli_error("bench", "--modes: no mode in '%s'", list);
    return a->n_modes > 0;
}

static bool bench__parse_batches(const char *cmd, const char *list, bench_args *a)
{
    int32_t *ids;
    int64_t n;
    if (!cli_parse_ids(cmd, "--batches", list, &ids, &n)) return false;
    bool ok = n > 0 && n <= BENCH_MAX_BATCHES;
    for (int64_t j = 0; ok && j < n; j++)
        ok = ids[j] > 0;
    if (!ok)
        cli_error(cmd, "--batches: expected 1 to %d sequence counts, each at least 1, got '%s'",
                  BENCH_MAX_BATCHES, list);
    a->n_batches = ok ? (int)n : 0;
    for (int64_t j = 0; ok && j < n; j++)
        a->batches[j] = ids[j];
    free(ids);
    return ok;
}

static int bench__option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    bench_args *a = args;
    const char *o = argv[*i], *v;
    if (!strcmp(o, "--prompt-len")) return cli_option_i64(cmd, argc, argv, i, 1, 1 << 20, &a->prompt_len) ? 1 : -1;
    if (!strcmp(o, "--gen-len")) return cli_option_i64(cmd, argc, argv, i, 2, 1 << 20, &a->gen_len) ? 1 : -1;
    if (!strcmp(o, "--depth")) return cli_option_i64(cmd, argc, argv, i, 1, 1 << 20, &a->depth) ? 1 : -1;
    if (!strcmp(o, "--runs")) return cli_option_i64(cmd, argc, argv, i, 1, BENCH_MAX_RUNS, &a->runs) ? 1 : -1;
    if (!strcmp(o, "--batches")) return (v = cli_value(cmd, argc, argv, i)) && bench__parse_batches(cmd, v, a) ? 1 : -1;
    if (!strcmp(o, "--modes")) return (v = cli_value(cmd, argc, argv, i)) && bench__parse_modes(v, a) ? 1 : -1;
    if (!strcmp(o, "--json")) return a->json = true;
    if (!strcmp(o, "--sampling")) return a->sampling = true;
    if (!strcmp(o, "--constrained")) return a->constrained = true;
    return 0;
}

static int bench__parse(int argc, char **argv, bench_args *a)
{
    a->prompt_len = 512;
    a->gen_len = 128;
    a->depth = BENCH_DECODE_PROMPT_LEN;
    a->runs = 3;
    a->n_batches = 3;
    a->batches[0] = 1, a->batches[1] = 4, a->batches[2] = 16;
    a->n_modes = BENCH_N_DEFAULT_MODES;
    for (int m = 0; m < BENCH_N_DEFAULT_MODES; m++) a->modes[m] = m;
    int rc = cli_parse_args("bench", bench_help, argc, argv, &a->cfg, bench__option, a);
    if (rc) return rc;
    for (int i = 1; i < argc; i++) /* each mode sets them: the flags would change nothing */
        if (!strcmp(argv[i], "--eager") || !strcmp(argv[i], "--decode-steps")) {
            cli_error("bench",
                      "%s: bench measures the decode modes of --modes (eager, captured, "
                      "k2 .. k16) instead",
                      argv[i]);
            return CLI_BAD_ARGS;
        }
    int64_t max_batch = 1;
    for (int i = 0; i < a->n_batches; i++) max_batch = a->batches[i] > max_batch ? a->batches[i] : max_batch;
    if (a->cfg.max_num_seqs < max_batch) a->cfg.max_num_seqs = (int)max_batch;
    /* one step holds the whole prefill prompt and every prompt of a decode
     * run, so that a batch-B figure is made of steps decoding B tokens each
     * (unset, the engine's default budget, raised where it is short: a
     * budget below batch x depth chunks those prompts, and the decode steps
     * between the chunks run a few sequences) */
    int64_t need = max_batch * a->depth > a->prompt_len ? max_batch * a->depth : a->prompt_len;
    if (a->cfg.max_num_batched_tokens == 0) a->cfg.max_num_batched_tokens = ENGINE_DEFAULT_MAX_NUM_BATCHED_TOKENS;
    if (a->cfg.max_num_batched_tokens < need) a->cfg.max_num_batched_tokens = need;
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "serve")) return cmd_bench_serve(argc - 1, argv + 1);
    bench_args a;
    memset(&a, 0, sizeof a);
    int rc = bench__parse(argc, argv, &a);
    if (rc) return rc;
    /* one engine for every mode, created for the most decode steps any uses */
    engine_config cfg = a.cfg;
    cfg.eager = bench_modes[a.modes[0]].eager;
    cfg.decode_steps = 1;
    for (int m = 0; m < a.n_modes; m++)
        if (bench_modes[a.modes[m]].decode_steps > cfg.decode_steps) cfg.decode_steps = bench_modes[a.modes[m]].decode_steps;
    /* the bandwidth first, so that its buffers are gone before the weights come */
    bench_result r = {0};
    r.bw = membw_measure(cfg.n_threads > 0 ? cfg.n_threads : enc_cpu_count(), 5);
    engine *e = NULL;
    rc = cli_engine_create("bench", &cfg, NULL, &e);
    if (rc) return rc;
    int64_t next_id = 0;
    if (!a.json) fprintf(stderr, "encore bench: measuring (%lld runs per figure)...\n", (long long)a.runs);
    if (engine_set_decode_mode(e, bench_modes[a.modes[0]].eager, bench_modes[a.modes[0]].decode_steps) != ENC_OK ||
        !bench__run_prefill(e, &a, &next_id, &r.prefill_tps) || !bench__run_decode(e, &next_id, &a, &r)) {
        cli_error("bench", "%s", enc_last_error());
        rc = CLI_FAILED;
    }
    if (!rc) {
        r.peak_rss_bytes = cli_peak_rss_bytes();
        r.bytes_per_token = (double)engine_decode_weight_bytes(e);
        bench__print(&a, e, &r);
    }
    engine_destroy(e);
    return rc;
}
