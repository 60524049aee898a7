/* test_moe_ops.c - the mixture-of-experts CPU kernels (kernels_moe.h)
 * against plain references written here from the definitions, for every ISA
 * this CPU runs.
 *
 *   moe_route:   ids equal a sort of the double-precision softmax by (score
 *                descending, expert id ascending), over logits drawn from a
 *                few values so that exact ties are frequent.
 *   moe_weights: within (E + k + 4) f32 roundings (relative) of the double
 *                softmax of the chosen experts, renormalised or not; a bad
 *                id weighs 0.
 *   matmul_id:   every (token, slot) row bit-identical to cpu_matmul of that
 *                token alone with its expert's matrix (so grouping by expert
 *                changes no bit), and within a dot-product bound of double;
 *                an id out of range gives a zero row.
 *   moe_sum:     within 1e-5 of the double weighted sum.
 * Every kernel runs as nth = 1, 2 and 3 shares (one after another), with
 * identical bits required. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_impl.h"
#include "backend/cpu/kernels_moe.h"
#include "base/dtype.h"
#include "check.h"
#include "matmul_id_verdict.h"
#include "xalloc.h"

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint64_t rng_next(void) /* splitmix64 */
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_uniform(void)
{
    return (float)((double)(rng_next() >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}

/* --- routing ------------------------------------------------------------- */

/* softmax of row l[0..n) in double */
static void ref_softmax(const float *l, int64_t n, double *p)
{
    double m = l[0], sum = 0;
    for (int64_t e = 1; e < n; e++)
        m = l[e] > m ? l[e] : m;
    for (int64_t e = 0; e < n; e++)
        sum += p[e] = exp((double)l[e] - m);
    for (int64_t e = 0; e < n; e++)
        p[e] /= sum;
}

static const double *g_sort_p;
static int by_score_then_id(const void *a, const void *b)
{
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (g_sort_p[i] != g_sort_p[j]) return g_sort_p[i] > g_sort_p[j] ? -1 : 1;
    return i < j ? -1 : 1;
}

static void check_route(int64_t T, int64_t E, int64_t k, int n_levels)
{
    float *logits = xcalloc((size_t)(T * E), sizeof *logits);
    int32_t *ids[3], *order = xcalloc((size_t)E, sizeof *order);
    float *w = xcalloc((size_t)(T * k), sizeof *w), *wn = xcalloc((size_t)(T * k), sizeof *wn);
    double *p = xcalloc((size_t)E, sizeof *p);
    for (int64_t i = 0; i < T * E; i++) /* few levels: many exact ties */
        logits[i] = (float)(rng_next() % (uint64_t)n_levels) * 0.25f - 2.0f;
    for (int nth = 1; nth <= 3; nth++) {
        ids[nth - 1] = xcalloc((size_t)(T * k), sizeof **ids);
        for (int ith = 0; ith < nth; ith++)
            cpu_moe_route(logits, T, E, k, CPU_ROUTER_SOFTMAX, ids[nth - 1], ith, nth);
        if (nth > 1) CHECK(!memcmp(ids[0], ids[nth - 1], (size_t)(T * k) * sizeof **ids));
    }
    for (int ith = 0; ith < 2; ith++) {
        cpu_moe_weights(logits, ids[0], T, E, k, CPU_ROUTER_SOFTMAX, 0, w, ith, 2);
        cpu_moe_weights(logits, ids[0], T, E, k, CPU_ROUTER_SOFTMAX, 1, wn, ith, 2);
    }
    int bad_ids = 0, bad_w = 0;
    for (int64_t t = 0; t < T; t++) {
        ref_softmax(logits + t * E, E, p);
        for (int64_t e = 0; e < E; e++)
            order[e] = (int32_t)e;
        g_sort_p = p;
        qsort(order, (size_t)E, sizeof *order, by_score_then_id);
        double sum = 0, rel = 1.2e-7 * (double)(E + k + 4); /* f32 sums of E and k terms */
        for (int64_t s = 0; s < k; s++)
            sum += p[order[s]];
        for (int64_t s = 0; s < k; s++) {
            bad_ids += ids[0][t * k + s] != order[s];
            double want = p[order[s]], want_n = want / sum;
            bad_w += fabs(w[t * k + s] - want) > rel * want + 1e-12;
            bad_w += fabs(wn[t * k + s] - want_n) > rel * want_n + 1e-12;
        }
    }
    if (bad_ids || bad_w)
        fprintf(stderr, "  route T=%lld E=%lld k=%lld: %d ids, %d weights wrong\n", (long long)T,
                (long long)E, (long long)k, bad_ids, bad_w);
    CHECK(bad_ids == 0 && bad_w == 0);
    for (int i = 0; i < 3; i++)
        free(ids[i]);
    free(logits), free(order), free(w), free(wn), free(p);
}

static void test_route(void)
{
    static const int64_t Es[] = {1, 2, 3, 8, 64, 128, 512};
    static const int64_t Ts[] = {1, 5, 33};
    for (size_t i = 0; i < sizeof Es / sizeof Es[0]; i++)
        for (size_t j = 0; j < sizeof Ts / sizeof Ts[0]; j++) {
            int64_t E = Es[i], ks[] = {1, 2, E / 2 > 0 ? E / 2 : 1, E};
            for (int q = 0; q < 4; q++)
                if (ks[q] <= E) {
                    check_route(Ts[j], E, ks[q], 3);  /* ties nearly everywhere */
                    check_route(Ts[j], E, ks[q], 40); /* some ties */
                }
        }
    /* a bad id weighs nothing */
    float logits[4] = {0, 1, 2, 3}, w[2];
    int32_t ids[2] = {7, -1};
    cpu_moe_weights(logits, ids, 1, 4, 2, CPU_ROUTER_SOFTMAX, 1, w, 0, 1);
    CHECK(w[0] == 0.0f && w[1] == 0.0f);
}

/* --- matmul_id and moe_sum ----------------------------------------------- */

static void fill_weights(void *w, enc_dtype dt, int64_t n, float *as_f32)
{
    for (int64_t i = 0; i < n; i++) {
        float v = rng_uniform();
        if (dt == ENC_BF16) {
            uint16_t h = enc_f32_to_bf16(v);
            ((uint16_t *)w)[i] = h, as_f32[i] = enc_bf16_to_f32(h);
        } else if (dt == ENC_F16) {
            uint16_t h = enc_f32_to_f16(v);
            ((uint16_t *)w)[i] = h, as_f32[i] = enc_f16_to_f32(h);
        } else {
            ((float *)w)[i] = as_f32[i] = v;
        }
    }
}

static void check_matmul_id(enc_dtype dt, int64_t T, int64_t k, int64_t K, int64_t N, int64_t E,
                            int per_slot)
{
    int64_t x_rows = per_slot ? T * k : T;
    float *x = xcalloc((size_t)(x_rows * K), sizeof *x);
    void *w = xcalloc((size_t)(E * N * K), 4);
    float *wf = xcalloc((size_t)(E * N * K), sizeof *wf);
    int32_t *ids = xcalloc((size_t)(T * k), sizeof *ids);
    float *y[3], *one = xcalloc((size_t)N, sizeof *one);
    for (int64_t i = 0; i < x_rows * K; i++)
        x[i] = rng_uniform();
    fill_weights(w, dt, E * N * K, wf);
    for (int64_t i = 0; i < T * k; i++) /* mostly a few popular experts, some bad ids */
        ids[i] = rng_next() % 13 == 0 ? -1 : (int32_t)(rng_next() % (uint64_t)(E < 3 ? E : 3));
    size_t expert_bytes = (size_t)(N * K) * enc_dtype_size(dt);
    for (int nth = 1; nth <= 3; nth++) {
        y[nth - 1] = xcalloc((size_t)(T * k * N), sizeof **y);
        for (int64_t i = 0; i < T * k * N; i++)
            y[nth - 1][i] = NAN; /* every row must be written */
        cpu_matmul_id_args a = {x, per_slot, ids, w, dt, y[nth - 1], T, k, K, N, E, 0, 0};
        for (int ith = 0; ith < nth; ith++)
            cpu_matmul_id(&a, ith, nth);
        if (nth > 1) CHECK(!memcmp(y[0], y[nth - 1], (size_t)(T * k * N) * sizeof **y));
    }
    int bad_bits = 0, bad_ref = 0, bad_zero = 0;
    for (int64_t p = 0; p < T * k; p++) {
        const float *xr = x + (per_slot ? p : p / k) * K, *yr = y[0] + p * N;
        if (ids[p] < 0) {
            for (int64_t n = 0; n < N; n++)
                bad_zero += yr[n] != 0.0f;
            continue;
        }
        cpu_matmul(xr, 1, K, (const char *)w + (size_t)ids[p] * expert_bytes, dt, N, one, 0, 1);
        bad_bits += memcmp(one, yr, (size_t)N * sizeof *one) != 0;
        for (int64_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            const float *wr = wf + ((size_t)ids[p] * N + n) * K;
            for (int64_t i = 0; i < K; i++)
                ref += (double)xr[i] * wr[i], mag += fabs((double)xr[i] * wr[i]);
            bad_ref += fabs(yr[n] - ref) > 1e-5 * mag + 1e-30;
        }
    }
    matmul_id_verdict((matmul_id_shape){dt, T, k, K, N, E, per_slot}, bad_bits, bad_ref, bad_zero);
    for (int i = 0; i < 3; i++)
        free(y[i]);
    free(x), free(w), free(wf), free(ids), free(one);
}

static void check_moe_sum(int64_t T, int64_t k, int64_t N)
{
    float *y = xcalloc((size_t)(T * k * N), sizeof *y), *w = xcalloc((size_t)(T * k), sizeof *w);
    float *out[3];
    for (int64_t i = 0; i < T * k * N; i++)
        y[i] = rng_uniform() * 4;
    for (int64_t i = 0; i < T * k; i++)
        w[i] = (rng_uniform() + 1) / 2;
    for (int nth = 1; nth <= 3; nth++) {
        out[nth - 1] = xcalloc((size_t)(T * N), sizeof **out);
        for (int ith = 0; ith < nth; ith++)
            cpu_moe_sum(y, w, T, k, N, out[nth - 1], ith, nth);
        if (nth > 1) CHECK(!memcmp(out[0], out[nth - 1], (size_t)(T * N) * sizeof **out));
    }
    int bad = 0;
    for (int64_t t = 0; t < T; t++)
        for (int64_t n = 0; n < N; n++) {
            double ref = 0;
            for (int64_t s = 0; s < k; s++)
                ref += (double)w[t * k + s] * y[(t * k + s) * N + n];
            bad += fabs(out[0][t * N + n] - ref) > 1e-5 * (double)k * 4;
        }
    CHECK(bad == 0);
    for (int i = 0; i < 3; i++)
        free(out[i]);
    free(y), free(w);
}

static void test_matmul_id(void)
{
    static const enc_dtype dts[] = {ENC_F32, ENC_BF16, ENC_F16};
    static const int64_t shapes[][5] = {/* T, k, K, N, E */
                                        {1, 1, 8, 4, 1},
                                        {1, 2, 64, 48, 4},
                                        {3, 2, 33, 17, 5},
                                        {16, 4, 128, 40, 8},
                                        {40, 8, 64, 65, 3},
                                        {7, 3, 100, 9, 2},
                                        {3, 2, 5000, 3, 2} /* rows too long to stage */,
                                        {2, 1, 8, 8200, 2} /* outputs too many to stage */};
    for (size_t d = 0; d < 3; d++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int per_slot = 0; per_slot < 2; per_slot++)
                check_matmul_id(dts[d], shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                                shapes[i][4], per_slot);
    check_moe_sum(1, 1, 7);
    check_moe_sum(5, 2, 64);
    check_moe_sum(33, 8, 100);
}

int main(void)
{
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        cpu_isa isa = (cpu_isa)i;
        if (!cpu_kernels_force_isa(isa)) continue;
        fprintf(stderr, "isa %s\n", cpu_isa_name(isa));
        test_route();
        test_matmul_id();
    }
    printf("test_moe_ops: %d failures\n", check_failures);
    return check_failures != 0;
}
