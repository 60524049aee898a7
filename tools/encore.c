/* encore.c - the `encore` command-line program: dispatch to a subcommand. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "encore.h"

typedef struct encore_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} encore_command;

static const encore_command encore_commands[] = {
    {"generate", cmd_generate, "generate text or token ids from a prompt"},
    {"chat", cmd_chat, "chat with a model in the terminal (its chat template, streamed replies)"},
    {"logits", cmd_logits, "print the top logits of every prompt position (teacher-forced)"},
    {"batch", cmd_batch, "run many requests at once from a JSON-lines file"},
    {"serve", cmd_serve,
     "serve a model over HTTP with OpenAI's API (completions, chat, streaming)"},
    {"run-batch", cmd_run_batch,
     "answer a file of OpenAI batch requests (chat, completions, responses) into a file"},
    {"bench", cmd_bench, "measure prefill and decode speed"},
    {"quantize", cmd_quantize,
     "write a checkpoint or a GGUF file as a GGUF file (f32 ... q8_0, q4_k_m ...)"},
    {"devices", cmd_devices, "list the devices encore can run on (--device)"},
    {"tokenize", cmd_tokenize, "encode JSON strings (one per line) into token ids"},
    {"detokenize", cmd_detokenize, "decode JSON arrays of token ids into strings"},
};

static void encore_usage(FILE *f)
{
    fprintf(f, "usage: encore COMMAND [OPTIONS]\n\n"
               "encore is an LLM inference engine for Qwen3 checkpoints.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof encore_commands / sizeof encore_commands[0]; i++)
        fprintf(f, "  %-11s %s\n", encore_commands[i].name, encore_commands[i].summary);
    fprintf(f, "\nRun 'encore COMMAND --help' for the options of a command; 'encore --version'\n"
               "prints the release.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        encore_usage(stderr);
        return CLI_BAD_ARGS;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        encore_usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("encore %s\n", encore_version());
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof encore_commands / sizeof encore_commands[0]; i++) {
        if (strcmp(argv[1], encore_commands[i].name) != 0) continue;
        int rc = encore_commands[i].run(argc - 1, argv + 1);
        /* output that did not reach stdout (a full disk, a closed pipe) is a failure */
        errno = 0;
        if ((fflush(stdout) != 0 || ferror(stdout)) && rc == CLI_OK) {
            fprintf(stderr, "encore %s: error writing stdout%s%s\n", argv[1], errno ? ": " : "",
                    errno ? strerror(errno) : "");
            rc = CLI_FAILED;
        }
        return rc;
    }
    fprintf(stderr, "encore: unknown command '%s' (try 'encore --help')\n", argv[1]);
    return CLI_BAD_ARGS;
}
