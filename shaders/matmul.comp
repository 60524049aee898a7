// matmul.comp - y[t, n] = sum_k x[t, k] * w[n, k] (y = x W^T), for one token
// and for many. A workgroup of 64 invocations computes RPW = 32 weight rows
// for one token (gl_WorkGroupID.y); each row's dot product belongs to one
// group of lanes that strides over k with fma and then reduces its lanes:
//   ENC_SUBGROUP: a subgroup per row (each subgroup takes rows r, r + number
//                 of subgroups, ...), lanes stride by the subgroup size,
//                 subgroupAdd;
//   fallback:     8 invocations per row, stride 8, summed in lane order
//                 through shared memory.
// Vector path (p[6] = 1: rows and x start on 16 bytes, K a multiple of 8 for
// 16-bit weights or 4 for f32): a lane takes whole 16-byte blocks of the
// weight row (8 or 4 elements) and folds them into its accumulator in order;
// otherwise one element at a time. The path depends only on K and the
// layout, and each (t, n) is one dot product whatever the number of tokens:
// a token's result does not depend on what else is in the step. (Tiles of
// several tokens sharing weight loads ran 3x slower on lavapipe, which keeps
// per-token accumulator arrays in memory.)
// Output rows come in windows: row n of the weight binding is column n0 + n.
// buf: 0 x, 1 w, 2 y. p: 0 T, 1 K, 2 N (all columns), 3 w dtype, 4 n0,
// 5 rows in this window, 6 vector path
#version 450
#include "common.glsl"
#define RPW 32u
layout(local_size_x = 64) in;

#ifndef ENC_SUBGROUP
shared float part[RPW * 8u];
#endif

vec2 unpack16(uint word, uint dt)
{
    if (dt == DT_BF16) return vec2(uintBitsToFloat(word << 16u), uintBitsToFloat(word & 0xffff0000u));
    return unpackHalf2x16(word);
}

// The part of dot(x[t, :], w[n, :]) that lane `lane` of `lanes` owns.
float dot_part(uint t, uint n, uint lane, uint lanes)
{
    uint K = pc.p[1], dt = pc.p[3];
    float a = 0.0;
    if (pc.p[6] == 0u) {
        for (uint k = lane; k < K; k += lanes) a = fma(LDF(0, t * K + k), LDW(1, n * K + k, dt), a);
        return a;
    }
    uint xb = (pc.off[0] + t * K) / 4u; // x row, in 16-byte blocks
    if (dt == DT_F32) {
        uint wb = (pc.off[1] + n * K) / 4u;
        for (uint b = lane; b < K / 4u; b += lanes) {
            vec4 w = uintBitsToFloat(buf4[1].d[wb + b]), x = uintBitsToFloat(buf4[0].d[xb + b]);
            a = fma(x.x, w.x, a); a = fma(x.y, w.y, a); a = fma(x.z, w.z, a); a = fma(x.w, w.w, a);
        }
        return a;
    }
    uint wb = (pc.off[1] + n * K / 2u) / 4u;
    for (uint b = lane; b < K / 8u; b += lanes) {
        uvec4 q = buf4[1].d[wb + b];
        vec4 xa = uintBitsToFloat(buf4[0].d[xb + 2u * b]), xc = uintBitsToFloat(buf4[0].d[xb + 2u * b + 1u]);
        vec2 w0 = unpack16(q.x, dt), w1 = unpack16(q.y, dt), w2 = unpack16(q.z, dt), w3 = unpack16(q.w, dt);
        a = fma(xa.x, w0.x, a); a = fma(xa.y, w0.y, a); a = fma(xa.z, w1.x, a); a = fma(xa.w, w1.y, a);
        a = fma(xc.x, w2.x, a); a = fma(xc.y, w2.y, a); a = fma(xc.z, w3.x, a); a = fma(xc.w, w3.y, a);
    }
    return a;
}

void main()
{
    uint t = gl_WorkGroupID.y, N = pc.p[2], n0 = pc.p[4], rows = pc.p[5];
#ifdef ENC_SUBGROUP
    for (uint r = gl_SubgroupID; r < RPW; r += gl_NumSubgroups) {
        uint n = gl_WorkGroupID.x * RPW + r;
        if (n >= rows) break;
        float s = subgroupAdd(dot_part(t, n, gl_SubgroupInvocationID, gl_SubgroupSize));
        if (subgroupElect()) STF(2, t * N + n0 + n, s);
    }
#else
    uint lane = gl_LocalInvocationIndex % 8u;
    for (uint r = gl_LocalInvocationIndex / 8u; r < RPW; r += 8u) {
        uint n = gl_WorkGroupID.x * RPW + r;
        part[r * 8u + lane] = n < rows ? dot_part(t, n, lane, 8u) : 0.0;
    }
    barrier();
    for (uint r = gl_LocalInvocationIndex / 8u; r < RPW; r += 8u) {
        uint n = gl_WorkGroupID.x * RPW + r;
        if (lane != 0u || n >= rows) continue;
        float s = 0.0;
        for (uint l = 0u; l < 8u; l++) s += part[r * 8u + l];
        STF(2, t * N + n0 + n, s);
    }
#endif
}
