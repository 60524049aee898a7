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

typedef struct logits_ctx {
    int64_t top;
    int64_t *best; /* [top] scratch */
} logits_ctx;

static bool logits__better(const float *x, int64_t a, int64_t b)
{
    return x[a] > x[b] || (x[a] == x[b] && a < b);
}

/* Partial selection: keep the K best in order by insertion. */
static void logits__print(void *user, int64_t request_id, int64_t pos, const float *x, int64_t V)
{
    logits_ctx *c = user;
    int64_t k = c->top < V ? c->top : V, n = 0;
    for (int64_t i = 0; i < V; i++) {
        if (n == k && !logits__better(x, i, c->best[k - 1])) continue;
        int64_t j = n < k ? n++ : k - 1;
        while (j > 0 && logits__better(x, i, c->best[j - 1])) {
            c->best[j] = c->best[j - 1];
            j--;
        }
        c->best[j] = i;
    }
    printf("{\"pos\":%lld,\"top\":[", (long long)pos);
    for (int64_t i = 0; i < n; i++)
        printf("%s[%lld,%.9g]", i ? "," : "", (long long)c->best[i], (double)x[c->best[i]]);
    printf("]}\n");
}

int cmd_logits(int argc, char **argv)
{
    const char *cmd = "logits", *ids_text = NULL;
    engine_config cfg;
    cli_engine_defaults(&cfg);
    logits_ctx ctx = {.top = 10};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int r = cli_engine_option(cmd, argc, argv, &i, &cfg);
        if (r < 0) return CLI_BAD_ARGS;
        if (r > 0) continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf("%s%s", logits_help, cli_engine_options_help);
            return CLI_OK;
        } else if (!strcmp(o, "--prompt-ids")) {
            if (!(ids_text = cli_value(cmd, argc, argv, &i))) return CLI_BAD_ARGS;
        } else if (!strcmp(o, "--top")) {
            if (!cli_option_i64(cmd, argc, argv, &i, 1, 1 << 20, &ctx.top)) return CLI_BAD_ARGS;
        } else {
            cli_error(cmd, "unknown option '%s' (try --help)", o);
            return CLI_BAD_ARGS;
        }
    }
    if (!cfg.model_dir || !ids_text) {
        cli_error(cmd, "needs -m DIR and --prompt-ids");
        return CLI_BAD_ARGS;
    }
    int32_t *ids;
    int64_t n;
    if (!cli_parse_ids(cmd, ids_text, &ids, &n)) return CLI_BAD_ARGS;
    engine *e = cli_engine_create(cmd, &cfg);
    if (!e) {
        free(ids);
        return CLI_FAILED;
    }
    ctx.best = malloc((size_t)ctx.top * sizeof *ctx.best);
    engine_set_logits_callback(e, logits__print, &ctx);
    engine_request_params p = {.prompt_ids = ids, .n_prompt = n, .max_tokens = 1, .prompt_logits = true};
    int64_t id;
    int rc = CLI_OK;
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
    free(ids);
    engine_destroy(e);
    return rc;
}
