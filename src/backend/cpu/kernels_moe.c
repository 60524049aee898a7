/* kernels_moe.c - routing, the expert-indexed matmul and the weighted sum of
 * a mixture-of-experts layer on the CPU (kernels_moe.h).
 *
 * Routing is per token: one row of scores on the stack (at most 512
 * experts), k passes of an arg-max that keeps the lower id on ties. The
 * expert matmul gives each thread its rows of the chosen experts (in a
 * decode step a run of whole experts, in a prefill its part of each:
 * moe__plan); for each expert, a share gathers the x rows of up to 16
 * (token, slot) pairs that chose it onto its stack and runs cpu_matmul over
 * its rows of the expert's matrix, so the expert's
 * weights stream once per 16 pairs (once per step in decode) with the
 * register tiles of a dense matmul, and a token's bits are those of a dense
 * matmul with its expert's matrix, whatever the grouping. Over block-quantized
 * experts the rows gathered are the activations already in 8-bit blocks
 * (quantized once per row before the call, as for a dense matmul), and
 * cpu_matmul's integer dots run over them; over experts in the interleaved
 * layout (each expert's matrix on its own, repack.h) cpu_matmul_packed's,
 * the same bits; with bf16 activations (x_bf16) cpu_matmul_bf16x's. A
 * share's rows start at a multiple of 16, a whole group. */
#include "backend/cpu/kernels_moe.h"

#include <math.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/repack.h"
#include "base/quant.h"

enum { MOE__MAX_EXPERTS = 512 };

/* [*i0, *i1): the ith of nth contiguous chunks of [0, n). */
static void moe__split(int64_t n, int ith, int nth, int64_t *i0, int64_t *i1)
{
    int64_t per = (n + nth - 1) / nth;
    int64_t a = per * ith, b = a + per;
    *i0 = a < n ? a : n;
    *i1 = b < n ? b : n;
}

/* --- routing ---------------------------------------------------------------- */

/* softmax(l[0 .. n)) in f32: the max, exp(l - max) and their sum in index
 * order, then one division each. */
static void moe__softmax(const float *l, int64_t n, float *p)
{
    float m = l[0];
    for (int64_t e = 1; e < n; e++)
        m = l[e] > m ? l[e] : m;
    float sum = 0.0f;
    for (int64_t e = 0; e < n; e++) {
        p[e] = expf(l[e] - m);
        sum += p[e];
    }
    for (int64_t e = 0; e < n; e++)
        p[e] /= sum;
}

/* The scores of one token's logits; a new router kind adds its case. */
static void moe__scores(int router, const float *l, int64_t n, float *p)
{
    switch (router) {
    case CPU_ROUTER_SOFTMAX:
    default:
        moe__softmax(l, n, p);
        break;
    }
}

/* The index of the largest p[e] not yet taken; the first on ties. */
static int64_t moe__best(const float *p, const unsigned char *taken, int64_t n)
{
    int64_t best = -1;
    for (int64_t e = 0; e < n; e++)
        if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
    return best;
}

void cpu_moe_route(const float *logits, int64_t n_tokens, int64_t n_experts, int64_t k, int router,
                   int32_t *ids, int ith, int nth)
{
    float p[MOE__MAX_EXPERTS];
    unsigned char taken[MOE__MAX_EXPERTS];
    int64_t t0, t1;
    moe__split(n_tokens, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        moe__scores(router, logits + t * n_experts, n_experts, p);
        memset(taken, 0, (size_t)n_experts);
        for (int64_t s = 0; s < k; s++) {
            int64_t e = moe__best(p, taken, n_experts);
            taken[e] = 1;
            ids[t * k + s] = (int32_t)e;
        }
    }
}

void cpu_moe_weights(const float *logits, const int32_t *ids, int64_t n_tokens, int64_t n_experts,
                     int64_t k, int router, int norm, float *w, int ith, int nth)
{
    float p[MOE__MAX_EXPERTS];
    int64_t t0, t1;
    moe__split(n_tokens, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        moe__scores(router, logits + t * n_experts, n_experts, p);
        float sum = 0.0f, *wt = w + t * k;
        for (int64_t s = 0; s < k; s++) {
            int32_t e = ids[t * k + s];
            wt[s] = e >= 0 && e < n_experts ? p[e] : 0.0f;
            sum += wt[s];
        }
        if (norm && sum > 0.0f)
            for (int64_t s = 0; s < k; s++)
                wt[s] /= sum;
    }
}

/* --- the expert matmul ------------------------------------------------------- */

/* The staging of one share (on the caller's stack): up to MOE__CHUNK pairs
 * of one expert, their x rows gathered (f32, or 8-bit blocks), their results
 * for the share's rows. */
enum { MOE__STAGE_FLOATS = 8192, MOE__CHUNK = 16, MOE__ROW_ALIGN = 16 };
_Static_assert(MOE__ROW_ALIGN % CPU_REPACK_ROWS == 0,
               "a share starts at a whole interleaved group");

/* Bytes of one x row: K floats, K bf16 values (x_bf16), or K values in the
 * blocks of the weights' dot type (quant_dot_dtype) for block-quantized
 * experts. */
static size_t moe__x_row_bytes(const cpu_matmul_id_args *a)
{
    if (a->x_bf16) return (size_t)a->n_in * sizeof(uint16_t);
    return enc_dtype_row_bytes(quant_dot_dtype(a->w_dtype), a->n_in);
}

static const void *moe__x_row(const cpu_matmul_id_args *a, int64_t p)
{
    return (const char *)a->x + (size_t)(a->x_per_slot ? p : p / a->k) * moe__x_row_bytes(a);
}

/* ys [m, nr] = x [m, n_in] times the nr rows at w0 of an expert's matrix
 * (in its layout). */
static void moe__matmul(const cpu_matmul_id_args *a, const void *x, int m, const void *w0,
                        int64_t nr, float *ys)
{
    if (a->x_bf16)
        cpu_matmul_bf16x(x, m, a->n_in, w0, nr, ys, 0, 1);
    else if (a->packed)
        cpu_matmul_packed(x, m, a->n_in, w0, a->w_dtype, nr, ys, 0, 1);
    else
        cpu_matmul(x, m, a->n_in, w0, a->w_dtype, nr, ys, 0, 1);
}

/* Rows [n0, n1) of expert matrix we for the m pairs in pairs[]: gathered
 * into xs, multiplied by cpu_matmul (one share: these rows only) into ys
 * [m, n1 - n0], scattered to y. */
static void moe__chunk(const cpu_matmul_id_args *a, const void *we, const int64_t *pairs, int m,
                       int64_t n0, int64_t n1, float *xs, float *ys)
{
    int64_t K = a->n_in, nr = n1 - n0;
    size_t xrb = moe__x_row_bytes(a);
    const void *w0 = (const char *)we + (size_t)n0 * enc_dtype_row_bytes(a->w_dtype, K);
    for (int i = 0; i < m; i++)
        memcpy((char *)xs + (size_t)i * xrb, moe__x_row(a, pairs[i]), xrb);
    moe__matmul(a, xs, m, w0, nr, ys);
    for (int i = 0; i < m; i++)
        memcpy(a->y + pairs[i] * a->n_out + n0, ys + i * nr, (size_t)nr * sizeof(float));
}

/* The experts some pair chose, in id order, into used[]; their number. */
static int64_t moe__used_experts(const cpu_matmul_id_args *a, int32_t *used)
{
    unsigned char chosen[MOE__MAX_EXPERTS] = {0};
    for (int64_t p = 0; p < a->n_tokens * a->k; p++)
        if (a->ids[p] >= 0 && a->ids[p] < a->n_experts) chosen[a->ids[p]] = 1;
    int64_t n = 0;
    for (int64_t e = 0; e < a->n_experts; e++)
        if (chosen[e]) used[n++] = (int32_t)e;
    return n;
}

/* Rows [n0, n1) of expert e for every pair that chose it, 16 pairs (or
 * what the staging holds) at a time. */
static void moe__expert_rows(const cpu_matmul_id_args *a, int64_t e, int64_t n0, int64_t n1,
                             int chunk, float *xs, float *ys)
{
    size_t expert_bytes = (size_t)a->n_out * enc_dtype_row_bytes(a->w_dtype, a->n_in);
    const void *we = (const char *)a->w + (size_t)e * expert_bytes;
    int64_t pairs[MOE__CHUNK];
    int m = 0;
    for (int64_t p = 0; p < a->n_tokens * a->k; p++) {
        if (a->ids[p] != e) continue;
        if (chunk < 2) { /* rows too long to stage: one pair at a time, in place (its x
                          * row read where it is, its outputs written where they go) */
            const void *w0 =
                (const char *)we + (size_t)n0 * enc_dtype_row_bytes(a->w_dtype, a->n_in);
            moe__matmul(a, moe__x_row(a, p), 1, w0, n1 - n0, a->y + p * a->n_out + n0);
            continue;
        }
        pairs[m++] = p;
        if (m == chunk) moe__chunk(a, we, pairs, m, n0, n1, xs, ys), m = 0;
    }
    if (m) moe__chunk(a, we, pairs, m, n0, n1, xs, ys);
}

/* A thread's rows of each chosen expert. In a decode step (at most 16
 * pairs an expert on average) each expert's weights are read once and the
 * bytes set the pace: the chosen experts' rows lie end to end in id order,
 * each expert padded to a multiple of 16 rows, cut into nth runs of whole
 * 16-row groups, so a thread streams whole experts but for its run's two
 * ends, instead of its part of every expert (an MoE bf16 decode step of 16
 * sequences ran 5-11% faster so on a Zen 5 EPYC, BENCHMARKS.md). With more
 * pairs (a prefill) the multiply-adds set it, and each thread takes its
 * part of every expert, so the work splits evenly whatever the pairs per
 * expert. Which thread computes a row changes no value. */
typedef struct moe__shares {
    int runs;             /* runs over the experts, else a part of each */
    int64_t stride;       /* an expert's rows padded to 16 */
    int64_t r0, r1;       /* runs: this thread's rows of the experts end to end */
    int64_t part0, part1; /* else: this thread's rows of every expert */
} moe__shares;

static int64_t moe__align(int64_t n)
{
    return (n + MOE__ROW_ALIGN - 1) / MOE__ROW_ALIGN * MOE__ROW_ALIGN;
}

static moe__shares moe__plan(const cpu_matmul_id_args *a, int64_t n_used, int ith, int nth)
{
    moe__shares sh = {0};
    sh.runs = a->n_tokens * a->k <= MOE__CHUNK * n_used;
    sh.stride = moe__align(a->n_out);
    int64_t total = sh.runs ? n_used * sh.stride : a->n_out;
    int64_t per = moe__align((total + nth - 1) / nth);
    int64_t lo = per * ith < total ? per * ith : total, hi = lo + per < total ? lo + per : total;
    if (sh.runs)
        sh.r0 = lo, sh.r1 = hi;
    else
        sh.part0 = lo, sh.part1 = hi;
    return sh;
}

/* [*n0, *n1): the thread's rows of the u-th chosen expert (maybe none). */
static void moe__rows(const moe__shares *sh, int64_t u, int64_t n_out, int64_t *n0, int64_t *n1)
{
    if (!sh->runs) {
        *n0 = sh->part0, *n1 = sh->part1;
        return;
    }
    int64_t base = u * sh->stride;
    *n0 = sh->r0 > base ? sh->r0 - base : 0;
    *n1 = sh->r1 - base < n_out ? sh->r1 - base : n_out;
}

void cpu_matmul_id(const cpu_matmul_id_args *a, int ith, int nth)
{
    int64_t n_pairs = a->n_tokens * a->k;
    int32_t used[MOE__MAX_EXPERTS];
    int64_t n_used = moe__used_experts(a, used);
    moe__shares sh = moe__plan(a, n_used, ith, nth);

    int64_t z0, z1; /* an id out of range: a zero row, this thread's part of it */
    moe__split(a->n_out, ith, nth, &z0, &z1);
    for (int64_t p = 0; p < n_pairs && z0 < z1; p++)
        if (a->ids[p] < 0 || a->ids[p] >= a->n_experts)
            memset(a->y + p * a->n_out + z0, 0, (size_t)(z1 - z0) * sizeof(float));

    float xs[MOE__STAGE_FLOATS], ys[MOE__STAGE_FLOATS];
    int64_t rows = sh.runs ? sh.r1 - sh.r0 : sh.part1 - sh.part0; /* the most of one expert */
    rows = rows < a->n_out ? rows : a->n_out;
    int64_t fit_x = (int64_t)(sizeof xs / moe__x_row_bytes(a)),
            fit_y = MOE__STAGE_FLOATS / (rows > 0 ? rows : 1);
    int64_t fit = fit_x < fit_y ? fit_x : fit_y;
    int chunk = fit < MOE__CHUNK ? (int)fit : MOE__CHUNK;
    for (int64_t u = 0; u < n_used; u++) {
        int64_t n0, n1;
        moe__rows(&sh, u, a->n_out, &n0, &n1);
        if (n0 < n1) moe__expert_rows(a, used[u], n0, n1, chunk, xs, ys);
    }
}

/* --- the weighted sum -------------------------------------------------------- */

void cpu_moe_sum(const float *y, const float *w, int64_t n_tokens, int64_t k, int64_t n, float *out,
                 int ith, int nth)
{
    int64_t t0, t1;
    moe__split(n_tokens, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        float *o = out + t * n;
        for (int64_t i = 0; i < n; i++)
            o[i] = 0.0f;
        for (int64_t s = 0; s < k; s++) {
            const float *ys = y + (t * k + s) * n;
            float ws = w[t * k + s];
            for (int64_t i = 0; i < n; i++)
                o[i] += ws * ys[i];
        }
    }
}
