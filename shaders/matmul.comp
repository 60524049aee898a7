// matmul.comp - y[t, n] = sum_k x[t, k] * w[n, k] (y = x W^T), for one token
// and for many. A workgroup of 64 invocations computes RPW = 8 weight rows
// for a tile of TT tokens; each row's dot products belong to one
// group of lanes (below) that strides over k, one accumulator per token,
// then reduces its lanes:
//   ENC_SUBGROUP: a subgroup per row (looping when there are fewer than 8
//                 subgroups), lanes stride by the subgroup size, subgroupAdd;
//   fallback:     8 invocations per row, stride 8, summed in lane order
//                 through shared memory.
// Vector path (p[6] = 1: rows and x start on 16 bytes, K a multiple of 8 for
// 16-bit weights or 4 for f32): a lane takes whole 16-byte blocks of the
// weight row (8 or 4 elements) and folds them into its accumulator in order
// with fma; otherwise one element at a time. The path depends only on K and
// the layout, never on the batch, and each (t, n) has its own accumulator
// going through the same steps whatever the number of tokens: a token's
// result does not depend on what else is in the step.
// Output rows come in windows: row n of the weight binding is column n0 + n.
// buf: 0 x, 1 w, 2 y. p: 0 T, 1 K, 2 N (all columns), 3 w dtype, 4 n0,
// 5 rows in this window, 6 vector path
#version 450
#include "common.glsl"
// Tokens per tile: 1. Larger tiles share weight loads between tokens, but
// lavapipe keeps the acc[TT] array in memory and runs 3x slower at TT = 8.
#define TT 1u
#define RPW 8u
layout(local_size_x = 64) in;

#ifndef ENC_SUBGROUP
shared float part[RPW * TT * 8u];
#endif

vec4 ldx4(uint word) { return uintBitsToFloat(buf4[0].d[(pc.off[0] + word) / 4u]); }

vec2 unpack16(uint word, uint dt)
{
    if (dt == DT_BF16) return vec2(uintBitsToFloat(word << 16u), uintBitsToFloat(word & 0xffff0000u));
    return unpackHalf2x16(word);
}

// Fold one 16-byte block of weight row n (block b) into acc[] for nt tokens.
void fold_block(inout float acc[TT], uint n, uint b, uint K, uint dt, uint t0, uint nt)
{
    if (dt == DT_F32) {
        vec4 w = uintBitsToFloat(buf4[1].d[(pc.off[1] + n * K) / 4u + b]);
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            if (t >= nt) break;
            vec4 x = ldx4((t0 + t) * K + 4u * b);
            float a = acc[t];
            a = fma(x.x, w.x, a); a = fma(x.y, w.y, a); a = fma(x.z, w.z, a); a = fma(x.w, w.w, a);
            acc[t] = a;
        }
    } else {
        uvec4 q = buf4[1].d[(pc.off[1] + n * K / 2u) / 4u + b];
        vec2 w0 = unpack16(q.x, dt), w1 = unpack16(q.y, dt), w2 = unpack16(q.z, dt), w3 = unpack16(q.w, dt);
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            if (t >= nt) break;
            vec4 xa = ldx4((t0 + t) * K + 8u * b), xb = ldx4((t0 + t) * K + 8u * b + 4u);
            float a = acc[t];
            a = fma(xa.x, w0.x, a); a = fma(xa.y, w0.y, a); a = fma(xa.z, w1.x, a); a = fma(xa.w, w1.y, a);
            a = fma(xb.x, w2.x, a); a = fma(xb.y, w2.y, a); a = fma(xb.z, w3.x, a); a = fma(xb.w, w3.y, a);
            acc[t] = a;
        }
    }
}

void dot_row(inout float acc[TT], uint n, uint lane, uint lanes, uint t0, uint nt)
{
    uint K = pc.p[1], dt = pc.p[3];
    if (pc.p[6] != 0u) {
        uint blocks = dt == DT_F32 ? K / 4u : K / 8u;
        for (uint b = lane; b < blocks; b += lanes) fold_block(acc, n, b, K, dt, t0, nt);
        return;
    }
    for (uint k = lane; k < K; k += lanes) {
        float w = LDW(1, n * K + k, dt);
        [[unroll]] for (uint t = 0u; t < TT; t++)
            if (t < nt) acc[t] = fma(LDF(0, (t0 + t) * K + k), w, acc[t]);
    }
}

void main()
{
    uint T = pc.p[0], N = pc.p[2], n0 = pc.p[4], rows = pc.p[5];
    uint t0 = gl_WorkGroupID.y * TT, nt = min(TT, T - t0);
#ifdef ENC_SUBGROUP
    uint lanes = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    for (uint r = gl_SubgroupID; r < RPW; r += gl_NumSubgroups) {
        uint n = gl_WorkGroupID.x * RPW + r;
        if (n >= rows) break;
        float acc[TT];
        [[unroll]] for (uint t = 0u; t < TT; t++) acc[t] = 0.0;
        dot_row(acc, n, lane, lanes, t0, nt);
        [[unroll]] for (uint t = 0u; t < TT; t++) {
            float s = subgroupAdd(acc[t]);
            if (lane == 0u && t < nt) STF(2, (t0 + t) * N + n0 + n, s);
        }
    }
#else
    uint lane = gl_LocalInvocationIndex % 8u, r = gl_LocalInvocationIndex / 8u;
    uint n = gl_WorkGroupID.x * RPW + r;
    float acc[TT];
    [[unroll]] for (uint t = 0u; t < TT; t++) acc[t] = 0.0;
    if (n < rows) dot_row(acc, n, lane, 8u, t0, nt);
    [[unroll]] for (uint t = 0u; t < TT; t++) part[(r * TT + t) * 8u + lane] = acc[t];
    barrier();
    if (lane == 0u && n < rows) {
        for (uint t = 0u; t < nt; t++) {
            float s = 0.0;
            for (uint l = 0u; l < 8u; l++) s += part[(r * TT + t) * 8u + l];
            STF(2, (t0 + t) * N + n0 + n, s);
        }
    }
#endif
}
