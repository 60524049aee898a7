/* test_vulkan_ops.c - every op of the Qwen3 step on the Vulkan backend
 * against the CPU backend, over many shapes: odd sizes, one token and many,
 * GQA ratios, f32/bf16/f16 weights, a weight larger than one storage-buffer
 * range, f32/bf16/f16/Q8_0 KV caches; the MoE ops with tied router scores
 * and bad expert ids.
 *
 * Each case builds a one-op graph twice over the same host data, once per
 * backend, runs it eagerly and compares every output (the op's result, and
 * the tensors it updates in place) by the error relative to the largest
 * CPU value: err = max_i |vk_i - cpu_i| / max(max_i |cpu_i|, 1e-30), within
 * the bound stated at each case (0: bit-identical, for copies and integer
 * ops). Then batch invariance on Vulkan, bit for bit: a token's matmul row
 * and a decode row's attention are the same alone and inside a larger step;
 * a token's matmul_id rows alone (one workgroup per pair) and grouped by
 * expert with 12 others.
 *
 * usage: test_vulkan_ops   (ENCORE_VK_SUBGROUP=0 runs the shaders' fallback
 * reductions instead of subgroup arithmetic) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "base/quant.h"
#include "backend/vulkan/vk_backend.h"
#include "check.h"
#include "moe_ids.h"

enum { MAX_IN = 7 };

/* --- random data ------------------------------------------------------------- */

static uint64_t g_rng = 0x243f6a8885a308d3ull;

static uint32_t rnd(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}

static float rndf(void) { return (float)rnd() / 2147483648.0f - 1.0f; } /* [-1, 1) */

/* --- one op case ----------------------------------------------------------------- */

typedef struct op_in {
    const char *name;
    enc_dtype dt;
    int64_t sh[2]; /* sh[1] == 0: 1-D */
    graph_tensor_kind kind;
    void *data; /* host bytes, owned by the case */
    int check;  /* compare this tensor after the op (updated in place) */
} op_in;

typedef struct op_case {
    char what[160];
    op_in in[MAX_IN];
    int n_in;
    /* add the op to g over tensors t[]; its output, or NULL when it has none */
    graph_tensor *(*build)(graph *g, graph_tensor **t, const int64_t *iparam, double fparam);
    int64_t ip[4];
    double fp;
    double tol; /* bound on err (see the header); 0: bit-identical */
} op_case;

static size_t in_bytes(const op_in *in)
{
    if (!in->sh[1]) return enc_dtype_row_bytes(in->dt, in->sh[0]);
    return (size_t)in->sh[0] * enc_dtype_row_bytes(in->dt, in->sh[1]);
}

static op_in *add_in(op_case *c, const char *name, enc_dtype dt, int64_t n0, int64_t n1, graph_tensor_kind kind)
{
    op_in *in = &c->in[c->n_in++];
    *in = (op_in){name, dt, {n0, n1}, kind, NULL, 0};
    in->data = calloc(1, in_bytes(in) + 4);
    return in;
}

/* Random Q8_0 blocks: a scale of about s / 127, random int8 quants. */
static void fill_q8(op_in *in, float s)
{
    uint8_t *p = in->data;
    for (size_t b = 0; b < in_bytes(in) / 34; b++, p += 34) {
        uint16_t d = enc_f32_to_f16(s / 127.0f * (1.5f + 0.5f * rndf()));
        memcpy(p, &d, 2);
        for (int j = 0; j < 32; j += 4) {
            uint32_t r = rnd();
            memcpy(p + 2 + j, &r, 4);
        }
    }
}

/* Fill with random values of the tensor's dtype (scale s). */
static void fill_random(op_in *in, float s)
{
    if (in->dt == ENC_Q8_0) {
        fill_q8(in, s);
        return;
    }
    int64_t n = in->sh[0] * (in->sh[1] ? in->sh[1] : 1);
    for (int64_t i = 0; i < n; i++) {
        float v = s * rndf();
        if (in->dt == ENC_F32) ((float *)in->data)[i] = v;
        else if (in->dt == ENC_BF16) ((uint16_t *)in->data)[i] = enc_f32_to_bf16(v);
        else if (in->dt == ENC_F16) ((uint16_t *)in->data)[i] = enc_f32_to_f16(v);
    }
}

static int32_t *ints(op_in *in) { return in->data; }

/* The results of running a case on one backend: the op's output, then each
 * checked input, as host copies. */
typedef struct op_result {
    void *out[MAX_IN + 1];
    size_t bytes[MAX_IN + 1];
    enc_dtype dt[MAX_IN + 1];
    int n;
} op_result;

static void result_free(op_result *r)
{
    for (int i = 0; i < r->n; i++) free(r->out[i]);
    memset(r, 0, sizeof *r);
}

static void keep(op_result *r, backend *be, backend_buffer *b, size_t off, size_t bytes, enc_dtype dt)
{
    r->out[r->n] = malloc(bytes + 1);
    CHECK(backend_buffer_read(be, b, off, r->out[r->n], bytes) == ENC_OK);
    r->bytes[r->n] = bytes;
    r->dt[r->n++] = dt;
}

static void run_case(backend *be, const op_case *c, op_result *r)
{
    memset(r, 0, sizeof *r);
    enc_arena host;
    CHECK(arena_init(&host, 1 << 16) == ENC_OK);
    graph g;
    CHECK(graph_init(&g, &host, 8, 16) == ENC_OK);
    backend_buffer *bufs[MAX_IN] = {0}, *arena = NULL;
    graph_tensor *t[MAX_IN];
    for (int i = 0; i < c->n_in; i++) {
        const op_in *in = &c->in[i];
        CHECK(backend_buffer_alloc(be, in_bytes(in), in->name, &bufs[i]) == ENC_OK);
        CHECK(backend_buffer_write(be, bufs[i], 0, in->data, in_bytes(in)) == ENC_OK);
        t[i] = in->sh[1] ? graph_tensor_2d(&g, in->kind, in->dt, in->sh[0], in->sh[1], in->name)
                         : graph_tensor_1d(&g, in->kind, in->dt, in->sh[0], in->name);
        graph_bind(t[i], bufs[i], 0);
    }
    graph_tensor *dst = c->build(&g, t, c->ip, c->fp);
    CHECK(graph_plan(&g, NULL) == ENC_OK);
    CHECK(backend_buffer_alloc(be, g.arena_size + 256, "arena", &arena) == ENC_OK);
    CHECK(graph_plan(&g, arena) == ENC_OK);
    /* graph_plan places an intermediate source in the arena (it rebinds
     * it): its data goes there, where the op reads it. */
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].kind == GRAPH_INTERMEDIATE)
            CHECK(backend_buffer_write(be, t[i]->buffer, t[i]->offset, c->in[i].data, in_bytes(&c->in[i])) == ENC_OK);
    enc_status s = backend_graph_compute(be, &g);
    if (s != ENC_OK) fprintf(stderr, "%s: %s: %s\n", c->what, be->iface->name, enc_last_error());
    CHECK(s == ENC_OK);
    if (dst && dst->kind == GRAPH_INTERMEDIATE)
        keep(r, be, arena, dst->offset, graph_tensor_nbytes(dst), dst->dtype);
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].check) keep(r, be, t[i]->buffer, t[i]->offset, in_bytes(&c->in[i]), c->in[i].dt);
    for (int i = 0; i < c->n_in; i++) CHECK(backend_buffer_free(be, bufs[i]) == ENC_OK);
    CHECK(backend_buffer_free(be, arena) == ENC_OK);
    arena_free(&host);
}

/* err as in the header comment; integer tensors must match exactly. */
static double compare(const op_result *cpu, const op_result *vk, int i)
{
    if (cpu->dt[i] != ENC_F32) return memcmp(cpu->out[i], vk->out[i], cpu->bytes[i]) ? INFINITY : 0.0;
    const float *a = cpu->out[i], *b = vk->out[i];
    double scale = 1e-30, d = 0;
    for (size_t j = 0; j < cpu->bytes[i] / 4; j++) {
        scale = fmax(scale, fabs(a[j]));
        double e = fabs((double)a[j] - (double)b[j]);
        d = e > d || isnan(e) ? e : d;
    }
    return d / scale;
}

static int g_cases;

static void check_case(backend *cpu, backend *vk, op_case *c)
{
    op_result rc, rv;
    run_case(cpu, c, &rc);
    run_case(vk, c, &rv);
    CHECK(rc.n == rv.n && rc.n > 0);
    for (int i = 0; i < rc.n && i < rv.n; i++) {
        double err = compare(&rc, &rv, i);
        if (!(err <= c->tol)) {
            fprintf(stderr, "FAIL %s: output %d: err %.3g > bound %.3g\n", c->what, i, err, c->tol);
            check_failures++;
        }
    }
    result_free(&rc);
    result_free(&rv);
    for (int i = 0; i < c->n_in; i++) free(c->in[i].data);
    g_cases++;
}

/* --- builders ----------------------------------------------------------------------- */

static graph_tensor *b_get_rows(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    return graph_get_rows(g, t[0], t[1]);
}
static graph_tensor *b_rms_norm(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    return graph_rms_norm(g, t[0], t[1], fp);
}
static graph_tensor *b_matmul(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    return graph_matmul(g, t[0], t[1]);
}
static graph_tensor *b_rope(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    /* ip[2]: YaRN, factor 4 from 256 positions (a correction range inside
     * the head), its default attention factor */
    enc_rope_scaling yarn = {ENC_ROPE_YARN, 4.0, 256, 32, 1, 0, 1};
    enc_rope rope = enc_rope_make(fp, ip[1], ip[2] ? &yarn : NULL, 4096);
    return graph_rope_neox(g, t[0], t[1], ip[0], ip[1], &rope);
}
static graph_tensor *b_swiglu(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    return graph_swiglu(g, t[0], t[1]);
}
static graph_tensor *b_add(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    return graph_add(g, t[0], t[1]);
}
static graph_tensor *b_store_kv(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    graph_store_kv(g, t[0], t[1], t[2], t[3], t[4]);
    return NULL;
}
static graph_tensor *b_attention(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    graph_attention_params p = {ip[0], ip[1], ip[2], ip[3], fp};
    return graph_attention(g, t[0], t[1], t[2], t[3], t[4], t[5], &p);
}
static graph_tensor *b_argmax(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    return graph_argmax(g, t[0]);
}
static graph_tensor *b_advance(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    graph_decode_advance(g, t[0], t[1], t[2], t[3], t[4], t[5], ip[0], t[6]);
    return NULL;
}

/* MoE: ip[0] = k; the harness's 2-D tensors are seen as the ops' 3-D ones
 * (x [T * k, K] as [T, k, K] when ip[1], w [E * N, K] as [E, N, K] with
 * E = ip[2], y [T * k, N] as [T, k, N]). */
static graph_tensor *as_3d(graph *g, graph_tensor *t, int64_t n0)
{
    int64_t sh[3] = {n0, t->shape[0] / n0, t->shape[1]};
    graph_tensor *r = graph_new_tensor(g, t->kind, t->dtype, 3, sh, t->name);
    if (r) graph_bind(r, t->buffer, t->offset);
    return r;
}
static graph_tensor *b_moe_ids(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    graph_tensor *w;
    return graph_moe_route(g, t[0], ip[0], GRAPH_ROUTER_SOFTMAX, (int)ip[1], &w);
}
static graph_tensor *b_moe_weights(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    graph_tensor *w = NULL;
    graph_moe_route(g, t[0], ip[0], GRAPH_ROUTER_SOFTMAX, (int)ip[1], &w);
    return w;
}
static graph_tensor *b_matmul_id(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    graph_tensor *x = ip[1] ? as_3d(g, t[0], t[0]->shape[0] / ip[0]) : t[0];
    return graph_matmul_id(g, x, as_3d(g, t[1], ip[2]), t[2]);
}
static graph_tensor *b_moe_sum(graph *g, graph_tensor **t, const int64_t *ip, double fp)
{
    return graph_moe_sum(g, as_3d(g, t[0], t[0]->shape[0] / ip[0]), t[1]);
}

/* --- the cases --------------------------------------------------------------------- */

static const enc_dtype g_wtypes[3] = {ENC_F32, ENC_BF16, ENC_F16};

static void cases_get_rows(backend *cpu, backend *vk)
{
    const int64_t shapes[][3] = {{1, 1, 1}, {33, 7, 5}, {100, 128, 9}, {5, 1024, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++) {
            int64_t R = shapes[s][0], D = shapes[s][1], n = shapes[s][2];
            op_case c = {.build = b_get_rows, .tol = 0};
            snprintf(c.what, sizeof c.what, "get_rows %s [%lld, %lld] x %lld ids", enc_dtype_name(g_wtypes[d]),
                     (long long)R, (long long)D, (long long)n);
            fill_random(add_in(&c, "table", g_wtypes[d], R, D, GRAPH_WEIGHT), 2.0f);
            op_in *ids = add_in(&c, "ids", ENC_I32, n, 0, GRAPH_INPUT);
            for (int64_t i = 0; i < n; i++) ints(ids)[i] = (int32_t)(rnd() % (uint32_t)R);
            if (n > 2) ints(ids)[1] = -1, ints(ids)[2] = (int32_t)R; /* outside: zero rows */
            check_case(cpu, vk, &c);
        }
}

/* Bound for rms_norm: f32 sums (Vulkan) against double (CPU): 1e-5. */
static void cases_rms_norm(backend *cpu, backend *vk)
{
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {40, 64}, {5, 129}, {2, 1024}, {9, 3000}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        op_case c = {.build = b_rms_norm, .fp = 1e-6, .tol = 1e-5};
        snprintf(c.what, sizeof c.what, "rms_norm [%lld, %lld]", (long long)shapes[s][0], (long long)shapes[s][1]);
        fill_random(add_in(&c, "x", ENC_F32, shapes[s][0], shapes[s][1], GRAPH_INPUT), 3.0f);
        fill_random(add_in(&c, "w", ENC_F32, shapes[s][1], 0, GRAPH_WEIGHT), 1.5f);
        check_case(cpu, vk, &c);
    }
}

/* Bound for matmul: both accumulate in f32 in different orders; the error
 * of a K-term dot product is below K * 2^-24 relative to sum |x w|, and
 * err here is relative to the largest output: 1e-5 for K up to 3000. */
static void cases_matmul(backend *cpu, backend *vk)
{
    const int64_t shapes[][3] = {{1, 1, 1},   {1, 64, 5},  {3, 7, 9},     {8, 130, 64},
                                 {9, 1000, 33}, {17, 63, 257}, {1, 3000, 40}, {33, 256, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++) {
            int64_t T = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
            op_case c = {.build = b_matmul, .tol = 1e-5};
            snprintf(c.what, sizeof c.what, "matmul %s T=%lld K=%lld N=%lld", enc_dtype_name(g_wtypes[d]),
                     (long long)T, (long long)K, (long long)N);
            fill_random(add_in(&c, "x", ENC_F32, T, K, GRAPH_INPUT), 1.0f);
            fill_random(add_in(&c, "w", g_wtypes[d], N, K, GRAPH_WEIGHT), 1.0f);
            check_case(cpu, vk, &c);
        }
}

/* Bound for rope: the CPU computes angles in double, Vulkan in f32; at
 * positions below 2048 the angle's error is below 2048 * 2^-23: 5e-4 (YaRN's
 * factor of 1.14 on cos and sin: 6e-4). Plain and YaRN schedules. */
static void cases_rope(backend *cpu, backend *vk)
{
    const int64_t shapes[][3] = {{1, 1, 2}, {5, 3, 64}, {4, 16, 128}, {2, 2, 256}, {7, 8, 10}};
    for (size_t s = 0; s < 2 * sizeof shapes / sizeof shapes[0]; s++) {
        int64_t yarn = s % 2, T = shapes[s / 2][0], H = shapes[s / 2][1], hd = shapes[s / 2][2];
        op_case c = {.build = b_rope, .ip = {H, hd, yarn}, .fp = 1000000.0, .tol = yarn ? 6e-4 : 5e-4};
        snprintf(c.what, sizeof c.what, "rope_neox%s T=%lld H=%lld hd=%lld", yarn ? " yarn" : "", (long long)T,
                 (long long)H, (long long)hd);
        op_in *x = add_in(&c, "x", ENC_F32, T, H * hd, GRAPH_INTERMEDIATE);
        fill_random(x, 2.0f);
        x->check = 1;
        op_in *pos = add_in(&c, "positions", ENC_I32, T, 0, GRAPH_INPUT);
        for (int64_t i = 0; i < T; i++) ints(pos)[i] = i == 0 ? 0 : (int32_t)(rnd() % 2048);
        check_case(cpu, vk, &c);
    }
}

/* swiglu: exp in f32 on both sides, 1e-6; add: exact. */
static void cases_elementwise(backend *cpu, backend *vk)
{
    const int64_t sizes[] = {1, 255, 1000, 70001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int op = 0; op < 2; op++) {
            op_case c = {.build = op ? b_add : b_swiglu, .tol = op ? 0 : 1e-6};
            snprintf(c.what, sizeof c.what, "%s n=%lld", op ? "add" : "swiglu", (long long)sizes[s]);
            fill_random(add_in(&c, "a", ENC_F32, sizes[s], 0, GRAPH_INPUT), 8.0f);
            fill_random(add_in(&c, "b", ENC_F32, sizes[s], 0, GRAPH_INPUT), 2.0f);
            check_case(cpu, vk, &c);
        }
}

/* Values where rounding to 16 bits is delicate: ties, subnormals, overflow,
 * infinities, NaN, signed zero. */
static void plant_rounding_cases(op_in *in)
{
    static const uint32_t bits[] = {
        0x3f808000u, 0x3f818000u, /* bf16 ties: to even down, to even up */
        0x3f801000u, 0x3f803000u, /* f16 ties */
        0x33800000u, 0x33c00000u, 0x387fc000u, /* f16 subnormals, their edge */
        0x477fe000u, 0x47800000u, 0x7f7fffffu, /* f16 largest, overflow; bf16 overflow */
        0x7f800000u, 0xff800000u, 0x7fc00001u, 0x80000000u,
    };
    int64_t n = in->sh[0] * (in->sh[1] ? in->sh[1] : 1);
    for (size_t i = 0; i < sizeof bits / sizeof bits[0] && (int64_t)i < n; i++)
        memcpy((float *)in->data + i * 3 % n, &bits[i], 4);
}

/* Q8_0 blocks whose rounding a wrong quantizer gets wrong: row 0's first
 * block has amax 127 (d = 1), so 2.5, -2.5 and 0.5 are ties, rounded away
 * from zero; row 1's first block is zero (d = 0). Every other block's scale
 * is rounded to f16. */
static void plant_q8_cases(op_in *in)
{
    float *x = in->data;
    const float tie[] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 126.5f, 1e-3f};
    memcpy(x, tie, sizeof tie);
    if (in->sh[0] > 1) memset(x + in->sh[1], 0, 32 * sizeof(float));
}

/* store_kv into Q8_0 caches of random bytes: rows of 1 to 8 blocks (34 to
 * 272 bytes, half of them ending mid-word, so neighbouring slots share a
 * word), slots out of order, some -1; the bytes written and those left
 * alone equal the CPU's, bit for bit. */
static void cases_store_kv_q8(backend *cpu, backend *vk)
{
    const int64_t shapes[][3] = {{1, 32, 5}, {9, 32, 12}, {7, 256, 64}, {20, 96, 41}, {6, 160, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t T = shapes[s][0], D = shapes[s][1], n_slots = shapes[s][2];
        op_case c = {.build = b_store_kv, .tol = 0};
        snprintf(c.what, sizeof c.what, "store_kv T=%lld kv_dim=%lld cache q8_0", (long long)T, (long long)D);
        op_in *k = add_in(&c, "k", ENC_F32, T, D, GRAPH_INPUT);
        fill_random(k, 3.0f);
        plant_q8_cases(k);
        fill_random(add_in(&c, "v", ENC_F32, T, D, GRAPH_INPUT), 0.01f);
        op_in *sm = add_in(&c, "slot_mapping", ENC_I32, T, 0, GRAPH_INPUT);
        for (int64_t i = 0; i < T; i++) ints(sm)[i] = (int32_t)((n_slots - 1 - i * 5 % n_slots + n_slots) % n_slots);
        if (T > 2) ints(sm)[1] = -1;
        for (int i = 0; i < 2; i++) {
            op_in *cache = add_in(&c, i ? "v_cache" : "k_cache", ENC_Q8_0, n_slots, D, GRAPH_CACHE);
            for (size_t b = 0; b < in_bytes(cache); b++) ((uint8_t *)cache->data)[b] = (uint8_t)rnd();
            cache->check = 1;
        }
        check_case(cpu, vk, &c);
    }
}

/* store_kv: a copy, exact (16-bit caches: rounded to nearest even, bit for
 * bit as the CPU rounds); slots distinct, some -1 (padding). */
static void cases_store_kv(backend *cpu, backend *vk)
{
    const int64_t shapes[][3] = {{1, 4, 16}, {7, 256, 64}, {20, 48, 40}};
    const enc_dtype dts[] = {ENC_F32, ENC_BF16, ENC_F16};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0] * 3; s++) {
        enc_dtype dt = dts[s % 3];
        int64_t T = shapes[s / 3][0], D = shapes[s / 3][1], n_slots = shapes[s / 3][2];
        op_case c = {.build = b_store_kv, .tol = 0};
        snprintf(c.what, sizeof c.what, "store_kv T=%lld kv_dim=%lld cache %s", (long long)T, (long long)D,
                 enc_dtype_name(dt));
        op_in *k = add_in(&c, "k", ENC_F32, T, D, GRAPH_INTERMEDIATE);
        fill_random(k, 1.0f);
        if (dt != ENC_F32) plant_rounding_cases(k);
        fill_random(add_in(&c, "v", ENC_F32, T, D, GRAPH_INTERMEDIATE), 1.0f);
        op_in *sm = add_in(&c, "slot_mapping", ENC_I32, T, 0, GRAPH_INPUT);
        for (int64_t i = 0; i < T; i++) ints(sm)[i] = (int32_t)((i * 7 + 3) % n_slots);
        if (T > 2) ints(sm)[1] = -1;
        add_in(&c, "k_cache", dt, n_slots, D, GRAPH_CACHE)->check = 1;
        add_in(&c, "v_cache", dt, n_slots, D, GRAPH_CACHE)->check = 1;
        check_case(cpu, vk, &c);
    }
}

/* Paged attention over nseq sequences with n_q[s] new rows and ctx[s]
 * tokens each, blocks of bs slots scattered through the pool. Bound: f32
 * dot products and exp in different orders, 2e-5. */
typedef struct att_shape {
    int64_t H, KVH, hd, bs;
    int n_seqs;
    int64_t n_q[4], ctx[4];
    int64_t pool_blocks; /* > 0: a pool this large, the tables' blocks at both of its ends */
    enc_dtype cache;     /* the caches' dtype (0: F32) */
} att_shape;

static void att_case(backend *cpu, backend *vk, const att_shape *a)
{
    int64_t T = 0, max_ctx = 0;
    for (int s = 0; s < a->n_seqs; s++) T += a->n_q[s], max_ctx = a->ctx[s] > max_ctx ? a->ctx[s] : max_ctx;
    int64_t maxb = (max_ctx + a->bs - 1) / a->bs + 1, n_blocks = maxb * a->n_seqs + 3, kv = a->KVH * a->hd;
    if (a->pool_blocks > n_blocks) n_blocks = a->pool_blocks;
    op_case c = {.build = b_attention, .ip = {a->H, a->KVH, a->hd, a->bs}, .fp = 1.0 / sqrt((double)a->hd),
                 .tol = 2e-5};
    snprintf(c.what, sizeof c.what, "attention H=%lld KVH=%lld hd=%lld bs=%lld seqs=%d ctx0=%lld nq0=%lld cache %s",
             (long long)a->H, (long long)a->KVH, (long long)a->hd, (long long)a->bs, a->n_seqs,
             (long long)a->ctx[0], (long long)a->n_q[0], enc_dtype_name(a->cache));
    fill_random(add_in(&c, "q", ENC_F32, T, a->H * a->hd, GRAPH_INTERMEDIATE), 2.0f);
    fill_random(add_in(&c, "k_cache", a->cache, n_blocks * a->bs, kv, GRAPH_CACHE), 1.0f);
    fill_random(add_in(&c, "v_cache", a->cache, n_blocks * a->bs, kv, GRAPH_CACHE), 1.0f);
    op_in *bt = add_in(&c, "block_tables", ENC_I32, a->n_seqs, maxb, GRAPH_INPUT);
    for (int64_t i = 0; i < a->n_seqs * maxb; i++) /* a large pool: odd entries from its far end */
        ints(bt)[i] = (int32_t)(a->pool_blocks && i % 2 ? n_blocks - 1 - i * 3 : (i * 5 + 2) % n_blocks);
    op_in *sl = add_in(&c, "seq_lens", ENC_I32, a->n_seqs, 0, GRAPH_INPUT);
    op_in *qsl = add_in(&c, "query_start_loc", ENC_I32, a->n_seqs + 1, 0, GRAPH_INPUT);
    for (int s = 0; s < a->n_seqs; s++) {
        ints(sl)[s] = (int32_t)a->ctx[s];
        ints(qsl)[s + 1] = ints(qsl)[s] + (int32_t)a->n_q[s];
    }
    check_case(cpu, vk, &c);
}

static void cases_attention(backend *cpu, backend *vk)
{
    const att_shape shapes[] = {
        {1, 1, 64, 16, 1, {1}, {1}, 0, ENC_F32}, /* one key */
        {4, 1, 64, 16, 1, {1}, {150}, 0, ENC_F32}, /* decode, GQA 4, past a 64-key block */
        {8, 2, 128, 16, 2, {5, 1}, {5, 70}, 0, ENC_F32}, /* prefill beside decode, GQA 4 */
        {2, 2, 40, 32, 3, {3, 1, 2}, {40, 17, 66}, 0, ENC_F32}, /* MHA, odd head_dim, blocks of 32 */
        {16, 2, 128, 16, 1, {9}, {200}, 0, ENC_F32}, /* GQA 8, a chunk at the end of a context */
        {4, 4, 256, 16, 2, {1, 1}, {0, 33}, 0, ENC_F32}, /* head_dim 256; an empty (padding) row */
        {4, 2, 42, 16, 1, {2}, {75}, 0, ENC_F32}, /* head_dim not a multiple of the subgroup size */
        /* K and V of 140 MiB each, more than one storage-buffer range on
         * lavapipe (128 MiB): the keys are read through several windows */
        {4, 1, 64, 16, 2, {1, 3}, {300, 90}, 36000, ENC_F32},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) att_case(cpu, vk, &shapes[s]);
    /* 16-bit caches: decode, prefill beside decode, odd head_dims, and K and
     * V of 140 MiB each again (twice the blocks), through several windows */
    const size_t half[] = {1, 2, 3, 6};
    for (int dt = 0; dt < 2; dt++) {
        for (size_t i = 0; i < sizeof half / sizeof half[0]; i++) {
            att_shape a = shapes[half[i]];
            a.cache = dt ? ENC_F16 : ENC_BF16;
            att_case(cpu, vk, &a);
        }
        att_shape big = shapes[sizeof shapes / sizeof shapes[0] - 1];
        big.pool_blocks *= 2;
        big.cache = dt ? ENC_F16 : ENC_BF16;
        att_case(cpu, vk, &big);
    }
    /* Q8_0 caches of random blocks (head_dims 64, 128, 256): both sides read
     * the same dequantized values (d * q, exact), so the f32 bound holds;
     * then K and V of 147 MiB each (four times the blocks, at 68 bytes a
     * slot), through several windows. */
    const size_t q8[] = {1, 2, 4, 5};
    for (size_t i = 0; i < sizeof q8 / sizeof q8[0]; i++) {
        att_shape a = shapes[q8[i]];
        a.cache = ENC_Q8_0;
        att_case(cpu, vk, &a);
    }
    att_shape big = shapes[sizeof shapes / sizeof shapes[0] - 1];
    big.pool_blocks *= 4;
    big.cache = ENC_Q8_0;
    att_case(cpu, vk, &big);
}

/* argmax and decode_advance: integers, exact. */
static void cases_argmax(backend *cpu, backend *vk)
{
    const int64_t shapes[][2] = {{1, 1}, {4, 10}, {3, 1000}, {2, 151936}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        op_case c = {.build = b_argmax, .tol = 0};
        snprintf(c.what, sizeof c.what, "argmax [%lld, %lld]", (long long)shapes[s][0], (long long)shapes[s][1]);
        op_in *x = add_in(&c, "x", ENC_F32, shapes[s][0], shapes[s][1], GRAPH_INTERMEDIATE);
        fill_random(x, 5.0f);
        if (shapes[s][1] > 10) ((float *)x->data)[7] = ((float *)x->data)[9] = 6.0f; /* a tie: the first wins */
        check_case(cpu, vk, &c);
    }
}

/* Routing: ids bit-identical (logits from a few values: exact ties, which
 * both sides give to the lower id), weights within 1e-5. */
static void cases_moe_route(backend *cpu, backend *vk)
{
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 4, 2}, {17, 8, 2}, {5, 64, 8}, {2, 128, 128}, {9, 512, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int norm = 0; norm < 2; norm++)
            for (int what = 0; what < 2; what++) {
                int64_t T = shapes[s][0], E = shapes[s][1], k = shapes[s][2];
                op_case c = {.build = what ? b_moe_weights : b_moe_ids, .ip = {k, norm}, .tol = what ? 1e-5 : 0};
                snprintf(c.what, sizeof c.what, "moe_route %s T=%lld E=%lld k=%lld norm=%d",
                         what ? "weights" : "ids", (long long)T, (long long)E, (long long)k, norm);
                op_in *l = add_in(&c, "logits", ENC_F32, T, E, GRAPH_INTERMEDIATE);
                for (int64_t i = 0; i < T * E; i++) ((float *)l->data)[i] = (float)(rnd() % 5) * 0.5f;
                check_case(cpu, vk, &c);
            }
}

static void cases_matmul_id(backend *cpu, backend *vk)
{
    const int64_t shapes[][5] = {/* T, k, K, N, E */
                                 {1, 1, 8, 4, 1}, {1, 2, 64, 48, 4}, {3, 2, 33, 17, 5}, {9, 8, 130, 24, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int per_slot = 0; per_slot < 2; per_slot++) {
                int64_t T = shapes[s][0], k = shapes[s][1], K = shapes[s][2], N = shapes[s][3], E = shapes[s][4];
                op_case c = {.build = b_matmul_id, .ip = {k, per_slot, E}, .tol = 1e-5};
                snprintf(c.what, sizeof c.what, "matmul_id %s T=%lld k=%lld K=%lld N=%lld E=%lld slot=%d",
                         enc_dtype_name(g_wtypes[d]), (long long)T, (long long)k, (long long)K, (long long)N,
                         (long long)E, per_slot);
                fill_random(add_in(&c, "x", ENC_F32, per_slot ? T * k : T, K, GRAPH_INPUT), 1.0f);
                fill_random(add_in(&c, "w", g_wtypes[d], E * N, K, GRAPH_WEIGHT), 1.0f);
                op_in *ids = add_in(&c, "ids", ENC_I32, T, k, GRAPH_INPUT);
                for (int64_t i = 0; i < T * k; i++) /* some bad ids: zero rows */
                    ints(ids)[i] = rnd() % 11 == 0 ? -1 : (int32_t)(rnd() % (uint32_t)E);
                check_case(cpu, vk, &c);
            }
    const int64_t sums[][3] = {{1, 1, 7}, {5, 2, 64}, {33, 8, 100}};
    for (size_t s = 0; s < sizeof sums / sizeof sums[0]; s++) {
        int64_t T = sums[s][0], k = sums[s][1], N = sums[s][2];
        op_case c = {.build = b_moe_sum, .ip = {k}, .tol = 1e-6};
        snprintf(c.what, sizeof c.what, "moe_sum T=%lld k=%lld N=%lld", (long long)T, (long long)k, (long long)N);
        fill_random(add_in(&c, "y", ENC_F32, T * k, N, GRAPH_INTERMEDIATE), 3.0f);
        fill_random(add_in(&c, "w", ENC_F32, T, k, GRAPH_INTERMEDIATE), 1.0f);
        check_case(cpu, vk, &c);
    }
}

static void cases_advance(backend *cpu, backend *vk)
{
    const int64_t P = 5, maxb = 3, bs = 16;
    op_case c = {.build = b_advance, .ip = {bs}, .tol = 0};
    snprintf(c.what, sizeof c.what, "decode_advance P=%lld", (long long)P);
    op_in *next = add_in(&c, "next", ENC_I32, P, 0, GRAPH_INTERMEDIATE);
    op_in *ids = add_in(&c, "input_ids", ENC_I32, P, 0, GRAPH_INPUT);
    op_in *pos = add_in(&c, "positions", ENC_I32, P, 0, GRAPH_INPUT);
    op_in *lens = add_in(&c, "seq_lens", ENC_I32, P, 0, GRAPH_INPUT);
    op_in *slots = add_in(&c, "slot_mapping", ENC_I32, P, 0, GRAPH_INPUT);
    op_in *bt = add_in(&c, "block_tables", ENC_I32, P, maxb, GRAPH_INPUT);
    op_in *out = add_in(&c, "out", ENC_I32, P, 0, GRAPH_INPUT);
    const int32_t p0[] = {3, 15, 31, 47, 0}; /* in a block, crossing, crossing, past the table, padding */
    for (int64_t i = 0; i < P; i++) {
        ints(next)[i] = (int32_t)(100 + i);
        ints(pos)[i] = p0[i];
        ints(lens)[i] = i == P - 1 ? 0 : p0[i] + 1;
        for (int64_t b = 0; b < maxb; b++) ints(bt)[i * maxb + b] = (int32_t)(i * maxb + b + 1);
    }
    ids->check = pos->check = lens->check = slots->check = out->check = 1;
    check_case(cpu, vk, &c);
}

/* A bf16 weight of 70000 x 1024 (137 MiB) is larger than one storage-buffer
 * range on lavapipe (128 MiB): get_rows and matmul see it through windows
 * of whole rows, one dispatch each. Ids and output columns in every window.
 * Same bounds as above. */
static void cases_windows(backend *cpu, backend *vk)
{
    const int64_t R = 70000, D = 1024;
    for (int op = 0; op < 2; op++) {
        op_case c = {.build = op ? b_matmul : b_get_rows, .tol = op ? 1e-5 : 0};
        snprintf(c.what, sizeof c.what, "%s over a %lld x %lld bf16 weight (windows)", op ? "matmul" : "get_rows",
                 (long long)R, (long long)D);
        if (op) fill_random(add_in(&c, "x", ENC_F32, 2, D, GRAPH_INPUT), 1.0f);
        fill_random(add_in(&c, "w", ENC_BF16, R, D, GRAPH_WEIGHT), 1.0f);
        if (!op) {
            op_in *ids = add_in(&c, "ids", ENC_I32, 6, 0, GRAPH_INPUT);
            const int32_t pick[6] = {0, 1, 33000, 65535, 65536, 69999};
            memcpy(ids->data, pick, sizeof pick);
        }
        check_case(cpu, vk, &c);
    }
}

/* --- batch invariance on Vulkan ------------------------------------------------------- */

/* Run case c on vk and keep its output 0 in *out. */
static void vk_output(backend *vk, op_case *c, op_result *r)
{
    run_case(vk, c, r);
    for (int i = 0; i < c->n_in; i++) free(c->in[i].data);
}

/* A token's matmul row alone equals its row among 19 others, bit for bit. */
static void invariance_matmul(backend *vk)
{
    const int64_t T = 20, K = 300, N = 70;
    g_rng = 42;
    op_case big = {.build = b_matmul};
    op_in *x = add_in(&big, "x", ENC_F32, T, K, GRAPH_INPUT);
    fill_random(x, 1.0f);
    op_in *w = add_in(&big, "w", ENC_BF16, N, K, GRAPH_WEIGHT);
    fill_random(w, 1.0f);
    for (int64_t t = 0; t < T; t += 7) {
        op_case one = {.build = b_matmul};
        op_in *x1 = add_in(&one, "x", ENC_F32, 1, K, GRAPH_INPUT);
        memcpy(x1->data, (float *)x->data + t * K, (size_t)K * 4);
        op_in *w1 = add_in(&one, "w", ENC_BF16, N, K, GRAPH_WEIGHT);
        memcpy(w1->data, w->data, in_bytes(w));
        op_result r1, rb;
        vk_output(vk, &one, &r1);
        op_case copy = big;
        for (int i = 0; i < big.n_in; i++) {
            copy.in[i].data = malloc(in_bytes(&big.in[i]));
            memcpy(copy.in[i].data, big.in[i].data, in_bytes(&big.in[i]));
        }
        vk_output(vk, &copy, &rb);
        CHECK(memcmp(r1.out[0], (float *)rb.out[0] + t * N, (size_t)N * 4) == 0);
        result_free(&r1);
        result_free(&rb);
    }
    for (int i = 0; i < big.n_in; i++) free(big.in[i].data);
}

/* matmul_id of T = 13 tokens (grouped by expert on the device: T >= 8, 13
 * not a multiple of the tile) against each token alone (one workgroup per
 * pair), bit for bit, with ids from pick(t, s) (moe_ids.h). */
static void invariance_matmul_id_ids(backend *vk, enc_dtype wt, int32_t (*pick)(int64_t t, int64_t s))
{
    const int64_t T = 13, k = 2, K = 150, N = 9, E = MOE_IDS_EXPERTS;
    op_case big = {.build = b_matmul_id, .ip = {k, 0, E}};
    fill_random(add_in(&big, "x", ENC_F32, T, K, GRAPH_INPUT), 1.0f);
    fill_random(add_in(&big, "w", wt, E * N, K, GRAPH_WEIGHT), 1.0f);
    op_in *ids = add_in(&big, "ids", ENC_I32, T, k, GRAPH_INPUT);
    for (int64_t i = 0; i < T * k; i++) ints(ids)[i] = pick(i / k, i % k);
    op_result rb;
    run_case(vk, &big, &rb);
    for (int64_t t = 0; t < T; t++) {
        op_case one = {.build = b_matmul_id, .ip = {k, 0, E}};
        for (int i = 0; i < big.n_in; i++) {
            const op_in *b = &big.in[i];
            int64_t rows = i == 1 ? b->sh[0] : 1;
            op_in *o = add_in(&one, b->name, b->dt, rows, b->sh[1], b->kind);
            size_t bytes = in_bytes(o);
            memcpy(o->data, (const char *)b->data + (i == 1 ? 0 : (size_t)t * bytes), bytes);
        }
        op_result r1;
        vk_output(vk, &one, &r1);
        CHECK(memcmp(r1.out[0], (float *)rb.out[0] + t * k * N, (size_t)(k * N) * 4) == 0);
        result_free(&r1);
    }
    result_free(&rb);
    for (int i = 0; i < big.n_in; i++) free(big.in[i].data);
}

static void invariance_matmul_id(backend *vk)
{
    g_rng = 7;
    for (int d = 0; d < 2; d++) {
        invariance_matmul_id_ids(vk, g_wtypes[d], moe_ids_mixed);
        invariance_matmul_id_ids(vk, g_wtypes[d], moe_ids_one_expert);
    }
}

/* A decode row's attention alone equals the same row beside a prefill. */
static void invariance_attention(backend *vk)
{
    const int64_t H = 4, KVH = 2, hd = 64, bs = 16, n_slots = 16 * 12, ctx = 90, pre = 7;
    float *q = malloc((size_t)(pre + 1) * H * hd * 4);
    float *kc = malloc((size_t)n_slots * KVH * hd * 4), *vc = malloc((size_t)n_slots * KVH * hd * 4);
    g_rng = 7;
    for (int64_t i = 0; i < (pre + 1) * H * hd; i++) q[i] = rndf();
    for (int64_t i = 0; i < n_slots * KVH * hd; i++) kc[i] = rndf(), vc[i] = rndf();
    op_result r[2];
    for (int batch = 0; batch < 2; batch++) {
        int n_seqs = batch ? 2 : 1;
        int64_t T = batch ? pre + 1 : 1;
        op_case c = {.build = b_attention, .ip = {H, KVH, hd, bs}, .fp = 0.125};
        op_in *qi = add_in(&c, "q", ENC_F32, T, H * hd, GRAPH_INTERMEDIATE);
        memcpy(qi->data, q + (batch ? 0 : pre * H * hd), (size_t)(T * H * hd) * 4); /* the decode row is last */
        memcpy(add_in(&c, "k_cache", ENC_F32, n_slots, KVH * hd, GRAPH_CACHE)->data, kc, (size_t)n_slots * KVH * hd * 4);
        memcpy(add_in(&c, "v_cache", ENC_F32, n_slots, KVH * hd, GRAPH_CACHE)->data, vc, (size_t)n_slots * KVH * hd * 4);
        op_in *bt = add_in(&c, "block_tables", ENC_I32, n_seqs, 6, GRAPH_INPUT);
        for (int64_t i = 0; i < n_seqs * 6; i++) ints(bt)[i] = (int32_t)((batch && i < 6 ? i + 6 : i) % 12);
        op_in *sl = add_in(&c, "seq_lens", ENC_I32, n_seqs, 0, GRAPH_INPUT);
        op_in *qsl = add_in(&c, "query_start_loc", ENC_I32, n_seqs + 1, 0, GRAPH_INPUT);
        if (batch) {
            int32_t *b = ints(bt); /* the decode sequence keeps its table in row 1 */
            for (int64_t i = 0; i < 6; i++) b[6 + i] = (int32_t)i;
            ints(sl)[0] = (int32_t)pre, ints(sl)[1] = (int32_t)ctx;
            ints(qsl)[1] = (int32_t)pre, ints(qsl)[2] = (int32_t)(pre + 1);
        } else {
            ints(sl)[0] = (int32_t)ctx;
            ints(qsl)[1] = 1;
        }
        vk_output(vk, &c, &r[batch]);
    }
    CHECK(memcmp(r[0].out[0], (float *)r[1].out[0] + pre * H * hd, (size_t)(H * hd) * 4) == 0);
    result_free(&r[0]);
    result_free(&r[1]);
    free(q);
    free(kc);
    free(vc);
}

int main(void)
{
    backend *cpu = NULL, *vk = NULL;
    CHECK(cpu_backend_create(2, &cpu) == ENC_OK);
    enc_status s = vk_backend_create(-1, &vk);
    if (s != ENC_OK) {
        fprintf(stderr, "test_vulkan_ops: no Vulkan device: %s\n", enc_last_error());
        backend_destroy(cpu);
        return 1;
    }
    cases_get_rows(cpu, vk);
    cases_rms_norm(cpu, vk);
    cases_matmul(cpu, vk);
    cases_rope(cpu, vk);
    cases_elementwise(cpu, vk);
    cases_store_kv(cpu, vk);
    cases_store_kv_q8(cpu, vk);
    cases_attention(cpu, vk);
    cases_argmax(cpu, vk);
    cases_advance(cpu, vk);
    cases_moe_route(cpu, vk);
    cases_matmul_id(cpu, vk);
    cases_windows(cpu, vk);
    invariance_matmul(vk);
    invariance_matmul_id(vk);
    invariance_attention(vk);
    backend_destroy(vk);
    backend_destroy(cpu);
    printf("test_vulkan_ops: %d op cases against the CPU, %d failure(s)\n", g_cases, check_failures);
    return check_failures != 0;
}
