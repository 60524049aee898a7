/* bench_timing.h - the clocks and the median the micro-benchmarks under
 * bench/ share: wall time, the calling thread's CPU time (which other
 * people's load on a shared machine disturbs less), and the median of a
 * set of timed runs. */
#ifndef ENC_BENCH_TIMING_H
#define ENC_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double bench_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double bench_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0, n) (n >= 1); v is sorted in place. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench__cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
