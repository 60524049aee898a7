/* metrics.c - Prometheus text for GET /metrics (metrics.h).
 *
 * Histogram buckets are vLLM's, so that dashboards built for its
 * time-to-first-token and inter-token-latency histograms read ours. Bucket
 * counts are kept per bucket and made cumulative when rendered. */
#define _POSIX_C_SOURCE 200809L
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double metrics_ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                             0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                             20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double metrics_itl_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                            0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                            7.5,  10.0,  20.0, 40.0,  80.0};
static const double metrics_e2e_bounds[] = {0.3,  0.5,  0.8,  1.0,   1.5,   2.0,   2.5,
                                            5.0,  10.0, 15.0, 20.0,  30.0,  40.0,  50.0,
                                            60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

#define METRICS_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void metrics__histogram_init(metrics_histogram *h, const char *name, const char *help,
                                    const double *bounds, int n)
{
    memset(h, 0, sizeof *h);
    h->name = name;
    h->help = help;
    h->bounds = bounds;
    h->n_bounds = n < METRICS_MAX_BUCKETS ? n : METRICS_MAX_BUCKETS;
}

void metrics_init(metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    metrics__histogram_init(&m->ttft, "encore_time_to_first_token_seconds",
                            "Time from a request's arrival to its first generated token.",
                            metrics_ttft_bounds, METRICS_N(metrics_ttft_bounds));
    metrics__histogram_init(&m->itl, "encore_inter_token_latency_seconds",
                            "Time between two consecutive generated tokens of a request.",
                            metrics_itl_bounds, METRICS_N(metrics_itl_bounds));
    metrics__histogram_init(&m->e2e, "encore_e2e_request_latency_seconds",
                            "Time from a request's arrival to its end.", metrics_e2e_bounds,
                            METRICS_N(metrics_e2e_bounds));
}

void metrics_destroy(metrics *m) { pthread_mutex_destroy(&m->mu); }

static void metrics__observe(metrics_histogram *h, double v, int64_t times)
{
    int b = 0;
    while (b < h->n_bounds && v > h->bounds[b]) b++;
    h->counts[b] += times;
    h->count += times;
    h->sum += v * (double)times;
}

void metrics_observe_ttft(metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    metrics__observe(&m->ttft, seconds, 1);
    pthread_mutex_unlock(&m->mu);
}

void metrics_observe_itl(metrics *m, double seconds, int64_t n)
{
    if (n <= 0) return;
    pthread_mutex_lock(&m->mu);
    metrics__observe(&m->itl, seconds / (double)n, n);
    pthread_mutex_unlock(&m->mu);
}

void metrics_observe_finish(metrics *m, const char *finish_reason, double e2e_seconds)
{
    pthread_mutex_lock(&m->mu);
    if (finish_reason && !strcmp(finish_reason, "stop"))
        m->n_finished_stop++;
    else if (finish_reason && !strcmp(finish_reason, "length"))
        m->n_finished_length++;
    else if (finish_reason && !strcmp(finish_reason, "error"))
        m->n_finished_error++;
    else
        m->n_finished_abort++;
    metrics__observe(&m->e2e, e2e_seconds, 1);
    pthread_mutex_unlock(&m->mu);
}

void metrics_count_error(metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->n_http_errors++;
    pthread_mutex_unlock(&m->mu);
}

/* --- rendering ------------------------------------------------------------------ */

typedef struct metrics_text {
    char *s;
    size_t len, cap;
    int oom;
} metrics_text;

static void metrics__printf(metrics_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void metrics__printf(metrics_text *t, const char *fmt, ...)
{
    for (int tries = 0; !t->oom && tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
        } else if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        } else {
            size_t cap = (t->cap + (size_t)n + 1) * 2;
            char *p = realloc(t->s, cap);
            if (!p) t->oom = 1;
            else t->s = p, t->cap = cap;
        }
    }
}

static void metrics__head(metrics_text *t, const char *name, const char *type, const char *help)
{
    metrics__printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metrics__one(metrics_text *t, const char *name, const char *type, const char *help,
                         const char *model, double v)
{
    metrics__head(t, name, type, help);
    metrics__printf(t, "%s{model_name=\"%s\"} %.17g\n", name, model, v);
}

static void metrics__histogram(metrics_text *t, const metrics_histogram *h, const char *model)
{
    metrics__head(t, h->name, "histogram", h->help);
    int64_t cum = 0;
    for (int b = 0; b < h->n_bounds; b++) {
        cum += h->counts[b];
        metrics__printf(t, "%s_bucket{model_name=\"%s\",le=\"%g\"} %lld\n", h->name, model,
                        h->bounds[b], (long long)cum);
    }
    cum += h->counts[h->n_bounds];
    metrics__printf(t, "%s_bucket{model_name=\"%s\",le=\"+Inf\"} %lld\n", h->name, model,
                    (long long)cum);
    metrics__printf(t, "%s_sum{model_name=\"%s\"} %.17g\n", h->name, model, h->sum);
    metrics__printf(t, "%s_count{model_name=\"%s\"} %lld\n", h->name, model, (long long)h->count);
}

/* The model name as a label value: backslash, quote and newline escaped. */
static void metrics__label(const char *s, char *out, size_t cap)
{
    size_t w = 0;
    for (; *s && w + 3 < cap; s++) {
        if (*s == '\\' || *s == '"') out[w++] = '\\', out[w++] = *s;
        else if (*s == '\n') out[w++] = '\\', out[w++] = 'n';
        else out[w++] = *s;
    }
    out[w] = '\0';
}

char *metrics_render(metrics *m, const encore_stats *st, const char *model_name)
{
    metrics_text t = {.s = malloc(16384), .cap = 16384};
    if (!t.s) return NULL;
    char model[256];
    metrics__label(model_name, model, sizeof model);
    double usage = st->kv_blocks_total ? (double)st->kv_blocks_used / (double)st->kv_blocks_total : 0;
    double hit = st->prefix_queries_tokens
                     ? (double)st->prefix_hit_tokens / (double)st->prefix_queries_tokens
                     : 0;
    const struct {
        const char *name, *type, *help;
        double value;
    } rows[] = {
        {"encore_num_requests_running", "gauge", "Requests in the engine's running batch.",
         (double)st->n_running},
        {"encore_num_requests_waiting", "gauge", "Requests waiting to be scheduled.",
         (double)st->n_waiting},
        {"encore_kv_cache_usage_perc", "gauge",
         "Fraction of KV-cache blocks in use (1 means 100 percent).", usage},
        {"encore_kv_cache_blocks_total", "gauge", "KV-cache blocks in the pool.",
         (double)st->kv_blocks_total},
        {"encore_kv_cache_blocks_used", "gauge", "KV-cache blocks in use.",
         (double)st->kv_blocks_used},
        {"encore_prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache.", (double)st->prefix_queries_tokens},
        {"encore_prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
         (double)st->prefix_hit_tokens},
        {"encore_prefix_cache_hit_rate", "gauge",
         "Prefix-cache hits over queries, in tokens, since start.", hit},
        {"encore_prompt_tokens_total", "counter", "Prompt tokens processed.",
         (double)st->prompt_tokens},
        {"encore_generation_tokens_total", "counter", "Tokens generated.",
         (double)st->output_tokens},
        {"encore_engine_steps_total", "counter", "Engine steps run.", (double)st->n_steps},
        {"encore_engine_eager_steps_total", "counter",
         "Steps run eagerly (prefill, mixed, cold decode).", (double)st->n_eager_steps},
        {"encore_engine_captured_steps_total", "counter",
         "Decode replays of a capture (one multi-step replay counts once).",
         (double)(st->n_replays + st->n_multi_round_trips)},
        {"encore_engine_multi_step_replays_total", "counter",
         "Replays that ran several decode steps in one round trip.",
         (double)st->n_multi_round_trips},
        {"encore_engine_captures_total", "counter", "Decode steps recorded.",
         (double)st->n_captures},
        {"encore_engine_step_failures_total", "counter",
         "Engine steps that failed (each ended its requests with an error).",
         (double)st->n_step_failures},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        metrics__one(&t, rows[i].name, rows[i].type, rows[i].help, model, rows[i].value);
    pthread_mutex_lock(&m->mu);
    metrics__head(&t, "encore_request_success_total", "counter", "Requests finished, by reason.");
    const struct {
        const char *reason;
        int64_t n;
    } finished[] = {{"stop", m->n_finished_stop},
                    {"length", m->n_finished_length},
                    {"abort", m->n_finished_abort},
                    {"error", m->n_finished_error}};
    for (size_t i = 0; i < sizeof finished / sizeof finished[0]; i++)
        metrics__printf(&t, "encore_request_success_total{model_name=\"%s\",finished_reason=\"%s\"} %lld\n",
                        model, finished[i].reason, (long long)finished[i].n);
    metrics__one(&t, "encore_http_request_errors_total", "counter",
                 "Requests refused with a 4xx or 5xx status.", model, (double)m->n_http_errors);
    metrics__histogram(&t, &m->ttft, model);
    metrics__histogram(&t, &m->itl, model);
    metrics__histogram(&t, &m->e2e, model);
    pthread_mutex_unlock(&m->mu);
    if (t.oom) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
