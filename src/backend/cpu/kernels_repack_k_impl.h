/* kernels_repack_k_impl.h - the 256-bit bodies of the interleaved matmul
 * kernels (cpu__qx8_fn) for the K types: 8 weight rows of one group
 * (repack.h) of Q4_K, Q5_K or Q6_K against up to CPU__QX_TOKENS tokens' Q8_K
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
 *   Q5_K: as Q4_K with the fifth bit from the qh chunks (levels 0..31):
 *   pairs |.| <= 7936, so int16 sums of 4 chunks, two vpmaddwd per s.
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
 * them (cpu__qxk_prefetch); more tokens keep the loops.
 *
 * The bodies are written once over a small vocabulary
 * (kernels_repack_k_body.h) and built here at 256 bits (8 rows, the
 * table's x8) and, on AVX-512 VNNI (CPU__QX16), at 512 bits: two groups,
 * 16 rows, for calls of several tokens (the table's x16), each byte
 * shuffle, vpmaddubsw and vpmaddwd serving 16 rows. */

enum {
    CPU__QXK_Q4 = 0,
    CPU__QXK_Q6 = 1,
    CPU__QXK_Q5 = 2,
    CPU__QXK_IQ4 = 3,
    CPU__QXK_Q2 = 4,
    CPU__QXK_Q3 = 5
};

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

/* --- 256 bits: one group a vector (x8) ------------------------------------ */
#define QK_GROUPS 1
#define QK_FN(name) name
#define QK_V __m256i
#define QK_F __m256
#define QK_CHUNK(p, o1) ((void)(o1), _mm256_loadu_si256((const __m256i *)(p)))
#define QK_F16S(p, o1) ((void)(o1), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p))))
#define QK_U16S(p, o1) ((void)(o1), _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))))
#define QK_BCAST16(p) _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p)))
#define QK_SUB32 _mm256_sub_epi32
#define QK_SIGN8 _mm256_sign_epi8
#define QK_SHUF_BASE()                                                                             \
    _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4, 4, 4, 4,   \
                     8, 8, 8, 8, 12, 12, 12, 12)
#define QK_BCAST4 cpu__qx_bcast4
#define QK_AND _mm256_and_si256
#define QK_OR _mm256_or_si256
#define QK_SRLI16 _mm256_srli_epi16
#define QK_SLLI16 _mm256_slli_epi16
#define QK_SRAI16 _mm256_srai_epi16
#define QK_SRLI32 _mm256_srli_epi32
#define QK_SLLI32 _mm256_slli_epi32
#define QK_SET1_8 _mm256_set1_epi8
#define QK_SET1_32 _mm256_set1_epi32
#define QK_ZERO _mm256_setzero_si256
#define QK_MADDUBS _mm256_maddubs_epi16
#define QK_MADD _mm256_madd_epi16
#define QK_ADD8 _mm256_add_epi8
#define QK_ADD16 _mm256_add_epi16
#define QK_ADD32 _mm256_add_epi32
#define QK_SHUFB _mm256_shuffle_epi8
#define QK_FZERO _mm256_setzero_ps
#define QK_FSET1 _mm256_set1_ps
#define QK_FMUL _mm256_mul_ps
#define QK_FADD _mm256_add_ps
#define QK_FSUB _mm256_sub_ps
#define QK_CVT _mm256_cvtepi32_ps
#define QK_FSTORE _mm256_storeu_ps
#ifdef CPU__Q_DOT4_ACC
#define QK_DPBUSD CPU__Q_DOT4_ACC
#define QK_MULLO32 _mm256_mullo_epi32
#endif
#include "backend/cpu/kernels_repack_k_body.h"

#ifdef CPU__QX16
/* --- 512 bits: two groups a vector (x16; kernels_repack_512_impl.h) -------- */
#define QK_GROUPS 2
#define QK_FN(name) name##16
#define QK_V __m512i
#define QK_F __m512
#define QK_CHUNK(p, o1) cpu__qx16_join(p, (p) + (o1))
#define QK_F16S(p, o1) cpu__qx16_f16(p, (p) + (o1))
#define QK_U16S(p, o1) _mm512_cvtepu16_epi32(cpu__qx16_join128(p, (p) + (o1)))
#define QK_BCAST16(p) _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(p)))
#define QK_SUB32 _mm512_sub_epi32
#define QK_SHUF_BASE()                                                                             \
    _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12))
#define QK_BCAST4 cpu__qx16_bcast4
#define QK_AND _mm512_and_si512
#define QK_OR _mm512_or_si512
#define QK_SRLI16 _mm512_srli_epi16
#define QK_SLLI16 _mm512_slli_epi16
#define QK_SRAI16 _mm512_srai_epi16
#define QK_SRLI32 _mm512_srli_epi32
#define QK_SLLI32 _mm512_slli_epi32
#define QK_SET1_8 _mm512_set1_epi8
#define QK_SET1_32 _mm512_set1_epi32
#define QK_ZERO _mm512_setzero_si512
#define QK_MADDUBS _mm512_maddubs_epi16
#define QK_MADD _mm512_madd_epi16
#define QK_ADD8 _mm512_add_epi8
#define QK_ADD16 _mm512_add_epi16
#define QK_ADD32 _mm512_add_epi32
#define QK_SHUFB _mm512_shuffle_epi8
#define QK_FZERO _mm512_setzero_ps
#define QK_FSET1 _mm512_set1_ps
#define QK_FMUL _mm512_mul_ps
#define QK_FADD _mm512_add_ps
#define QK_FSUB _mm512_sub_ps
#define QK_CVT _mm512_cvtepi32_ps
#define QK_FSTORE _mm512_storeu_ps
#define QK_DPBUSD _mm512_dpbusd_epi32
#define QK_MULLO32 _mm512_mullo_epi32
#include "backend/cpu/kernels_repack_k_body.h"
#endif
