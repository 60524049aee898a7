/* bench_grammar.c - token-mask time per token over the real Qwen3
 * vocabulary (151,936 ids), a benchmark program, not a test.
 *
 *   bench_grammar TOKENIZER_DIR SCHEMA.json [REQUESTS] [SEED]
 *
 * Compiles the schema once, then runs REQUESTS (default 8) requests one
 * after the other, each drawing tokens from its masks until it ends (as the
 * property test draws them). The first request finds the grammar's state
 * tables empty (cold); the later ones share what it built (warm), as
 * requests with the same schema do in a server. Prints the time per token of
 * grammar_matcher_fill_mask and of grammar_matcher_accept, cold and warm
 * (median over the warm requests), and the build time of the vocabulary. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mapfile.h"
#include "vocab_sampler.h"

#include "bench_timing.h"

/* One request: mean fill_mask and accept time per token (seconds). */
static int run_request(const grammar *g, const vs_vocab *vi, uint32_t *mask, double *mask_s, double *accept_s,
                       int *tokens)
{
    grammar_matcher *m = NULL;
    if (grammar_matcher_new(g, vi->v, vi->end_ids, vi->n_end, &m) != ENC_OK) return -1;
    double tm = 0, ta = 0;
    int n = 0, late_at = 64 + (int)vs_rnd(64), done = 0;
    for (; n < 1000 && !done; n++) {
        double t0 = vs_now_s();
        if (grammar_matcher_fill_mask(m, mask) != ENC_OK) return -1;
        double t1 = vs_now_s();
        int32_t id = vs_pick(vi, mask, n >= late_at);
        double t2 = vs_now_s();
        if (id < 0 || !grammar_matcher_accept(m, id)) return -1;
        ta += vs_now_s() - t2;
        tm += t1 - t0;
        done = vs_is_end(vi, id);
    }
    grammar_matcher_free(m);
    *mask_s = tm / n, *accept_s = ta / n, *tokens = n;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR SCHEMA.json [REQUESTS] [SEED]\n", argv[0]);
        return 2;
    }
    int n_req = argc > 3 ? atoi(argv[3]) : 8;
    vs_rng = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
    if (n_req < 2) n_req = 2;
    vs_vocab vi;
    memset(&vi, 0, sizeof vi);
    double t0 = vs_now_s();
    if (vs_load(argv[1], &vi)) return 1;
    double t_vocab = vs_now_s() - t0;
    char *schema = NULL, *ebnf = NULL;
    size_t n = 0;
    grammar *g = NULL;
    if (file_read_all(argv[2], &schema, &n) != ENC_OK || grammar_json_schema_to_ebnf(schema, n, "", &ebnf) != ENC_OK ||
        grammar_compile(ebnf, strlen(ebnf), "root", &g) != ENC_OK) {
        fprintf(stderr, "%s: %s\n", argv[2], enc_last_error());
        return 1;
    }
    uint32_t *mask = malloc(((size_t)vi.n_vocab + 31) / 32 * sizeof *mask);
    double *warm_mask = malloc((size_t)n_req * sizeof *warm_mask), *warm_acc = malloc((size_t)n_req * sizeof *warm_acc);
    double cold_mask = 0, cold_acc = 0;
    int tokens = 0, total = 0;
    for (int r = 0; r < n_req; r++) {
        double ms, as;
        if (run_request(g, &vi, mask, &ms, &as, &tokens)) {
            fprintf(stderr, "request %d failed: %s\n", r, enc_last_error());
            return 1;
        }
        total += tokens;
        if (r == 0) cold_mask = ms, cold_acc = as;
        else warm_mask[r - 1] = ms, warm_acc[r - 1] = as;
    }
    printf("vocab: %d ids, trie built in %.0f ms (with the tokenizer's load)\n", vi.n_vocab, t_vocab * 1e3);
    printf("%d requests, %d tokens\n", n_req, total);
    printf("cold request: fill_mask %.1f us/token, accept %.2f us/token\n", cold_mask * 1e6, cold_acc * 1e6);
    printf("warm requests (median): fill_mask %.1f us/token, accept %.2f us/token\n",
           bench_median(warm_mask, n_req - 1) * 1e6, bench_median(warm_acc, n_req - 1) * 1e6);
    free(mask);
    free(warm_mask);
    free(warm_acc);
    free(schema);
    free(ebnf);
    grammar_free(g);
    vs_free(&vi);
    return 0;
}
