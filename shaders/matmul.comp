// matmul.comp - y[t, n] = sum_k x[t, k] * w[n, k] (y = x W^T), for one token
// and for many. One workgroup per weight row n and tile of TT tokens: each
// invocation accumulates k = lid, lid + 64, ... with fma, then wg_sum. Each
// (t, n) has its own accumulator going through the same steps whatever the
// number of tokens, so a token's result does not depend on the batch.
// Output rows are dispatched in windows: row n of the weight binding is
// output column n0 + n.
// buf: 0 x, 1 w, 2 y. p: 0 T, 1 K, 2 N, 3 w dtype, 4 n0
#version 450
#include "common.glsl"
#define TT 8u
layout(local_size_x = 64) in;
void main()
{
    uint n = gl_WorkGroupID.x, t0 = gl_WorkGroupID.y * TT, lid = gl_LocalInvocationIndex;
    uint T = pc.p[0], K = pc.p[1], N = pc.p[2], dt = pc.p[3], n0 = pc.p[4];
    uint nt = min(TT, T - t0);
    float acc[TT];
    [[unroll]] for (uint t = 0u; t < TT; t++) acc[t] = 0.0;
    for (uint k = lid; k < K; k += WG) {
        float w = LDW(1, n * K + k, dt);
        [[unroll]] for (uint t = 0u; t < TT; t++)
            if (t < nt) acc[t] = fma(LDF(0, (t0 + t) * K + k), w, acc[t]);
    }
    [[unroll]] for (uint t = 0u; t < TT; t++) {
        if (t >= nt) break;
        float s = wg_sum(acc[t]);
        if (lid == 0u) STF(2, (t0 + t) * N + n0 + n, s);
    }
}
