/* cli_test.c - `encore tokenize` / `encore detokenize` (tools/cmd_tokenize.c).
 *
 *   tokenizer_cli_test TOKENIZER_DIR SCRATCH_DIR
 *
 * Calls cmd_tokenize / cmd_detokenize in a child process with stdin, stdout
 * and stderr redirected to files in SCRATCH_DIR, and checks exit status and
 * output: ids for known strings, the round trip, line-numbered errors (exit
 * 1), bad arguments (exit 2, one line), --help (exit 0). */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "test_util.h"

static const char *scratch;

typedef struct run_result {
    int rc;
    char *out, *err;
} run_result;

static char *slurp(const char *path)
{
    char *text;
    size_t n;
    REQUIRE(file_read_all(path, &text, &n));
    return text;
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* Run cmd (0 tokenize, 1 detokenize) with argv and input; NULL ends argv. */
static run_result run(int detok, const char *input, const char *const *args)
{
    char in[4096], out[4096], err[4096];
    snprintf(in, sizeof in, "%s/cli_in.txt", scratch);
    snprintf(out, sizeof out, "%s/cli_out.txt", scratch);
    snprintf(err, sizeof err, "%s/cli_err.txt", scratch);
    put_file(in, input);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[16];
        int argc = 0;
        argv[argc++] = detok ? "detokenize" : "tokenize";
        while (args[argc - 1] && argc < 15) argv[argc] = (char *)args[argc - 1], argc++;
        argv[argc] = NULL;
        int fi = open(in, O_RDONLY), fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644),
            fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fi < 0 || fo < 0 || fe < 0) _exit(99);
        dup2(fi, 0), dup2(fo, 1), dup2(fe, 2);
        int rc = detok ? cmd_detokenize(argc, argv) : cmd_tokenize(argc, argv);
        fflush(NULL);
        _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    run_result r = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
    return r;
}

static void result_free(run_result *r)
{
    free(r->out);
    free(r->err);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    scratch = argv[2];
    const char *m[] = {"-m", dir, NULL};
    const char *m_skip[] = {"--model", dir, "--skip-special-tokens", NULL};

    run_result r = run(0, "\"Hello world\"\n\"<|im_start|>user\\nhi<|im_end|>\"\n\"\"\n  \"a\\u0000b\"  \r\n", m);
    CHECK(r.rc == 0, "tokenize rc %d: %s", r.rc, r.err);
    CHECK(strcmp(r.out, "[9707,1879]\n[151644,872,198,6023,151645]\n[]\n[64,188,65]\n") == 0,
          "tokenize output:\n%s", r.out);
    result_free(&r);

    r = run(1, "[9707,1879]\n[151644,872,198,6023,151645]\n[]\n[64,188,65]\n", m);
    CHECK(r.rc == 0, "detokenize rc %d: %s", r.rc, r.err);
    CHECK(strcmp(r.out, "\"Hello world\"\n\"<|im_start|>user\\nhi<|im_end|>\"\n\"\"\n\"a\\u0000b\"\n") == 0,
          "detokenize output:\n%s", r.out);
    result_free(&r);

    r = run(1, "[151644,872,198,6023,151645]\n[220,151667]\n", m_skip);
    CHECK(r.rc == 0 && strcmp(r.out, "\"user\\nhi\"\n\" <think>\"\n") == 0, "skip special:\n%s", r.out);
    result_free(&r);

    /* A byte-level piece of a character comes out as U+FFFD, as JSON. */
    r = run(1, "[144349]\n[145375]\n", m);
    CHECK(r.rc == 0 && count_lines(r.out) == 2, "partial characters:\n%s", r.out);
    result_free(&r);

    /* Bad lines: the message names the line; the good lines before it print. */
    static const struct { int detok; const char *input; const char *want_err; } bad[] = {
        {0, "\"ok\"\nnot json\n\"x\"\n", "line 2"},
        {0, "\"ok\"\n\"\\ud800\"\n", "line 2"},
        {0, "\"bad \xff utf8\"\n", "line 1"},
        {0, "\n", "line 1"},
        {0, "[1,2]\n", "line 1"},
        {1, "[1]\n[1.5]\n", "line 2"},
        {1, "[1]\n[2]\n[151669]\n", "line 3"},
        {1, "[1e30]\n", "line 1"},
        {1, "\"text\"\n", "line 1"},
        {1, "[1, \"2\"]\n", "line 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        r = run(bad[i].detok, bad[i].input, m);
        CHECK(r.rc == 1, "bad case %zu: rc %d", i, r.rc);
        CHECK(strstr(r.err, bad[i].want_err) != NULL && count_lines(r.err) == 1,
              "bad case %zu: stderr '%s'", i, r.err);
        result_free(&r);
    }
    r = run(0, "\"ok\"\nnot json\n", m);
    CHECK(strcmp(r.out, "[562]\n") == 0, "lines before the bad one are printed: %s", r.out);
    result_free(&r);

    /* Bad arguments: exit 2 and one line; --help: exit 0. */
    const char *no_m[] = {NULL}, *m_only[] = {"-m", NULL}, *unknown[] = {"-m", dir, "--frobnicate", NULL};
    const char *skip_tok[] = {"-m", dir, "--skip-special-tokens", NULL};
    const char *const *bad_args[] = {no_m, m_only, unknown, skip_tok};
    for (size_t i = 0; i < 4; i++) {
        r = run(0, "", bad_args[i]);
        CHECK(r.rc == 2 && count_lines(r.err) == 1 && !*r.out, "bad args %zu: rc %d err '%s'", i, r.rc, r.err);
        result_free(&r);
    }
    const char *help[] = {"--help", NULL}, *h[] = {"-h", NULL};
    r = run(0, "", help);
    CHECK(r.rc == 0 && strstr(r.out, "usage: encore tokenize -m DIR"), "help: %s", r.out);
    result_free(&r);
    r = run(1, "", h);
    CHECK(r.rc == 0 && strstr(r.out, "usage: encore detokenize -m DIR"), "-h: %s", r.out);
    result_free(&r);
    const char *nodir[] = {"-m", "/nonexistent", NULL};
    r = run(0, "\"x\"\n", nodir);
    CHECK(r.rc == 1 && strstr(r.err, "/nonexistent: No such file or directory"),
          "missing model: %s", r.err);
    result_free(&r);
    return test_summary("tokenizer_cli");
}
