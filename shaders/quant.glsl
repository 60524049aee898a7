// quant.glsl - reading GGUF block-quantized weights (src/base/quant.h: bit
// for bit ggml's block layouts) straight from a storage buffer of 32-bit
// words, for matmul_q, matmul_id_q and get_rows_q. Include after
// common.glsl with QW defined as the weights' binding.
//
// The weights' type is specialization constant 5, QT (its enc_dtype), so a
// pipeline holds one type's decoder and no branch on the type survives.
// A row is read in units of QU consecutive values (32; 16 for Q6_K, whose
// scales cover 16) that share one scale: value = a * (q - z) - m for the
// unit's integer levels q (q_head gives (a, z, m); q_levels four levels at
// a time). Blocks of 34, 18 or 210 bytes put fields at any byte offset, so
// four bytes are read as the one or two words holding them, shifted; every
// 16-bit field starts on an even byte and lies inside one word.
//
//   Q8_0  34 B  [d f16][qs 32 x i8]               a = d, z = 0, m = 0
//   Q4_0  18 B  [d f16][qs 16 B nibbles]          a = d, z = 8, m = 0
//   Q4_K 144 B  [d][dmin][scales 12][qs 128]      a = d sc, z = 0, m = dmin mn
//   Q5_K 176 B  [d][dmin][scales 12][qh 32][qs 128]  as Q4_K, fifth bit in qh
//   Q6_K 210 B  [ql 128][qh 64][scales 16 x i8][d]   a = d sc, z = 32, m = 0
//   IQ4_NL 18 B [d f16][qs 16 B nibbles]          a = d, z = 0, m = 0, q = IQ4NL[nibble]
//   Q5_0 22 B   [d f16][qh 4 B][qs 16 B nibbles]  a = d, z = 16, m = 0, bit i of qh value i's fifth
//   IQ4_XS 136 B [d f16][scales_h 2 B][scales_l 4 B][qs 128 B]  a = d (ls - 32), z = 0, m = 0,
//               q = IQ4NL[nibble], sub-block s an IQ4_NL block's nibbles at qs[16 s]
//   Q2_K  84 B  [scales 16][qs 64][d][dmin]      units of 16: a = d sc, z = 0, m = dmin mn
//   Q4_1 20 B   [d][m][qs 16 B nibbles]           a = d, z = 0, m = -m (x = d q + m)
//   Q5_1 24 B   [d][m][qh 4 B][qs 16 B]           as Q4_1, q + 16 x its bit of qh
//   Q3_K 110 B  [hmask 32][qs 64][scales 12][d]  units of 16: a = d (sc - 32), z = 4, m = 0,
//               q = Q2_K's two bits + 4 x its hmask bit (base/quant_widen.h)

layout(constant_id = 5) const uint QT = 4u;
#define QT_Q8_0 4u
#define QT_Q4_0 5u
#define QT_Q4_K 6u
#define QT_Q5_K 7u
#define QT_Q6_K 8u
#define QT_Q5_0 10u
#define QT_IQ4_NL 11u
#define QT_IQ4_XS 13u
#define QT_Q2_K 14u
#define QT_Q3_K 12u
#define QT_Q4_1 15u
#define QT_Q5_1 16u
const uint QBB = QT == QT_Q8_0 ? 34u : QT == QT_Q4_0 || QT == QT_IQ4_NL ? 18u : QT == QT_Q5_0 ? 22u
               : QT == QT_Q4_K ? 144u : QT == QT_Q5_K ? 176u : QT == QT_IQ4_XS ? 136u
               : QT == QT_Q2_K ? 84u : QT == QT_Q3_K ? 110u : QT == QT_Q4_1 ? 20u : QT == QT_Q5_1 ? 24u : 210u;
const uint QBE = QT == QT_Q8_0 || QT == QT_Q4_0 || QT == QT_IQ4_NL || QT == QT_Q5_0 || QT == QT_Q4_1
                 || QT == QT_Q5_1 ? 32u : 256u; // values per block

// IQ4_NL's levels by nibble (base/quant_widen.h quant_iq4nl_values).
const float IQ4NL[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                  1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
const uint QU = QT == QT_Q6_K || QT == QT_Q2_K || QT == QT_Q3_K ? 16u : 32u; // values per unit
const uint QUB = QBE / QU;                                    // units per block

// Constant 2 (QTEX): the weights come through texel view tex[0] and the
// activations through tex[1], 16 bytes a fetch, instead of storage buffer
// QW and binding 0 (on lavapipe a storage load runs lane by lane, a texel
// fetch is one gathered load). Both paths load the same values, so they
// give the same bits.
layout(constant_id = 2) const bool QTEX = false;

// The word holding byte o of the weight tensor.
uint q_word(uint o)
{
    if (QTEX) return LDT(0, o >> 4u)[(o >> 2u) & 3u];
    return buf[QW].d[pc.off[QW] + (o >> 2u)];
}

// Activations i .. i + 3 (i a multiple of 4) of binding 0.
vec4 q_x4(uint i)
{
    if (QTEX) return uintBitsToFloat(LDT(1, i >> 2u));
    return vec4(LDF(0, i), LDF(0, i + 1u), LDF(0, i + 2u), LDF(0, i + 3u));
}

// Bytes o .. o + 3 of the weight tensor, the lowest in the low byte. (The
// second word is read only when the bytes straddle two.)
uint q_u32(uint o)
{
    uint s = (o & 3u) << 3u, lo = q_word(o);
    uint hi = q_word(s == 0u ? o : o + 4u);
    return s == 0u ? lo : (lo >> s) | (hi << (32u - s));
}

// The 16-bit field at even byte o; byte o alone.
uint q_u16(uint o) { return (q_word(o) >> ((o & 2u) << 3u)) & 0xffffu; }
uint q_u8(uint o) { return (q_word(o) >> ((o & 3u) << 3u)) & 0xffu; }
float q_f16(uint o) { return unpackHalf2x16(q_u16(o)).x; }

// The four bytes of a word as levels, shifted right by `shift` and masked.
vec4 q_bytes(uint w, uint shift, uint mask)
{
    return vec4(uvec4(w, w >> 8u, w >> 16u, w >> 24u) >> shift & mask);
}

// The 6-bit scale (x) and min (y) of sub-block s of a Q4_K / Q5_K block
// whose 12 scale bytes start at byte sb (base/quant.h quant_scale_min_k4).
uvec2 q_scale_min_k4(uint sb, uint s)
{
    if (s < 4u) return uvec2(q_u8(sb + s) & 63u, q_u8(sb + s + 4u) & 63u);
    uint e = q_u8(sb + s + 4u);
    return uvec2((e & 15u) | (q_u8(sb + s - 4u) >> 6u) << 4u, (e >> 4u) | (q_u8(sb + s) >> 6u) << 4u);
}

// (a, z, m) of unit u of the row starting at byte r.
vec3 q_head(uint r, uint u)
{
    uint blk = r + (u / QUB) * QBB, s = u % QUB;
    if (QT == QT_Q8_0 || QT == QT_IQ4_NL) return vec3(q_f16(blk), 0.0, 0.0);
    if (QT == QT_Q4_0) return vec3(q_f16(blk), 8.0, 0.0);
    if (QT == QT_Q5_0) return vec3(q_f16(blk), 16.0, 0.0);
    if (QT == QT_Q4_1 || QT == QT_Q5_1) return vec3(q_f16(blk), 0.0, -q_f16(blk + 2u));
    if (QT == QT_Q3_K) { // group s's 6 bits: low 4 in scales[s % 8] (>> 4 from 8 on), high 2 in scales[8 + s % 4]
        uint lo = (q_u8(blk + 96u + s % 8u) >> (4u * (s / 8u))) & 15u;
        uint hi = (q_u8(blk + 104u + s % 4u) >> (2u * (s / 4u))) & 3u;
        return vec3(q_f16(blk + 108u) * float(int(lo | hi << 4u) - 32), 4.0, 0.0);
    }
    if (QT == QT_Q2_K) { // group s: scale in the low nibble of scales[s], min in the high
        uint sm = q_u8(blk + s), dd = q_word(blk + 80u); // d, dmin: blocks of 84 bytes start on a word
        return vec3(unpackHalf2x16(dd).x * float(sm & 15u), 0.0, unpackHalf2x16(dd).y * float(sm >> 4u));
    }
    if (QT == QT_IQ4_XS) { // ls: nibble s % 2 of scales_l[s / 2], bits 2s, 2s + 1 of scales_h
        uint ls = ((q_u8(blk + 4u + s / 2u) >> (4u * (s % 2u))) & 15u) | ((q_u16(blk + 2u) >> (2u * s)) & 3u) << 4u;
        return vec3(q_f16(blk) * float(int(ls) - 32), 0.0, 0.0);
    }
    if (QT == QT_Q6_K) {
        float sc = float(bitfieldExtract(int(q_u8(blk + 192u + s)), 0, 8)); // int8
        return vec3(q_f16(blk + 208u) * sc, 32.0, 0.0);
    }
    uint dd = q_word(blk); // d, dmin: blocks of 144 / 176 bytes start on a word
    uvec2 sm = q_scale_min_k4(blk + 4u, s);
    return vec3(unpackHalf2x16(dd).x * float(sm.x), 0.0, unpackHalf2x16(dd).y * float(sm.y));
}

// Levels 4j .. 4j + 3 of unit u of the row at byte r.
vec4 q_levels(uint r, uint u, uint j)
{
    uint blk = r + (u / QUB) * QBB, s = u % QUB;
    if (QT == QT_Q8_0) {
        int w = int(q_u32(blk + 2u + 4u * j));
        return vec4(bitfieldExtract(w, 0, 8), bitfieldExtract(w, 8, 8), bitfieldExtract(w, 16, 8),
                    bitfieldExtract(w, 24, 8));
    }
    if (QT == QT_Q4_0) // values 0..15 in the low nibbles of qs, 16..31 in the high
        return q_bytes(q_u32(blk + 2u + 4u * (j & 3u)), j >= 4u ? 4u : 0u, 15u);
    if (QT == QT_Q4_1) return q_bytes(q_u32(blk + 4u + 4u * (j & 3u)), j >= 4u ? 4u : 0u, 15u);
    if (QT == QT_Q5_0 || QT == QT_Q5_1) { // Q4_0's nibbles after qh, bit 4j + c of qh the fifth of value 4j + c
        uint hb = QT == QT_Q5_0 ? blk + 2u : blk + 4u;
        vec4 lo = q_bytes(q_u32(hb + 4u + 4u * (j & 3u)), j >= 4u ? 4u : 0u, 15u);
        uint qh = q_u32(hb) >> (4u * j);
        return lo + 16.0 * vec4(uvec4(qh, qh >> 1u, qh >> 2u, qh >> 3u) & 1u);
    }
    if (QT == QT_IQ4_NL || QT == QT_IQ4_XS) { // Q4_0's nibbles, each a level of the table
        uint qs = QT == QT_IQ4_NL ? blk + 2u : blk + 8u + 16u * s;
        uvec4 n = uvec4(q_bytes(q_u32(qs + 4u * (j & 3u)), j >= 4u ? 4u : 0u, 15u));
        return vec4(IQ4NL[n.x], IQ4NL[n.y], IQ4NL[n.z], IQ4NL[n.w]);
    }
    if (QT == QT_Q2_K || QT == QT_Q3_K) { // group s = 8 n + 2 i + h: bits 2i, 2i + 1 of qs[32 n + 16 h + l]
        uint n = s / 8u, i = (s % 8u) / 2u, h = s % 2u;
        vec4 q = q_bytes(q_u32(blk + (QT == QT_Q2_K ? 16u : 32u) + 32u * n + 16u * h + 4u * j), 2u * i, 3u);
        if (QT == QT_Q3_K) q += 4.0 * q_bytes(q_u32(blk + 16u * h + 4u * j), 4u * n + i, 1u); // hmask bit
        return q;
    }
    if (QT == QT_Q6_K) { // value v = 16 s + 4 j + c = 128 h + 32 i + l
        uint h = s / 8u, i = (s % 8u) / 2u, l = 16u * (s % 2u) + 4u * j;
        vec4 lo = q_bytes(q_u32(blk + 64u * h + 32u * (i & 1u) + l), 4u * (i >> 1u), 15u);
        vec4 hi = q_bytes(q_u32(blk + 128u + 32u * h + l), 2u * i, 3u);
        return lo + 16.0 * hi;
    }
    // Q4_K / Q5_K: sub-block s = 2c + half, its 32 values in the low (half
    // 0) or high nibbles of qs[32c .. 32c + 31]; Q5_K's fifth bit is bit s of qh[l].
    uint qs = blk + (QT == QT_Q5_K ? 48u : 16u) + 32u * (s / 2u) + 4u * j;
    vec4 q = q_bytes(q_u32(qs), 4u * (s % 2u), 15u);
    if (QT == QT_Q5_K) q += 16.0 * q_bytes(q_u32(blk + 16u + 4u * j), s, 1u);
    return q;
}

// Values 4j .. 4j + 3 of the unit with head h: a * (q - z) - m, one fused
// multiply-add so that every pipeline rounds them alike.
vec4 q_values(uint r, uint u, uint j, vec3 h)
{
    return fma(vec4(h.x), q_levels(r, u, j) - h.y, vec4(-h.z));
}

// Tokens per tile: constant 0 (1, 2 or 4). Lane `lane` of `lanes`' part of
// the dot products of the weight row at byte r (K values) with the f32
// activation rows starting at words xr[0 .. TT) of binding 0: the lane takes
// units lane, lane + lanes, ... and folds each unit's values into a[t] in
// order of k. A weight unit is decoded once for all TT tokens, and a token's
// part is the same sequence of fma whatever TT is (batch invariance).
layout(constant_id = 0) const uint TT = 1u;
vec4 q_dot(uint r, uint K, uvec4 xr, uint lane, uint lanes)
{
    vec4 a = vec4(0.0);
    for (uint u = lane; u < K / QU; u += lanes) {
        vec3 h = q_head(r, u);
        [[unroll]] for (uint j = 0u; j < QU / 4u; j++) {
            vec4 w = q_values(r, u, j, h);
            uint k = u * QU + 4u * j;
            [[unroll]] for (uint t = 0u; t < TT; t++) {
                vec4 x = q_x4(xr[t] + k);
                float s = a[t];
                s = fma(x.x, w.x, s);
                s = fma(x.y, w.y, s);
                s = fma(x.z, w.z, s);
                s = fma(x.w, w.w, s);
                a[t] = s;
            }
        }
    }
    return a;
}
