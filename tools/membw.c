/* membw.c - read and triad bandwidth (membw.h) on a thread pool of their own. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include "membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "api/encore_tools.h"
#include "cli.h"

enum {
    MEMBW_TRIAD_N = 32 << 20, /* floats per triad array: 3 x 128 MiB */
    MEMBW_READ_WORDS = 64 << 20, /* uint64 words read: 512 MiB, past any L3 */
};

typedef struct membw_ctx {
    float *a, *b, *c;
    const uint64_t *words;
    uint64_t sink[1024]; /* per share: keeps the sums alive */
} membw_ctx;

static void membw__range(size_t n, int ith, int nth, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)ith / (size_t)nth;
    *hi = n * (size_t)(ith + 1) / (size_t)nth;
}

static void membw__triad(void *arg, int ith, int nth)
{
    membw_ctx *m = arg;
    size_t lo, hi;
    membw__range(MEMBW_TRIAD_N, ith, nth, &lo, &hi);
    for (size_t i = lo; i < hi; i++) m->a[i] = m->b[i] + 3.0f * m->c[i];
}

/* Eight independent lanes, so the loads are not serialised by one sum. */
static void membw__read(void *arg, int ith, int nth)
{
    membw_ctx *m = arg;
    size_t lo, hi;
    membw__range(MEMBW_READ_WORDS / 8, ith, nth, &lo, &hi);
    const uint64_t *w = m->words;
    uint64_t l0 = 0, l1 = 0, l2 = 0, l3 = 0, l4 = 0, l5 = 0, l6 = 0, l7 = 0; /* in registers */
    for (size_t i = 8 * lo; i < 8 * hi; i += 8) {
        l0 += w[i], l1 += w[i + 1], l2 += w[i + 2], l3 += w[i + 3];
        l4 += w[i + 4], l5 += w[i + 5], l6 += w[i + 6], l7 += w[i + 7];
    }
    m->sink[ith % 1024] = l0 + l1 + l2 + l3 + l4 + l5 + l6 + l7;
}

static void membw__init(void *arg, int ith, int nth)
{
    membw_ctx *m = arg; /* first touch by the share that will stream it */
    size_t lo, hi;
    membw__range(MEMBW_TRIAD_N, ith, nth, &lo, &hi);
    for (size_t i = lo; i < hi; i++) m->a[i] = 0.0f, m->b[i] = 1.0f, m->c[i] = 2.0f;
    membw__range(MEMBW_READ_WORDS, ith, nth, &lo, &hi);
    uint64_t *w = (uint64_t *)m->words;
    for (size_t i = lo; i < hi; i++) w[i] = i;
}

/* The best GB/s of `runs` timed passes of fn (after one untimed). */
static double membw__best(enc_threadpool *pool, threadpool_task_fn fn, membw_ctx *m, double bytes, int runs)
{
    threadpool_run(pool, fn, m);
    double best = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = cli_now_seconds();
        threadpool_run(pool, fn, m);
        double gbps = bytes / (cli_now_seconds() - t0) / 1e9;
        if (gbps > best) best = gbps;
    }
    return best;
}

static void *membw__alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    madvise(p, bytes, MADV_HUGEPAGE); /* as the weights are held (cpu_backend.c) */
    return p;
}

membw_result membw_measure(int n_threads, int runs)
{
    membw_result res = {-1, -1};
    enc_threadpool *pool;
    if (runs < 1 || runs > 64 || threadpool_create(n_threads, &pool) != ENC_OK) return res;
    size_t triad_bytes = MEMBW_TRIAD_N * sizeof(float), read_bytes = MEMBW_READ_WORDS * sizeof(uint64_t);
    membw_ctx m = {membw__alloc(triad_bytes), membw__alloc(triad_bytes), membw__alloc(triad_bytes),
                   membw__alloc(read_bytes), {0}};
    if (m.a && m.b && m.c && m.words) {
        threadpool_run(pool, membw__init, &m);
        res.read_gbps = membw__best(pool, membw__read, &m, (double)read_bytes, runs);
        res.triad_gbps = membw__best(pool, membw__triad, &m, 4.0 * (double)triad_bytes, runs);
    }
    float *arrays[3] = {m.a, m.b, m.c};
    for (int i = 0; i < 3; i++)
        if (arrays[i]) munmap(arrays[i], triad_bytes);
    if (m.words) munmap((void *)m.words, read_bytes);
    threadpool_destroy(pool);
    return res;
}
