/* test_bf16_activations.c - the bf16 x bf16 matmul (cpu_matmul_bf16x,
 * --bf16-activations) and its activations' rounding:
 *
 *  - cpu_quantize_rows to ENC_BF16 gives the nearest bf16 of every value
 *    (ties to even), whatever the thread split;
 *  - every output is within 2^-20 of sum |x w| of a double-precision dot of
 *    the same bf16 values (the products are exact in f32; only the f32
 *    sums round), for k with and without a tail of its 32-value chunks;
 *  - batch invariance: a token's outputs are the same bits alone, in a
 *    batch of any size and under 1, 2 or 3 shares;
 *  - cpu_matmul_id with x_bf16 gives each (token, slot) pair the bits of
 *    cpu_matmul_bf16x over its expert, whatever the grouping (a decode's
 *    runs of whole experts, a prefill's part of each, rows per token or per
 *    slot, rows too long to stage).
 *
 * Exits 77 (skipped) on a CPU without AVX512-BF16, or with ENCORE_CPU_ISA
 * narrower than avx512: there the engine refuses the option. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_moe.h"
#include "base/dtype.h"
#include "check.h"

static uint32_t rng_state = 12345u;

static float rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

/* Spread over 2^-8 .. 2^8: sums of such products round in f32 (of
 * values near one they are often exact), so an order change shows. */
static float rnd_wide(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rnd() * ldexpf(1.0f, (int)(rng_state >> 28) - 8);
}

static void matmul_shares(const uint16_t *x, int64_t T, int64_t K, const uint16_t *w, int64_t N,
                          float *y, int nth)
{
    for (int ith = nth - 1; ith >= 0; ith--)
        cpu_matmul_bf16x(x, T, K, w, N, y, ith, nth);
}

/* f rounded to the nearest bf16, ties to the even one, found by comparing
 * the two neighbours in double (independent of enc_f32_to_bf16's bit trick;
 * finite f whose neighbours are finite). */
static uint16_t nearest_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1); /* toward zero, away */
    double dlo = fabs((double)f - enc_bf16_to_f32(lo)), dhi = fabs((double)f - enc_bf16_to_f32(hi));
    if (dlo != dhi) return dlo < dhi ? lo : hi;
    return (lo & 1) ? hi : lo;
}

static void check_rounding(int64_t rows, int64_t K)
{
    float *x = malloc(sizeof(float) * (size_t)(rows * K));
    uint16_t *q = malloc(sizeof(uint16_t) * (size_t)(rows * K));
    for (int64_t i = 0; i < rows * K; i++)
        x[i] = rnd() * 100.0f;
    x[0] = 1.0f + 1.0f / 256.0f;               /* a tie: to even (1.0) */
    x[1] = 1.0f + 3.0f / 256.0f;               /* a tie: to even (1 + 4/256) */
    x[2] = -(1.0f + 1.0f / 256.0f + 0x1p-20f); /* just past a tie: away */
    for (int nth = 1; nth <= 3; nth++) {
        memset(q, 0xff, sizeof(uint16_t) * (size_t)(rows * K));
        for (int ith = 0; ith < nth; ith++)
            cpu_quantize_rows(x, rows, K, ENC_BF16, q, ith, nth);
        int bad = 0;
        for (int64_t i = 0; i < rows * K; i++)
            bad += q[i] != nearest_bf16(x[i]);
        CHECK(bad == 0);
    }
    CHECK(q[0] == 0x3f80 && q[1] == 0x3f82 && q[2] == 0xbf81);
    free(x);
    free(q);
}

/* One shape: T tokens, K inputs, N outputs. */
static void check_shape(int64_t T, int64_t K, int64_t N)
{
    uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(T * K));
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)(N * K));
    float *y = malloc(sizeof(float) * (size_t)(T * N));
    float *y1 = malloc(sizeof(float) * (size_t)N);
    for (int64_t i = 0; i < T * K; i++)
        x[i] = enc_f32_to_bf16(rnd_wide());
    for (int64_t i = 0; i < N * K; i++)
        w[i] = enc_f32_to_bf16(rnd_wide());
    int far = 0, moved = 0;
    for (int nth = 1; nth <= 3; nth++) {
        for (int64_t i = 0; i < T * N; i++)
            y[i] = NAN;
        matmul_shares(x, T, K, w, N, y, nth);
        for (int64_t t = 0; t < T; t++) {
            for (int64_t n = 0; n < N; n++) {
                double dot = 0.0, mag = 0.0;
                for (int64_t k = 0; k < K; k++) {
                    double p =
                        (double)enc_bf16_to_f32(x[t * K + k]) * enc_bf16_to_f32(w[n * K + k]);
                    dot += p;
                    mag += fabs(p);
                }
                double got = y[t * N + n];
                far += !(fabs(got - dot) <= mag * 0x1p-20 + 1e-30);
            }
            /* token t alone: the same bits */
            matmul_shares(x + t * K, 1, K, w, N, y1, nth);
            moved += memcmp(y1, y + t * N, sizeof(float) * (size_t)N) != 0;
        }
    }
    if (far || moved)
        fprintf(stderr, "T=%lld K=%lld N=%lld: %d outputs off the reference, %d tokens moved\n",
                (long long)T, (long long)K, (long long)N, far, moved);
    CHECK(far == 0);
    CHECK(moved == 0);
    free(x);
    free(w);
    free(y);
    free(y1);
}

/* cpu_matmul_id over bf16 experts and bf16 rows: each pair's row equals
 * cpu_matmul_bf16x of its x row by its expert's matrix. */
static void check_matmul_id(int64_t T, int64_t k, int64_t E, int64_t K, int64_t N, int per_slot)
{
    int64_t x_rows = per_slot ? T * k : T;
    uint16_t *x = malloc(sizeof(uint16_t) * (size_t)(x_rows * K));
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)(E * N * K));
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(T * k));
    float *y = malloc(sizeof(float) * (size_t)(T * k * N));
    float *want = malloc(sizeof(float) * (size_t)N);
    for (int64_t i = 0; i < x_rows * K; i++)
        x[i] = enc_f32_to_bf16(rnd_wide());
    for (int64_t i = 0; i < E * N * K; i++)
        w[i] = enc_f32_to_bf16(rnd_wide());
    for (int64_t t = 0; t < T; t++)
        for (int64_t s = 0; s < k; s++)
            ids[t * k + s] = (int32_t)((t * 7 + s * 3) % E);
    int bad = 0;
    for (int nth = 1; nth <= 2; nth++) {
        cpu_matmul_id_args a = {.x = x,
                                .x_per_slot = per_slot,
                                .ids = ids,
                                .w = w,
                                .w_dtype = ENC_BF16,
                                .y = y,
                                .n_tokens = T,
                                .k = k,
                                .n_in = K,
                                .n_out = N,
                                .n_experts = E,
                                .packed = 0,
                                .x_bf16 = 1};
        for (int ith = nth - 1; ith >= 0; ith--)
            cpu_matmul_id(&a, ith, nth);
        for (int64_t p = 0; p < T * k; p++) {
            cpu_matmul_bf16x(x + (per_slot ? p : p / k) * K, 1, K, w + (size_t)ids[p] * N * K, N,
                             want, 0, 1);
            bad += memcmp(want, y + p * N, sizeof(float) * (size_t)N) != 0;
        }
    }
    CHECK(bad == 0);
    free(x);
    free(w);
    free(ids);
    free(y);
    free(want);
}

int main(void)
{
    cpu_kernels_init();
    if (!cpu_bf16_activations_supported()) {
        printf("SKIP: no AVX512-BF16 with the avx512 kernels here (%s kernels)\n",
               cpu_isa_name(cpu_kernels_init()));
        return 77;
    }
    check_rounding(7, 100);
    static const int64_t Ts[] = {1, 2, 3, 4, 5, 7, 16, 17};
    static const int64_t Ks[] = {32, 40, 64, 1000, 1056};
    for (size_t i = 0; i < sizeof Ts / sizeof *Ts; i++)
        for (size_t j = 0; j < sizeof Ks / sizeof *Ks; j++)
            check_shape(Ts[i], Ks[j], 37);
    check_shape(5, 96, 12);
    check_shape(2, 8, 3);
    check_shape(300, 520, 20); /* x past the few-token path (256 KiB): row blocks */
    for (int per_slot = 0; per_slot < 2; per_slot++) {
        check_matmul_id(9, 2, 4, 96, 40, per_slot); /* runs of whole experts (decode) */
        check_matmul_id(20, 4, 8, 70, 33, per_slot);
        check_matmul_id(40, 2, 4, 64, 50, per_slot); /* > 16 pairs an expert: a part of each */
        check_matmul_id(3, 2, 2, 9000, 5, per_slot); /* x rows too long to stage */
    }
    if (check_failures) return 1;
    printf("ok bf16 activations: rounding, dots, batch invariance, matmul_id\n");
    return 0;
}
