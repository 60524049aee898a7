/* dtype.c - dtype sizes and names; IEEE half precision conversion. */
#include "base/dtype.h"

size_t enc_dtype_size(enc_dtype t)
{
    switch (t) {
    case ENC_F32: return 4;
    case ENC_BF16: return 2;
    case ENC_F16: return 2;
    case ENC_I32: return 4;
    default: return 0;
    }
}

const char *enc_dtype_name(enc_dtype t)
{
    switch (t) {
    case ENC_F32: return "F32";
    case ENC_BF16: return "BF16";
    case ENC_F16: return "F16";
    case ENC_I32: return "I32";
    case ENC_Q8_0: return "Q8_0";
    case ENC_Q4_0: return "Q4_0";
    case ENC_Q4_K: return "Q4_K";
    case ENC_Q5_K: return "Q5_K";
    case ENC_Q6_K: return "Q6_K";
    case ENC_Q8_K: return "Q8_K";
    case ENC_Q5_0: return "Q5_0";
    case ENC_IQ4_NL: return "IQ4_NL";
    case ENC_Q3_K: return "Q3_K";
    case ENC_IQ4_XS: return "IQ4_XS";
    case ENC_Q2_K: return "Q2_K";
    case ENC_Q4_1: return "Q4_1";
    case ENC_Q5_1: return "Q5_1";
    default: return "?";
    }
}

int enc_dtype_is_quantized(enc_dtype t)
{
    return t >= ENC_Q8_0 && t < ENC_DTYPE_COUNT;
}

int64_t enc_dtype_block_elems(enc_dtype t)
{
    switch (t) {
    case ENC_Q8_0:
    case ENC_Q4_0:
    case ENC_Q5_0:
    case ENC_IQ4_NL:
    case ENC_Q4_1:
    case ENC_Q5_1: return 32;
    case ENC_Q4_K:
    case ENC_Q5_K:
    case ENC_Q6_K:
    case ENC_Q8_K:
    case ENC_Q3_K:
    case ENC_IQ4_XS:
    case ENC_Q2_K: return 256;
    default: return 1;
    }
}

size_t enc_dtype_block_bytes(enc_dtype t)
{
    switch (t) {
    case ENC_Q8_0: return 2 + 32;                 /* 34 */
    case ENC_Q4_0: return 2 + 16;                 /* 18 */
    case ENC_Q4_K: return 2 + 2 + 12 + 128;       /* 144 */
    case ENC_Q5_K: return 2 + 2 + 12 + 32 + 128;  /* 176 */
    case ENC_Q6_K: return 128 + 64 + 16 + 2;      /* 210 */
    case ENC_Q8_K: return 4 + 256 + 2 * 16;       /* 292 */
    case ENC_Q5_0: return 2 + 4 + 16;             /* 22 */
    case ENC_IQ4_NL: return 2 + 16;               /* 18 */
    case ENC_Q3_K: return 32 + 64 + 12 + 2;       /* 110 */
    case ENC_IQ4_XS: return 2 + 2 + 4 + 128;      /* 136 */
    case ENC_Q2_K: return 16 + 64 + 2 + 2;        /* 84 */
    case ENC_Q4_1: return 2 + 2 + 16;             /* 20 */
    case ENC_Q5_1: return 2 + 2 + 4 + 16;         /* 24 */
    default: return enc_dtype_size(t);
    }
}

size_t enc_dtype_row_bytes(enc_dtype t, int64_t n)
{
    int64_t be = enc_dtype_block_elems(t);
    if (n < 0 || n % be != 0) return 0;
    return (size_t)(n / be) * enc_dtype_block_bytes(t);
}

float enc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400u) == 0);
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t enc_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((u >> 23) & 0xffu) - 127 + 15;
    uint32_t man = u & 0x7fffffu;
    if (((u >> 23) & 0xffu) == 0xffu) /* inf / nan */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) { /* subnormal or zero */
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)half;
}
