/* threadpool.c - a persistent thread pool: shares claimed from one atomic
 * word, waits that spin briefly and then sleep on a futex.
 *
 * A run r is published in `claim` as (r << 32 | next unclaimed share). A
 * thread takes share i by a compare-and-swap from (r, i) to (r, i + 1); a
 * worker that wakes after run r is over finds another run number, or no
 * share left, and touches nothing of r's (its fn and ctx are read only once
 * a share is held, and a run cannot end while one is). So the caller waits
 * for shares to be done, never for threads to arrive.
 *
 *   claim     [ run : 32 | next share : 32 ]   shares of the open run
 *   run_word  the last run opened; idle workers sleep on it
 *   done      shares of the open run finished
 *   progress  bumped by threadpool_advance when someone sleeps; waiters
 *             sleep on it */
#define _GNU_SOURCE
#include "base/threadpool.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define tp__pause() _mm_pause()
#else
#define tp__pause() ((void)0)
#endif

/* How a waiting thread waits. For the first TP__SPIN_NS it spins on pause
 * instructions: about what sleeping and being woken cost on bare metal (two
 * system calls and a context switch, a few microseconds), so the hundreds
 * of short waits of one decode step cost no system call. Then, up to the
 * pool's spin_ns (threadpool_set_spin_ns), it stays awake but yields the
 * CPU at every clock read, so another runnable thread on its core (the
 * caller, a competing process) runs first; only then does it sleep on a
 * futex. Staying awake pays where waking is slow: on a virtual machine a
 * sleeping vCPU can take a tenth of a millisecond or more to run again
 * (the hypervisor), late for a matmul share of half a millisecond. It is
 * bounded, so an idle pool (a server between requests) sleeps spin_ns
 * after its last run and burns no core.
 *
 * It pays only while the pool has its cores to itself. On a machine with
 * more runnable threads than cores a spinning thread spends its fair share
 * of CPU time on spinning, and the scheduler then runs it late just when a
 * run needs it (a thread that slept wakes ahead of the others). So a
 * thread that finds a gap of TP__PREEMPTED_NS between two clock reads of
 * its spin (it lost its CPU, or its yield gave the CPU to another thread)
 * marks the pool contended: for TP__CONTENDED_NS every wait sleeps after
 * TP__SPIN_NS, as if spin_ns were 20 us. */
enum {
    TP__SPIN_NS = 20000,
    TP__SPIN_CHECK = 32,               /* pauses between clock reads (about a microsecond) */
    TP__SPIN_DEFAULT_NS = TP__SPIN_NS, /* spin_ns of a new pool */
    TP__PREEMPTED_NS = 50000,          /* a gap between clock reads: the CPU was taken */
    TP__CONTENDED_NS = 100000000,      /* then waits stay short this long: 100 ms */
};
#define TP__SPIN_MAX_NS INT64_C(1000000000)

/* --- sleeping and waking ----------------------------------------------------- */

static void tp__sleep(atomic_uint *word, unsigned seen)
{
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    (void)word, (void)seen;
    sched_yield();
#endif
}

static void tp__wake_all(atomic_uint *word)
{
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)word;
#endif
}

static int64_t tp__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How long a wait starting at `now` stays awake. */
static int64_t tp__spin_limit(int64_t spin_ns, _Atomic int64_t *contended_until, int64_t now)
{
    if (now < atomic_load_explicit(contended_until, memory_order_relaxed) && spin_ns > TP__SPIN_NS)
        return TP__SPIN_NS;
    return spin_ns;
}

/* Whether the gap since the last clock read of a spin (`last`, 0: none yet)
 * says the thread lost its CPU; if so, the pool is contended from now. */
static bool tp__lost_cpu(_Atomic int64_t *contended_until, int64_t last, int64_t now)
{
    if (!last || now - last < TP__PREEMPTED_NS) return false;
    atomic_store_explicit(contended_until, now + TP__CONTENDED_NS, memory_order_relaxed);
    return true;
}

/* Wait awake until done(arg) or the wait's limit has passed (see
 * TP__SPIN_NS); returns done(arg). A gap between clock reads, or between
 * the last one and the end of the wait, marks the pool contended. */
static bool tp__spin(int64_t spin_ns, _Atomic int64_t *contended_until, bool (*done)(const void *),
                     const void *arg)
{
    int64_t start = 0, last = 0, limit = 0;
    for (int i = 1;; i++) {
        if (done(arg)) {
            if (last) tp__lost_cpu(contended_until, last, tp__now_ns());
            return true;
        }
        tp__pause();
        if (i % TP__SPIN_CHECK) continue;
        int64_t now = tp__now_ns();
        if (!start)
            start = now, limit = tp__spin_limit(spin_ns, contended_until, now);
        else if (tp__lost_cpu(contended_until, last, now))
            limit = tp__spin_limit(spin_ns, contended_until, now);
        last = now;
        if (now - start >= limit) return done(arg);
        if (now - start >= TP__SPIN_NS) sched_yield();
    }
}

/* --- the pool ----------------------------------------------------------------- */

typedef struct tp__worker {
    enc_threadpool *pool;
    pthread_t thread;
} tp__worker;

struct enc_threadpool {
    int n_threads;
    tp__worker *workers; /* [n_threads - 1] */
    unsigned n_runs;     /* runs opened so far (the caller's alone) */
    _Atomic(threadpool_task_fn) fn;
    _Atomic(void *) ctx;
    _Atomic uint64_t claim;
    atomic_uint run_word;
    atomic_int n_idle_sleepers;
    atomic_int done;
    atomic_uint progress;
    atomic_int n_progress_sleepers;
    atomic_bool stop;
    _Atomic int64_t spin_ns;         /* how long a wait stays awake (tp__spin) */
    _Atomic int64_t contended_until; /* before this time (tp__now_ns), waits stay short */
};

/* Take and run shares of run r until none is left. */
static void tp__work(enc_threadpool *pool, unsigned r)
{
    uint64_t w = atomic_load_explicit(&pool->claim, memory_order_acquire);
    for (;;) {
        if ((unsigned)(w >> 32) != r || (uint32_t)w >= (uint32_t)pool->n_threads) return;
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &w, w + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* w now holds the word's current value */
        threadpool_task_fn fn = atomic_load_explicit(&pool->fn, memory_order_relaxed);
        fn(atomic_load_explicit(&pool->ctx, memory_order_relaxed), (int)(uint32_t)w, pool->n_threads);
        threadpool_advance(pool, &pool->done, 1);
        w = atomic_load_explicit(&pool->claim, memory_order_acquire);
    }
}

typedef struct tp__idle {
    enc_threadpool *pool;
    unsigned seen;
} tp__idle;

static bool tp__idle_over(const void *arg)
{
    const tp__idle *w = arg;
    return atomic_load(&w->pool->run_word) != w->seen || atomic_load(&w->pool->stop);
}

static void *tp__worker_main(void *arg)
{
    enc_threadpool *pool = ((tp__worker *)arg)->pool;
    tp__idle idle = {pool, 0};
    for (;;) {
        if (!tp__spin(atomic_load_explicit(&pool->spin_ns, memory_order_relaxed),
                      &pool->contended_until, tp__idle_over, &idle)) {
            atomic_fetch_add(&pool->n_idle_sleepers, 1);
            while (!tp__idle_over(&idle)) tp__sleep(&pool->run_word, idle.seen);
            atomic_fetch_sub(&pool->n_idle_sleepers, 1);
        }
        if (atomic_load(&pool->stop)) break;
        idle.seen = atomic_load(&pool->run_word);
        tp__work(pool, idle.seen);
    }
    return NULL;
}

int enc_cpu_count(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

enc_status threadpool_create(int n_threads, enc_threadpool **out)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "thread count %d out of range [1, 1024]", n_threads);
    enc_threadpool *pool = calloc(1, sizeof *pool);
    if (!pool) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "thread pool");
    pool->n_threads = n_threads;
    atomic_init(&pool->fn, NULL);
    atomic_init(&pool->ctx, NULL);
    atomic_init(&pool->claim, 0);
    atomic_init(&pool->run_word, 0);
    atomic_init(&pool->n_idle_sleepers, 0);
    atomic_init(&pool->done, 0);
    atomic_init(&pool->progress, 0);
    atomic_init(&pool->n_progress_sleepers, 0);
    atomic_init(&pool->stop, false);
    atomic_init(&pool->spin_ns, (int64_t)TP__SPIN_DEFAULT_NS);
    atomic_init(&pool->contended_until, 0);
    if (n_threads > 1) {
        pool->workers = calloc((size_t)n_threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            threadpool_destroy(pool);
            return enc_fail(ENC_ERR_OUT_OF_MEMORY, "thread pool");
        }
    }
    for (int i = 0; i < n_threads - 1; i++) {
        pool->workers[i].pool = pool;
        if (pthread_create(&pool->workers[i].thread, NULL, tp__worker_main, &pool->workers[i]) != 0) {
            pool->n_threads = i + 1; /* join only the threads that started */
            threadpool_destroy(pool);
            return enc_fail(ENC_ERR_OUT_OF_MEMORY, "cannot start worker thread %d", i + 1);
        }
    }
    *out = pool;
    return ENC_OK;
}

void threadpool_destroy(enc_threadpool *pool)
{
    if (!pool) return;
    atomic_store(&pool->stop, true);
    atomic_fetch_add(&pool->run_word, 1);
    tp__wake_all(&pool->run_word);
    for (int i = 0; i < pool->n_threads - 1; i++) pthread_join(pool->workers[i].thread, NULL);
    free(pool->workers);
    free(pool);
}

int threadpool_size(const enc_threadpool *pool) { return pool->n_threads; }

void threadpool_set_spin_ns(enc_threadpool *pool, int64_t spin_ns)
{
    if (spin_ns < 0) spin_ns = 0;
    if (spin_ns > TP__SPIN_MAX_NS) spin_ns = TP__SPIN_MAX_NS;
    atomic_store_explicit(&pool->spin_ns, spin_ns, memory_order_relaxed);
}

bool threadpool_contended(enc_threadpool *pool)
{
    return tp__now_ns() < atomic_load_explicit(&pool->contended_until, memory_order_relaxed);
}

void threadpool_run(enc_threadpool *pool, threadpool_task_fn fn, void *ctx)
{
    if (pool->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    unsigned r = ++pool->n_runs;
    if (r == 0) r = ++pool->n_runs; /* run 0 is the state before any run */
    atomic_store_explicit(&pool->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool->ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->claim, (uint64_t)r << 32, memory_order_release);
    atomic_store(&pool->run_word, r);
    if (atomic_load(&pool->n_idle_sleepers) > 0) tp__wake_all(&pool->run_word);
    tp__work(pool, r);
    threadpool_wait_for(pool, &pool->done, pool->n_threads);
}

/* --- progress between shares -------------------------------------------------- */

typedef struct tp__target {
    atomic_int *counter;
    int target;
} tp__target;

static bool tp__reached(const void *arg)
{
    const tp__target *t = arg;
    return atomic_load_explicit(t->counter, memory_order_acquire) >= t->target;
}

void threadpool_wait_for(enc_threadpool *pool, atomic_int *counter, int target)
{
    tp__target t = {counter, target};
    if (tp__spin(atomic_load_explicit(&pool->spin_ns, memory_order_relaxed), &pool->contended_until,
                 tp__reached, &t))
        return;
    /* Sleep. The order (announce, then check, then sleep on the value read
     * before checking) pairs with threadpool_advance's (add, then look for
     * sleepers): either this check sees the new count, or the advance sees
     * this sleeper and bumps `progress`, which the futex compares. */
    atomic_fetch_add(&pool->n_progress_sleepers, 1);
    for (;;) {
        unsigned seen = atomic_load(&pool->progress);
        if (atomic_load(counter) >= target) break;
        tp__sleep(&pool->progress, seen);
    }
    atomic_fetch_sub(&pool->n_progress_sleepers, 1);
}

int threadpool_advance(enc_threadpool *pool, atomic_int *counter, int n)
{
    int now = atomic_fetch_add(counter, n) + n;
    if (atomic_load(&pool->n_progress_sleepers) > 0) {
        atomic_fetch_add(&pool->progress, 1);
        tp__wake_all(&pool->progress);
    }
    return now;
}
