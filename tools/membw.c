/* membw.c - a STREAM triad with the engine's thread pool. */
#include "membw.h"

#include <stdlib.h>

#include "api/encore_tools.h"
#include "cli.h"

enum { MEMBW_N = 32 << 20 }; /* floats per array: 3 x 128 MiB */

typedef struct membw_ctx {
    float *a, *b, *c;
} membw_ctx;

static void membw__triad(void *arg, int ith, int nth)
{
    membw_ctx *m = arg;
    size_t lo = (size_t)MEMBW_N * (size_t)ith / (size_t)nth;
    size_t hi = (size_t)MEMBW_N * (size_t)(ith + 1) / (size_t)nth;
    for (size_t i = lo; i < hi; i++) m->a[i] = m->b[i] + 3.0f * m->c[i];
}

static void membw__init(void *arg, int ith, int nth)
{
    membw_ctx *m = arg; /* first touch by the thread that will stream it */
    size_t lo = (size_t)MEMBW_N * (size_t)ith / (size_t)nth;
    size_t hi = (size_t)MEMBW_N * (size_t)(ith + 1) / (size_t)nth;
    for (size_t i = lo; i < hi; i++) m->a[i] = 0.0f, m->b[i] = 1.0f, m->c[i] = 2.0f;
}

static int membw__cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double membw_triad_gbps(int n_threads, int runs)
{
    enc_threadpool *pool;
    if (runs < 1 || runs > 64 || threadpool_create(n_threads, &pool) != ENC_OK) return -1;
    membw_ctx m = {malloc(MEMBW_N * sizeof(float)), malloc(MEMBW_N * sizeof(float)),
                   malloc(MEMBW_N * sizeof(float))};
    double gbps[64], result = -1;
    if (m.a && m.b && m.c) {
        threadpool_run(pool, membw__init, &m);
        threadpool_run(pool, membw__triad, &m); /* warm-up */
        for (int r = 0; r < runs; r++) {
            double t0 = cli_now_seconds();
            threadpool_run(pool, membw__triad, &m);
            gbps[r] = 3.0 * MEMBW_N * sizeof(float) / (cli_now_seconds() - t0) / 1e9;
        }
        qsort(gbps, (size_t)runs, sizeof gbps[0], membw__cmp);
        result = gbps[runs / 2];
    }
    free(m.a);
    free(m.b);
    free(m.c);
    threadpool_destroy(pool);
    return result;
}
