/* test_capture.c - the capture contract of a backend: the CPU's, or the one
 * ENCORE_DEVICE names ("vulkan").
 *
 * While a capture is open, every host read, host write, allocation and free
 * on the backend is refused with ENC_ERR_CAPTURE and a message naming the
 * call and the buffer; so are a nested capture_begin and a replay. After
 * capture_end the backend works again, and replaying the recording computes
 * what the eager graph computes, bit for bit, from inputs rewritten between
 * replays. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
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

/* The fixture every case runs on: a backend, buffers x and arena, and the
 * planned graph bound to them. */
typedef struct fixture {
    backend *be;
    enc_arena host;
    backend_buffer *x, *arena;
    graph g;
    size_t y_off; /* where y lands in the arena */
} fixture;

static void fixture_init(fixture *f)
{
    CHECK(backend_create_named(getenv("ENCORE_DEVICE"), 2, &f->be) == ENC_OK);
    CHECK(arena_init(&f->host, 1 << 16) == ENC_OK);
    CHECK(backend_buffer_alloc(f->be, N * sizeof(float), "x", &f->x) == ENC_OK);
    CHECK(backend_buffer_alloc(f->be, 2 * N * sizeof(float) + 256, "arena", &f->arena) == ENC_OK);
    build(&f->g, &f->host, f->x, f->arena);
    f->y_off = f->g.nodes[1].dst->offset;
}

static void fixture_free(fixture *f)
{
    CHECK(backend_buffer_free(f->be, f->x) == ENC_OK);
    CHECK(backend_buffer_free(f->be, f->arena) == ENC_OK);
    backend_destroy(f->be);
    arena_free(&f->host);
}

/* Record the graph; the capture is closed again afterwards. */
static backend_recording *record(fixture *f)
{
    backend_recording *rec = NULL;
    CHECK(backend_capture_begin(f->be) == ENC_OK);
    CHECK(backend_graph_compute(f->be, &f->g) == ENC_OK); /* recorded, not run */
    CHECK(backend_capture_end(f->be, &rec) == ENC_OK && rec != NULL);
    return rec;
}

/* --- the cases: each refusal is its own test --------------------------------- */

static void case_write(fixture *f)
{
    float in[N] = {0};
    CHECK(backend_capture_begin(f->be) == ENC_OK);
    CHECK_REFUSED(backend_buffer_write(f->be, f->x, 0, in, sizeof in), "write of buffer 'x'");
}

static void case_read(fixture *f)
{
    float out[N];
    CHECK(backend_capture_begin(f->be) == ENC_OK);
    CHECK_REFUSED(backend_buffer_read(f->be, f->arena, 0, out, sizeof out), "read of buffer 'arena'");
}

static void case_alloc(fixture *f)
{
    backend_buffer *extra = NULL;
    CHECK(backend_capture_begin(f->be) == ENC_OK);
    CHECK_REFUSED(backend_buffer_alloc(f->be, 64, "scratch", &extra), "alloc of buffer 'scratch'");
    CHECK(extra == NULL);
}

static void case_free(fixture *f)
{
    CHECK(backend_capture_begin(f->be) == ENC_OK);
    CHECK_REFUSED(backend_buffer_free(f->be, f->x), "free of buffer 'x'"); /* and x is kept */
}

static void case_nested(fixture *f)
{
    CHECK(backend_capture_begin(f->be) == ENC_OK);
    CHECK_REFUSED(backend_capture_begin(f->be), "already capturing");
}

static void case_replay(fixture *f)
{
    backend_recording *rec = record(f), *empty = NULL;
    CHECK(backend_capture_begin(f->be) == ENC_OK);
    CHECK_REFUSED(backend_replay(f->be, rec), "replay");
    CHECK(backend_capture_end(f->be, &empty) == ENC_OK);
    backend_recording_free(f->be, empty);
    backend_recording_free(f->be, rec);
}

static void case_end(fixture *f)
{
    backend_recording *none = NULL;
    CHECK_REFUSED(backend_capture_end(f->be, &none), "without capture_begin");
    CHECK(backend_replay(f->be, NULL) == ENC_ERR_INVALID_ARGUMENT);
}

/* Replays read their inputs as they are now, and match eager bit for bit. */
static void case_replay_matches_eager(fixture *f)
{
    float in[N], eager[N], replayed[N];
    backend_recording *rec = record(f);
    for (int round = 0; round < 3; round++) { /* the inputs change between replays */
        fill(in, 1.0f + (float)round);
        CHECK(backend_buffer_write(f->be, f->x, 0, in, sizeof in) == ENC_OK);
        CHECK(backend_replay(f->be, rec) == ENC_OK);
        CHECK(backend_buffer_read(f->be, f->arena, f->y_off, replayed, sizeof replayed) == ENC_OK);
        CHECK(backend_graph_compute(f->be, &f->g) == ENC_OK);
        CHECK(backend_buffer_read(f->be, f->arena, f->y_off, eager, sizeof eager) == ENC_OK);
        CHECK(memcmp(eager, replayed, sizeof eager) == 0);
        float expect = 2 * in[7] / (1 + expf(-2 * in[7])) * in[7];
        CHECK(fabsf(eager[7] - expect) <= 1e-5f * (1 + fabsf(expect)));
    }
    backend_recording_free(f->be, rec);
}

static const struct {
    const char *name;
    void (*run)(fixture *f);
    int leaves_capture_open; /* the case ends inside a capture: close it */
} cases[] = {
    {"write", case_write, 1},   {"read", case_read, 1},     {"alloc", case_alloc, 1},
    {"free", case_free, 1},     {"nested", case_nested, 1}, {"replay", case_replay, 0},
    {"end", case_end, 0},       {"replay_matches_eager", case_replay_matches_eager, 0},
};

/* usage: test_capture [CASE]; without CASE, every case. */
int main(int argc, char **argv)
{
    int ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (argc > 1 && strcmp(argv[1], cases[i].name)) continue;
        fixture f;
        fixture_init(&f);
        cases[i].run(&f);
        if (cases[i].leaves_capture_open) {
            backend_recording *rec = NULL;
            CHECK(backend_capture_end(f.be, &rec) == ENC_OK);
            backend_recording_free(f.be, rec);
        }
        fixture_free(&f);
        ran++;
    }
    if (!ran) fprintf(stderr, "test_capture: no case named '%s'\n", argv[1]);
    if (check_failures) fprintf(stderr, "test_capture: %d check(s) failed\n", check_failures);
    return check_failures != 0 || !ran;
}
