/* bench_moe_step.c - where a decode step of the MoE bench geometry goes: its
 * three groups of weight matmuls timed apart, for T tokens, on the CPU.
 *
 * The geometry is `make bench-moe-model`'s (hidden 1024, 16 layers, q/k/v/o
 * 2048/512/512/1024 rows, 64 experts of 256, 8 per token, the Qwen3
 * vocabulary tied), bf16, weights in anonymous memory advised for huge pages
 * as cpu_backend.c holds them, so every figure reads DRAM as the engine does:
 *
 *   lm_head   y[T, 151936] = x[T, 1024] W^T
 *   attention the q/k/v rows (one 3072 x 1024 matrix) and o (1024 x 2048)
 *             of each of the 16 layers
 *   experts   matmul_id over the 16 layers' gate, up (256 x 1024) and down
 *             (1024 x 256) experts, a new random routing each run (8 distinct
 *             experts per token), bytes counted over the union of the chosen
 *
 * Each line: the median ms of RUNS runs, the GB/s of weights read and the
 * GFLOP/s (2 flop a multiply-add), next to a plain read of the lm_head's
 * bytes by the same threads in the same run. At one token the reads set
 * the pace; at sixteen the lm_head's and projections' multiply-adds do.
 * With ENCORE_BF16_ACTIVATIONS=1 every matmul takes bf16 activations
 * (cpu_matmul_bf16x, --bf16-activations; a CPU with AVX512-BF16).
 * Usage: bench_moe_step [runs] [threads] [tokens...]   (default 5 2 1 16) */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_moe.h"
#include "base/dtype.h"
#include "base/threadpool.h"

#include "bench_read.h"
#include "bench_timing.h"

enum {
    D = 1024,
    VOCAB = 151936,
    LAYERS = 16,
    QKV = 3072,
    Q = 2048,
    EXPERTS = 64,
    FF = 256,
    TOP_K = 8,
    MAX_T = 64,
    MAX_RUNS = 64,
};

static uint16_t *bench__weights(size_t n, uint32_t seed)
{
    uint16_t *w = mmap(NULL, n * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) {
        fprintf(stderr, "bench_moe_step: out of memory (%zu bytes)\n", n * 2);
        exit(1);
    }
    madvise(w, n * 2, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        w[i] = enc_f32_to_bf16(((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.1f);
    }
    return w;
}

static int bench__bf16x; /* ENCORE_BF16_ACTIVATIONS=1: x in bf16, cpu_matmul_bf16x */

typedef struct mm_job {
    const void *x; /* f32, or bf16 (bench__bf16x) */
    int64_t n_tokens, k, n_out;
    const uint16_t *w;
    float *y;
} mm_job;

static void mm_task(void *p, int ith, int nth)
{
    const mm_job *j = p;
    if (bench__bf16x)
        cpu_matmul_bf16x(j->x, j->n_tokens, j->k, j->w, j->n_out, j->y, ith, nth);
    else
        cpu_matmul(j->x, j->n_tokens, j->k, j->w, ENC_BF16, j->n_out, j->y, ith, nth);
}

static void id_task(void *p, int ith, int nth)
{
    cpu_matmul_id(p, ith, nth);
}

/* 8 distinct experts for each of T tokens; the number of experts chosen. */
static int bench__route(int32_t *ids, int T, uint32_t *seed)
{
    unsigned char used[EXPERTS] = {0};
    int n_used = 0;
    for (int t = 0; t < T; t++)
        for (int s = 0; s < TOP_K; s++) {
            int e, again;
            do {
                *seed = *seed * 1664525u + 1013904223u;
                e = (int)((*seed >> 8) % EXPERTS);
                again = 0;
                for (int q = 0; q < s; q++)
                    again |= ids[t * TOP_K + q] == e;
            } while (again);
            ids[t * TOP_K + s] = e;
            n_used += !used[e];
            used[e] = 1;
        }
    return n_used;
}

/* The step's matrices, each kind with all layers back to back. */
enum { W_LM_HEAD, W_QKV, W_O, W_GATE, W_UP, W_DOWN, W_KINDS };
static const size_t bench__elems[W_KINDS] = {
    (size_t)VOCAB * D,
    (size_t)LAYERS *QKV *D,
    (size_t)LAYERS *D *Q,
    (size_t)LAYERS *EXPERTS *FF *D,
    (size_t)LAYERS *EXPERTS *FF *D,
    (size_t)LAYERS *EXPERTS *D *FF,
};
typedef struct moe_weights {
    uint16_t *m[W_KINDS];
} moe_weights;

static void bench__line(const char *what, int T, double *ms, int runs, double bytes, double flops)
{
    double m = bench_median(ms, runs);
    printf("%-10s %3d  %9.2f  %9.1f  %9.1f\n", what, T, m, bytes / m / 1e6, flops / m / 1e6);
}

static void bench_tokens(enc_threadpool *tp, const moe_weights *w, int T, int runs, const void *x,
                         float *y, float *y2)
{
    double ms[MAX_RUNS];
    mm_job lm = {x, T, D, VOCAB, w->m[W_LM_HEAD], y};
    threadpool_run(tp, mm_task, &lm); /* warm-up: y paged in */
    for (int r = 0; r < runs; r++) {
        double t0 = bench_wall_s();
        threadpool_run(tp, mm_task, &lm);
        ms[r] = 1e3 * (bench_wall_s() - t0);
    }
    bench__line("lm_head", T, ms, runs, 2.0 * VOCAB * D, 2.0 * T * VOCAB * D);

    for (int r = 0; r < runs; r++) {
        double t0 = bench_wall_s();
        for (int l = 0; l < LAYERS; l++) {
            mm_job a = {x, T, D, QKV, w->m[W_QKV] + (size_t)l * QKV * D, y};
            mm_job b = {x, T, Q, D, w->m[W_O] + (size_t)l * D * Q, y};
            threadpool_run(tp, mm_task, &a);
            threadpool_run(tp, mm_task, &b);
        }
        ms[r] = 1e3 * (bench_wall_s() - t0);
    }
    double att = (double)LAYERS * (QKV * D + D * Q);
    bench__line("attention", T, ms, runs, 2.0 * att, 2.0 * T * att);

    int32_t ids[MAX_T * TOP_K];
    uint32_t seed = 777;
    double used_sum = 0;
    for (int r = 0; r < runs; r++) {
        int used = bench__route(ids, T, &seed);
        used_sum += used;
        double t0 = bench_wall_s();
        for (int l = 0; l < LAYERS; l++) {
            size_t off = (size_t)l * EXPERTS * FF * D;
            cpu_matmul_id_args g = {x,  0,       ids, w->m[W_GATE] + off, ENC_BF16, y, T, TOP_K, D,
                                    FF, EXPERTS, 0,   bench__bf16x};
            cpu_matmul_id_args u = g;
            u.w = w->m[W_UP] + off;
            u.y = y2;
            /* down reads the gate's rows: f32, or (bf16) any rows of the x buffer */
            cpu_matmul_id_args d = {bench__bf16x ? x : (const void *)y,
                                    1,
                                    ids,
                                    w->m[W_DOWN] + off,
                                    ENC_BF16,
                                    y2,
                                    T,
                                    TOP_K,
                                    FF,
                                    D,
                                    EXPERTS,
                                    0,
                                    bench__bf16x};
            threadpool_run(tp, id_task, &g);
            threadpool_run(tp, id_task, &u);
            threadpool_run(tp, id_task, &d);
        }
        ms[r] = 1e3 * (bench_wall_s() - t0);
    }
    double mean_bytes = 3.0 * 2.0 * (used_sum / runs) * FF * D * LAYERS;
    bench__line("experts", T, ms, runs, mean_bytes,
                2.0 * 3.0 * T * TOP_K * (double)FF * D * LAYERS);
    printf("%-10s %3d  %9s  (%.1f of %d experts a layer on average)\n", "", T, "", used_sum / runs,
           EXPERTS);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5, nth = argc > 2 ? atoi(argv[2]) : 2;
    runs = runs < 3 ? 3 : runs > MAX_RUNS ? MAX_RUNS : runs;
    if (nth < 1 || nth > 64) {
        fprintf(stderr, "bench_moe_step: threads must be 1..64, not '%s'\n", argv[2]);
        return 2;
    }
    int tokens[16] = {1, 16}, n_tok = 2;
    if (argc > 3) {
        n_tok = 0;
        for (int i = 3; i < argc && n_tok < 16; i++) {
            int t = atoi(argv[i]);
            if (t < 1 || t > MAX_T) {
                fprintf(stderr, "bench_moe_step: tokens must be 1..%d, not '%s'\n", MAX_T, argv[i]);
                return 2;
            }
            tokens[n_tok++] = t;
        }
    }
    const char *bx = getenv("ENCORE_BF16_ACTIVATIONS");
    bench__bf16x = bx && !strcmp(bx, "1");
    if (bench__bf16x && !cpu_bf16_activations_supported()) {
        fprintf(stderr,
                "bench_moe_step: ENCORE_BF16_ACTIVATIONS=1 needs AVX512-BF16 (%s kernels)\n",
                cpu_isa_name(cpu_kernels_init()));
        return 2;
    }
    printf("MoE bench geometry, bf16, %d threads, median of %d runs; kernels_init: %s%s\n", nth,
           runs, cpu_isa_name(cpu_kernels_init()), bench__bf16x ? ", bf16 activations" : "");
    moe_weights w;
    for (int i = 0; i < W_KINDS; i++)
        w.m[i] = bench__weights(bench__elems[i], (uint32_t)i + 1);
    float *x = malloc((size_t)MAX_T * TOP_K * Q * sizeof *x);
    float *y = malloc((size_t)MAX_T * VOCAB * sizeof *y);
    float *y2 = malloc((size_t)MAX_T * TOP_K * D * sizeof *y2);
    enc_threadpool *tp;
    if (!x || !y || !y2 || threadpool_create(nth, &tp) != ENC_OK) {
        fprintf(stderr, "bench_moe_step: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < (size_t)MAX_T * TOP_K * Q; i++)
        x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    uint16_t *xb = malloc((size_t)MAX_T * TOP_K * Q * sizeof *xb); /* x rounded to bf16 */
    if (!xb) {
        fprintf(stderr, "bench_moe_step: out of memory\n");
        return 1;
    }
    cpu_quantize_rows(x, 1, (int64_t)MAX_T * TOP_K * Q, ENC_BF16, xb, 0, 1);

    double rd[MAX_RUNS];
    bench_read_job rj = {(const uint64_t *)w.m[W_LM_HEAD], bench__elems[W_LM_HEAD] / 4, {0}};
    threadpool_run(tp, bench_read_task, &rj);
    for (int r = 0; r < runs; r++) {
        double t0 = bench_wall_s();
        threadpool_run(tp, bench_read_task, &rj);
        rd[r] = 1e3 * (bench_wall_s() - t0);
    }
    printf("%-10s %3s  %9s  %9s  %9s\n", "", "T", "ms", "GB/s", "GFLOP/s");
    bench__line("read", 0, rd, runs, 2.0 * VOCAB * D, 0);
    for (int i = 0; i < n_tok; i++)
        bench_tokens(tp, &w, tokens[i], runs, bench__bf16x ? (const void *)xb : x, y, y2);
    threadpool_destroy(tp);
    free(x), free(xb), free(y), free(y2);
    for (int i = 0; i < W_KINDS; i++)
        munmap(w.m[i], bench__elems[i] * 2);
    return 0;
}
