/* parallel_rows.h - one-off work over the rows of a matrix, split across
 * the machine's CPUs: weights quantized at load or into a GGUF file. */
#ifndef ENC_BASE_PARALLEL_ROWS_H
#define ENC_BASE_PARALLEL_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Rows [r0, r1) of the work; scratch: this thread's own floats. */
typedef void (*parallel_rows_fn)(void *ctx, int64_t r0, int64_t r1, float *scratch);

/* fn over consecutive ranges covering [0, rows), each range on one thread,
 * up to enc_cpu_count() threads at once (the caller's alone when the work,
 * rows * cost_per_row, is small). fn must not fail; the call fails only
 * where threads or scratch cannot be had. */
enc_status parallel_rows(int64_t rows, double cost_per_row, size_t scratch_floats,
                         parallel_rows_fn fn, void *ctx);

#endif
