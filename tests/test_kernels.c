/* test_kernels.c - every CPU kernel (src/backend/cpu/kernels.h) against a
 * straightforward double-precision reference written here, and batch
 * invariance bit for bit, once for each ISA this CPU runs (scalar, AVX2,
 * AVX-512).
 *
 * Correctness is checked by error bounds (each stated where it is used); the
 * ISAs round differently, so they are compared with the reference, never with
 * each other. Batch invariance is checked with memcmp: the same token must
 * give the same bits with nth = 1..4, alone or among 7, 64 or 300 tokens at
 * any row, and for attention in a prefill, a decode or a mixed call.
 *
 * nth = 2 runs on a real thread pool; other thread counts run the nth shares
 * one after another, which yields exactly what nth threads would (each share
 * writes its own outputs) and keeps the test fast on a 2-core machine. */
#include <float.h>
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
#include "base/threadpool.h"

#include "isa_fail.h"
#include "matmul_task.h"

/* --- harness ------------------------------------------------------------- */

static enc_threadpool *g_pool; /* 2 threads */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void) /* splitmix64 */
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(rng_next() >> 11) / 9007199254740992.0);
}

static void fill_uniform(float *p, int64_t n, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = rng_uniform(lo, hi);
}

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

/* u = 2^-24, the unit roundoff of f32; gamma(n) = n u / (1 - n u) bounds the
 * relative error of n rounded operations in a row (Higham, 3.1). */
static const double U = 1.0 / 16777216.0;
static double gamma_n(double n)
{
    return n * U / (1.0 - n * U);
}

/* --- reference conversions (independent of base/dtype.c) ---------------- */

static double ref_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double ref_f16(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* w [n] of dt with values uniform in [-1, 1]; val[i] = the exact value. */
static void *make_weights(enc_dtype dt, int64_t n, double *val)
{
    void *w = xmalloc((size_t)n * enc_dtype_size(dt));
    for (int64_t i = 0; i < n; i++) {
        float f = rng_uniform(-1.0f, 1.0f);
        if (dt == ENC_F32) {
            ((float *)w)[i] = f;
            val[i] = f;
        } else if (dt == ENC_BF16) {
            uint16_t h = enc_f32_to_bf16(f);
            ((uint16_t *)w)[i] = h;
            val[i] = ref_bf16(h);
        } else {
            uint16_t h = enc_f32_to_f16(f);
            ((uint16_t *)w)[i] = h;
            val[i] = ref_f16(h);
        }
    }
    return w;
}

static const enc_dtype DTYPES[3] = {ENC_F32, ENC_BF16, ENC_F16};

/* --- matmul -------------------------------------------------------------- */

static void mm_run(const float *x, int64_t n_tokens, int64_t k, const void *w, enc_dtype dt,
                   int64_t n_out, float *y, int nth)
{
    mm_ctx c = {x, n_tokens, k, w, dt, n_out, y};
    run_nth(mm_task, &c, nth);
}

/* Against the reference y[t, n] = sum_k x w in double (exact products: f32 x
 * f32 fits in a double). Bound: |y - ref| <= gamma(k + 8) * sum_k |x w|, the
 * worst case of any summation order of k products (at most k + 4 roundings
 * lie on any product's path: one per accumulator block, <= 4 in the lane
 * tree), so it holds for every ISA's layout. */
static double test_matmul_ref(void)
{
    static const int64_t ks[] = {1,  3,  7,  8,  9,   15,  16,   17,  31,
                                 33, 63, 64, 65, 100, 255, 1000, 1024};
    static const int64_t n_outs[] = {1, 3, 17, 64, 100}; /* 100: several row blocks at k = 1024 */
    static const int64_t n_toks[] = {1, 3, 7, 13};
    double worst = 0;
    for (size_t ik = 0; ik < sizeof ks / sizeof *ks; ik++)
        for (size_t io = 0; io < sizeof n_outs / sizeof *n_outs; io++)
            for (size_t it = 0; it < sizeof n_toks / sizeof *n_toks; it++)
                for (int d = 0; d < 3; d++) {
                    int64_t k = ks[ik], n_out = n_outs[io], nt = n_toks[it];
                    float *x = xmalloc((size_t)(nt * k) * sizeof *x);
                    double *wv = xmalloc((size_t)(n_out * k) * sizeof *wv);
                    float *y = xmalloc((size_t)(nt * n_out) * sizeof *y);
                    fill_uniform(x, nt * k, -1.0f, 1.0f);
                    void *w = make_weights(DTYPES[d], n_out * k, wv);
                    mm_run(x, nt, k, w, DTYPES[d], n_out, y, (int)(1 + (ik + it) % 4));
                    for (int64_t t = 0; t < nt; t++)
                        for (int64_t n = 0; n < n_out; n++) {
                            double ref = 0, mag = 0;
                            for (int64_t i = 0; i < k; i++) {
                                ref += (double)x[t * k + i] * wv[n * k + i];
                                mag += fabs((double)x[t * k + i] * wv[n * k + i]);
                            }
                            double err = fabs(y[t * n_out + n] - ref);
                            double bound = gamma_n((double)k + 8) * mag + 1e-30;
                            if (err / bound > worst) worst = err / bound;
                            if (!(err <= bound))
                                fail("matmul %s k=%lld n_out=%lld n_tokens=%lld y[%lld,%lld]=%.9g "
                                     "ref=%.9g err=%.3g bound=%.3g",
                                     enc_dtype_name(DTYPES[d]), (long long)k, (long long)n_out,
                                     (long long)nt, (long long)t, (long long)n,
                                     (double)y[t * n_out + n], ref, err, bound);
                        }
                    free(x);
                    free(wv);
                    free(y);
                    free(w);
                }
    return worst;
}

/* y for 300 tokens with nth = 1 is the baseline; every other way of computing
 * the same token must give the same bits. Returns the number of comparisons.
 * [100, 1024] weights span several of a prefill's cache blocks of rows (about
 * 192 KiB: 48 f32 or 96 16-bit rows of 1024), whose edges move with nth. */
static int test_matmul_invariance(void)
{
    static const int64_t shapes[][2] = {{1024, 67}, {1000, 17}, {67, 1},
                                        {13, 5},    {100, 300}, {1024, 100}};
    static const int64_t windows[][2] = {{0, 1},  {1, 1},   {150, 1}, {299, 1},  {0, 7},
                                         {5, 7},  {293, 7}, {0, 64},  {100, 64}, {236, 64},
                                         {3, 13}, {17, 2},  {201, 99}};
    const int64_t N = 300;
    int n_cmp = 0;
    for (size_t is = 0; is < sizeof shapes / sizeof *shapes; is++)
        for (int d = 0; d < 3; d++) {
            int64_t k = shapes[is][0], n_out = shapes[is][1];
            float *x = xmalloc((size_t)(N * k) * sizeof *x);
            double *wv = xmalloc((size_t)(n_out * k) * sizeof *wv);
            float *base = xmalloc((size_t)(N * n_out) * sizeof *base);
            float *y = xmalloc((size_t)(N * n_out) * sizeof *y);
            fill_uniform(x, N * k, -1.0f, 1.0f);
            void *w = make_weights(DTYPES[d], n_out * k, wv);
            mm_run(x, N, k, w, DTYPES[d], n_out, base, 1);
            for (int nth = 2; nth <= 4; nth++) {
                mm_run(x, N, k, w, DTYPES[d], n_out, y, nth);
                n_cmp++;
                if (memcmp(y, base, (size_t)(N * n_out) * sizeof *y) != 0)
                    fail("matmul %s k=%lld n_out=%lld: nth=%d differs from nth=1",
                         enc_dtype_name(DTYPES[d]), (long long)k, (long long)n_out, nth);
            }
            for (size_t iw = 0; iw < sizeof windows / sizeof *windows; iw++)
                for (int nth = 1; nth <= 3; nth += 2) {
                    int64_t t0 = windows[iw][0], nt = windows[iw][1];
                    mm_run(x + t0 * k, nt, k, w, DTYPES[d], n_out, y, nth);
                    n_cmp++;
                    if (memcmp(y, base + t0 * n_out, (size_t)(nt * n_out) * sizeof *y) != 0)
                        fail("matmul %s k=%lld n_out=%lld: tokens [%lld, +%lld) nth=%d differ "
                             "from the same tokens among 300",
                             enc_dtype_name(DTYPES[d]), (long long)k, (long long)n_out,
                             (long long)t0, (long long)nt, nth);
                }
            free(x);
            free(wv);
            free(base);
            free(y);
            free(w);
        }
    return n_cmp;
}

/* --- get_rows ------------------------------------------------------------ */

typedef struct gr_ctx {
    const void *table;
    enc_dtype dt;
    int64_t n_rows, dim;
    const int32_t *ids;
    int64_t n;
    float *out;
} gr_ctx;

static void gr_task(void *p, int ith, int nth)
{
    gr_ctx *c = p;
    cpu_get_rows(c->table, c->dt, c->n_rows, c->dim, c->ids, c->n, c->out, ith, nth);
}

/* Conversion to f32 is exact for every dtype: the check is equality. */
static void test_get_rows(void)
{
    static const int64_t dims[] = {1, 7, 64, 100};
    static const int32_t ids[] = {0, 49, 3, -1, 50, 1000, 7, 7, 25};
    const int64_t n_rows = 50, n = sizeof ids / sizeof *ids;
    for (size_t id = 0; id < sizeof dims / sizeof *dims; id++)
        for (int d = 0; d < 3; d++)
            for (int nth = 1; nth <= 4; nth++) {
                int64_t dim = dims[id];
                double *val = xmalloc((size_t)(n_rows * dim) * sizeof *val);
                void *table = make_weights(DTYPES[d], n_rows * dim, val);
                float *out = xmalloc((size_t)(n * dim) * sizeof *out);
                for (int64_t i = 0; i < n * dim; i++)
                    out[i] = NAN;
                gr_ctx c = {table, DTYPES[d], n_rows, dim, ids, n, out};
                run_nth(gr_task, &c, nth);
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < dim; j++) {
                        double want = ids[i] >= 0 && ids[i] < n_rows ? val[ids[i] * dim + j] : 0.0;
                        if (out[i * dim + j] != want)
                            fail("get_rows %s dim=%lld nth=%d: out[%lld,%lld]=%g, want %g",
                                 enc_dtype_name(DTYPES[d]), (long long)dim, nth, (long long)i,
                                 (long long)j, (double)out[i * dim + j], want);
                    }
                free(val);
                free(table);
                free(out);
            }
}

/* --- rms_norm ------------------------------------------------------------ */

typedef struct rn_ctx {
    const float *x, *w;
    int64_t rows, dim;
    float eps;
    float *y;
} rn_ctx;

static void rn_task(void *p, int ith, int nth)
{
    rn_ctx *c = p;
    cpu_rms_norm(c->x, c->w, c->rows, c->dim, c->eps, c->y, ith, nth);
}

/* y = x * inv * w with inv = 1/sqrt(mean(x^2) + eps) from a double sum: three
 * roundings (inv to f32, two products), so |y - ref| <= 4u |ref|. Then the
 * invariance: a row alone, in place, and with nth = 1..4 gives the same bits. */
static void test_rms_norm(void)
{
    static const int64_t dims[] = {1, 3, 64, 128, 1000, 1024};
    const int64_t rows = 33;
    for (size_t id = 0; id < sizeof dims / sizeof *dims; id++) {
        int64_t dim = dims[id];
        float *x = xmalloc((size_t)(rows * dim) * sizeof *x);
        float *w = xmalloc((size_t)dim * sizeof *w);
        float *y = xmalloc((size_t)(rows * dim) * sizeof *y);
        float *y1 = xmalloc((size_t)(rows * dim) * sizeof *y1);
        fill_uniform(x, rows * dim, -3.0f, 3.0f);
        fill_uniform(w, dim, 0.5f, 1.5f);
        x[0] = 0.0f; /* a zero element, and row 1 all tiny */
        for (int64_t i = 0; i < dim; i++)
            x[dim + i] *= 1e-20f;
        const float eps = 1e-6f;
        rn_ctx c = {x, w, rows, dim, eps, y};
        run_nth(rn_task, &c, 1);
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0;
            for (int64_t i = 0; i < dim; i++)
                ss += (double)x[r * dim + i] * x[r * dim + i];
            double inv = 1.0 / sqrt(ss / (double)dim + eps);
            for (int64_t i = 0; i < dim; i++) {
                double ref = x[r * dim + i] * inv * w[i];
                if (!(fabs(y[r * dim + i] - ref) <= 4 * U * fabs(ref) + 1e-38))
                    fail("rms_norm dim=%lld y[%lld,%lld]=%.9g ref=%.9g", (long long)dim,
                         (long long)r, (long long)i, (double)y[r * dim + i], ref);
            }
        }
        for (int nth = 2; nth <= 4; nth++) {
            c.y = y1;
            run_nth(rn_task, &c, nth);
            if (memcmp(y, y1, (size_t)(rows * dim) * sizeof *y) != 0)
                fail("rms_norm dim=%lld: nth=%d differs from nth=1", (long long)dim, nth);
        }
        for (int64_t r = 0; r < rows; r += 7) { /* alone */
            rn_ctx one = {x + r * dim, w, 1, dim, eps, y1};
            run_nth(rn_task, &one, 1);
            if (memcmp(y1, y + r * dim, (size_t)dim * sizeof *y) != 0)
                fail("rms_norm dim=%lld: row %lld alone differs", (long long)dim, (long long)r);
        }
        memcpy(y1, x, (size_t)(rows * dim) * sizeof *y1); /* in place */
        rn_ctx inplace = {y1, w, rows, dim, eps, y1};
        run_nth(rn_task, &inplace, 3);
        if (memcmp(y1, y, (size_t)(rows * dim) * sizeof *y) != 0)
            fail("rms_norm dim=%lld: in place differs", (long long)dim);
        free(x);
        free(w);
        free(y);
        free(y1);
    }
}

/* --- rope ---------------------------------------------------------------- */

typedef struct rope_ctx {
    float *x;
    int64_t n_tokens, n_heads, head_dim;
    const int32_t *pos;
    enc_rope rope;
} rope_ctx;

static void rope_task(void *p, int ith, int nth)
{
    rope_ctx *c = p;
    cpu_rope_neox(c->x, c->n_tokens, c->n_heads, c->head_dim, c->pos, &c->rope, ith, nth);
}

/* A rope scaling written out as transformers' _compute_yarn_parameters and
 * linear scaling compute it, apart from base/rope.c: the frequencies and the
 * factor on cos and sin. */
typedef struct rope_ref {
    double theta, factor, attn; /* attn: the factor on cos and sin */
    int yarn;
    int64_t orig_ctx;
    double given_attn; /* the checkpoint's attention_factor (0: none) */
} rope_ref;

static double rope_ref_corr_dim(double rot, int64_t hd, double theta, int64_t ctx)
{
    return (double)hd * log((double)ctx / (rot * 2 * 3.14159265358979323846)) / (2 * log(theta));
}

static double rope_ref_inv_freq(const rope_ref *r, int64_t hd, int64_t i)
{
    double extrap = 1.0 / pow(r->theta, 2.0 * (double)i / (double)hd);
    if (!r->yarn) return extrap / r->factor;
    double lo = fmax(floor(rope_ref_corr_dim(32, hd, r->theta, r->orig_ctx)), 0);
    double hi = fmin(ceil(rope_ref_corr_dim(1, hd, r->theta, r->orig_ctx)), (double)hd - 1);
    if (lo == hi) hi += 0.001;
    double ramp = fmin(fmax(((double)i - lo) / (hi - lo), 0), 1);
    double extrap_factor = 1 - ramp;
    return extrap / r->factor * (1 - extrap_factor) + extrap * extrap_factor;
}

/* Qwen3's documented YaRN (factor 4 over 32768 positions, head_dim 128,
 * theta 1e6): the correction range [floor(23.60), ceil(39.65)] = [23, 40]
 * (worked by hand from the formula), the attention factor 1 + 0.1 ln 4, and
 * the context 131072, as vLLM derives it. */
static void test_rope_qwen3_yarn(void)
{
    enc_rope_scaling s = {ENC_ROPE_YARN, 4.0, 32768, 32, 1, 0, 1};
    enc_rope r = enc_rope_make(1000000.0, 128, &s, 40960);
    if (r.low != 23 || r.high != 40 || fabs(r.attn - 1.1386294361119891) > 1e-15 || r.factor != 4)
        fail("qwen3 yarn: low %g high %g attn %.17g factor %g", r.low, r.high, r.attn, r.factor);
    if (enc_rope_context_limit(&s, 40960) != 131072)
        fail("qwen3 yarn: context %lld", (long long)enc_rope_context_limit(&s, 40960));
    enc_rope plain = enc_rope_make(1000000.0, 128, NULL, 40960);
    for (int64_t i = 0; i < 64; i++)
        if (enc_rope_inv_freq(&plain, i, 128) != pow(1000000.0, -(double)(2 * i) / 128.0))
            fail("plain rope: frequency %lld is not theta^(-2i/hd) exactly", (long long)i);
}

/* The kernel rotates in double and rounds once: |x' - ref| <= 2u (|x1| + |x2|)
 * m leaves room for the libm's cos/sin/pow (within an ulp of double) and the
 * schedule's other order of operations; m is the factor on cos and sin.
 * Plain RoPE (factor 1), linear scaling (factor 2) and YaRN (factor 4 from
 * an original context of 256, so that the correction range falls inside
 * every head but the smallest; default attention factor and a given one). */
static void test_rope(void)
{
    static const int64_t hds[] = {2, 64, 128, 200};
    static const int64_t n_heads_list[] = {1, 3, 8};
    static const rope_ref refs[] = {{10000.0, 1, 1, 0, 0, 0},
                                    {1000000.0, 1, 1, 0, 0, 0},
                                    {10000.0, 2, 1, 0, 0, 0},
                                    {10000.0, 4, 1.1386294361119891, 1, 256, 0}, /* 1 + 0.1 ln 4 */
                                    {1000000.0, 4, 1.25, 1, 256, 1.25}};
    const int64_t nt = 17;
    int32_t pos[17];
    for (int64_t t = 0; t < nt; t++)
        pos[t] = (int32_t)(rng_next() % 5000);
    pos[0] = 0;
    pos[5] = 131071;
    for (size_t ih = 0; ih < sizeof hds / sizeof *hds; ih++)
        for (size_t in = 0; in < sizeof n_heads_list / sizeof *n_heads_list; in++) {
            int64_t hd = hds[ih], nh = n_heads_list[in], n = nt * nh * hd, half = hd / 2;
            const rope_ref *rr = &refs[(ih * 3 + in) % 5];
            enc_rope_scaling scaling = {rr->yarn ? ENC_ROPE_YARN : ENC_ROPE_LINEAR,
                                        rr->factor,
                                        rr->orig_ctx,
                                        32,
                                        1,
                                        rr->given_attn,
                                        1};
            enc_rope rope = enc_rope_make(rr->theta, hd, rr->factor == 1 ? NULL : &scaling, 4096);
            float *x0 = xmalloc((size_t)n * sizeof *x0);
            float *x = xmalloc((size_t)n * sizeof *x);
            float *x1 = xmalloc((size_t)n * sizeof *x1);
            fill_uniform(x0, n, -2.0f, 2.0f);
            memcpy(x, x0, (size_t)n * sizeof *x);
            rope_ctx c = {x, nt, nh, hd, pos, rope};
            run_nth(rope_task, &c, 1);
            for (int64_t t = 0; t < nt; t++)
                for (int64_t h = 0; h < nh; h++)
                    for (int64_t i = 0; i < half; i++) {
                        int64_t o = (t * nh + h) * hd;
                        double a = pos[t] * rope_ref_inv_freq(rr, hd, i), m = rr->attn;
                        double a1 = x0[o + i], a2 = x0[o + i + half];
                        double r1 = m * (a1 * cos(a) - a2 * sin(a));
                        double r2 = m * (a2 * cos(a) + a1 * sin(a));
                        double bound = 2 * U * (fabs(a1) + fabs(a2)) * m + 1e-38;
                        if (!(fabs(x[o + i] - r1) <= bound && fabs(x[o + i + half] - r2) <= bound))
                            fail("rope hd=%lld t=%lld h=%lld i=%lld: %.9g %.9g, want %.9g %.9g",
                                 (long long)hd, (long long)t, (long long)h, (long long)i,
                                 (double)x[o + i], (double)x[o + i + half], r1, r2);
                    }
            for (int nth = 2; nth <= 4; nth++) {
                memcpy(x1, x0, (size_t)n * sizeof *x1);
                rope_ctx c1 = {x1, nt, nh, hd, pos, rope};
                run_nth(rope_task, &c1, nth);
                if (memcmp(x1, x, (size_t)n * sizeof *x) != 0)
                    fail("rope hd=%lld: nth=%d differs", (long long)hd, nth);
            }
            for (int64_t t = 0; t < nt; t += 4) { /* one token alone (decode) */
                memcpy(x1, x0 + t * nh * hd, (size_t)(nh * hd) * sizeof *x1);
                rope_ctx c1 = {x1, 1, nh, hd, pos + t, rope};
                run_nth(rope_task, &c1, 2);
                if (memcmp(x1, x + t * nh * hd, (size_t)(nh * hd) * sizeof *x) != 0)
                    fail("rope hd=%lld: token %lld alone differs", (long long)hd, (long long)t);
            }
            free(x0);
            free(x);
            free(x1);
        }
}

/* --- swiglu, add ----------------------------------------------------------- */

typedef struct ew_ctx {
    const float *a, *b;
    float *out;
    int64_t n;
    int op; /* 0 swiglu, 1 add */
} ew_ctx;

static void ew_task(void *p, int ith, int nth)
{
    ew_ctx *c = p;
    if (c->op == 0)
        cpu_swiglu(c->a, c->b, c->out, c->n, ith, nth);
    else
        cpu_add(c->a, c->b, c->out, c->n, ith, nth);
}

/* swiglu: the kernels' exp (1.26 ulp) squared, 1 + z, a division and three
 * products (kernels_impl.h): |err| <= 8u |ref| (plus the f32 underflow
 * floor, 1e-37, for gates near -100; a gate below -87 goes wrong where the
 * exp's clamp acts on e^-|g| itself). add: exact, a
 * sum of two f32 is correctly rounded. Both: any split, any offset, in place. */
static void test_elementwise(void)
{
    const int64_t n = 1000;
    float *g = xmalloc(n * sizeof *g), *u = xmalloc(n * sizeof *u);
    float *out = xmalloc(n * sizeof *out), *o1 = xmalloc(n * sizeof *o1);
    fill_uniform(g, n, -12.0f, 12.0f);
    fill_uniform(u, n, -2.0f, 2.0f);
    g[0] = 0.0f;
    g[1] = -100.0f;
    g[2] = 100.0f;
    g[3] = -88.0f;
    for (int op = 0; op < 2; op++) {
        ew_ctx c = {g, u, out, n, op};
        run_nth(ew_task, &c, 1);
        for (int64_t i = 0; i < n; i++) {
            double ref = op == 0 ? (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i]
                                 : (double)(float)((double)g[i] + (double)u[i]);
            double bound = op == 0 ? 8 * U * fabs(ref) + 1e-37 : 0.0;
            if (!(fabs(out[i] - ref) <= bound))
                fail("%s[%lld] = %.9g, want %.9g", op ? "add" : "swiglu", (long long)i,
                     (double)out[i], ref);
        }
        for (int nth = 2; nth <= 4; nth++) {
            ew_ctx c1 = {g, u, o1, n, op};
            run_nth(ew_task, &c1, nth);
            if (memcmp(o1, out, n * sizeof *out) != 0)
                fail("%s: nth=%d differs", op ? "add" : "swiglu", nth);
        }
        for (int64_t i0 = 1; i0 < n; i0 += 333) { /* a slice, computed on its own */
            ew_ctx c1 = {g + i0, u + i0, o1, 17, op};
            run_nth(ew_task, &c1, 2);
            if (memcmp(o1, out + i0, 17 * sizeof *out) != 0)
                fail("%s: slice at %lld differs", op ? "add" : "swiglu", (long long)i0);
        }
        memcpy(o1, g, n * sizeof *o1); /* in place: out aliases the first input */
        ew_ctx c2 = {o1, u, o1, n, op};
        run_nth(ew_task, &c2, 3);
        if (memcmp(o1, out, n * sizeof *out) != 0)
            fail("%s: in place differs", op ? "add" : "swiglu");
    }
    free(g);
    free(u);
    free(out);
    free(o1);
}

/* --- argmax -------------------------------------------------------------- */

typedef struct am_ctx {
    const float *x;
    int64_t rows, cols;
    int32_t *out;
} am_ctx;

static void am_task(void *p, int ith, int nth)
{
    am_ctx *c = p;
    cpu_argmax(c->x, c->rows, c->cols, c->out, ith, nth);
}

static void test_argmax(void)
{
    static const int64_t cols_list[] = {1, 7, 16, 37, 64, 65, 200, 1000, 151936};
    for (size_t ic = 0; ic < sizeof cols_list / sizeof *cols_list; ic++) {
        const int64_t rows = 5, cols = cols_list[ic];
        float *x = xmalloc((size_t)(rows * cols) * sizeof *x);
        fill_uniform(x, rows * cols, -5.0f, 5.0f);
        if (cols > 3) { /* row 1: a tie (first index wins); row 2: all -inf */
            x[cols + 2] = 9.0f;
            x[cols + cols - 1] = 9.0f;
            for (int64_t j = 0; j < cols; j++)
                x[2 * cols + j] = -INFINITY;
            x[4 * cols - 1] = 9.5f; /* row 3: the maximum in the last column (a tail) */
            x[4 * cols + 1] =
                NAN; /* row 4: NaNs (never the largest) before and after the maximum */
            x[4 * cols + cols / 2] = 9.0f;
            x[4 * cols + cols - 2] = NAN;
        }
        for (int nth = 1; nth <= 4; nth++) {
            int32_t out[5];
            am_ctx c = {x, rows, cols, out};
            run_nth(am_task, &c, nth);
            for (int64_t r = 0; r < rows; r++) {
                int64_t best = 0;
                for (int64_t j = 1; j < cols; j++)
                    if (x[r * cols + j] > x[r * cols + best]) best = j;
                if (out[r] != best)
                    fail("argmax cols=%lld row %lld: %d, want %lld", (long long)cols, (long long)r,
                         out[r], (long long)best);
            }
        }
        free(x);
    }
}

/* --- paged attention ------------------------------------------------------- */

/* A test world: a few sequences, each with a full history of keys, values and
 * queries (positions 0 .. len-1), its keys and values written into a paged
 * cache through cpu_reshape_and_cache at randomly chosen physical blocks.
 * Slots no sequence owns, and the slots after a history's end, hold NaN: a
 * kernel that reads a key it must not see produces NaN. */
enum { ATT_SEQS = 4 };

typedef struct att_world {
    int64_t n_heads, n_kv_heads, head_dim, block_size, max_blocks, n_blocks;
    int64_t len[ATT_SEQS];
    float *q[ATT_SEQS];       /* [len, n_heads, head_dim] */
    float *k[ATT_SEQS];       /* [len, n_kv_heads, head_dim] */
    float *v[ATT_SEQS];       /* [len, n_kv_heads, head_dim] */
    int32_t *bt;              /* [ATT_SEQS, max_blocks] */
    float *k_cache, *v_cache; /* [n_blocks * block_size, kv_dim] */
    float scale;
} att_world;

typedef struct rc_ctx {
    const float *k, *v;
    int64_t n, kv_dim;
    const int32_t *slots;
    float *kc, *vc;
} rc_ctx;

static void rc_task(void *p, int ith, int nth)
{
    rc_ctx *c = p;
    cpu_reshape_and_cache(c->k, c->v, c->n, c->kv_dim, c->slots, ENC_F32, c->kc, c->vc, ith, nth);
}

static void att_world_init(att_world *w, int64_t nh, int64_t nkv, int64_t hd, int64_t bs,
                           const int64_t *lens)
{
    memset(w, 0, sizeof *w);
    w->n_heads = nh;
    w->n_kv_heads = nkv;
    w->head_dim = hd;
    w->block_size = bs;
    w->scale = (float)(1.0 / sqrt((double)hd));
    int64_t kv_dim = nkv * hd;
    for (int s = 0; s < ATT_SEQS; s++) {
        w->len[s] = lens[s];
        int64_t nb = lens[s] / bs + 1;
        w->max_blocks = nb > w->max_blocks ? nb : w->max_blocks;
        w->n_blocks += nb;
    }
    w->max_blocks += 2; /* unused table entries: -1 */
    w->n_blocks += 3;   /* blocks nobody owns */
    int64_t n_slots = w->n_blocks * bs;
    w->k_cache = xmalloc((size_t)(n_slots * kv_dim) * sizeof(float));
    w->v_cache = xmalloc((size_t)(n_slots * kv_dim) * sizeof(float));
    for (int64_t i = 0; i < n_slots * kv_dim; i++)
        w->k_cache[i] = w->v_cache[i] = NAN;
    int32_t *perm = xmalloc((size_t)w->n_blocks * sizeof *perm);
    for (int64_t i = 0; i < w->n_blocks; i++)
        perm[i] = (int32_t)i;
    for (int64_t i = w->n_blocks - 1; i > 0; i--) {
        int64_t j = (int64_t)(rng_next() % (uint64_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    w->bt = xmalloc((size_t)(ATT_SEQS * w->max_blocks) * sizeof *w->bt);
    for (int64_t i = 0; i < ATT_SEQS * w->max_blocks; i++)
        w->bt[i] = -1;
    int64_t next = 0;
    for (int s = 0; s < ATT_SEQS; s++) {
        int64_t L = lens[s];
        for (int64_t b = 0; b < L / bs + 1; b++)
            w->bt[s * w->max_blocks + b] = perm[next++];
        w->q[s] = xmalloc((size_t)(L * nh * hd + 1) * sizeof(float));
        w->k[s] = xmalloc((size_t)(L * kv_dim + 1) * sizeof(float));
        w->v[s] = xmalloc((size_t)(L * kv_dim + 1) * sizeof(float));
        fill_uniform(w->q[s], L * nh * hd, -3.0f, 3.0f);
        fill_uniform(w->k[s], L * kv_dim, -1.0f, 1.0f);
        fill_uniform(w->v[s], L * kv_dim, -1.0f, 1.0f);
        /* the history goes into the cache in two calls; the second starts
         * with a padding row (slot -1) whose values must land nowhere */
        int32_t *slots = xmalloc((size_t)(L + 1) * sizeof *slots);
        float *k2 = xmalloc((size_t)((L + 1) * kv_dim) * sizeof *k2);
        float *v2 = xmalloc((size_t)((L + 1) * kv_dim) * sizeof *v2);
        int64_t half = L / 2;
        slots[half] = -1;
        for (int64_t p = 0; p < L; p++)
            slots[p < half ? p : p + 1] =
                w->bt[s * w->max_blocks + p / bs] * (int32_t)bs + (int32_t)(p % bs);
        memcpy(k2, w->k[s], (size_t)(half * kv_dim) * sizeof *k2);
        memcpy(v2, w->v[s], (size_t)(half * kv_dim) * sizeof *v2);
        for (int64_t i = 0; i < kv_dim; i++)
            k2[half * kv_dim + i] = v2[half * kv_dim + i] = 7.0f;
        memcpy(k2 + (half + 1) * kv_dim, w->k[s] + half * kv_dim,
               (size_t)((L - half) * kv_dim) * sizeof *k2);
        memcpy(v2 + (half + 1) * kv_dim, w->v[s] + half * kv_dim,
               (size_t)((L - half) * kv_dim) * sizeof *v2);
        rc_ctx c1 = {k2, v2, half, kv_dim, slots, w->k_cache, w->v_cache};
        run_nth(rc_task, &c1, 3);
        rc_ctx c2 = {k2 + half * kv_dim, v2 + half * kv_dim, L - half + 1, kv_dim,
                     slots + half,       w->k_cache,         w->v_cache};
        run_nth(rc_task, &c2, 2);
        free(k2);
        free(v2);
        free(slots);
    }
    free(perm);
}

static void att_world_free(att_world *w)
{
    for (int s = 0; s < ATT_SEQS; s++) {
        free(w->q[s]);
        free(w->k[s]);
        free(w->v[s]);
    }
    free(w->bt);
    free(w->k_cache);
    free(w->v_cache);
}

/* The cache must hold exactly each history at its slots (reshape_and_cache). */
static void att_check_cache(const att_world *w)
{
    int64_t kv_dim = w->n_kv_heads * w->head_dim;
    for (int s = 0; s < ATT_SEQS; s++)
        for (int64_t p = 0; p < w->len[s]; p++) {
            int64_t slot = (int64_t)w->bt[s * w->max_blocks + p / w->block_size] * w->block_size +
                           p % w->block_size;
            if (memcmp(w->k_cache + slot * kv_dim, w->k[s] + p * kv_dim,
                       (size_t)kv_dim * sizeof(float)) != 0 ||
                memcmp(w->v_cache + slot * kv_dim, w->v[s] + p * kv_dim,
                       (size_t)kv_dim * sizeof(float)) != 0)
                fail("reshape_and_cache: seq %d position %lld not in its slot", s, (long long)p);
        }
    int64_t n_nan = 0;
    for (int64_t i = 0; i < w->n_blocks * w->block_size * kv_dim; i++)
        n_nan += isnan(w->k_cache[i]) != 0;
    int64_t want = w->n_blocks * w->block_size * kv_dim;
    for (int s = 0; s < ATT_SEQS; s++)
        want -= w->len[s] * kv_dim;
    if (n_nan != want)
        fail("reshape_and_cache: %lld untouched values, want %lld", (long long)n_nan,
             (long long)want);
}

/* One entry of an attention call: world sequence `seq` with seq_len tokens in
 * the cache, the last n_q of them new (seq = -1: a padding sequence). */
typedef struct att_entry {
    int seq;
    int64_t seq_len, n_q;
} att_entry;

typedef struct att_call {
    cpu_attention_args a;
    int64_t n_rows;
    float *q, *out;
    int32_t *bt, *seq_lens, *qsl;
} att_call;

static void att_call_build(att_call *c, const att_world *w, const att_entry *e, int n)
{
    int64_t hd = w->head_dim, nh = w->n_heads, rows = 0;
    for (int i = 0; i < n; i++)
        rows += e[i].n_q;
    c->n_rows = rows;
    c->q = xmalloc((size_t)(rows * nh * hd + 1) * sizeof(float));
    c->out = xmalloc((size_t)(rows * nh * hd + 1) * sizeof(float));
    for (int64_t i = 0; i < rows * nh * hd; i++)
        c->out[i] = NAN;
    c->bt = xmalloc((size_t)(n * w->max_blocks) * sizeof *c->bt);
    c->seq_lens = xmalloc((size_t)n * sizeof *c->seq_lens);
    c->qsl = xmalloc((size_t)(n + 1) * sizeof *c->qsl);
    c->qsl[0] = 0;
    for (int i = 0; i < n; i++) {
        c->seq_lens[i] = (int32_t)e[i].seq_len;
        c->qsl[i + 1] = c->qsl[i] + (int32_t)e[i].n_q;
        for (int64_t b = 0; b < w->max_blocks; b++)
            c->bt[i * w->max_blocks + b] = e[i].seq < 0 ? -1 : w->bt[e[i].seq * w->max_blocks + b];
        for (int64_t j = 0; j < e[i].n_q; j++) {
            float *dst = c->q + (c->qsl[i] + j) * nh * hd;
            if (e[i].seq < 0)
                fill_uniform(dst, nh * hd, -3.0f, 3.0f);
            else
                memcpy(dst, w->q[e[i].seq] + (e[i].seq_len - e[i].n_q + j) * nh * hd,
                       (size_t)(nh * hd) * sizeof(float));
        }
    }
    cpu_attention_args a = {
        .q = c->q, .k_cache = w->k_cache, .v_cache = w->v_cache, .cache_dtype = ENC_F32,
        .out = c->out, .block_tables = c->bt, .seq_lens = c->seq_lens, .query_start_loc = c->qsl,
        .n_seqs = n, .max_blocks = w->max_blocks, .block_size = w->block_size, .n_heads = nh,
        .n_kv_heads = w->n_kv_heads, .head_dim = hd, .scale = w->scale,
    };
    c->a = a;
}

static void att_call_free(att_call *c)
{
    free(c->q);
    free(c->out);
    free(c->bt);
    free(c->seq_lens);
    free(c->qsl);
}

static void att_task(void *p, int ith, int nth)
{
    cpu_paged_attention(p, ith, nth);
}

static void att_run(att_call *c, int nth)
{
    for (int64_t i = 0; i < c->n_rows * c->a.n_heads * c->a.head_dim; i++)
        c->out[i] = NAN;
    run_nth(att_task, &c->a, nth);
}

/* Against softmax(q k * scale) v in double over the contiguous history (no
 * paging). Bound, per output: scores are off by at most
 * E = gamma(hd + 8) * scale * sum_d |q k| (the matmul bound); exp(s - m), the
 * running-max rescales (one per block of 32 keys) and the subtraction perturb
 * each weight by a relative eta <= 2E + 4u (|s|max + 2)(ctx/32 + 2); the
 * weighted sums of ctx terms add gamma(ctx + 4). A relative perturbation eta
 * of normalised weights moves the output by <= 2 eta max|v|, so
 * |out - ref| <= (2 eta + 2 gamma(ctx + 4)) max|v|. Padding rows must be 0. */
static double att_check_ref(const att_call *c, const att_world *w, const att_entry *e, int n,
                            const char *what)
{
    int64_t hd = w->head_dim, nh = w->n_heads, kv_dim = w->n_kv_heads * hd;
    int64_t group = nh / w->n_kv_heads;
    double worst = 0;
    double *sc = NULL;
    for (int i = 0; i < n; i++)
        for (int64_t j = 0; j < e[i].n_q; j++) {
            int64_t row = c->qsl[i] + j, ctx = e[i].seq_len - e[i].n_q + j + 1;
            for (int64_t h = 0; h < nh; h++) {
                const float *o = c->out + (row * nh + h) * hd;
                if (e[i].seq < 0 || ctx <= 0) {
                    for (int64_t d = 0; d < hd; d++)
                        if (o[d] != 0.0f)
                            fail("attention %s: padding row %lld not zero", what, (long long)row);
                    continue;
                }
                const float *q = c->q + (row * nh + h) * hd;
                const float *K = w->k[e[i].seq], *Vv = w->v[e[i].seq];
                int64_t kvo = (h / group) * hd;
                sc = realloc(sc, (size_t)ctx * sizeof *sc);
                double m = -INFINITY, E = 0, smax = 0, vmax = 0, l = 0;
                for (int64_t p = 0; p < ctx; p++) {
                    double s = 0, mag = 0;
                    for (int64_t d = 0; d < hd; d++) {
                        s += (double)q[d] * K[p * kv_dim + kvo + d];
                        mag += fabs((double)q[d] * K[p * kv_dim + kvo + d]);
                        vmax = fmax(vmax, fabs(Vv[p * kv_dim + kvo + d]));
                    }
                    sc[p] = s * w->scale;
                    m = fmax(m, sc[p]);
                    smax = fmax(smax, fabs(sc[p]));
                    E = fmax(E, gamma_n((double)hd + 8) * w->scale * mag);
                }
                for (int64_t p = 0; p < ctx; p++)
                    l += (sc[p] = exp(sc[p] - m));
                double eta = 2 * E + 4 * U * (smax + 2) * ((double)ctx / 32 + 2);
                double bound = (2 * eta + 2 * gamma_n((double)ctx + 4)) * vmax + 1e-30;
                for (int64_t d = 0; d < hd; d++) {
                    double ref = 0;
                    for (int64_t p = 0; p < ctx; p++)
                        ref += sc[p] * Vv[p * kv_dim + kvo + d];
                    ref /= l;
                    double err = fabs(o[d] - ref);
                    if (err / bound > worst) worst = err / bound;
                    if (!(err <= bound)) {
                        fail("attention %s: row %lld (seq %d, ctx %lld) head %lld d %lld: %.9g, "
                             "want %.9g (bound %.3g)",
                             what, (long long)row, e[i].seq, (long long)ctx, (long long)h,
                             (long long)d, (double)o[d], ref, bound);
                        break;
                    }
                }
            }
        }
    free(sc);
    return worst;
}

/* out rows [row, row + n) of call c must equal rows [brow, brow + n) of b. */
static void att_same_rows(const att_call *c, int64_t row, const att_call *b, int64_t brow,
                          int64_t n, const char *what)
{
    size_t w = (size_t)(c->a.n_heads * c->a.head_dim);
    if (memcmp(c->out + row * (int64_t)w, b->out + brow * (int64_t)w,
               (size_t)n * w * sizeof(float)))
        fail("attention: %s differs bitwise (rows %lld..%lld vs prefill rows %lld..)", what,
             (long long)row, (long long)(row + n - 1), (long long)brow);
}

typedef struct att_cfg {
    int64_t nh, nkv, hd, bs;
} att_cfg;

static double test_attention_cfg(const att_cfg *cfg)
{
    static const int64_t lens[ATT_SEQS] = {200, 45, 1, 77};
    att_world w;
    att_world_init(&w, cfg->nh, cfg->nkv, cfg->hd, cfg->bs, lens);
    att_check_cache(&w);
    double worst = 0;

    /* prefills of each sequence alone: the baselines */
    att_call pre[ATT_SEQS];
    for (int s = 0; s < ATT_SEQS; s++) {
        att_entry e = {s, lens[s], lens[s]};
        att_call_build(&pre[s], &w, &e, 1);
        att_run(&pre[s], s == 0 ? 2 : 1);
        worst = fmax(worst, att_check_ref(&pre[s], &w, &e, 1, "prefill"));
    }
    /* (c1) a decode call: one row, the same context, alone */
    static const int64_t js[] = {0, 1, 31, 32, 33, 100, 199};
    for (size_t i = 0; i < sizeof js / sizeof *js; i++) {
        att_entry e = {0, js[i] + 1, 1};
        att_call c;
        att_call_build(&c, &w, &e, 1);
        att_run(&c, 1 + (int)(i % 3));
        att_same_rows(&c, 0, &pre[0], js[i], 1, "decode row vs prefill");
        att_call_free(&c);
    }
    /* (c2) a chunk of a prefill (context already cached) */
    {
        att_entry e = {0, 150, 37};
        att_call c;
        att_call_build(&c, &w, &e, 1);
        att_run(&c, 3);
        att_same_rows(&c, 0, &pre[0], 113, 37, "prefill chunk vs full prefill");
        att_call_free(&c);
    }
    /* (c3) a mixed batch: decode, padding, chunk, prefills, padding */
    {
        att_entry e[7] = {{1, 45, 1},  {-1, 0, 1}, {0, 200, 20}, {2, 1, 1},
                          {3, 77, 77}, {-1, 0, 0}, {1, 30, 4}};
        att_call c;
        att_call_build(&c, &w, e, 7);
        att_run(&c, 1);
        worst = fmax(worst, att_check_ref(&c, &w, e, 7, "mixed batch"));
        att_same_rows(&c, 0, &pre[1], 44, 1, "decode beside other sequences");
        att_same_rows(&c, 2, &pre[0], 180, 20, "chunk beside other sequences");
        att_same_rows(&c, 22, &pre[2], 0, 1, "1-token prefill beside other sequences");
        att_same_rows(&c, 23, &pre[3], 0, 77, "prefill beside other sequences");
        att_same_rows(&c, 100, &pre[1], 26, 4, "short chunk beside other sequences");
        /* (a) thread counts */
        float *base = xmalloc((size_t)(c.n_rows * cfg->nh * cfg->hd) * sizeof(float));
        memcpy(base, c.out, (size_t)(c.n_rows * cfg->nh * cfg->hd) * sizeof(float));
        for (int nth = 2; nth <= 4; nth++) {
            att_run(&c, nth);
            if (memcmp(base, c.out, (size_t)(c.n_rows * cfg->nh * cfg->hd) * sizeof(float)))
                fail("attention: mixed batch with nth=%d differs from nth=1", nth);
        }
        free(base);
        att_call_free(&c);
    }
    for (int s = 0; s < ATT_SEQS; s++)
        att_call_free(&pre[s]);
    att_world_free(&w);
    return worst;
}

/* A 16-bit cache (F16 or BF16): store_kv must write every row rounded to
 * nearest even (enc_f32_to_*), and attention over it must give exactly the
 * bits attention over an f32 cache holding the rounded values gives, for a
 * mixed batch at 1 and 3 threads. */
static uint16_t round16(enc_dtype dt, float x)
{
    return dt == ENC_BF16 ? enc_f32_to_bf16(x) : enc_f32_to_f16(x);
}

static float widen16(enc_dtype dt, uint16_t h)
{
    return dt == ENC_BF16 ? enc_bf16_to_f32(h) : enc_f16_to_f32(h);
}

static void test_cache16_store(enc_dtype dt)
{
    enum { N = 5, KV = 40, SLOTS = 9 };
    float k[N * KV], v[N * KV];
    fill_uniform(k, N * KV, -300.0f, 300.0f);
    fill_uniform(v, N * KV, -1e-3f, 1e-3f);
    const int32_t slots[N] = {7, -1, 0, 3, 8};
    uint16_t kc[SLOTS * KV], vc[SLOTS * KV];
    for (int i = 0; i < SLOTS * KV; i++) kc[i] = vc[i] = 0xabcd;
    for (int nth = 1; nth <= 2; nth++) {
        for (int ith = 0; ith < nth; ith++)
            cpu_reshape_and_cache(k, v, N, KV, slots, dt, kc, vc, ith, nth);
        for (int t = 0; t < N; t++)
            for (int d = 0; d < KV; d++) {
                if (slots[t] < 0) continue;
                int64_t at = (int64_t)slots[t] * KV + d;
                if (kc[at] != round16(dt, k[t * KV + d]) || vc[at] != round16(dt, v[t * KV + d]))
                    fail("store_kv %s: token %d dim %d stored wrongly", enc_dtype_name(dt), t, d);
            }
        for (int s = 0; s < SLOTS; s++)
            if ((s == 1 || s == 2 || s == 4 || s == 5 || s == 6) && kc[s * KV] != 0xabcd)
                fail("store_kv %s: slot %d written but no token maps there", enc_dtype_name(dt), s);
    }
}

/* Attention over a cache of dtype (kc, vc, holding w's values as that type
 * stores them) must be bit-identical to attention over w's f32 cache, which
 * the caller has set to the values the narrow cache widens to. */
static void att_expect_cache_matches_f32(att_world *w, const att_cfg *cfg, const void *kc,
                                         const void *vc, enc_dtype dt)
{
    att_entry e[5] = {{1, 33, 1}, {-1, 0, 1}, {0, 70, 20}, {2, 1, 1}, {3, 40, 40}};
    att_call ref, c;
    att_call_build(&ref, w, e, 5);
    att_run(&ref, 2);
    att_call_build(&c, w, e, 5);
    memcpy(c.q, ref.q, (size_t)(ref.n_rows * cfg->nh * cfg->hd) * sizeof(float));
    c.a.k_cache = kc;
    c.a.v_cache = vc;
    c.a.cache_dtype = dt;
    for (int nth = 1; nth <= 3; nth += 2) {
        att_run(&c, nth);
        if (memcmp(ref.out, c.out, (size_t)(ref.n_rows * cfg->nh * cfg->hd) * sizeof(float)))
            fail("attention over a %s cache (nh %lld, nkv %lld, hd %lld, nth %d) differs from f32 "
                 "over the same values", enc_dtype_name(dt), (long long)cfg->nh, (long long)cfg->nkv,
                 (long long)cfg->hd, nth);
    }
    att_call_free(&ref);
    att_call_free(&c);
}

static void test_cache16_attention(const att_cfg *cfg, enc_dtype dt)
{
    static const int64_t lens[ATT_SEQS] = {70, 33, 1, 40};
    att_world w;
    att_world_init(&w, cfg->nh, cfg->nkv, cfg->hd, cfg->bs, lens);
    int64_t n = w.n_blocks * w.block_size * w.n_kv_heads * w.head_dim;
    uint16_t *kc = xmalloc((size_t)n * sizeof *kc), *vc = xmalloc((size_t)n * sizeof *vc);
    for (int64_t i = 0; i < n; i++) {
        kc[i] = round16(dt, w.k_cache[i]);
        vc[i] = round16(dt, w.v_cache[i]);
        w.k_cache[i] = widen16(dt, kc[i]);
        w.v_cache[i] = widen16(dt, vc[i]);
    }
    att_expect_cache_matches_f32(&w, cfg, kc, vc, dt);
    free(kc);
    free(vc);
    att_world_free(&w);
}

static void test_cache16(void)
{
    static const att_cfg cfgs[] = {{4, 2, 128, 16}, {8, 2, 64, 32}, {6, 2, 36, 3}, {16, 1, 64, 16}};
    static const enc_dtype dts[] = {ENC_F16, ENC_BF16};
    for (size_t d = 0; d < 2; d++) {
        test_cache16_store(dts[d]);
        for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) test_cache16_attention(&cfgs[i], dts[d]);
    }
}

/* A Q8_0 cache (blocks of 32 per token row; a head is head_dim / 32 whole
 * blocks): store_kv writes each token's row as quant_quantize_row does and
 * leaves other slots alone; attention over it gives exactly the bits
 * attention over an f32 cache holding the dequantized values gives. */
static void test_cacheq8_store(void)
{
    enum { N = 5, KV = 64, SLOTS = 9, RB = KV / 32 * 34 };
    float k[N * KV], v[N * KV];
    fill_uniform(k, N * KV, -300.0f, 300.0f);
    fill_uniform(v, N * KV, -1e-3f, 1e-3f);
    const int32_t slots[N] = {7, -1, 0, 3, 8};
    unsigned char kc[SLOTS * RB], vc[SLOTS * RB], want[RB];
    memset(kc, 0xab, sizeof kc);
    memset(vc, 0xab, sizeof vc);
    for (int nth = 1; nth <= 2; nth++) {
        for (int ith = 0; ith < nth; ith++)
            cpu_reshape_and_cache(k, v, N, KV, slots, ENC_Q8_0, kc, vc, ith, nth);
        for (int t = 0; t < N; t++) {
            if (slots[t] < 0) continue;
            quant_quantize_row(ENC_Q8_0, k + t * KV, want, KV);
            if (memcmp(kc + slots[t] * RB, want, RB))
                fail("store_kv Q8_0: token %d's key row", t);
            quant_quantize_row(ENC_Q8_0, v + t * KV, want, KV);
            if (memcmp(vc + slots[t] * RB, want, RB))
                fail("store_kv Q8_0: token %d's value row", t);
        }
        for (int sl = 1; sl < 7; sl++)
            if (sl != 3 && (kc[sl * RB] != 0xab || vc[sl * RB] != 0xab))
                fail("store_kv Q8_0: slot %d written but no token maps there", sl);
    }
}

static void test_cacheq8_attention(const att_cfg *cfg)
{
    static const int64_t lens[ATT_SEQS] = {70, 33, 1, 40};
    att_world w;
    att_world_init(&w, cfg->nh, cfg->nkv, cfg->hd, cfg->bs, lens);
    int64_t kv_dim = w.n_kv_heads * w.head_dim, n_slots = w.n_blocks * w.block_size;
    size_t rb = enc_dtype_row_bytes(ENC_Q8_0, kv_dim);
    unsigned char *kc = xmalloc((size_t)n_slots * rb), *vc = xmalloc((size_t)n_slots * rb);
    for (int64_t sl = 0; sl < n_slots; sl++) {
        float *kr = w.k_cache + sl * kv_dim, *vr = w.v_cache + sl * kv_dim;
        quant_quantize_row(ENC_Q8_0, kr, kc + sl * rb, kv_dim);
        quant_quantize_row(ENC_Q8_0, vr, vc + sl * rb, kv_dim);
        quant_dequantize_row(ENC_Q8_0, kc + sl * rb, kr, kv_dim);
        quant_dequantize_row(ENC_Q8_0, vc + sl * rb, vr, kv_dim);
    }
    att_expect_cache_matches_f32(&w, cfg, kc, vc, ENC_Q8_0);
    free(kc);
    free(vc);
    att_world_free(&w);
}

static void test_cacheq8(void)
{
    static const att_cfg cfgs[] = {{4, 2, 128, 16}, {8, 2, 64, 32}, {16, 1, 64, 16}, {4, 4, 32, 3}};
    test_cacheq8_store();
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) test_cacheq8_attention(&cfgs[i]);
}

static double test_attention(void)
{
    /* GQA 1, 2, 4, 3 and 16 (more query heads than one pass takes); head_dim
     * 64 and 128, and 36 (a tail in every ISA); block sizes 16, 32, 3; 8 kv
     * heads of 2 query heads each (Qwen3-0.6B's shape, head_dim 64 here). */
    static const att_cfg cfgs[] = {
        {2, 2, 64, 16},  {4, 2, 128, 32}, {8, 2, 64, 32},  {8, 2, 128, 16},
        {4, 4, 128, 16}, {6, 2, 36, 3},   {16, 1, 64, 16}, {16, 8, 64, 16},
    };
    double worst = 0;
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++)
        worst = fmax(worst, test_attention_cfg(&cfgs[i]));
    return worst;
}

/* --- driver --------------------------------------------------------------- */

/* --isa-env-only: check only that cpu_kernels_init() honours ENCORE_CPU_ISA
 * (ctest runs it with ENCORE_CPU_ISA=scalar). */
static int test_isa_env(void)
{
    const char *env = getenv("ENCORE_CPU_ISA");
    cpu_isa isa = cpu_kernels_init();
    printf("ENCORE_CPU_ISA=%s -> %s\n", env ? env : "(unset)", cpu_isa_name(isa));
    if (!cpu_isa_supported(isa)) return 1;
    if (env && strcmp(env, cpu_isa_name(isa)) != 0) {
        for (int i = 0; i <= CPU_ISA_AVX512; i++)
            if (strcmp(env, cpu_isa_name((cpu_isa)i)) == 0 && cpu_isa_supported((cpu_isa)i)) {
                printf("FAIL: %s is supported here but was not chosen\n", env);
                return 1;
            }
    }
    return 0;
}

/* Every kernel check under the ISA the kernels are forced to, with the
 * figures it measured. */
static void test_one_isa(cpu_isa isa)
{
    (void)isa;
    double mm = test_matmul_ref();
    int n_inv = test_matmul_invariance();
    test_get_rows();
    test_rms_norm();
    test_rope_qwen3_yarn();
    test_rope();
    test_elementwise();
    test_argmax();
    double att = test_attention();
    test_cache16();
    test_cacheq8();
    printf("[%s] matmul max err/bound %.3g, %d invariance comparisons; "
           "attention max err/bound %.3g\n",
           g_isa, mm, n_inv, att);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--isa-env-only") == 0) return test_isa_env();
    if (threadpool_create(2, &g_pool) != ENC_OK) {
        fprintf(stderr, "cannot create the thread pool\n");
        return 1;
    }
    cpu_isa chosen = cpu_kernels_init();
    if (!cpu_isa_supported(chosen) || cpu_kernels_init() != chosen)
        fail("cpu_kernels_init chose %s", cpu_isa_name(chosen));
    printf("cpu_kernels_init: %s\n", cpu_isa_name(chosen));
    isa_for_each(test_one_isa, "kernels");
    threadpool_destroy(g_pool);
    if (g_failures) {
        printf("%d failures\n", g_failures);
        return 1;
    }
    printf("all ok\n");
    return 0;
}
