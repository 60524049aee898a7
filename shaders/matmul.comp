// matmul.comp - y[t, n] = sum_k x[t, k] * w[n, k] (y = x W^T), for one token
// and for many. A workgroup of 64 invocations computes RPW = 128 weight rows
// for one token (gl_WorkGroupID.y); each row's dot product belongs to one
// group of lanes that strides over k with fma and then reduces its lanes:
//   ENC_SUBGROUP: a subgroup per row (each subgroup takes rows r, r + number
//                 of subgroups, ...), lanes stride by the subgroup size,
//                 subgroupAdd; on the vector path a subgroup takes four
//                 rows at a time, loading each block of x once for them;
//   fallback:     8 invocations per row, stride 8, summed in lane order
//                 through shared memory (on the vector path, each group of
//                 8 takes four rows at once too).
// Vector path (p[6] = 1: rows and x start on 16 bytes, K a multiple of 8 for
// 16-bit weights or 4 for f32): a lane takes whole 16-byte blocks of the
// weight row (8 or 4 elements) and folds them into its accumulator in order;
// otherwise one element at a time. The vector path reads the weight through
// texel view tex[0] and x through tex[1] (common.glsl); on lavapipe that
// took a tiny checkpoint's matmuls from 40-200 us to 25-120 us a call
// (single-threaded). The path depends only on K and the layout (vk_ops.c
// picks it), and each (t, n) is one dot product whatever the number of tokens:
// a token's result does not depend on what else is in the step. (Tiles of
// several tokens sharing weight loads ran 3x slower on lavapipe, which keeps
// per-token accumulator arrays in memory.)
// (128 rows rather than 32: the matmuls of a tiny checkpoint then take 1-8
// workgroups, fewer for lavapipe to schedule; about 5% more captured tokens/s
// there.) Output rows come in windows: row n of the weight binding is column
// n0 + n.
// buf: 0 x, 1 w, 2 y; on the vector path tex 0 w (this window), tex 1 x.
// p: 0 T, 1 K, 2 N (all columns), 3 w dtype, 4 n0, 5 rows in this window,
// 6 vector path
#version 450
#include "common.glsl"
#define RPW 128u
layout(local_size_x = 64) in;

#ifndef ENC_SUBGROUP
shared float part[RPW * 8u];
#endif

// The part of dot(x[t, :], w[n, :]) that lane `lane` of `lanes` owns,
// element by element.
float dot_scalar(uint t, uint n, uint lane, uint lanes)
{
    uint K = pc.p[1], dt = pc.p[3];
    float a = 0.0;
    for (uint k = lane; k < K; k += lanes) a = fma(LDF(0, t * K + k), LDW(1, n * K + k, dt), a);
    return a;
}

// On the vector path, the same parts for the four rows n .. n + 3 at once,
// 16 bytes at a time, each row's in order of k (rows past `last` read row
// `last`, and their results are dropped): an x block is loaded once for the
// four.
#define ROW4_ uint K = pc.p[1], xb = t * K / 4u; \
    uvec4 wr = uvec4(min(n, last), min(n + 1u, last), min(n + 2u, last), min(n + 3u, last));
vec4 dot4_f32(uint t, uint n, uint last, uint lane, uint lanes)
{
    ROW4_
    uvec4 wb = wr * (K / 4u);
    vec4 a = vec4(0.0);
    for (uint b = lane; b < K / 4u; b += lanes) {
        vec4 x = uintBitsToFloat(LDT(1, xb + b));
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            vec4 w = uintBitsToFloat(LDT(0, wb[i] + b));
            a[i] = fma(x.x, w.x, a[i]); a[i] = fma(x.y, w.y, a[i]);
            a[i] = fma(x.z, w.z, a[i]); a[i] = fma(x.w, w.w, a[i]);
        }
    }
    return a;
}

#define BF16_(word) vec2(uintBitsToFloat((word) << 16u), uintBitsToFloat((word) & 0xffff0000u))
#define DOT4_16_(name, UNPACK) \
vec4 name(uint t, uint n, uint last, uint lane, uint lanes) \
{ \
    ROW4_ \
    uvec4 wb = wr * (K / 8u); \
    vec4 a = vec4(0.0); \
    for (uint b = lane; b < K / 8u; b += lanes) { \
        vec4 xa = uintBitsToFloat(LDT(1, xb + 2u * b)), xc = uintBitsToFloat(LDT(1, xb + 2u * b + 1u)); \
        [[unroll]] for (uint i = 0u; i < 4u; i++) { \
            uvec4 q = LDT(0, wb[i] + b); \
            vec2 w0 = UNPACK(q.x), w1 = UNPACK(q.y), w2 = UNPACK(q.z), w3 = UNPACK(q.w); \
            float s = a[i]; \
            s = fma(xa.x, w0.x, s); s = fma(xa.y, w0.y, s); s = fma(xa.z, w1.x, s); s = fma(xa.w, w1.y, s); \
            s = fma(xc.x, w2.x, s); s = fma(xc.y, w2.y, s); s = fma(xc.z, w3.x, s); s = fma(xc.w, w3.y, s); \
            a[i] = s; \
        } \
    } \
    return a; \
}
DOT4_16_(dot4_bf16, BF16_)
DOT4_16_(dot4_f16, unpackHalf2x16)

// Rows r0 + r, r < nr, of this workgroup: one at a time by `DOT`, four at a
// time by `DOT4`. The path is chosen once per workgroup, outside the loop
// over rows: lavapipe runs every branch of an `if` (masked), so a choice per
// row cost each row the other paths too.
#ifdef ENC_SUBGROUP
#define ROWS_(DOT) \
    for (uint r = gl_SubgroupID; r < nr; r += gl_NumSubgroups) { \
        float s = subgroupAdd(DOT(t, r0 + r, gl_SubgroupInvocationID, gl_SubgroupSize)); \
        if (subgroupElect()) STF(2, t * N + n0 + r0 + r, s); \
    }
#define ROWS4_(DOT4) \
    for (uint r = 4u * gl_SubgroupID; r < nr; r += 4u * gl_NumSubgroups) { \
        vec4 s = subgroupAdd(DOT4(t, r0 + r, r0 + nr - 1u, gl_SubgroupInvocationID, gl_SubgroupSize)); \
        uint i = gl_SubgroupInvocationID; /* lane i < 4 stores row r + i: one store, not four */ \
        if (i < 4u && r + i < nr) STF(2, t * N + n0 + r0 + r + i, i == 0u ? s.x : i == 1u ? s.y : i == 2u ? s.z : s.w); \
    }
#else
#define ROWS_(DOT) \
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u) part[r * 8u + lane] = DOT(t, r0 + r, lane, 8u);
#define ROWS4_(DOT4) \
    for (uint r = 4u * (gl_LocalInvocationIndex / 8u); r < nr; r += 32u) { \
        vec4 s = DOT4(t, r0 + r, r0 + nr - 1u, lane, 8u); \
        for (uint i = 0u; i < 4u && r + i < nr; i++) part[(r + i) * 8u + lane] = s[i]; \
    }
#endif

void main()
{
    uint t = gl_WorkGroupID.y, N = pc.p[2], n0 = pc.p[4], r0 = gl_WorkGroupID.x * RPW, nr = min(RPW, pc.p[5] - r0);
    uint dt = pc.p[3], lane = gl_LocalInvocationIndex % 8u;
    if (pc.p[6] == 0u) {
        ROWS_(dot_scalar)
    } else if (dt == DT_F32) {
        ROWS4_(dot4_f32)
    } else if (dt == DT_BF16) {
        ROWS4_(dot4_bf16)
    } else {
        ROWS4_(dot4_f16)
    }
#ifndef ENC_SUBGROUP
    barrier();
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u) {
        if (lane != 0u) continue;
        float s = 0.0;
        for (uint l = 0u; l < 8u; l++) s += part[r * 8u + l];
        STF(2, t * N + n0 + r0 + r, s);
    }
#endif
}
