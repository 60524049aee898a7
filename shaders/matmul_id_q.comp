// matmul_id_q.comp - y[p, n] = dot(x_p, w[ids[p], n, :]) for each (token,
// slot) pair p = t * k + s over stacked experts w [E, N, K] in a GGUF block
// type (quant.glsl, constant 5), dequantized inside the dot product (f32
// activations times the f32 weights); x_p = x[t, :], or x[p, :] when
// x_per_slot. One workgroup per (block of 64 output rows, pair): as
// matmul_q.comp with a tile of one token, a subgroup (or 8 invocations,
// summed in lane order through shared memory) per row. A pair's result
// depends on its own row and expert only. An id outside [0, E) gives 0.
// buf: 0 x, 1 w [E, N, K], 2 ids [T, k], 3 y [T, k, N]; with constant 2
// (quant.glsl QTEX) tex 0 w and tex 1 x instead.
// p: 0 pairs, 1 k, 2 K, 3 N, 4 bytes per weight row, 5 E, 6 x_per_slot
#version 450
#include "common.glsl"
#define QW 1
#include "quant.glsl"
#define RPW 64u
layout(local_size_x = 64) in;

#ifndef ENC_SUBGROUP
shared float part[RPW * 8u];
#endif

void main()
{
    uint p = gl_WorkGroupID.y, k = pc.p[1], K = pc.p[2], N = pc.p[3], rb = pc.p[4];
    uint r0 = gl_WorkGroupID.x * RPW, nr = min(RPW, N - r0);
    int e = LDI(2, p);
    bool valid = e >= 0 && uint(e) < pc.p[5]; // uniform over the workgroup
    uint xr = (pc.p[6] != 0u ? p : p / k) * K, wr = valid ? uint(e) * N : 0u;
#ifdef ENC_SUBGROUP
    for (uint r = gl_SubgroupID; r < nr; r += gl_NumSubgroups) {
        float s = valid ? subgroupAdd(q_dot((wr + r0 + r) * rb, K, uvec4(xr), gl_SubgroupInvocationID, gl_SubgroupSize).x) : 0.0;
        if (subgroupElect()) STF(3, p * N + r0 + r, s);
    }
#else
    uint lane = gl_LocalInvocationIndex % 8u;
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u)
        part[r * 8u + lane] = valid ? q_dot((wr + r0 + r) * rb, K, uvec4(xr), lane, 8u).x : 0.0;
    barrier();
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u) {
        if (lane != 0u) continue;
        float s = 0.0;
        for (uint l = 0u; l < 8u; l++) s += part[r * 8u + l];
        STF(3, p * N + r0 + r, s);
    }
#endif
}
