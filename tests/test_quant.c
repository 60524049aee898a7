/* test_quant.c - the block formats of src/base/quant.c.
 *
 *   test_quant            quantize -> dequantize error bounds per type (stated
 *                         at each check), and the quantizers' outputs decoded
 *                         by hand-checked invariants (levels in range, each
 *                         value on the level of its block nearest to it)
 *   test_quant --dump F   write random blocks of every type (edge cases
 *                         included) and quant.c's dequantization of them to F,
 *                         for tests/test_quant_numpy.py to compare with the
 *                         NumPy dequantizers of tests/reference/gguf_quants.py
 *
 * The types widened at load (Q5_0, IQ4_NL, Q3_K; base/quant_widen.h) are
 * dumped too: quant.c reads them through their widened blocks, so NumPy's
 * dequantizers, written from ggml's layouts, check the widening bit for bit;
 * and IQ4_XS, Q2_K, Q4_1 and Q5_1, which quant.c reads as they are.
 *
 * Dump format, per type: name (8 bytes, NUL-padded), n_blocks (u32), the raw
 * blocks, then n_blocks * block_elems f32 values; then for Q8_0 and Q4_0,
 * whose quantizers are ggml's reference ones: "Q8_0+" / "Q4_0+", n values
 * (u32), n f32 inputs, and the blocks quant.c made of them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/quant.h"
#include "base/quant_widen.h"
#include "quant_blocks.h"

static int g_failures;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static const enc_dtype WEIGHT_TYPES[5] = {ENC_Q8_0, ENC_Q4_0, ENC_Q4_K, ENC_Q5_K, ENC_Q6_K};
static const enc_dtype DUMP_TYPES[] = {ENC_Q8_0,   ENC_Q4_0, ENC_Q4_K,   ENC_Q5_K,
                                       ENC_Q6_K,   ENC_Q5_0, ENC_IQ4_NL, ENC_Q3_K,
                                       ENC_IQ4_XS, ENC_Q2_K, ENC_Q4_1,   ENC_Q5_1};

static int dump(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "test_quant: cannot write %s\n", path);
        return 1;
    }
    enum { N_BLOCKS = 64 };
    for (size_t t = 0; t < sizeof DUMP_TYPES / sizeof DUMP_TYPES[0]; t++) {
        enc_dtype dt = DUMP_TYPES[t];
        size_t bb = enc_dtype_block_bytes(dt);
        int64_t be = enc_dtype_block_elems(dt);
        unsigned char *raw = xmalloc(bb * N_BLOCKS);
        float *y = xmalloc((size_t)(be * N_BLOCKS) * sizeof *y);
        for (int i = 0; i < N_BLOCKS; i++)
            qb_block(dt, i, raw + (size_t)i * bb);
        if (quant_dequantize_row(dt, raw, y, be * N_BLOCKS) != 0) {
            fprintf(stderr, "test_quant: dequantize %s refused\n", enc_dtype_name(dt));
            return 1;
        }
        char name[8] = {0};
        snprintf(name, sizeof name, "%s", enc_dtype_name(dt));
        uint32_t nb = N_BLOCKS;
        fwrite(name, 1, 8, f);
        fwrite(&nb, 4, 1, f);
        fwrite(raw, bb, N_BLOCKS, f);
        fwrite(y, sizeof *y, (size_t)(be * N_BLOCKS), f);
        free(raw);
        free(y);
    }
    /* Then the quantizers that follow ggml's reference ones, on one input:
     * "Q8_0+" / "Q4_0+", n values (u32), the f32 input, the blocks. */
    enum { N_VALUES = 4096 };
    static float x[N_VALUES];
    for (int i = 0; i < N_VALUES; i++)
        x[i] = i < 64 ? (float)(i % 9) - 4.0f : qb_gauss() * (i % 61 == 0 ? 9.0f : 1.0f);
    const enc_dtype ggml_ref[2] = {ENC_Q8_0, ENC_Q4_0};
    for (int t = 0; t < 2; t++) {
        size_t bytes = enc_dtype_row_bytes(ggml_ref[t], N_VALUES);
        unsigned char *q = xmalloc(bytes);
        quant_quantize_row(ggml_ref[t], x, q, N_VALUES);
        char name[8] = {0};
        snprintf(name, sizeof name, "%s+", enc_dtype_name(ggml_ref[t]));
        uint32_t n = N_VALUES;
        fwrite(name, 1, 8, f);
        fwrite(&n, 4, 1, f);
        fwrite(x, sizeof *x, N_VALUES, f);
        fwrite(q, 1, bytes, f);
        free(q);
    }
    return fclose(f) == 0 ? 0 : 1;
}

/* --- quantize -> dequantize ------------------------------------------------- */

/* Inputs of 4 superblocks (1024 values) by kind: 0 gaussian, 1 gaussian with
 * outliers, 2 all positive, 3 all negative, 4 constant, 5 zero, 6 sub-blocks
 * of very different magnitudes, 7 subnormal floats (below any f16 scale). */
static void make_input(int kind, float *x, int n)
{
    for (int i = 0; i < n; i++) {
        float g = qb_gauss();
        switch (kind) {
        case 0:
            x[i] = g;
            break;
        case 1:
            x[i] = (qb_next() % 97 == 0) ? 20.0f * g : g;
            break;
        case 2:
            x[i] = fabsf(g) + 0.25f;
            break;
        case 3:
            x[i] = -fabsf(g) - 0.5f;
            break;
        case 4:
            x[i] = 0.75f;
            break;
        case 5:
            x[i] = 0.0f;
            break;
        case 6:
            x[i] = g * ldexpf(1.0f, (i / 32) % 7 - 3);
            break;
        default:
            x[i] = g * 1e-39f;
            break;
        }
    }
}

/* The grid of value j of K-type block b: levels off + step * q, q in [lo, hi]. */
static void k_grid(enc_dtype dt, const unsigned char *b, int j, double *step, double *off, int *lo,
                   int *hi)
{
    if (dt == ENC_Q6_K) {
        const block_q6_K *k = (const block_q6_K *)b;
        *step = (double)enc_f16_to_f32(k->d) * k->scales[j / 16], *off = 0, *lo = -32, *hi = 31;
        return;
    }
    const block_q4_K *k = (const block_q4_K *)b; /* d, dmin, scales alike in Q5_K */
    int sc, m;
    quant_scale_min_k4(k->scales, j / 32, &sc, &m);
    *step = (double)enc_f16_to_f32(k->d) * sc, *off = -(double)enc_f16_to_f32(k->dmin) * m;
    *lo = 0, *hi = dt == ENC_Q4_K ? 15 : 31;
}

/* The largest error a value x of block b may have (stated per type):
 *   Q8_0: half a step d plus the f16 rounding of d times |q| <= 127
 *         (2^-11 relative): 0.5 d + 127 * 2^-11 d  < 0.57 |d|
 *   Q4_0: one step |d| at the clamped end (ggml's d = max / -8 leaves 16
 *         levels for 17), plus f16 rounding: 1.01 |d|
 *   Q4_K, Q5_K, Q6_K: the distance from x to the nearest level of its
 *         block's grid (a value beyond the grid's ends clips), plus float
 *         rounding: every value on its nearest level. */
static double value_bound(enc_dtype dt, const unsigned char *b, int j, float x)
{
    double slack = 1e-6 * (fabs(x) + 1.0);
    uint16_t h;
    switch (dt) {
    case ENC_Q8_0:
        memcpy(&h, b, 2);
        return 0.57 * fabs(enc_f16_to_f32(h)) + slack;
    case ENC_Q4_0:
        memcpy(&h, b, 2);
        return 1.01 * fabs(enc_f16_to_f32(h)) + slack;
    case ENC_Q4_K:
    case ENC_Q5_K:
    case ENC_Q6_K: {
        double step, off, near = INFINITY;
        int lo, hi;
        k_grid(dt, b, j, &step, &off, &lo, &hi);
        for (int q = lo; q <= hi; q++)
            near = fmin(near, fabs((double)x - (off + step * q)));
        return near * (1 + 1e-6) + slack;
    }
    default:
        return 0;
    }
}

static void check_round_trip(enc_dtype dt, int kind)
{
    enum { N = 1024 };
    float x[N], y[N];
    size_t bb = enc_dtype_block_bytes(dt);
    int64_t be = enc_dtype_block_elems(dt);
    unsigned char *q = xmalloc(enc_dtype_row_bytes(dt, N));
    make_input(kind, x, N);
    if (quant_quantize_row(dt, x, q, N) != 0 || quant_dequantize_row(dt, q, y, N) != 0) {
        fprintf(stderr, "FAIL %s: quantize/dequantize refused %d values\n", enc_dtype_name(dt), N);
        g_failures++;
        free(q);
        return;
    }
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const unsigned char *b = q + (size_t)(i / be) * bb;
        double err = fabs((double)x[i] - (double)y[i]);
        double bound = value_bound(dt, b, (int)(i % be), x[i]);
        if (!(err <= bound) && bad++ < 3)
            fprintf(stderr, "FAIL %s kind %d: value %d: %g -> %g, error %g > bound %g\n",
                    enc_dtype_name(dt), kind, i, x[i], y[i], err, bound);
    }
    g_failures += bad;
    if (kind == 5)
        for (int i = 0; i < N; i++)
            if (y[i] != 0.0f) {
                fprintf(stderr, "FAIL %s: zeros come back as %g\n", enc_dtype_name(dt), y[i]);
                g_failures++;
                break;
            }
    free(q);
}

/* The activations' Q8_K: q within half a step, bsums the sums of 16 q. */
static void check_q8_k(void)
{
    float x[QUANT_K];
    block_q8_K b;
    make_input(1, x, QUANT_K);
    quant_quantize_row(ENC_Q8_K, x, &b, QUANT_K);
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int l = 0; l < 16; l++)
            s += b.qs[16 * g + l];
        if (s != b.bsums[g]) {
            fprintf(stderr, "FAIL Q8_K: bsums[%d] = %d, the values sum to %d\n", g, b.bsums[g], s);
            g_failures++;
        }
    }
    for (int j = 0; j < QUANT_K; j++)
        if (!(fabs(x[j] - b.d * b.qs[j]) <= 0.5 * b.d * (1 + 1e-5))) {
            fprintf(stderr, "FAIL Q8_K: value %d: %g -> %g\n", j, x[j], b.d * b.qs[j]);
            g_failures++;
            break;
        }
}

static void check_refusals(void)
{
    float x[64] = {0};
    unsigned char q[512];
    if (quant_quantize_row(ENC_Q4_K, x, q, 64) != -1 ||
        quant_dequantize_row(ENC_Q8_0, q, x, 33) != -1 ||
        quant_quantize_row(ENC_F32, x, q, 32) != -1 ||
        quant_dequantize_row(ENC_I32, q, x, 32) != -1 ||
        quant_widen_row(ENC_Q8_0, q, x, 32) != -1 || quant_widen_row(ENC_Q3_K, q, x, 128) != -1 ||
        quant_quantize_row(ENC_Q5_0, x, q, 32) != -1) {
        fprintf(stderr, "FAIL: a partial block, a non-block type, widening a type that is not "
                        "widened or quantizing to one was not refused\n");
        g_failures++;
    }
}

/* Relative RMS error on gaussian data, an upper bound per type (the ideal
 * uniform quantizer's is step / sqrt(12) over sigma). The K types' bounds
 * ask for the least-squares scales: over the 0.6B bench checkpoint's
 * weights (BENCHMARKS.md) the min-max scales rounded up that quant.c had
 * before measured 0.0798 (Q4_K), 0.0392 (Q5_K) and 0.0196 (Q6_K), the
 * least-squares ones 0.0704, 0.0348 and 0.0167; 16384 values estimate it to
 * about 1%. */
static double rms_bound(enc_dtype dt)
{
    switch (dt) {
    case ENC_Q8_0:
        return 0.007;
    case ENC_Q4_0:
        return 0.10;
    case ENC_Q4_K:
        return 0.075;
    case ENC_Q5_K:
        return 0.037;
    default:
        return 0.018; /* Q6_K */
    }
}

static void check_rms(enc_dtype dt)
{
    enum { N = 64 * QUANT_K };
    float *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    unsigned char *q = xmalloc(enc_dtype_row_bytes(dt, N));
    qb_rng = 0x9e3779b97f4a7c15ull; /* the same values for every type */
    for (int i = 0; i < N; i++)
        x[i] = qb_gauss();
    double se = 0, sx = 0;
    if (quant_quantize_row(dt, x, q, N) == 0 && quant_dequantize_row(dt, q, y, N) == 0)
        for (int i = 0; i < N; i++) {
            se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
            sx += (double)x[i] * x[i];
        }
    double rel = sx > 0 ? sqrt(se / sx) : INFINITY;
    printf("%s: relative RMS error on gaussian data %.4f (bound %.4f)\n", enc_dtype_name(dt), rel,
           rms_bound(dt));
    if (!(rel <= rms_bound(dt))) {
        fprintf(stderr, "FAIL %s: relative RMS error %g > %g\n", enc_dtype_name(dt), rel,
                rms_bound(dt));
        g_failures++;
    }
    free(x);
    free(y);
    free(q);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
    for (int t = 0; t < 5; t++)
        for (int kind = 0; kind < 8; kind++)
            check_round_trip(WEIGHT_TYPES[t], kind);
    for (int t = 0; t < 5; t++)
        check_rms(WEIGHT_TYPES[t]);
    check_q8_k();
    check_refusals();
    if (g_failures) {
        fprintf(stderr, "test_quant: %d failures\n", g_failures);
        return 1;
    }
    printf("test_quant: ok\n");
    return 0;
}
