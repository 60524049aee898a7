/* test_quant_kernels.c - the CPU matmul over block-quantized weights
 * (kernels_quant*.c), every type on every ISA this CPU runs:
 *
 *   - cpu_quantize_rows gives quant_quantize_row's bytes, whatever nth, and
 *     on edge rows (zeros, exact ties, huge beside tiny values);
 *   - y = cpu_matmul(x8, W) against a double-precision dot of the dequantized
 *     weights and the dequantized 8-bit activations (base/quant.c), within
 *     gamma(n_blocks + 16) * sum_i |terms_i| |x_i|, where terms are the parts
 *     the format adds (d sc q and dmin m for the K types, d sc (q + 32) and
 *     32 d sc for Q6_K): the integers are exact, the f32 steps are one
 *     product and one sum per block plus the lane tree;
 *   - batch invariance bit for bit: a token alone (decode), among 67 (prefill)
 *     or 5 at an offset, with nth = 1, 2, 3 (nth = 2 on a real thread pool);
 *   - every type on a SIMD ISA gives the portable dot's bits (its tiles add
 *     each block's exact int32 sums to f32 accumulators of their own per
 *     output, a product and a sum per block, as the portable dot does);
 *   - cpu_get_rows on a quantized table: quant_dequantize_row's floats.
 *
 * Weights are quantized gaussians and raw random blocks (negative scales,
 * -128 in Q8_0, all nibbles 0 or 15, the 6-bit scales of sub-blocks 4..7);
 * the last two tokens are all +127 and all -127 bytes, the largest sums
 * the tiles' int16 lanes (Q4_0) and int32 lanes hold.
 * The AVX-512 VNNI table cannot run on a CPU without VNNI; it is the AVX2
 * body with one instruction swapped (kernels_quant_impl.h). */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "base/dtype.h"
#include "base/quant.h"
#include "base/quant_widen.h"
#include "base/threadpool.h"
#include "isa_fail.h"
#include "matmul_task.h"
#include "quant_blocks.h"

static cpu_isa g_isa_id = CPU_ISA_SCALAR;
static enc_threadpool *g_pool; /* 2 threads */

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

enum { N_TYPES = 12 };
static const enc_dtype TYPES[N_TYPES] = {ENC_Q8_0, ENC_Q4_0, ENC_Q5_0, ENC_IQ4_NL,
                                         ENC_Q4_K, ENC_Q5_K, ENC_Q6_K, ENC_IQ4_XS,
                                         ENC_Q2_K, ENC_Q3_K, ENC_Q4_1, ENC_Q5_1};

typedef void (*task_fn)(void *ctx, int ith, int nth);

static void run_nth(task_fn fn, void *ctx, int nth)
{
    if (nth == 2) {
        threadpool_run(g_pool, fn, ctx);
        return;
    }
    for (int ith = nth - 1; ith >= 0; ith--)
        fn(ctx, ith, nth);
}

/* --- tasks ----------------------------------------------------------------- */

typedef struct qr_ctx {
    const float *x;
    int64_t rows, k;
    enc_dtype dt;
    void *out;
} qr_ctx;

static void qr_task(void *p, int ith, int nth)
{
    qr_ctx *c = p;
    cpu_quantize_rows(c->x, c->rows, c->k, c->dt, c->out, ith, nth);
}

/* --- the world of one type --------------------------------------------------- */

enum { K = 768, N_OUT = 37, T = 67 };

typedef struct world {
    enc_dtype dt, at; /* weights, activations */
    size_t wrb, xrb;  /* row bytes */
    unsigned char *w, *xq;
    float *x;
} world;

/* Rows r % 3 == 2 are raw random blocks; the others quantized gaussians
 * (random blocks too for the types but Q8_0, Q4_0 and Q4_K-Q6_K, which have
 * no quantizer here). */
static void world_init(world *wd, enc_dtype dt)
{
    wd->dt = dt;
    wd->at = quant_dot_dtype(dt);
    wd->wrb = enc_dtype_row_bytes(dt, K);
    wd->xrb = enc_dtype_row_bytes(wd->at, K);
    wd->w = xmalloc(wd->wrb * N_OUT);
    wd->x = xmalloc(sizeof(float) * T * K);
    wd->xq = xmalloc(wd->xrb * T);
    float row[K];
    int64_t be = enc_dtype_block_elems(dt);
    size_t bb = enc_dtype_block_bytes(dt);
    for (int r = 0; r < N_OUT; r++) {
        unsigned char *wr = wd->w + (size_t)r * wd->wrb;
        for (int i = 0; i < K; i++)
            row[i] = qb_gauss() * (r % 3 ? 0.02f : 1.0f);
        if (r % 3 == 2 || quant_quantize_row(dt, row, wr, K) != 0)
            for (int64_t b = 0; b < K / be; b++)
                qb_block(dt, (int)((r / 3 + b) % 5), wr + b * bb);
    }
    for (int i = 0; i < T * K; i++)
        wd->x[i] = qb_gauss() * (i % 97 == 0 ? 8.0f : 1.0f);
    for (int i = 0; i < K; i++) { /* the last two tokens: every byte +127, then -127 */
        wd->x[(T - 2) * K + i] = 1.0f;
        wd->x[(T - 1) * K + i] = -1.0f;
    }
}

static void world_free(world *wd)
{
    free(wd->w);
    free(wd->x);
    free(wd->xq);
}

/* The activations: cpu_quantize_rows with nth = 1, 2, 3, each equal to
 * quant_quantize_row row by row. Leaves wd->xq filled. */
static void check_quantize_rows(world *wd)
{
    unsigned char *want = xmalloc(wd->xrb * T);
    for (int t = 0; t < T; t++)
        quant_quantize_row(wd->at, wd->x + t * K, want + t * wd->xrb, K);
    for (int nth = 1; nth <= 3; nth++) {
        memset(wd->xq, 0xa5, wd->xrb * T);
        qr_ctx c = {wd->x, T, K, wd->at, wd->xq};
        run_nth(qr_task, &c, nth);
        if (memcmp(want, wd->xq, wd->xrb * T) != 0)
            fail("%s: cpu_quantize_rows nth %d differs from quant_quantize_row",
                 enc_dtype_name(wd->at), nth);
    }
    free(want);
}

/* Activations that the gaussians miss: a zero row, a row of exact halves
 * (127 at the start of every block of 32 makes 1 / d exactly 1, so every
 * other x * id is a tie, both signs), a row of one huge and otherwise tiny
 * values, and a row whose blocks hold a single nonzero. cpu_quantize_rows
 * must write quant_quantize_row's bytes for each. */
static void check_quantize_edges(enc_dtype at)
{
    enum { ROWS = 4 };
    size_t rb = enc_dtype_row_bytes(at, K);
    float *x = xmalloc(sizeof(float) * ROWS * K);
    unsigned char *want = xmalloc(rb * ROWS), *got = xmalloc(rb * ROWS);
    for (int j = 0; j < K; j++) {
        x[j] = 0.0f;
        x[K + j] = j % 32 == 0 ? 127.0f : (j % 2 ? -1.0f : 1.0f) * ((float)(j % 120) + 0.5f);
        x[2 * K + j] = j == 5 ? 3.0e4f : 1.0e-30f * (float)(j % 7 - 3);
        x[3 * K + j] = j % 64 == 17 ? -2.5f : 0.0f;
    }
    for (int r = 0; r < ROWS; r++)
        quant_quantize_row(at, x + r * K, want + r * rb, K);
    memset(got, 0xa5, rb * ROWS);
    cpu_quantize_rows(x, ROWS, K, at, got, 0, 1);
    for (int r = 0; r < ROWS; r++)
        if (memcmp(want + r * rb, got + r * rb, rb) != 0)
            fail("%s: cpu_quantize_rows differs from quant_quantize_row on edge row %d",
                 enc_dtype_name(at), r);
    free(x);
    free(want);
    free(got);
}

/* Per value i of a weight row, the magnitude of the parts the format adds
 * beyond the value itself (see the header): |dmin m| or 32 |d sc|. */
static void row_offsets(enc_dtype dt, const unsigned char *wr, double *off)
{
    for (int i = 0; i < K; i++)
        off[i] = 0.0;
    if (dt == ENC_Q4_K || dt == ENC_Q5_K) {
        size_t bb = enc_dtype_block_bytes(dt);
        for (int b = 0; b < K / 256; b++) {
            const block_q4_K *k = (const block_q4_K *)(wr + b * bb); /* d, dmin, scales alike */
            for (int i = 0; i < 256; i++) {
                int sc, m;
                quant_scale_min_k4(k->scales, i / 32, &sc, &m);
                off[256 * b + i] = fabs((double)enc_f16_to_f32(k->dmin) * m);
            }
        }
    } else if (dt == ENC_Q4_1 || dt == ENC_Q5_1) { /* m, at byte 2 of each block */
        size_t bb = enc_dtype_block_bytes(dt);
        for (int b = 0; b < K / 32; b++) {
            uint16_t m;
            memcpy(&m, wr + b * bb + 2, sizeof m);
            for (int i = 0; i < 32; i++)
                off[32 * b + i] = fabs((double)enc_f16_to_f32(m));
        }
    } else if (dt == ENC_Q2_K) {
        for (int b = 0; b < K / 256; b++) {
            const block_q2_K *k = (const block_q2_K *)(wr + b * sizeof(block_q2_K));
            for (int i = 0; i < 256; i++)
                off[256 * b + i] = fabs((double)enc_f16_to_f32(k->dmin) * (k->scales[i / 16] >> 4));
        }
    } else if (dt == ENC_Q6_K || dt == ENC_Q3_K) { /* Q3_K: its widened Q6_K's */
        for (int b = 0; b < K / 256; b++) {
            block_q6_K w6;
            if (dt == ENC_Q3_K) quant_widen_row(dt, wr + b * enc_dtype_block_bytes(dt), &w6, 256);
            const block_q6_K *k =
                dt == ENC_Q3_K ? &w6 : (const block_q6_K *)(wr + b * sizeof(block_q6_K));
            for (int i = 0; i < 256; i++)
                off[256 * b + i] = 32.0 * fabs((double)enc_f16_to_f32(k->d) * k->scales[i / 16]);
        }
    }
}

static double gamma_n(double n)
{
    double u = 1.0 / 16777216.0;
    return n * u / (1.0 - n * u);
}

/* y [T, N_OUT] against the double reference; returns the largest err/bound. */
static double check_ref(const world *wd, const float *y)
{
    double *wv = xmalloc(sizeof(double) * K), *off = xmalloc(sizeof(double) * K);
    float *wf = xmalloc(sizeof(float) * K), *xf = xmalloc(sizeof(float) * K);
    double worst = 0;
    int64_t nb = K / enc_dtype_block_elems(wd->dt);
    for (int r = 0; r < N_OUT; r++) {
        const unsigned char *wr = wd->w + (size_t)r * wd->wrb;
        quant_dequantize_row(wd->dt, wr, wf, K);
        row_offsets(wd->dt, wr, off);
        for (int i = 0; i < K; i++)
            wv[i] = wf[i];
        for (int t = 0; t < T; t++) {
            quant_dequantize_row(wd->at, wd->xq + (size_t)t * wd->xrb, xf, K);
            double ref = 0, mag = 0;
            for (int i = 0; i < K; i++) {
                ref += wv[i] * xf[i];
                mag += (fabs(wv[i]) + 2.0 * off[i]) * fabs((double)xf[i]);
            }
            double err = fabs(y[t * N_OUT + r] - ref),
                   bound = gamma_n((double)nb + 16) * mag + 1e-30;
            if (!(err <= bound))
                fail("%s: y[%d, %d] = %.9g, reference %.9g (error %.3g > bound %.3g)",
                     enc_dtype_name(wd->dt), t, r, y[t * N_OUT + r], ref, err, bound);
            worst = err / bound > worst ? err / bound : worst;
        }
    }
    free(wv);
    free(off);
    free(wf);
    free(xf);
    return worst;
}

/* Bits of y for each token: alone, among all T, or 5 from token 3, nth 1..3. */
static int check_invariance(const world *wd, const float *y_all)
{
    int n = 0;
    float *y = xmalloc(sizeof(float) * T * N_OUT);
    for (int nth = 1; nth <= 3; nth++) {
        mm_ctx c = {wd->xq, T, K, wd->w, wd->dt, N_OUT, y};
        run_nth(mm_task, &c, nth);
        if (memcmp(y, y_all, sizeof(float) * T * N_OUT) != 0)
            fail("%s: %d tokens, nth %d differs from nth 2", enc_dtype_name(wd->dt), T, nth);
        n++;
        for (int t = 0; t < T; t += 11) {
            mm_ctx one = {wd->xq + (size_t)t * wd->xrb, 1, K, wd->w, wd->dt, N_OUT, y};
            run_nth(mm_task, &one, nth);
            if (memcmp(y, y_all + t * N_OUT, sizeof(float) * N_OUT) != 0)
                fail("%s: token %d alone (nth %d) differs from the batch of %d",
                     enc_dtype_name(wd->dt), t, nth, T);
            n++;
        }
        mm_ctx five = {wd->xq + 3 * wd->xrb, 5, K, wd->w, wd->dt, N_OUT, y};
        run_nth(mm_task, &five, nth);
        if (memcmp(y, y_all + 3 * N_OUT, sizeof(float) * 5 * N_OUT) != 0)
            fail("%s: tokens 3..7 as a batch of 5 (nth %d) differ", enc_dtype_name(wd->dt), nth);
        n++;
    }
    free(y);
    return n;
}

typedef struct gr_ctx {
    const void *table;
    enc_dtype dt;
    const int32_t *ids;
    int64_t n;
    float *out;
} gr_ctx;

static void gr_task(void *p, int ith, int nth)
{
    gr_ctx *c = p;
    cpu_get_rows(c->table, c->dt, N_OUT, K, c->ids, c->n, c->out, ith, nth);
}

static void check_get_rows(const world *wd)
{
    const int32_t ids[6] = {5, 0, N_OUT - 1, -1, 17, N_OUT};
    float *out = xmalloc(sizeof(float) * 6 * K), *want = xmalloc(sizeof(float) * K);
    gr_ctx c = {wd->w, wd->dt, ids, 6, out};
    run_nth(gr_task, &c, 2);
    for (int i = 0; i < 6; i++) {
        if (ids[i] >= 0 && ids[i] < N_OUT)
            quant_dequantize_row(wd->dt, wd->w + (size_t)ids[i] * wd->wrb, want, K);
        else
            memset(want, 0, sizeof(float) * K);
        if (memcmp(want, out + i * K, sizeof(float) * K) != 0)
            fail("%s: get_rows id %d differs from the dequantized row", enc_dtype_name(wd->dt),
                 ids[i]);
    }
    free(out);
    free(want);
}

/* y (this ISA, 2 threads) against the scalar table's y, bit for bit. */
static void check_same_as_scalar(const world *wd, const float *y)
{
    if (g_isa_id == CPU_ISA_SCALAR) return;
    float *ys = xmalloc(sizeof(float) * T * N_OUT);
    mm_ctx c = {wd->xq, T, K, wd->w, wd->dt, N_OUT, ys};
    cpu_kernels_force_isa(CPU_ISA_SCALAR);
    run_nth(mm_task, &c, 2);
    cpu_kernels_force_isa(g_isa_id);
    for (int i = 0; i < T * N_OUT; i++)
        if (memcmp(&y[i], &ys[i], sizeof(float)) != 0) {
            fail("%s: token %d row %d is %.9g, the scalar dot's %.9g", enc_dtype_name(wd->dt),
                 i / N_OUT, i % N_OUT, (double)y[i], (double)ys[i]);
            break;
        }
    free(ys);
}

static void test_type(enc_dtype dt, double *worst, int *n_inv)
{
    world wd;
    world_init(&wd, dt);
    check_quantize_rows(&wd);
    check_quantize_edges(wd.at);
    float *y = xmalloc(sizeof(float) * T * N_OUT);
    mm_ctx c = {wd.xq, T, K, wd.w, dt, N_OUT, y};
    run_nth(mm_task, &c, 2);
    double e = check_ref(&wd, y);
    *worst = e > *worst ? e : *worst;
    *n_inv += check_invariance(&wd, y);
    check_same_as_scalar(&wd, y);
    check_get_rows(&wd);
    free(y);
    world_free(&wd);
}

int main(void)
{
    if (threadpool_create(2, &g_pool) != ENC_OK) {
        fprintf(stderr, "cannot create the thread pool\n");
        return 1;
    }
    cpu_isa chosen = cpu_kernels_init();
    int n_isas = 0;
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        cpu_isa isa = (cpu_isa)i;
        g_isa = cpu_isa_name(isa);
        g_isa_id = isa;
        if (!cpu_kernels_force_isa(isa)) {
            printf("[%s] not supported by this CPU: not run\n", g_isa);
            continue;
        }
        n_isas++;
        int before = g_failures, n_inv = 0;
        double worst = 0;
        for (int t = 0; t < N_TYPES; t++)
            test_type(TYPES[t], &worst, &n_inv);
        printf("[%s] %s: %d types, max err/bound %.3g, %d invariance comparisons\n", g_isa,
               g_failures == before ? "ok" : "FAILED", N_TYPES, worst, n_inv);
    }
    cpu_kernels_force_isa(chosen);
    threadpool_destroy(g_pool);
    if (g_failures || n_isas == 0) {
        printf("%d failures\n", g_failures);
        return 1;
    }
    printf("all ok\n");
    return 0;
}
