/* quant_blocks.h - random inputs for the tests of the block formats
 * (test_quant.c, test_quant_kernels.c): a seeded generator, gaussian values,
 * and raw random blocks of any GGUF block type with sane f16 scales. */
#ifndef ENC_TESTS_QUANT_BLOCKS_H
#define ENC_TESTS_QUANT_BLOCKS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/dtype.h"

static uint64_t qb_rng = 0x243f6a8885a308d3ull;

static inline uint64_t qb_next(void) /* splitmix64 */
{
    uint64_t z = (qb_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double qb_unit(void)
{
    return (double)(qb_next() >> 11) / 9007199254740992.0;
}

static inline float qb_gauss(void)
{
    double u = qb_unit() + 1e-12, v = qb_unit();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* A finite f16 of magnitude in [2^-10, 2^2), either sign. */
static inline uint16_t qb_f16(void)
{
    float mag = ldexpf((float)(1.0 + qb_unit()), (int)(qb_next() % 12) - 10);
    return enc_f32_to_f16(qb_next() & 1 ? -mag : mag);
}

/* Byte offsets of the f16 fields of a block of dt; returns their number. */
static inline int qb_f16_fields(enc_dtype dt, int *off)
{
    switch (dt) {
    case ENC_Q8_0:
    case ENC_Q4_0:
    case ENC_Q5_0:
    case ENC_IQ4_NL:
    case ENC_IQ4_XS:
        off[0] = 0;
        return 1;
    case ENC_Q4_K:
    case ENC_Q5_K:
        off[0] = 0, off[1] = 2;
        return 2;
    case ENC_Q6_K:
        off[0] = 208;
        return 1;
    case ENC_Q3_K:
        off[0] = 108;
        return 1;
    case ENC_Q2_K:
        off[0] = 80, off[1] = 82;
        return 2;
    case ENC_Q4_1:
    case ENC_Q5_1:
        off[0] = 0, off[1] = 2;
        return 2;
    default:
        return 0;
    }
}

/* One block of dt at b: random bytes, except for edge cases by `kind`:
 * 0 all quant bytes 0x00, 1 all 0xff (nibbles 15, 6-bit scales 63 with the
 * high bits of sub-blocks 4..7 set, int8 -1), 2 alternating 0x0f / 0xf0,
 * anything else random; the f16 scales are sane and of random sign (negative
 * d and dmin included). */
static inline void qb_block(enc_dtype dt, int kind, unsigned char *b)
{
    size_t bb = enc_dtype_block_bytes(dt);
    for (size_t j = 0; j < bb; j++) {
        unsigned char r = (unsigned char)qb_next();
        b[j] = kind == 0 ? 0x00 : kind == 1 ? 0xff : kind == 2 ? (j & 1 ? 0xf0 : 0x0f) : r;
    }
    int off[2], n = qb_f16_fields(dt, off);
    for (int f = 0; f < n; f++) {
        uint16_t h = qb_f16();
        memcpy(b + off[f], &h, 2);
    }
}

#endif
