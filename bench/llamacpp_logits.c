/* llamacpp_logits.c - llama.cpp's side of a same-weights comparison: the
 * teacher-forced logits and the greedy continuation of a prompt given as
 * token ids, printed the way `encore logits` prints them.
 *
 *   llamacpp_logits MODEL.gguf "ID ID ..." N_GEN [TOP [THREADS [KV]]]
 *
 *   {"pos":P,"top":[[ID,LOGIT],...]}   one line per prompt position, the TOP
 *                                      largest logits, ties to the lower id
 *   {"greedy":[ID,...]}                N_GEN tokens, argmax (lower id on ties)
 *
 * KV is the cache type, f32 (default) or f16. The prompt goes in as given:
 * no BOS, no chat template. Not part of encore's build: bench/vs_llamacpp.sh
 * compiles it against a llama.cpp build (libllama), e.g.
 *   cc -O2 bench/llamacpp_logits.c -I$L/include -I$L/ggml/include \
 *      -L$L/build/bin -Wl,-rpath,$L/build/bin -lllama -lggml -lggml-base */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

enum { LOGITS_MAX_IDS = 8192 };

static void logits__quiet(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* Space- or comma-separated ids into ids[]; their count, -1 when bad. */
static int logits__parse_ids(const char *s, llama_token *ids, int cap)
{
    int n = 0;
    while (*s) {
        if (*s == ' ' || *s == ',') {
            s++;
            continue;
        }
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || n == cap) return -1;
        ids[n++] = (llama_token)v;
        s = end;
    }
    return n;
}

static int logits__better(const float *x, int a, int b)
{
    return x[a] > x[b] || (x[a] == x[b] && a < b);
}

/* The k best of x[0..n) into best[0..k), descending, by insertion. */
static void logits__top(const float *x, int n, int k, int *best)
{
    int have = 0;
    for (int i = 0; i < n; i++) {
        if (have == k && !logits__better(x, i, best[k - 1])) continue;
        int j = have < k ? have++ : k - 1;
        while (j > 0 && logits__better(x, i, best[j - 1])) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = i;
    }
}

static void logits__print(int pos, const float *x, int n_vocab, int k, int *best)
{
    logits__top(x, n_vocab, k, best);
    printf("{\"pos\":%d,\"top\":[", pos);
    for (int i = 0; i < k; i++)
        printf("%s[%d,%.6g]", i ? "," : "", best[i], (double)x[best[i]]);
    printf("]}\n");
}

/* Decode ids[0..n) at positions from pos, logits for every one when all. */
static int logits__decode(struct llama_context *ctx, struct llama_batch *b, const llama_token *ids,
                          int n, int pos, int all)
{
    b->n_tokens = n;
    for (int i = 0; i < n; i++) {
        b->token[i] = ids[i];
        b->pos[i] = pos + i;
        b->n_seq_id[i] = 1;
        b->seq_id[i][0] = 0;
        b->logits[i] = (int8_t)(all || i == n - 1);
    }
    return llama_decode(ctx, *b);
}

static int logits__run(struct llama_model *model, const llama_token *ids, int n_ids, int n_gen,
                       int top, int threads, enum ggml_type kv)
{
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_ids + n_gen + 16);
    cp.n_batch = cp.n_ubatch = (uint32_t)n_ids;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = cp.type_v = kv;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llamacpp_logits: cannot create a context\n");
        return 1;
    }
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    int *best = malloc((size_t)(top > 1 ? top : 1) * sizeof *best);
    llama_token *gen = malloc((size_t)(n_gen > 0 ? n_gen : 1) * sizeof *gen);
    struct llama_batch b = llama_batch_init(n_ids, 0, 1);
    int rc = !best || !gen || logits__decode(ctx, &b, ids, n_ids, 0, 1) != 0;
    for (int p = 0; !rc && p < n_ids; p++)
        logits__print(p, llama_get_logits_ith(ctx, p), n_vocab, top, best);
    for (int g = 0; !rc && g < n_gen; g++) {
        logits__top(llama_get_logits_ith(ctx, -1), n_vocab, 1, best);
        gen[g] = best[0];
        rc = g + 1 < n_gen && logits__decode(ctx, &b, &gen[g], 1, n_ids + g, 0) != 0;
    }
    if (rc) fprintf(stderr, "llamacpp_logits: llama_decode failed\n");
    printf("{\"greedy\":[");
    for (int g = 0; !rc && g < n_gen; g++)
        printf("%s%d", g ? "," : "", gen[g]);
    printf("]}\n");
    llama_batch_free(b);
    free(gen);
    free(best);
    llama_free(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    static llama_token ids[LOGITS_MAX_IDS];
    if (argc < 4) {
        fprintf(stderr,
                "usage: llamacpp_logits MODEL.gguf \"ID ID ...\" N_GEN [TOP [THREADS [KV]]]\n");
        return 2;
    }
    int n_ids = logits__parse_ids(argv[2], ids, LOGITS_MAX_IDS);
    int n_gen = atoi(argv[3]), top = argc > 4 ? atoi(argv[4]) : 10;
    int threads = argc > 5 ? atoi(argv[5]) : 2;
    enum ggml_type kv = argc > 6 && !strcmp(argv[6], "f16") ? GGML_TYPE_F16 : GGML_TYPE_F32;
    if (n_ids < 1 || n_gen < 0 || top < 1 || threads < 1) {
        fprintf(stderr, "llamacpp_logits: bad ids '%s', N_GEN, TOP or THREADS\n", argv[2]);
        return 2;
    }
    llama_log_set(logits__quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "llamacpp_logits: llama.cpp cannot load %s\n", argv[1]);
        return 1;
    }
    int rc = logits__run(model, ids, n_ids, n_gen, top, threads, kv);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
