/* matmul_task.h - cpu_matmul as a pool task over a context struct, for the
 * kernel tests (test_kernels, test_quant_kernels) that run it at several
 * thread counts. */
#ifndef ENC_TESTS_MATMUL_TASK_H
#define ENC_TESTS_MATMUL_TASK_H

#include <stdint.h>

#include "backend/cpu/kernels.h"

typedef struct mm_ctx {
    const void *x; /* f32 rows, or activations already in blocks */
    int64_t n_tokens, k;
    const void *w;
    enc_dtype dt;
    int64_t n_out;
    float *y;
} mm_ctx;

static void mm_task(void *p, int ith, int nth)
{
    mm_ctx *c = p;
    cpu_matmul(c->x, c->n_tokens, c->k, c->w, c->dt, c->n_out, c->y, ith, nth);
}

#endif
