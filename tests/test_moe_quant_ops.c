/* test_moe_quant_ops.c - the expert-indexed matmul (cpu_matmul_id) over
 * stacked block-quantized experts [E, N, K] of Q8_0, Q4_0, Q4_K, Q5_K and
 * Q6_K, for every ISA this CPU runs, against references written here:
 *
 *   - a double-precision dot of each (token, slot)'s dequantized expert row
 *     (quant_dequantize_row) and its dequantized 8-bit activations, within
 *     1e-5 max|w| sum|x| (the integers are exact; only the f32 sums of the
 *     block products round), so a wrong expert, row or activation row fails;
 *   - batch invariance bit for bit: each row equals cpu_matmul of that token
 *     alone with its expert's matrix (the decode of one token), whatever the
 *     other tokens and how many chose the same expert, and nth = 1, 2 and 3
 *     shares give the same bits;
 *   - an id outside [0, E) gives a zero row;
 *   - over the same experts in the CPU backend's interleaved layout (each
 *     expert's matrix repacked on its own, repack.h, where the type and N
 *     allow it; N = 17, 33 leave a tail row in rows), the same bits as over
 *     the row layout, with nth = 1, 2 and 3 (shares of 16 rows that end in
 *     a group, a tail or both).
 * The activations are quantized once per row by cpu_quantize_rows, before
 * the call, as the CPU backend does from the graph's planned scratch. Rows
 * long enough that one pair's 8-bit row overflows the staging run the
 * in-place path. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "backend/cpu/kernels_moe.h"
#include "backend/cpu/repack.h"
#include "base/dtype.h"
#include "base/quant.h"
#include "check.h"
#include "matmul_id_verdict.h"
#include "quant_blocks.h"
#include "xalloc.h"

/* One test case: shapes, and the inputs made for them. */
typedef struct mq_case {
    enc_dtype dt;
    int64_t T, k, K, N, E;
    int per_slot;
    float *x;        /* [x_rows, K] */
    void *x8;        /* x in quant_dot_dtype(dt) blocks */
    void *w;         /* [E, N, K] in dt blocks */
    int32_t *ids;    /* [T, k] */
    size_t xrb, wrb; /* bytes of one x8 row, one weight row */
} mq_case;

static int64_t mq_x_rows(const mq_case *c)
{
    return c->per_slot ? c->T * c->k : c->T;
}

/* Gaussian weights quantized to dt, gaussian activations quantized to the
 * dot type, ids drawn mostly from a few popular experts with some bad ones. */
static void mq_make(mq_case *c)
{
    enc_dtype xdt = quant_dot_dtype(c->dt);
    c->xrb = enc_dtype_row_bytes(xdt, c->K);
    c->wrb = enc_dtype_row_bytes(c->dt, c->K);
    int64_t xr = mq_x_rows(c);
    c->x = xcalloc((size_t)(xr * c->K), sizeof *c->x);
    c->x8 = xcalloc((size_t)xr, c->xrb);
    c->w = xcalloc((size_t)(c->E * c->N), c->wrb);
    c->ids = xcalloc((size_t)(c->T * c->k), sizeof *c->ids);
    float *row = xcalloc((size_t)c->K, sizeof *row);
    for (int64_t r = 0; r < c->E * c->N; r++) {
        for (int64_t i = 0; i < c->K; i++)
            row[i] = qb_gauss() * 0.5f;
        unsigned char *wr = (unsigned char *)c->w + (size_t)r * c->wrb;
        if (quant_quantize_row(c->dt, row, wr, c->K) != 0) /* Q5_0, IQ4_NL: random blocks */
            for (int64_t b = 0; b < c->K / enc_dtype_block_elems(c->dt); b++)
                qb_block(c->dt, (int)((r + b) % 5), wr + b * enc_dtype_block_bytes(c->dt));
    }
    for (int64_t i = 0; i < xr * c->K; i++)
        c->x[i] = qb_gauss();
    cpu_quantize_rows(c->x, xr, c->K, xdt, c->x8, 0, 1);
    int64_t popular = c->E < 3 ? c->E : 3;
    for (int64_t i = 0; i < c->T * c->k; i++)
        c->ids[i] = qb_next() % 11 == 0  ? -1
                    : qb_next() % 4 == 0 ? (int32_t)(qb_next() % (uint64_t)c->E)
                                         : (int32_t)(qb_next() % (uint64_t)popular);
    free(row);
}

static void mq_free(mq_case *c)
{
    free(c->x), free(c->x8), free(c->w), free(c->ids);
}

/* y [T, k, N] from nth shares run one after another, over w (c->w, or its
 * interleaved copy when packed). */
static float *mq_run_over(const mq_case *c, const void *w, int packed, int nth)
{
    float *y = xcalloc((size_t)(c->T * c->k * c->N), sizeof *y);
    for (int64_t i = 0; i < c->T * c->k * c->N; i++)
        y[i] = NAN; /* every row must be written */
    cpu_matmul_id_args a = {c->x8, c->per_slot, c->ids, w,    c->dt,  y, c->T,
                            c->k,  c->K,        c->N,   c->E, packed, 0};
    for (int ith = nth - 1; ith >= 0; ith--)
        cpu_matmul_id(&a, ith, nth);
    return y;
}

static float *mq_run(const mq_case *c, int nth)
{
    return mq_run_over(c, c->w, 0, nth);
}

/* The interleaved experts give want's bits (the row layout's), nth 1-3. */
static void mq_check_packed(const mq_case *c, const float *want)
{
    if (!cpu_repack_supports(c->dt, c->N, c->K)) return;
    size_t mb = (size_t)c->N * c->wrb;
    unsigned char *p = xcalloc((size_t)c->E, mb);
    void *tmp = xcalloc(1, cpu_repack_tmp_bytes(c->dt, c->K));
    memcpy(p, c->w, (size_t)c->E * mb);
    for (int64_t e = 0; e < c->E; e++)
        cpu_repack_matrix(p + (size_t)e * mb, c->dt, c->N, c->K, false, tmp);
    for (int nth = 1; nth <= 3; nth++) {
        float *y = mq_run_over(c, p, 1, nth);
        if (memcmp(y, want, (size_t)(c->T * c->k * c->N) * sizeof *y) != 0) {
            CHECK(!"interleaved experts give the row layout's bits");
            fprintf(stderr, "  %s T=%lld k=%lld K=%lld N=%lld E=%lld per_slot=%d nth=%d\n",
                    enc_dtype_name(c->dt), (long long)c->T, (long long)c->k, (long long)c->K,
                    (long long)c->N, (long long)c->E, c->per_slot, nth);
        }
        free(y);
    }
    free(p), free(tmp);
}

/* The double dot of weight row wr (dequantized) with activation row xr8
 * (dequantized), and the tolerance 1e-5 max|w| sum|x|. */
static double mq_ref(const mq_case *c, const void *wr, const void *xr8, double *tol, float *wf,
                     float *xf)
{
    quant_dequantize_row(c->dt, wr, wf, c->K);
    quant_dequantize_row(quant_dot_dtype(c->dt), xr8, xf, c->K);
    double ref = 0, wmax = 0, xsum = 0;
    for (int64_t i = 0; i < c->K; i++) {
        ref += (double)wf[i] * xf[i];
        wmax = fabs(wf[i]) > wmax ? fabs(wf[i]) : wmax;
        xsum += fabs(xf[i]);
    }
    *tol = 1e-5 * wmax * xsum + 1e-30;
    return ref;
}

static void mq_check(enc_dtype dt, int64_t T, int64_t k, int64_t K, int64_t N, int64_t E,
                     int per_slot)
{
    mq_case c = {.dt = dt, .T = T, .k = k, .K = K, .N = N, .E = E, .per_slot = per_slot};
    mq_make(&c);
    float *y[3];
    for (int nth = 1; nth <= 3; nth++) {
        y[nth - 1] = mq_run(&c, nth);
        if (nth > 1) CHECK(!memcmp(y[0], y[nth - 1], (size_t)(T * k * N) * sizeof **y));
    }
    float *one = xcalloc((size_t)N, sizeof *one), *wf = xcalloc((size_t)K, sizeof *wf);
    float *xf = xcalloc((size_t)K, sizeof *xf);
    int bad_bits = 0, bad_ref = 0, bad_zero = 0;
    for (int64_t p = 0; p < T * k; p++) {
        const char *xr8 = (const char *)c.x8 + (size_t)(per_slot ? p : p / k) * c.xrb;
        const float *yr = y[0] + p * N;
        if (c.ids[p] < 0) {
            for (int64_t n = 0; n < N; n++)
                bad_zero += yr[n] != 0.0f;
            continue;
        }
        const char *we = (const char *)c.w + (size_t)c.ids[p] * (size_t)N * c.wrb;
        cpu_matmul(xr8, 1, K, we, dt, N, one, 0, 1); /* this token alone: a decode step */
        bad_bits += memcmp(one, yr, (size_t)N * sizeof *one) != 0;
        for (int64_t n = 0; n < N; n++) {
            double tol, ref = mq_ref(&c, we + (size_t)n * c.wrb, xr8, &tol, wf, xf);
            bad_ref += fabs(yr[n] - ref) > tol;
        }
    }
    matmul_id_verdict((matmul_id_shape){dt, T, k, K, N, E, per_slot}, bad_bits, bad_ref, bad_zero);
    mq_check_packed(&c, y[0]);
    for (int i = 0; i < 3; i++)
        free(y[i]);
    free(one), free(wf), free(xf);
    mq_free(&c);
}

static void test_types(void)
{
    static const enc_dtype types[] = {ENC_Q8_0, ENC_Q4_0, ENC_Q5_0, ENC_IQ4_NL,
                                      ENC_Q4_K, ENC_Q5_K, ENC_Q6_K, ENC_IQ4_XS,
                                      ENC_Q2_K, ENC_Q3_K, ENC_Q4_1, ENC_Q5_1};
    static const int64_t shapes[][5] = {
        /* T, k, K, N, E */
        {1, 1, 256, 4, 1},   {1, 8, 256, 48, 16}, {3, 2, 512, 17, 5},
        {20, 4, 256, 40, 8}, {40, 2, 256, 33, 3}, {3, 2, 15872, 3, 2} /* rows too long to stage */};
    for (size_t d = 0; d < sizeof types / sizeof types[0]; d++) {
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int per_slot = 0; per_slot < 2; per_slot++)
                mq_check(types[d], shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                         shapes[i][4], per_slot);
        if (enc_dtype_block_elems(types[d]) == 32) /* rows of 32-value blocks only */
            mq_check(types[d], 7, 3, 96, 9, 4, 1);
    }
}

int main(void)
{
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        cpu_isa isa = (cpu_isa)i;
        if (!cpu_kernels_force_isa(isa)) continue;
        fprintf(stderr, "isa %s\n", cpu_isa_name(isa));
        test_types();
    }
    printf("test_moe_quant_ops: %d failures\n", check_failures);
    return check_failures != 0;
}
