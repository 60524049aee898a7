/* bench_quant.c - speed of the CPU matmul over block-quantized weights, per
 * type, on one thread, timed in the thread's own CPU time (so that other
 * work on a shared machine slows the wall clock, not the figure).
 *
 *   decode:  y[1, N] = x[1, K] W^T with W [N, K] hot in cache (N = 512,
 *            K = 1024): GB/s of weight blocks the kernel can consume, its
 *            ceiling when memory is not the limit.
 *            "cold": y[1, N'] over a 256 MiB W, which streams from DRAM
 *            (page faults of the first touch are outside the timing).
 *            "cold x8/rows": for a type with both layouts, the ratio of
 *            the two cold speeds in calls that alternate (rows, x8, rows,
 *            ...), the median of the runs' ratios: a slow spell of a shared
 *            machine slows both halves of a pair, so the ratio stays.
 *   prefill: y[64, N] = x[64, K] W^T: GMAC/s (multiply-adds per second).
 *   quantize: the activations of a [64, K] f32 x into the dot type: GB/s of
 *            f32 read.
 *
 * Every figure is the median of RUNS timed runs after one warm-up, for the
 * ISA chosen by ENCORE_CPU_ISA (else the widest the CPU runs). Q4_0, Q8_0,
 * Q4_K, Q5_K and Q6_K run twice: in the row layout, and repacked as the CPU
 * backend lays them out at load ("x8": cpu_repack_matrix, cpu_matmul_packed).
 * Usage: bench_quant [runs [TYPE ...]]   (runs default 5, at least 3; the
 * types by name, e.g. Q6_K, default all) */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/repack.h"
#include "base/dtype.h"
#include "base/quant.h"

#include "bench_timing.h"

enum { K = 1024, N = 512, T_PREFILL = 64, MAX_RUNS = 99 };
static const size_t COLD_BYTES = (size_t)256 << 20; /* above any L3 */

static float frand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Seconds per call of cpu_matmul over n_tokens tokens (median of runs). */
typedef void (*matmul_fn)(const void *, int64_t, int64_t, const void *, enc_dtype, int64_t, float *,
                          int, int);

static double time_matmul(matmul_fn mm, const void *x8, int64_t n_tokens, const void *w,
                          enc_dtype dt, float *y, int calls, int runs)
{
    double t[MAX_RUNS];
    for (int r = -1; r < runs; r++) {
        double t0 = bench_cpu_s();
        for (int c = 0; c < calls; c++)
            mm(x8, n_tokens, K, w, dt, N, y, 0, 1);
        if (r >= 0) t[r] = (bench_cpu_s() - t0) / calls;
    }
    return bench_median(t, runs);
}

static double time_quantize(const float *x, enc_dtype dq, void *x8, int calls, int runs)
{
    double t[MAX_RUNS];
    for (int r = -1; r < runs; r++) {
        double t0 = bench_cpu_s();
        for (int c = 0; c < calls; c++)
            cpu_quantize_rows(x, T_PREFILL, K, dq, x8, 0, 1);
        if (r >= 0) t[r] = (bench_cpu_s() - t0) / calls;
    }
    return bench_median(t, runs);
}

/* W [N, K] of dt from the generator's state s. */
static unsigned char *make_weights(enc_dtype dt, uint32_t *s)
{
    size_t wrb = enc_dtype_row_bytes(dt, K);
    unsigned char *w = malloc(wrb * N);
    for (int n = 0; n < N; n++) {
        float row[K];
        for (int j = 0; j < K; j++)
            row[j] = frand(s);
        quant_quantize_row(dt, row, w + (size_t)n * wrb, K);
    }
    return w;
}

/* A COLD_BYTES matrix of copies of w's N rows (its groups, when packed:
 * N is a multiple of 8); *n_cold its rows, whole groups. */
static unsigned char *make_cold(const unsigned char *w, size_t wrb, int64_t *n_cold)
{
    int64_t n = (int64_t)(COLD_BYTES / wrb);
    n -= n % CPU_REPACK_ROWS;
    unsigned char *wc = malloc(wrb * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        memcpy(wc + (size_t)i * wrb, w + (size_t)(i % N) * wrb, wrb);
    *n_cold = n;
    return wc;
}

/* Seconds of one one-token call over the cold matrix wc [n_cold, K]. */
static double time_cold(matmul_fn mm, const void *x8, const void *wc, enc_dtype dt, int64_t n_cold,
                        float *yc)
{
    double t0 = bench_cpu_s();
    mm(x8, 1, K, wc, dt, n_cold, yc, 0, 1);
    return bench_cpu_s() - t0;
}

/* w [rows, K] in place into the interleaved layout. */
static void repack(unsigned char *w, enc_dtype dt, int64_t rows)
{
    void *tmp = malloc(cpu_repack_tmp_bytes(dt, K));
    cpu_repack_matrix(w, dt, rows, K, false, tmp);
    free(tmp);
}

static void bench_type(enc_dtype dt, int packed, int runs)
{
    matmul_fn mm = packed ? cpu_matmul_packed : cpu_matmul;
    enc_dtype dq = quant_dot_dtype(dt);
    size_t wrb = enc_dtype_row_bytes(dt, K), xrb = enc_dtype_row_bytes(dq, K);
    float *xf = malloc(sizeof(float) * K * T_PREFILL), *y = malloc(sizeof(float) * N * T_PREFILL);
    unsigned char *x8 = malloc(xrb * T_PREFILL);
    uint32_t s = 12345;
    for (int64_t i = 0; i < (int64_t)K * T_PREFILL; i++)
        xf[i] = frand(&s);
    unsigned char *w = make_weights(dt, &s);
    double tq = time_quantize(xf, dq, x8, 20, runs);
    if (packed) repack(w, dt, N);
    double td = time_matmul(mm, x8, 1, w, dt, y, 200, runs);
    double tp = time_matmul(mm, x8, T_PREFILL, w, dt, y, 4, runs);
    /* cold: one call over the whole 256 MiB matrix, which streams from DRAM */
    int64_t n_cold;
    unsigned char *wc = make_cold(w, wrb, &n_cold);
    float *yc = malloc(sizeof(float) * (size_t)n_cold);
    double tc[MAX_RUNS];
    for (int r = -1; r < runs; r++) {
        double t = time_cold(mm, x8, wc, dt, n_cold, yc);
        if (r >= 0) tc[r] = t;
    }
    double tcold = bench_median(tc, runs);
    free(wc), free(yc);
    printf(
        "%-4s%-3s decode %6.2f GB/s  cold %6.2f GB/s  prefill %6.2f GMAC/s  quantize %6.2f GB/s\n",
        enc_dtype_name(dt), packed ? "x8" : "", (double)(wrb * N) / td * 1e-9,
        (double)(wrb * (size_t)n_cold) / tcold * 1e-9, (double)K * N * T_PREFILL / tp * 1e-9,
        (double)sizeof(float) * K * T_PREFILL / tq * 1e-9);
    free(xf), free(y), free(w), free(x8);
}

/* The cold ratio x8 / rows of dt: the two layouts of the same matrix in
 * alternating calls, the median of the runs' ratios of speed. */
static void bench_cold_pair(enc_dtype dt, int runs)
{
    enc_dtype dq = quant_dot_dtype(dt);
    size_t wrb = enc_dtype_row_bytes(dt, K);
    uint32_t s = 12345;
    float xf[K];
    for (int j = 0; j < K; j++)
        xf[j] = frand(&s);
    unsigned char *x8 = malloc(enc_dtype_row_bytes(dq, K));
    quant_quantize_row(dq, xf, x8, K);
    unsigned char *w = make_weights(dt, &s);
    int64_t n_cold;
    unsigned char *wr = make_cold(w, wrb, &n_cold);
    repack(w, dt, N);
    unsigned char *wp = make_cold(w, wrb, &n_cold);
    float *yc = malloc(sizeof(float) * (size_t)n_cold);
    double ratio[MAX_RUNS];
    for (int r = -1; r < runs; r++) {
        double tr = time_cold(cpu_matmul, x8, wr, dt, n_cold, yc);
        double tp = time_cold(cpu_matmul_packed, x8, wp, dt, n_cold, yc);
        if (r >= 0) ratio[r] = tr / tp;
    }
    printf("%-7s cold x8/rows %5.3f  (alternating calls, median of %d pairs)\n", enc_dtype_name(dt),
           bench_median(ratio, runs), runs);
    free(x8), free(w), free(wr), free(wp), free(yc);
}

/* Whether dt is among the n names (all types when n is 0). */
static int type_wanted(enc_dtype dt, int n, char **names)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], enc_dtype_name(dt)) == 0) return 1;
    return n <= 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 3 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_quant: runs must be 3..%d\n", MAX_RUNS);
        return 1;
    }
    cpu_isa isa = cpu_kernels_init();
    printf("isa %s, one thread, thread CPU time, median of %d\n", cpu_isa_name(isa), runs);
    const enc_dtype types[] = {ENC_Q8_0, ENC_Q4_0, ENC_Q4_K, ENC_Q5_K, ENC_Q6_K};
    const size_t n_types = sizeof types / sizeof *types;
    for (int a = 2; a < argc; a++) {
        size_t i = 0;
        while (i < n_types && strcmp(argv[a], enc_dtype_name(types[i])) != 0) i++;
        if (i == n_types) {
            fprintf(stderr, "bench_quant: unknown type '%s' (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)\n", argv[a]);
            return 2;
        }
    }
    for (size_t i = 0; i < n_types; i++) {
        if (!type_wanted(types[i], argc - 2, argv + 2)) continue;
        bench_type(types[i], 0, runs);
        if (!cpu_repack_supports(types[i], N, K)) continue;
        bench_type(types[i], 1, runs);
        bench_cold_pair(types[i], runs);
    }
    return 0;
}
