// rope_neox.comp - NeoX rotary embedding in place on x [T, H, hd]: for each
// (token, head, i < hd/2), a = pos[t] * theta^(-2i/hd),
//   x[i] = x1 cos a - x2 sin a, x[i + hd/2] = x2 cos a + x1 sin a.
// buf: 0 x, 1 positions. p: 0 T, 1 H, 2 hd, 3 log2(theta) (f32 bits)
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint g = linear_id(256u), H = pc.p[1], hd = pc.p[2], half_hd = hd / 2u;
    if (g >= pc.p[0] * H * half_hd) return;
    uint i = g % half_hd, e = g / half_hd, t = e / H;
    float inv_freq = exp2(-float(2u * i) / float(hd) * PF(3));
    float a = float(LDI(1, t)) * inv_freq;
    float c = cos(a), s = sin(a);
    uint base = e * hd;
    float x1 = LDF(0, base + i), x2 = LDF(0, base + i + half_hd);
    STF(0, base + i, x1 * c - x2 * s);
    STF(0, base + i + half_hd, x2 * c + x1 * s);
}
