/* quant.h - the block-quantized formats of GGUF, in portable C: their byte
 * layouts, dequantizing a row, and quantizing a row.
 *
 * The structs are byte for byte ggml's block_q8_0, block_q4_0, block_q4_K,
 * block_q5_K, block_q6_K (ggml-common.h), so files made by llama.cpp read
 * as they are; block_q8_K (f32 scale, per-16 sums) is the 8-bit form the
 * CPU kernels quantize activations to for a dot with the K types.
 *
 *   Q8_0  [d f16][qs 32 x i8]                       x = d * q
 *   Q4_0  [d f16][qs 16 B: x[j] low nibble, x[j+16] high]  x = d * (q - 8)
 *   Q4_K  [d f16][dmin f16][scales 12 B][qs 128 B]  x = d*sc[s]*q - dmin*m[s]
 *         8 sub-blocks of 32; sc, m 6 bits each, packed (quant__scale_min):
 *           s < 4:  sc = scales[s] & 63,  m = scales[s+4] & 63
 *           s >= 4: sc = (scales[s+4] & 15) | (scales[s-4] >> 6) << 4
 *                   m  = (scales[s+4] >> 4) | (scales[s]   >> 6) << 4
 *         64 values per 32 bytes of qs: the first 32 low nibbles, then high.
 *  Q5_K  as Q4_K with [qh 32 B] before qs: bit 2c of qh[l] is the fifth bit
 *         of value 64c + l, bit 2c+1 that of value 64c + 32 + l.
 *  Q6_K  [ql 128 B][qh 64 B][scales 16 x i8][d f16]  x = d * sc[i/16] * (q - 32)
 *         per 128 values: ql 64 B, qh 32 B; value l (l < 32) + 32 i, i < 4:
 *         low 4 bits = ql[l + 32 (i & 1)] >> 4 (i >> 1), high 2 = qh[l] >> 2 i.
 *  Q8_K  [d f32][qs 256 x i8][bsums 16 x i16]  x = d * q; bsums = sums of 16 q
 *  IQ4_XS [d f16][scales_h u16][scales_l 4 B][qs 128 B]  x = d * (ls[s] - 32) * kv[q]
 *         8 sub-blocks of 32, each laid out as an IQ4_NL block's nibbles
 *         (qs[16 s + j]: value j low, value j + 16 high); kv the IQ4_NL table
 *         (quant_widen.h); ls 6 bits: the low 4 in nibble s % 2 of
 *         scales_l[s / 2], the high 2 at bit 2 s of scales_h (quant_iq4xs_ls).
 *         Every value is exact in f32 (11 + 6 + 7 significant bits).
 *  Q4_1  [d f16][m f16][qs 16 B: as Q4_0's]      x = d * q + m
 *  Q5_1  [d f16][m f16][qh 4 B][qs 16 B]          x = d * q + m, q 5 bits: the
 *         low 4 as Q4_0's nibbles, bit j of qh (little-endian) value j's fifth
 *  Q2_K  [scales 16 B][qs 64 B][d f16][dmin f16]  x = d*sc[g]*q - dmin*m[g]
 *         16 groups g of 16; sc = scales[g] & 15, m = scales[g] >> 4;
 *         per 128 values n: value 32 j + 16 h + l (j < 4, h < 2, l < 16) of
 *         group 8 n + 2 j + h is (qs[32 n + 16 h + l] >> 2 j) & 3.
 *
 * Quantizers (quant.c): Q8_0 and Q4_0 as ggml's reference ones (round to
 * nearest); the K types by least squares (quant_k.c): each sub-block's
 * scale (and min) the best of a few candidate steps, the scales then on the
 * super-block's grid, every value on the level nearest to it that its
 * block can represent (a value may clip at the end of its range). */
#ifndef ENC_BASE_QUANT_H
#define ENC_BASE_QUANT_H

#include <stdint.h>

#include "base/dtype.h"

enum { QUANT_K = 256 };

typedef struct block_q8_0 {
    uint16_t d;
    int8_t qs[32];
} block_q8_0;

typedef struct block_q4_0 {
    uint16_t d;
    uint8_t qs[16];
} block_q4_0;

typedef struct block_q4_K {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qs[128];
} block_q4_K;

typedef struct block_q5_K {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
} block_q5_K;

typedef struct block_q6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
} block_q6_K;

typedef struct block_q8_K {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
} block_q8_K;

typedef struct block_iq4_xs {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[4];
    uint8_t qs[128];
} block_iq4_xs;

typedef struct block_q4_1 {
    uint16_t d, m;
    uint8_t qs[16];
} block_q4_1;

typedef struct block_q5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[16];
} block_q5_1;

typedef struct block_q2_K {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d, dmin;
} block_q2_K;

_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 is ggml's 34 bytes");
_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 is ggml's 18 bytes");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K is ggml's 144 bytes");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K is ggml's 176 bytes");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K is ggml's 210 bytes");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K is ggml's 292 bytes");
_Static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs is ggml's 136 bytes");
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K is ggml's 84 bytes");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 is ggml's 20 bytes");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 is ggml's 24 bytes");

/* Level j (0..31) of a Q4_1 (qh NULL) or Q5_1 block: its nibble, and its
 * fifth bit from qh. */
static inline int quant_level_1(const uint8_t *qs, const uint8_t *qh, int j)
{
    int q = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
    if (qh) q |= ((qh[j / 8] >> (j % 8)) & 1) << 4;
    return q;
}

/* The 6-bit scale and min of sub-block s (0..7) of a Q4_K/Q5_K block. */
static inline void quant_scale_min_k4(const uint8_t *scales, int s, int *sc, int *m)
{
    if (s < 4) {
        *sc = scales[s] & 63;
        *m = scales[s + 4] & 63;
    } else {
        *sc = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4);
        *m = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
    }
}

/* The signed scale ls - 32 (-32..31) of sub-block s (0..7) of an IQ4_XS block. */
static inline int quant_iq4xs_ls(const block_iq4_xs *b, int s)
{
    return (((b->scales_l[s / 2] >> (4 * (s % 2))) & 15) | (((b->scales_h >> (2 * s)) & 3) << 4)) -
           32;
}

/* The 8-bit block type that activations take for integer dot products with
 * weights of type w: Q8_0 for Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1 and Q5_1, Q8_K for Q2_K,
 * Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS; F32 for any other type. */
enc_dtype quant_dot_dtype(enc_dtype w);

/* dst[0 .. n) = the n values of the blocks at src (n a multiple of the block
 * size of dt). Element types (F32, BF16, F16) convert; the types widened at
 * load (quant_widen.h) read through their widened blocks. Returns 0, or -1 for
 * a type it cannot read or an n that is no whole number of blocks. */
int quant_dequantize_row(enc_dtype dt, const void *src, float *dst, int64_t n);

/* Whether quant_quantize_row has a quantizer for dt: Q8_0, Q4_0, Q4_K,
 * Q5_K, Q6_K or Q8_K. */
int quant_quantizes(enc_dtype dt);

/* The blocks of dt holding src[0 .. n) written to dst (enc_dtype_row_bytes(dt,
 * n) bytes), dt one quant_quantizes says yes to. Returns 0, or -1 as above. */
int quant_quantize_row(enc_dtype dt, const float *src, void *dst, int64_t n);

#endif
