// argmax.comp - out[r] = the first index of the largest x[r, :], one
// workgroup per row; a row with nothing above -inf gives 0 (as on the CPU).
// buf: 0 x, 1 out. p: 0 rows, 1 cols
#version 450
#include "common.glsl"
layout(local_size_x = 64) in;
const uint NONE = 0xffffffffu;
void main()
{
    uint r = gl_WorkGroupID.x, cols = pc.p[1], lid = gl_LocalInvocationIndex;
    float m = uintBitsToFloat(0xff800000u); // -inf
    uint best = NONE;
    for (uint j = lid; j < cols; j += WG) {
        float v = LDF(0, r * cols + j);
        if (v > m) { m = v; best = j; }
    }
    red_f[lid] = m;
    red_u[lid] = best;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            float mo = red_f[lid + s];
            uint bo = red_u[lid + s];
            if (bo != NONE && (red_u[lid] == NONE || mo > red_f[lid] || (mo == red_f[lid] && bo < red_u[lid]))) {
                red_f[lid] = mo;
                red_u[lid] = bo;
            }
        }
        barrier();
    }
    if (lid == 0u) STI(1, r, red_u[0] == NONE ? 0u : red_u[0]);
}
