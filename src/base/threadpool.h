/* threadpool.h - a persistent fork-join thread pool.
 *
 * threadpool_run(pool, fn, ctx) calls fn(ctx, ith, nth) once for every ith in
 * [0, nth) in parallel (the caller runs ith = 0) and returns when all are
 * done. Workers spin briefly between runs, so the hundreds of runs of one
 * decode step cost no system calls, then sleep on a condition variable. */
#ifndef ENC_BASE_THREADPOOL_H
#define ENC_BASE_THREADPOOL_H

#include "base/status.h"

typedef void (*threadpool_task_fn)(void *ctx, int ith, int nth);
typedef struct enc_threadpool enc_threadpool;

/* n_threads >= 1 (1 means the caller alone, no worker threads). */
enc_status threadpool_create(int n_threads, enc_threadpool **out);
void threadpool_destroy(enc_threadpool *pool); /* NULL is a no-op */
int threadpool_size(const enc_threadpool *pool);
void threadpool_run(enc_threadpool *pool, threadpool_task_fn fn, void *ctx);
/* Inside a run: wait until all nth threads of the run have reached it. Every
 * thread of the run must call it the same number of times. */
void threadpool_barrier(enc_threadpool *pool);

/* The number of CPUs this process may run on (at least 1). */
int enc_cpu_count(void);

#endif
