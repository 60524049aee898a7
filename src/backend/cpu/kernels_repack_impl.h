/* kernels_repack_impl.h - the 256-bit bodies of the interleaved matmul
 * kernels (cpu__qx8_fn): 8 weight rows of one group (repack.h) against up to
 * CPU__QX_TOKENS tokens' Q8_0 blocks. Included by kernels_quant_impl.h's
 * Part 2 (so by kernels_quant_avx2.c and kernels_quant_vnni.c) before their
 * table; it uses that part's CPU__Q_DOT4 and helpers.
 *
 * Per 32-block and token, row r's exact int32 isum ends up in lane r:
 *   a chunk vector holds qs bytes 4c..4c+3 of the 8 rows; the token's 4
 *   bytes of the same values, broadcast to every lane, meet it in one u8 x
 *   s8 dot of 4-byte groups, so lane r gets row r's 4 products.
 *   Q4_0: the levels q (0..15, one vector per nibble) against x: each
 *   vpmaddubsw lane is a pair |q x| <= 2 * 15 * 128 = 3840, and the 8 of a
 *   block (4 chunks x 2 nibbles) add to |.| <= 30720 < 2^15 in int16, exact;
 *   one vpmaddwd by 1 makes the int32 sum of q x over the block, and 8 times
 *   the token's byte sum (|.| <= 8 * 32 * 128) is taken off once per block
 *   and token: sum (q - 8) x, the portable isum. That sum and d_x as f32
 *   come from the token table (cpu__qx_tok) where the caller made one.
 *   With VNNI each chunk's products go straight into the int32 sum
 *   (vpdpbusd), the same exact value in 9 instructions per block, not 18.
 *   Q8_0: |w| against x with w's sign (vpsignb), a vpmaddubsw pair |.| <=
 *   2 * 128 * 127 = 32512 < 2^15 (never saturates), summed to int32 at once
 *   (CPU__Q_DOT4). With VNNI (CPU__Q_DOT4_ACC, vpdpbusd, no int16 step to
 *   saturate) the u8 operand is w xor 0x80 = w + 128 (0..255, made once per
 *   block for all tokens), summed into one int32 per lane (|.| <= 32 * 255
 *   * 128), and 128 times the token's byte sum is taken off once per block:
 *   sum w x again, exact, two instructions fewer per chunk and token.
 *   IQ4_NL: Q4_0's nibbles turned into its signed levels by one vpshufb of
 *   its 16 (quant_iq4nl_values), arranged as Q8_0's chunks, then Q8_0's
 *   steps (|w| against x signed by w, or w + 128 with VNNI): the integers of
 *   the Q8_0 block it widens to. Q5_0: Q4_0's nibbles and each one's fifth
 *   bit from the qh chunk (vpshufb of the byte holding it, a test of the
 *   bit), less 16, then the same.
 * Then acc(8 rows) += (d_w(8 rows) * d_x) * (float)isum, a multiply, a
 * multiply and an add in f32 lane by lane: the portable dot's steps in its
 * order, so every output has the portable bits, whatever T or the ISA. */

enum { CPU__QX_R = 8 }; /* rows of a group: CPU_REPACK_ROWS */

/* The token's 4 bytes at p in every int32 lane. */
static inline __m256i cpu__qx_bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* 8 times the sum of the 32 signed bytes of a token's block, in every lane
 * (vpmaddubsw by 1: pairs |.| <= 256; the rest int32). */
static inline __m256i cpu__qx_xsum8(const int8_t *qs)
{
    __m256i p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)qs));
    __m256i s = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
    s = _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0x4e));
    s = _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0xb1));
    s = _mm256_add_epi32(s, _mm256_permute2x128_si256(s, s, 0x01));
    return _mm256_slli_epi32(s, 3);
}

/* Unsigned levels (Q4_0, Q4_1, Q5_1): the 8 rows' exact isums of one block
 * against token block x, less xs8 (Q4_0: 8 times the token's byte sum;
 * else 0); lv[c] the low-nibble levels of chunk c (values 4c..4c+3), lv[4
 * + c] the high ones (values 16 + 4c ..). Without VNNI the vpmaddubsw
 * pairs add in int16: all 8 chunks' for levels below 16 (|.| <= 8 * 2 * 15
 * * 128), each half's 4 apart for Q5_1's (split; <= 4 * 2 * 31 * 128). */
CPU__Q_INLINE __m256i cpu__qx_isum_u(const __m256i *lv, const block_q8_0 *x, __m256i xs8, int split)
{
#ifdef CPU__Q_DOT4_ACC /* VNNI: straight into int32, no int16 partial sums */
    (void)split;
    __m256i s = _mm256_setzero_si256();
    CPU__Q_UNROLL for (int c = 0; c < 4; c++)
    {
        s = CPU__Q_DOT4_ACC(s, lv[c], cpu__qx_bcast4(x->qs + 4 * c));
        s = CPU__Q_DOT4_ACC(s, lv[4 + c], cpu__qx_bcast4(x->qs + 16 + 4 * c));
    }
    return _mm256_sub_epi32(s, xs8);
#else
    __m256i s16 = _mm256_setzero_si256(), h16 = _mm256_setzero_si256();
    CPU__Q_UNROLL for (int c = 0; c < 4; c++)
    {
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lv[c], cpu__qx_bcast4(x->qs + 4 * c)));
        __m256i ph = _mm256_maddubs_epi16(lv[4 + c], cpu__qx_bcast4(x->qs + 16 + 4 * c));
        if (split)
            h16 = _mm256_add_epi16(h16, ph);
        else
            s16 = _mm256_add_epi16(s16, ph);
    }
    __m256i s = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
    if (split) s = _mm256_add_epi32(s, _mm256_madd_epi16(h16, _mm256_set1_epi16(1)));
    return _mm256_sub_epi32(s, xs8);
#endif
}

/* Q4_0: cpu__qx_isum_u as it is. */
CPU__Q_INLINE __m256i cpu__qx_isum_q4(const __m256i *lv, const block_q8_0 *x, __m256i xs8)
{
    return cpu__qx_isum_u(lv, x, xs8, 0);
}

#ifdef CPU__Q_DOT4_ACC
/* Q8_0 with VNNI: the same from lv[c] = w + 128 of chunk c, less xs128
 * (128 times the token's byte sum). */
CPU__Q_INLINE __m256i cpu__qx_isum_q8(const unsigned char *q, const __m256i *lv,
                                      const block_q8_0 *x, __m256i xs128)
{
    (void)q;
    __m256i s = _mm256_setzero_si256();
    CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
    {
        s = CPU__Q_DOT4_ACC(s, lv[c], cpu__qx_bcast4(x->qs + 4 * c));
    }
    return _mm256_sub_epi32(s, xs128);
}
#define CPU__QX_Q8_OFFSET 1 /* Q8_0 levels are w + 128 */
#else
/* Q8_0: the same, chunk c of the block at q (8 chunks), aw[c] its |w|. */
CPU__Q_INLINE __m256i cpu__qx_isum_q8(const unsigned char *q, const __m256i *aw,
                                      const block_q8_0 *x, __m256i xs128)
{
    (void)xs128;
    __m256i s = _mm256_setzero_si256();
    CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
    {
        __m256i w = _mm256_loadu_si256((const __m256i *)(q + 32 * c));
        s = _mm256_add_epi32(
            s, CPU__Q_DOT4(aw[c], _mm256_sign_epi8(cpu__qx_bcast4(x->qs + 4 * c), w)));
    }
    return s;
}
#define CPU__QX_Q8_OFFSET 0 /* Q8_0 levels are |w| */
#endif

/* IQ4_NL without VNNI: the same from its signed levels sv[c] (chunk c of the
 * Q8_0 layout: values 4c..4c+3), |w| . x sign(w) as for Q8_0. */
CPU__Q_INLINE __m256i cpu__qx_isum_s8(const __m256i *sv, const block_q8_0 *x)
{
    __m256i s = _mm256_setzero_si256();
    CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
    {
        s = _mm256_add_epi32(s,
                             CPU__Q_DOT4(_mm256_sign_epi8(sv[c], sv[c]),
                                         _mm256_sign_epi8(cpu__qx_bcast4(x->qs + 4 * c), sv[c])));
    }
    return s;
}

/* 16 in byte k of each int32 lane where bit 8 byte + shift + k of the
 * lane's 32 bits in h is set, else 0 (k < 4, shift 0 or 4). */
static inline __m256i cpu__qx_bits16(__m256i h, int byte, int shift)
{
    const __m256i pick =
        _mm256_add_epi8(_mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0,
                                         0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12),
                        _mm256_set1_epi8((char)byte));
    const __m256i bit = _mm256_set1_epi32((int)(0x08040201u << shift));
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(h, pick), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(16));
}

/* Group block gp's levels: Q4_0 and Q4_1 lv[c] the low nibbles of chunk
 * c, lv[4 + c] the high ones (Q5_1 with their fifth bits, 0..31); IQ4_NL the same nibbles' levels,
 * and Q5_0 (its qh the chunk before its nibbles') the nibbles with their fifth bits, less 16, so
 * lv[c] holds values 4c..4c+3 as a Q8_0 chunk does: signed, or + 128 with
 * VNNI; Q8_0 lv[c] |w| of chunk c, or w + 128 with VNNI. */
CPU__Q_INLINE void cpu__qx_levels(int kind, const unsigned char *q, __m256i *lv)
{
    if (kind != CPU__Q8) {
        int q5 = kind == CPU__Q5 || kind == CPU__Q51;
        const unsigned char *qs = q5 ? q + 32 : q;
        CPU__Q_UNROLL for (int c = 0; c < 4; c++)
        {
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            lv[c] = _mm256_and_si256(v, _mm256_set1_epi8(15));
            lv[4 + c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(15));
        }
        if (kind == CPU__Q4 || kind == CPU__Q41) return;
        if (q5) {
            __m256i h = _mm256_loadu_si256((const __m256i *)q);
            CPU__Q_UNROLL for (int c = 0; c < 4; c++)
            {
                lv[c] = _mm256_or_si256(lv[c], cpu__qx_bits16(h, c / 2, 4 * (c % 2)));
                lv[4 + c] = _mm256_or_si256(lv[4 + c], cpu__qx_bits16(h, 2 + c / 2, 4 * (c % 2)));
            }
        }
        if (kind == CPU__Q51) return; /* unsigned, 0..31 */
        CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
        {
            lv[c] = kind == CPU__IQ4 ? _mm256_shuffle_epi8(cpu__q_iq4_table(), lv[c])
                                     : _mm256_sub_epi8(lv[c], _mm256_set1_epi8(16));
            if (CPU__QX_Q8_OFFSET) lv[c] = _mm256_xor_si256(lv[c], _mm256_set1_epi8(-128));
        }
        return;
    }
    CPU__Q_UNROLL8 for (int c = 0; c < 8; c++)
    {
        __m256i w = _mm256_loadu_si256((const __m256i *)(q + 32 * c));
        lv[c] = CPU__QX_Q8_OFFSET ? _mm256_xor_si256(w, _mm256_set1_epi8(-128))
                                  : _mm256_sign_epi8(w, w);
    }
}

/* The body: T tokens x the 8 rows of group g (blocks of kind); has_tok:
 * the token table tok is there (else each token's scale and sum come from
 * its block). kind, T and has_tok are constants at each call. */
CPU__Q_INLINE void cpu__qx_tile(int kind, int T, int has_tok, const void *g, const void *const *xv,
                                const cpu__qx_tok *const *tok, int64_t nb, float *const *y)
{
    const int q4 = kind == CPU__Q4, mins = cpu__q_has_min(kind);
    const size_t gb = CPU__QX_R * cpu__q_bb(kind);
    __m256 acc[CPU__QX_TOKENS], accm[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const unsigned char *gp = (const unsigned char *)g + (size_t)b * gb;
        if (T == 1) /* decode streams the matrix: ask for the next group's block b */
            for (size_t o = 0; o < gb; o += 64)
                _mm_prefetch((const char *)gp + nb * gb + o, CPU__Q_PF_HINT);
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)gp));
        __m256 mw = mins ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(gp + 16)))
                         : _mm256_setzero_ps();
        const unsigned char *q = gp + 2 * CPU__QX_R * (mins ? 2 : 1); /* after the f16 planes */
        __m256i lv[8];
        cpu__qx_levels(kind, q, lv);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const block_q8_0 *x = (const block_q8_0 *)xv[t] + b;
            __m256 dx =
                has_tok ? _mm256_broadcast_ss(&tok[t][b].dx) : _mm256_set1_ps(cpu__q_f16(x->d));
            __m256i xs8 = q4 || mins || CPU__QX_Q8_OFFSET
                              ? (has_tok ? _mm256_set1_epi32(tok[t][b].xs8) : cpu__qx_xsum8(x->qs))
                              : _mm256_setzero_si256();
            __m256i isum = q4     ? cpu__qx_isum_q4(lv, x, xs8)
                           : mins ? cpu__qx_isum_u(lv, x, _mm256_setzero_si256(), kind == CPU__Q51)
                           : (kind == CPU__IQ4 || kind == CPU__Q5) && !CPU__QX_Q8_OFFSET
                               ? cpu__qx_isum_s8(lv, x)
                               : cpu__qx_isum_q8(q, lv, x, _mm256_slli_epi32(xs8, 4));
            __m256 s = _mm256_mul_ps(dw, dx);
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(s, _mm256_cvtepi32_ps(isum)));
            if (mins) /* (m_w d_x) times the token's byte sum */
                accm[t] = _mm256_add_ps(
                    accm[t], _mm256_mul_ps(_mm256_mul_ps(mw, dx),
                                           _mm256_cvtepi32_ps(_mm256_srai_epi32(xs8, 3))));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        _mm256_storeu_ps(y[t], mins ? _mm256_add_ps(acc[t], accm[t]) : acc[t]);
    }
}

/* The table's entries: T and has_tok constants in each body; TILE is
 * cpu__qx_tile here, or kernels_repack_512_impl.h's 16-row body. */
#define CPU__QX_CASE(TILE, Q4, T_)                                                                 \
    case T_:                                                                                       \
        if (tok)                                                                                   \
            TILE(Q4, T_, 1, g, x, tok, nb, y);                                                     \
        else                                                                                       \
            TILE(Q4, T_, 0, g, x, tok, nb, y);                                                     \
        break
#define CPU__QX_TYPE(NAME, TILE, Q4)                                                               \
    static void NAME(int T, const void *g, const void *const *x, const cpu__qx_tok *const *tok,    \
                     int64_t nb, float *const *y)                                                  \
    {                                                                                              \
        switch (T) {                                                                               \
            CPU__QX_CASE(TILE, Q4, 4);                                                             \
            CPU__QX_CASE(TILE, Q4, 3);                                                             \
            CPU__QX_CASE(TILE, Q4, 2);                                                             \
        default:                                                                                   \
            CPU__QX_CASE(TILE, Q4, 1);                                                             \
        }                                                                                          \
    }
CPU__QX_TYPE(cpu__qx_q4_0, cpu__qx_tile, CPU__Q4)
CPU__QX_TYPE(cpu__qx_q8_0, cpu__qx_tile, CPU__Q8)
CPU__QX_TYPE(cpu__qx_iq4_nl, cpu__qx_tile, CPU__IQ4)
CPU__QX_TYPE(cpu__qx_q5_0, cpu__qx_tile, CPU__Q5)
CPU__QX_TYPE(cpu__qx_q4_1, cpu__qx_tile, CPU__Q41)
CPU__QX_TYPE(cpu__qx_q5_1, cpu__qx_tile, CPU__Q51)
