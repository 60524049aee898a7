/* kernels_repack_512_impl.h - the interleaved Q4_0, Q8_0, IQ4_NL and Q5_0 kernels of
 * kernels_repack_impl.h on 512-bit vectors, for calls of several tokens on
 * AVX-512 VNNI (the table's x16; the K types' are the 512-bit build of
 * kernels_repack_k_body.h): two consecutive groups of 8 rows (16 rows) side
 * by side in one vector, so that each broadcast of a token's 4 bytes and
 * each vpdpbusd serves 16 rows, not 8. Included by kernels_quant_impl.h's
 * Part 2 after kernels_repack_impl.h, only where the build has AVX-512 F/BW
 * and VNNI (kernels_quant_vnni.c).
 *
 *   lanes 0..7:  rows 0..7 of group g      (bytes at g)
 *   lanes 8..15: rows 0..7 of group g + 1  (bytes at g + nb * group block bytes)
 *
 * Each chunk vector is the two groups' 256-bit chunks joined; the token's
 * 4 bytes go to all 16 lanes. Lane by lane the steps are those of
 * cpu__qx_tile with VNNI: the same exact int32 isum (Q4_0 levels less 8
 * times the token's byte sum; Q8_0, IQ4_NL and Q5_0 levels + 128 less 128 times it), then acc +=
 * (d_w d_x) isum, a multiply, a multiply and an add in f32. So every output
 * has the bits of the 8-row kernel, the portable dot's, whatever the pairing
 * of groups. */

/* The 256-bit chunks at a (group g) and b (group g + 1) as one vector. */
static inline __m512i cpu__qx16_join(const unsigned char *a, const unsigned char *b)
{
    __m512i lo = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a));
    return _mm512_inserti64x4(lo, _mm256_loadu_si256((const __m256i *)b), 1);
}

/* The 16 bytes at a (group g) and the 16 at b (group g + 1) as one vector. */
static inline __m256i cpu__qx16_join128(const unsigned char *a, const unsigned char *b)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                   _mm_loadu_si128((const __m128i *)b), 1);
}

/* The 8 f16 at a (group g) and the 8 at b (group g + 1) as 16 floats. */
static inline __m512 cpu__qx16_f16(const unsigned char *a, const unsigned char *b)
{
    return _mm512_cvtph_ps(cpu__qx16_join128(a, b));
}

/* The token's 4 bytes at p in every int32 lane. */
static inline __m512i cpu__qx16_bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* cpu__qx_bits16 on 16 lanes: 16 in byte k of each int32 lane where bit 8
 * byte + shift + k of the lane's 32 bits in h is set, else 0. */
static inline __m512i cpu__qx16_bits16(__m512i h, int byte, int shift)
{
    const __m512i pick = _mm512_add_epi8(_mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0),
                                         _mm512_set1_epi8((char)byte));
    const __m512i bit = _mm512_set1_epi32((int)(0x08040201u << shift));
    __mmask64 set = _mm512_test_epi8_mask(_mm512_shuffle_epi8(h, pick), bit);
    return _mm512_maskz_mov_epi8(set, _mm512_set1_epi8(16));
}

/* Block levels of the two groups (chunks after the 8 scales at qa, qb):
 * Q4_0 lv[c] the low nibbles of chunk c, lv[4 + c] the high ones; IQ4_NL
 * those nibbles' levels + 128, and Q5_0 (its qh the chunk before its
 * nibbles') the nibbles with their fifth bits + 112, so lv[c] holds values
 * 4c..4c+3 as a Q8_0 chunk; Q8_0 lv[c] w + 128 of chunk c. */
CPU__Q_INLINE void cpu__qx16_levels(int kind, const unsigned char *qa, const unsigned char *qb,
                                    __m512i *lv)
{
    if (kind != CPU__Q8) {
        size_t o = kind == CPU__Q5 ? 32 : 0; /* Q5_0: the qh chunk first */
        CPU__Q_UNROLL for (int c = 0; c < 4; c++)
        {
            __m512i v = cpu__qx16_join(qa + o + 32 * c, qb + o + 32 * c);
            lv[c] = _mm512_and_si512(v, _mm512_set1_epi8(15));
            lv[4 + c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(15));
        }
        if (kind == CPU__Q4) return;
        if (kind == CPU__Q5) {
            __m512i h = cpu__qx16_join(qa, qb);
            CPU__Q_UNROLL for (int c = 0; c < 4; c++)
            {
                lv[c] = _mm512_or_si512(lv[c], cpu__qx16_bits16(h, c / 2, 4 * (c % 2)));
                lv[4 + c] = _mm512_or_si512(lv[4 + c], cpu__qx16_bits16(h, 2 + c / 2, 4 * (c % 2)));
            }
        }
        __m512i table =
            _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)quant_iq4nl_values));
        CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
        {
            lv[c] = kind == CPU__IQ4 ? _mm512_shuffle_epi8(table, lv[c])
                                     : _mm512_sub_epi8(lv[c], _mm512_set1_epi8(16));
            lv[c] = _mm512_xor_si512(lv[c], _mm512_set1_epi8(-128));
        }
        return;
    }
    CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
    {
        lv[c] = _mm512_xor_si512(cpu__qx16_join(qa + 32 * c, qb + 32 * c), _mm512_set1_epi8(-128));
    }
}

/* The 16 rows' exact isums of one block against token block x, less off
 * (Q4_0: 8 times the token's byte sum; Q8_0, IQ4_NL and Q5_0: 128 times it). */
CPU__Q_INLINE __m512i cpu__qx16_isum(int kind, const __m512i *lv, const block_q8_0 *x, __m512i off)
{
    __m512i s = _mm512_setzero_si512();
    if (kind == CPU__Q4) {
        CPU__Q_UNROLL for (int c = 0; c < 4; c++)
        {
            s = _mm512_dpbusd_epi32(s, lv[c], cpu__qx16_bcast4(x->qs + 4 * c));
            s = _mm512_dpbusd_epi32(s, lv[4 + c], cpu__qx16_bcast4(x->qs + 16 + 4 * c));
        }
    } else {
        CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
        {
            s = _mm512_dpbusd_epi32(s, lv[c], cpu__qx16_bcast4(x->qs + 4 * c));
        }
    }
    return _mm512_sub_epi32(s, off);
}

/* The body: T tokens x the 16 rows of groups g and g + 1 (blocks of
 * kind); has_tok as cpu__qx_tile. y[t] gets 16 floats. */
CPU__Q_INLINE void cpu__qx16_tile(int kind, int T, int has_tok, const void *g,
                                  const void *const *xv, const cpu__qx_tok *const *tok, int64_t nb,
                                  float *const *y)
{
    const int q4 = kind == CPU__Q4;
    const size_t gb = CPU__QX_R * cpu__q_bb(kind);
    const unsigned char *g0 = g, *g1 = g0 + (size_t)nb * gb;
    __m512 acc[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const unsigned char *pa = g0 + (size_t)b * gb, *pb = g1 + (size_t)b * gb;
        __m512 dw = cpu__qx16_f16(pa, pb);
        __m512i lv[8];
        cpu__qx16_levels(kind, pa + 2 * CPU__QX_R, pb + 2 * CPU__QX_R, lv);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const block_q8_0 *x = (const block_q8_0 *)xv[t] + b;
            float dx = has_tok ? tok[t][b].dx : cpu__q_f16(x->d);
            int32_t xs8 = has_tok ? tok[t][b].xs8 : _mm256_cvtsi256_si32(cpu__qx_xsum8(x->qs));
            __m512i isum = cpu__qx16_isum(kind, lv, x, _mm512_set1_epi32(q4 ? xs8 : 16 * xs8));
            __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(dx));
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(s, _mm512_cvtepi32_ps(isum)));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], acc[t]);
}

CPU__QX_TYPE(cpu__qx16_q4_0, cpu__qx16_tile, CPU__Q4)
CPU__QX_TYPE(cpu__qx16_q8_0, cpu__qx16_tile, CPU__Q8)
CPU__QX_TYPE(cpu__qx16_iq4_nl, cpu__qx16_tile, CPU__IQ4)
CPU__QX_TYPE(cpu__qx16_q5_0, cpu__qx16_tile, CPU__Q5)
