/* test_graph_plan.c - the step graph's memory plan.
 *
 * Builds seeded random graphs of element-wise ops over tensors of random
 * sizes and checks the plan: every intermediate is placed inside the arena,
 * no two intermediates that are alive at the same node share a byte, the
 * arena is smaller than the sum of the tensors (memory is reused), and a
 * build error is reported rather than ignored. Also: every op has a name. */
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

static int overlaps(const graph_tensor *a, const graph_tensor *b)
{
    int alive = a->first_use <= b->last_use && b->first_use <= a->last_use;
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
    test_op_names();
    arena_free(&host);
    if (check_failures) fprintf(stderr, "test_graph_plan: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
