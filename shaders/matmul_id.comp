// matmul_id.comp - y[p, n] = dot(x_p, w[ids[p], n, :]) for each (token,
// slot) pair p = t * k + s: x_p = x[t, :], or x[p, :] when x_per_slot. An id
// outside [0, E) gives 0. Three modes (p[7]):
//   0 per pair:  one workgroup per (output n, pair p);
//   1 group:     one workgroup sorts the pairs by expert into the scratch
//                (moe_group.glsl): the pair indices in expert order, then a
//                table of tiles of at most TP pairs of one expert, and
//                zeroes the rows of bad ids (matmul_id_q.comp's tiles read
//                the same scratch: this pass groups for both);
//   2 tiles:     one workgroup per (output n, tile): the weight element is
//                loaded once for the tile's TP pairs.
// In modes 0 and 2 every output is the same dot: lane l fmas elements l,
// l + 64, ... in order, wg_sum adds the lanes in its fixed order, so a
// pair's result depends on its own row and expert only, whichever mode ran
// and whoever shared its tile (batch invariance).
// buf: 0 x, 1 w [E, N, K] (f32/bf16/f16), 2 ids [T, k], 3 y [T, k, N],
// 4 the grouping scratch (modes 1, 2).
// p: 0 pairs, 1 k, 2 K, 3 N, 4 dtype, 5 E, 6 x_per_slot, 7 mode, 8 tiles
#version 450
#include "common.glsl"
#include "moe_group.glsl"
#define TP MG_TP
layout(local_size_x = 64) in;

shared uint at[512]; // mode 1: pairs per expert, then each expert's next position

bool bad_id(int e) { return e < 0 || uint(e) >= pc.p[5]; }

void per_pair()
{
    uint n = gl_WorkGroupID.x, p = gl_WorkGroupID.y, lid = gl_LocalInvocationIndex;
    uint K = pc.p[2], N = pc.p[3], dt = pc.p[4];
    int e = LDI(2, p);
    if (bad_id(e)) { // uniform over the workgroup
        if (lid == 0u) STF(3, p * N + n, 0.0);
        return;
    }
    uint xr = mg_xrow(p), wr = (uint(e) * N + n) * K;
    float acc = 0.0;
    for (uint i = lid; i < K; i += WG) acc = fma(LDF(0, xr + i), LDW(1, wr + i, dt), acc);
    float s = wg_sum(acc);
    if (lid == 0u) STF(3, p * N + n, s);
}

void group()
{
    uint P = pc.p[0], N = pc.p[3], E = pc.p[5], lid = gl_LocalInvocationIndex;
    for (uint p = 0u; p < P; p++)
        if (bad_id(LDI(2, p)))
            for (uint n = lid; n < N; n += WG) STF(3, p * N + n, 0.0);
    if (lid != 0u) return;
    for (uint e = 0u; e < E; e++) at[e] = 0u;
    for (uint p = 0u; p < P; p++) {
        int e = LDI(2, p);
        if (!bad_id(e)) at[e]++;
    }
    uint pos = 0u, tile = 0u;
    for (uint e = 0u; e < E; e++) {
        uint c = at[e];
        at[e] = pos;
        for (uint j = 0u; j < c; j += TP) mg_put_tile(tile++, pos + j, e, min(TP, c - j));
        pos += c;
    }
    for (; tile < pc.p[8]; tile++) mg_put_tile(tile, 0u, 0u, 0u);
    for (uint p = 0u; p < P; p++) {
        int e = LDI(2, p);
        if (!bad_id(e)) STI(MG_BUF, at[e]++, p);
    }
}

void tiles()
{
    uint n = gl_WorkGroupID.x, lid = gl_LocalInvocationIndex;
    uint K = pc.p[2], N = pc.p[3], dt = pc.p[4], e;
    uvec4 pr, xr; // pairs past count repeat the last; their results are dropped
    uint count = mg_tile(gl_WorkGroupID.y, e, pr, xr);
    if (count == 0u) return; // uniform over the workgroup
    uint wr = (e * N + n) * K;
    vec4 acc = vec4(0.0);
    for (uint i = lid; i < K; i += WG) {
        float w = LDW(1, wr + i, dt);
        acc.x = fma(LDF(0, xr.x + i), w, acc.x);
        acc.y = fma(LDF(0, xr.y + i), w, acc.y);
        acc.z = fma(LDF(0, xr.z + i), w, acc.z);
        acc.w = fma(LDF(0, xr.w + i), w, acc.w);
    }
    [[unroll]] for (uint q = 0u; q < TP; q++) {
        float s = wg_sum(acc[q]);
        if (lid == 0u && q < count) STF(3, pr[q] * N + n, s);
    }
}

void main()
{
    if (pc.p[7] == 0u)
        per_pair();
    else if (pc.p[7] == 1u)
        group();
    else
        tiles();
}
