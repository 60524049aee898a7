// store_kv.comp - reshape_and_cache: k, v [T, kv_dim] f32 into the caches at
// slot_mapping[t] (rows of [n_slots, kv_dim] of KV_DT, common.glsl); slot < 0
// writes nothing. One invocation per word of a cache row: an f32 element, or
// two elements rounded to a 16-bit pair (kv_dim is even then).
// buf: 0 k, 1 v, 2 slot_mapping; the caches in windows (common.glsl).
// p: 0 T, 1 kv_dim, 2 slots per window, 3 windows
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint g = linear_id(256u), kv_dim = pc.p[1];
    uint per = KV_DT == DT_F32 ? kv_dim : kv_dim / 2u; // words per cache row
    if (g >= pc.p[0] * per) return;
    uint t = g / per, e = g % per;
    int slot = LDI(2, t);
    if (slot < 0) return;
    uint kw, vw;
    if (KV_DT == DT_F32) {
        kw = buf[0].d[pc.off[0] + g];
        vw = buf[1].d[pc.off[1] + g];
    } else {
        uint i = t * kv_dim + 2u * e;
        kw = kv_pack(buf[0].d[pc.off[0] + i], buf[0].d[pc.off[0] + i + 1u]);
        vw = kv_pack(buf[1].d[pc.off[1] + i], buf[1].d[pc.off[1] + i + 1u]);
    }
    uint spw = pc.p[2];
    if (pc.p[3] == 1u) {
        buf[KV_K].d[uint(slot) * per + e] = kw;
        buf[KV_V].d[uint(slot) * per + e] = vw;
        return;
    }
    kv_st(uint(slot) / spw, (uint(slot) % spw) * per + e, kw, vw);
}
