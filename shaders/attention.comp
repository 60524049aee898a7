// attention.comp - causal paged attention, prefill and decode alike; one
// workgroup per (query row t, head h). Row t belongs to the sequence s with
// query_start_loc[s] <= t < query_start_loc[s + 1]; as its j-th new row it
// sees cache positions [0, seq_lens[s] - n_q + j], found through the block
// table. Keys go in blocks of 64 (one per invocation): each score is one dot
// product in order d = 0 .. hd-1, then an online softmax (block max, rescale,
// weights summed by wg_sum) and o[d] += w_i v_i[d] in position order. The
// steps depend only on the row's context length, never on the batch. Rows of
// no sequence, or with an empty context, are zero.
// buf: 0 q, 3 block_tables, 4 seq_lens, 5 query_start_loc, 6 out; the
//      caches in windows (common.glsl)
// p: 0 n_seqs, 1 max_blocks, 2 block_size, 3 n_heads, 4 n_kv_heads,
//    5 head_dim (<= 256), 6 scale (f32 bits), 7 slots per window,
//    8 windows (1: the common case, read without choosing a window)
#version 450
#include "common.glsl"
layout(local_size_x = 64) in;
#define HD_MAX 256u
#define PD (HD_MAX / WG)
shared float qs[HD_MAX];
shared float ws[WG];
shared uint slots[WG];

// q . k for the key at word kb of window w, in order d = 0 .. hd-1; the
// window is chosen once per key, not per element.
float key_dot(uint w, uint kb, uint hd)
{
    float dot = 0.0;
#define KEY_DOT_(b) for (uint d = 0u; d < hd; d++) dot = fma(qs[d], uintBitsToFloat(buf[b].d[kb + d]), dot)
    if (pc.p[8] == 1u) {
        KEY_DOT_(KV_K);
        return dot;
    }
    KV_SWITCH(KV_K, w, KEY_DOT_)
    return dot;
}

float value(uint slot, uint spw, uint e)
{
    return pc.p[8] == 1u ? uintBitsToFloat(buf[KV_V].d[slot * pc.p[4] * pc.p[5] + e])
                         : kv_ld_v(slot / spw, (slot % spw) * pc.p[4] * pc.p[5] + e);
}
void main()
{
    uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, lid = gl_LocalInvocationIndex;
    uint n_seqs = pc.p[0], maxb = pc.p[1], bs = pc.p[2], H = pc.p[3], KVH = pc.p[4], hd = pc.p[5];
    uint kv_dim = KVH * hd, kvh = h / (H / KVH), spw = pc.p[7];
    int ctx = 0;
    uint s = 0u;
    for (; s < n_seqs; s++) {
        int q0 = LDI(5, s), q1 = LDI(5, s + 1u);
        if (int(t) >= q0 && int(t) < q1) {
            ctx = LDI(4, s) - (q1 - q0) + (int(t) - q0) + 1;
            break;
        }
    }
    for (uint d = lid; d < hd; d += WG) qs[d] = LDF(0, (t * H + h) * hd + d);
    barrier();
    float m = uintBitsToFloat(0xff800000u), l = 0.0;
    float o[PD];
    [[unroll]] for (uint c = 0u; c < PD; c++) o[c] = 0.0;
    for (int p0 = 0; p0 < ctx; p0 += int(WG)) {
        int pn = min(int(WG), ctx - p0);
        float sc = uintBitsToFloat(0xff800000u);
        if (int(lid) < pn) {
            uint p = uint(p0) + lid;
            uint slot = uint(LDI(3, s * maxb + p / bs)) * bs + p % bs;
            slots[lid] = slot;
            uint w = slot / spw, kb = (slot % spw) * kv_dim + kvh * hd;
            sc = key_dot(w, kb, hd) * PF(6);
        }
        float nm = max(m, wg_max(sc));
        float c = exp(m - nm);
        float w = int(lid) < pn ? exp(sc - nm) : 0.0;
        ws[lid] = w;
        l = l * c + wg_sum(w); // wg_sum's barrier also publishes ws[] and slots[]
        [[unroll]] for (uint k = 0u; k < PD; k++) {
            uint d = lid + k * WG;
            if (d >= hd) break;
            float acc = o[k] * c;
            for (int i = 0; i < pn; i++) acc = fma(ws[i], value(slots[i], spw, kvh * hd + d), acc);
            o[k] = acc;
        }
        m = nm;
        barrier();
    }
    float inv = ctx > 0 ? 1.0 / l : 0.0;
    [[unroll]] for (uint k = 0u; k < PD; k++) {
        uint d = lid + k * WG;
        if (d < hd) STF(6, (t * H + h) * hd + d, o[k] * inv);
    }
}
