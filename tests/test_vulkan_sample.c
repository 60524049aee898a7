/* test_vulkan_sample.c - the device sampler (GRAPH_OP_SAMPLE) on Vulkan
 * (shaders/sample.comp) against the CPU op over the same inputs, bit for
 * bit: the ids, the history each row writes at position + 1, the rows as
 * the op leaves them (after penalties and masks) and the logprobs records
 * (the chosen id's logprob, the n_top best ids and theirs); every id also
 * equals the plain reference picker's (tests/ref_sampler.h).
 *
 *   matrix   600 ids, logits of sd 0.1 to 4 (some rounded to quarters: ties),
 *            temperature 0 / 0.3 / 1 / 1.7 x top-k off / 1 / 20 / all x top-p
 *            0.1 / 0.9 / 1 x min-p 0 / 0.05, penalty sets, min_tokens masks,
 *            token masks, logprobs with 0 / 5 / 20 alternatives, n_sample
 *            below the vocabulary, padding rows, a logit bias on two rows of
 *            three (ref_bias_fixture)
 *   small    5, 17 and 300 ids (less than a chunk, one and a half chunks),
 *            1024 and 1025 (either side of a CPU device's 8 / 64-invocation
 *            bound), 4096 and 4097 (either side of the 64 / 256-invocation
 *            bound, vk_ops.c)
 *   large    151936 ids: sd 0.1 to 4, top-k 20, top-p, min-p, a mask, a row
 *            of ties; a flat row of 40000 ids under top-p 0.95 (a boundary
 *            bin of nearly all of them, sorted and walked)
 *   refuse   (ENCORE_VK_FLOAT64=0) the backend says no to the op, and a
 *            graph with it fails naming shaderFloat64
 *
 * usage: test_vulkan_sample [refuse] */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/vulkan/vk_backend.h"
#include "base/philox.h"
#include "backend_upload.h"
#include "check.h"
#include "graph/sample_row.h"
#include "ref_sampler.h"

/* --- one batch on one backend ---------------------------------------------------- */

typedef struct sample_case {
    int64_t S, V, H;
    float *logits;          /* [S, V] */
    graph_sample_row *rows; /* [S] */
    int32_t *positions;     /* [S] */
    int32_t *history;       /* [S, H] */
    uint32_t *mask;         /* [S, GRAPH_SAMPLE_MASK_WORDS(V)] or NULL */
} sample_case;

typedef struct sample_out {
    int32_t *ids;     /* [S] */
    int32_t *history; /* [S, H] after the op */
    float *logits;    /* [S, V] after the op */
    int32_t *lp;      /* [S, GRAPH_SAMPLE_LP_WORDS] */
} sample_out;

static sample_out out_alloc(const sample_case *c)
{
    sample_out o = {calloc((size_t)c->S, sizeof(int32_t)), calloc((size_t)(c->S * c->H), sizeof(int32_t)),
                    calloc((size_t)(c->S * c->V), sizeof(float)),
                    calloc((size_t)c->S * GRAPH_SAMPLE_LP_WORDS, sizeof(int32_t))};
    return o;
}

static void out_free(sample_out *o)
{
    free(o->ids);
    free(o->history);
    free(o->logits);
    free(o->lp);
}

/* The op over c on be; ENC_OK or the compute's status. */
static enc_status run_op(backend *be, const sample_case *c, sample_out *o)
{
    enc_arena host;
    CHECK(arena_init(&host, 1 << 16) == ENC_OK);
    graph g;
    CHECK(graph_init(&g, &host, 2, 8) == ENC_OK);
    int64_t MW = GRAPH_SAMPLE_MASK_WORDS(c->V);
    size_t lp_bytes = (size_t)c->S * GRAPH_SAMPLE_LP_WORDS * sizeof(int32_t);
    backend_buffer *b[6] = {
        upload(be, c->logits, (size_t)(c->S * c->V) * sizeof(float), "logits"),
        upload(be, c->rows, (size_t)c->S * sizeof(graph_sample_row), "params"),
        upload(be, c->positions, (size_t)c->S * sizeof(int32_t), "positions"),
        upload(be, c->history, (size_t)(c->S * c->H) * sizeof(int32_t), "history"),
        upload(be, o->lp, lp_bytes, "logprobs"),
        c->mask ? upload(be, c->mask, (size_t)(c->S * MW) * sizeof(uint32_t), "mask") : NULL,
    };
    graph_tensor *t[6] = {
        graph_tensor_2d(&g, GRAPH_INPUT, ENC_F32, c->S, c->V, "logits"),
        graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, GRAPH_SAMPLE_ROW_WORDS, "params"),
        graph_tensor_1d(&g, GRAPH_INPUT, ENC_I32, c->S, "positions"),
        graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, c->H, "history"),
        graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, GRAPH_SAMPLE_LP_WORDS, "logprobs"),
        c->mask ? graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, MW, "mask") : NULL,
    };
    for (int i = 0; i < 6; i++)
        if (t[i]) graph_bind(t[i], b[i], 0);
    graph_tensor *dst = graph_sample(&g, t[0], t[1], t[2], t[3], t[4], t[5]);
    CHECK(dst != NULL);
    backend_buffer *arena = NULL;
    CHECK(graph_plan(&g, NULL) == ENC_OK);
    CHECK(backend_buffer_alloc(be, g.arena_size, "arena", &arena) == ENC_OK);
    CHECK(graph_plan(&g, arena) == ENC_OK);
    enc_status st = backend_graph_compute(be, &g);
    if (st == ENC_OK) {
        CHECK(backend_buffer_read(be, arena, dst->offset, o->ids, (size_t)c->S * sizeof(int32_t)) == ENC_OK);
        CHECK(backend_buffer_read(be, b[0], 0, o->logits, (size_t)(c->S * c->V) * sizeof(float)) == ENC_OK);
        CHECK(backend_buffer_read(be, b[3], 0, o->history, (size_t)(c->S * c->H) * sizeof(int32_t)) == ENC_OK);
        CHECK(backend_buffer_read(be, b[4], 0, o->lp, lp_bytes) == ENC_OK);
    }
    for (int i = 0; i < 6; i++)
        if (b[i]) CHECK(backend_buffer_free(be, b[i]) == ENC_OK);
    CHECK(backend_buffer_free(be, arena) == ENC_OK);
    arena_free(&host);
    return st;
}

/* --- comparing ------------------------------------------------------------------- */

/* Do two logprobs records agree: id, logprob, count and the listed entries? */
static bool lp_same(const int32_t *a, const int32_t *b)
{
    graph_sample_logprobs x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    if (x.id != y.id || memcmp(&x.logprob, &y.logprob, sizeof x.logprob) || x.n_top != y.n_top) return false;
    for (int j = 0; j < x.n_top && j < GRAPH_SAMPLE_MAX_TOP; j++)
        if (x.top_ids[j] != y.top_ids[j] || memcmp(&x.top_logprobs[j], &y.top_logprobs[j], sizeof(float)))
            return false;
    return true;
}

/* The reference picker's id for row r of c (before the op changed anything). */
static int32_t ref_id(const sample_case *c, int64_t r)
{
    const graph_sample_row *p = &c->rows[r];
    if (p->n_sample <= 0 || p->n_sample > c->V) return 0;
    int64_t n = p->n_sample;
    float *x = malloc(sizeof(float) * (size_t)n);
    ref_w *it = malloc(sizeof(ref_w) * (size_t)n);
    double *w = malloc(sizeof(double) * (size_t)n);
    bool *keep = malloc(sizeof(bool) * (size_t)n);
    int64_t pos = c->positions[r] + 1;
    const uint32_t *mask = c->mask ? c->mask + r * GRAPH_SAMPLE_MASK_WORDS(c->V) : NULL;
    int32_t id = (p->flags & GRAPH_SAMPLE_MASKED) && !mask
                     ? -1
                     : ref_pick_masked(c->logits + r * c->V, p, c->history + r * c->H, pos, mask, x, it, w, keep);
    free(x);
    free(it);
    free(w);
    free(keep);
    return id;
}

/* Run c on both backends and compare everything; what: the case's name. */
static void compare(backend *cpu, backend *vk, const sample_case *c, const char *what)
{
    sample_out oc = out_alloc(c), ov = out_alloc(c);
    CHECK(run_op(cpu, c, &oc) == ENC_OK);
    enc_status st = run_op(vk, c, &ov);
    if (st != ENC_OK) fprintf(stderr, "%s: vulkan: %s\n", what, enc_last_error());
    CHECK(st == ENC_OK);
    int bad = 0;
    for (int64_t r = 0; r < c->S; r++) {
        const graph_sample_row *p = &c->rows[r];
        bool ok = oc.ids[r] == ov.ids[r] && oc.ids[r] == ref_id(c, r) &&
                  memcmp(oc.history + r * c->H, ov.history + r * c->H, (size_t)c->H * sizeof(int32_t)) == 0 &&
                  memcmp(oc.logits + r * c->V, ov.logits + r * c->V, (size_t)c->V * sizeof(float)) == 0;
        if ((p->flags & GRAPH_SAMPLE_LOGPROBS) && oc.ids[r] >= 0)
            ok = ok && lp_same(oc.lp + r * GRAPH_SAMPLE_LP_WORDS, ov.lp + r * GRAPH_SAMPLE_LP_WORDS);
        if (!ok && bad++ < 5)
            fprintf(stderr, "%s: row %lld (T %g top-k %d top-p %g min-p %g flags %d): cpu %d vulkan %d ref %d\n",
                    what, (long long)r, p->temperature, p->top_k, p->top_p, p->min_p, p->flags, oc.ids[r],
                    ov.ids[r], ref_id(c, r));
    }
    CHECK(bad == 0);
    out_free(&oc);
    out_free(&ov);
}

/* --- inputs --------------------------------------------------------------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static double rnd01(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) * 0x1.0p-53;
}

/* A normal variate (Box-Muller). */
static double rnd_normal(void) { return sqrt(-2.0 * log(1.0 - rnd01())) * cos(6.283185307179586 * rnd01()); }

/* Row r of V logits of standard deviation sd; `ties`: rounded to quarters. */
static void fill_row(float *x, int64_t V, double sd, bool ties)
{
    for (int64_t i = 0; i < V; i++) {
        double v = sd * rnd_normal();
        x[i] = (float)(ties ? round(v * 4.0) / 4.0 : v);
    }
}

static sample_case case_alloc(int64_t S, int64_t V, int64_t H, bool mask)
{
    sample_case c = {S, V, H, calloc((size_t)(S * V), sizeof(float)), calloc((size_t)S, sizeof(graph_sample_row)),
                     calloc((size_t)S, sizeof(int32_t)), calloc((size_t)(S * H), sizeof(int32_t)),
                     mask ? calloc((size_t)(S * GRAPH_SAMPLE_MASK_WORDS(V)), sizeof(uint32_t)) : NULL};
    return c;
}

static void case_free(sample_case *c)
{
    free(c->logits);
    free(c->rows);
    free(c->positions);
    free(c->history);
    free(c->mask);
}

/* A history of prompt and output ids (some repeated, some out of range) and
 * a position inside it. */
static void fill_history(sample_case *c, int64_t r, int32_t n_prompt, int32_t pos)
{
    for (int64_t j = 0; j < c->H; j++)
        c->history[r * c->H + j] = (int32_t)((j * 37 + r * 11) % (c->V + 3)) - (j % 11 == 5 ? c->V : 0);
    c->rows[r].n_prompt = n_prompt;
    c->positions[r] = pos;
}

/* Row r's mask: ids allowed when (id + r) % m != 0 (m = 1: nothing allowed). */
static void fill_mask(sample_case *c, int64_t r, int m)
{
    uint32_t *w = c->mask + r * GRAPH_SAMPLE_MASK_WORDS(c->V);
    for (int64_t i = 0; i < c->V; i++)
        if ((i + r) % m != 0) w[i >> 5] |= 1u << (i & 31);
    c->rows[r].flags |= GRAPH_SAMPLE_MASKED;
}

/* --- the cases ------------------------------------------------------------------ */

static const double m_temps[] = {0.0, 0.3, 1.0, 1.7};
static const int32_t m_topk[] = {0, 1, 20, -1 /* all */};
static const double m_topp[] = {0.1, 0.9, 1.0};
static const double m_minp[] = {0.0, 0.05};
static const double m_sd[] = {0.1, 0.5, 1.0, 2.0, 4.0};
static const double m_pen[][3] = {{1, 0, 0}, {1.3, 0, 0}, {1.2, -0.4, 0.3}, {1, 0.5, 0.7}};

/* Row r of the matrix (combination k): its parameters, logits, history, mask. */
static void matrix_row(sample_case *c, int64_t r, int k)
{
    graph_sample_row *p = &c->rows[r];
    int ti = k % 4, ki = k / 4 % 4, pi = k / 16 % 3, mi = k / 48 % 2, qi = (k + (int)r) % 4;
    *p = (graph_sample_row){
        .temperature = m_temps[ti],
        .top_k = m_topk[ki] < 0 ? (int32_t)c->V : m_topk[ki],
        .top_p = m_topp[pi],
        .min_p = m_minp[mi],
        .repetition_penalty = m_pen[qi][0],
        .presence_penalty = m_pen[qi][1],
        .frequency_penalty = m_pen[qi][2],
        .seed = 0x5eed0000u + 7919u * (uint64_t)k + (uint64_t)r,
        .min_tokens = r % 3 == 1 ? 40 : 0,
        .n_sample = r % 5 == 2 ? (int32_t)c->V - 13 : (int32_t)c->V,
        .n_mask = 3,
        .flags = (qi ? GRAPH_SAMPLE_PENALTIES : 0) | (r % 2 ? GRAPH_SAMPLE_LOGPROBS : 0),
        .n_top = (int32_t)(r % 3) * 5 + (r % 6 == 5 ? 5 : 0),
        .mask_ids = {7, 57, (int32_t)c->V - 20},
    };
    if (r % 3 != 1) ref_bias_fixture(p, r, c->V);
    fill_row(c->logits + r * c->V, c->V, m_sd[(k + r) % 5], r % 4 == 3);
    fill_history(c, r, 12, 12 + (int32_t)(r % 7) * 4);
    if (c->mask && r % 4 == 1) fill_mask(c, r, r % 8 == 1 ? 3 : 2);
}

static void test_matrix(backend *cpu, backend *vk)
{
    enum { S = 12, V = 600, H = 48, N_COMBOS = 96 };
    for (int k0 = 0; k0 < N_COMBOS; k0 += 4) {
        sample_case c = case_alloc(S, V, H, k0 % 8 == 0);
        for (int64_t r = 0; r < S; r++)
            matrix_row(&c, r, k0 + (int)(r % 4));
        c.rows[S - 1].n_sample = 0; /* padding */
        if (c.mask) { /* nothing allowed */
            memset(c.mask + 5 * GRAPH_SAMPLE_MASK_WORDS(V), 0, GRAPH_SAMPLE_MASK_WORDS(V) * sizeof(uint32_t));
            c.rows[5].flags |= GRAPH_SAMPLE_MASKED;
        } else { /* a masked row with no mask input */
            c.rows[7].flags |= GRAPH_SAMPLE_MASKED;
        }
        char what[64];
        snprintf(what, sizeof what, "matrix %d", k0);
        compare(cpu, vk, &c, what);
        case_free(&c);
    }
}

static void test_small(backend *cpu, backend *vk)
{
    const int64_t sizes[] = {5, 17, 300, 1024, 1025, 4096, 4097};
    for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++) {
        sample_case c = case_alloc(8, sizes[s], 48, true);
        for (int64_t r = 0; r < 8; r++) {
            matrix_row(&c, r, (int)(r * 13 + s) % 96);
            c.rows[r].mask_ids[2] = 1;
            c.rows[r].n_sample = (int32_t)sizes[s] - (r == 2 ? 1 : 0);
        }
        char what[64];
        snprintf(what, sizeof what, "small %lld", (long long)sizes[s]);
        compare(cpu, vk, &c, what);
        case_free(&c);
    }
}

/* 151936 ids: sd 0.1 (flat) under top-k 20, sd 4 under top-k 20 and top-p
 * 0.95, sd 1 under top-p 0.9 and min-p with a mask, a row of ties (8
 * levels) under top-p 0.5; then a flat row of 40000 ids under top-p 0.95,
 * whose boundary bin (nearly every id) is sorted and walked through several
 * hand-overs. (A flat 151936-id row under top-p sorts 148000 ids: seconds
 * on lavapipe, too slow for the suite; the same path at 40000.) */
static void test_large(backend *cpu, backend *vk)
{
    enum { S = 4, V = 151936, H = 64 };
    sample_case c = case_alloc(S, V, H, true);
    const double sd[S] = {0.1, 4.0, 1.0, 0.0};
    for (int64_t r = 0; r < S; r++) {
        fill_row(c.logits + r * V, V, sd[r], false);
        c.rows[r] = (graph_sample_row){.temperature = r == 1 ? 0.8 : 1.0, .top_p = r == 1 ? 0.95 : 0.9,
                                       .top_k = r < 2 ? 20 : 0, .min_p = r == 2 ? 0.01 : 0.0,
                                       .repetition_penalty = 1.1, .seed = 42u + (uint64_t)r,
                                       .n_sample = V, .flags = GRAPH_SAMPLE_PENALTIES | GRAPH_SAMPLE_LOGPROBS,
                                       .n_top = 20};
        fill_history(&c, r, 20, 40);
    }
    c.rows[0].top_p = 1.0;
    for (int64_t i = 0; i < V; i++) /* ties: 8 levels */
        c.logits[3 * V + i] = (float)(i % 8) * 0.5f;
    c.rows[3].top_p = 0.5;
    fill_mask(&c, 2, 2);
    compare(cpu, vk, &c, "large");
    case_free(&c);

    enum { VF = 40000 };
    sample_case f = case_alloc(1, VF, H, false);
    fill_row(f.logits, VF, 0.1, false);
    f.rows[0] = (graph_sample_row){.temperature = 1.0, .top_p = 0.95, .seed = 7u, .n_sample = VF,
                                   .flags = GRAPH_SAMPLE_LOGPROBS, .n_top = 3};
    fill_history(&f, 0, 20, 40);
    compare(cpu, vk, &f, "flat");
    case_free(&f);
}

/* Without shaderFloat64 (ENCORE_VK_FLOAT64=0) the op is refused by name. */
static void test_refuse(backend *vk)
{
    CHECK(!backend_supports_op(vk, GRAPH_OP_SAMPLE));
    CHECK(backend_supports_op(vk, GRAPH_OP_ARGMAX));
    sample_case c = case_alloc(2, 40, 8, false);
    for (int64_t r = 0; r < 2; r++)
        matrix_row(&c, r, 5);
    sample_out o = out_alloc(&c);
    enc_status st = run_op(vk, &c, &o);
    CHECK(st == ENC_ERR_UNSUPPORTED);
    CHECK(strstr(enc_last_error(), "shaderFloat64") != NULL);
    fprintf(stderr, "refused: %s\n", enc_last_error());
    out_free(&o);
    case_free(&c);
}

int main(int argc, char **argv)
{
    backend *cpu = NULL, *vk = NULL;
    CHECK(cpu_backend_create(2, &cpu) == ENC_OK);
    enc_status st = vk_backend_create(-1, &vk);
    if (st != ENC_OK) fprintf(stderr, "vulkan: %s\n", enc_last_error());
    CHECK(st == ENC_OK);
    if (!cpu || !vk) return 1;
    if (argc > 1 && strcmp(argv[1], "refuse") == 0) {
        test_refuse(vk);
    } else {
        CHECK(backend_supports_op(vk, GRAPH_OP_SAMPLE));
        test_small(cpu, vk);
        test_matrix(cpu, vk);
        test_large(cpu, vk);
    }
    backend_destroy(vk);
    backend_destroy(cpu);
    return check_failures != 0;
}
