/* test_threadpool.c - the thread pool's contract (src/base/threadpool.h):
 * every share of a run runs exactly once, whatever threads take it; the
 * caller returns only when all are done; progress counters order dependent
 * work; all of it holds with more threads than cores, where workers are
 * often not running (the case the claimed shares exist for), and with waits
 * that stay awake long or not at all; an idle pool sleeps, and a pool whose
 * cores other threads want stops staying awake. And parallel_rows
 * (src/base/parallel_rows.h): every row in exactly one range, whether the
 * work is split over threads or not, each range with scratch of its own. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parallel_rows.h"
#include "base/threadpool.h"
#include "check.h"

enum { MAX_THREADS = 16 };

typedef struct share_log {
    atomic_int runs[MAX_THREADS]; /* how often each share ran */
    atomic_int bad_nth;
    int64_t sum[MAX_THREADS]; /* each share's own result, written by whoever runs it */
} share_log;

static void count_share(void *arg, int ith, int nth)
{
    share_log *l = arg;
    if (nth < 1 || nth > MAX_THREADS || ith < 0 || ith >= nth) {
        atomic_fetch_add(&l->bad_nth, 1);
        return;
    }
    atomic_fetch_add(&l->runs[ith], 1);
    int64_t s = 0;
    for (int i = 0; i < 1000 * (ith + 1); i++) s += i ^ ith;
    l->sum[ith] = s;
}

static int64_t expected_sum(int ith)
{
    int64_t s = 0;
    for (int i = 0; i < 1000 * (ith + 1); i++) s += i ^ ith;
    return s;
}

/* Many runs in a row: each share exactly once per run, results visible to
 * the caller when run returns; waits that stay awake spin_ns (< 0: the
 * pool's default). */
static void test_exactly_once(int n_threads, int n_runs, int64_t spin_ns)
{
    enc_threadpool *pool;
    CHECK(threadpool_create(n_threads, &pool) == ENC_OK);
    if (spin_ns >= 0) threadpool_set_spin_ns(pool, spin_ns);
    CHECK(threadpool_size(pool) == n_threads);
    share_log *l = calloc(1, sizeof *l);
    for (int r = 0; r < n_runs; r++) {
        memset(l->sum, 0, sizeof l->sum);
        threadpool_run(pool, count_share, l);
        for (int i = 0; i < n_threads; i++) {
            CHECK(atomic_load(&l->runs[i]) == r + 1);
            CHECK(l->sum[i] == expected_sum(i));
        }
        if (check_failures) break;
    }
    CHECK(atomic_load(&l->bad_nth) == 0);
    free(l);
    threadpool_destroy(pool);
}

/* A chain of dependent stages inside one run, as a recorded step is: stage
 * s has n_threads chunks, claimed by whoever comes; a chunk of stage s reads
 * what every chunk of stage s - 1 wrote, after waiting for it. */
enum { N_STAGES = 64 };

typedef struct chain {
    enc_threadpool *pool;
    atomic_int claimed[N_STAGES], done[N_STAGES];
    uint64_t value[N_STAGES][MAX_THREADS]; /* wraps: the recurrence grows as n_chunks^stage */
    int n_chunks;
} chain;

static void chain_share(void *arg, int ith, int nth)
{
    chain *c = arg;
    (void)ith, (void)nth;
    for (int s = 0; s < N_STAGES; s++) {
        int k = atomic_fetch_add(&c->claimed[s], 1);
        if (k >= c->n_chunks) continue;
        if (s > 0) threadpool_wait_for(c->pool, &c->done[s - 1], c->n_chunks);
        int n = 0;
        do {
            uint64_t prev = 0;
            for (int j = 0; s > 0 && j < c->n_chunks; j++) prev += c->value[s - 1][j];
            c->value[s][k] = prev + (uint64_t)k + 1;
            n++;
        } while ((k = atomic_fetch_add(&c->claimed[s], 1)) < c->n_chunks);
        threadpool_advance(c->pool, &c->done[s], n);
    }
}

static void test_dependent_stages(int n_threads, int n_runs, int64_t spin_ns)
{
    chain *c = calloc(1, sizeof *c);
    CHECK(threadpool_create(n_threads, &c->pool) == ENC_OK);
    if (spin_ns >= 0) threadpool_set_spin_ns(c->pool, spin_ns);
    c->n_chunks = n_threads;
    /* the reference: the same recurrence, one thread */
    uint64_t want[N_STAGES][MAX_THREADS];
    for (int s = 0; s < N_STAGES; s++)
        for (int k = 0; k < c->n_chunks; k++) {
            uint64_t prev = 0;
            for (int j = 0; s > 0 && j < c->n_chunks; j++) prev += want[s - 1][j];
            want[s][k] = prev + (uint64_t)k + 1;
        }
    for (int r = 0; r < n_runs && !check_failures; r++) {
        for (int s = 0; s < N_STAGES; s++) {
            atomic_store(&c->claimed[s], 0);
            atomic_store(&c->done[s], 0);
        }
        memset(c->value, 0, sizeof c->value);
        threadpool_run(c->pool, chain_share, c);
        for (int s = 0; s < N_STAGES; s++) {
            CHECK(atomic_load(&c->done[s]) == c->n_chunks);
            for (int k = 0; k < c->n_chunks; k++) CHECK(c->value[s][k] == want[s][k]);
        }
    }
    threadpool_destroy(c->pool);
    free(c);
}

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Waits that stay awake are bounded: spin_ns after its last run a pool's
 * workers sleep, and the process uses next to no CPU while it sits idle
 * (a server between requests must not keep a core busy). */
static void test_idle_pool_sleeps(void)
{
    enum { SPIN_MS = 10, IDLE_MS = 200 };
    enc_threadpool *pool;
    CHECK(threadpool_create(4, &pool) == ENC_OK);
    threadpool_set_spin_ns(pool, (int64_t)SPIN_MS * 1000 * 1000);
    share_log *l = calloc(1, sizeof *l);
    threadpool_run(pool, count_share, l);
    sleep_ms(4 * SPIN_MS); /* the spin is over (with room for a late worker) */
    double t0 = cpu_seconds();
    sleep_ms(IDLE_MS);
    double busy = cpu_seconds() - t0;
    /* three workers awake would use up to 3 x IDLE_MS; asleep, about none */
    CHECK(busy < 0.1 * IDLE_MS / 1000.0);
    threadpool_run(pool, count_share, l); /* and they still wake */
    for (int i = 0; i < 4; i++) CHECK(atomic_load(&l->runs[i]) == 2);
    free(l);
    threadpool_destroy(pool);
}

/* A busy loop per CPU and two more, for a fixed time: more runnable
 * threads than cores. */
typedef struct hog {
    pthread_t thread;
    int ms;
} hog;

static void *hog_main(void *arg)
{
    const hog *h = arg;
    double t_end = wall_seconds() + h->ms / 1000.0;
    volatile uint64_t x = 0;
    while (wall_seconds() < t_end)
        for (int i = 0; i < 10000; i++) x = x + 1;
    return NULL;
}

/* Waits that stay awake give way on a machine with more runnable threads
 * than cores: a quiet pool is not contended; with every core busy, a
 * spinning worker loses its CPU and the pool is then contended (its waits
 * sleep after 20 us); a while after the competition ends it is quiet again. */
static void test_contended_waits_short(void)
{
    enc_threadpool *pool;
    CHECK(threadpool_create(2, &pool) == ENC_OK);
    threadpool_set_spin_ns(pool, (int64_t)50 * 1000 * 1000);
    CHECK(!threadpool_contended(pool));
    int n_hogs = enc_cpu_count() + 2;
    hog *hogs = calloc((size_t)n_hogs, sizeof *hogs);
    for (int i = 0; i < n_hogs; i++) {
        hogs[i].ms = 300;
        CHECK(pthread_create(&hogs[i].thread, NULL, hog_main, &hogs[i]) == 0);
    }
    share_log *l = calloc(1, sizeof *l);
    bool contended = false;
    for (int r = 0; r < 200 && !contended; r++) { /* up to ~250 ms of runs a millisecond apart */
        threadpool_run(pool, count_share, l);
        sleep_ms(1);
        contended = threadpool_contended(pool);
    }
    CHECK(contended);
    for (int i = 0; i < n_hogs; i++) pthread_join(hogs[i].thread, NULL);
    sleep_ms(300); /* the mark lasts 100 ms */
    CHECK(!threadpool_contended(pool));
    free(hogs);
    free(l);
    threadpool_destroy(pool);
}

/* --- parallel_rows ------------------------------------------------------- */

enum { SCRATCH_FLOATS = 1000 };

typedef struct rows_log {
    atomic_int *hits; /* per row */
    atomic_int ranges, bad_scratch;
} rows_log;

static void mark_rows(void *ctx, int64_t r0, int64_t r1, float *scratch)
{
    rows_log *l = ctx;
    atomic_fetch_add(&l->ranges, 1);
    for (int i = 0; i < SCRATCH_FLOATS; i++)
        scratch[i] = (float)r0; /* ASan: all of it is ours */
    for (int64_t r = r0; r < r1; r++)
        atomic_fetch_add(&l->hits[r], 1);
    for (int i = 0; i < SCRATCH_FLOATS; i++)
        if (scratch[i] != (float)r0) atomic_fetch_add(&l->bad_scratch, 1);
}

/* rows with a cost per row: small work stays on the caller's thread (one
 * range), large work takes a range per CPU. */
static void test_parallel_rows(int64_t rows, double cost, int want_ranges)
{
    rows_log l = {calloc((size_t)rows + 1, sizeof(atomic_int)), 0, 0};
    CHECK(parallel_rows(rows, cost, SCRATCH_FLOATS, mark_rows, &l) == ENC_OK);
    for (int64_t r = 0; r < rows; r++)
        CHECK(atomic_load(&l.hits[r]) == 1);
    CHECK(atomic_load(&l.bad_scratch) == 0);
    CHECK(atomic_load(&l.ranges) == want_ranges);
    free(l.hits);
}

int main(void)
{
    CHECK(enc_cpu_count() >= 1);
    enc_threadpool *pool;
    CHECK(threadpool_create(0, &pool) != ENC_OK);
    CHECK(threadpool_create(1025, &pool) != ENC_OK);
    threadpool_destroy(NULL);
    test_exactly_once(1, 100, -1);
    test_exactly_once(2, 20000, -1);
    /* waits that never stay awake, and waits that stay awake for 2 ms
     * (yielding the CPU after the first 20 us) */
    test_exactly_once(2, 5000, 0);
    test_exactly_once(2, 5000, 2 * 1000 * 1000);
    /* more threads than cores: workers are descheduled, the others take their shares */
    test_exactly_once(MAX_THREADS, 5000, -1);
    test_exactly_once(MAX_THREADS, 1000, 2 * 1000 * 1000);
    test_dependent_stages(1, 10, -1);
    test_dependent_stages(2, 2000, -1);
    test_dependent_stages(2, 1000, 2 * 1000 * 1000);
    test_dependent_stages(MAX_THREADS, 300, -1);
    test_dependent_stages(MAX_THREADS, 100, 2 * 1000 * 1000);
    test_idle_pool_sleeps();
    test_contended_waits_short();
    int cpus = enc_cpu_count();
    test_parallel_rows(1000, 1.0, 1);
    test_parallel_rows(1000, 1e6, cpus < 1000 ? cpus : 1000);
    test_parallel_rows(3, 1e9, cpus < 3 ? cpus : 3);
    test_parallel_rows(0, 1e9, 0);
    /* a pool that sits idle long enough for its workers to sleep still wakes */
    CHECK(threadpool_create(3, &pool) == ENC_OK);
    share_log *l = calloc(1, sizeof *l);
    for (int r = 0; r < 5; r++) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        threadpool_run(pool, count_share, l);
    }
    for (int i = 0; i < 3; i++) CHECK(atomic_load(&l->runs[i]) == 5);
    free(l);
    threadpool_destroy(pool);
    return check_failures != 0;
}
