// matmul_id_q.comp - y[p, n] = dot(x_p, w[ids[p], n, :]) for each (token,
// slot) pair p = t * k + s over stacked experts w [E, N, K] in a GGUF block
// type (quant.glsl, constant 5), dequantized inside the dot product (f32
// activations times the f32 weights); x_p = x[t, :], or x[p, :] when
// x_per_slot. An id outside [0, E) gives 0. Two modes (p[7]):
//   0 per pair:  one workgroup per (block of 64 output rows, pair), a tile
//                of one (constant 0 = 1);
//   2 tiles:     after matmul_id.comp's grouping pass (mode 1) has sorted
//                the pairs by expert into the scratch (moe_group.glsl), one
//                workgroup per (block of 64 output rows, tile of up to 4
//                pairs of one expert), constant 0 = 4: each weight unit is
//                decoded once for the tile's pairs.
// As matmul_q.comp, a subgroup (or 8 invocations, summed in lane order
// through shared memory) per row, and q_dot folds a pair's part in the same
// fma sequence whatever the tile's size; each slot's parts are summed by a
// scalar subgroupAdd (or in lane order), the same in both modes: a pair's
// result depends on its own row and expert only, in either mode and whoever
// shares its tile.
// buf: 0 x, 1 w [E, N, K], 2 ids [T, k], 3 y [T, k, N], 4 the grouping
// scratch (mode 2); with constant 2 (quant.glsl QTEX) tex 0 w and tex 1 x
// instead.
// p: 0 pairs, 1 k, 2 K, 3 N, 4 bytes per weight row, 5 E, 6 x_per_slot,
// 7 mode, 8 tiles
#version 450
#include "common.glsl"
#define QW 1
#include "quant.glsl"
#include "moe_group.glsl"
#define RPW 64u
layout(local_size_x = 64) in;

#ifndef ENC_SUBGROUP
shared vec4 part[RPW * 8u];
#endif

// Rows r0 .. r0 + nr of expert e's matrix against activation rows xr
// (constant 0 of them), the result of slot i < count stored at pair pr[i].
void expert_rows(uint e, uint r0, uint nr, uvec4 xr, uvec4 pr, uint count)
{
    uint K = pc.p[2], N = pc.p[3], rb = pc.p[4], wr = e * N + r0;
#ifdef ENC_SUBGROUP
    for (uint r = gl_SubgroupID; r < nr; r += gl_NumSubgroups) {
        vec4 a = q_dot((wr + r) * rb, K, xr, gl_SubgroupInvocationID, gl_SubgroupSize), s = vec4(0.0);
        // one scalar sum per slot: a pair alone (a tile of one) sums only its own
        [[unroll]] for (uint t = 0u; t < TT; t++) s[t] = subgroupAdd(a[t]);
        uint i = gl_SubgroupInvocationID; // lane i < count stores slot i
        if (i < count) STF(3, pr[i] * N + r0 + r, s[i]);
    }
#else
    uint lane = gl_LocalInvocationIndex % 8u;
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u)
        part[r * 8u + lane] = q_dot((wr + r) * rb, K, xr, lane, 8u);
    barrier();
    for (uint r = gl_LocalInvocationIndex / 8u; r < nr; r += 8u) {
        if (lane >= count) continue; // lane i stores slot i
        float s = 0.0;
        for (uint l = 0u; l < 8u; l++) s += part[r * 8u + l][lane];
        STF(3, pr[lane] * N + r0 + r, s);
    }
#endif
}

void main()
{
    uint N = pc.p[3], r0 = gl_WorkGroupID.x * RPW, nr = min(RPW, N - r0);
    if (pc.p[7] == 2u) {
        uint e;
        uvec4 pr, xr;
        uint count = mg_tile(gl_WorkGroupID.y, e, pr, xr);
        if (count != 0u) expert_rows(e, r0, nr, xr, pr, count); // uniform over the workgroup
        return;
    }
    uint p = gl_WorkGroupID.y;
    int e = LDI(2, p);
    if (e >= 0 && uint(e) < pc.p[5]) // uniform over the workgroup
        expert_rows(uint(e), r0, nr, uvec4(mg_xrow(p)), uvec4(p), 1u);
    else
        for (uint r = gl_LocalInvocationIndex; r < nr; r += WG) STF(3, p * N + r0 + r, 0.0);
}
