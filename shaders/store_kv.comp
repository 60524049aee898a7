// store_kv.comp - reshape_and_cache: k, v [T, kv_dim] f32 into the caches at
// slot_mapping[t] (rows of [n_slots, kv_dim] of KV_DT, common.glsl); slot < 0
// writes nothing. One invocation per word of a cache row: an f32 element, or
// two elements rounded to a 16-bit pair (kv_dim is even then); for a Q8_0
// cache one invocation per block of 32 values (kv_dim a multiple of 32).
// buf: 0 k, 1 v, 2 slot_mapping; the caches in windows (common.glsl).
// p: 0 T, 1 kv_dim, 2 slots per window, 3 windows
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;

// A Q8_0 block of x as 17 halves: the f16 scale, then the int8 pairs (lower
// index in the low byte). base/quant.c's formula, step by step: d = amax /
// 127, id = 1 / d (0 for d = 0), q = x id rounded half away from zero; the
// scale stored is d rounded to f16 (the quants use the unrounded d). `precise`
// keeps the compiler from fusing x id into the subtraction.
void q8_block(float x[32], out uint h[17])
{
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = abs(x[j]) > amax ? abs(x[j]) : amax;
    precise float d = amax / 127.0;
    precise float id = d != 0.0 ? 1.0 / d : 0.0;
    h[0] = f32_to_f16(floatBitsToUint(d));
    for (uint j = 0u; j < 16u; j++) {
        uint pair = 0u;
        for (uint k = 0u; k < 2u; k++) {
            precise float v = x[2u * j + k] * id;
            int q = int(v);
            precise float fr = v - float(q);
            q += (fr >= 0.5 ? 1 : 0) - (fr <= -0.5 ? 1 : 0);
            pair |= (uint(q) & 0xffu) << (8u * k);
        }
        h[1u + j] = pair;
    }
}

// The 17 halves of a block at byte ob (even) of a window: 8 words it owns
// whole, and one half of the word it shares with its neighbour, replaced
// atomically (the neighbour may write the other half at the same time).
#define Q8_ST_(B) { \
        for (uint j = 0u; j < 8u; j++) buf[B].d[w0 + lead + j] = h[lead + 2u * j] | (h[lead + 2u * j + 1u] << 16u); \
        atomicAnd(buf[B].d[we], keep); \
        atomicOr(buf[B].d[we], bits); }
void q8_store(uint cache, uint w, uint ob, uint h[17])
{
    uint w0 = ob >> 2u, lead = (ob & 2u) >> 1u;
    uint we = lead == 1u ? w0 : w0 + 8u, keep = lead == 1u ? 0x0000ffffu : 0xffff0000u;
    uint bits = lead == 1u ? h[0] << 16u : h[16];
    if (cache == 0u) {
        KV_SWITCH(KV_K, w, Q8_ST_)
    } else {
        KV_SWITCH(KV_V, w, Q8_ST_)
    }
}

void store_q8(uint g)
{
    uint kv_dim = pc.p[1], nb = kv_dim / 32u;
    if (g >= pc.p[0] * nb) return;
    uint t = g / nb, blk = g % nb;
    int slot = LDI(2, t);
    if (slot < 0) return;
    uint spw = pc.p[2], w = uint(slot) / spw, ob = (uint(slot) % spw) * nb * 34u + blk * 34u;
    float x[32];
    uint h[17];
    for (uint j = 0u; j < 32u; j++) x[j] = LDF(0, t * kv_dim + blk * 32u + j);
    q8_block(x, h);
    q8_store(0u, w, ob, h);
    for (uint j = 0u; j < 32u; j++) x[j] = LDF(1, t * kv_dim + blk * 32u + j);
    q8_block(x, h);
    q8_store(1u, w, ob, h);
}

void main()
{
    uint g = linear_id(256u), kv_dim = pc.p[1];
    if (KV_DT == DT_Q8_0) {
        store_q8(g);
        return;
    }
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
