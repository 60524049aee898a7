// attention.comp - causal paged attention, prefill and decode alike; one
// workgroup per (query row t, head h). Row t belongs to the sequence s with
// query_start_loc[s] <= t < query_start_loc[s + 1]; as its j-th new row it
// sees cache positions [0, seq_lens[s] - n_q + j], found through the block
// table. Two variants, each with steps that depend only on the row's context
// length, never on the batch:
//   ENC_SUBGROUP: subgroup g of the workgroup's NS takes the keys p = g,
//     g + NS, ...; lane i owns the dimensions d = i, i + subgroup size, ...
//     (subgroups of 8 to 64 lanes, vk_device.c). Per key: the lanes' parts
//     of q . k (each in order of d) summed by subgroupAdd, an online softmax
//     step, o[d] = o[d] * c + w v[d]. No workgroup barrier until the end,
//     where the NS partial results (m, l, o) are merged in subgroup order
//     through shared memory.
//   fallback: keys in blocks of 64 (one per invocation): each score is one
//     dot product in order d = 0 .. hd-1, then an online softmax (block max,
//     rescale, weights summed by wg_sum) and o[d] += w_i v_i[d] in position
//     order.
// Rows of no sequence, or with an empty context, are zero.
// buf: 0 q, 3 block_tables, 4 seq_lens, 5 query_start_loc, 6 out; the
//      caches in windows (common.glsl)
// p: 0 n_seqs, 1 max_blocks, 2 block_size, 3 n_heads, 4 n_kv_heads,
//    5 head_dim (<= 256), 6 scale (f32 bits), 7 slots per window,
//    8 windows (1: the common case, read without choosing a window),
//    9 texel path (subgroup variant, each cache in one texel view: tex 0 the
//      K cache, tex 1 the V cache): 1 an f32 cache, head_dim a multiple of 4;
//      2 a bf16 or f16 cache, head_dim a multiple of 8; 0 none;
//    specialization constant 0: NT, below
#version 450
#include "common.glsl"
#define HD_MAX 256u
#ifdef ENC_SUBGROUP
// Workgroup size: specialization constant 1 (64, or one subgroup on a CPU
// device, see ONE_SG below).
layout(local_size_x_id = 1) in;
#define SG_DIMS (HD_MAX / 8u) // dimensions per lane, at most (subgroups of >= 8)
#define NS_MAX (WG / 8u)      // subgroups per workgroup, at most
layout(constant_id = 0) const uint NT = 1u; // texels per lane on the texel path (1, 2, 4 or 8)
// ONE_SG (specialization constant 2, with a workgroup of one subgroup): the
// texel path writes its row from registers, with no shared memory, merge or
// barrier. For devices that run a workgroup's subgroups one after another
// (lavapipe): splitting the keys among them gained nothing there, and the
// merge and the barrier cost half of a short-context call.
layout(constant_id = 2) const bool ONE_SG = false;
shared float sg_m[NS_MAX], sg_l[NS_MAX];
shared float sg_o[NS_MAX * HD_MAX];

// A texel of a 16-bit cache: its 8 values, 4 in lo, 4 in hi, in order.
vec2 kv_word16(uint w)
{
    return KV_DT == DT_BF16 ? vec2(uintBitsToFloat(w << 16u), uintBitsToFloat(w & 0xffff0000u)) : unpackHalf2x16(w);
}
void kv_texel16(uvec4 u, out vec4 lo, out vec4 hi)
{
    lo = vec4(kv_word16(u.x), kv_word16(u.y));
    hi = vec4(kv_word16(u.z), kv_word16(u.w));
}

void main()
{
    uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, lid = gl_LocalInvocationIndex;
    uint n_seqs = pc.p[0], maxb = pc.p[1], bs = pc.p[2], H = pc.p[3], KVH = pc.p[4], hd = pc.p[5];
    uint kv_dim = KVH * hd, kvh = h / (H / KVH), spw = pc.p[7];
    uint lane = gl_SubgroupInvocationID, SS = gl_SubgroupSize, g = gl_SubgroupID, NS = gl_NumSubgroups;
    int ctx = 0;
    uint s = 0u;
    for (; s < n_seqs; s++) {
        int q0 = LDI(5, s), q1 = LDI(5, s + 1u);
        if (int(t) >= q0 && int(t) < q1) {
            ctx = LDI(4, s) - (q1 - q0) + (int(t) - q0) + 1;
            break;
        }
    }
    float m = uintBitsToFloat(0xff800000u), l = 0.0;
    uint qb = (t * H + h) * hd;
    if (pc.p[9] == 1u) {
        // The texel path: lane i owns the 16-byte texels e = i, i + SS, ...
        // of a head's row (dimensions 4e .. 4e + 3); K and V come through
        // the texel views tex[0] and tex[1], a whole texel per load. Its
        // loops over the lane's texels run NT times, unrolled, NT
        // (specialization constant 0) chosen by the host from head_dim and
        // the device's subgroup size: lavapipe then keeps q4 and o4 in
        // registers instead of indexing arrays lane by lane (a call on
        // tiny-gqa4-hd128 went from about 400 to 300 us). SPIR-V below 1.6
        // (cmake/vulkan.cmake) guarantees gl_SubgroupSize is that size.
        uint hd4 = hd / 4u, kv4 = kv_dim / 4u;
        vec4 q4[NT], o4[NT];
        [[unroll]] for (uint j = 0u; j < NT; j++) {
            uint e = lane + j * SS;
            q4[j] = e < hd4 ? vec4(LDF(0, qb + 4u * e), LDF(0, qb + 4u * e + 1u), LDF(0, qb + 4u * e + 2u),
                                   LDF(0, qb + 4u * e + 3u))
                            : vec4(0.0);
            o4[j] = vec4(0.0);
        }
        for (int p = int(g); p < ctx; p += int(NS)) {
            uint slot = uint(LDI(3, s * maxb + uint(p) / bs)) * bs + uint(p) % bs;
            uint kt = slot * kv4 + kvh * hd4;
            float part = 0.0;
            [[unroll]] for (uint j = 0u; j < NT; j++) {
                uint e = lane + j * SS;
                if (e < hd4) {
                    vec4 k = uintBitsToFloat(LDT(0, kt + e));
                    part = fma(q4[j].x, k.x, part); part = fma(q4[j].y, k.y, part);
                    part = fma(q4[j].z, k.z, part); part = fma(q4[j].w, k.w, part);
                }
            }
            float sc = subgroupAdd(part) * PF(6);
            float nm = max(m, sc), c = exp(m - nm), ew = exp(sc - nm);
            l = l * c + ew;
            [[unroll]] for (uint j = 0u; j < NT; j++) {
                uint e = lane + j * SS;
                if (e < hd4) o4[j] = fma(vec4(ew), uintBitsToFloat(LDT(1, kt + e)), o4[j] * c);
            }
            m = nm;
        }
        if (ONE_SG) {
            float inv = ctx > 0 ? 1.0 / l : 0.0;
            [[unroll]] for (uint j = 0u; j < NT; j++) {
                uint e = lane + j * SS;
                if (e < hd4)
                    for (uint i = 0u; i < 4u; i++) STF(6, qb + 4u * e + i, o4[j][i] * inv);
            }
            return;
        }
        [[unroll]] for (uint j = 0u; j < NT; j++) {
            uint e = lane + j * SS;
            if (e < hd4)
                for (uint i = 0u; i < 4u; i++) sg_o[g * HD_MAX + 4u * e + i] = o4[j][i];
        }
    } else if (pc.p[9] == 2u) {
        // The 16-bit texel path: as the f32 one, but a texel of the bf16 or
        // f16 cache holds 8 dimensions (8e .. 8e + 7, the lower of each pair
        // in a word's low half), kept as two vec4 (lo: 8e .. 8e + 3); each
        // score adds the lane's products in dimension order.
        uint hd8 = hd / 8u, kv8 = kv_dim / 8u;
        vec4 qlo[NT], qhi[NT], olo[NT], ohi[NT];
        [[unroll]] for (uint j = 0u; j < NT; j++) {
            uint e = lane + j * SS, d = qb + 8u * e;
            qlo[j] = e < hd8 ? vec4(LDF(0, d), LDF(0, d + 1u), LDF(0, d + 2u), LDF(0, d + 3u)) : vec4(0.0);
            qhi[j] = e < hd8 ? vec4(LDF(0, d + 4u), LDF(0, d + 5u), LDF(0, d + 6u), LDF(0, d + 7u)) : vec4(0.0);
            olo[j] = vec4(0.0);
            ohi[j] = vec4(0.0);
        }
        for (int p = int(g); p < ctx; p += int(NS)) {
            uint slot = uint(LDI(3, s * maxb + uint(p) / bs)) * bs + uint(p) % bs;
            uint kt = slot * kv8 + kvh * hd8;
            float part = 0.0;
            [[unroll]] for (uint j = 0u; j < NT; j++) {
                uint e = lane + j * SS;
                if (e < hd8) {
                    vec4 lo, hi;
                    kv_texel16(LDT(0, kt + e), lo, hi);
                    part = fma(qlo[j].x, lo.x, part); part = fma(qlo[j].y, lo.y, part);
                    part = fma(qlo[j].z, lo.z, part); part = fma(qlo[j].w, lo.w, part);
                    part = fma(qhi[j].x, hi.x, part); part = fma(qhi[j].y, hi.y, part);
                    part = fma(qhi[j].z, hi.z, part); part = fma(qhi[j].w, hi.w, part);
                }
            }
            float sc = subgroupAdd(part) * PF(6);
            float nm = max(m, sc), c = exp(m - nm), ew = exp(sc - nm);
            l = l * c + ew;
            [[unroll]] for (uint j = 0u; j < NT; j++) {
                uint e = lane + j * SS;
                if (e < hd8) {
                    vec4 lo, hi;
                    kv_texel16(LDT(1, kt + e), lo, hi);
                    olo[j] = fma(vec4(ew), lo, olo[j] * c);
                    ohi[j] = fma(vec4(ew), hi, ohi[j] * c);
                }
            }
            m = nm;
        }
        float inv = ONE_SG && ctx > 0 ? 1.0 / l : 1.0; // ONE_SG: the row itself, else this subgroup's part
        [[unroll]] for (uint j = 0u; j < NT; j++) {
            uint e = lane + j * SS;
            if (e < hd8)
                for (uint i = 0u; i < 4u; i++) {
                    if (ONE_SG) {
                        STF(6, qb + 8u * e + i, olo[j][i] * inv);
                        STF(6, qb + 8u * e + 4u + i, ohi[j][i] * inv);
                    } else {
                        sg_o[g * HD_MAX + 8u * e + i] = olo[j][i];
                        sg_o[g * HD_MAX + 8u * e + 4u + i] = ohi[j][i];
                    }
                }
        }
        if (ONE_SG) return;
    } else {
        // the lane's dimensions are d = lane + j * SS, j < nj; the loops over j
        // are not unrolled: lavapipe runs an unrolled loop's unused iterations
        // (with every lane masked off), which took 2-4x as long. (Loading four
        // dimensions at a time as a vec4 was slower too.)
        uint nj = (hd + SS - 1u) / SS;
        float qv[SG_DIMS], o[SG_DIMS];
        [[dont_unroll]] for (uint j = 0u; j < nj; j++) {
            uint d = lane + j * SS;
            qv[j] = d < hd ? LDF(0, qb + d) : 0.0;
            o[j] = 0.0;
        }
#define KEY_PART_(b) [[dont_unroll]] for (uint j = 0u; j < nj; j++) { \
                uint d = lane + j * SS; \
                if (d < hd) part = fma(qv[j], KV_LD(b, kb + d), part); }
#define VAL_ACC_(b) [[dont_unroll]] for (uint j = 0u; j < nj; j++) { \
                uint d = lane + j * SS; \
                if (d < hd) o[j] = fma(e, KV_LD(b, kb + d), o[j] * c); }
        // The keys, with the caches read through binding KEYS(KV_K) and VALUES(KV_V).
#define KEY_LOOP_(KEYS, VALUES) \
        for (int p = int(g); p < ctx; p += int(NS)) { \
            uint slot = uint(LDI(3, s * maxb + uint(p) / bs)) * bs + uint(p) % bs; \
            uint w = slot / spw, kb = (slot % spw) * kv_dim + kvh * hd; \
            float part = 0.0; \
            KEYS(KV_K) \
            float sc = subgroupAdd(part) * PF(6); \
            float nm = max(m, sc), c = exp(m - nm), e = exp(sc - nm); \
            l = l * c + e; \
            VALUES(KV_V) \
            m = nm; \
        }
#define KEY_PART_W_(B) KV_SWITCH(B, w, KEY_PART_)
#define VAL_ACC_W_(B) KV_SWITCH(B, w, VAL_ACC_)
        // One window (the common case) or several, chosen outside the loop:
        // lavapipe runs both sides of an `if`, so a choice per key cost every key
        // the eight windows' loops.
        if (pc.p[8] == 1u) {
            KEY_LOOP_(KEY_PART_, VAL_ACC_)
        } else {
            KEY_LOOP_(KEY_PART_W_, VAL_ACC_W_)
        }
        [[dont_unroll]] for (uint j = 0u; j < nj; j++) {
            uint d = lane + j * SS;
            if (d < hd) sg_o[g * HD_MAX + d] = o[j];
        }
    }
    if (lane == 0u) {
        sg_m[g] = m;
        sg_l[g] = l;
    }
    barrier();
    if (ctx <= 0) { // subgroup 0 has position 0 otherwise: mx below is finite
        for (uint d = lid; d < hd; d += gl_WorkGroupSize.x) STF(6, qb + d, 0.0);
        return;
    }
    // each subgroup's weight exp(m_i - max) once, not once per dimension
    // (shared-memory loads run lane by lane on lavapipe)
    float mx = sg_m[0], sum = 0.0, wsub[NS_MAX];
    for (uint i = 1u; i < NS; i++) mx = max(mx, sg_m[i]);
    [[unroll]] for (uint i = 0u; i < NS_MAX; i++) {
        wsub[i] = i < NS ? exp(sg_m[i] - mx) : 0.0;
        if (i < NS) sum = fma(sg_l[i], wsub[i], sum);
    }
    float inv = 1.0 / sum;
    for (uint d = lid; d < hd; d += gl_WorkGroupSize.x) {
        float acc = 0.0;
        [[unroll]] for (uint i = 0u; i < NS_MAX; i++)
            if (i < NS) acc = fma(sg_o[i * HD_MAX + d], wsub[i], acc);
        STF(6, qb + d, acc * inv);
    }
}
#else
layout(local_size_x = 64) in;
#define PD (HD_MAX / WG)
shared float qs[HD_MAX];
shared float ws[WG];
shared uint slots[WG];

// q . k for the key at word kb of window w, in order d = 0 .. hd-1; the
// window is chosen once per key, not per element.
float key_dot(uint w, uint kb, uint hd)
{
    float dot = 0.0;
#define KEY_DOT_(b) for (uint d = 0u; d < hd; d++) dot = fma(qs[d], KV_LD(b, kb + d), dot)
    if (pc.p[8] == 1u) {
        KEY_DOT_(KV_K);
        return dot;
    }
    KV_SWITCH(KV_K, w, KEY_DOT_)
    return dot;
}

float value(uint slot, uint spw, uint e)
{
    return pc.p[8] == 1u ? KV_LD(KV_V, slot * pc.p[4] * pc.p[5] + e)
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
#endif
