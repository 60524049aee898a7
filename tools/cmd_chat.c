/* cmd_chat.c - `encore chat`: an interactive terminal chat. Each line the
 * user types becomes a user message; the conversation goes through the
 * model's chat template and the reply streams back as it is generated. On a
 * terminal, Ctrl-C stops the reply (what came of it stays in the
 * conversation) and, at the prompt, quits. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/encore_tools.h"
#include "cli.h"
#include "commands.h"

static const char chat_help[] =
    "usage: encore chat -m DIR [options]\n\n"
    "Chat with a model in the terminal. Each line you type is a user message;\n"
    "the reply streams as it is generated. /reset starts a new conversation,\n"
    "/exit (or end of input) quits. On a terminal, Ctrl-C stops a reply and, at\n"
    "the prompt, quits.\n\n"
    "options:\n"
    "  --system TEXT            a system message at the start of the conversation\n"
    "  --no-think               disable thinking (Qwen3 enable_thinking=false)\n"
    "  --raw                    no chat template: each line is sent as a raw prompt\n"
    "                           (for models whose template encore does not know)\n"
    "  --chat-template FILE|NAME  the chat template to use instead of the model's: a\n"
    "                           Jinja file (the official Qwen3, Qwen3-2507 or\n"
    "                           Qwen3-Coder template), or qwen3, qwen3-instruct or\n"
    "                           qwen3-thinking (default: the model's own)\n"
    "  -n, --max-tokens N       longest reply in tokens (default 1024)\n"
    "  --temperature T          sampling temperature; 0 is greedy (default 0.7, or the\n"
    "                           model's recommendation: below)\n"
    "  --seed S                 sampling seed (default: drawn at random)\n" CLI_SAMPLING_HELP
    "  -h, --help               show this help\n\n";

enum { CHAT_MAX_TURNS = 512 };

typedef struct chat_args {
    engine_config cfg;
    const char *system;
    const char *chat_template; /* --chat-template, else NULL */
    bool no_think, raw;
    cli_sampling sampling;
} chat_args;

/* The conversation: roles are static strings, contents malloc'd. */
typedef struct chat_history {
    chat_message msgs[CHAT_MAX_TURNS];
    size_t n;
} chat_history;

static void chat_history_reset(chat_history *h, const char *system)
{
    for (size_t i = 0; i < h->n; i++) free((char *)h->msgs[i].content);
    memset(h, 0, sizeof *h);
    if (system) h->msgs[h->n++] = (chat_message){.role = "system", .content = strdup(system)};
}

static int chat_option(void *args, const char *cmd, int argc, char **argv, int *i)
{
    chat_args *a = args;
    const char *o = argv[*i];
    if (!strcmp(o, "--system")) return (a->system = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(o, "--no-think")) return a->no_think = true;
    if (!strcmp(o, "--raw")) return a->raw = true;
    if (!strcmp(o, "--chat-template"))
        return (a->chat_template = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    return cli_sampling_option(cmd, argc, argv, i, &a->sampling);
}

static int chat_parse(int argc, char **argv, chat_args *a)
{
    a->sampling = (cli_sampling){.max_tokens = 1024, .temperature = 0.7, .seed = cli_random_seed()};
    int rc = cli_parse_args("chat", chat_help, argc, argv, &a->cfg, chat_option, a);
    if (rc == 0 && a->sampling.logprobs) {
        cli_error("chat", "--logprobs is an option of generate, not chat");
        return CLI_BAD_ARGS;
    }
    if (rc == 0 && a->sampling.min_tokens > a->sampling.max_tokens) {
        cli_error("chat", "--min-tokens %lld exceeds --max-tokens %lld", (long long)a->sampling.min_tokens,
                  (long long)a->sampling.max_tokens);
        return CLI_BAD_ARGS;
    }
    return rc;
}

/* The prompt text for the conversation so far (malloc'd). */
static enc_status chat_prompt(const chat_args *a, tokenizer *tok, const chat_history *h, char **out)
{
    if (a->raw) {
        *out = strdup(h->msgs[h->n - 1].content);
        return *out ? ENC_OK : enc_fail(ENC_ERR_OUT_OF_MEMORY, "prompt");
    }
    return chat_template_apply(tok, h->msgs, h->n, 1, !a->no_think, out);
}

/* From a line read to the next prompt (chat__replying), SIGINT sets
 * chat__interrupted, which the reply loop checks after each step; at the
 * prompt it quits at once, as the end of input does (checking a flag before
 * getline would leave a window in which the signal is lost and getline
 * waits). Lock-free atomics: the handler may run on an engine thread. */
static atomic_int chat__replying, chat__interrupted;

static void chat__on_interrupt(int sig)
{
    (void)sig;
    if (atomic_load(&chat__replying)) {
        atomic_store(&chat__interrupted, 1);
        return;
    }
    static const char nl[] = "\n";
    ssize_t w = write(STDOUT_FILENO, nl, 1);
    (void)w;
    _exit(CLI_OK);
}

/* On a terminal, Ctrl-C stops the reply instead of the program; at the
 * prompt it quits. */
static void chat__catch_interrupt(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = chat__on_interrupt;
    sa.sa_flags = SA_RESTART; /* the reply's writes go on */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

/* Generate and stream one reply; *reply gets its text (malloc'd). */
static int chat_reply(chat_args *a, engine *e, tokenizer *tok, const char *prompt, char **reply)
{
    int32_t *ids = NULL, stops[ENGINE_MAX_STOP_IDS];
    size_t n_ids = 0;
    *reply = NULL;
    if (tokenizer_encode(tok, prompt, strlen(prompt), &ids, &n_ids) != ENC_OK) {
        cli_error("chat", "cannot encode the conversation: %s", enc_last_error());
        return CLI_FAILED;
    }
    size_t n_stops = tokenizer_stop_ids(tok, stops, ENGINE_MAX_STOP_IDS);
    engine_request_params p = {
        .prompt_ids = ids,
        .n_prompt = (int64_t)n_ids,
        .max_tokens = a->sampling.max_tokens,
        .sampling = cli_sampling_params(&a->sampling),
        .stop_ids = stops,
        .n_stop_ids = (int)(n_stops < ENGINE_MAX_STOP_IDS ? n_stops : ENGINE_MAX_STOP_IDS),
    };
    a->sampling.seed++; /* each reply takes the next seed */
    const engine_config *c = engine_get_config(e);
    if (p.n_prompt + p.max_tokens > c->max_model_len) p.max_tokens = c->max_model_len - p.n_prompt;
    if (p.sampling.min_tokens > p.max_tokens) p.sampling.min_tokens = p.max_tokens; /* a long conversation */
    int64_t id = -1;
    if (p.max_tokens < 1 || engine_add_request(e, &p, &id) != ENC_OK) {
        cli_error("chat", "the conversation no longer fits (%zu tokens; max_model_len %lld): /reset",
                  n_ids, (long long)c->max_model_len);
        free(ids);
        return CLI_OK; /* the session goes on */
    }
    free(ids);
    tokenizer_stream *stream;
    if (tokenizer_stream_create(tok, 1, &stream) != ENC_OK) return CLI_FAILED;
    const int32_t *out;
    int64_t n_out = 0, shown = 0;
    engine_finish finish = ENGINE_NOT_FINISHED;
    int rc = CLI_OK;
    while (finish == ENGINE_NOT_FINISHED && rc == CLI_OK && !atomic_load(&chat__interrupted)) {
        if (engine_step(e, NULL) != ENC_OK) {
            cli_error("chat", "step failed: %s", enc_last_error());
            rc = CLI_FAILED;
            break;
        }
        engine_request_output(e, id, &out, &n_out, &finish);
        for (; shown < n_out; shown++) {
            const char *text;
            size_t len;
            if (tokenizer_stream_put(stream, out[shown], &text, &len) == ENC_OK) fwrite(text, 1, len, stdout);
        }
        fflush(stdout);
    }
    const char *tail;
    size_t tail_len;
    if (tokenizer_stream_flush(stream, &tail, &tail_len) == ENC_OK) fwrite(tail, 1, tail_len, stdout);
    printf(atomic_load(&chat__interrupted) ? " [stopped]\n" : "\n");
    tokenizer_stream_destroy(stream);
    size_t len = 0;
    int64_t n_text = n_out > 0 && finish == ENGINE_FINISH_STOP ? n_out - 1 : n_out; /* drop the stop token */
    if (rc == CLI_OK) tokenizer_decode_bytes(tok, out, (size_t)n_text, 1, reply, &len);
    engine_release_request(e, id);
    return rc;
}

/* Whether a line read is text to send: UTF-8 without NUL bytes (a NUL would
 * cut the message short), else a message and nothing sent. */
static bool chat_line_ok(tokenizer *tok, const char *line, size_t n)
{
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (strlen(line) != n) {
        cli_error("chat", "the line holds a NUL byte (at %zu): not sent", strlen(line));
        return false;
    }
    if (tokenizer_encode(tok, line, n, &ids, &n_ids) != ENC_OK) {
        cli_error("chat", "%s: not sent", enc_last_error());
        return false;
    }
    free(ids);
    return true;
}

static int chat_loop(chat_args *a, engine *e, tokenizer *tok)
{
    chat_history *h = calloc(1, sizeof *h);
    if (!h) return CLI_FAILED;
    chat_history_reset(h, a->system);
    bool tty = isatty(STDIN_FILENO);
    if (tty) chat__catch_interrupt();
    char *line = NULL;
    size_t cap = 0;
    int rc = CLI_OK;
    for (;;) {
        atomic_store(&chat__interrupted, 0);
        atomic_store(&chat__replying, 0); /* Ctrl-C from here (the prompt shown) quits */
        if (tty) fputs("> ", stdout), fflush(stdout);
        ssize_t n = getline(&line, &cap, stdin);
        atomic_store(&chat__replying, 1); /* from here it stops the reply */
        if (n < 0) { /* end of input */
            if (tty) fputc('\n', stdout);
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0) continue;
        if (!strcmp(line, "/exit")) break;
        if (!strcmp(line, "/reset")) {
            chat_history_reset(h, a->system);
            continue;
        }
        if (!chat_line_ok(tok, line, (size_t)n)) continue; /* the session goes on */
        if (h->n + 2 > CHAT_MAX_TURNS) chat_history_reset(h, a->system);
        h->msgs[h->n++] = (chat_message){.role = "user", .content = strdup(line)};
        char *prompt = NULL, *reply = NULL;
        if (chat_prompt(a, tok, h, &prompt) != ENC_OK) {
            cli_error("chat", "%s (try --raw)", enc_last_error());
            rc = CLI_FAILED;
            break;
        }
        rc = chat_reply(a, e, tok, prompt, &reply);
        free(prompt);
        if (rc != CLI_OK) break;
        h->msgs[h->n++] = (chat_message){.role = "assistant", .content = reply ? reply : strdup("")};
    }
    free(line);
    chat_history_reset(h, NULL);
    free(h);
    return rc;
}

int cmd_chat(int argc, char **argv)
{
    chat_args a;
    memset(&a, 0, sizeof a);
    int rc = chat_parse(argc, argv, &a);
    if (rc) return rc;
    tokenizer *tok = NULL;
    if (model_tokenizer_load(a.cfg.model_dir, 0, &tok) != ENC_OK) {
        cli_error("chat", "cannot load the tokenizer: %s", enc_last_error());
        return CLI_FAILED;
    }
    if (a.chat_template && model_tokenizer_chat_template(tok, a.chat_template) != ENC_OK) {
        cli_error("chat", "--chat-template: %s", enc_last_error());
        tokenizer_free(tok);
        return CLI_BAD_ARGS;
    }
    if (!a.raw && !chat_template_family_known(chat_template_get_family(tok))) {
        cli_error("chat",
                  "the model's chat template is %s, which encore cannot render; give one it "
                  "renders with --chat-template FILE|NAME, or use --raw to send raw prompts",
                  chat_template_family_name(chat_template_get_family(tok)));
        tokenizer_free(tok);
        return CLI_BAD_ARGS;
    }
    if (!a.raw && a.no_think && chat_template_get_family(tok) != CHAT_TEMPLATE_QWEN3)
        fprintf(stderr,
                "encore: --no-think has no effect: the model's chat template (%s) has no "
                "thinking switch\n",
                chat_template_family_name(chat_template_get_family(tok)));
    engine *e = NULL;
    rc = cli_engine_create("chat", &a.cfg, tok, &e);
    if (rc) {
        tokenizer_free(tok);
        return rc;
    }
    cli_sampling_model_defaults("chat", &a.sampling, &engine_model_config(e)->generation);
    if (cli_is_demo_model(a.cfg.model_dir))
        fprintf(stderr, "encore: this is the built-in DEMO model (random weights): its replies are meaningless.\n");
    rc = chat_loop(&a, e, tok);
    engine_destroy(e);
    tokenizer_free(tok);
    return rc;
}
