/* cmd_generate.c - `encore generate`: one prompt in, generated text or ids
 * out, streamed as the tokens come. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/encore_tools.h"
#include "cli.h"
#include "commands.h"

static const char generate_help[] =
    "usage: encore generate -m DIR (-p TEXT | --prompt-ids \"I I ...\") [options]\n\n"
    "Generate a continuation of a prompt with a Qwen3 checkpoint.\n\n"
    "options:\n"
    "  -p, --prompt TEXT        prompt text (needs DIR/tokenizer.json)\n"
    "  --prompt-ids \"I I ...\"   prompt as token ids, space- or comma-separated\n"
    "  -n, --max-tokens N       tokens to generate (default 64)\n"
    "  --temperature T          sampling temperature; 0 is greedy (default 0.8, or the\n"
    "                           model's recommendation: below)\n"
    "  --seed S                 sampling seed (default: drawn at random)\n" CLI_SAMPLING_HELP
    "  --logprobs N             after the text, print one JSON line per generated token:\n"
    "                           its log-probability under the raw model distribution and\n"
    "                           the N (0..20) most likely alternatives\n"
    "  --ignore-eos             keep generating past end-of-sequence tokens\n"
    "  --json-schema FILE       constrain the output to JSON valid under the schema in FILE\n"
    "  --json-object            constrain the output to a JSON object\n"
    "  --regex RE               constrain the output to a match of the regular expression\n"
    "  --grammar FILE           constrain the output to the EBNF grammar in FILE (rule root)\n"
    "  --print-ids              print the generated ids, space-separated, on one line\n"
    "  --stats                  print timing and throughput to stderr\n"
    "  -h, --help               show this help\n\n";

typedef struct generate_args {
    engine_config cfg;
    const char *prompt;
    const char *prompt_ids;
    cli_sampling sampling;
    bool ignore_eos, print_ids, stats;
    const char *json_schema_file, *regex, *grammar_file; /* structured output */
    bool json_object;
} generate_args;

static int generate_option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    generate_args *a = args;
    const char *o = argv[*i];
    if (!strcmp(o, "-p") || !strcmp(o, "--prompt")) return (a->prompt = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--prompt-ids")) return (a->prompt_ids = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--ignore-eos")) return a->ignore_eos = true;
    if (!strcmp(o, "--print-ids")) return a->print_ids = true;
    if (!strcmp(o, "--stats")) return a->stats = true;
    if (!strcmp(o, "--json-object")) return a->json_object = true;
    if (!strcmp(o, "--json-schema")) return (a->json_schema_file = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--regex")) return (a->regex = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--grammar")) return (a->grammar_file = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    return cli_sampling_option(cmd, argc, argv, i, &a->sampling);
}

/* 0 on success, else the exit status. */
static int generate_parse(int argc, char **argv, generate_args *a)
{
    a->sampling = (cli_sampling){.max_tokens = 64, .temperature = 0.8, .seed = cli_random_seed()};
    int rc = cli_parse_args("generate", generate_help, argc, argv, &a->cfg, generate_option, a);
    if (rc == 0 && !a->prompt == !a->prompt_ids) {
        cli_error("generate", "give exactly one of -p TEXT and --prompt-ids");
        return CLI_BAD_ARGS;
    }
    return rc;
}

/* The prompt as ids: parsed, or encoded with the model's tokenizer. */
static int generate_prompt(const generate_args *a, tokenizer *tok, int32_t **ids, int64_t *n)
{
    if (a->prompt_ids) return cli_parse_ids("generate", "--prompt-ids", a->prompt_ids, ids, n) ? 0 : CLI_BAD_ARGS;
    size_t count = 0;
    enc_status s = tokenizer_encode(tok, a->prompt, strlen(a->prompt), ids, &count);
    if (s != ENC_OK) {
        cli_error("generate", "-p: cannot encode the prompt: %s", enc_last_error());
        return CLI_BAD_ARGS;
    }
    *n = (int64_t)count;
    if (count == 0) {
        cli_error("generate", "the prompt encodes to no tokens");
        return CLI_BAD_ARGS;
    }
    return 0;
}

/* Print what the new ids complete, as text or as ids. */
static void generate_emit(const generate_args *a, tokenizer_stream *stream, const int32_t *ids,
                          int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        if (a->print_ids || !stream) {
            printf(i ? " %d" : "%d", ids[i]);
            continue;
        }
        const char *text;
        size_t len;
        if (tokenizer_stream_put(stream, ids[i], &text, &len) == ENC_OK) fwrite(text, 1, len, stdout);
    }
    fflush(stdout);
}

/* {"id":I,"logprob":L,"top":[[I,L],...]} per generated token. */
static void generate_print_logprobs(const engine *e, int64_t id)
{
    const engine_token_logprob *lp;
    int64_t n = 0;
    if (engine_request_logprobs(e, id, &lp, &n) != ENC_OK) return;
    for (int64_t i = 0; i < n; i++) {
        cli_print_logprob(&lp[i]);
        printf("\n");
    }
}

static int generate_loop(const generate_args *a, engine *e, tokenizer *tok, int64_t id, int64_t n_prompt);

/* The structured-output constraint the flags ask for, into *c (none: c->state
 * NULL). 0 or the exit status. */
static int generate_constraint(const generate_args *a, const engine *e, api_structured *st, engine_constraint *c)
{
    memset(c, 0, sizeof *c);
    char *schema = NULL, *ebnf = NULL;
    size_t n = 0;
    if ((a->json_schema_file && file_read_all(a->json_schema_file, &schema, &n) != ENC_OK) ||
        (a->grammar_file && file_read_all(a->grammar_file, &ebnf, &n) != ENC_OK)) {
        cli_error("generate", "%s", enc_last_error());
        free(schema);
        return CLI_BAD_ARGS;
    }
    const char *file = a->json_schema_file && a->grammar_file ? "--json-schema, --grammar"
                       : a->json_schema_file                  ? a->json_schema_file
                                                              : a->grammar_file;
    encore_request r = {.json_schema = schema, .regex = a->regex, .grammar = ebnf, .json_object = a->json_object,
                        .sampling = {.ignore_eos = a->ignore_eos}};
    const qwen3_config *mc = engine_model_config(e);
    int wanted = 0, rc = 0;
    enc_status s = api_structured_wanted(&r, &wanted);
    if (s == ENC_OK && wanted) s = api_structured_constraint(st, &r, mc->eos_token_ids, mc->n_eos, c);
    if (s != ENC_OK) {
        const char *what = file                         ? file
                           : a->json_object && a->regex ? "--json-object, --regex"
                           : a->json_object             ? "--json-object"
                                                        : "--regex";
        cli_error("generate", "%s: %s", what, enc_last_error());
        rc = CLI_BAD_ARGS;
    }
    free(schema);
    free(ebnf);
    return rc;
}

static int generate_run(const generate_args *a, engine *e, tokenizer *tok, const int32_t *prompt,
                        int64_t n_prompt)
{
    engine_request_params p = {
        .prompt_ids = prompt,
        .n_prompt = n_prompt,
        .max_tokens = a->sampling.max_tokens,
        .sampling = cli_sampling_params(&a->sampling),
        .ignore_eos = a->ignore_eos,
    };
    api_structured *st = NULL;
    engine_constraint c;
    if (api_structured_create(tok, (int32_t)engine_model_config(e)->vocab_size, &st) != ENC_OK) return CLI_FAILED;
    int rc = generate_constraint(a, e, st, &c);
    if (rc) {
        api_structured_destroy(st);
        return rc;
    }
    if (c.state) p.constraint = &c;
    int64_t id;
    if (engine_add_request(e, &p, &id) != ENC_OK) {
        cli_error("generate", "%s", enc_last_error());
        if (c.state) c.destroy(c.state); /* refused: still ours */
        api_structured_destroy(st);
        return CLI_BAD_ARGS;
    }
    rc = generate_loop(a, e, tok, id, n_prompt);
    engine_release_request(e, id); /* frees the constraint, before its grammar goes */
    api_structured_destroy(st);
    return rc;
}

static int generate_loop(const generate_args *a, engine *e, tokenizer *tok, int64_t id, int64_t n_prompt)
{
    tokenizer_stream *stream = NULL;
    if (tok && !a->print_ids) tokenizer_stream_create(tok, 1, &stream);
    double t0 = cli_now_seconds(), t_first = 0;
    int64_t shown = 0;
    const int32_t *ids;
    int64_t n_ids = 0;
    engine_finish finish = ENGINE_NOT_FINISHED;
    while (finish == ENGINE_NOT_FINISHED) {
        if (engine_step(e, NULL) != ENC_OK) {
            cli_error("generate", "step failed: %s", enc_last_error());
            tokenizer_stream_destroy(stream);
            return CLI_FAILED;
        }
        engine_request_output(e, id, &ids, &n_ids, &finish);
        if (n_ids > 0 && t_first == 0) t_first = cli_now_seconds();
        generate_emit(a, stream, ids, shown, n_ids);
        shown = n_ids;
    }
    double t1 = cli_now_seconds();
    if (stream) {
        const char *text;
        size_t len;
        if (tokenizer_stream_flush(stream, &text, &len) == ENC_OK) fwrite(text, 1, len, stdout);
        tokenizer_stream_destroy(stream);
    }
    printf("\n");
    if (finish == ENGINE_FINISH_ERROR) {
        cli_error("generate", "%s", engine_request_error(e, id));
        return CLI_FAILED;
    }
    if (a->sampling.logprobs) generate_print_logprobs(e, id);
    if (a->stats) {
        engine_stats st = engine_get_stats(e);
        fprintf(stderr, "prompt: %lld tokens in %.3f s (%.1f tokens/s); generated: %lld tokens in %.3f s (%.1f tokens/s); finish: %s\n",
                (long long)n_prompt, t_first - t0, (double)n_prompt / (t_first - t0), (long long)n_ids,
                t1 - t_first, n_ids > 1 ? (double)(n_ids - 1) / (t1 - t_first) : 0.0,
                engine_finish_name(finish));
        fprintf(stderr, "steps: %lld (%lld eager); captures: %lld; replays: %lld; multi-step round trips: %lld\n",
                (long long)st.n_steps, (long long)st.n_eager_steps, (long long)st.n_captures,
                (long long)st.n_replays, (long long)st.n_multi_round_trips);
        fprintf(stderr, "prefill: %lld tokens computed, %lld of %lld served from the prefix cache\n",
                (long long)st.n_prefill_tokens, (long long)st.n_prefix_cache_hits,
                (long long)st.n_prefix_cache_queries);
    }
    return CLI_OK;
}

int cmd_generate(int argc, char **argv)
{
    generate_args a = {0};
    int rc = generate_parse(argc, argv, &a);
    if (rc) return rc;
    tokenizer *tok = NULL; /* the text, and its eos_token: an end of sequence */
    enc_status s = model_tokenizer_load(a.cfg.model_dir, 0, &tok);
    if (s != ENC_OK && a.prompt) {
        cli_error("generate", "cannot load the tokenizer: %s", enc_last_error());
        return CLI_FAILED;
    }
    int32_t *prompt = NULL;
    int64_t n_prompt = 0;
    rc = generate_prompt(&a, tok, &prompt, &n_prompt);
    engine *e = NULL;
    if (!rc) rc = cli_engine_create("generate", &a.cfg, tok, &e);
    if (!rc)
        cli_sampling_model_defaults("generate", &a.sampling, &engine_model_config(e)->generation);
    if (!rc && cli_is_demo_model(a.cfg.model_dir))
        fprintf(stderr, "encore: this is the built-in DEMO model (random weights): its text is meaningless.\n");
    if (!rc) rc = generate_run(&a, e, tok, prompt, n_prompt);
    engine_destroy(e);
    tokenizer_free(tok);
    free(prompt);
    return rc;
}
