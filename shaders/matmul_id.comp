// matmul_id.comp - y[p, n] = dot(x_p, w[ids[p], n, :]) for each (token,
// slot) pair p = t * k + s: x_p = x[t, :], or x[p, :] when x_per_slot. One
// workgroup per (output n, pair p): lanes take strided elements of the row,
// wg_sum adds them in its fixed order, so a pair's result depends on its
// own row and expert only. An id outside [0, E) gives 0.
// buf: 0 x, 1 w [E, N, K] (f32/bf16/f16), 2 ids [T, k], 3 y [T, k, N].
// p: 0 pairs, 1 k, 2 K, 3 N, 4 dtype, 5 E, 6 x_per_slot
#version 450
#include "common.glsl"
layout(local_size_x = 64) in;
void main()
{
    uint n = gl_WorkGroupID.x, p = gl_WorkGroupID.y, lid = gl_LocalInvocationIndex;
    uint k = pc.p[1], K = pc.p[2], N = pc.p[3], dt = pc.p[4];
    int e = LDI(2, p);
    if (e < 0 || uint(e) >= pc.p[5]) { // uniform over the workgroup
        if (lid == 0u) STF(3, p * N + n, 0.0);
        return;
    }
    uint xrow = (pc.p[6] != 0u ? p : p / k) * K, wrow = (uint(e) * N + n) * K;
    float acc = 0.0;
    for (uint i = lid; i < K; i += WG) acc += LDF(0, xrow + i) * LDW(1, wrow + i, dt);
    float s = wg_sum(acc);
    if (lid == 0u) STF(3, p * N + n, s);
}
