/* test_vulkan_quant.c - the Vulkan shaders over block-quantized weights
 * (matmul_q, matmul_id_q, get_rows_q) for Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_K, Q5_K and Q6_K,
 * against references written here on the weights dequantized by
 * base/quant.c (quant_dequantize_row), not against the CPU kernels (which
 * quantize the activations to 8 bits; the shaders multiply f32 activations
 * by f32 weights):
 *
 *   - matmul and matmul_id: a double-precision dot of each activation row
 *     with each dequantized weight row; the shader's f32 sums in its own
 *     order must lie within 1e-5 max|w| sum|x| of it (an f32 dot of K terms
 *     rounds by at most K 2^-24 sum|x w|; K <= 1024 here), over odd row
 *     counts, tails of the 64-row workgroups and of the 4-token tiles, and
 *     ids outside [0, E) (zero rows);
 *   - get_rows: every value within 2^-22 (|v| + |m|) of base/quant.c's
 *     (the shader fuses a * (q - z) - m into one fma);
 *   - batch invariance bit for bit: a token's matmul row alone (a decode
 *     step, tile of 1) equals its row in steps of 2 and 9 tokens (tiles of
 *     2 and 4), and a (token, slot)'s matmul_id row alone equals its row
 *     among others; so do a token's rows among 13 grouped by expert on the
 *     device (tiles of up to 4 pairs of one expert: both slots on one
 *     expert, an expert nobody chose, a bad id, every token on one expert),
 *     which also lie within the bound above.
 * Weights are gaussian rows quantized by base/quant.c, plus raw random
 * blocks (tests/quant_blocks.h: every bit pattern of the scales, negative d
 * and dmin). ENCORE_VK_SUBGROUP=0 runs the shaders' fallback reductions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_backend.h"
#include "base/quant.h"
#include "check.h"
#include "graph/graph.h"
#include "moe_ids.h"
#include "quant_blocks.h"
#include "xalloc.h"

static const enc_dtype g_types[] = {ENC_Q8_0, ENC_Q4_0, ENC_Q5_0, ENC_IQ4_NL, ENC_Q4_K, ENC_Q5_K, ENC_Q6_K, ENC_IQ4_XS, ENC_Q2_K, ENC_Q3_K, ENC_Q4_1, ENC_Q5_1};
static int g_cases;

/* --- inputs ---------------------------------------------------------------------- */

/* rows x k values of dt: even rows gaussian and quantized (raw blocks too
 * for the types but Q8_0, Q4_0 and Q4_K-Q6_K, which have no quantizer here), odd rows raw blocks. */
static void *make_weights(enc_dtype dt, int64_t rows, int64_t k)
{
    size_t rb = enc_dtype_row_bytes(dt, k), bb = enc_dtype_block_bytes(dt);
    unsigned char *w = xcalloc((size_t)rows, rb);
    float *row = xcalloc((size_t)k, sizeof *row);
    for (int64_t r = 0; r < rows; r++) {
        unsigned char *dst = w + (size_t)r * rb;
        for (int64_t i = 0; i < k; i++) row[i] = qb_gauss() * 0.5f;
        if (r % 2 != 0 || quant_quantize_row(dt, row, dst, k) != 0)
            for (size_t b = 0; b < rb / bb; b++) qb_block(dt, (int)(qb_next() % 5), dst + b * bb);
    }
    free(row);
    return w;
}

static float *make_floats(int64_t n)
{
    float *x = xcalloc((size_t)n, sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = qb_gauss();
    return x;
}

/* --- one graph on the device ------------------------------------------------------ */

enum { MAX_T = 4 };

typedef struct vq_graph {
    backend *be;
    enc_arena host;
    graph g;
    backend_buffer *bufs[MAX_T], *arena;
    int n_bufs;
} vq_graph;

static void vq_init(vq_graph *q, backend *be)
{
    memset(q, 0, sizeof *q);
    q->be = be;
    CHECK(arena_init(&q->host, 1 << 16) == ENC_OK);
    CHECK(graph_init(&q->g, &q->host, 8, 16) == ENC_OK);
}

/* A tensor of shape sh[0 .. n) holding `bytes` bytes of data, on the device. */
static graph_tensor *vq_tensor(vq_graph *q, graph_tensor_kind kind, enc_dtype dt, int n, const int64_t *sh,
                               const void *data, size_t bytes, const char *name)
{
    backend_buffer **b = &q->bufs[q->n_bufs++];
    CHECK(backend_buffer_alloc(q->be, bytes, name, b) == ENC_OK);
    CHECK(backend_buffer_write(q->be, *b, 0, data, bytes) == ENC_OK);
    graph_tensor *t = graph_new_tensor(&q->g, kind, dt, n, sh, name);
    graph_bind(t, *b, 0);
    return t;
}

/* Plan, run, and return dst's values (malloc'd); NULL if the run failed. */
static float *vq_run(vq_graph *q, graph_tensor *dst, const char *what)
{
    float *y = NULL;
    CHECK(dst != NULL);
    if (dst && graph_plan(&q->g, NULL) == ENC_OK &&
        backend_buffer_alloc(q->be, q->g.arena_size + 256, "arena", &q->arena) == ENC_OK &&
        graph_plan(&q->g, q->arena) == ENC_OK) {
        enc_status s = backend_graph_compute(q->be, &q->g);
        if (s != ENC_OK) fprintf(stderr, "%s: %s\n", what, enc_last_error());
        y = xcalloc(graph_tensor_nbytes(dst) / 4, 4);
        if (s != ENC_OK || backend_buffer_read(q->be, q->arena, dst->offset, y, graph_tensor_nbytes(dst)) != ENC_OK) {
            free(y);
            y = NULL;
        }
    }
    CHECK(y != NULL);
    for (int i = 0; i < q->n_bufs; i++) backend_buffer_free(q->be, q->bufs[i]);
    backend_buffer_free(q->be, q->arena);
    arena_free(&q->host);
    return y;
}

/* y = x W^T on the device: x [T, K] f32, w [N, K] of dt. */
static float *vk_matmul(backend *be, enc_dtype dt, const float *x, const void *w, int64_t T, int64_t K, int64_t N)
{
    vq_graph q;
    vq_init(&q, be);
    graph_tensor *tx = vq_tensor(&q, GRAPH_INPUT, ENC_F32, 2, (int64_t[]){T, K}, x, (size_t)(T * K) * 4, "x");
    graph_tensor *tw = vq_tensor(&q, GRAPH_WEIGHT, dt, 2, (int64_t[]){N, K}, w,
                                 (size_t)N * enc_dtype_row_bytes(dt, K), "w");
    return vq_run(&q, graph_matmul(&q.g, tx, tw), "matmul");
}

/* --- references ------------------------------------------------------------------ */

/* Whether v is within 1e-5 max|w| sum|x| of the double dot of x and w. */
static int dot_ok(float v, const float *x, const float *w, int64_t K)
{
    double ref = 0, wmax = 0, xsum = 0;
    for (int64_t i = 0; i < K; i++) {
        ref += (double)x[i] * w[i];
        wmax = fmax(wmax, fabs(w[i]));
        xsum += fabs(x[i]);
    }
    return fabs(v - ref) <= 1e-5 * wmax * xsum + 1e-30;
}

static float *dequantized(enc_dtype dt, const void *w, int64_t rows, int64_t K)
{
    float *f = xcalloc((size_t)(rows * K), sizeof *f);
    size_t rb = enc_dtype_row_bytes(dt, K);
    for (int64_t r = 0; r < rows; r++)
        CHECK(quant_dequantize_row(dt, (const char *)w + (size_t)r * rb, f + r * K, K) == 0);
    return f;
}

/* --- matmul ---------------------------------------------------------------------- */

static void matmul_case(backend *be, enc_dtype dt, int64_t T, int64_t K, int64_t N)
{
    void *w = make_weights(dt, N, K);
    float *x = make_floats(T * K), *wf = dequantized(dt, w, N, K);
    float *y = vk_matmul(be, dt, x, w, T, K, N);
    int bad = 0;
    for (int64_t t = 0; y && t < T; t++)
        for (int64_t n = 0; n < N; n++) bad += !dot_ok(y[t * N + n], x + t * K, wf + n * K, K);
    if (bad) fprintf(stderr, "FAIL matmul %s T=%lld K=%lld N=%lld: %d of %lld outside the bound\n",
                     enc_dtype_name(dt), (long long)T, (long long)K, (long long)N, bad, (long long)(T * N));
    CHECK(y && bad == 0);
    g_cases++;
    free(w), free(x), free(wf), free(y);
}

/* A token's row alone equals its row among 2 and 9 tokens, bit for bit. */
static void matmul_invariance(backend *be, enc_dtype dt)
{
    const int64_t K = 512, N = 70, T = 9;
    void *w = make_weights(dt, N, K);
    float *x = make_floats(T * K), *all = vk_matmul(be, dt, x, w, T, K, N);
    float *two = vk_matmul(be, dt, x + 5 * K, w, 2, K, N); /* tokens 5 and 6 */
    for (int64_t t = 0; all && two && t < T; t++) {
        float *one = vk_matmul(be, dt, x + t * K, w, 1, K, N);
        CHECK(one && memcmp(one, all + t * N, (size_t)N * 4) == 0);
        if (t == 5 || t == 6) CHECK(one && memcmp(one, two + (t - 5) * N, (size_t)N * 4) == 0);
        free(one);
    }
    CHECK(all && two);
    g_cases++;
    free(w), free(x), free(all), free(two);
}

static void test_matmul(backend *be)
{
    static const int64_t shapes[][3] = {/* T, K, N */
                                        {1, 256, 5}, {2, 512, 64}, {3, 256, 65}, {5, 768, 130},
                                        {17, 256, 33}, {4, 1024, 3}};
    for (size_t d = 0; d < sizeof g_types / sizeof *g_types; d++) {
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            matmul_case(be, g_types[d], shapes[s][0], shapes[s][1], shapes[s][2]);
        if (enc_dtype_block_elems(g_types[d]) == 32) { /* rows of a few 32-value blocks */
            matmul_case(be, g_types[d], 7, 96, 9);
            matmul_case(be, g_types[d], 1, 32, 3);
        }
        matmul_invariance(be, g_types[d]);
    }
}

/* --- matmul_id ------------------------------------------------------------------- */

typedef struct id_shape {
    int64_t T, k, K, N, E;
    int per_slot;
} id_shape;

/* y [T, k, N] on the device for ids [T, k] over experts w [E, N, K]. */
static float *vk_matmul_id(backend *be, enc_dtype dt, const id_shape *s, const float *x, const void *w,
                           const int32_t *ids)
{
    vq_graph q;
    vq_init(&q, be);
    int64_t xr = s->per_slot ? s->T * s->k : s->T;
    graph_tensor *tx = s->per_slot
                           ? vq_tensor(&q, GRAPH_INPUT, ENC_F32, 3, (int64_t[]){s->T, s->k, s->K}, x,
                                       (size_t)(xr * s->K) * 4, "x")
                           : vq_tensor(&q, GRAPH_INPUT, ENC_F32, 2, (int64_t[]){s->T, s->K}, x,
                                       (size_t)(xr * s->K) * 4, "x");
    graph_tensor *tw = vq_tensor(&q, GRAPH_WEIGHT, dt, 3, (int64_t[]){s->E, s->N, s->K}, w,
                                 (size_t)(s->E * s->N) * enc_dtype_row_bytes(dt, s->K), "experts");
    graph_tensor *ti = vq_tensor(&q, GRAPH_INPUT, ENC_I32, 2, (int64_t[]){s->T, s->k}, ids,
                                 (size_t)(s->T * s->k) * 4, "ids");
    return vq_run(&q, graph_matmul_id(&q.g, tx, tw, ti), "matmul_id");
}

/* The values of y [T, k, N] off the reference: a pair's dot with its
 * expert's dequantized row wf within dot_ok, 0 for an id outside [0, E). */
static int id_rows_bad(const id_shape *s, const float *x, const float *wf, const int32_t *ids, const float *y)
{
    int bad = 0;
    for (int64_t p = 0; p < s->T * s->k; p++) {
        const float *xp = x + (s->per_slot ? p : p / s->k) * s->K;
        for (int64_t n = 0; n < s->N; n++) {
            float v = y[p * s->N + n];
            bad += ids[p] < 0 || ids[p] >= s->E ? v != 0.0f : !dot_ok(v, xp, wf + (ids[p] * s->N + n) * s->K, s->K);
        }
    }
    return bad;
}

static void matmul_id_case(backend *be, enc_dtype dt, id_shape s)
{
    int64_t pairs = s.T * s.k, xr = s.per_slot ? pairs : s.T;
    void *w = make_weights(dt, s.E * s.N, s.K);
    float *x = make_floats(xr * s.K), *wf = dequantized(dt, w, s.E * s.N, s.K);
    int32_t *ids = xcalloc((size_t)pairs, sizeof *ids);
    for (int64_t p = 0; p < pairs; p++) /* some outside [0, E) */
        ids[p] = qb_next() % 9 == 0 ? (qb_next() & 1 ? -1 : (int32_t)s.E) : (int32_t)(qb_next() % (uint64_t)s.E);
    float *y = vk_matmul_id(be, dt, &s, x, w, ids);
    int bad = y ? id_rows_bad(&s, x, wf, ids, y) : 0;
    /* batch invariance: the last pair alone (one token, one slot) */
    id_shape one = {1, 1, s.K, s.N, s.E, 0};
    int32_t id = ids[pairs - 1] < 0 || ids[pairs - 1] >= s.E ? 0 : ids[pairs - 1];
    float *y1 = vk_matmul_id(be, dt, &one, x + (s.per_slot ? pairs - 1 : s.T - 1) * s.K, w, &id);
    if (id == ids[pairs - 1]) CHECK(y && y1 && memcmp(y1, y + (pairs - 1) * s.N, (size_t)s.N * 4) == 0);
    if (bad) fprintf(stderr, "FAIL matmul_id %s T=%lld k=%lld K=%lld N=%lld E=%lld%s: %d wrong\n", enc_dtype_name(dt),
                     (long long)s.T, (long long)s.k, (long long)s.K, (long long)s.N, (long long)s.E,
                     s.per_slot ? " per slot" : "", bad);
    CHECK(y && bad == 0);
    g_cases++;
    free(w), free(x), free(wf), free(ids), free(y), free(y1);
}

/* T = 13 tokens, grouped by expert on the device (T >= 8; 13 not a multiple
 * of the 4-pair tile), ids from pick (moe_ids.h): within the bound of the
 * reference, and each token's rows bit for bit those of the token alone
 * (one workgroup per pair). */
static void matmul_id_grouped(backend *be, enc_dtype dt, int per_slot, int32_t (*pick)(int64_t t, int64_t s))
{
    id_shape s = {13, 2, 256, 70, MOE_IDS_EXPERTS, per_slot};
    int64_t pairs = s.T * s.k, xt = per_slot ? s.k : 1; /* activation rows per token */
    void *w = make_weights(dt, s.E * s.N, s.K);
    float *x = make_floats(s.T * xt * s.K), *wf = dequantized(dt, w, s.E * s.N, s.K);
    int32_t *ids = xcalloc((size_t)pairs, sizeof *ids);
    for (int64_t p = 0; p < pairs; p++) ids[p] = pick(p / s.k, p % s.k);
    float *y = vk_matmul_id(be, dt, &s, x, w, ids);
    int bad = y ? id_rows_bad(&s, x, wf, ids, y) : 0, differ = 0;
    id_shape one = {1, s.k, s.K, s.N, s.E, per_slot};
    for (int64_t t = 0; y && t < s.T; t++) {
        float *y1 = vk_matmul_id(be, dt, &one, x + t * xt * s.K, w, ids + t * s.k);
        differ += !y1 || memcmp(y1, y + t * s.k * s.N, (size_t)(s.k * s.N) * 4) != 0;
        free(y1);
    }
    if (bad || differ)
        fprintf(stderr, "FAIL matmul_id grouped %s%s (%s): %d values off the reference, %d tokens differ alone\n",
                enc_dtype_name(dt), per_slot ? " per slot" : "", pick == moe_ids_mixed ? "mixed" : "one expert", bad,
                differ);
    CHECK(y && bad == 0 && differ == 0);
    g_cases++;
    free(w), free(x), free(wf), free(ids), free(y);
}

static void test_matmul_id(backend *be)
{
    static const id_shape shapes[] = {{1, 8, 256, 48, 16, 0}, {3, 2, 512, 65, 5, 1}, {6, 4, 256, 40, 8, 0},
                                      {2, 2, 768, 130, 4, 1}};
    for (size_t d = 0; d < sizeof g_types / sizeof *g_types; d++) {
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) matmul_id_case(be, g_types[d], shapes[s]);
        if (enc_dtype_block_elems(g_types[d]) == 32) matmul_id_case(be, g_types[d], (id_shape){7, 3, 96, 9, 4, 1});
        matmul_id_grouped(be, g_types[d], 0, moe_ids_mixed);
        matmul_id_grouped(be, g_types[d], 1, moe_ids_mixed);
        matmul_id_grouped(be, g_types[d], 0, moe_ids_one_expert);
    }
}

/* --- get_rows -------------------------------------------------------------------- */

static void get_rows_case(backend *be, enc_dtype dt, int64_t R, int64_t D, int64_t n)
{
    void *tab = make_weights(dt, R, D);
    float *ref = dequantized(dt, tab, R, D);
    int32_t *ids = xcalloc((size_t)n, sizeof *ids);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(qb_next() % (uint64_t)R);
    if (n > 2) ids[1] = -1, ids[2] = (int32_t)R; /* outside: zero rows */
    vq_graph q;
    vq_init(&q, be);
    graph_tensor *tt = vq_tensor(&q, GRAPH_WEIGHT, dt, 2, (int64_t[]){R, D}, tab,
                                 (size_t)R * enc_dtype_row_bytes(dt, D), "table");
    graph_tensor *ti = vq_tensor(&q, GRAPH_INPUT, ENC_I32, 1, (int64_t[]){n}, ids, (size_t)n * 4, "ids");
    float *y = vq_run(&q, graph_get_rows(&q.g, tt, ti), "get_rows");
    int bad = 0;
    for (int64_t i = 0; y && i < n; i++)
        for (int64_t d = 0; d < D; d++) {
            bool in = ids[i] >= 0 && ids[i] < R;
            double want = in ? ref[ids[i] * D + d] : 0.0, got = y[i * D + d];
            /* |v| + |m| <= 2 max|row| + the f16 range of the mins: bound by the row's largest value */
            double span = 0;
            for (int64_t e = 0; in && e < D; e++) span = fmax(span, fabs(ref[ids[i] * D + e]));
            bad += fabs(got - want) > ldexp(4.0 * span, -22);
        }
    if (bad) fprintf(stderr, "FAIL get_rows %s [%lld, %lld] x %lld: %d wrong\n", enc_dtype_name(dt), (long long)R,
                     (long long)D, (long long)n, bad);
    CHECK(y && bad == 0);
    g_cases++;
    free(tab), free(ref), free(ids), free(y);
}

static void test_get_rows(backend *be)
{
    for (size_t d = 0; d < sizeof g_types / sizeof *g_types; d++) {
        get_rows_case(be, g_types[d], 9, 256, 5);
        get_rows_case(be, g_types[d], 40, 512, 17);
    }
}

/* --- refusals -------------------------------------------------------------------- */

/* A block type no shader reads (the activations' Q8_K) is refused by name. */
static void test_refusal(backend *be)
{
    const int64_t K = 256, N = 2;
    size_t rb = enc_dtype_row_bytes(ENC_Q8_K, K);
    unsigned char *w = xcalloc((size_t)N, rb);
    float x[256] = {0};
    CHECK(!backend_supports_weight_dtype(be, GRAPH_OP_MATMUL, ENC_Q8_K));
    CHECK(!backend_supports_weight_dtype(be, GRAPH_OP_ADD, ENC_Q8_0));
    for (size_t d = 0; d < sizeof g_types / sizeof *g_types; d++)
        CHECK(backend_supports_weight_dtype(be, GRAPH_OP_MATMUL_ID, g_types[d]));
    vq_graph q;
    vq_init(&q, be);
    graph_tensor *tx = vq_tensor(&q, GRAPH_INPUT, ENC_F32, 2, (int64_t[]){1, K}, x, sizeof x, "x");
    graph_tensor *tw = vq_tensor(&q, GRAPH_WEIGHT, ENC_Q8_K, 2, (int64_t[]){N, K}, w, (size_t)N * rb, "w8k");
    graph_tensor *y = graph_matmul(&q.g, tx, tw);
    enc_status s = ENC_OK;
    if (y && graph_plan(&q.g, NULL) == ENC_OK &&
        backend_buffer_alloc(be, q.g.arena_size + 256, "arena", &q.arena) == ENC_OK &&
        graph_plan(&q.g, q.arena) == ENC_OK)
        s = backend_graph_compute(be, &q.g);
    /* the graph refuses Q8_K weights itself, or the backend does, naming the tensor */
    CHECK(!y || (s != ENC_OK && strstr(enc_last_error(), "w8k") && strstr(enc_last_error(), "Q8_K")));
    for (int i = 0; i < q.n_bufs; i++) backend_buffer_free(be, q.bufs[i]);
    backend_buffer_free(be, q.arena);
    arena_free(&q.host);
    free(w);
}

int main(void)
{
    backend *vk = NULL;
    if (vk_backend_create(-1, &vk) != ENC_OK) {
        fprintf(stderr, "test_vulkan_quant: no Vulkan device: %s\n", enc_last_error());
        return 1;
    }
    test_matmul(vk);
    test_matmul_id(vk);
    test_get_rows(vk);
    test_refusal(vk);
    backend_destroy(vk);
    printf("test_vulkan_quant: %d cases, %d failure(s)\n", g_cases, check_failures);
    return check_failures != 0;
}
