/* threadpool.c - a persistent fork-join thread pool: spin, then sleep. */
#define _GNU_SOURCE
#include "base/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define tp__pause() _mm_pause()
#else
#define tp__pause() ((void)0)
#endif

/* Waiting is spin, then yield, then (workers only) sleep. Pure spinning is
 * fastest on an idle machine, but when the machine is oversubscribed the
 * thread being waited for may not be running: yielding hands it the core. */
enum {
    TP__SPIN_ROUNDS = 1 << 10,  /* pause-only rounds before yielding */
    TP__YIELD_ROUNDS = 1 << 12, /* yielding rounds before a worker sleeps */
};

static void tp__backoff(int round)
{
    if (round < TP__SPIN_ROUNDS) tp__pause();
    else sched_yield();
}

typedef struct tp__worker {
    enc_threadpool *pool;
    int ith;
    pthread_t thread;
} tp__worker;

struct enc_threadpool {
    int n_threads;
    tp__worker *workers; /* [n_threads - 1] */
    threadpool_task_fn fn;
    void *ctx;
    atomic_uint generation; /* bumped once per run */
    atomic_int n_done;      /* workers finished with the current run */
    atomic_bool stop;
    atomic_int barrier_count;    /* threads arrived at the current barrier */
    atomic_uint barrier_phase;   /* bumped when the last one arrives */
    pthread_mutex_t mutex;
    pthread_cond_t wake;
};

static void *tp__worker_main(void *arg)
{
    tp__worker *w = arg;
    enc_threadpool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        for (int round = 0; atomic_load_explicit(&pool->generation, memory_order_acquire) == seen &&
                            !atomic_load(&pool->stop) && round < TP__SPIN_ROUNDS + TP__YIELD_ROUNDS;
             round++)
            tp__backoff(round);
        if (atomic_load_explicit(&pool->generation, memory_order_acquire) == seen) {
            pthread_mutex_lock(&pool->mutex);
            while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->mutex);
            pthread_mutex_unlock(&pool->mutex);
        }
        if (atomic_load(&pool->stop)) break;
        seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        pool->fn(pool->ctx, w->ith, pool->n_threads);
        atomic_fetch_add_explicit(&pool->n_done, 1, memory_order_release);
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
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->n_done, 0);
    atomic_init(&pool->stop, false);
    atomic_init(&pool->barrier_count, 0);
    atomic_init(&pool->barrier_phase, 0);
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    if (n_threads > 1) {
        pool->workers = calloc((size_t)n_threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            threadpool_destroy(pool);
            return enc_fail(ENC_ERR_OUT_OF_MEMORY, "thread pool");
        }
    }
    for (int i = 0; i < n_threads - 1; i++) {
        tp__worker *w = &pool->workers[i];
        w->pool = pool;
        w->ith = i + 1;
        if (pthread_create(&w->thread, NULL, tp__worker_main, w) != 0) {
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
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->stop, true);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    for (int i = 0; i < pool->n_threads - 1; i++) pthread_join(pool->workers[i].thread, NULL);
    pthread_mutex_destroy(&pool->mutex);
    pthread_cond_destroy(&pool->wake);
    free(pool->workers);
    free(pool);
}

int threadpool_size(const enc_threadpool *pool) { return pool->n_threads; }

void threadpool_run(enc_threadpool *pool, threadpool_task_fn fn, void *ctx)
{
    if (pool->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store_explicit(&pool->n_done, 0, memory_order_relaxed);
    pthread_mutex_lock(&pool->mutex);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    fn(ctx, 0, pool->n_threads);
    for (int round = 0; atomic_load_explicit(&pool->n_done, memory_order_acquire) != pool->n_threads - 1;
         round++)
        tp__backoff(round);
}

void threadpool_barrier(enc_threadpool *pool)
{
    if (pool->n_threads == 1) return;
    unsigned phase = atomic_load_explicit(&pool->barrier_phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&pool->barrier_count, 1, memory_order_acq_rel) == pool->n_threads - 1) {
        atomic_store_explicit(&pool->barrier_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&pool->barrier_phase, 1, memory_order_release);
        return;
    }
    for (int round = 0; atomic_load_explicit(&pool->barrier_phase, memory_order_acquire) == phase; round++)
        tp__backoff(round);
}
