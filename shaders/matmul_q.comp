// matmul_q.comp - y[t, n] = sum_k x[t, k] * w[n, k] for weights w [N, K] in
// a GGUF block type (quant.glsl, constant 5), read in their stored blocks
// and dequantized inside the dot product: f32 activations times the f32
// value of each weight. A workgroup of 64 invocations computes RPW = 64
// weight rows for a tile of TT tokens (constant 0: 1 for a decode step, 2
// or 4 for more tokens), decoding each weight unit once for the tile:
//   ENC_SUBGROUP: a subgroup per row, lanes stride over the row's units,
//                 subgroupAdd;
//   fallback:     8 invocations per row, summed in lane order through
//                 shared memory.
// Each (t, n) is the same dot product in the same order whatever the tile
// size and the number of tokens: a token's result does not depend on what
// else is in the step. Tokens past T in the last tile repeat token T - 1
// and store nothing. Output rows come in windows: row n of the weight
// binding is column n0 + n.
// buf: 0 x [T, K] f32, 1 w (this window), 2 y [T, N]; with constant 2
// (quant.glsl QTEX) tex 0 w (this window) and tex 1 x instead.
// p: 0 T, 1 K, 2 N (all columns), 3 bytes per weight row, 4 n0, 5 rows in
// this window
#version 450
#include "common.glsl"
#define QW 1
#include "quant.glsl"
#define RPW 64u
layout(local_size_x = 64) in;

#ifndef ENC_SUBGROUP
shared vec4 part[RPW * 8u];
#endif

void main()
{
    uint T = pc.p[0], K = pc.p[1], N = pc.p[2], rb = pc.p[3], n0 = pc.p[4];
    uint r0 = gl_WorkGroupID.x * RPW, nr = min(RPW, pc.p[5] - r0), t0 = gl_WorkGroupID.y * TT;
    uvec4 xr = uvec4(min(t0, T - 1u), min(t0 + 1u, T - 1u), min(t0 + 2u, T - 1u), min(t0 + 3u, T - 1u)) * K;
#ifdef ENC_SUBGROUP
    for (uint r = gl_SubgroupID; r < nr; r += gl_NumSubgroups) {
        vec4 s = subgroupAdd(q_dot((r0 + r) * rb, K, xr, gl_SubgroupInvocationID, gl_SubgroupSize));
        uint i = gl_SubgroupInvocationID; // lane i < TT stores token t0 + i
        if (i < TT && t0 + i < T) STF(2, (t0 + i) * N + n0 + r0 + r, s[i]);
    }
#else
    uint lane = gl_LocalInvocationIndex % 8u;
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u) part[r * 8u + lane] = q_dot((r0 + r) * rb, K, xr, lane, 8u);
    barrier();
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u) {
        if (lane >= TT || t0 + lane >= T) continue; // lane i stores token t0 + i
        float s = 0.0;
        for (uint l = 0u; l < 8u; l++) s += part[r * 8u + l][lane];
        STF(2, (t0 + lane) * N + n0 + r0 + r, s);
    }
#endif
}
