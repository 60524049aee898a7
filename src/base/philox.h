/* philox.h - the counter-based generator Philox4x32-10 (Salmon et al.,
 * "Parallel Random Numbers: As Easy as 1, 2, 3", SC11), and the sampler's
 * uniform draw keyed by (request seed, token position).
 *
 * A counter-based generator has no state: the output is a pure function of
 * a 128-bit counter and a 64-bit key, so the draw for one token does not
 * depend on how many draws came before it, on the batch, the backend or the
 * number of decode steps per replay. The host reference sampler, the CPU
 * kernel and the Vulkan shader (shaders/philox.glsl, the same rounds in GLSL)
 * compute the same words.
 *
 *   counter {c0, c1, c2, c3} ──10 rounds, key bumped by (W0, W1) between──► 4 words
 *   round:  (hi0, lo0) = M0 * c0;  (hi1, lo1) = M1 * c2   (32 x 32 -> 64 bits)
 *           c = {hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0}
 *
 * The sampler's uniform for the token at position `pos` of a request with
 * seed `seed`: key {seed low, seed high}, counter {pos low, pos high, 0, 0};
 * 53 bits of the first two output words make a double in [0, 1). */
#ifndef ENC_BASE_PHILOX_H
#define ENC_BASE_PHILOX_H

#include <stdint.h>

enum { PHILOX_ROUNDS = 10 };

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

/* out = Philox4x32-10(ctr, key). */
static inline void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < PHILOX_ROUNDS; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The uniform in [0, 1) of the token at position pos of the request seeded
 * with seed. */
static inline double philox_uniform(uint64_t seed, int64_t pos)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint64_t p = (uint64_t)pos;
    uint32_t ctr[4] = {(uint32_t)p, (uint32_t)(p >> 32), 0u, 0u}, out[4];
    philox4x32_10(ctr, key, out);
    uint64_t bits = ((uint64_t)(out[0] >> 5) << 26) | (uint64_t)(out[1] >> 6); /* 27 + 26 bits */
    return (double)bits * 0x1.0p-53;
}

#endif
