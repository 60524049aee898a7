/* serve_setup.h - what `encore serve` and `encore run-batch` share: the
 * server's options and the engine they load, said on stderr the same way. */
#ifndef ENC_TOOLS_SERVE_SETUP_H
#define ENC_TOOLS_SERVE_SETUP_H

#include "cli.h"
#include "encore.h"
#include "server/server.h"

typedef struct serve_args {
    engine_config cfg;
    http_server_config http;
    int key_flag;              /* --api-key given */
    const char *key_file;      /* --api-key-file, else NULL */
    const char *chat_template; /* --chat-template, else NULL */
    const char *runner;        /* --runner, else NULL (auto) */
} serve_args;

/* serve's own options (a cli_option_fn over a serve_args). */
int serve_option(void *args, const char *cmd, int argc, char **argv, int *i);

/* Create the engine of a->cfg into *out, the progress bar on a terminal,
 * then say on stderr what runs: the device, KV cache and limits, the
 * model's recommended sampling (unless --generation-config none), a chat
 * template encore cannot render, the demo model. Returns CLI_OK,
 * CLI_BAD_ARGS (an option that does not fit the model) or CLI_FAILED, the
 * reason printed. */
int serve_engine_create(const char *cmd, const serve_args *a, encore_engine **out);

#endif
