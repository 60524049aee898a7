// add.comp - out[i] = a[i] + b[i] (out may alias a or b).
// buf: 0 a, 1 b, 2 out. p: 0 n
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint i = linear_id(256u);
    if (i >= pc.p[0]) return;
    STF(2, i, LDF(0, i) + LDF(1, i));
}
