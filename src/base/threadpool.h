/* threadpool.h - a persistent thread pool whose runs never wait for a thread
 * that is not running.
 *
 * threadpool_run(pool, fn, ctx) calls fn(ctx, ith, nth) once for every share
 * ith in [0, nth), nth = the pool's size, and returns when all are done. The
 * shares are claimed, not assigned: the caller and each worker that wakes in
 * time take the next unclaimed share until none is left. On an idle machine
 * every thread takes one share; on a busy one, where a worker may not be
 * scheduled for milliseconds, the threads that do run take its share too and
 * the run ends without it. So a share must not wait for another share of the
 * same run (one thread may run both, one after the other).
 *
 * Waiting (a worker for the next run, the caller for the last share, a share
 * for progress made by another: threadpool_wait_for) spins for a few
 * microseconds, about what blocking and waking cost, then stays awake
 * yielding its CPU up to the pool's spin time (threadpool_set_spin_ns), then
 * sleeps in the kernel (a futex on Linux) until woken: a waiting thread
 * gives its core to a thread that could use it, and an idle pool sleeps. */
#ifndef ENC_BASE_THREADPOOL_H
#define ENC_BASE_THREADPOOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

typedef void (*threadpool_task_fn)(void *ctx, int ith, int nth);
typedef struct enc_threadpool enc_threadpool;

/* n_threads >= 1 (1 means the caller alone, no worker threads). */
enc_status threadpool_create(int n_threads, enc_threadpool **out);
void threadpool_destroy(enc_threadpool *pool); /* NULL is a no-op */
int threadpool_size(const enc_threadpool *pool);
/* How long a waiting thread stays awake before it sleeps, in ns (clamped
 * to [0, 1 s]; a new pool: 20 us). The first 20 us spin, the rest yield the
 * CPU between checks. Longer pays where a woken thread runs late (a
 * virtual machine); an idle pool is asleep spin_ns after its last run.
 * While the pool is contended (below) waits sleep after 20 us. */
void threadpool_set_spin_ns(enc_threadpool *pool, int64_t spin_ns);
/* Whether a waiting thread of the pool lost its CPU (to another process or
 * thread) in the last 100 ms, and so its waits are short for now. */
bool threadpool_contended(enc_threadpool *pool);
/* Not reentrant: one run at a time, from one caller thread. */
void threadpool_run(enc_threadpool *pool, threadpool_task_fn fn, void *ctx);

/* --- progress between the shares of a run ---------------------------------
 * For work whose parts depend on each other (a recorded step: each call
 * reads what earlier calls wrote), shares publish progress in counters of
 * their own and wait on each other's: */

/* Wait until *counter >= target: spin briefly, then sleep until a
 * threadpool_advance on this pool. */
void threadpool_wait_for(enc_threadpool *pool, atomic_int *counter, int target);
/* *counter += n (release), waking the threads asleep in threadpool_wait_for
 * (a load and no system call when none sleeps). Returns the new value. */
int threadpool_advance(enc_threadpool *pool, atomic_int *counter, int n);

/* The number of CPUs this process may run on (at least 1). */
int enc_cpu_count(void);

#endif
