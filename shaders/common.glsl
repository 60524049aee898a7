// common.glsl - what every encore compute shader shares.
//
// Bindings: one descriptor set of 24 storage buffers seen as arrays of
// 32-bit words. buf[0] .. buf[7] hold tensors (which one where is each
// shader's own, see its header); buf[8 + w] and buf[16 + w] are windows
// w = 0..7 of the K and V caches, `spw` slots each (a cache larger than one
// storage-buffer range is seen through several). Push constants: off[b],
// the word offset of binding b's tensor inside its bound range, and p[],
// the op's integer parameters (floats travel as their bits).
//
// Weights may be bf16 or f16: two per word, the lower address in the low
// half (little-endian), read with ld_w(binding, element index, dtype).
//
// Reductions over a workgroup of WG = 64 invocations (wg_sum, wg_max) run in
// one fixed order for a given device and shader variant: with ENC_SUBGROUP,
// subgroup arithmetic and then the subgroups' partial results in index
// order; without, a shared-memory tree. Either way the result depends only
// on the 64 inputs, never on what other workgroups compute (batch
// invariance).
#extension GL_EXT_control_flow_attributes : enable
#ifdef ENC_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif

#define WG 64u
#define DT_F32 0u
#define DT_BF16 1u
#define DT_F16 2u
#define DT_Q8_0 3u

layout(std430, set = 0, binding = 0) buffer Buf { uint d[]; } buf[24];
// The same buffers seen 16 bytes at a time (aliases of buf[]), for loads
// that move four words at once; index (pc.off[b] + word) / 4.
layout(std430, set = 0, binding = 0) buffer Buf4 { uvec4 d[]; } buf4[24];
// Read-only tensors seen 16 bytes (one R32G32B32A32_UINT texel) at a time
// through texel-buffer views: tex[v] at texel pc.toff[v] + i. (A texel
// fetch is a plain gathered load on every device; on lavapipe it is several
// times cheaper than a storage-buffer load, which runs lane by lane.)
layout(set = 0, binding = 24) uniform usamplerBuffer tex[2];
layout(push_constant) uniform PC { uint off[8]; uint p[16]; uint toff[2]; } pc;
#define LDT(v, i) texelFetch(tex[v], int(pc.toff[v] + (i)))

#define LDF(b, i) uintBitsToFloat(buf[b].d[pc.off[b] + (i)])
#define STF(b, i, v) buf[b].d[pc.off[b] + (i)] = floatBitsToUint(v)
#define LDI(b, i) int(buf[b].d[pc.off[b] + (i)])
#define STI(b, i, v) buf[b].d[pc.off[b] + (i)] = uint(v)
#define PF(i) uintBitsToFloat(pc.p[i])

// Element e (in elements of dtype dt) of the tensor in binding b, as f32.
#define LDW(b, e, dt) ld_w_word(buf[b].d[pc.off[b] + ((dt) == DT_F32 ? (e) : ((e) >> 1u))], (e), (dt))
float ld_w_word(uint word, uint e, uint dt)
{
    if (dt == DT_F32) return uintBitsToFloat(word);
    uint h = (e & 1u) != 0u ? (word >> 16u) : (word & 0xffffu);
    if (dt == DT_BF16) return uintBitsToFloat(h << 16u);
    return unpackHalf2x16(h).x;
}

// The KV caches' element type, specialization constant 3: DT_F32, DT_BF16,
// DT_F16 or DT_Q8_0. Element i of a cache binding is word i (f32), or half
// i % 2 of word i / 2 (16-bit: the lower element in the low half, as
// ld_w_word reads), or value i % 32 of Q8_0 block i / 32 (34 bytes at byte
// 34 (i / 32): the f16 scale d, then 32 int8 q; the value is d * q, exactly
// as base/quant.c dequantizes). Rows are whole blocks, so element i of the
// row-major [slots, kv_dim] cache is in block i / 32 for every type.
layout(constant_id = 3) const uint KV_DT = 0u;
uint kv_q8_byte(uint i) { return (i >> 5u) * 34u + 2u + (i & 31u); }
float kv_q8_value(uint dword, uint qword, uint i)
{
    uint base = (i >> 5u) * 34u, sh = (kv_q8_byte(i) & 3u) * 8u;
    float d = unpackHalf2x16((base & 2u) != 0u ? dword >> 16u : dword & 0xffffu).x;
    return d * float(int(qword << (24u - sh)) >> 24); // the byte, sign-extended
}
#define KV_LD(b, i) (KV_DT == DT_Q8_0 \
        ? kv_q8_value(buf[b].d[((i) >> 5u) * 34u >> 2u], buf[b].d[kv_q8_byte(i) >> 2u], (i)) \
        : ld_w_word(buf[b].d[KV_DT == DT_F32 ? (i) : ((i) >> 1u)], (i), KV_DT))

// f32 -> bf16 / f16 bits, rounded to nearest even exactly as base/dtype.c
// does it on the host (NaN stays NaN, overflow is infinity).
uint f32_to_bf16(uint u)
{
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16u) | 0x40u;
    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}
uint f32_to_f16(uint u)
{
    uint sign = (u >> 16u) & 0x8000u, man = u & 0x7fffffu;
    int e = int((u >> 23u) & 0xffu) - 127 + 15;
    if (((u >> 23u) & 0xffu) == 0xffu) return sign | 0x7c00u | (man != 0u ? 0x200u : 0u);
    if (e >= 31) return sign | 0x7c00u;
    if (e <= 0) { // subnormal or zero
        if (e < -10) return sign;
        man |= 0x800000u;
        uint shift = uint(14 - e), hv = man >> shift;
        uint rem = man & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (hv & 1u) != 0u)) hv++;
        return sign | hv;
    }
    uint hv = sign | (uint(e) << 10u) | (man >> 13u), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (hv & 1u) != 0u)) hv++;
    return hv;
}
// Two f32 (as bits) as one word of the 16-bit cache type KV_DT.
uint kv_pack(uint lo, uint hi)
{
    return KV_DT == DT_BF16 ? f32_to_bf16(lo) | (f32_to_bf16(hi) << 16u)
                            : f32_to_f16(lo) | (f32_to_f16(hi) << 16u);
}

// Element i of KV cache window w (constant indices only: no descriptor
// indexing feature needed).
#define KV_SWITCH(B, w, stmt) \
    switch (w) { \
    case 0u: stmt(B + 0); break; case 1u: stmt(B + 1); break; \
    case 2u: stmt(B + 2); break; case 3u: stmt(B + 3); break; \
    case 4u: stmt(B + 4); break; case 5u: stmt(B + 5); break; \
    case 6u: stmt(B + 6); break; default: stmt(B + 7); break; \
    }
#define KV_K 8
#define KV_V 16
float kv_ld_v(uint w, uint i)
{
    float x = 0.0;
#define KV_LD_(b) x = KV_LD(b, i)
    KV_SWITCH(KV_V, w, KV_LD_)
    return x;
}
// Word i of window w of the K and V caches.
void kv_st(uint w, uint i, uint k, uint v)
{
#define KV_ST_K_(b) buf[b].d[i] = k
#define KV_ST_V_(b) buf[b].d[i] = v
    KV_SWITCH(KV_K, w, KV_ST_K_)
    KV_SWITCH(KV_V, w, KV_ST_V_)
}

shared float red_f[WG];
shared uint red_u[WG];

#ifdef ENC_SUBGROUP
float wg_sum(float v)
{
    v = subgroupAdd(v);
    if (subgroupElect()) red_f[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) s += red_f[i];
    barrier();
    return s;
}

float wg_max(float v)
{
    v = subgroupMax(v);
    if (subgroupElect()) red_f[gl_SubgroupID] = v;
    barrier();
    float m = red_f[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++) m = max(m, red_f[i]);
    barrier();
    return m;
}
#else
float wg_sum(float v)
{
    uint i = gl_LocalInvocationIndex;
    red_f[i] = v;
    barrier();
    [[unroll]] for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (i < s) red_f[i] += red_f[i + s];
        barrier();
    }
    float r = red_f[0];
    barrier();
    return r;
}

float wg_max(float v)
{
    uint i = gl_LocalInvocationIndex;
    red_f[i] = v;
    barrier();
    [[unroll]] for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (i < s) red_f[i] = max(red_f[i], red_f[i + s]);
        barrier();
    }
    float r = red_f[0];
    barrier();
    return r;
}
#endif

// The linear index of this invocation in a 1-D job laid out by the host on
// a 2-D grid of workgroups of `local` invocations (rows of 65535 groups).
uint linear_id(uint local)
{
    return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * local;
}
