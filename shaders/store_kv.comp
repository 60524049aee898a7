// store_kv.comp - reshape_and_cache: k, v [T, kv_dim] into the caches at
// slot_mapping[t] (rows of [n_slots, kv_dim]); slot < 0 writes nothing.
// buf: 0 k, 1 v, 2 slot_mapping; the caches in windows (common.glsl).
// p: 0 T, 1 kv_dim, 2 slots per window, 3 windows
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint g = linear_id(256u), kv_dim = pc.p[1];
    if (g >= pc.p[0] * kv_dim) return;
    uint t = g / kv_dim, e = g % kv_dim;
    int slot = LDI(2, t);
    if (slot < 0) return;
    uint spw = pc.p[2];
    if (pc.p[3] == 1u) {
        buf[KV_K].d[uint(slot) * kv_dim + e] = floatBitsToUint(LDF(0, g));
        buf[KV_V].d[uint(slot) * kv_dim + e] = floatBitsToUint(LDF(1, g));
        return;
    }
    kv_st(uint(slot) / spw, (uint(slot) % spw) * kv_dim + e, LDF(0, g), LDF(1, g));
}
