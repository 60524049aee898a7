// rope_neox.comp - NeoX rotary embedding in place on x [T, H, hd]: for each
// (token, head, i < hd/2), a = pos[t] * inv_freq(i), m the attention factor,
//   x[i] = x1 m cos a - x2 m sin a, x[i + hd/2] = x2 m cos a + x1 m sin a,
// inv_freq(i) = theta^(-2i/hd) (1 - ramp(i) (1 - 1/factor)), ramp(i) =
// clamp((i - low) / (high - low), 0, 1) (base/rope.h: plain RoPE has factor
// 1 and m 1, so inv_freq is theta^(-2i/hd) and m changes nothing).
// buf: 0 x, 1 positions. p: 0 T, 1 H, 2 hd, 3 log2(theta), 4 1 - 1/factor,
// 5 low, 6 high - low, 7 m (f32 bits)
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint g = linear_id(256u), H = pc.p[1], hd = pc.p[2], half_hd = hd / 2u;
    if (g >= pc.p[0] * H * half_hd) return;
    uint i = g % half_hd, e = g / half_hd, t = e / H;
    float ramp = clamp((float(i) - PF(5)) / PF(6), 0.0, 1.0);
    float inv_freq = exp2(-float(2u * i) / float(hd) * PF(3)) * (1.0 - ramp * PF(4));
    float a = float(LDI(1, t)) * inv_freq;
    float c = cos(a) * PF(7), s = sin(a) * PF(7);
    uint base = e * hd;
    float x1 = LDF(0, base + i), x2 = LDF(0, base + i + half_hd);
    STF(0, base + i, x1 * c - x2 * s);
    STF(0, base + i + half_hd, x2 * c + x1 * s);
}
