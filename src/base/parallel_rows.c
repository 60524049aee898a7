/* parallel_rows.c - a thread pool made for one piece of work, its rows in
 * as many ranges as threads (parallel_rows.h). */
#include "base/parallel_rows.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "base/threadpool.h"

/* Below this much work (rows * cost_per_row) the caller's thread does it all:
 * starting threads would cost more than they save. */
#define PARALLEL_ROWS__MIN_WORK (1 << 20)

typedef struct {
    int64_t rows;
    size_t scratch_floats;
    parallel_rows_fn fn;
    void *ctx;
    atomic_int out_of_memory;
} parallel_rows__run;

static void parallel_rows__share(void *ctx, int ith, int nth)
{
    parallel_rows__run *run = ctx;
    int64_t r0 = run->rows * ith / nth, r1 = run->rows * (ith + 1) / nth;
    if (r0 == r1) return;
    float *scratch = malloc(run->scratch_floats * sizeof *scratch + 1);
    if (!scratch) {
        atomic_store(&run->out_of_memory, 1);
        return;
    }
    run->fn(run->ctx, r0, r1, scratch);
    free(scratch);
}

enc_status parallel_rows(int64_t rows, double cost_per_row, size_t scratch_floats,
                         parallel_rows_fn fn, void *ctx)
{
    parallel_rows__run run = {rows, scratch_floats, fn, ctx, 0};
    int n = (double)rows * cost_per_row < PARALLEL_ROWS__MIN_WORK ? 1 : enc_cpu_count();
    n = (int64_t)n > rows ? (int)(rows > 0 ? rows : 1) : n;
    enc_threadpool *pool = NULL;
    if (n > 1 && threadpool_create(n, &pool) != ENC_OK) n = 1, pool = NULL;
    if (pool) {
        threadpool_run(pool, parallel_rows__share, &run);
        threadpool_destroy(pool);
    } else {
        parallel_rows__share(&run, 0, 1);
    }
    if (atomic_load(&run.out_of_memory))
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "scratch of %zu floats", scratch_floats);
    return ENC_OK;
}
