/* kernels_repack_k_body.h - the width-generic bodies of the interleaved K
 * type kernels, included by kernels_repack_k_impl.h once per vector width,
 * after it defines the vocabulary below (which this file #undefs at its
 * end, so that the next width can define it again):
 *
 *   QK_GROUPS        groups of 8 rows a vector holds: 1 (256-bit) or 2
 *                    (512-bit: group g in lanes 0-7, group g + 1 in 8-15)
 *   QK_FN(name)      the name of this width's copy of a function
 *   QK_V, QK_F       the int and float vector types
 *   QK_CHUNK(p, o1)  the 32-byte chunk at p of each group (the second's
 *                    o1 bytes on) as one vector
 *   QK_F16S(p, o1)   the 8 f16 at p of each group as floats
 *   QK_U16S(p, o1)   the 8 uint16 at p of each group, zero-extended to int32
 *   QK_SHUF_BASE()   bytes 0,0,0,0,4,4,4,4,8,..,12 in every 128-bit lane
 *   QK_BCAST4(p)     the 4 bytes at p in every int32 lane
 *   QK_AND, QK_OR, QK_SRLI16, QK_SLLI16, QK_SRAI16, QK_SRLI32, QK_SLLI32,
 *   QK_SET1_8, QK_SET1_32, QK_ZERO, QK_MADDUBS, QK_MADD, QK_ADD8, QK_ADD16,
 *   QK_ADD32, QK_SUB32, QK_SHUFB   the int ops of that width
 *   QK_SIGN8         (256-bit only) vpsignb, for the AVX2 build's signed dots
 *   QK_FZERO, QK_FSET1, QK_FMUL, QK_FADD, QK_FSUB, QK_CVT, QK_FSTORE
 *                    the float ops
 *   QK_DPBUSD(acc, u, s), QK_MULLO32  (optional: VNNI builds) vpdpbusd,
 *                    and the int32 product that scales its sums
 *
 * Every op works lane by lane (byte shuffles within 128-bit lanes), so the
 * lanes of a 512-bit vector go through exactly the steps of a 256-bit one:
 * the same bits for every row (kernels_repack_k_impl.h says which). */

/* Each 32-bit lane of v shuffled by the 4 byte indices of pat (byte i of
 * pat: which byte of the lane goes to byte i; 0x80 gives 0). */
static inline QK_V QK_FN(cpu__qxk_shuf)(QK_V v, uint32_t pat)
{
    const QK_V base = QK_SHUF_BASE();
    return QK_SHUFB(v, QK_ADD8(QK_SET1_32((int)pat), base));
}

/* Byte j of every lane of v in both int16 halves of the lane: unsigned
 * (zero-extended), or signed (sign-extended, from the high byte). */
static inline QK_V QK_FN(cpu__qxk_u16)(QK_V v, int j)
{
    return QK_FN(cpu__qxk_shuf)(v, (uint32_t)j | 0x80u << 8 | (uint32_t)j << 16 | 0x80u << 24);
}
static inline QK_V QK_FN(cpu__qxk_s16)(QK_V v, int j0, int j1)
{
    QK_V h = QK_FN(cpu__qxk_shuf)(v, 0x80u | (uint32_t)j0 << 8 | 0x80u << 16 | (uint32_t)j1 << 24);
    return QK_SRAI16(h, 8);
}

/* The two int16 bsums[i], bsums[i + 1] of a token in every lane. */
static inline QK_V QK_FN(cpu__qxk_bsum2)(const block_q8_K *x, int i)
{
    int32_t v;
    memcpy(&v, x->bsums + i, sizeof v);
    return QK_SET1_32(v);
}

/* Chunk c of an interleaved block's rest (q: after the f16 planes), of
 * each group a vector holds (the second o1 bytes on). */
static inline QK_V QK_FN(cpu__qxk_chunk)(const unsigned char *q, size_t o1, int c)
{
    return QK_CHUNK(q + 32 * c, o1);
}

/* The levels of chunk i of sub-block s of the 8 rows' Q4_K superblock
 * (kt CPU__QXK_Q4: the nibbles, 0..15) or Q5_K one (with the fifth bit
 * from the qh chunks, 0..31), q its chunks after the f16 planes (Q4_K: 3
 * scale, 32 qs; Q5_K: 3 scale, 8 qh, 32 qs). */
CPU__Q_INLINE QK_V QK_FN(cpu__qxk_q45_level)(int kt, const unsigned char *q, size_t o1, int s,
                                             int i)
{
    int q5 = kt == CPU__QXK_Q5;
    QK_V v = QK_FN(cpu__qxk_chunk)(q, o1, (q5 ? 11 : 3) + 8 * (s / 2) + i);
    QK_V lv = QK_AND(s % 2 ? QK_SRLI16(v, 4) : v, QK_SET1_8(15));
    if (!q5) return lv;
    QK_V hq = QK_FN(cpu__qxk_chunk)(q, o1, 3 + i); /* bit s to bit 4 */
    QK_V hb = s < 4 ? QK_SLLI16(hq, 4 - s) : QK_SRLI16(hq, s - 4);
    return QK_OR(lv, QK_AND(hb, QK_SET1_8(16)));
}

#ifdef QK_DPBUSD
/* Byte j of every lane of v, zero-extended to the lane's int32. */
static inline QK_V QK_FN(cpu__qxk_u32)(QK_V v, int j)
{
    return QK_FN(cpu__qxk_shuf)(v, (uint32_t)j | 0x80u << 8 | 0x80u << 16 | 0x80u << 24);
}
/* VNNI: a chunk's products go straight into an int32 sum (vpdpbusd), which
 * the sub-block's scale (byte j of sc's lanes) multiplies once. */
#define QK_SUB_INT32 1
#define QK_SUB_ACC(acc, lv, xb) QK_DPBUSD(acc, lv, xb)
#define QK_SUB_SCALE(acc, sc, j) QK_MULLO32(acc, QK_FN(cpu__qxk_u32)(sc, j))
#else
/* A chunk's vpmaddubsw pairs add in int16, one vpmaddwd by the scale. */
#define QK_SUB_INT32 0
#define QK_SUB_ACC(acc, lv, xb) QK_ADD16(acc, QK_MADDUBS(lv, xb))
#define QK_SUB_SCALE(acc, sc, j) QK_MADD(acc, QK_FN(cpu__qxk_u16)(sc, j))
#endif

/* Sub-block s (32 values) of a Q4_K superblock of the 8 rows (or, with
 * VNNI's int32 sums, of a Q5_K one: kt), q its chunks after the f16 planes,
 * sc / mn the unpacked scales and mins, against T tokens: isum[t] += sc[s]
 * sum q x, msum[t] += m[s] (bsums[2s] + bsums[2s + 1]), lane r row r's.
 * The two ways (int16 sums and a vpmaddwd, or vpdpbusd and a vpmulld) give
 * the same exact int32. */
CPU__Q_INLINE void QK_FN(cpu__qxk_q4_sub)(int kt, int T, const unsigned char *q, size_t o1,
                                          const block_q8_K *const *x, int s, const QK_V *sc,
                                          const QK_V *mn, QK_V *isum, QK_V *msum)
{
    QK_V sub[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) sub[t] = QK_ZERO();
    CPU__Q_UNROLL8 for (int i = 0; i < 8; i++)
    {
        QK_V lv = QK_FN(cpu__qxk_q45_level)(kt, q, o1, s, i);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            sub[t] = QK_SUB_ACC(sub[t], lv, QK_BCAST4(x[t]->qs + 32 * s + 4 * i));
        }
    }
    QK_V ms = QK_FN(cpu__qxk_u16)(mn[s / 4], s % 4);
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        isum[t] = QK_ADD32(isum[t], QK_SUB_SCALE(sub[t], sc[s / 4], s % 4));
        msum[t] = QK_ADD32(msum[t], QK_MADD(ms, QK_FN(cpu__qxk_bsum2)(x[t], 2 * s)));
    }
}

/* Sub-block s of a Q5_K superblock of the 8 rows, q its chunks after the
 * f16 planes (3 scale, 8 qh, 32 qs), against T tokens: as cpu__qxk_q4_sub
 * with the levels q + 16 h (0..31, h bit s of the value's qh byte): a
 * vpmaddubsw pair |.| <= 2 * 31 * 128 = 7936, so an int16 sum takes 4
 * chunks (<= 31744 < 2^15) before each vpmaddwd by the scale. */
CPU__Q_INLINE void QK_FN(cpu__qxk_q5_sub)(int T, const unsigned char *q, size_t o1,
                                          const block_q8_K *const *x, int s, const QK_V *sc,
                                          const QK_V *mn, QK_V *isum, QK_V *msum)
{
    QK_V ss = QK_FN(cpu__qxk_u16)(sc[s / 4], s % 4), ms = QK_FN(cpu__qxk_u16)(mn[s / 4], s % 4);
    CPU__Q_UNROLL for (int i0 = 0; i0 < 8; i0 += 4)
    {
        QK_V s16[CPU__QX_TOKENS];
        CPU__Q_UNROLL for (int t = 0; t < T; t++) s16[t] = QK_ZERO();
        CPU__Q_UNROLL for (int i = i0; i < i0 + 4; i++)
        {
            QK_V lv = QK_FN(cpu__qxk_q45_level)(CPU__QXK_Q5, q, o1, s, i);
            CPU__Q_UNROLL for (int t = 0; t < T; t++)
            {
                QK_V p = QK_MADDUBS(lv, QK_BCAST4(x[t]->qs + 32 * s + 4 * i));
                s16[t] = QK_ADD16(s16[t], p);
            }
        }
        CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = QK_ADD32(isum[t], QK_MADD(s16[t], ss));
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        msum[t] = QK_ADD32(msum[t], QK_MADD(ms, QK_FN(cpu__qxk_bsum2)(x[t], 2 * s)));
    }
}

/* Sub-block s of a Q4_K (kt CPU__QXK_Q4) or Q5_K superblock. */
CPU__Q_INLINE void QK_FN(cpu__qxk_q45_sub)(int kt, int T, const unsigned char *q, size_t o1,
                                           const block_q8_K *const *x, int s, const QK_V *sc,
                                           const QK_V *mn, QK_V *isum, QK_V *msum)
{
    if (kt == CPU__QXK_Q5 && !QK_SUB_INT32)
        QK_FN(cpu__qxk_q5_sub)(T, q, o1, x, s, sc, mn, isum, msum);
    else
        QK_FN(cpu__qxk_q4_sub)(kt, T, q, o1, x, s, sc, mn, isum, msum);
}

/* Q4_K superblock gp of the 8 rows (2 f16 planes, 3 scale chunks, 32 qs
 * chunks; Q5_K, kt CPU__QXK_Q5: 8 qh chunks before those) against T
 * tokens: isum[t], msum[t] lane r row r's; pf the block
 * to prefetch (cpu__qxk_prefetch). One token's 8 sub-blocks are unrolled,
 * so that their shuffles and shifts are constants (as a loop, GCC built
 * each pattern at run time: 952 instructions a superblock against 502);
 * more tokens stay a loop (unrolled, GCC hoists the loads of all 8 and
 * spills them: twice the time in prefill). */
CPU__Q_INLINE void QK_FN(cpu__qxk_q45_sb)(int kt, int T, const unsigned char *gp, size_t o1,
                                          const block_q8_K *const *x, QK_V *isum, QK_V *msum,
                                          const unsigned char *pf)
{
    const size_t gb = CPU__QX_R * (kt == CPU__QXK_Q5 ? sizeof(block_q5_K) : sizeof(block_q4_K));
    const QK_V m6 = QK_SET1_8(0x3f), m4 = QK_SET1_8(15), m2 = QK_SET1_8(3);
    const unsigned char *q = gp + 2 * 2 * CPU__QX_R;
    QK_V u0 = QK_FN(cpu__qxk_chunk)(q, o1, 0), u1 = QK_FN(cpu__qxk_chunk)(q, o1, 1),
         u2 = QK_FN(cpu__qxk_chunk)(q, o1, 2);
    QK_V sc[2], mn[2]; /* lane r: row r's sc / m of sub-blocks 0-3, then 4-7 */
    sc[0] = QK_AND(u0, m6);
    mn[0] = QK_AND(u1, m6);
    sc[1] = QK_OR(QK_AND(u2, m4), QK_SLLI32(QK_AND(QK_SRLI32(u0, 6), m2), 4));
    mn[1] = QK_OR(QK_AND(QK_SRLI32(u2, 4), m4), QK_SLLI32(QK_AND(QK_SRLI32(u1, 6), m2), 4));
    CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = msum[t] = QK_ZERO();
    if (T == 1) {
        CPU__Q_UNROLL8 for (int s = 0; s < 8; s++)
        {
            cpu__qxk_prefetch(pf, gb, s);
            QK_FN(cpu__qxk_q45_sub)(kt, 1, q, o1, x, s, sc, mn, isum, msum);
        }
        return;
    }
    for (int s = 0; s < 8; s++)
        QK_FN(cpu__qxk_q45_sub)(kt, T, q, o1, x, s, sc, mn, isum, msum);
}

/* The levels q + 32 of run i of the 8 rows of a Q6_K superblock, 4 values
 * from lq (its ql chunk, 16 h + 8 (i & 1) + m: nibble i >> 1) and hq (its
 * qh chunk, 32 + 8 h + m: bits 2i, 2i + 1 to bits 4, 5). */
CPU__Q_INLINE QK_V QK_FN(cpu__qxk_q6_level)(QK_V lq, QK_V hq, int i)
{
    QK_V lo = QK_AND(i >> 1 ? QK_SRLI16(lq, 4) : lq, QK_SET1_8(15));
    QK_V hi = i == 0   ? QK_SLLI16(hq, 4)
              : i == 1 ? QK_SLLI16(hq, 2)
              : i == 2 ? hq
                       : QK_SRLI16(hq, 2);
    return QK_OR(lo, QK_AND(hi, QK_SET1_8(0x30)));
}

/* The step (h, m) (half h, values 4m .. 4m + 7 of each run i, m even: one
 * group g of 16 values per run) of a Q6_K superblock of the 8 rows,
 * q its chunks after the f16 plane, sv its scale chunks, against T tokens:
 * isum[t] += sum_g sc[g] sum (q + 32) x, lane r row r's. */
CPU__Q_INLINE void QK_FN(cpu__qxk_q6_step)(int T, const unsigned char *q, size_t o1,
                                           const block_q8_K *const *x, int h, int m, const QK_V *sv,
                                           QK_V *isum)
{
    QK_V lq[2][2], hq[2]; /* [i & 1][m or m + 1] */
    CPU__Q_UNROLL for (int j = 0; j < 2; j++)
    {
        lq[0][j] = QK_FN(cpu__qxk_chunk)(q, o1, 16 * h + m + j);
        lq[1][j] = QK_FN(cpu__qxk_chunk)(q, o1, 16 * h + 8 + m + j);
        hq[j] = QK_FN(cpu__qxk_chunk)(q, o1, 32 + 8 * h + m + j);
    }
    CPU__Q_UNROLL for (int i = 0; i < 4; i++)
    {
        int g = 8 * h + 2 * i + m / 4;
        QK_V l0 = QK_FN(cpu__qxk_q6_level)(lq[i & 1][0], hq[0], i);
        QK_V l1 = QK_FN(cpu__qxk_q6_level)(lq[i & 1][1], hq[1], i);
        QK_V sg = QK_FN(cpu__qxk_s16)(sv[g / 4], g % 4, g % 4);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const int8_t *xq = x[t]->qs + 128 * h + 32 * i + 4 * m;
            QK_V s16 = QK_ADD16(QK_MADDUBS(l0, QK_BCAST4(xq)), QK_MADDUBS(l1, QK_BCAST4(xq + 4)));
            isum[t] = QK_ADD32(isum[t], QK_MADD(s16, sg));
        }
    }
}

/* Q6_K superblock gp of the 8 rows (1 f16 plane, 52 chunks) against T
 * tokens: isum[t], corr[t] (times 32) lane r row r's; pf the block to
 * prefetch (cpu__qxk_prefetch). One token's 8 steps are unrolled (constant
 * scale shuffles; as a loop, GCC built each pattern at run time and read
 * the scales from the stack: 1299 instructions a superblock against 729),
 * more tokens' stay a loop (unrolled, prefill took 9% longer). */
CPU__Q_INLINE void QK_FN(cpu__qxk_q6_sb)(int T, const unsigned char *gp, size_t o1,
                                         const block_q8_K *const *x, QK_V *isum, QK_V *corr,
                                         const unsigned char *pf)
{
    const unsigned char *q = gp + 2 * CPU__QX_R;
    QK_V sv[4]; /* lane r: row r's scales 4p .. 4p + 3 */
    CPU__Q_UNROLL for (int p = 0; p < 4; p++) sv[p] = QK_FN(cpu__qxk_chunk)(q, o1, 48 + p);
    CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = corr[t] = QK_ZERO();
    if (T == 1) {
        CPU__Q_UNROLL8 for (int st = 0; st < 8; st++)
        {
            cpu__qxk_prefetch(pf, CPU__QX_R * sizeof(block_q6_K), st);
            QK_FN(cpu__qxk_q6_step)(1, q, o1, x, st / 4, 2 * (st % 4), sv, isum);
        }
    } else {
        for (int h = 0; h < 2; h++)
            for (int m = 0; m < 8; m += 2)
                QK_FN(cpu__qxk_q6_step)(T, q, o1, x, h, m, sv, isum);
    }
    CPU__Q_UNROLL8 for (int p = 0; p < 8; p++)
    { /* groups 2p and 2p + 1: their scales against their bsums */
        QK_V sp = QK_FN(cpu__qxk_s16)(sv[p / 2], 2 * (p % 2), 2 * (p % 2) + 1);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            corr[t] = QK_ADD32(corr[t], QK_MADD(sp, QK_FN(cpu__qxk_bsum2)(x[t], 2 * p)));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++) corr[t] = QK_SLLI32(corr[t], 5);
}

/* The bytes j0 and j1 of every lane of v, zero-extended, as the lane's two
 * int16. */
static inline QK_V QK_FN(cpu__qxk_u16x2)(QK_V v, int j0, int j1)
{
    return QK_FN(cpu__qxk_shuf)(v, (uint32_t)j0 | 0x80u << 8 | (uint32_t)j1 << 16 | 0x80u << 24);
}

/* Group g (16 values) of a Q2_K superblock of the 8 rows, q its chunks
 * after the f16 planes (4 scale chunks, then qs[4 k ..] in chunk 4 + k),
 * scl the scale chunks' low nibbles, against T tokens: isum[t] += sc[g]
 * sum q x, lane r row r's. Its 16 values are bits 2 j, 2 j + 1 of the bytes
 * qs[32 n + 16 h ..] (g = 8 n + 2 j + h): 4 chunks, each chunk's pairs
 * |.| <= 2 * 3 * 128, their int16 sum exact. */
CPU__Q_INLINE void QK_FN(cpu__qxk_q2_group)(int T, const unsigned char *q, size_t o1,
                                            const block_q8_K *const *x, int g, const QK_V *scl,
                                            QK_V *isum)
{
    int n = g / 8, j = (g % 8) / 2, h = g % 2;
    QK_V sub[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) sub[t] = QK_ZERO();
    CPU__Q_UNROLL for (int i = 0; i < 4; i++)
    {
        QK_V v = QK_FN(cpu__qxk_chunk)(q, o1, 4 + 8 * n + 4 * h + i);
        QK_V lv = QK_AND(QK_SRLI16(v, 2 * j), QK_SET1_8(3));
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            sub[t] = QK_SUB_ACC(sub[t], lv, QK_BCAST4(x[t]->qs + 16 * g + 4 * i));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        isum[t] = QK_ADD32(isum[t], QK_SUB_SCALE(sub[t], scl[g / 4], g % 4));
    }
}

/* Group g (16 values) of a Q3_K superblock of the 8 rows, q its chunks
 * after the f16 plane (8 hmask chunks, 16 qs chunks, 3 scale chunks), sv
 * the unpacked scales less 32 (signed bytes), against T tokens: isum[t] +=
 * sc[g] sum (q + 4 h + 28) x, its widened Q6_K block's integers. The
 * levels (28..35): Q2_K's two bits of the qs chunks and bit 4 n + j of the
 * hmask chunks as 4; a vpmaddubsw pair |.| <= 2 * 35 * 128, so two chunks'
 * int16 sum before each vpmaddwd by the scale. */
CPU__Q_INLINE void QK_FN(cpu__qxk_q3_group)(int T, const unsigned char *q, size_t o1,
                                            const block_q8_K *const *x, int g, const QK_V *sv,
                                            QK_V *isum)
{
    int n = g / 8, j = (g % 8) / 2, h = g % 2;
    QK_V sg = QK_FN(cpu__qxk_s16)(sv[g / 4], g % 4, g % 4);
    CPU__Q_UNROLL for (int i0 = 0; i0 < 4; i0 += 2)
    {
        QK_V lv[2];
        CPU__Q_UNROLL for (int i = 0; i < 2; i++)
        {
            QK_V v = QK_FN(cpu__qxk_chunk)(q, o1, 8 + 8 * n + 4 * h + i0 + i);
            QK_V hb = QK_FN(cpu__qxk_chunk)(q, o1, 4 * h + i0 + i);
            QK_V lo = QK_AND(QK_SRLI16(v, 2 * j), QK_SET1_8(3));
            QK_V hi = QK_AND(QK_SRLI16(hb, 4 * n + j), QK_SET1_8(1));
            lv[i] = QK_ADD8(QK_OR(lo, QK_SLLI16(hi, 2)), QK_SET1_8(28));
        }
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const int8_t *xq = x[t]->qs + 16 * g + 4 * i0;
            QK_V s16 =
                QK_ADD16(QK_MADDUBS(lv[0], QK_BCAST4(xq)), QK_MADDUBS(lv[1], QK_BCAST4(xq + 4)));
            isum[t] = QK_ADD32(isum[t], QK_MADD(s16, sg));
        }
    }
}

/* The 16 groups of a Q2_K (kt CPU__QXK_Q2) or Q3_K superblock of the 8
 * rows against T tokens, then the correction: isum[t] as the group bodies
 * make it (sc: Q2_K's scales' nibbles, Q3_K's signed scales), corr[t] =
 * sum_g c[g] bsums[g] (cm: Q2_K's mins' nibbles, Q3_K's scales again); pf
 * the block to prefetch. One token's groups unrolled (constant shifts and
 * shuffles), more tokens' a loop. */
CPU__Q_INLINE void QK_FN(cpu__qxk_g16_sb)(int kt, int T, const unsigned char *q, size_t o1,
                                          const block_q8_K *const *x, const QK_V *sc,
                                          const QK_V *cm, QK_V *isum, QK_V *corr,
                                          const unsigned char *pf)
{
    const size_t gb = CPU__QX_R * (kt == CPU__QXK_Q2 ? sizeof(block_q2_K) : sizeof(block_q3_K));
    CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = corr[t] = QK_ZERO();
    if (T == 1) {
        CPU__Q_UNROLL8 for (int s = 0; s < 8; s++)
        {
            cpu__qxk_prefetch(pf, gb, s);
            CPU__Q_UNROLL for (int g = 2 * s; g < 2 * s + 2; g++)
            {
                if (kt == CPU__QXK_Q2)
                    QK_FN(cpu__qxk_q2_group)(1, q, o1, x, g, sc, isum);
                else
                    QK_FN(cpu__qxk_q3_group)(1, q, o1, x, g, sc, isum);
            }
        }
    } else {
        for (int g = 0; g < 16; g++) {
            if (kt == CPU__QXK_Q2)
                QK_FN(cpu__qxk_q2_group)(T, q, o1, x, g, sc, isum);
            else
                QK_FN(cpu__qxk_q3_group)(T, q, o1, x, g, sc, isum);
        }
    }
    CPU__Q_UNROLL8 for (int p = 0; p < 8; p++)
    { /* groups 2p and 2p + 1 against their bsums */
        int j0 = 2 * (p % 2), j1 = j0 + 1;
        QK_V cp = kt == CPU__QXK_Q2 ? QK_FN(cpu__qxk_u16x2)(cm[p / 2], j0, j1)
                                    : QK_FN(cpu__qxk_s16)(cm[p / 2], j0, j1);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            corr[t] = QK_ADD32(corr[t], QK_MADD(cp, QK_FN(cpu__qxk_bsum2)(x[t], 2 * p)));
        }
    }
}

/* Q2_K superblock gp of the 8 rows (f16 planes d, dmin; 4 scale chunks,
 * 16 qs chunks) against T tokens: isum[t] and msum[t] = sum_g m[g]
 * bsums[g], lane r row r's; pf the block to prefetch (cpu__qxk_prefetch). */
CPU__Q_INLINE void QK_FN(cpu__qxk_q2_sb)(int T, const unsigned char *gp, size_t o1,
                                         const block_q8_K *const *x, QK_V *isum, QK_V *msum,
                                         const unsigned char *pf)
{
    const unsigned char *q = gp + 2 * 2 * CPU__QX_R;
    QK_V scl[4], mnh[4]; /* lane r: row r's sc / m of groups 4c .. 4c + 3 */
    CPU__Q_UNROLL for (int c = 0; c < 4; c++)
    {
        QK_V v = QK_FN(cpu__qxk_chunk)(q, o1, c);
        scl[c] = QK_AND(v, QK_SET1_8(15));
        mnh[c] = QK_AND(QK_SRLI16(v, 4), QK_SET1_8(15));
    }
    QK_FN(cpu__qxk_g16_sb)(CPU__QXK_Q2, T, q, o1, x, scl, mnh, isum, msum, pf);
}

/* Q3_K superblock gp of the 8 rows (1 f16 plane, 27 chunks) against T
 * tokens: isum[t] and corr[t] (32 sum_g sc[g] bsums[g], Q6_K's) lane r row
 * r's; pf the block to prefetch. The 6-bit scales of the 8 rows unpacked
 * at once from the 3 scale chunks (lane r: row r's 12 bytes), as
 * quant_widen.c reads them, less 32. */
CPU__Q_INLINE void QK_FN(cpu__qxk_q3_sb)(int T, const unsigned char *gp, size_t o1,
                                         const block_q8_K *const *x, QK_V *isum, QK_V *corr,
                                         const unsigned char *pf)
{
    const unsigned char *q = gp + 2 * CPU__QX_R;
    const QK_V m4 = QK_SET1_8(15), m2 = QK_SET1_8(3);
    QK_V a0 = QK_FN(cpu__qxk_chunk)(q, o1, 24), a1 = QK_FN(cpu__qxk_chunk)(q, o1, 25),
         a2 = QK_FN(cpu__qxk_chunk)(q, o1, 26);
    QK_V sv[4]; /* lane r: row r's scales 4c .. 4c + 3, less 32 */
    sv[0] = QK_OR(QK_AND(a0, m4), QK_SLLI32(QK_AND(a2, m2), 4));
    sv[1] = QK_OR(QK_AND(a1, m4), QK_SLLI32(QK_AND(QK_SRLI32(a2, 2), m2), 4));
    sv[2] = QK_OR(QK_AND(QK_SRLI32(a0, 4), m4), QK_SLLI32(QK_AND(QK_SRLI32(a2, 4), m2), 4));
    sv[3] = QK_OR(QK_AND(QK_SRLI32(a1, 4), m4), QK_SLLI32(QK_AND(QK_SRLI32(a2, 6), m2), 4));
    CPU__Q_UNROLL for (int c = 0; c < 4; c++) sv[c] = QK_ADD8(sv[c], QK_SET1_8(-32));
    QK_FN(cpu__qxk_g16_sb)(CPU__QXK_Q3, T, q, o1, x, sv, sv, isum, corr, pf);
    CPU__Q_UNROLL for (int t = 0; t < T; t++) corr[t] = QK_SLLI32(corr[t], 5);
}

/* IQ4_XS superblock gp of the 8 rows (f16 planes d and scales_h; chunk 0
 * the scales_l, chunk 1 + 4 s + i the bytes qs[16 s + 4 i ..] of sub-block
 * s: values 4 i .. 4 i + 3 in the low nibbles, 16 + 4 i .. in the high)
 * against T tokens: isum[t] lane r row r's sum_s (ls[s] - 32) sum kv[q] x,
 * exact. VNNI: the levels + 128 (a table of kv + 128) by vpdpbusd, 128
 * times the sub-block's token sum (its two bsums) taken off, then times
 * ls - 32 (vpmulld); AVX2: |kv| against x with kv's sign (vpmaddubsw,
 * pairs |.| <= 2 * 127 * 127, exact in int16), then a vpmaddwd by ls - 32.
 * pf: the block to prefetch (cpu__qxk_prefetch); one token's 8 sub-blocks
 * unrolled (constant shifts), more tokens' a loop. */
CPU__Q_INLINE void QK_FN(cpu__qxk_iq4_sub)(int T, const unsigned char *q, size_t o1,
                                           const block_q8_K *const *x, int s, QK_V lo, QK_V hi,
                                           QK_V table, QK_V *isum)
{
    QK_V ls = QK_OR(QK_AND(QK_SRLI32(lo, 4 * s), QK_SET1_32(15)),
                    QK_SLLI32(QK_AND(QK_SRLI32(hi, 2 * s), QK_SET1_32(3)), 4));
    ls = QK_SUB32(ls, QK_SET1_32(32)); /* lane r: row r's ls - 32, int32 */
#ifdef QK_DPBUSD
    QK_V sub[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) sub[t] = QK_ZERO();
    CPU__Q_UNROLL for (int i = 0; i < 4; i++)
    {
        QK_V v = QK_FN(cpu__qxk_chunk)(q, o1, 1 + 4 * s + i);
        QK_V ul = QK_SHUFB(table, QK_AND(v, QK_SET1_8(15)));
        QK_V uh = QK_SHUFB(table, QK_AND(QK_SRLI16(v, 4), QK_SET1_8(15)));
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const int8_t *xq = x[t]->qs + 32 * s + 4 * i;
            sub[t] = QK_DPBUSD(QK_DPBUSD(sub[t], ul, QK_BCAST4(xq)), uh, QK_BCAST4(xq + 16));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++)
    {
        int bs = x[t]->bsums[2 * s] + x[t]->bsums[2 * s + 1];
        isum[t] = QK_ADD32(isum[t], QK_MULLO32(QK_SUB32(sub[t], QK_SET1_32(128 * bs)), ls));
    }
#else
    QK_V ls16 = QK_OR(QK_AND(ls, QK_SET1_32(0xffff)), QK_SLLI32(ls, 16)); /* both int16 halves */
    CPU__Q_UNROLL for (int i = 0; i < 4; i++)
    {
        QK_V v = QK_FN(cpu__qxk_chunk)(q, o1, 1 + 4 * s + i);
        QK_V ll = QK_SHUFB(table, QK_AND(v, QK_SET1_8(15)));
        QK_V lh = QK_SHUFB(table, QK_AND(QK_SRLI16(v, 4), QK_SET1_8(15)));
        QK_V al = QK_SIGN8(ll, ll), ah = QK_SIGN8(lh, lh);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            const int8_t *xq = x[t]->qs + 32 * s + 4 * i;
            QK_V pl = QK_MADDUBS(al, QK_SIGN8(QK_BCAST4(xq), ll));
            QK_V ph = QK_MADDUBS(ah, QK_SIGN8(QK_BCAST4(xq + 16), lh));
            isum[t] = QK_ADD32(isum[t], QK_ADD32(QK_MADD(pl, ls16), QK_MADD(ph, ls16)));
        }
    }
#endif
}

CPU__Q_INLINE void QK_FN(cpu__qxk_iq4_sb)(int T, const unsigned char *gp, size_t o1,
                                          const block_q8_K *const *x, QK_V *isum,
                                          const unsigned char *pf)
{
    const size_t gb = CPU__QX_R * sizeof(block_iq4_xs);
    const unsigned char *q = gp + 2 * 2 * CPU__QX_R;
    QK_V lo = QK_FN(cpu__qxk_chunk)(q, o1, 0); /* lane r: row r's scales_l */
    QK_V hi = QK_U16S(gp + 2 * CPU__QX_R, o1); /* lane r: row r's scales_h */
    QK_V table = QK_BCAST16(quant_iq4nl_values);
#ifdef QK_DPBUSD
    table = QK_ADD8(table, QK_SET1_8(-128)); /* kv + 128 as u8 */
#endif
    CPU__Q_UNROLL for (int t = 0; t < T; t++) isum[t] = QK_ZERO();
    if (T == 1) {
        CPU__Q_UNROLL8 for (int s = 0; s < 8; s++)
        {
            cpu__qxk_prefetch(pf, gb, s);
            QK_FN(cpu__qxk_iq4_sub)(1, q, o1, x, s, lo, hi, table, isum);
        }
        return;
    }
    for (int s = 0; s < 8; s++)
        QK_FN(cpu__qxk_iq4_sub)(T, q, o1, x, s, lo, hi, table, isum);
}

/* The body: T tokens x the 8 rows of group g (QK_GROUPS 2: and the 8 of
 * group g + 1, lanes 8-15) of type kt. */
CPU__Q_INLINE void QK_FN(cpu__qxk_tile)(int kt, int T, const void *g, const void *const *xv,
                                        int64_t nb, float *const *y)
{
    const size_t gb = CPU__QX_R * (kt == CPU__QXK_Q6    ? sizeof(block_q6_K)
                                   : kt == CPU__QXK_Q5  ? sizeof(block_q5_K)
                                   : kt == CPU__QXK_IQ4 ? sizeof(block_iq4_xs)
                                   : kt == CPU__QXK_Q2  ? sizeof(block_q2_K)
                                   : kt == CPU__QXK_Q3  ? sizeof(block_q3_K)
                                                        : sizeof(block_q4_K));
    const size_t o1 = (QK_GROUPS - 1) * (size_t)nb * gb; /* the second group's bytes */
    QK_F acc[CPU__QX_TOKENS], accm[CPU__QX_TOKENS];
    CPU__Q_UNROLL for (int t = 0; t < T; t++) acc[t] = accm[t] = QK_FZERO();
    for (int64_t b = 0; b < nb; b++) {
        const unsigned char *gp = (const unsigned char *)g + (size_t)b * gb;
        const unsigned char *pf = /* the next group's (or pair's) block b */
            T == 1 ? gp + QK_GROUPS * nb * gb : NULL;
        const block_q8_K *x[CPU__QX_TOKENS];
        CPU__Q_UNROLL for (int t = 0; t < T; t++) x[t] = (const block_q8_K *)xv[t] + b;
        QK_V isum[CPU__QX_TOKENS], corr[CPU__QX_TOKENS];
        if (kt == CPU__QXK_Q6)
            QK_FN(cpu__qxk_q6_sb)(T, gp, o1, x, isum, corr, pf);
        else if (kt == CPU__QXK_IQ4)
            QK_FN(cpu__qxk_iq4_sb)(T, gp, o1, x, isum, pf);
        else if (kt == CPU__QXK_Q2)
            QK_FN(cpu__qxk_q2_sb)(T, gp, o1, x, isum, corr, pf);
        else if (kt == CPU__QXK_Q3)
            QK_FN(cpu__qxk_q3_sb)(T, gp, o1, x, isum, corr, pf);
        else
            QK_FN(cpu__qxk_q45_sb)(kt, T, gp, o1, x, isum, corr, pf);
        QK_F dw = QK_F16S(gp, o1);
        QK_F dm = kt == CPU__QXK_Q6 || kt == CPU__QXK_Q3 ? dw : QK_F16S(gp + 16, o1);
        CPU__Q_UNROLL for (int t = 0; t < T; t++)
        {
            QK_F dx = QK_FSET1(x[t]->d);
            acc[t] = QK_FADD(acc[t], QK_FMUL(QK_FMUL(dw, dx), QK_CVT(isum[t])));
            if (kt != CPU__QXK_IQ4) /* IQ4_XS: no correction, accm stays 0 */
                accm[t] = QK_FADD(accm[t], QK_FMUL(QK_FMUL(dm, dx), QK_CVT(corr[t])));
        }
    }
    CPU__Q_UNROLL for (int t = 0; t < T; t++) QK_FSTORE(y[t], QK_FSUB(acc[t], accm[t]));
}

/* T a constant in each body. */
CPU__Q_INLINE void QK_FN(cpu__qxk_by_t)(int kt, int T, const void *g, const void *const *x,
                                        int64_t nb, float *const *y)
{
    if (T >= 4)
        QK_FN(cpu__qxk_tile)(kt, 4, g, x, nb, y);
    else if (T == 3)
        QK_FN(cpu__qxk_tile)(kt, 3, g, x, nb, y);
    else if (T == 2)
        QK_FN(cpu__qxk_tile)(kt, 2, g, x, nb, y);
    else
        QK_FN(cpu__qxk_tile)(kt, 1, g, x, nb, y);
}

/* The table's entries, one per K type (T_ its name, KT its kind). */
#define QK_ENTRY(T_, KT)                                                                           \
    static void QK_FN(cpu__qxk_##T_)(int T, const void *g, const void *const *x,                   \
                                     const cpu__qx_tok *const *tok, int64_t nb, float *const *y)   \
    {                                                                                              \
        (void)tok;                                                                                 \
        QK_FN(cpu__qxk_by_t)(KT, T, g, x, nb, y);                                                  \
    }
QK_ENTRY(q4_k, CPU__QXK_Q4)
QK_ENTRY(q5_k, CPU__QXK_Q5)
QK_ENTRY(q6_k, CPU__QXK_Q6)
QK_ENTRY(iq4_xs, CPU__QXK_IQ4)
QK_ENTRY(q2_k, CPU__QXK_Q2)
QK_ENTRY(q3_k, CPU__QXK_Q3)
#undef QK_ENTRY

/* the vocabulary, forgotten for the next width */
#undef QK_GROUPS
#undef QK_FN
#undef QK_V
#undef QK_F
#undef QK_CHUNK
#undef QK_F16S
#undef QK_U16S
#undef QK_BCAST16
#undef QK_SUB32
#undef QK_SIGN8
#undef QK_SHUF_BASE
#undef QK_BCAST4
#undef QK_AND
#undef QK_OR
#undef QK_SRLI16
#undef QK_SLLI16
#undef QK_SRAI16
#undef QK_SRLI32
#undef QK_SLLI32
#undef QK_SET1_8
#undef QK_SET1_32
#undef QK_ZERO
#undef QK_MADDUBS
#undef QK_MADD
#undef QK_ADD8
#undef QK_ADD16
#undef QK_ADD32
#undef QK_SHUFB
#undef QK_FZERO
#undef QK_FSET1
#undef QK_FMUL
#undef QK_FADD
#undef QK_FSUB
#undef QK_CVT
#undef QK_FSTORE
#undef QK_DPBUSD
#undef QK_MULLO32
#undef QK_SUB_INT32
#undef QK_SUB_ACC
#undef QK_SUB_SCALE
