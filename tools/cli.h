/* cli.h - what the subcommands share: engine options, number and id-list
 * parsing with one-line errors, the demo-model notice. */
#ifndef ENC_TOOLS_CLI_H
#define ENC_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

/* Exit statuses of every subcommand. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_BAD_ARGS = 2 };

/* The help text of the engine options, for each command's --help. */
extern const char cli_engine_options_help[];

/* Defaults from the environment (ENCORE_THREADS, ENCORE_DEVICE, ...). */
void cli_engine_defaults(engine_config *cfg);

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
 * --seed. Same contract as cli_engine_option. */
typedef struct cli_sampling {
    int64_t max_tokens;
    double temperature;
    int64_t seed;
    bool seed_given;
} cli_sampling;
int cli_sampling_option(const char *cmd, int argc, char **argv, int *i, cli_sampling *s);

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

/* Create the engine, printing the error (with its cause) on failure. */
engine *cli_engine_create(const char *cmd, const engine_config *cfg);

/* True when DIR/config.json marks a generated demo model. */
bool cli_is_demo_model(const char *model_dir);

double cli_now_seconds(void);

#endif
