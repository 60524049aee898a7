// rms_norm.comp - y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w[:]
// (y may be x). The sum of squares: with ENC_SUBGROUP, a subgroup per row
// (8 rows per workgroup, each subgroup taking rows g, g + number of
// subgroups, ...), lanes striding by the subgroup size, subgroupAdd: no
// workgroup barrier, and the per-head norms of a decode step take one
// workgroup; otherwise one workgroup per row, wg_sum. Either way a row's
// result depends only on the row.
// buf: 0 x, 1 w, 2 y. p: 0 rows, 1 dim, 2 eps (f32 bits), 3 first row
#version 450
#include "common.glsl"
layout(local_size_x = 64) in;
#ifdef ENC_SUBGROUP
#define RPW 8u // vk_ops.c: VK__NORM_RPW_SUBGROUP
void main()
{
    uint dim = pc.p[1], lane = gl_SubgroupInvocationID, SS = gl_SubgroupSize;
    for (uint i = gl_SubgroupID; i < RPW; i += gl_NumSubgroups) {
        uint r = pc.p[3] + gl_WorkGroupID.x * RPW + i;
        if (r >= pc.p[0]) break;
        float ss = 0.0;
        for (uint k = lane; k < dim; k += SS) {
            float v = LDF(0, r * dim + k);
            ss = fma(v, v, ss);
        }
        ss = subgroupAdd(ss);
        float inv = 1.0 / sqrt(ss / float(dim) + PF(2));
        for (uint k = lane; k < dim; k += SS) STF(2, r * dim + k, LDF(0, r * dim + k) * inv * LDF(1, k));
    }
}
#else
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
#endif
