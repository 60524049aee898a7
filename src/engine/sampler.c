/* sampler.c - greedy and temperature sampling with a per-request stream. */
#include "engine/sampler.h"

#include <math.h>

static uint64_t sampler__splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sampler_rng_seed(sampler_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = sampler__splitmix64(&seed);
}

static uint64_t sampler__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

double sampler_rng_next(sampler_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = sampler__rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sampler__rotl(s[3], 45);
    return (double)(result >> 11) * 0x1.0p-53;
}

int32_t sampler_argmax(const float *logits, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return (int32_t)best;
}

int32_t sampler_sample(const float *logits, int64_t n, double temperature, sampler_rng *rng,
                       double *probs)
{
    double max = logits[sampler_argmax(logits, n)];
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        probs[i] = exp(((double)logits[i] - max) / temperature);
        sum += probs[i];
    }
    double u = sampler_rng_next(rng) * sum, acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += probs[i];
        if (u < acc) return (int32_t)i;
    }
    /* Rounding left u at or past the total: take the last token with mass. */
    for (int64_t i = n - 1; i > 0; i--)
        if (probs[i] > 0.0) return (int32_t)i;
    return 0;
}
