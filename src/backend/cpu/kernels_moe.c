/* kernels_moe.c - routing, the expert-indexed matmul and the weighted sum of
 * a mixture-of-experts layer on the CPU (kernels_moe.h).
 *
 * Routing is per token: one row of scores on the stack (at most 512
 * experts), k passes of an arg-max that keeps the lower id on ties. The
 * expert matmul is cpu_matmul's row kernel over one (token, slot) at a time,
 * visited expert by expert, so a token's bits are those of a dense matmul
 * with its expert's matrix. */
#include "backend/cpu/kernels_moe.h"

#include <math.h>
#include <string.h>

#include "backend/cpu/kernels.h"

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
    for (int64_t e = 1; e < n; e++) m = l[e] > m ? l[e] : m;
    float sum = 0.0f;
    for (int64_t e = 0; e < n; e++) {
        p[e] = expf(l[e] - m);
        sum += p[e];
    }
    for (int64_t e = 0; e < n; e++) p[e] /= sum;
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

void cpu_moe_route(const float *logits, int64_t n_tokens, int64_t n_experts, int64_t k,
                   int router, int32_t *ids, int ith, int nth)
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

void cpu_moe_weights(const float *logits, const int32_t *ids, int64_t n_tokens,
                     int64_t n_experts, int64_t k, int router, int norm, float *w, int ith,
                     int nth)
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
            for (int64_t s = 0; s < k; s++) wt[s] /= sum;
    }
}

/* --- the expert matmul ------------------------------------------------------- */

void cpu_matmul_id(const cpu_matmul_id_args *a, int ith, int nth)
{
    int64_t n_pairs = a->n_tokens * a->k;
    size_t expert_bytes = (size_t)a->n_out * enc_dtype_row_bytes(a->w_dtype, a->n_in);
    /* rows with an id out of range: zeros, this share's rows of them */
    int64_t p0, p1;
    moe__split(n_pairs, ith, nth, &p0, &p1);
    for (int64_t p = p0; p < p1; p++)
        if (a->ids[p] < 0 || a->ids[p] >= a->n_experts)
            memset(a->y + p * a->n_out, 0, (size_t)a->n_out * sizeof(float));
    for (int64_t e = 0; e < a->n_experts; e++) {
        const void *we = (const char *)a->w + (size_t)e * expert_bytes;
        for (int64_t p = 0; p < n_pairs; p++) {
            if (a->ids[p] != e) continue;
            const float *x = a->x + (a->x_per_slot ? p : p / a->k) * a->n_in;
            cpu_matmul(x, 1, a->n_in, we, a->w_dtype, a->n_out, a->y + p * a->n_out, ith, nth);
        }
    }
}

/* --- the weighted sum -------------------------------------------------------- */

void cpu_moe_sum(const float *y, const float *w, int64_t n_tokens, int64_t k, int64_t n,
                 float *out, int ith, int nth)
{
    int64_t t0, t1;
    moe__split(n_tokens, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        float *o = out + t * n;
        for (int64_t i = 0; i < n; i++) o[i] = 0.0f;
        for (int64_t s = 0; s < k; s++) {
            const float *ys = y + (t * k + s) * n;
            float ws = w[t * k + s];
            for (int64_t i = 0; i < n; i++) o[i] += ws * ys[i];
        }
    }
}
