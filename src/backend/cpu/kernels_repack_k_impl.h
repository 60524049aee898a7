/* kernels_repack_k_impl.h - the 256-bit bodies of the interleaved matmul
 * kernels (cpu__qx8_fn) for the K types: 8 weight rows of one group
 * (repack.h) of Q4_K or Q6_K against up to CPU__QX_TOKENS tokens' Q8_K
 * superblocks. Included by kernels_quant_impl.h's Part 2 after
 * kernels_repack_impl.h, whose helpers it uses.
 *
 * Per superblock and token, row r's exact int32 isum and correction end up
 * in lane r, as in kernels_repack_impl.h: a chunk holds 4 consecutive level
 * bytes of the 8 rows, a token's 4 bytes broadcast meet it in vpmaddubsw,
 * and no sum crosses lanes.
 *   Q4_K: per sub-block s of 32 values, 8 chunks' nibbles (0..15) against x:
 *   a vpmaddubsw pair |.| <= 2 * 15 * 128 = 3840, the 8 pairs of a lane add
 *   to <= 30720 < 2^15 in int16, exact; one vpmaddwd by the sub-block's
 *   scale (its two int16 lanes both sc) makes sc[s] sum_j q x in int32.
 *   The 6-bit scales and mins of the 8 rows are unpacked at once from the
 *   3 scale chunks (lane r: row r's bytes 0-3, 4-7, 8-11) by the shifts
 *   and masks of quant_scale_min_k4; msum = sum_s m[s] (bsums[2s] +
 *   bsums[2s + 1]), one vpmaddwd per s.
 *   Q6_K: the levels q + 32 (0..63) of a run of 4 values from a ql and a qh
 *   chunk; two vpmaddubsw pairs add to <= 2 * 2 * 63 * 128 = 32256 < 2^15,
 *   so each group of 16 values (one int8 scale) takes two vpmaddwd by its
 *   sign-extended scale; corr = 32 sum_g sc[g] bsums[g].
 * Then, lane by lane, the portable dot's f32 steps in its order:
 *   acc += (d_w d_x) isum;  accm += (dmin_w d_x) msum   (Q6_K: d_w, corr);
 *   y = acc - accm
 * so every output has the row layout's bits, whatever T or the ISA.
 * A one-token call (decode, the weights streaming from DRAM) unrolls a
 * superblock's 8 steps and spreads its prefetch of the next group over
 * them (cpu__qxk_prefetch); more tokens keep the loops. */

enum { CPU__QXK_Q4 = 0, CPU__QXK_Q6 = 1 };

/* Each 32-bit lane of v shuffled by the 4 byte indices of pat (byte i of
 * pat: which byte of the lane goes to byte i; 0x80 gives 0). */
static inline __m256i cpu__qxk_shuf(__m256i v, uint32_t pat)
{
    const __m256i base = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0,
                                          0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
    return _mm256_shuffle_epi8(v, _mm256_add_epi8(_mm256_set1_epi32((int)pat), base));
}

/* Byte j of every lane of v in both int16 halves of the lane: unsigned
 * (zero-extended), or signed (sign-extended, from the high byte). */
static inline __m256i cpu__qxk_u16(__m256i v, int j)
{
    return cpu__qxk_shuf(v, (uint32_t)j | 0x80u << 8 | (uint32_t)j << 16 | 0x80u << 24);
}
static inline __m256i cpu__qxk_s16(__m256i v, int j0, int j1)
{
    __m256i h = cpu__qxk_shuf(v, 0x80u | (uint32_t)j0 << 8 | 0x80u << 16 | (uint32_t)j1 << 24);
    return _mm256_srai_epi16(h, 8);
}

/* The two int16 bsums[i], bsums[i + 1] of a token in every lane. */
static inline __m256i cpu__qxk_bsum2(const block_q8_K *x, int i)
{
    int32_t v;
    memcpy(&v, x->bsums + i, sizeof v);
    return _mm256_set1_epi32(v);
}

/* The 256-bit chunk c of an interleaved block's rest (q: after the f16
 * planes). */
static inline __m256i cpu__qxk_chunk(const unsigned char *q, int c)
{
    return _mm256_loadu_si256((const __m256i *)(q + 32 * c));
}

/* A one-token call streams the matrix from DRAM: it asks for pf, the next
 * group's block (gb bytes), in CPU__QXK_PF_STEPS parts, part `step` at each
 * step of its own block's work (NULL pf: no prefetch). Spread so, the misses
 * in flight stay within the core's miss buffers; the 27 lines of a Q6_K
 * block asked for at once made the stream from DRAM about a third slower
 * than the row kernel's. */
enum { CPU__QXK_PF_STEPS = 8 };
CPU__Q_INLINE void cpu__qxk_prefetch(const unsigned char *pf, size_t gb, int step)
{
    const size_t lines = (gb + 63) / 64, per = (lines + CPU__QXK_PF_STEPS - 1) / CPU__QXK_PF_STEPS;
    if (!pf) return;
    for (size_t l = per * (size_t)step; l < per * (size_t)(step + 1) && l < lines; l++) {
        _mm_prefetch((const char *)pf + 64 * l, CPU__Q_PF_HINT);
    }
}

/* Sub-block s (32 values) of a Q4_K superblock of the 8 rows, q its chunks
 * after the f16 planes, sc / mn the unpacked scales and mins, against T
 * tokens: isum[t] += sc[s] sum q x, msum[t] += m[s] (bsums[2s] + bsums[2s +
 * 1]), lane r row r's. */
CPU__Q_INLINE void cpu__qxk_q4_sub(int T, const unsigned char *q, const block_q8_K *const *x, int s,
                                   const __m256i *sc, const __m256i *mn, __m256i *isum,
                                   __m256i *msum)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i s16[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) s16[t] = _mm256_setzero_si256();
    CPU__Q_UNROLL8 for (int i = 0; i < 8; i++)
    {
        __m256i v = cpu__qxk_chunk(q, 3 + 8 * (s / 2) + i);
        __m256i lv = _mm256_and_si256(s % 2 ? _mm256_srli_epi16(v, 4) : v, m4);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            __m256i p = _mm256_maddubs_epi16(lv, cpu__qx_bcast4(x[t]->qs + 32 * s + 4 * i));
            s16[t] = _mm256_add_epi16(s16[t], p);
        }
    }
    __m256i ss = cpu__qxk_u16(sc[s / 4], s % 4), ms = cpu__qxk_u16(mn[s / 4], s % 4);
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], ss));
        msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(ms, cpu__qxk_bsum2(x[t], 2 * s)));
    }
}

/* Q4_K superblock gp of the 8 rows (2 f16 planes, 3 scale chunks, 32 qs
 * chunks) against T tokens: isum[t], msum[t] lane r row r's; pf the block
 * to prefetch (cpu__qxk_prefetch). One token's 8 sub-blocks are unrolled,
 * so that their shuffles and shifts are constants (as a loop, GCC built
 * each pattern at run time: 952 instructions a superblock against 502);
 * more tokens stay a loop (unrolled, GCC hoists the loads of all 8 and
 * spills them: twice the time in prefill). */
CPU__Q_INLINE void cpu__qxk_q4_sb(int T, const unsigned char *gp, const block_q8_K *const *x,
                                  __m256i *isum, __m256i *msum, const unsigned char *pf)
{
    const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    const unsigned char *q = gp + 2 * 2 * CPU__QX_R;
    __m256i u0 = cpu__qxk_chunk(q, 0), u1 = cpu__qxk_chunk(q, 1), u2 = cpu__qxk_chunk(q, 2);
    __m256i sc[2], mn[2]; /* lane r: row r's sc / m of sub-blocks 0-3, then 4-7 */
    sc[0] = _mm256_and_si256(u0, m6);
    mn[0] = _mm256_and_si256(u1, m6);
    sc[1] = _mm256_or_si256(_mm256_and_si256(u2, m4),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), m2), 4));
    mn[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), m4),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), m2), 4));
    CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = msum[t] = _mm256_setzero_si256();
    if (T == 1) {
        CPU__Q_UNROLL8 for (int s = 0; s < 8; s++)
        {
            cpu__qxk_prefetch(pf, CPU__QX_R * sizeof(block_q4_K), s);
            cpu__qxk_q4_sub(1, q, x, s, sc, mn, isum, msum);
        }
        return;
    }
    for (int s = 0; s < 8; s++)
        cpu__qxk_q4_sub(T, q, x, s, sc, mn, isum, msum);
}

/* The levels q + 32 of run i of the 8 rows of a Q6_K superblock, 4 values
 * from lq (its ql chunk, 16 h + 8 (i & 1) + m: nibble i >> 1) and hq (its
 * qh chunk, 32 + 8 h + m: bits 2i, 2i + 1 to bits 4, 5). */
CPU__Q_INLINE __m256i cpu__qxk_q6_level(__m256i lq, __m256i hq, int i)
{
    __m256i lo = _mm256_and_si256(i >> 1 ? _mm256_srli_epi16(lq, 4) : lq, _mm256_set1_epi8(15));
    __m256i hi = i == 0   ? _mm256_slli_epi16(hq, 4)
                 : i == 1 ? _mm256_slli_epi16(hq, 2)
                 : i == 2 ? hq
                          : _mm256_srli_epi16(hq, 2);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(0x30)));
}

/* The step (h, m) (half h, values 4m .. 4m + 7 of each run i, m even: one
 * group g of 16 values per run) of a Q6_K superblock of the 8 rows,
 * q its chunks after the f16 plane, sv its scale chunks, against T tokens:
 * isum[t] += sum_g sc[g] sum (q + 32) x, lane r row r's. */
CPU__Q_INLINE void cpu__qxk_q6_step(int T, const unsigned char *q, const block_q8_K *const *x,
                                    int h, int m, const __m256i *sv, __m256i *isum)
{
    __m256i lq[2][2], hq[2]; /* [i & 1][m or m + 1] */
    CPU__Q_UNROLL for (int j = 0; j < 2; j++)
    {
        lq[0][j] = cpu__qxk_chunk(q, 16 * h + m + j);
        lq[1][j] = cpu__qxk_chunk(q, 16 * h + 8 + m + j);
        hq[j] = cpu__qxk_chunk(q, 32 + 8 * h + m + j);
    }
    CPU__Q_UNROLL for (int i = 0; i < 4; i++)
    {
        int g = 8 * h + 2 * i + m / 4;
        __m256i l0 = cpu__qxk_q6_level(lq[i & 1][0], hq[0], i);
        __m256i l1 = cpu__qxk_q6_level(lq[i & 1][1], hq[1], i);
        __m256i sg = cpu__qxk_s16(sv[g / 4], g % 4, g % 4);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const int8_t *xq = x[t]->qs + 128 * h + 32 * i + 4 * m;
            __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(l0, cpu__qx_bcast4(xq)),
                                           _mm256_maddubs_epi16(l1, cpu__qx_bcast4(xq + 4)));
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16, sg));
        }
    }
}

/* Q6_K superblock gp of the 8 rows (1 f16 plane, 52 chunks) against T
 * tokens: isum[t], corr[t] (times 32) lane r row r's; pf the block to
 * prefetch (cpu__qxk_prefetch). One token's 8 steps are unrolled (constant
 * scale shuffles; as a loop, GCC built each pattern at run time and read
 * the scales from the stack: 1299 instructions a superblock against 729),
 * more tokens' stay a loop (unrolled, prefill took 9% longer). */
CPU__Q_INLINE void cpu__qxk_q6_sb(int T, const unsigned char *gp, const block_q8_K *const *x,
                                  __m256i *isum, __m256i *corr, const unsigned char *pf)
{
    const unsigned char *q = gp + 2 * CPU__QX_R;
    __m256i sv[4]; /* lane r: row r's scales 4p .. 4p + 3 */
    CPU__Q_UNROLL for (int p = 0; p < 4; p++) sv[p] = cpu__qxk_chunk(q, 48 + p);
    CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = corr[t] = _mm256_setzero_si256();
    if (T == 1) {
        CPU__Q_UNROLL8 for (int st = 0; st < 8; st++)
        {
            cpu__qxk_prefetch(pf, CPU__QX_R * sizeof(block_q6_K), st);
            cpu__qxk_q6_step(1, q, x, st / 4, 2 * (st % 4), sv, isum);
        }
    } else {
        for (int h = 0; h < 2; h++)
            for (int m = 0; m < 8; m += 2)
                cpu__qxk_q6_step(T, q, x, h, m, sv, isum);
    }
    CPU__Q_UNROLL8 for (int p = 0; p < 8; p++)
    { /* groups 2p and 2p + 1: their scales against their bsums */
        __m256i sp = cpu__qxk_s16(sv[p / 2], 2 * (p % 2), 2 * (p % 2) + 1);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            corr[t] = _mm256_add_epi32(corr[t], _mm256_madd_epi16(sp, cpu__qxk_bsum2(x[t], 2 * p)));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++) corr[t] = _mm256_slli_epi32(corr[t], 5);
}

/* The body: T tokens x the 8 rows of group g of type kt. */
CPU__Q_INLINE void cpu__qxk_tile(int kt, int T, const void *g, const void *const *xv, int64_t nb,
                                 float *const *y)
{
    const size_t gb = CPU__QX_R * (kt == CPU__QXK_Q6 ? sizeof(block_q6_K) : sizeof(block_q4_K));
    __m256 acc[CPU__QX_TOKENS], accm[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const unsigned char *gp = (const unsigned char *)g + (size_t)b * gb;
        const unsigned char *pf = T == 1 ? gp + nb * gb : NULL; /* the next group's block b */
        const block_q8_K *x[CPU__QX_TOKENS];
        CPU__Q_UNROLL for (int t = 0; t < T; t++) x[t] = (const block_q8_K *)xv[t] + b;
        __m256i isum[CPU__QX_TOKENS], corr[CPU__QX_TOKENS];
        if (kt == CPU__QXK_Q6)
            cpu__qxk_q6_sb(T, gp, x, isum, corr, pf);
        else
            cpu__qxk_q4_sb(T, gp, x, isum, corr, pf);
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)gp));
        __m256 dm =
            kt == CPU__QXK_Q6 ? dw : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(gp + 16)));
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            __m256 dx = _mm256_set1_ps(x[t]->d);
            acc[t] = _mm256_add_ps(
                acc[t], _mm256_mul_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(isum[t])));
            accm[t] = _mm256_add_ps(
                accm[t], _mm256_mul_ps(_mm256_mul_ps(dm, dx), _mm256_cvtepi32_ps(corr[t])));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
        _mm256_storeu_ps(y[t], _mm256_sub_ps(acc[t], accm[t]));
}

/* T a constant in each body. */
CPU__Q_INLINE void cpu__qxk_by_t(int kt, int T, const void *g, const void *const *x, int64_t nb,
                                 float *const *y)
{
    if (T >= 4)
        cpu__qxk_tile(kt, 4, g, x, nb, y);
    else if (T == 3)
        cpu__qxk_tile(kt, 3, g, x, nb, y);
    else if (T == 2)
        cpu__qxk_tile(kt, 2, g, x, nb, y);
    else
        cpu__qxk_tile(kt, 1, g, x, nb, y);
}

static void cpu__qxk_q4_k(int T, const void *g, const void *const *x, const cpu__qx_tok *const *tok,
                          int64_t nb, float *const *y)
{
    (void)tok;
    cpu__qxk_by_t(CPU__QXK_Q4, T, g, x, nb, y);
}

static void cpu__qxk_q6_k(int T, const void *g, const void *const *x, const cpu__qx_tok *const *tok,
                          int64_t nb, float *const *y)
{
    (void)tok;
    cpu__qxk_by_t(CPU__QXK_Q6, T, g, x, nb, y);
}
