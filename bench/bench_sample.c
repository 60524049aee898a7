/* bench_sample.c - CPU time of the device sampler's kernel (cpu_sample) per
 * row of Qwen3's vocabulary (151936 ids), on one thread, for the sampled
 * kind of `encore bench --sampling` (temperature 0.8, top-p 0.95,
 * repetition penalty 1.1 over a 64-token history) and for greedy, over rows
 * of Gaussian logits of four spreads (sd 0.1 and 0.5: near uniform, the
 * kept set most of the vocabulary; 1.5; 4: peaked). Thread
 * CPU time, so that other load on the machine counts less than wall time.
 *
 * Every figure is the median of RUNS runs of 16 rows.
 * Usage: bench_sample [runs]   (default 5; at least 3) */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels.h"
#include "graph/sample_row.h"

#include "bench_timing.h"

enum { V = 151936, ROWS = 16, HIST = 128, MAX_RUNS = 32 };

static uint64_t rng = 88172645463325252ull;

static double gauss(void) /* Box-Muller from xorshift64 */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    double u1 = ((double)(rng >> 11) + 0.5) * 0x1p-53;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    double u2 = (double)(rng >> 11) * 0x1p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Milliseconds of CPU per row: the median of runs. */
static double bench(const float *src, float *logits, const graph_sample_row *row, int runs,
                    int32_t *scratch)
{
    int32_t params[ROWS * GRAPH_SAMPLE_ROW_WORDS], pos[ROWS], out[ROWS];
    static int32_t hist[ROWS * HIST];
    for (int r = 0; r < ROWS; r++) {
        memcpy(params + r * GRAPH_SAMPLE_ROW_WORDS, row, sizeof *row);
        pos[r] = 63;
    }
    double t[MAX_RUNS];
    for (int k = 0; k < runs; k++) {
        for (int i = 0; i < ROWS * HIST; i++)
            hist[i] = (int32_t)((uint32_t)i * 2654435761u % V);
        memcpy(logits, src, sizeof(float) * ROWS * V);
        cpu_sample_args a = {.logits = logits,
                             .params = params,
                             .positions = pos,
                             .history = hist,
                             .scratch = scratch,
                             .out = out,
                             .n_rows = ROWS,
                             .n_vocab = V,
                             .hist_len = HIST,
                             .n_workers = 1,
                             .scratch_stride = graph_sample_scratch_words(V)};
        double t0 = bench_cpu_s();
        cpu_sample(&a, 0, 1);
        t[k] = (bench_cpu_s() - t0) * 1e3 / ROWS;
    }
    return bench_median(t, runs);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 3 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_sample: runs must be 3..%d\n", MAX_RUNS);
        return 2;
    }
    cpu_kernels_init();
    float *src = malloc(sizeof(float) * ROWS * V), *logits = malloc(sizeof(float) * ROWS * V);
    int32_t *scratch = malloc(sizeof(int32_t) * (size_t)graph_sample_scratch_words(V));
    if (!src || !logits || !scratch) return 1;
    graph_sample_row sampled = {.temperature = 0.8,
                                .top_p = 0.95,
                                .repetition_penalty = 1.1,
                                .seed = 7,
                                .n_prompt = 16,
                                .n_sample = V,
                                .flags = GRAPH_SAMPLE_PENALTIES};
    graph_sample_row greedy = {.n_sample = V};
    const double spreads[4] = {0.1, 0.5, 1.5, 4.0};
    for (int s = 0; s < 4; s++) {
        for (int64_t i = 0; i < (int64_t)ROWS * V; i++)
            src[i] = (float)(spreads[s] * gauss());
        printf("logits sd %.1f: sampled %.3f ms/row, greedy %.3f ms/row (CPU time, 1 thread, "
               "median of %d)\n",
               spreads[s], bench(src, logits, &sampled, runs, scratch),
               bench(src, logits, &greedy, runs, scratch), runs);
    }
    free(src);
    free(logits);
    free(scratch);
    return 0;
}
