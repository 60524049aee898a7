/* cmd_logits.c - `encore logits`: teacher-forced logits of every prompt
 * position, the K best per line as {"pos":P,"top":[[ID,LOGIT],...]}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static const char logits_help[] =
    "usage: encore logits -m DIR --prompt-ids \"I I ...\" [--top K]\n\n"
    "Run the prompt through the model (teacher-forced) and print, for every\n"
    "position P, one JSON line {\"pos\":P,\"top\":[[ID,LOGIT],...]} with the K\n"
    "largest logits, descending (ties: lower id first).\n\n"
    "options:\n"
    "  --prompt-ids \"I I ...\"   the prompt as token ids\n"
    "  --top K                  logits per position (default 10)\n"
    "  -h, --help               show this help\n\n";

typedef struct logit_entry {
    float x;
    int64_t id;
} logit_entry;

typedef struct logits_ctx {
    int64_t top;
    int64_t *best;       /* [top] scratch of a short selection */
    logit_entry *sorted; /* [V] scratch of a long one */
} logits_ctx;

static bool logits__better(const float *x, int64_t a, int64_t b)
{
    return x[a] > x[b] || (x[a] == x[b] && a < b);
}

/* Descending by logit, ties by lower id: logits__better's order. */
static int logits__cmp(const void *pa, const void *pb)
{
    const logit_entry *a = pa, *b = pb;
    if (a->x != b->x) return a->x > b->x ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* The k best ids of x[0..V) in order into c->best: by insertion for a few
 * (one pass), else by sorting every id (an insertion of 150,000 took 20 s
 * a row). */
static void logits__select(logits_ctx *c, const float *x, int64_t V, int64_t k)
{
    if (k > 64) {
        for (int64_t i = 0; i < V; i++)
            c->sorted[i] = (logit_entry){x[i], i};
        qsort(c->sorted, (size_t)V, sizeof *c->sorted, logits__cmp);
        for (int64_t i = 0; i < k; i++)
            c->best[i] = c->sorted[i].id;
        return;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < V; i++) {
        if (n == k && !logits__better(x, i, c->best[k - 1])) continue;
        int64_t j = n < k ? n++ : k - 1;
        while (j > 0 && logits__better(x, i, c->best[j - 1])) {
            c->best[j] = c->best[j - 1];
            j--;
        }
        c->best[j] = i;
    }
}

static void logits__print(void *user, int64_t request_id, int64_t pos, const float *x, int64_t V)
{
    logits_ctx *c = user;
    int64_t k = c->top < V ? c->top : V;
    logits__select(c, x, V, k);
    printf("{\"pos\":%lld,\"top\":[", (long long)pos);
    for (int64_t i = 0; i < k; i++)
        printf("%s[%lld,%.9g]", i ? "," : "", (long long)c->best[i], (double)x[c->best[i]]);
    printf("]}\n");
}

typedef struct logits_args {
    const char *ids_text;
    int64_t top;
} logits_args;

static int logits__option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    logits_args *a = args;
    if (!strcmp(argv[*i], "--prompt-ids")) return (a->ids_text = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(argv[*i], "--top")) return cli_option_i64(cmd, argc, argv, i, 1, 1 << 20, &a->top) ? 1 : -1;
    return 0;
}

int cmd_logits(int argc, char **argv)
{
    const char *cmd = "logits";
    engine_config cfg;
    logits_args a = {.top = 10};
    int rc = cli_parse_args(cmd, logits_help, argc, argv, &cfg, logits__option, &a);
    if (rc) return rc;
    if (!a.ids_text) {
        cli_error(cmd, "needs --prompt-ids");
        return CLI_BAD_ARGS;
    }
    logits_ctx ctx = {.top = a.top};
    int32_t *ids;
    int64_t n;
    if (!cli_parse_ids(cmd, "--prompt-ids", a.ids_text, &ids, &n)) return CLI_BAD_ARGS;
    engine *e = NULL;
    rc = cli_engine_create(cmd, &cfg, NULL, &e);
    if (rc) {
        free(ids);
        return rc;
    }
    int64_t V = engine_model_config(e)->vocab_size;
    if (ctx.top > V) ctx.top = V;
    ctx.best = malloc((size_t)ctx.top * sizeof *ctx.best);
    ctx.sorted = ctx.top > 64 ? malloc((size_t)V * sizeof *ctx.sorted) : NULL;
    if (!ctx.best || (ctx.top > 64 && !ctx.sorted)) {
        cli_error(cmd, "out of memory for --top %lld", (long long)ctx.top);
        free(ctx.best);
        free(ctx.sorted);
        free(ids);
        engine_destroy(e);
        return CLI_FAILED;
    }
    engine_set_logits_callback(e, logits__print, &ctx);
    engine_request_params p = {
        .prompt_ids = ids, .n_prompt = n, .max_tokens = 0, .prompt_logits = true};
    int64_t id;
    rc = CLI_OK;
    if (engine_add_request(e, &p, &id) != ENC_OK) {
        cli_error(cmd, "%s", enc_last_error());
        rc = CLI_BAD_ARGS;
    }
    while (rc == CLI_OK && engine_has_unfinished(e))
        if (engine_step(e, NULL) != ENC_OK) {
            cli_error(cmd, "step failed: %s", enc_last_error());
            rc = CLI_FAILED;
        }
    free(ctx.best);
    free(ctx.sorted);
    free(ids);
    engine_destroy(e);
    return rc;
}
