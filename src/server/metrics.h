/* metrics.h - the server's Prometheus metrics: latency histograms and
 * request counters kept here, engine gauges and counters read from
 * encore_get_stats, all rendered as Prometheus text (GET /metrics). */
#ifndef ENC_SERVER_METRICS_H
#define ENC_SERVER_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "encore.h"

enum { METRICS_MAX_BUCKETS = 24 };

typedef struct metrics_histogram {
    const char *name, *help;
    const double *bounds; /* [n_bounds] upper bounds in seconds, increasing */
    int n_bounds;
    int64_t counts[METRICS_MAX_BUCKETS + 1]; /* per bucket, the last is +Inf */
    double sum;
    int64_t count;
} metrics_histogram;

typedef struct metrics {
    pthread_mutex_t mu;
    metrics_histogram ttft; /* request arrival to its first token */
    metrics_histogram itl;  /* between consecutive tokens of one request */
    metrics_histogram e2e;  /* request arrival to its end */
    int64_t n_finished_stop, n_finished_length, n_finished_abort;
    int64_t n_finished_error; /* ended by the engine's failure */
    int64_t n_http_errors;  /* requests refused with a 4xx or 5xx */
} metrics;

void metrics_init(metrics *m);
void metrics_destroy(metrics *m);

void metrics_observe_ttft(metrics *m, double seconds);
/* n tokens that arrived together `seconds` after the previous one: n
 * inter-token latencies of seconds / n each. */
void metrics_observe_itl(metrics *m, double seconds, int64_t n);
void metrics_observe_finish(metrics *m, const char *finish_reason, double e2e_seconds);
void metrics_count_error(metrics *m);

/* The Prometheus text exposition (version 0.0.4) of m and st, every series
 * labelled model_name="model". Returns a malloc'd string, NULL when out of
 * memory. */
char *metrics_render(metrics *m, const encore_stats *st, const char *model);

#endif
