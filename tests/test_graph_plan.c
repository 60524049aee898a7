/* test_graph_plan.c - the step graph's memory plan.
 *
 * Builds seeded random graphs of element-wise ops over tensors of random
 * sizes and checks the plan: every intermediate is placed inside the arena,
 * no two intermediates share a byte while both hold it (a scratch, used by
 * one node, holds it GRAPH_REUSE_GAP - 1 nodes longer), the
 * arena is smaller than the sum of the tensors (memory is reused), and a
 * build error is reported rather than ignored; and the q, k and v matmuls
 * of a layer over quantized weights touch no common byte. Also: every op
 * has a name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"


static uint64_t rng_state = 42;
static uint64_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}

/* The last node before t's bytes may be reused: its last use, or
 * GRAPH_REUSE_GAP - 1 nodes after it for a tensor of one node (a scratch). */
static int held_until(const graph_tensor *t)
{
    return t->last_use + (t->first_use == t->last_use ? GRAPH_REUSE_GAP - 1 : 0);
}

/* 1 if a and b share a byte while both hold it. */
static int overlaps(const graph_tensor *a, const graph_tensor *b)
{
    int alive = a->first_use <= held_until(b) && b->first_use <= held_until(a);
    size_t a_end = a->offset + graph_tensor_nbytes(a), b_end = b->offset + graph_tensor_nbytes(b);
    int bytes = a->offset < b_end && b->offset < a_end;
    return alive && bytes;
}

static void test_random_graph(enc_arena *host, int n_ops)
{
    arena_reset(host);
    graph g;
    CHECK(graph_init(&g, host, n_ops + 8, 2 * n_ops + 64) == ENC_OK);
    enum { N_SIZES = 4 };
    graph_tensor *pool[N_SIZES][64];
    int n_pool[N_SIZES] = {0};
    for (int s = 0; s < N_SIZES; s++) /* one input per size class */
        pool[s][n_pool[s]++] = graph_tensor_1d(&g, GRAPH_INPUT, ENC_F32, 16 << (3 * s), "input");
    size_t total = 0;
    for (int i = 0; i < n_ops; i++) {
        int s = (int)(rng() % N_SIZES);
        graph_tensor *a = pool[s][rng() % (uint64_t)n_pool[s]];
        graph_tensor *b = pool[s][rng() % (uint64_t)n_pool[s]];
        graph_tensor *y = rng() % 2 ? graph_add(&g, a, b) : graph_swiglu(&g, a, b);
        CHECK(y != NULL);
        total += graph_tensor_nbytes(y);
        if (n_pool[s] < 64) pool[s][n_pool[s]++] = y;
        else pool[s][rng() % 64] = y;
    }
    CHECK(graph_plan(&g, (void *)0x1) == ENC_OK);
    CHECK(g.arena_size > 0 && g.arena_size < total);
    for (int i = 0; i < g.n_tensors; i++) {
        const graph_tensor *a = g.tensors[i];
        if (a->kind != GRAPH_INTERMEDIATE) continue;
        CHECK(a->buffer == (void *)0x1 && a->offset % 64 == 0);
        CHECK(a->offset + graph_tensor_nbytes(a) <= g.arena_size);
        for (int j = i + 1; j < g.n_tensors; j++)
            if (g.tensors[j]->kind == GRAPH_INTERMEDIATE) CHECK(!overlaps(a, g.tensors[j]));
    }
}

static void test_build_errors(enc_arena *host)
{
    arena_reset(host);
    graph g;
    CHECK(graph_init(&g, host, 4, 8) == ENC_OK);
    graph_tensor *a = graph_tensor_1d(&g, GRAPH_INPUT, ENC_F32, 8, "a");
    graph_tensor *b = graph_tensor_1d(&g, GRAPH_INPUT, ENC_F32, 9, "b");
    CHECK(graph_add(&g, a, b) == NULL); /* size mismatch */
    CHECK(g.status == ENC_ERR_INTERNAL);
    CHECK(graph_add(&g, a, a) == NULL); /* a failed graph stays failed */
    CHECK(graph_plan(&g, NULL) != ENC_OK);
}

static int bytes_meet(const graph_tensor *a, const graph_tensor *b)
{
    if (a->kind != GRAPH_INTERMEDIATE || b->kind != GRAPH_INTERMEDIATE) return 0;
    size_t a_end = a->offset + graph_tensor_nbytes(a), b_end = b->offset + graph_tensor_nbytes(b);
    return a->offset < b_end && b->offset < a_end;
}

/* The q, k and v matmuls of a layer over Q8_0 weights, each with its
 * activation scratch: no matmul writes a byte another one reads or writes,
 * so a backend may run the three together. */
static void test_neighbours_apart(enc_arena *host)
{
    arena_reset(host);
    graph g;
    CHECK(graph_init(&g, host, 16, 64) == ENC_OK);
    graph_tensor *x = graph_tensor_2d(&g, GRAPH_INPUT, ENC_F32, 4, 64, "x");
    graph_tensor *nw = graph_tensor_1d(&g, GRAPH_WEIGHT, ENC_F32, 64, "norm");
    graph_tensor *xn = graph_rms_norm(&g, x, nw, 1e-6);
    graph_tensor *y[3];
    for (int i = 0; i < 3; i++)
        y[i] = graph_matmul(&g, xn, graph_tensor_2d(&g, GRAPH_WEIGHT, ENC_Q8_0, 32 + 32 * i, 64, "w"));
    for (int i = 0; i < 3; i++) /* all three read after the last matmul */
        CHECK(graph_add(&g, y[i], y[i]) != NULL);
    CHECK(graph_plan(&g, (void *)0x1) == ENC_OK);
    const graph_node *mm[3];
    int n_mm = 0;
    for (int i = 0; i < g.n_nodes; i++)
        if (g.nodes[i].op == GRAPH_OP_MATMUL && n_mm < 3) mm[n_mm++] = &g.nodes[i];
    CHECK(n_mm == 3);
    for (int a = 0; a < n_mm; a++)
        for (int b = 0; b < n_mm; b++) {
            if (a == b) continue;
            CHECK(!bytes_meet(mm[a]->dst, mm[b]->dst));
            for (int k = 0; k < GRAPH_MAX_SRC; k++)
                if (mm[b]->src[k]) CHECK(!bytes_meet(mm[a]->dst, mm[b]->src[k]));
        }
}

static void test_op_names(void)
{
    for (int op = 0; op < GRAPH_OP_COUNT; op++) CHECK(strcmp(graph_op_name((graph_op)op), "?") != 0);
    CHECK(strcmp(graph_op_name(GRAPH_OP_COUNT), "?") == 0);
}

int main(void)
{
    enc_arena host;
    if (arena_init(&host, 8 << 20) != ENC_OK) return 1;
    for (int t = 0; t < 50; t++) test_random_graph(&host, 10 + (int)(rng() % 300));
    test_build_errors(&host);
    test_neighbours_apart(&host);
    test_op_names();
    arena_free(&host);
    if (check_failures) fprintf(stderr, "test_graph_plan: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
