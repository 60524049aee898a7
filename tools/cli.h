/* cli.h - what the subcommands share: engine options, number and id-list
 * parsing with one-line errors, the demo-model notice. */
#ifndef ENC_TOOLS_CLI_H
#define ENC_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "api/encore_tools.h"

/* Exit statuses of every subcommand. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_BAD_ARGS = 2 };

/* The help text of the engine options, for each command's --help. */
extern const char cli_engine_options_help[];

/* Defaults from the environment (ENCORE_THREADS, ENCORE_DEVICE, ...); false
 * after a message naming a variable whose value is out of range. */
bool cli_engine_defaults(const char *cmd, engine_config *cfg);

/* If argv[*i] is an engine option, consume it (and its value) and return 1;
 * return 0 if it is not one; -1 after printing a one-line error. */
int cli_engine_option(const char *cmd, int argc, char **argv, int *i, engine_config *cfg);

/* The value of option argv[*i], advancing *i; NULL (and a message) if absent. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);
bool cli_parse_i64(const char *cmd, const char *opt, const char *s, int64_t min, int64_t max,
                   int64_t *out);
bool cli_parse_f64(const char *cmd, const char *opt, const char *s, double min, double max,
                   double *out);
/* Parse the value of option argv[*i] (advancing *i); false after a message. */
bool cli_option_i64(const char *cmd, int argc, char **argv, int *i, int64_t min, int64_t max,
                    int64_t *out);
bool cli_option_f64(const char *cmd, int argc, char **argv, int *i, double min, double max,
                    double *out);

/* The sampling options of generate and chat: -n/--max-tokens, --temperature,
 * --seed, and vLLM's filters and penalties (CLI_SAMPLING_HELP). Same
 * contract as cli_engine_option. Zero for a filter or penalty is "off". */
typedef struct cli_sampling {
    int64_t max_tokens;
    double temperature;
    int64_t seed;
    bool seed_given;
    int64_t top_k;
    double top_p, min_p;
    double repetition_penalty, presence_penalty, frequency_penalty;
    int64_t min_tokens;
    bool logprobs;        /* --logprobs N given */
    int64_t top_logprobs; /* its N */
    graph_sample_bias logit_bias[ENGINE_MAX_LOGIT_BIAS]; /* --logit-bias ID=BIAS, in order */
    int n_logit_bias;
    unsigned given; /* QWEN3_GEN_* bits: --temperature, --top-k, --top-p, --min-p,
                     * --repetition-penalty given */
} cli_sampling;
int cli_sampling_option(const char *cmd, int argc, char **argv, int *i, cli_sampling *s);
/* The model's recommended sampling (its generation_config.json, or a GGUF
 * file's general.sampling.* keys) for each of those options not given, said
 * on stderr ("encore CMD: the model's recommended temperature 0.6, ..."). */
void cli_sampling_model_defaults(const char *cmd, cli_sampling *s,
                                 const qwen3_generation_defaults *g);
/* "temperature 0.6, top_k 20, top_p 0.95": the fields of g in `bits`, into
 * buf[cap]; false when there are none. */
bool cli_describe_generation(const qwen3_generation_defaults *g, unsigned bits, char *buf,
                             size_t cap);
/* The default --seed: drawn from the kernel's random source, in [0, INT64_MAX]. */
int64_t cli_random_seed(void);
/* The engine's sampling parameters for these options (logit_bias points
 * into s). */
engine_sampling cli_sampling_params(const cli_sampling *s);

/* The help lines of the options cli_sampling_option parses beyond -n,
 * --temperature and --seed (whose defaults differ by command). */
#define CLI_SAMPLING_HELP                                                                          \
    "  --top-k K                keep the K most likely tokens; -1 or 0: off (default off)\n"       \
    "  --top-p P                keep the smallest set of tokens with probability mass P,\n"        \
    "                           in (0, 1] (default 1: off)\n"                                      \
    "  --min-p P                drop tokens less likely than P x the most likely one,\n"           \
    "                           in [0, 1] (default 0: off)\n"                                      \
    "  --repetition-penalty R   divide positive (multiply negative) logits of tokens in the\n"     \
    "                           prompt or output by R, > 0 (default 1: off)\n"                     \
    "  --presence-penalty X     subtract X from the logits of generated tokens, in [-2, 2]\n"      \
    "                           (default 0)\n"                                                     \
    "  --frequency-penalty X    subtract X per occurrence in the output, in [-2, 2] (default 0)\n" \
    "  --min-tokens N           no end-of-sequence or stop token before N tokens (default 0)\n"    \
    "  --logit-bias ID=BIAS     add BIAS, in [-100, 100], to token ID's logit before the\n"        \
    "                           penalties; repeatable, at most 300 (default none)\n"               \
    "  (--temperature, --top-k, --top-p, --min-p and --repetition-penalty default to the\n"        \
    "  model's recommendation where it gives one: its generation_config.json, or a GGUF\n"         \
    "  file's general.sampling.* keys; said on stderr)\n"

/* Print one token's logprobs to stdout as {"id":I,"logprob":L,"top":[[I,L],...]}
 * (9 significant digits: an f32 read back exactly). */
void cli_print_logprob(const engine_token_logprob *lp);

/* "1 2 3" or "1,2,3" -> malloc'd ids. */
bool cli_parse_ids(const char *cmd, const char *opt, const char *s, int32_t **ids, int64_t *n);

/* Print "encore CMD: MSG" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A command's own options: consume argv[*i] (and its value) and return 1,
 * return 0 if it is not one of them, -1 after printing a one-line error. */
typedef int (*cli_option_fn)(void *args, const char *cmd, int argc, char **argv, int *i);

/* The argument loop every model command shares: the engine options, then the
 * command's own (fn), -h/--help (prints `help` and the engine options, exits
 * 0), an unknown option or a missing -m DIR (a one-line error). Defaults come
 * from cli_engine_defaults. Returns 0 or CLI_BAD_ARGS. */
int cli_parse_args(const char *cmd, const char *help, int argc, char **argv, engine_config *cfg,
                   cli_option_fn fn, void *args);

/* Create the engine into *out, printing the error (with its cause) on
 * failure; on a terminal, with cli_load_progress's bar while the weights
 * load. tok (NULL: none) gives its eos_token, an end of sequence too and the
 * model's first (engine_config.tokenizer_eos). Returns CLI_OK, CLI_BAD_ARGS
 * when an option does not fit the model (say --max-model-len beyond it), else
 * CLI_FAILED. */
int cli_engine_create(const char *cmd, const engine_config *cfg, const tokenizer *tok,
                      engine **out);
/* The loading bar on stderr: "encore: loading weights  57%" (user: an int,
 * the last percentage printed, -1 at first). */
void cli_load_progress(void *user, double fraction);

/* True when DIR/config.json marks a generated demo model. */
bool cli_is_demo_model(const char *model_dir);

double cli_now_seconds(void);
/* The peak resident set size of this process so far, in bytes. */
double cli_peak_rss_bytes(void);

#endif
