#define _POSIX_C_SOURCE 200809L
/* sample_schemas.c - draws token sequences from the grammar masks of JSON
 * schemas over the real Qwen3 vocabulary, for validate_samples.py to check.
 *
 *   sample_schemas TOKENIZER_DIR SCHEMAS.json N SEED OUT.jsonl [FROM TO]
 *
 * For each schema of the array in SCHEMAS.json: N sequences, each token drawn
 * uniformly among the allowed ids; after a random length (8-47 tokens) the
 * draw prefers an end id when allowed, else the one-byte token '"', else
 * (half the time) ']' or '}', else any one-byte token, so that sequences
 * end. A
 * sequence still open after 400 tokens is written unfinished (a "length"
 * finish). FROM TO: replace every FROM in the schema's EBNF with TO (the
 * mutation test). Writes one line per sequence: {"schema", "sample",
 * "finished", "hex"} and prints the mean mask time per token. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json_exact.h"
#include "base/mapfile.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"
#include "vocab_sampler.h"

#define MAX_STEPS 400

static char *replace_all(const char *s, const char *from, const char *to)
{
    size_t n = 0, fl = strlen(from), tl = strlen(to);
    for (const char *p = strstr(s, from); p; p = strstr(p + fl, from))
        n++;
    char *out = malloc(strlen(s) + n * (tl > fl ? tl - fl : 0) + 1), *o = out;
    for (const char *p = s;;) {
        const char *q = strstr(p, from);
        if (!q) {
            strcpy(o, p);
            break;
        }
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, tl);
        o += tl;
        p = q + fl;
    }
    return out;
}

static void write_sample(FILE *out, int si, int k, int finished, const unsigned char *text,
                         size_t n)
{
    fprintf(out, "{\"schema\": %d, \"sample\": %d, \"finished\": %s, \"hex\": \"", si, k,
            finished ? "true" : "false");
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%02x", text[i]);
    fprintf(out, "\"}\n");
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 8) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR SCHEMAS.json N SEED OUT.jsonl [FROM TO]\n",
                argv[0]);
        return 2;
    }
    vs_vocab vi;
    memset(&vi, 0, sizeof vi);
    if (vs_load(argv[1], &vi)) return 1;
    char *file = NULL;
    size_t file_n = 0;
    if (file_read_all(argv[2], &file, &file_n) != ENC_OK) {
        fprintf(stderr, "%s\n", enc_last_error());
        return 1;
    }
    cJSON *schemas = cJSON_ParseWithLength(file, file_n);
    if (!cJSON_IsArray(schemas)) {
        fprintf(stderr, "%s: not a JSON array\n", argv[2]);
        return 1;
    }
    int n_samples = atoi(argv[3]);
    vs_rng = strtoull(argv[4], NULL, 10);
    FILE *out = fopen(argv[5], "w");
    uint32_t *mask = malloc(((size_t)vi.n_vocab + 31) / 32 * sizeof *mask);
    unsigned char *text = malloc(MAX_STEPS * 256 + 1);
    double mask_s = 0;
    long n_masks = 0;
    int si = 0, bad = 0;
    for (const cJSON *s = schemas->child; s; s = s->next, si++) {
        char *js = json_print_exact(s, NULL), *ebnf = NULL; /* cJSON's print rounds numbers */
        grammar *g = NULL;
        if (grammar_json_schema_to_ebnf(js, strlen(js), "", &ebnf) != ENC_OK) {
            fprintf(stderr, "schema %d: %s\n", si, enc_last_error());
            bad++;
            free(js);
            continue;
        }
        if (argc == 8) {
            char *m = replace_all(ebnf, argv[6], argv[7]);
            free(ebnf);
            ebnf = m;
        }
        if (grammar_compile(ebnf, strlen(ebnf), "root", &g) != ENC_OK) {
            fprintf(stderr, "schema %d: %s\n%s\n", si, enc_last_error(), ebnf);
            return 1;
        }
        for (int k = 0; k < n_samples; k++) {
            grammar_matcher *m = NULL;
            if (grammar_matcher_new(g, vi.v, vi.end_ids, vi.n_end, &m) != ENC_OK) return 1;
            size_t n = 0;
            int finished = 0, late_at = 8 + (int)vs_rnd(40);
            for (int step = 0; step < MAX_STEPS && !finished; step++) {
                double t0 = vs_now_s();
                if (grammar_matcher_fill_mask(m, mask) != ENC_OK) return 1;
                mask_s += vs_now_s() - t0, n_masks++;
                int32_t id = vs_pick(&vi, mask, step >= late_at);
                if (id < 0) {
                    fprintf(stderr, "schema %d sample %d: no token allowed after %zu bytes\n", si,
                            k, n);
                    bad++;
                    break;
                }
                if (!grammar_matcher_accept(m, id)) {
                    fprintf(stderr, "schema %d: the mask allowed %d but accept refused it\n", si,
                            id);
                    return 1;
                }
                if (vs_is_end(&vi, id))
                    finished = 1;
                else
                    memcpy(text + n, vi.bytes[id], vi.lens[id]), n += vi.lens[id];
            }
            write_sample(out, si, k, finished, text, n);
            grammar_matcher_free(m);
        }
        grammar_free(g);
        free(ebnf);
        free(js);
    }
    fclose(out);
    printf("%d schemas, %ld masks, %.1f us per mask\n", si, n_masks,
           n_masks ? mask_s / (double)n_masks * 1e6 : 0.0);
    free(mask);
    free(text);
    cJSON_Delete(schemas);
    free(file);
    for (int32_t i = 0; i < vi.n_vocab; i++)
        free((void *)vi.bytes[i]);
    free(vi.bytes);
    free(vi.lens);
    grammar_vocab_free(vi.v);
    return bad != 0;
}
