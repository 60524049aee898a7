/* dtype.h - element types of tensors, and bf16/f16 <-> f32 conversion.
 *
 * bf16 is the top half of an f32 (round-to-nearest-even when narrowing);
 * f16 is IEEE binary16, converted in portable C (the SIMD kernels use F16C). */
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
    ENC_DTYPE_COUNT
} enc_dtype;

size_t enc_dtype_size(enc_dtype t);
const char *enc_dtype_name(enc_dtype t);

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
