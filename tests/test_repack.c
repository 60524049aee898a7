/* test_repack.c - the CPU backend's interleaved weight layout (repack.h) and
 * the matmul over it (cpu_matmul_packed), for Q4_0, Q8_0, Q5_0, IQ4_NL,
 * Q4_K, Q5_K, Q6_K, IQ4_XS, Q2_K, Q3_K, Q4_1 and Q5_1, on every ISA this
 * CPU runs:
 *
 *   - the layout is the one repack.h draws: block b of row r's f16 fields
 *     and other bytes found at the offsets computed here from the drawing
 *     (the fields' places from quant_blocks.h), and the round trip (rows ->
 *     interleaved -> rows) gives back every byte; get_rows over the
 *     interleaved table gives the row layout's floats;
 *   - cpu_matmul_packed over the interleaved bytes equals the portable dot
 *     (the scalar table's cpu_matmul over the row layout) bit for bit, for
 *     8, 13, 37 and 69 rows (tails of 0..5 rows past the last group), token
 *     counts 1..9 and 67, and 1, 2 and 3 threads; and Q4_0 rows of 8224
 *     blocks (too long for the token table made ahead). With AVX-512 VNNI,
 *     calls of 2+ tokens take Q4_0/Q8_0 groups in pairs (the 16-row
 *     kernel) and a thread's odd last group alone: 37 and 69 rows split
 *     over 1-3 threads give both;
 *   - the CPU backend: a repacked buffer (one matrix, or a stack of three,
 *     each repacked on its own) reads back in the row layout and refuses a
 *     write by name; with ENCORE_CPU_REPACK=0 it stays a plain buffer (the
 *     write goes through).
 *
 * Weights are quantized gaussians and raw random blocks (negative scales,
 * -128 in Q8_0, every nibble 0 or 15); the last tokens are all +127 and all
 * -127 bytes, the largest sums the kernels' int16 lanes hold. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "backend/cpu/repack.h"
#include "base/dtype.h"
#include "base/quant.h"
#include "base/threadpool.h"
#include "matmul_task.h"

typedef void (*task_fn)(void *ctx, int ith, int nth);
#include "isa_fail.h"
#include "quant_blocks.h"
#include "xalloc.h"

static enc_threadpool *g_pool; /* 2 threads */

enum { K = 512, MAX_ROWS = 69, MAX_T = 67 };
/* The row length of the checks below: K, and once rows of more blocks than
 * a token block's table holds on the stack (kernels_quant.c's
 * CPU__QX_TOK_MAX, 8192), where the kernels take each token's scale and
 * (Q4_0) byte sum from its block themselves. */
static const int64_t K_LONG = 32 * 8224;
static int64_t g_k = K;
enum { N_TYPES = 12 };
static const enc_dtype TYPES[N_TYPES] = {ENC_Q4_0, ENC_Q8_0, ENC_Q5_0, ENC_IQ4_NL,
                                         ENC_Q4_K, ENC_Q5_K, ENC_Q6_K, ENC_IQ4_XS,
                                         ENC_Q2_K, ENC_Q3_K, ENC_Q4_1, ENC_Q5_1};
static const int ROWS[4] = {8, 13, 37, 69};

/* Rows r % 3 == 2 raw random blocks, the others quantized gaussians (random
 * blocks too for Q5_0, IQ4_NL, IQ4_XS, Q2_K and Q3_K, which have no
 * quantizer here). */
static void fill_weights(enc_dtype dt, int rows, unsigned char *w)
{
    size_t rb = enc_dtype_row_bytes(dt, g_k), bb = enc_dtype_block_bytes(dt);
    float *row = xcalloc((size_t)g_k, sizeof *row);
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < g_k; i++)
            row[i] = qb_gauss() * (r % 3 ? 0.02f : 1.0f);
        if (r % 3 == 2 || quant_quantize_row(dt, row, w + r * rb, g_k) != 0)
            for (int b = 0; b < g_k / enc_dtype_block_elems(dt); b++)
                qb_block(dt, (r / 3 + b) % 5, w + r * rb + b * bb);
    }
    free(row);
}

/* T tokens' activations for dt's dot (Q8_0 or Q8_K), the last two all
 * +127 and all -127. */
static void fill_tokens(enc_dtype dt, int T, unsigned char *xq)
{
    float *x = xcalloc((size_t)g_k, sizeof *x);
    enc_dtype xt = quant_dot_dtype(dt);
    size_t xrb = enc_dtype_row_bytes(xt, g_k);
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < g_k; i++)
            x[i] = t == T - 2 ? 1.0f : t == T - 1 ? -1.0f : qb_gauss() * (i % 97 ? 1.0f : 8.0f);
        quant_quantize_row(xt, x, xq + t * xrb, g_k);
    }
    free(x);
}

/* --- the layout ---------------------------------------------------------------- */

/* The 16-bit fields repack.h draws as planes: the f16 ones, and IQ4_XS's
 * scales_h (at byte 2). */
static int drawn_planes(enc_dtype dt, int *off)
{
    int nf = qb_f16_fields(dt, off);
    if (dt == ENC_IQ4_XS) off[nf++] = 2;
    return nf;
}

/* Where repack.h draws byte j of row ri's block within the group's block:
 * 16-bit field f (at off[f] in the row's block) in plane f, any other byte,
 * the q-th of those, in chunk q / 4 after the planes. */
static size_t drawn_at(enc_dtype dt, int ri, size_t j)
{
    int off[2], nf = drawn_planes(dt, off);
    size_t q = j;
    for (int f = 0; f < nf; f++) {
        if (j >= (size_t)off[f] && j < (size_t)off[f] + 2)
            return 16 * (size_t)f + 2 * (size_t)ri + (j - (size_t)off[f]);
        if ((size_t)off[f] < j) q -= 2;
    }
    return 16 * (size_t)nf + 32 * (q / 4) + 4 * (size_t)ri + q % 4;
}

/* get_rows over the interleaved table p equals get_rows over the rows w
 * (every row, the tail included, an id out of range a zero row). */
static void check_get_rows(enc_dtype dt, int rows, const unsigned char *w, const unsigned char *p)
{
    int32_t ids[MAX_ROWS + 1];
    for (int i = 0; i < rows; i++)
        ids[i] = (i * 7 + 3) % rows;
    ids[rows] = rows; /* out of range */
    size_t n = (size_t)(rows + 1) * (size_t)g_k;
    float *want = xcalloc(n, sizeof *want), *got = xcalloc(n, sizeof *got);
    cpu_get_rows(w, dt, rows, g_k, ids, rows + 1, want, 0, 1);
    memset(got, 0x7f, n * sizeof *got);
    for (int ith = 0; ith < 2; ith++)
        cpu_get_rows_packed(p, dt, rows, g_k, ids, rows + 1, got, ith, 2);
    if (memcmp(want, got, n * sizeof *got) != 0)
        fail("%s, %d rows: get_rows over the interleaved table differs from the rows'",
             enc_dtype_name(dt), rows);
    free(want), free(got);
}

/* repack.h's drawing, read plainly (drawn_at), for every byte. */
static void check_layout(enc_dtype dt, int rows)
{
    size_t rb = enc_dtype_row_bytes(dt, g_k), bb = enc_dtype_block_bytes(dt);
    int64_t nb = g_k / enc_dtype_block_elems(dt);
    unsigned char *w = xcalloc(1, rb * rows), *p = xcalloc(1, rb * rows);
    void *tmp = xcalloc(1, cpu_repack_tmp_bytes(dt, g_k));
    fill_weights(dt, rows, w);
    memcpy(p, w, rb * rows);
    cpu_repack_matrix(p, dt, rows, g_k, false, tmp);
    int bad = 0;
    for (int r = 0; r < rows && !bad; r++)
        for (int b = 0; b < nb && !bad; b++) {
            const unsigned char *row = w + r * rb + b * bb;
            const unsigned char *il = p + (size_t)(r / 8) * 8 * rb + (size_t)b * 8 * bb;
            int ri = r % 8;
            if (r >= rows / 8 * 8) { /* the tail: unmoved */
                bad = memcmp(p + r * rb + b * bb, row, bb) != 0;
                continue;
            }
            for (size_t j = 0; j < bb && !bad; j++)
                bad = il[drawn_at(dt, ri, j)] != row[j];
            unsigned char blk[sizeof(block_q6_K)], blk2[sizeof(block_q6_K)];
            cpu_repack_block(p + (size_t)(r / 8) * 8 * rb, dt, b, ri, blk);
            cpu_repack_row_block(p, dt, rows, g_k, r, b, blk2);
            if (!bad) bad = memcmp(blk, row, bb) != 0 || memcmp(blk2, row, bb) != 0;
            if (bad)
                fail("%s, %d rows: row %d block %d not where repack.h draws it", enc_dtype_name(dt),
                     rows, r, b);
        }
    if (memcmp(p, w, rb * rows) == 0)
        fail("%s, %d rows: repacking moved nothing", enc_dtype_name(dt), rows);
    check_get_rows(dt, rows, w, p);
    cpu_repack_matrix(p, dt, rows, g_k, true, tmp);
    if (memcmp(p, w, rb * rows) != 0)
        fail("%s, %d rows: the round trip changed bytes", enc_dtype_name(dt), rows);
    free(w), free(p), free(tmp);
}

/* --- the kernels ----------------------------------------------------------------- */

/* c->w interleaved: cpu_matmul_packed */
static void mm_packed_task(void *p, int ith, int nth)
{
    mm_ctx *c = p;
    cpu_matmul_packed(c->x, c->n_tokens, c->k, c->w, c->dt, c->n_out, c->y, ith, nth);
}

static void run_nth(mm_ctx *c, int packed, int nth)
{
    task_fn fn = packed ? mm_packed_task : mm_task;
    if (nth == 2) { /* a real pool */
        threadpool_run(g_pool, fn, c);
        return;
    }
    for (int ith = nth - 1; ith >= 0; ith--)
        fn(c, ith, nth);
}

/* The first token count whose packed y differs from want, or 0. */
static int compare_packed(enc_dtype dt, int rows, const unsigned char *p, const unsigned char *xq,
                          const float *want, float *y, int nth)
{
    static const int counts[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, MAX_T};
    size_t xrb = enc_dtype_row_bytes(quant_dot_dtype(dt), g_k);
    for (int i = 0; i < 10; i++) {
        int T = counts[i], t0 = MAX_T - T; /* the small batches end at the +-127 tokens */
        mm_ctx c = {xq + t0 * xrb, T, g_k, p, dt, rows, y};
        run_nth(&c, 1, nth);
        for (int e = 0; e < T * rows; e++)
            if (memcmp(&y[e], &want[t0 * rows + e], sizeof(float)) != 0) {
                fail("%s, %d rows, %d tokens, nth %d: token %d row %d is %.9g, the portable dot's "
                     "%.9g",
                     enc_dtype_name(dt), rows, T, nth, t0 + e / rows, e % rows, (double)y[e],
                     (double)want[t0 * rows + e]);
                return T;
            }
    }
    return 0;
}

static void check_kernels(enc_dtype dt, int rows, cpu_isa isa)
{
    size_t rb = enc_dtype_row_bytes(dt, g_k), xrb = enc_dtype_row_bytes(quant_dot_dtype(dt), g_k);
    unsigned char *w = xcalloc(1, rb * rows), *p = xcalloc(1, rb * rows),
                  *xq = xcalloc(1, xrb * MAX_T);
    void *tmp = xcalloc(1, cpu_repack_tmp_bytes(dt, g_k));
    float *want = xcalloc(1, sizeof(float) * MAX_T * rows),
          *y = xcalloc(1, sizeof(float) * MAX_T * rows);
    fill_weights(dt, rows, w);
    fill_tokens(dt, MAX_T, xq);
    memcpy(p, w, rb * rows);
    cpu_repack_matrix(p, dt, rows, g_k, false, tmp);
    cpu_kernels_force_isa(CPU_ISA_SCALAR); /* the portable dot over the row layout */
    mm_ctx c = {xq, MAX_T, g_k, w, dt, rows, want};
    run_nth(&c, 0, 1);
    cpu_kernels_force_isa(isa);
    for (int nth = 1; nth <= 3; nth++)
        if (compare_packed(dt, rows, p, xq, want, y, nth)) break;
    free(w), free(p), free(xq), free(tmp), free(want), free(y);
}

static void check_all_kernels(cpu_isa isa)
{
    for (int t = 0; t < N_TYPES; t++)
        for (int r = 0; r < 4; r++)
            check_kernels(TYPES[t], ROWS[r], isa);
    g_k = K_LONG;
    check_kernels(ENC_Q4_0, 13, isa);
    g_k = K;
}

/* --- the backend ------------------------------------------------------------------ */

/* A buffer of n_mats matrices of 13 rows (n_mats > 1: a stack of experts,
 * each repacked on its own). */
static void check_backend(int repack, int n_mats)
{
    const enc_dtype dt = ENC_Q4_0;
    const int rows = 13;
    size_t rb = enc_dtype_row_bytes(dt, K), n = rb * rows * (size_t)n_mats;
    unsigned char *w = xcalloc(1, n), *got = xcalloc(1, n);
    for (int m = 0; m < n_mats; m++)
        fill_weights(dt, rows, w + (size_t)m * rb * rows);
    backend *be = NULL;
    backend_buffer *buf = NULL;
    if (repack)
        unsetenv("ENCORE_CPU_REPACK");
    else
        setenv("ENCORE_CPU_REPACK", "0", 1);
    if (cpu_backend_create(1, &be) != ENC_OK || backend_buffer_alloc(be, n, "w", &buf) != ENC_OK ||
        backend_buffer_write(be, buf, 0, w, n) != ENC_OK ||
        backend_buffer_repack_matrix(be, buf, dt, n_mats, rows, K) != ENC_OK) {
        fail("backend (repack %d, %d matrices): cannot make the buffer: %s", repack, n_mats,
             enc_last_error());
        goto out;
    }
    if (backend_buffer_read(be, buf, rb + 5, got, n - rb - 5) != ENC_OK ||
        memcmp(got, w + rb + 5, n - rb - 5) != 0)
        fail("backend (repack %d, %d matrices): a read does not give the row layout's bytes",
             repack, n_mats);
    enc_status s = backend_buffer_write(be, buf, 0, w, 4);
    if (repack && (s == ENC_OK || !strstr(enc_last_error(), "repacked")))
        fail("backend: a write to a repacked matrix was not refused by name (%s)",
             enc_last_error());
    if (!repack && s != ENC_OK) fail("backend: a write to a row-layout matrix failed");
out:
    if (be) backend_buffer_free(be, buf);
    backend_destroy(be);
    unsetenv("ENCORE_CPU_REPACK");
    free(w), free(got);
}

int main(void)
{
    if (threadpool_create(2, &g_pool) != ENC_OK) {
        fprintf(stderr, "cannot create the thread pool\n");
        return 1;
    }
    for (int t = 0; t < N_TYPES; t++)
        for (int i = 0; i < 4; i++)
            check_layout(TYPES[t], ROWS[i]);
    int n_isas =
        isa_for_each(check_all_kernels, "Q4_0, Q8_0, Q5_0, IQ4_NL, Q4_K, Q5_K, Q6_K, IQ4_XS, Q2_K, "
                                        "Q3_K, Q4_1 and Q5_1, 4 row counts, 10 "
                                        "token counts, 1-3 threads; long Q4_0 rows");
    g_isa = "backend";
    check_backend(1, 1);
    check_backend(1, 3);
    check_backend(0, 1);
    threadpool_destroy(g_pool);
    return isa_verdict(n_isas);
}
