/* quant_widen.c - Q5_0, IQ4_NL and Q3_K blocks rewritten as the Q8_0 and
 * Q6_K blocks of the same values (quant_widen.h). */
#include "base/quant_widen.h"

#include <string.h>

#include "base/quant.h"

enc_dtype quant_widened_dtype(enc_dtype dt)
{
    switch (dt) {
    case ENC_Q5_0:
    case ENC_IQ4_NL:
        return ENC_Q8_0;
    case ENC_Q3_K:
        return ENC_Q6_K;
    default:
        return dt;
    }
}

static void widen__q5_0(const block_q5_0 *b, block_q8_0 *o)
{
    uint32_t qh = (uint32_t)b->qh[0] | (uint32_t)b->qh[1] << 8 | (uint32_t)b->qh[2] << 16 |
                  (uint32_t)b->qh[3] << 24;
    o->d = b->d;
    for (int j = 0; j < 16; j++) {
        int lo = (b->qs[j] & 15) | (int)((qh >> j) & 1) << 4;
        int hi = (b->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        o->qs[j] = (int8_t)(lo - 16);
        o->qs[j + 16] = (int8_t)(hi - 16);
    }
}

const int8_t quant_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                       1,    13,   25,  38,  53,  69,  89,  113};

static void widen__iq4_nl(const block_iq4_nl *b, block_q8_0 *o)
{
    o->d = b->d;
    for (int j = 0; j < 16; j++) {
        o->qs[j] = quant_iq4nl_values[b->qs[j] & 15];
        o->qs[j + 16] = quant_iq4nl_values[b->qs[j] >> 4];
    }
}

/* The 6-bit scale of group g (0..15) of a Q3_K block. */
static int widen__q3_k_scale(const uint8_t *scales, int g)
{
    int lo = g < 8 ? scales[g] & 15 : scales[g - 8] >> 4;
    int hi = (scales[8 + g % 4] >> (2 * (g / 4))) & 3;
    return lo | hi << 4;
}

/* Value p of a Q3_K block as its level, -4..3. */
static int widen__q3_k_level(const block_q3_K *b, int p)
{
    int q = (b->qs[32 * (p / 128) + p % 32] >> (2 * ((p / 32) % 4))) & 3;
    int h = (b->hmask[p % 32] >> (p / 32)) & 1;
    return q - (h ? 0 : 4);
}

/* Value p of a Q6_K block set to level q6 (0..63); its bits start cleared. */
static void widen__q6_k_put(block_q6_K *o, int p, int q6)
{
    int h = p / 128, i = (p % 128) / 32, l = p % 32;
    o->ql[64 * h + l + 32 * (i & 1)] |= (uint8_t)((q6 & 15) << (4 * (i >> 1)));
    o->qh[32 * h + l] |= (uint8_t)((q6 >> 4) << (2 * i));
}

static void widen__q3_k(const block_q3_K *b, block_q6_K *o)
{
    memset(o, 0, sizeof *o);
    o->d = b->d;
    for (int g = 0; g < 16; g++)
        o->scales[g] = (int8_t)(widen__q3_k_scale(b->scales, g) - 32);
    for (int p = 0; p < QUANT_K; p++)
        widen__q6_k_put(o, p, widen__q3_k_level(b, p) + 32);
}

int quant_widen_row(enc_dtype dt, const void *src, void *dst, int64_t n)
{
    int64_t be = enc_dtype_block_elems(dt);
    if (!quant_is_widened(dt) || n < 0 || n % be != 0) return -1;
    const unsigned char *p = src;
    unsigned char *q = dst;
    size_t in = enc_dtype_block_bytes(dt), out = enc_dtype_block_bytes(quant_widened_dtype(dt));
    for (int64_t i = 0; i < n / be; i++, p += in, q += out) {
        switch (dt) {
        case ENC_Q5_0:
            widen__q5_0((const block_q5_0 *)p, (block_q8_0 *)q);
            break;
        case ENC_IQ4_NL:
            widen__iq4_nl((const block_iq4_nl *)p, (block_q8_0 *)q);
            break;
        default:
            widen__q3_k((const block_q3_K *)p, (block_q6_K *)q);
            break;
        }
    }
    return 0;
}
