// moe_sum.comp - out[t, i] = sum over s < k, in order, of w[t, s] * y[t, s, i];
// one invocation per output element.
// buf: 0 y [T, k, N], 1 w [T, k], 2 out [T, N]. p: 0 T, 1 k, 2 N
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint j = linear_id(256u), k = pc.p[1], N = pc.p[2];
    if (j >= pc.p[0] * N) return;
    uint t = j / N, i = j % N;
    float o = 0.0;
    for (uint s = 0u; s < k; s++) o += LDF(1, t * k + s) * LDF(0, (t * k + s) * N + i);
    STF(2, j, o);
}
