/* dtype.h - element types of tensors, and bf16/f16 <-> f32 conversion.
 *
 * bf16 is the top half of an f32 (round-to-nearest-even when narrowing);
 * f16 is IEEE binary16, converted in portable C (the SIMD kernels use F16C).
 *
 * Block types (Q8_0 ... Q6_K) hold weights quantized in blocks of
 * enc_dtype_block_elems() values stored in enc_dtype_block_bytes() bytes,
 * byte for byte the GGUF block layouts of ggml. A row of such a tensor is a
 * whole number of blocks; its size is enc_dtype_row_bytes(). Element types
 * have blocks of one element. base/quant.h reads and writes the blocks. */
#ifndef ENC_BASE_DTYPE_H
#define ENC_BASE_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum enc_dtype {
    ENC_F32 = 0,
    ENC_BF16,
    ENC_F16,
    ENC_I32,
    ENC_Q8_0, /* 32 values: f16 scale d, 32 x int8;  x = d * q                 */
    ENC_Q4_0, /* 32 values: f16 d, 16 bytes of nibbles; x = d * (q - 8)        */
    ENC_Q4_K, /* 256 values: f16 d, dmin, 12 bytes of 6-bit scales/mins, 128 B  */
    ENC_Q5_K, /* 256 values: as Q4_K plus 32 bytes of fifth bits               */
    ENC_Q6_K, /* 256 values: 128 B low nibbles, 64 B high bits, 16 int8 scales, f16 d */
    ENC_Q8_K, /* 256 values: f32 d, 256 x int8, 16 int16 sums; the CPU kernels'
               * activations for a dot with the K types, never a weight */
    /* Block types read from GGUF files and widened at load, exactly, to a
     * type the kernels read (base/quant_widen.h); no backend sees them. */
    ENC_Q5_0,   /* 32 values: f16 d, 32 fifth bits, 16 B of nibbles; x = d * (q - 16) */
    ENC_IQ4_NL, /* 32 values: f16 d, 16 B of nibbles indexing a fixed int8 table    */
    ENC_Q3_K,   /* 256 values: 32 B high bits, 64 B of 2-bit q, 12 B of 6-bit scales, f16 d */
    ENC_IQ4_XS, /* 256 values: f16 d, 8 6-bit scales (ls - 32), 128 B of IQ4_NL nibbles    */
    ENC_Q2_K,   /* 256 values: 16 B of 4-bit scales and mins, 64 B of 2-bit q, f16 d, dmin */
    ENC_Q4_1,   /* 32 values: f16 d, f16 m, 16 B of nibbles; x = d * q + m             */
    ENC_Q5_1,   /* 32 values: f16 d, f16 m, 32 fifth bits, 16 B of nibbles; x = d * q + m */
    ENC_DTYPE_COUNT
} enc_dtype;

/* Bytes of one element; 0 for block types (use enc_dtype_row_bytes). */
size_t enc_dtype_size(enc_dtype t);
const char *enc_dtype_name(enc_dtype t);
/* 1 for the quantized block types. */
int enc_dtype_is_quantized(enc_dtype t);
/* Values per block (1 for element types) and bytes per block. */
int64_t enc_dtype_block_elems(enc_dtype t);
size_t enc_dtype_block_bytes(enc_dtype t);
/* Bytes of n consecutive values (n a multiple of the block size; 0 if not). */
size_t enc_dtype_row_bytes(enc_dtype t, int64_t n);

static inline float enc_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t enc_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float enc_f16_to_f32(uint16_t h);
uint16_t enc_f32_to_f16(float f);

#endif
