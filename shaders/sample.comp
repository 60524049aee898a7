// sample.comp - the device sampler (GRAPH_OP_SAMPLE): each row's token under
// its own parameters (src/graph/sample_row.h), by the rules, the order and
// the arithmetic of the CPU kernel (src/backend/cpu/kernels_sample.c), so
// that both choose the same ids and write the same logprobs records bit for
// bit. One workgroup per row: dispatch d runs rows
// d x workers + w in workgroups w = 0 .. workers - 1, each in its slice of
// the scratch (a barrier between dispatches). One row per dispatch also
// keeps lavapipe's bound on loop trips (65535 per invocation and
// dispatch, over all loops) out of reach: with 1024 invocations a row of
// 151936 ids takes about 50000 trips at worst (a flat row whose top-p bin
// holds most of them); 256 invocations (cheaper to start on lavapipe, which
// runs a workgroup as coroutines of 8 lanes and pays each barrier on every
// one) serve up to 32768 ids, 64 up to 4096 (8 up to 1024 on a CPU device,
// one coroutine). No result depends on the count: every loop that splits
// work over the invocations strides by NT.
//
// buf: 0 logits [S, V] f32 (rows overwritten by the bias, penalties and masks),
//      1 params [S, ROW_WORDS], 2 positions [S], 3 history [S, H],
//      4 scratch [workers, stride], 5 logprobs [S, LP_WORDS] (or nothing),
//      6 mask [S, (V + 31) / 32] (or nothing), 7 out [S]
// p:   0 S, 1 V, 2 H, 3 workers, 4 has logprobs, 5 has mask, 6 stride (words),
//      7 the dispatch's first row
//
// A worker's scratch slice, in words (stride >= 12 V + 128):
//   [0, 2V)   w: the weights, doubles      [2V, 3V)  the raw row (logprobs)
//   [3V, 4V)  token counts (penalties)     [4V, ...) C: the candidates of a
//   sorted bin {w, id, -} (four words each, at most 2V), or the per-chunk
//   parts of the masses (doubles, 64 per chunk) and of one bin (one per chunk)
//
// Every sum runs in the CPU's order: a chunk of 256 ids is added in id order
// by one invocation, the chunk sums in chunk order by one invocation, the
// bins in bin order; integer atomics only count. Top-k's cut is the k-th
// largest weight, found by a radix select over the weights' bits; top-p's
// boundary bin is sorted whole (weight descending, id ascending; a bitonic
// network) and walked by one invocation, as the CPU walks its buckets.
#version 450
#include "common.glsl"
#include "sample_math.glsl"
// The workgroup: 64 invocations up to 4096 ids (8 up to 1024 on a CPU
// device), 256 up to 32768, else 1024 (specialization constant 4; vk_ops.c
// chooses).
layout(local_size_x_id = 4) in;

#define NT gl_WorkGroupSize.x
#define NT_MAX 1024u
#define NONE 0xffffffffu
#define NEG_INF uintBitsToFloat(0xff800000u)
#define POS_INF uintBitsToFloat(0x7f800000u)
#define D_INF packDouble2x32(uvec2(0u, 0x7ff00000u))
// graph_sample_row's words (vk_ops.c asserts them against the struct)
#define RW_TEMP 0u
#define RW_TOP_P 2u
#define RW_MIN_P 4u
#define RW_REP 6u
#define RW_PRES 8u
#define RW_FREQ 10u
#define RW_SEED 12u
#define RW_TOP_K 14u
#define RW_N_PROMPT 15u
#define RW_MIN_TOKENS 16u
#define RW_N_SAMPLE 17u
#define RW_N_MASK 18u
#define RW_FLAGS 19u
#define RW_N_TOP 20u
#define RW_MASK_IDS 21u
#define RW_N_BIAS 53u
#define RW_BIAS 54u // {id, f32 bias} pairs
#define ROW_WORDS 654u
#define LP_WORDS 43u
#define MAX_TOP 20
#define MAX_MASK 32
#define MAX_BIAS 300
#define F_PEN 1
#define F_LP 2
#define F_MASKED 4
#define PROMPT_BIT 0x40000000u

shared double s_mass[SM_BINS];
shared uint s_count[SM_BINS];
shared uint s_u;
shared float s_rf[NT_MAX];
shared uint s_ru[NT_MAX];
shared int s_top[MAX_TOP];
shared float s_toplp[MAX_TOP];
shared uint s_hist[256];
shared double s_walk_acc;
shared uint s_walk_r;
#define WALK_SEG 16384u

uint lid, g_row, g_V, g_base;

struct Cut {
    double w; // ids of weight above it are kept
    int id;   // and those of weight equal to it up to this id
};

void sync()
{
    groupMemoryBarrier();
    barrier();
}

// --- the row, the scratch --------------------------------------------------

#define SCR(i) buf[4].d[pc.off[4] + g_base + (i)]
float ld_x(uint i) { return LDF(0, g_row * g_V + i); }
void st_x(uint i, float v) { STF(0, g_row * g_V + i, v); }
uint prm(uint w) { return buf[1].d[pc.off[1] + g_row * ROW_WORDS + w]; }
double prm_d(uint w) { return packDouble2x32(uvec2(prm(w), prm(w + 1u))); }
double ld_w(uint i) { return packDouble2x32(uvec2(SCR(2u * i), SCR(2u * i + 1u))); }
void st_w(uint i, double v)
{
    uvec2 u = unpackDouble2x32(v);
    SCR(2u * i) = u.x;
    SCR(2u * i + 1u) = u.y;
}
#define RAW(i) SCR(2u * g_V + (i))
#define CNT(i) SCR(3u * g_V + (i))
#define CW(j) SCR(4u * g_V + (j))
double ld_part(uint j) { return packDouble2x32(uvec2(CW(2u * j), CW(2u * j + 1u))); }
void st_part(uint j, double v)
{
    uvec2 u = unpackDouble2x32(v);
    CW(2u * j) = u.x;
    CW(2u * j + 1u) = u.y;
}
double cand_w(uint k) { return packDouble2x32(uvec2(CW(4u * k), CW(4u * k + 1u))); }
uint cand_id(uint k) { return CW(4u * k + 2u); }
void st_cand(uint k, double w, uint id)
{
    uvec2 u = unpackDouble2x32(w);
    CW(4u * k) = u.x;
    CW(4u * k + 1u) = u.y;
    CW(4u * k + 2u) = id;
}

bool kept(uint i, Cut c)
{
    double w = ld_w(i);
    return w > 0.0lf && (w > c.w || (w == c.w && int(i) <= c.id));
}

// --- argmax, top ids ---------------------------------------------------------

// Merge (v, i) candidates over the workgroup: the larger value, then the
// lower id; NONE is no candidate. Returns the winner's id.
uint reduce_best(float v, uint i)
{
    s_rf[lid] = v;
    s_ru[lid] = i;
    sync();
    for (uint s = NT / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            float vo = s_rf[lid + s];
            uint io = s_ru[lid + s];
            if (io != NONE && (s_ru[lid] == NONE || vo > s_rf[lid] || (vo == s_rf[lid] && io < s_ru[lid]))) {
                s_rf[lid] = vo;
                s_ru[lid] = io;
            }
        }
        sync();
    }
    uint r = s_ru[0];
    sync();
    return r;
}

// The CPU's argmax of x[0..n): the first id of the largest logit; 0 when
// nothing is above -inf or x[0] is NaN.
uint row_argmax(uint n)
{
    float m = NEG_INF;
    uint best = NONE;
    for (uint i = lid; i < n; i += NT) {
        float v = ld_x(i);
        if (v > m) {
            m = v;
            best = i;
        }
    }
    uint r = reduce_best(m, best);
    return r == NONE || isnan(ld_x(0u)) ? 0u : r;
}

// The best id after (pv, pid) in the order (logit descending, id ascending).
uint next_top(uint n, float pv, int pid)
{
    float m = NEG_INF;
    uint best = NONE;
    for (uint i = lid; i < n; i += NT) {
        float v = ld_x(i);
        bool after = v < pv || (v == pv && int(i) > pid);
        if (after && (best == NONE || v > m)) {
            m = v;
            best = i;
        }
    }
    return reduce_best(m, best);
}

// --- weights and masses ---------------------------------------------------------

void weights(uint n, double mx, double inv_t, double min_p)
{
    for (uint i = lid; i < n; i += NT) {
        precise double a = (double(ld_x(i)) - mx) * inv_t;
        double e = sm_exp(a);
        st_w(i, e < min_p ? 0.0lf : e);
    }
    sync();
}

// s_count[b], s_mass[b] of the kept ids of every bin.
void masses(uint n, Cut c)
{
    for (uint b = lid; b < uint(SM_BINS); b += NT) s_count[b] = 0u;
    sync();
    uint n_chunks = (n + SM_CHUNK - 1u) / SM_CHUNK;
    for (uint ch = lid; ch < n_chunks; ch += NT) { // the chunk's 64 parts in the scratch
        uint p0 = ch * uint(SM_BINS);
        for (uint b = 0u; b < uint(SM_BINS); b++) st_part(p0 + b, 0.0lf);
        uint end = min(n, (ch + 1u) * SM_CHUNK);
        for (uint i = ch * SM_CHUNK; i < end; i++) {
            if (!kept(i, c)) continue;
            double w = ld_w(i);
            int b = sm_bin(w);
            precise double sum = ld_part(p0 + uint(b)) + w;
            st_part(p0 + uint(b), sum);
            atomicAdd(s_count[b], 1u);
        }
    }
    sync();
    for (uint b = lid; b < uint(SM_BINS); b += NT) {
        precise double m = 0.0lf;
        for (uint ch = 0u; ch < n_chunks; ch++) m = m + ld_part(ch * uint(SM_BINS) + b);
        s_mass[b] = m;
    }
    sync();
}

double total_mass()
{
    precise double m = 0.0lf;
    for (int b = 0; b < SM_BINS; b++) m = m + s_mass[b];
    return m;
}

// Each chunk's part of bin b (kept ids, id order) at part j = chunk; their
// count in s_u.
void bin_parts(uint n, Cut c, int b)
{
    sync();
    if (lid == 0u) s_u = 0u;
    sync();
    uint n_chunks = (n + SM_CHUNK - 1u) / SM_CHUNK;
    for (uint ch = lid; ch < n_chunks; ch += NT) {
        precise double part = 0.0lf;
        uint k = 0u, end = min(n, (ch + 1u) * SM_CHUNK);
        for (uint i = ch * SM_CHUNK; i < end; i++) {
            if (!kept(i, c) || sm_bin(ld_w(i)) != b) continue;
            part = part + ld_w(i);
            k++;
        }
        st_part(ch, part);
        if (k != 0u) atomicAdd(s_u, k);
    }
    sync();
}

// A cut inside bin b: the bins before keep their masses, those after are
// emptied, b's is summed again.
void recut(uint n, Cut c, int b)
{
    bin_parts(n, c, b);
    if (lid == 0u) {
        uint n_chunks = (n + SM_CHUNK - 1u) / SM_CHUNK;
        precise double m = 0.0lf;
        for (uint ch = 0u; ch < n_chunks; ch++) m = m + ld_part(ch);
        s_mass[b] = m;
        s_count[b] = s_u;
        for (int j = b + 1; j < SM_BINS; j++) {
            s_mass[j] = 0.0lf;
            s_count[j] = 0u;
        }
    }
    sync();
}

// --- the boundary bin, sorted ------------------------------------------------------

bool before(double wa, uint ia, double wb, uint ib) { return wa != wb ? wa > wb : ia < ib; }

// The kept ids of bin b as candidates C[0..m), weight descending, id
// ascending (padded to a power of two with weight 0). Returns m.
uint sort_bin(uint n, Cut c, int b)
{
    sync();
    if (lid == 0u) s_u = 0u;
    sync();
    for (uint i = lid; i < n; i += NT)
        if (kept(i, c) && sm_bin(ld_w(i)) == b) st_cand(atomicAdd(s_u, 1u), ld_w(i), i);
    sync();
    uint m = s_u, M = 1u;
    while (M < m) M <<= 1u;
    for (uint k = m + lid; k < M; k += NT) st_cand(k, 0.0lf, 0x7fffffffu);
    sync();
    for (uint k = 2u; k <= M; k <<= 1u) {
        for (uint j = k >> 1u; j > 0u; j >>= 1u) {
            for (uint q = lid; q < M / 2u; q += NT) { // pair q: i with bit j clear, l = i + j
                uint i = ((q & ~(j - 1u)) << 1u) | (q & (j - 1u)), l = i | j;
                double wi = cand_w(i), wl = cand_w(l);
                uint ii = cand_id(i), il = cand_id(l);
                bool swap = (i & k) == 0u ? before(wl, il, wi, ii) : before(wi, ii, wl, il);
                if (swap) {
                    st_cand(i, wl, il);
                    st_cand(l, wi, ii);
                }
            }
            sync();
        }
    }
    return m;
}

// --- top-k, top-p, the draw ----------------------------------------------------------

// The weight of rank `rank` (0: the largest) among the kept ids: a radix
// select over the weights' bits (positive doubles order as their bits), a
// byte at a time from the top.
double select_rank(uint n, Cut c, uint rank)
{
    uvec2 prefix = uvec2(0u);
    for (int d = 7; d >= 0; d--) {
        sync();
        for (uint i = lid; i < 256u; i += NT) s_hist[i] = 0u;
        sync();
        uint hi_mask = d >= 4 ? (d == 7 ? 0u : 0xffffffffu << uint(8 * (d - 3))) : 0xffffffffu;
        uint lo_mask = d >= 4 ? 0u : (d == 3 ? 0u : 0xffffffffu << uint(8 * (d + 1)));
        for (uint i = lid; i < n; i += NT) {
            if (!kept(i, c)) continue;
            uvec2 u = unpackDouble2x32(ld_w(i));
            if ((u.y & hi_mask) != prefix.y || (u.x & lo_mask) != prefix.x) continue;
            uint byte = ((d >= 4 ? u.y : u.x) >> uint(8 * (d & 3))) & 255u;
            atomicAdd(s_hist[byte], 1u);
        }
        sync();
        uint byte = 255u; // every invocation walks the same counts: the byte that holds the rank
        while (rank >= s_hist[byte]) rank -= s_hist[byte--];
        if (d >= 4)
            prefix.y |= byte << uint(8 * (d - 4));
        else
            prefix.x |= byte << uint(8 * d);
    }
    return packDouble2x32(prefix);
}

Cut top_k(uint n, int k, Cut c)
{
    uint before_n = 0u;
    int b = 0;
    while (b < SM_BINS && before_n + s_count[b] < uint(k)) before_n += s_count[b++];
    if (b == SM_BINS) return c; // fewer than k ids have weight
    Cut cut = Cut(select_rank(n, c, uint(k) - 1u), 0x7fffffff);
    recut(n, cut, b);
    return cut;
}

Cut top_p(uint n, double p, Cut c)
{
    precise double need = p * total_mass();
    precise double acc = 0.0lf;
    int b = 0, last = -1;
    for (; b < SM_BINS; b++) {
        if (s_count[b] == 0u) continue;
        last = b;
        precise double next = acc + s_mass[b];
        if (next >= need) break;
        acc = next;
    }
    if (last < 0 || b == SM_BINS) return c;
    uint m = sort_bin(n, c, b);
    // The walk, one add after another, handed on every WALK_SEG adds to an
    // invocation of another subgroup (each has its own budget of loop trips
    // on lavapipe, which ends any loop past 65535 trips of an invocation).
    if (lid == 0u) {
        s_walk_acc = acc;
        s_u = 0u;
    }
    sync();
    for (uint seg = 0u; seg * WALK_SEG < m; seg++) {
        bool walked = s_u == NONE;
        sync();
        if (walked) break;
        if (lid == (seg * 64u) % NT) {
            precise double a = s_walk_acc;
            uint r = s_u, end = min(m, r + WALK_SEG);
            bool done = false;
            while (!done && r < end) {
                a = a + cand_w(r);
                r++;
                done = r >= m || a >= need;
            }
            s_walk_acc = a;
            s_u = done ? NONE : r;
            s_walk_r = r;
        }
        sync();
    }
    if (lid == 0u) s_u = s_walk_r - 1u;
    sync();
    Cut cut = Cut(cand_w(s_u), int(cand_id(s_u)));
    recut(n, cut, b);
    return cut;
}

// smath_draw of u in the kept set (masses in s_mass); -1 when nothing is kept.
int draw(uint n, Cut c, double u0)
{
    precise double u = u0, acc = 0.0lf;
    int b = -1, last = -1;
    for (int j = 0; j < SM_BINS; j++) {
        if (s_mass[j] <= 0.0lf) continue;
        precise double next = acc + s_mass[j];
        if (u < next) {
            u = u - acc;
            b = j;
            break;
        }
        acc = next;
        last = j;
    }
    if (b < 0) {
        b = last;
        u = D_INF;
    }
    if (b < 0) return -1;
    bin_parts(n, c, b);
    if (lid == 0u) {
        uint n_chunks = (n + SM_CHUNK - 1u) / SM_CHUNK, chunk = NONE, last_chunk = NONE;
        acc = 0.0lf;
        for (uint ch = 0u; ch < n_chunks && chunk == NONE; ch++) {
            double part = ld_part(ch);
            if (part <= 0.0lf) continue;
            precise double next = acc + part;
            if (u < next) {
                u = u - acc;
                chunk = ch;
            }
            acc = next;
            last_chunk = ch;
        }
        if (chunk == NONE) {
            chunk = last_chunk;
            u = D_INF;
        }
        uint end = min(n, (chunk + 1u) * SM_CHUNK), id = NONE;
        precise double run = 0.0lf;
        for (uint i = chunk * SM_CHUNK; i < end; i++) {
            if (!kept(i, c) || sm_bin(ld_w(i)) != b) continue;
            run = run + ld_w(i);
            id = i;
            if (u < run) break;
        }
        s_u = id;
    }
    sync();
    return int(s_u);
}

int sample_draw(uint n, int pos)
{
    float mx = ld_x(row_argmax(n));
    precise double inv_t = 1.0lf / prm_d(RW_TEMP);
    weights(n, double(mx), inv_t, prm_d(RW_MIN_P));
    Cut c = Cut(0.0lf, -1);
    masses(n, c);
    int k = int(prm(RW_TOP_K));
    if (k > 0 && uint(k) < n) c = top_k(n, k, c);
    double p = prm_d(RW_TOP_P);
    if (p > 0.0lf && p < 1.0lf) c = top_p(n, p, c);
    precise double u = philox_uniform(uvec2(prm(RW_SEED), prm(RW_SEED + 1u)), pos) * total_mass();
    int id = draw(n, c, u);
    return id >= 0 ? id : int(row_argmax(n));
}

// --- logprobs, logit bias, penalties, masks ---------------------------------------

// The raw row's log-normaliser (returned); its n_top best ids and their
// logprobs into s_top, s_toplp (`have` of them); the raw row kept.
double logprobs(uint n, int n_top, out int have)
{
    float mx = ld_x(row_argmax(n));
    weights(n, double(mx), 1.0lf, 0.0lf);
    masses(n, Cut(0.0lf, -1));
    precise double lse = double(mx) + sm_log(total_mass());
    n_top = min(min(n_top, int(n)), MAX_TOP);
    have = 0;
    float pv = POS_INF;
    int pid = -1;
    for (int j = 0; j < n_top; j++) {
        uint id = next_top(n, pv, pid);
        if (id == NONE) break;
        pv = ld_x(id);
        pid = int(id);
        if (lid == 0u) {
            s_top[j] = pid;
            precise double lp = double(pv) - lse;
            s_toplp[j] = float(lp);
        }
        have = j + 1;
    }
    for (uint i = lid; i < n; i += NT) RAW(i) = floatBitsToUint(ld_x(i));
    sync();
    return lse;
}

// x[id] += bias for each of the row's entries, in entry order (one
// invocation: a repeated id adds up as on the CPU).
void add_bias(uint n)
{
    int n_bias = int(prm(RW_N_BIAS));
    if (n_bias == 0) return;
    if (lid == 0u) {
        for (int i = 0; i < n_bias && i < MAX_BIAS; i++) {
            int id = int(prm(RW_BIAS + 2u * uint(i)));
            precise float b = uintBitsToFloat(prm(RW_BIAS + 2u * uint(i) + 1u));
            if (id >= 0 && uint(id) < n) {
                precise float v = ld_x(uint(id)) + b;
                st_x(uint(id), v);
            }
        }
    }
    sync();
}

void penalize(uint n, int n_hist)
{
    int n_prompt = int(prm(RW_N_PROMPT));
    uint hrow = g_row * pc.p[2];
    for (uint i = lid; i < n; i += NT) CNT(i) = 0u;
    sync();
    for (int j = int(lid); j < n_hist; j += int(NT)) {
        int t = LDI(3, hrow + uint(j));
        if (t < 0 || uint(t) >= n) continue;
        if (j < n_prompt)
            atomicOr(CNT(uint(t)), PROMPT_BIT);
        else
            atomicAdd(CNT(uint(t)), 1u);
    }
    sync();
    double rep = prm_d(RW_REP), pres = prm_d(RW_PRES), freq = prm_d(RW_FREQ);
    bool use_rep = rep != 0.0lf && rep != 1.0lf;
    for (int j = int(lid); j < n_hist; j += int(NT)) {
        int t = LDI(3, hrow + uint(j));
        if (t < 0 || uint(t) >= n) continue;
        uint cnt = atomicExchange(CNT(uint(t)), 0u); // once per id
        if (cnt == 0u) continue;
        int c = int(cnt & ~PROMPT_BIT);
        precise double l = double(ld_x(uint(t)));
        if (use_rep) l = l > 0.0lf ? l / rep : l * rep;
        precise double d = freq * double(c) + pres * (c > 0 ? 1.0lf : 0.0lf);
        l = l - d;
        st_x(uint(t), float(l));
    }
    sync();
}

void mask_min_tokens(uint n, int n_output)
{
    if (n_output >= int(prm(RW_MIN_TOKENS))) return;
    if (lid == 0u) {
        int n_mask = int(prm(RW_N_MASK));
        for (int i = 0; i < n_mask && i < MAX_MASK; i++) {
            int id = int(prm(RW_MASK_IDS + uint(i)));
            if (id >= 0 && uint(id) < n) st_x(uint(id), NEG_INF);
        }
    }
    sync();
}

// Ids whose mask bit is 0 -> -inf. Returns whether a finite logit is left.
bool allow(uint n)
{
    uint mrow = g_row * ((g_V + 31u) / 32u);
    if (lid == 0u) s_u = 0u;
    sync();
    bool any = false;
    for (uint i = lid; i < n; i += NT) {
        if (((buf[6].d[pc.off[6] + mrow + (i >> 5u)] >> (i & 31u)) & 1u) == 0u) st_x(i, NEG_INF);
        any = any || ld_x(i) > NEG_INF;
    }
    if (any) atomicOr(s_u, 1u);
    sync();
    bool r = s_u != 0u;
    sync();
    return r;
}

// --- one row -----------------------------------------------------------------------

void sample_row(uint r)
{
    g_row = r;
    int n_sample = int(prm(RW_N_SAMPLE));
    if (n_sample <= 0 || uint(n_sample) > g_V) { // padding
        if (lid == 0u) STI(7, r, 0u);
        return;
    }
    uint n = uint(n_sample), H = pc.p[2];
    int flags = int(prm(RW_FLAGS));
    int pos = LDI(2, r) + 1; // the token being chosen
    int n_hist = pos < int(H) ? pos : int(H);
    bool want_lp = (flags & F_LP) != 0 && pc.p[4] != 0u;
    double lse = 0.0lf;
    int have = 0;
    if (want_lp) lse = logprobs(n, int(prm(RW_N_TOP)), have);
    add_bias(n);
    if ((flags & F_PEN) != 0) penalize(n, n_hist);
    mask_min_tokens(n, pos - int(prm(RW_N_PROMPT)));
    int id = -1; // GRAPH_SAMPLE_NO_TOKEN
    if ((flags & F_MASKED) == 0 || (pc.p[5] != 0u && allow(n)))
        id = prm_d(RW_TEMP) == 0.0lf ? int(row_argmax(n)) : sample_draw(n, pos);
    if (lid == 0u) {
        if (pos < int(H)) STI(3, r * H + uint(pos), id);
        STI(7, r, id);
        if (want_lp && id >= 0) {
            uint o = r * LP_WORDS;
            STI(5, o, id);
            precise double lp = double(uintBitsToFloat(RAW(uint(id)))) - lse;
            STF(5, o + 1u, float(lp));
            STI(5, o + 2u, have);
            for (int j = 0; j < have; j++) {
                STI(5, o + 3u + uint(j), s_top[j]);
                STF(5, o + 3u + uint(MAX_TOP) + uint(j), s_toplp[j]);
            }
        }
    }
    sync();
}

void main()
{
    lid = gl_LocalInvocationIndex;
    g_V = pc.p[1];
    g_base = gl_WorkGroupID.x * pc.p[6];
    uint r = pc.p[7] + gl_WorkGroupID.x;
    if (r < pc.p[0]) sample_row(r);
}
