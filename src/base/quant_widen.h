/* quant_widen.h - GGUF block types that a backend without kernels for them
 * reads by widening them, at load and exactly, to a block type its kernels
 * read: every value of the widened block equals the stored one bit for bit,
 * so a model runs as the file's own dequantized weights would, at the
 * widened type's bytes. (Both backends read all three as they are, with
 * the steps, so the bits, of the widened blocks; the widening stays for a
 * backend that lacks a type, and as the definition those steps follow.)
 *
 *   Q5_0    [d f16][qh 4 B][qs 16 B]   x = d * (q - 16), q 5 bits: the low
 *           4 as Q4_0's nibbles, bit j of qh (little-endian) the fifth bit
 *           of value j                 -> Q8_0: d, q - 16 (22 -> 34 bytes)
 *   IQ4_NL  [d f16][qs 16 B]           x = d * kv[q], q a nibble as in Q4_0,
 *           kv = {-127, -104, -83, -65, -49, -35, -22, -10,
 *                 1, 13, 25, 38, 53, 69, 89, 113}
 *                                      -> Q8_0: d, kv[q] (18 -> 34 bytes)
 *   Q3_K    [hmask 32 B][qs 64 B][scales 12 B][d f16], 256 values in 16
 *           groups of 16: x = d * (s[g] - 32) * (q - (h ? 0 : 4)), s 6 bits
 *           (low 4: scales[g] & 15 for g < 8, scales[g - 8] >> 4 after; high
 *           2: scales[8 + g % 4] >> 2 (g / 4)); value p: q = qs[32 (p / 128)
 *           + p % 32] >> 2 ((p / 32) % 4) & 3, h = hmask[p % 32] >> (p / 32)
 *           & 1                        -> Q6_K: d, s - 32, q + 28 + 4h (110 -> 210)
 *
 * The products are the same floats: (d * s') * q' in both (ggml's order). */
#ifndef ENC_BASE_QUANT_WIDEN_H
#define ENC_BASE_QUANT_WIDEN_H

#include <stdint.h>

#include "base/dtype.h"

typedef struct block_q5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
} block_q5_0;

typedef struct block_iq4_nl {
    uint16_t d;
    uint8_t qs[16];
} block_iq4_nl;

typedef struct block_q3_K {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12];
    uint16_t d;
} block_q3_K;

_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 is ggml's 22 bytes");
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl is ggml's 18 bytes");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K is ggml's 110 bytes");

/* IQ4_NL's 16 levels, indexed by a nibble. */
extern const int8_t quant_iq4nl_values[16];

/* The type a tensor stored as dt widens to: Q8_0 for Q5_0 and IQ4_NL, Q6_K
 * for Q3_K, dt itself for every other type. */
enc_dtype quant_widened_dtype(enc_dtype dt);

/* 1 if dt is one of the types above. */
static inline int quant_is_widened(enc_dtype dt)
{
    return quant_widened_dtype(dt) != dt;
}

/* dst = the n values of the blocks of dt at src as blocks of
 * quant_widened_dtype(dt) (enc_dtype_row_bytes of it, n bytes). Returns 0,
 * or -1 for a dt that is not widened or an n that is no whole number of
 * blocks. */
int quant_widen_row(enc_dtype dt, const void *src, void *dst, int64_t n);

#endif
