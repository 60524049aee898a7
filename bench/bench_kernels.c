/* bench_kernels.c - speed of the CPU matmul, per ISA, with 1 and 2 threads.
 *
 *   decode:  y[1, 3072] = x[1, 1024] W^T, W [3072, 1024] bf16 (or f16, f32): GB/s of weights
 *            read. "hot": one W, which stays in cache; "cold": a new W every
 *            call from a pool of 1 GiB, so W comes from DRAM, next to the
 *            read bandwidth of that same pool (the roofline) in the same run.
 *   prefill: y[512, 3072] = x[512, 1024] W^T, the same type: GFLOP/s (2 flop per
 *            multiply-add).
 *   attention (Qwen3-0.6B shape: 16 query heads, 8 kv heads, head_dim 128,
 *            block 16), the KV cache in the weight type (as the engine's
 *            `--kv-cache-dtype auto`): a decode row over 4096 cached tokens
 *            (GB/s of K and V read; 16 MiB, so from L3 where L3 is that
 *            large) and a 512-token prefill (GFLOP/s of q.k and p.v).
 *
 * Every figure is the median of RUNS timed runs after one warm-up. With one
 * thread the calling thread does all the work, so it is timed in its own
 * CPU time, which other people's load on a shared machine disturbs far less
 * than the wall clock; with two, in wall time.
 * bf16x: bf16 weights times activations rounded to bf16 (cpu_matmul_bf16x,
 * --bf16-activations), on the avx512 kernels of a CPU with AVX512-BF16 only.
 * Usage: bench_kernels [runs] [bf16|bf16x|f16|f32]   (default 5 runs, at least 3; bf16) */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "base/dtype.h"
#include "base/threadpool.h"

#include "bench_read.h"
#include "bench_timing.h"

enum {
    K = 1024,
    N_OUT = 3072,
    N_PREFILL = 512,
    DECODE_CALLS = 200, /* matmuls per timed decode run */
};
static const size_t POOL_BYTES = (size_t)1 << 30;
static enc_dtype weight_dtype = ENC_BF16; /* bf16, f16 or f32 (argv[2]) */
static size_t weight_size = 2;            /* its bytes per element */
static int x_bf16;                        /* bf16x: the matmuls' x rounded to bf16 */

/* base[i] = v in the weight type. */
static void put_weight(void *base, size_t i, float v)
{
    if (weight_dtype == ENC_F32)
        ((float *)base)[i] = v;
    else
        ((uint16_t *)base)[i] = weight_dtype == ENC_F16 ? enc_f32_to_f16(v) : enc_f32_to_bf16(v);
}

/* --- the timed tasks ------------------------------------------------------ */

typedef struct mm_job {
    const void *x; /* f32, or bf16 (x_bf16) */
    int64_t n_tokens;
    const char *pool;     /* n_w matrices [N_OUT, K] of the weight type, back to back */
    int64_t n_w, w_next;  /* call i uses matrix (w_next + i) % n_w */
    int calls;
    float *y;
} mm_job;

static void mm_task(void *p, int ith, int nth)
{
    mm_job *j = p;
    const char *w = j->pool + (size_t)(j->w_next % j->n_w) * N_OUT * K * weight_size;
    if (x_bf16)
        cpu_matmul_bf16x(j->x, j->n_tokens, K, (const uint16_t *)w, N_OUT, j->y, ith, nth);
    else
        cpu_matmul(j->x, j->n_tokens, K, w, weight_dtype, N_OUT, j->y, ith, nth);
}

/* The clock of a pool: one thread runs every share inline, in the caller. */
static double bench_clock(const enc_threadpool *tp)
{
    return threadpool_size(tp) == 1 ? bench_cpu_s() : bench_wall_s();
}

/* Seconds per matmul call: `calls` calls in a row, one pool run each. */
static double time_calls(enc_threadpool *tp, mm_job *j, int calls)
{
    double t0 = bench_clock(tp);
    for (int i = 0; i < calls; i++) {
        threadpool_run(tp, mm_task, j);
        j->w_next++;
    }
    return (bench_clock(tp) - t0) / calls;
}

/* --- attention --------------------------------------------------------------- */

enum { ATT_HEADS = 16, ATT_KV_HEADS = 8, ATT_HD = 128, ATT_BS = 16, ATT_CTX = 4096 };

typedef struct att_bench {
    void *k_cache, *v_cache;     /* [ATT_CTX, kv heads, hd] of weight_dtype */
    float *q, *out;              /* [512, heads, hd] */
    int32_t bt[ATT_CTX / ATT_BS];
} att_bench;

static void att_task(void *p, int ith, int nth)
{
    cpu_paged_attention(p, ith, nth);
}

/* Seconds of one call: one sequence, n_q new rows, seq_len tokens cached. */
static double time_attention(enc_threadpool *tp, att_bench *b, int n_q, int seq_len)
{
    int32_t sl = seq_len, qsl[2] = {0, n_q};
    cpu_attention_args a = {
        .q = b->q,
        .k_cache = b->k_cache,
        .v_cache = b->v_cache,
        .out = b->out,
        .block_tables = b->bt,
        .seq_lens = &sl,
        .query_start_loc = qsl,
        .n_seqs = 1,
        .max_blocks = ATT_CTX / ATT_BS,
        .block_size = ATT_BS,
        .n_heads = ATT_HEADS,
        .n_kv_heads = ATT_KV_HEADS,
        .head_dim = ATT_HD,
        .scale = 0.08838835f, /* 1 / sqrt(128) */
        .cache_dtype = weight_dtype,
    };
    double t0 = bench_clock(tp);
    threadpool_run(tp, att_task, &a);
    return bench_clock(tp) - t0;
}

/* --- one ISA, one thread count -------------------------------------------- */

static void bench_isa(cpu_isa isa, int nth, int runs, const char *pool, int64_t n_w, const void *x,
                      float *y, att_bench *ab)
{
    enc_threadpool *tp;
    if (threadpool_create(nth, &tp) != ENC_OK) {
        fprintf(stderr, "thread pool: %s\n", enc_last_error());
        exit(1);
    }
    double w_bytes = (double)weight_size * N_OUT * K, flops = 2.0 * N_PREFILL * N_OUT * K;
    double hot[64], cold[64], roof[64], pre[64];
    mm_job dec = {x, 1, pool, 1, 0, 0, y};
    time_calls(tp, &dec, DECODE_CALLS); /* warm-up */
    for (int r = 0; r < runs; r++)
        hot[r] = w_bytes / time_calls(tp, &dec, DECODE_CALLS) / 1e9;
    /* cold decode and the read bandwidth alternate, so both see the same
     * machine (other processes, clock) */
    mm_job cdec = {x, 1, pool, n_w, 0, 0, y};
    bench_read_job rd = {(const uint64_t *)pool, POOL_BYTES / 8, {0}};
    time_calls(tp, &cdec, (int)n_w);
    threadpool_run(tp, bench_read_task, &rd);
    for (int r = 0; r < runs; r++) {
        cold[r] = w_bytes / time_calls(tp, &cdec, (int)n_w) / 1e9;
        double t0 = bench_clock(tp);
        threadpool_run(tp, bench_read_task, &rd);
        roof[r] = (double)POOL_BYTES / (bench_clock(tp) - t0) / 1e9;
    }
    int pre_runs = isa == CPU_ISA_SCALAR ? 3 : runs;
    mm_job pf = {x, N_PREFILL, pool, 1, 0, 0, y};
    time_calls(tp, &pf, 1);
    for (int r = 0; r < pre_runs; r++)
        pre[r] = flops / time_calls(tp, &pf, 1) / 1e9;
    double att_dec[64], att_pre[64];
    double kv_bytes = 2.0 * ATT_CTX * ATT_KV_HEADS * ATT_HD * weight_size;
    double att_flops = 4.0 * ATT_HEADS * ATT_HD * (512.0 * 513.0 / 2.0);
    time_attention(tp, ab, 1, ATT_CTX);
    for (int r = 0; r < runs; r++)
        att_dec[r] = kv_bytes / time_attention(tp, ab, 1, ATT_CTX) / 1e9;
    time_attention(tp, ab, 512, 512);
    for (int r = 0; r < pre_runs; r++)
        att_pre[r] = att_flops / time_attention(tp, ab, 512, 512) / 1e9;
    double mc = bench_median(cold, runs), mr = bench_median(roof, runs);
    printf("%-7s %3d  %10.1f  %10.1f  %10.1f  %7.0f%%  %12.1f  %10.1f  %10.1f\n", cpu_isa_name(isa),
           nth, bench_median(hot, runs), mc, mr, 100.0 * mc / mr, bench_median(pre, pre_runs),
           bench_median(att_dec, runs), bench_median(att_pre, pre_runs));
    fflush(stdout);
    threadpool_destroy(tp);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 3) runs = 3;
    if (runs > 64) runs = 64;
    if (argc > 2 && !strcmp(argv[2], "f16")) {
        weight_dtype = ENC_F16;
    } else if (argc > 2 && !strcmp(argv[2], "f32")) {
        weight_dtype = ENC_F32;
        weight_size = 4;
    } else if (argc > 2 && !strcmp(argv[2], "bf16x")) {
        x_bf16 = 1;
    } else if (argc > 2 && strcmp(argv[2], "bf16")) {
        fprintf(stderr, "bench_kernels: weight type '%s' is not bf16, bf16x, f16 or f32\n",
                argv[2]);
        return 2;
    }
    size_t w_elems = (size_t)N_OUT * K;
    int64_t n_w = (int64_t)(POOL_BYTES / (w_elems * weight_size));
    char *pool = malloc(POOL_BYTES);
    float *x = malloc((size_t)N_PREFILL * K * sizeof *x);
    float *y = malloc((size_t)N_PREFILL * N_OUT * sizeof *y);
    if (!pool || !x || !y) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint32_t s = 12345;
    for (size_t i = 0; i < POOL_BYTES / weight_size; i++) {
        s = s * 1664525u + 1013904223u;
        put_weight(pool, i, ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.1f);
    }
    for (size_t i = 0; i < (size_t)N_PREFILL * K; i++)
        x[i] = (float)((i * 7919) % 1000) / 1000.0f;
    uint16_t *xb = malloc((size_t)N_PREFILL * K * sizeof *xb); /* x rounded (bf16x) */
    if (!xb) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    cpu_quantize_rows(x, N_PREFILL, K, ENC_BF16, xb, 0, 1);

    printf("matmul %s%s [%d x %d] x [%d x %d]^T; median of %d runs; kernels_init: %s\n",
           enc_dtype_name(weight_dtype), x_bf16 ? " x bf16 activations" : "", 1, K, N_OUT, K, runs,
           cpu_isa_name(cpu_kernels_init()));
    att_bench ab;
    size_t kv_elems = (size_t)ATT_CTX * ATT_KV_HEADS * ATT_HD, q_elems = 512u * ATT_HEADS * ATT_HD;
    ab.k_cache = malloc(kv_elems * weight_size);
    ab.v_cache = malloc(kv_elems * weight_size);
    ab.q = malloc(q_elems * sizeof(float));
    ab.out = malloc(q_elems * sizeof(float));
    if (!ab.k_cache || !ab.v_cache || !ab.q || !ab.out) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < kv_elems; i++) {
        put_weight(ab.k_cache, i, (float)(i % 101) / 101.0f - 0.5f);
        put_weight(ab.v_cache, i, (float)(i % 103) / 103.0f - 0.5f);
    }
    for (size_t i = 0; i < q_elems; i++)
        ab.q[i] = (float)(i % 37) / 37.0f - 0.5f;
    for (int i = 0; i < ATT_CTX / ATT_BS; i++)
        ab.bt[i] = ATT_CTX / ATT_BS - 1 - i; /* paged */

    printf("%-7s %3s  %10s  %10s  %10s  %8s  %12s  %10s  %10s\n", "isa", "nth", "decode hot",
           "decode cold", "read bw", "cold/bw", "prefill", "attn dec", "attn pre");
    printf("%-7s %3s  %10s  %10s  %10s  %8s  %12s  %10s  %10s\n", "", "", "GB/s", "GB/s", "GB/s",
           "", "GFLOP/s", "GB/s", "GFLOP/s");
    static const cpu_isa isas[] = {CPU_ISA_AVX512, CPU_ISA_AVX2, CPU_ISA_SCALAR};
    for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
        if (!cpu_kernels_force_isa(isas[i])) continue;
        if (x_bf16 && !cpu_bf16_activations_supported()) continue; /* avx512 with BF16 only */
        for (int nth = 1; nth <= 2; nth++)
            bench_isa(isas[i], nth, runs, pool, n_w, x_bf16 ? (const void *)xb : x, y, &ab);
    }
    free(pool);
    free(x);
    free(xb);
    free(y);
    free(ab.k_cache);
    free(ab.v_cache);
    free(ab.q);
    free(ab.out);
    return 0;
}
