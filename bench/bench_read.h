/* bench_read.h - the plain streaming read the micro-benchmarks under bench/
 * set their kernels beside: a thread pool's shares each sum their part of a
 * buffer with 8 independent lanes (no SIMD, no prefetch). */
#ifndef ENC_BENCH_READ_H
#define ENC_BENCH_READ_H

#include <stddef.h>
#include <stdint.h>

enum { BENCH_READ_MAX_THREADS = 64 };

typedef struct bench_read_job {
    const uint64_t *p;
    size_t n; /* words */
    uint64_t sink[BENCH_READ_MAX_THREADS];
} bench_read_job;

/* A threadpool_task_fn: the ith share of job (a bench_read_job). */
static inline void bench_read_task(void *job, int ith, int nth)
{
    bench_read_job *j = job;
    size_t per = (j->n / (size_t)nth) & ~(size_t)7, i0 = per * (size_t)ith;
    uint64_t l[8] = {0};
    for (size_t i = i0; i < i0 + per; i += 8)
        for (int k = 0; k < 8; k++)
            l[k] += j->p[i + k];
    j->sink[ith % BENCH_READ_MAX_THREADS] = l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}

#endif
