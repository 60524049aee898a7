// swiglu.comp - out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
// buf: 0 gate, 1 up, 2 out. p: 0 n
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint i = linear_id(256u);
    if (i >= pc.p[0]) return;
    float g = LDF(0, i);
    STF(2, i, g / (1.0 + exp(-g)) * LDF(1, i));
}
