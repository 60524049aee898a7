/* test_sample_op.c - the device sampler (GRAPH_OP_SAMPLE) on the CPU
 * backend, against a reference picker written here plainly from the rules of
 * engine/sampler.h (tests/ref_sampler.h): penalties id by id from their
 * definitions, a full sort of the vocabulary for top-k / top-p, the masses
 * and the draw's walk written out from base/sample_math.h's definition, and
 * the same uniform (philox_uniform). The host sampler (engine/sampler.c) is
 * held to the same reference.
 *
 *   matrix     temperature 0 / 0.3 / 1 / 1.7 x top-k off / 1 / 20 / all x
 *              top-p 0.1 / 0.9 / 1 x min-p 0 / 0.05 x five penalty sets,
 *              with min_tokens masks, n_sample below the vocabulary and a
 *              logit bias on two rows of three (ref_bias_fixture): the
 *              op's ids equal the reference's and the host sampler's, each
 *              row's history gets its id at position + 1
 *   invariance the rows of a batch of 8 give the same ids alone, and with 1
 *              or 3 threads
 *   threads    batches of 1 and 2 rows (fewer rows than threads: a row's
 *              weights split over the threads) with 1, 2 and 3 threads: the
 *              ids, the history and the logprobs records byte for byte the
 *              one-thread op's, the ids the reference's
 *   large      a 151936-id row, flat enough at T = 1.7 and top-p 0.95 that the
 *              kept set spans many bins, and a row of ties
 *   chi2       20,000 draws from one row (T 0.8, top-k 20, top-p 0.9): the
 *              frequencies match softmax(l / T) truncated and renormalised,
 *              chi-square at significance 0.001; a draw of an excluded id
 *              fails outright
 *   mask       token masks (ids = r mod m, one id, the best id, the largest
 *              logits barred, none, only a min_tokens-masked id) on half the
 *              rows of each batch, over temperatures, filters, penalties and
 *              16 seeds: the op's ids equal the reference's and the host
 *              sampler's, are always allowed (-1 when nothing is), and the
 *              unmasked rows choose what they choose with no mask input
 *   bias       +100 on the worst id, -100 on the best: greedy and a top-k 1
 *              draw pick what the bias says, on the op and the host sampler;
 *              the logprobs record stays the raw row's
 *
 * usage: test_sample_op */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "base/philox.h"
#include "backend_upload.h"
#include "check.h"
#include "engine/sampler.h"
#include "graph/sample_row.h"
#include "ref_sampler.h"

/* --- running the op ------------------------------------------------------------ */

typedef struct sample_case {
    int64_t S, V, H;
    const float *logits;          /* [S, V] */
    const graph_sample_row *rows; /* [S] */
    const int32_t *positions;     /* [S] */
    const int32_t *history;       /* [S, H] */
    const uint32_t *mask;         /* [S, GRAPH_SAMPLE_MASK_WORDS(V)] or NULL: no mask input */
    int32_t *lp_out;              /* [S, GRAPH_SAMPLE_LP_WORDS] read back, or NULL: no logprobs */
} sample_case;

/* The op's ids in ids[S], and the history after it in hist_out[S, H]. */
static void run_op(backend *be, const sample_case *c, int32_t *ids, int32_t *hist_out)
{
    enc_arena host;
    CHECK(arena_init(&host, 1 << 16) == ENC_OK);
    graph g;
    CHECK(graph_init(&g, &host, 2, 8) == ENC_OK);
    size_t mask_bytes = (size_t)(c->S * GRAPH_SAMPLE_MASK_WORDS(c->V)) * sizeof(uint32_t);
    backend_buffer *mb = c->mask ? upload(be, c->mask, mask_bytes, "mask") : NULL;
    graph_tensor *mt = NULL;
    if (c->mask) {
        mt = graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, GRAPH_SAMPLE_MASK_WORDS(c->V), "mask");
        graph_bind(mt, mb, 0);
    }
    backend_buffer *b[4] = {
        upload(be, c->logits, (size_t)(c->S * c->V) * sizeof(float), "logits"),
        upload(be, c->rows, (size_t)c->S * sizeof(graph_sample_row), "params"),
        upload(be, c->positions, (size_t)c->S * sizeof(int32_t), "positions"),
        upload(be, c->history, (size_t)(c->S * c->H) * sizeof(int32_t), "history"),
    };
    graph_tensor *t[4] = {
        graph_tensor_2d(&g, GRAPH_INPUT, ENC_F32, c->S, c->V, "logits"),
        graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, GRAPH_SAMPLE_ROW_WORDS, "params"),
        graph_tensor_1d(&g, GRAPH_INPUT, ENC_I32, c->S, "positions"),
        graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, c->H, "history"),
    };
    for (int i = 0; i < 4; i++)
        graph_bind(t[i], b[i], 0);
    size_t lp_bytes = (size_t)(c->S * GRAPH_SAMPLE_LP_WORDS) * sizeof(int32_t);
    backend_buffer *lb = NULL;
    graph_tensor *lt = NULL;
    if (c->lp_out) {
        memset(c->lp_out, 0x5A, lp_bytes); /* what a record not written reads as */
        lb = upload(be, c->lp_out, lp_bytes, "logprobs");
        lt = graph_tensor_2d(&g, GRAPH_INPUT, ENC_I32, c->S, GRAPH_SAMPLE_LP_WORDS, "logprobs");
        graph_bind(lt, lb, 0);
    }
    graph_tensor *dst = graph_sample(&g, t[0], t[1], t[2], t[3], lt, mt);
    CHECK(dst != NULL);
    backend_buffer *arena = NULL;
    CHECK(graph_plan(&g, NULL) == ENC_OK);
    CHECK(backend_buffer_alloc(be, g.arena_size, "arena", &arena) == ENC_OK);
    CHECK(graph_plan(&g, arena) == ENC_OK);
    enc_status st = backend_graph_compute(be, &g);
    if (st != ENC_OK) fprintf(stderr, "sample op: %s\n", enc_last_error());
    CHECK(st == ENC_OK);
    CHECK(backend_buffer_read(be, arena, dst->offset, ids, (size_t)c->S * sizeof(int32_t)) ==
          ENC_OK);
    if (hist_out)
        CHECK(backend_buffer_read(be, b[3], 0, hist_out, (size_t)(c->S * c->H) * sizeof(int32_t)) ==
              ENC_OK);
    if (lb) {
        CHECK(backend_buffer_read(be, lb, 0, c->lp_out, lp_bytes) == ENC_OK);
        CHECK(backend_buffer_free(be, lb) == ENC_OK);
    }
    for (int i = 0; i < 4; i++)
        CHECK(backend_buffer_free(be, b[i]) == ENC_OK);
    if (mb) CHECK(backend_buffer_free(be, mb) == ENC_OK);
    CHECK(backend_buffer_free(be, arena) == ENC_OK);
    arena_free(&host);
}

/* The host sampler on the same row (engine/sampler.c). */
static int32_t host_pick(sampler *s, const float *logits, const graph_sample_row *p,
                         const int32_t *hist, int64_t pos, const uint32_t *allowed)
{
    engine_sampling sp = {
        .temperature = p->temperature,
        .top_k = p->top_k,
        .top_p = p->top_p,
        .min_p = p->min_p,
        .repetition_penalty = ref_penalties_on(p) ? p->repetition_penalty : 0.0,
        .presence_penalty = ref_penalties_on(p) ? p->presence_penalty : 0.0,
        .frequency_penalty = ref_penalties_on(p) ? p->frequency_penalty : 0.0,
        .seed = p->seed,
        .min_tokens = p->min_tokens,
        .logit_bias = p->bias,
        .n_logit_bias = p->n_bias,
    };
    sampler_input in = {
        .logits = logits,
        .n_sample = p->n_sample,
        .params = &sp,
        .prompt = hist,
        .n_prompt = p->n_prompt,
        .output = hist + p->n_prompt,
        .n_output = pos - p->n_prompt,
        .eos_ids = p->mask_ids,
        .n_eos = p->n_mask,
        .seed = p->seed,
        .position = pos,
        .allowed = (p->flags & GRAPH_SAMPLE_MASKED) ? allowed : NULL,
    };
    return sampler_pick(s, &in, NULL);
}

/* --- the matrix -------------------------------------------------------------- */

enum { MV = 600, MS = 8, MH = 40, M_PROMPT = 12 };

/* Logits with ties, a few large values and a long tail. */
static void matrix_logits(float *x, int64_t S, int64_t V)
{
    for (int64_t r = 0; r < S; r++)
        for (int64_t i = 0; i < V; i++)
            x[r * V + i] =
                (float)(3.0 * sin(0.37 * (double)(i + 13 * r)) + (i % 50 == 7 ? 2.5 : 0.0)) +
                (float)((i * 7 + r) % 5) * 0.25f;
}

static void matrix_history(int32_t *h, int64_t S, int64_t H)
{
    for (int64_t r = 0; r < S; r++)
        for (int64_t j = 0; j < H; j++)
            h[r * H + j] = (int32_t)((j * 37 + r * 11) % 64 + (j % 3 == 0 ? 300 : 0));
}

static const double m_temps[] = {0.0, 0.3, 1.0, 1.7};
static const int32_t m_topk[] = {0, 1, 20, MV};
static const double m_topp[] = {0.1, 0.9, 1.0};
static const double m_minp[] = {0.0, 0.05};
static const double m_pen[][3] = {
    {1, 0, 0}, {1.3, 0, 0}, {1, 0.5, 0}, {1, 0, 0.7}, {1.2, -0.4, 0.3}};

/* Row r of a batch: the combination's parameters, a seed and a position of its own. */
static graph_sample_row matrix_row(int ti, int ki, int pi, int mi, int qi, int64_t r)
{
    graph_sample_row p = {
        .temperature = m_temps[ti],
        .top_k = m_topk[ki],
        .top_p = m_topp[pi],
        .min_p = m_minp[mi],
        .repetition_penalty = m_pen[qi][0],
        .presence_penalty = m_pen[qi][1],
        .frequency_penalty = m_pen[qi][2],
        .seed = 1000003u * (uint64_t)(ti * 97 + ki * 31 + pi * 7 + mi * 3 + qi) + (uint64_t)r,
        .n_prompt = M_PROMPT,
        .min_tokens = r % 2 ? 30 : 0,
        .n_sample = r % 3 ? MV : MV - 17,
        .n_mask = 3,
        .flags = qi ? GRAPH_SAMPLE_PENALTIES : 0,
        .mask_ids = {7, 57, 107},
    };
    if (r % 3 != 1) ref_bias_fixture(&p, r, MV);
    return p;
}

static void test_matrix(backend *be, sampler *hs)
{
    float *logits = malloc(sizeof(float) * MS * MV), *x = malloc(sizeof(float) * MV);
    ref_w *it = malloc(sizeof(ref_w) * MV);
    double *rw = malloc(sizeof *rw * (size_t)MV);
    bool *rkeep = malloc(sizeof *rkeep * (size_t)MV);
    int32_t hist[MS * MH], hist_out[MS * MH], pos[MS], ids[MS];
    matrix_logits(logits, MS, MV);
    matrix_history(hist, MS, MH);
    for (int r = 0; r < MS; r++)
        pos[r] = M_PROMPT + 2 + 3 * r; /* 2..23 tokens generated */
    int64_t n_rows = 0, bad = 0, bad_host = 0, bad_hist = 0;
    graph_sample_row rows[MS];
    for (int ti = 0; ti < 4; ti++)
        for (int ki = 0; ki < 4; ki++)
            for (int pi = 0; pi < 3; pi++)
                for (int mi = 0; mi < 2; mi++)
                    for (int qi = 0; qi < 5; qi++) {
                        for (int r = 0; r < MS; r++)
                            rows[r] = matrix_row(ti, ki, pi, mi, qi, r);
                        sample_case c = {MS, MV, MH, logits, rows, pos, hist, NULL, NULL};
                        run_op(be, &c, ids, hist_out);
                        for (int r = 0; r < MS; r++, n_rows++) {
                            int32_t want = ref_pick(logits + r * MV, &rows[r], hist + r * MH,
                                                    pos[r] + 1, x, it, rw, rkeep);
                            int32_t host = host_pick(hs, logits + r * MV, &rows[r], hist + r * MH,
                                                     pos[r] + 1, NULL);
                            if (ids[r] != want && bad < 5)
                                fprintf(
                                    stderr,
                                    "matrix T %g k %d p %g min_p %g pen %d row %d: %d, want %d\n",
                                    m_temps[ti], m_topk[ki], m_topp[pi], m_minp[mi], qi, r, ids[r],
                                    want);
                            bad += ids[r] != want;
                            bad_host += host != want;
                            bad_hist += hist_out[r * MH + pos[r] + 1] != ids[r];
                        }
                    }
    CHECK(bad == 0);
    CHECK(bad_host == 0);
    CHECK(bad_hist == 0);
    printf("ok matrix: %lld rows, %lld differ from the reference (host sampler: %lld)\n",
           (long long)n_rows, (long long)bad, (long long)bad_host);
    free(logits);
    free(x);
    free(it);
    free(rw);
    free(rkeep);
}

/* Every row of a batch alone, and the batch on other thread counts. */
static void test_invariance(backend *be)
{
    float *logits = malloc(sizeof(float) * MS * MV);
    int32_t hist[MS * MH], pos[MS], ids[MS], one[1];
    matrix_logits(logits, MS, MV);
    matrix_history(hist, MS, MH);
    graph_sample_row rows[MS];
    for (int r = 0; r < MS; r++) {
        rows[r] = matrix_row(r % 4, r % 4, r % 3, r % 2, r % 5, r);
        pos[r] = M_PROMPT + r;
    }
    sample_case c = {MS, MV, MH, logits, rows, pos, hist, NULL, NULL};
    run_op(be, &c, ids, NULL);
    int bad = 0;
    for (int r = 0; r < MS; r++) {
        sample_case alone = {.S = 1, .V = MV, .H = MH, .logits = logits + r * MV, .rows = &rows[r],
                             .positions = &pos[r], .history = hist + r * MH};
        run_op(be, &alone, one, NULL);
        bad += one[0] != ids[r];
    }
    for (int nt = 1; nt <= 3; nt += 2) {
        backend *other = NULL;
        CHECK(cpu_backend_create(nt, &other) == ENC_OK);
        int32_t ids_t[MS];
        run_op(other, &c, ids_t, NULL);
        bad += memcmp(ids, ids_t, sizeof ids) != 0;
        backend_destroy(other);
    }
    CHECK(bad == 0);
    printf("ok invariance\n");
    free(logits);
}

/* --- rows split over the threads ------------------------------------------------ */

enum { TV = 24000, TH = 40, T_SETS = 6 };

/* Parameter set k of the thread test, for row r, seed s. */
static graph_sample_row threads_row(int k, int64_t r, int s)
{
    static const double temp[T_SETS] = {0.8, 1.7, 1.0, 0.3, 0.0, 1.2};
    static const double top_p[T_SETS] = {0.95, 0.9, 0.9, 1.0, 1.0, 0.5};
    static const int32_t top_k[T_SETS] = {0, 0, 20, 0, 0, 200};
    graph_sample_row p = {
        .temperature = temp[k],
        .top_p = top_p[k],
        .top_k = top_k[k],
        .min_p = k == 1 ? 0.05 : 0.0,
        .repetition_penalty = k % 2 ? 1.0 : 1.1,
        .presence_penalty = k == 2 ? 0.5 : 0.0,
        .frequency_penalty = k == 2 ? 0.3 : 0.0,
        .seed = 7919u * (uint64_t)(k * 16 + s) + (uint64_t)r,
        .n_prompt = M_PROMPT,
        .min_tokens = k == 5 ? 30 : 0,
        .n_sample = k == 3 ? TV - 17 : TV,
        .n_mask = 3,
        .flags = (k % 2 ? 0 : GRAPH_SAMPLE_PENALTIES) | (k != 1 ? GRAPH_SAMPLE_LOGPROBS : 0),
        .n_top = 5,
        .mask_ids = {7, 57, 107},
    };
    if (r % 3 != 1) ref_bias_fixture(&p, r, MV);
    return p;
}

static void test_threads(void)
{
    enum { S = 2 };
    float *logits = malloc(sizeof(float) * S * TV), *x = malloc(sizeof(float) * TV);
    ref_w *it = malloc(sizeof(ref_w) * TV);
    double *rw = malloc(sizeof *rw * (size_t)TV);
    bool *rkeep = malloc(sizeof *rkeep * (size_t)TV);
    matrix_logits(logits, S, TV);
    backend *be[3];
    for (int t = 0; t < 3; t++)
        CHECK(cpu_backend_create(t + 1, &be[t]) == ENC_OK);
    int bad = 0, n = 0;
    for (int k = 0; k < T_SETS; k++)
        for (int s = 0; s < 4; s++)
            for (int64_t rows = 1; rows <= S; rows++) {
                graph_sample_row p[S];
                int32_t hist0[S * TH], pos[S], ids[3][S], hist[3][S * TH];
                int32_t lp[3][S * GRAPH_SAMPLE_LP_WORDS];
                matrix_history(hist0, S, TH);
                for (int64_t r = 0; r < rows; r++) {
                    p[r] = threads_row(k, r, s);
                    pos[r] = M_PROMPT + 3 + (int32_t)r;
                }
                for (int t = 0; t < 3; t++) {
                    sample_case c = {rows, TV, TH, logits, p, pos, hist0, NULL, lp[t]};
                    run_op(be[t], &c, ids[t], hist[t]);
                    size_t nb = (size_t)rows * sizeof(int32_t);
                    bad += memcmp(ids[t], ids[0], nb) != 0 ||
                           memcmp(hist[t], hist[0], nb * TH) != 0 ||
                           memcmp(lp[t], lp[0], nb * GRAPH_SAMPLE_LP_WORDS) != 0;
                }
                for (int64_t r = 0; r < rows; r++, n++) {
                    bad += ids[0][r] != ref_pick(logits + r * TV, &p[r], hist0 + r * TH, pos[r] + 1,
                                                 x, it, rw, rkeep);
                    bad += (p[r].flags & GRAPH_SAMPLE_LOGPROBS) &&
                           lp[0][r * GRAPH_SAMPLE_LP_WORDS] != ids[0][r];
                }
            }
    CHECK(bad == 0);
    printf("ok threads: %d rows in batches of 1 and 2, 1/2/3 threads, %d differ\n", n, bad);
    for (int t = 0; t < 3; t++)
        backend_destroy(be[t]);
    free(logits);
    free(x);
    free(it);
    free(rw);
    free(rkeep);
}

/* --- the whole vocabulary ------------------------------------------------------ */

static void test_large(backend *be, sampler *hs)
{
    enum { V = 151936, S = 3, H = 4 };
    float *logits = malloc(sizeof(float) * S * V), *x = malloc(sizeof(float) * V);
    ref_w *it = malloc(sizeof(ref_w) * V);
    double *rw = malloc(sizeof *rw * (size_t)V);
    bool *rkeep = malloc(sizeof *rkeep * (size_t)V);
    for (int64_t i = 0; i < V; i++) {
        logits[i] =
            (float)(4.0 * cos(0.001 * (double)i) - 0.00002 * (double)i); /* slow: wide kept sets */
        logits[V + i] = (float)((i * 2654435761u) % 1000) * 0.01f;       /* many ties */
        logits[2 * V + i] = (float)(i % 97) * 0.05f;
    }
    graph_sample_row rows[S] = {
        {.temperature = 1.7, .top_p = 0.95, .n_sample = V, .seed = 5},
        {.temperature = 1.0, .top_k = 50, .top_p = 0.5, .n_sample = V - 267, .seed = 6},
        {.temperature = 0.7, .top_p = 0.3, .min_p = 0.1, .n_sample = V, .seed = 7},
    };
    int32_t hist[S * H] = {0}, pos[S] = {0, 1, 2}, ids[S];
    sample_case c = {S, V, H, logits, rows, pos, hist, NULL, NULL};
    int bad = 0;
    for (int trial = 0; trial < 3; trial++) {
        for (int r = 0; r < S; r++)
            rows[r].seed += 100;
        run_op(be, &c, ids, NULL);
        for (int r = 0; r < S; r++) {
            int32_t want =
                ref_pick(logits + r * V, &rows[r], hist + r * H, pos[r] + 1, x, it, rw, rkeep);
            bad += ids[r] != want;
            bad += host_pick(hs, logits + r * V, &rows[r], hist + r * H, pos[r] + 1, NULL) != want;
        }
    }
    CHECK(bad == 0);
    printf("ok large\n");
    free(logits);
    free(x);
    free(it);
    free(rw);
    free(rkeep);
}

/* --- the distribution ------------------------------------------------------------ */

/* The chi-square critical value of df degrees of freedom at significance
 * 0.001 (Wilson-Hilferty; z = 3.0902). */
static double chi2_critical(int df)
{
    double a = 2.0 / (9.0 * df), z = 3.0902;
    return df * pow(1.0 - a + z * sqrt(a), 3.0);
}

static void test_chi2(backend *be)
{
    enum { V = 64, S = 2000, ROUNDS = 10, N = S * ROUNDS };
    float *logits = malloc(sizeof(float) * S * V);
    float row[V];
    for (int i = 0; i < V; i++)
        row[i] = (float)(2.0 * sin(0.7 * i) + 0.05 * i);
    for (int r = 0; r < S; r++)
        memcpy(logits + r * V, row, sizeof row);
    graph_sample_row *rows = calloc(S, sizeof *rows);
    int32_t *pos = malloc(sizeof(int32_t) * S), *ids = malloc(sizeof(int32_t) * S), hist[S] = {0};
    for (int r = 0; r < S; r++)
        rows[r] = (graph_sample_row){
            .temperature = 0.8, .top_k = 20, .top_p = 0.9, .n_sample = V, .seed = 77};
    /* the expected distribution, in probabilities: softmax(l / T), the 20
     * most likely, the smallest prefix of those holding 0.9 of their mass */
    double prob[V] = {0}, z = 0.0;
    int order[V];
    for (int i = 0; i < V; i++)
        order[i] = i;
    for (int i = 0; i < V; i++) /* selection sort by logit, descending (no ties here) */
        for (int j = i + 1; j < V; j++)
            if (row[order[j]] > row[order[i]]) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    for (int i = 0; i < 20; i++)
        z += exp(row[order[i]] / 0.8);
    double cum = 0.0, zk = 0.0;
    int kept = 0;
    while (kept < 20 && cum < 0.9) {
        cum += exp(row[order[kept]] / 0.8) / z;
        zk += exp(row[order[kept]] / 0.8);
        kept++;
    }
    for (int i = 0; i < kept; i++)
        prob[order[i]] = exp(row[order[i]] / 0.8) / zk;
    int64_t hits[V] = {0};
    for (int round = 0; round < ROUNDS; round++) {
        for (int r = 0; r < S; r++)
            pos[r] = round * S + r;
        sample_case c = {S, V, 1, logits, rows, pos, hist, NULL, NULL};
        run_op(be, &c, ids, NULL);
        for (int r = 0; r < S; r++)
            hits[ids[r]]++;
    }
    double chi2 = 0.0;
    int df = -1;
    for (int i = 0; i < V; i++) {
        if (prob[i] == 0.0) {
            if (hits[i]) chi2 = INFINITY; /* an excluded id was drawn */
            continue;
        }
        double e = prob[i] * N;
        chi2 += (hits[i] - e) * (hits[i] - e) / e;
        df++;
    }
    double crit = chi2_critical(df);
    printf("chi2: %d kept ids, statistic %.1f, critical value %.1f (df %d, significance 0.001)\n",
           kept, chi2, crit, df);
    CHECK(kept > 2 && kept < 20); /* top-p cuts inside the top-k set */
    CHECK(chi2 < crit);
    free(logits);
    free(rows);
    free(pos);
    free(ids);
}

/* --- token masks ------------------------------------------------------------- */

enum { MW = GRAPH_SAMPLE_MASK_WORDS(MV) };

static void mask_set(uint32_t *m, int64_t id)
{
    m[id / 32] |= (uint32_t)1 << (id % 32);
}

/* A mask of kind r / 2 % 6 for a row of logits x (kind 5 allows nothing). */
static void mask_of(uint32_t *m, int r, const float *x, int64_t n_sample)
{
    memset(m, 0, MW * sizeof *m);
    int kind = r / 2 % 6;
    if (kind == 0 || kind == 1) /* ids = r mod (3 + r) */
        for (int64_t i = r % (3 + r); i < MV; i += 3 + r)
            mask_set(m, i);
    if (kind == 2) mask_set(m, 5 + r);                   /* one id */
    if (kind == 3) mask_set(m, ref_argmax(x, n_sample)); /* the best id only */
    if (kind == 4) {                                     /* the ids below the 40th largest logit */
        ref_w sorted[MV];
        for (int64_t i = 0; i < n_sample; i++)
            sorted[i] = (ref_w){x[i], (int32_t)i};
        qsort(sorted, (size_t)n_sample, sizeof *sorted, ref_cmp);
        for (int64_t i = 0; i < MV; i++)
            if (x[i] < sorted[39].w) mask_set(m, i);
    }
    /* kind 5: none */
}

/* Half the rows of each batch masked, the other half not, over temperatures,
 * filters, penalties and seeds. */
static void test_mask(backend *be, sampler *hs)
{
    float *logits = malloc(sizeof(float) * MS * MV), *x = malloc(sizeof(float) * MV);
    ref_w *it = malloc(sizeof(ref_w) * MV);
    double *rw = malloc(sizeof *rw * (size_t)MV);
    bool *rkeep = malloc(sizeof *rkeep * (size_t)MV);
    uint32_t *mask = calloc(MS * MW, sizeof *mask);
    int32_t hist[MS * MH], pos[MS], ids[MS], plain[MS];
    matrix_logits(logits, MS, MV);
    matrix_history(hist, MS, MH);
    for (int r = 0; r < MS; r++)
        pos[r] = M_PROMPT + 2 + 3 * r;
    int64_t n_masked = 0, changed = 0, bad = 0, bad_host = 0, disallowed = 0, bad_plain = 0,
            none = 0;
    graph_sample_row rows[MS];
    static const int ts[] = {0, 2, 3}, ks[] = {0, 2}, ps[] = {1, 2}, qs[] = {0, 4};
    for (int seed = 0; seed < 16; seed++)
        for (int c = 0; c < 24; c++) {
            int ti = ts[c % 3], ki = ks[c / 3 % 2], pi = ps[c / 6 % 2], qi = qs[c / 12];
            for (int r = 0; r < MS; r++) {
                rows[r] = matrix_row(ti, ki, pi, 0, qi, r);
                rows[r].seed += 7919u * (uint64_t)seed;
                /* (seed, row) picks the mask kind, so every kind meets every row */
                int kr = 2 * ((r / 2 + seed) % 6);
                if (r % 2 == 0) {
                    rows[r].flags |= GRAPH_SAMPLE_MASKED;
                    mask_of(&mask[r * MW], kr, logits + r * MV, rows[r].n_sample);
                }
                if (kr == 10 && seed % 2) { /* allow only EOS 7 while min_tokens masks it */
                    mask_set(&mask[r * MW], 7);
                    rows[r].min_tokens = 1000;
                }
            }
            sample_case cm = {MS, MV, MH, logits, rows, pos, hist, mask, NULL};
            run_op(be, &cm, ids, NULL);
            graph_sample_row unmasked[MS];
            memcpy(unmasked, rows, sizeof rows);
            for (int r = 0; r < MS; r++)
                unmasked[r].flags &= ~GRAPH_SAMPLE_MASKED;
            sample_case cp = {MS, MV, MH, logits, unmasked, pos, hist, NULL, NULL};
            run_op(be, &cp, plain, NULL);
            for (int r = 0; r < MS; r++) {
                const uint32_t *m = (rows[r].flags & GRAPH_SAMPLE_MASKED) ? &mask[r * MW] : NULL;
                const float *row = logits + r * MV;
                int32_t want =
                    ref_pick_masked(row, &rows[r], hist + r * MH, pos[r] + 1, m, x, it, rw, rkeep);
                int32_t host = host_pick(hs, row, &rows[r], hist + r * MH, pos[r] + 1, m);
                bad += ids[r] != want;
                bad_host += host != want;
                if (!m) {
                    bad_plain += ids[r] != plain[r];
                    continue;
                }
                n_masked++;
                none += ids[r] == GRAPH_SAMPLE_NO_TOKEN;
                changed += ids[r] != plain[r];
                if (ids[r] >= 0) disallowed += !((m[ids[r] / 32] >> (ids[r] % 32)) & 1u);
            }
        }
    CHECK(bad == 0);
    CHECK(bad_host == 0);
    CHECK(disallowed == 0);
    CHECK(bad_plain == 0);
    CHECK(none > 0 && changed > n_masked / 2); /* the masks bite */
    printf("ok mask: %lld masked rows (%lld changed by the mask, %lld with no allowed id), "
           "%lld differ from the reference (host sampler: %lld), %lld disallowed\n",
           (long long)n_masked, (long long)changed, (long long)none, (long long)bad,
           (long long)bad_host, (long long)disallowed);
    free(logits);
    free(x);
    free(it);
    free(rw);
    free(rkeep);
    free(mask);
}

/* --- logit bias ------------------------------------------------------------- */

/* A bias moves the pick where it must, on the op and the host sampler: +100
 * on a row's worst id makes it the greedy pick and the only draw of T = 1
 * top-k 1; -100 on the best id hands greedy the second best; the logprobs
 * record stays the raw row's (the chosen id's log_softmax, the raw top ids). */
static void test_bias(backend *be, sampler *hs)
{
    enum { S = 4, N_TOP = 3 };
    float *logits = malloc(sizeof(float) * S * MV);
    int32_t hist[S * MH] = {0}, pos[S], ids[S], lp_out[S * GRAPH_SAMPLE_LP_WORDS];
    int32_t best[S], second[S], worst[S], want[S];
    double lse[S];
    graph_sample_row rows[S];
    matrix_logits(logits, S, MV);
    for (int r = 0; r < S; r++) {
        const float *x = logits + r * MV;
        best[r] = worst[r] = 0;
        second[r] = -1;
        double sum = 0.0;
        for (int i = 0; i < MV; i++) {
            if (x[i] > x[best[r]]) best[r] = i;
            if (x[i] < x[worst[r]]) worst[r] = i;
        }
        for (int i = 0; i < MV; i++) {
            if (i != best[r] && (second[r] < 0 || x[i] > x[second[r]])) second[r] = i;
            sum += exp((double)x[i] - (double)x[best[r]]);
        }
        lse[r] = (double)x[best[r]] + log(sum);
        pos[r] = M_PROMPT + 1;
        rows[r] = (graph_sample_row){
            .seed = 77u + (uint64_t)r, .n_prompt = M_PROMPT, .n_sample = MV, .n_bias = 1};
    }
    rows[0].bias[0] = (graph_sample_bias){worst[0], 100.0f};
    rows[1].bias[0] = (graph_sample_bias){best[1], -100.0f};
    rows[2] = (graph_sample_row){.temperature = 1.0,
                                 .top_k = 1,
                                 .seed = 5u,
                                 .n_prompt = M_PROMPT,
                                 .n_sample = MV,
                                 .n_bias = 1,
                                 .bias = {{worst[2], 100.0f}}};
    rows[3].flags = GRAPH_SAMPLE_LOGPROBS;
    rows[3].n_top = N_TOP;
    rows[3].bias[0] = (graph_sample_bias){worst[3], 100.0f};
    want[0] = worst[0], want[1] = second[1], want[2] = worst[2], want[3] = worst[3];
    sample_case c = {S, MV, MH, logits, rows, pos, hist, NULL, lp_out};
    run_op(be, &c, ids, NULL);
    for (int r = 0; r < S; r++) {
        CHECK(ids[r] == want[r]);
        CHECK(host_pick(hs, logits + r * MV, &rows[r], hist + r * MH, pos[r] + 1, NULL) == want[r]);
    }
    graph_sample_logprobs lp;
    memcpy(&lp, lp_out + 3 * GRAPH_SAMPLE_LP_WORDS, sizeof lp);
    CHECK(lp.id == worst[3] && lp.n_top == N_TOP && lp.top_ids[0] == best[3] &&
          lp.top_ids[1] == second[3]);
    CHECK(fabs((double)lp.logprob - ((double)logits[3 * MV + worst[3]] - lse[3])) < 1e-4);
    printf("ok bias: ids %d %d %d %d, the worst id's raw logprob %.4f\n", ids[0], ids[1], ids[2],
           ids[3], (double)lp.logprob);
    free(logits);
}

int main(void)
{
    backend *be = NULL;
    sampler hs;
    if (cpu_backend_create(2, &be) != ENC_OK || sampler_init(&hs, 151936) != ENC_OK) return 1;
    test_matrix(be, &hs);
    test_invariance(be);
    test_threads();
    test_large(be, &hs);
    test_chi2(be);
    test_mask(be, &hs);
    test_bias(be, &hs);
    sampler_free(&hs);
    backend_destroy(be);
    if (check_failures) fprintf(stderr, "test_sample_op: %d checks failed\n", check_failures);
    return check_failures != 0;
}
