/* cmd_tokenize.c - `encore tokenize` and `encore detokenize`: the tokenizer
 * as a line filter.
 *
 *   encore tokenize -m DIR     stdin: one JSON string a line
 *                              stdout: one JSON array of ids a line
 *   encore detokenize -m DIR   stdin: one JSON array of ids a line
 *                              stdout: one JSON string a line
 *
 * Exit status: 0 when every line was converted, 1 at the first bad line (the
 * message names it) or when the model cannot be loaded, 2 for bad arguments. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/encore_tools.h"
#include "commands.h"

typedef struct tokcmd__args {
    const char *model_dir;
    int skip_special;
} tokcmd__args;

static void tokcmd__usage(const char *name, FILE *f)
{
    int detok = strcmp(name, "detokenize") == 0;
    fprintf(f, "usage: encore %s -m DIR%s\n\n", name, detok ? " [--skip-special-tokens]" : "");
    if (detok)
        fprintf(f, "Reads lines from stdin, each a JSON array of token ids, and prints for\n"
                   "each the decoded text as a JSON string on one line.\n\n");
    else
        fprintf(f, "Reads lines from stdin, each a JSON string, and prints for each the\n"
                   "JSON array of its token ids on one line. Added and special tokens\n"
                   "written in the text (\"<|im_end|>\") become their ids.\n\n");
    fprintf(f, "  -m, --model DIR|FILE.gguf  model directory with tokenizer.json (and\n"
               "                           tokenizer_config.json), or a GGUF file\n");
    if (detok)
        fprintf(f, "  --skip-special-tokens    leave special tokens out of the text\n");
    fprintf(f, "  -h, --help               show this help\n");
}

/* Returns -1 to go on, else the exit status (0 after --help, 2 on an error). */
static int tokcmd__parse(int argc, char **argv, tokcmd__args *a)
{
    const char *name = argv[0];
    int detok = strcmp(name, "detokenize") == 0;
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            tokcmd__usage(name, stdout);
            return 0;
        } else if (strcmp(arg, "-m") == 0 || strcmp(arg, "--model") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "encore %s: %s needs a directory\n", name, arg);
                return 2;
            }
            a->model_dir = argv[++i];
        } else if (detok && strcmp(arg, "--skip-special-tokens") == 0) {
            a->skip_special = 1;
        } else {
            fprintf(stderr, "encore %s: unknown argument '%s' (try --help)\n", name, arg);
            return 2;
        }
    }
    if (!a->model_dir) {
        fprintf(stderr, "encore %s: -m DIR is required (try --help)\n", name);
        return 2;
    }
    return -1;
}

/* --- the two conversions: one line in, one line out ------------------------------ */

static enc_status tokcmd__tokenize_line(tokenizer *t, const char *line, size_t len)
{
    char *text;
    size_t n_text;
    ENC_TRY(tokenizer_json_unquote(line, len, &text, &n_text));
    int32_t *ids;
    size_t n;
    enc_status s = tokenizer_encode(t, text, n_text, &ids, &n);
    free(text);
    if (s != ENC_OK) return s;
    putchar('[');
    for (size_t i = 0; i < n; i++) printf(i ? ",%d" : "%d", ids[i]);
    fputs("]\n", stdout);
    free(ids);
    return ENC_OK;
}

static enc_status tokcmd__parse_ids(const char *line, size_t len, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    cJSON *j = json_parse_whole(line, len, NULL);
    if (!cJSON_IsArray(j)) {
        cJSON_Delete(j);
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "expected a JSON array of token ids (alone)");
    }
    size_t cap = (size_t)cJSON_GetArraySize(j);
    *ids = malloc((cap ? cap : 1) * sizeof **ids);
    if (!*ids) {
        cJSON_Delete(j);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%zu ids", cap);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, j) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : 0.5;
        if (!(v >= INT32_MIN && v <= INT32_MAX) || v != (double)(int32_t)v) {
            cJSON_Delete(j);
            free(*ids);
            *ids = NULL;
            return enc_fail(ENC_ERR_INVALID_ARGUMENT, "element %zu is not an integer id", *n);
        }
        (*ids)[(*n)++] = (int32_t)v;
    }
    cJSON_Delete(j);
    return ENC_OK;
}

static enc_status tokcmd__detokenize_line(const tokenizer *t, int skip_special,
                                          const char *line, size_t len)
{
    int32_t *ids;
    size_t n;
    ENC_TRY(tokcmd__parse_ids(line, len, &ids, &n));
    char *text = NULL, *quoted = NULL;
    size_t n_text;
    enc_status s = tokenizer_decode_bytes(t, ids, n, skip_special, &text, &n_text);
    if (s == ENC_OK) s = tokenizer_json_quote(text, n_text, &quoted);
    if (s == ENC_OK) printf("%s\n", quoted);
    free(ids);
    free(text);
    free(quoted);
    return s;
}

/* --- the loop ---------------------------------------------------------------------------- */

static int tokcmd__run(int argc, char **argv, int detok)
{
    tokcmd__args a;
    int rc = tokcmd__parse(argc, argv, &a);
    if (rc >= 0) return rc;
    tokenizer *t;
    if (model_tokenizer_load(a.model_dir, 0, &t) != ENC_OK) {
        fprintf(stderr, "encore %s: %s\n", argv[0], enc_last_error());
        return 1;
    }
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t len;
    rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, stdin)) >= 0) {
        line_no++;
        enc_status s = detok ? tokcmd__detokenize_line(t, a.skip_special, line, (size_t)len)
                             : tokcmd__tokenize_line(t, line, (size_t)len);
        if (s != ENC_OK) {
            fflush(stdout);
            fprintf(stderr, "encore %s: stdin line %zu: %s\n", argv[0], line_no, enc_last_error());
            rc = 1;
        }
    }
    if (rc == 0 && ferror(stdin)) {
        fprintf(stderr, "encore %s: error reading stdin\n", argv[0]);
        rc = 1;
    }
    free(line);
    tokenizer_free(t);
    return rc;
}

int cmd_tokenize(int argc, char **argv) { return tokcmd__run(argc, argv, 0); }

int cmd_detokenize(int argc, char **argv) { return tokcmd__run(argc, argv, 1); }
