/* test_capture.c - the capture contract of the CPU backend.
 *
 * While a capture is open, every host read, host write, allocation and free
 * on the backend is refused with ENC_ERR_CAPTURE and a message naming the
 * call and the buffer; so are a nested capture_begin and a replay. After
 * capture_end the backend works again, and replaying the recording computes
 * what the eager graph computes, bit for bit, from inputs rewritten between
 * replays. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "check.h"


#define CHECK_REFUSED(expr, word)                                                      \
    do {                                                                               \
        CHECK((expr) == ENC_ERR_CAPTURE);                                              \
        CHECK(strstr(enc_last_error(), word) != NULL);                                 \
    } while (0)

enum { N = 1000 };

/* y = swiglu(x + x, x): a two-node graph over buffers x (input) and y. */
static void build(graph *g, enc_arena *host, backend_buffer *x, backend_buffer *arena)
{
    arena_reset(host);
    CHECK(graph_init(g, host, 8, 8) == ENC_OK);
    graph_tensor *tx = graph_tensor_1d(g, GRAPH_INPUT, ENC_F32, N, "x");
    graph_bind(tx, x, 0);
    graph_tensor *y = graph_swiglu(g, graph_add(g, tx, tx), tx);
    CHECK(y != NULL);
    CHECK(graph_plan(g, arena) == ENC_OK);
}

static void fill(float *v, float scale)
{
    for (int i = 0; i < N; i++) v[i] = scale * (float)((i * 37) % 101 - 50) / 25.0f;
}

int main(void)
{
    backend *be;
    enc_arena host;
    CHECK(cpu_backend_create(2, &be) == ENC_OK && arena_init(&host, 1 << 16) == ENC_OK);
    backend_buffer *x, *arena, *extra = NULL;
    CHECK(backend_buffer_alloc(be, N * sizeof(float), "x", &x) == ENC_OK);
    CHECK(backend_buffer_alloc(be, 2 * N * sizeof(float) + 256, "arena", &arena) == ENC_OK);
    float in[N], eager[N], replayed[N];
    graph g;
    build(&g, &host, x, arena);
    size_t y_off = g.nodes[1].dst->offset;

    CHECK(backend_capture_begin(be) == ENC_OK);
    CHECK_REFUSED(backend_buffer_write(be, x, 0, in, sizeof in), "write of buffer 'x'");
    CHECK_REFUSED(backend_buffer_read(be, arena, 0, in, sizeof in), "read of buffer 'arena'");
    CHECK_REFUSED(backend_buffer_alloc(be, 64, "scratch", &extra), "alloc of buffer 'scratch'");
    CHECK(extra == NULL);
    CHECK_REFUSED(backend_buffer_free(be, x), "free of buffer 'x'");
    CHECK_REFUSED(backend_capture_begin(be), "already capturing");
    CHECK(backend_graph_compute(be, &g) == ENC_OK); /* recorded, not run */
    backend_recording *rec = NULL;
    CHECK(backend_capture_end(be, &rec) == ENC_OK && rec != NULL);
    backend_recording *empty = NULL; /* a replay inside a capture is refused too */
    CHECK(backend_capture_begin(be) == ENC_OK);
    CHECK_REFUSED(backend_replay(be, rec), "replay");
    CHECK(backend_capture_end(be, &empty) == ENC_OK);
    backend_recording_free(be, empty);
    backend_recording *none = NULL;
    CHECK_REFUSED(backend_capture_end(be, &none), "without capture_begin");
    CHECK(backend_replay(be, NULL) == ENC_ERR_INVALID_ARGUMENT);

    for (int round = 0; round < 3; round++) { /* the inputs change between replays */
        fill(in, 1.0f + (float)round);
        CHECK(backend_buffer_write(be, x, 0, in, sizeof in) == ENC_OK);
        CHECK(backend_replay(be, rec) == ENC_OK);
        CHECK(backend_buffer_read(be, arena, y_off, replayed, sizeof replayed) == ENC_OK);
        CHECK(backend_graph_compute(be, &g) == ENC_OK);
        CHECK(backend_buffer_read(be, arena, y_off, eager, sizeof eager) == ENC_OK);
        CHECK(memcmp(eager, replayed, sizeof eager) == 0);
        float expect = 2 * in[7] / (1 + expf(-2 * in[7])) * in[7];
        CHECK(fabsf(eager[7] - expect) <= 1e-5f * (1 + fabsf(expect)));
    }
    backend_recording_free(be, rec);
    CHECK(backend_buffer_free(be, x) == ENC_OK);
    CHECK(backend_buffer_free(be, arena) == ENC_OK);
    backend_destroy(be);
    arena_free(&host);
    if (check_failures) fprintf(stderr, "test_capture: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
