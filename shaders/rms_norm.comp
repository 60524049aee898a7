// rms_norm.comp - y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w[:],
// one workgroup per row (y may be x).
// buf: 0 x, 1 w, 2 y. p: 0 rows, 1 dim, 2 eps (f32 bits), 3 first row
#version 450
#include "common.glsl"
layout(local_size_x = 64) in;
void main()
{
    uint r = gl_WorkGroupID.x + pc.p[3], dim = pc.p[1], lid = gl_LocalInvocationIndex;
    float ss = 0.0;
    for (uint i = lid; i < dim; i += WG) {
        float v = LDF(0, r * dim + i);
        ss = fma(v, v, ss);
    }
    ss = wg_sum(ss);
    float inv = 1.0 / sqrt(ss / float(dim) + PF(2));
    for (uint i = lid; i < dim; i += WG) STF(2, r * dim + i, LDF(0, r * dim + i) * inv * LDF(1, i));
}
