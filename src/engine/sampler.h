/* sampler.h - choosing the next token from a row of logits.
 *
 * Temperature 0 is greedy (the first index of the largest logit). Otherwise
 * softmax(logits / T) is sampled by inverse CDF in double precision with a
 * per-request random stream (xoshiro256** seeded from the request's seed by
 * splitmix64), so a seeded request is reproducible whatever runs beside it. */
#ifndef ENC_ENGINE_SAMPLER_H
#define ENC_ENGINE_SAMPLER_H

#include <stdint.h>

typedef struct sampler_rng {
    uint64_t s[4];
} sampler_rng;

void sampler_rng_seed(sampler_rng *r, uint64_t seed);
/* Uniform in [0, 1). */
double sampler_rng_next(sampler_rng *r);

int32_t sampler_argmax(const float *logits, int64_t n);
/* Sample with temperature > 0; `probs` is scratch of n doubles. */
int32_t sampler_sample(const float *logits, int64_t n, double temperature, sampler_rng *rng,
                       double *probs);

#endif
