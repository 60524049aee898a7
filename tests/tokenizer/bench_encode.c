/* bench_encode.c - how fast tokenizer_encode is on 1 MB of English text.
 *
 *   tokenizer_bench TOKENIZER_DIR [TEXT_FILE]
 *
 * A benchmark, not a test: it prints timings and checks nothing. The text is
 * the first 1 MiB of TEXT_FILE (cut at a character boundary, repeated if
 * shorter), or without one, 1 MiB of synthetic English made from a word list
 * with a fixed seed. Each of 3 runs loads a fresh tokenizer (so the piece
 * cache starts cold) and times one encode; then 3 more encodes reuse the warm
 * cache. Medians are reported. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mapfile.h"
#include "tokenizer/tokenizer.h"

enum { BENCH_BYTES = 1 << 20, BENCH_RUNS = 3 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Synthetic English: words of a small list, Zipf-like, with punctuation. */
static char *synth_text(size_t n)
{
    static const char *const words[] = {
        "the", "of", "and", "to", "a", "in", "is", "it", "that", "was", "for", "on",
        "with", "as", "he", "she", "they", "be", "at", "by", "this", "had", "not",
        "are", "but", "from", "or", "have", "an", "which", "one", "you", "were",
        "all", "we", "when", "there", "can", "would", "their", "what", "said",
        "about", "many", "time", "people", "language", "model", "token", "engine",
        "inference", "memory", "attention", "sequence", "between", "through",
        "however", "important", "government", "development", "understanding",
        "it's", "don't", "I'm", "they've", "we'll", "1984", "42", "3.14", "London",
        "Tuesday", "Mr.", "Dr.", "e.g.", "(see", "below)", "\"quoted\"", "well-known",
    };
    size_t n_words = sizeof words / sizeof *words;
    char *s = malloc(n + 64);
    size_t len = 0;
    unsigned long long r = 88172645463325252ull;
    while (len < n) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t w = (size_t)((r % 1000) * (r % 1000) / 1000000.0 * (double)n_words);
        len += (size_t)snprintf(s + len, 64, "%s", words[w]);
        const char *sep = r % 17 == 0 ? ". " : r % 23 == 0 ? ", " : r % 101 == 0 ? ".\n\n" : " ";
        len += (size_t)snprintf(s + len, 64, "%s", sep);
    }
    s[n] = '\0';
    return s;
}

/* n bytes of path, repeated if shorter, cut back to a character boundary. */
static char *file_text(const char *path, size_t *n)
{
    char *data;
    size_t size;
    if (file_read_all(path, &data, &size) != ENC_OK || size == 0) {
        fprintf(stderr, "%s\n", size ? enc_last_error() : "empty file");
        exit(1);
    }
    char *s = malloc(*n + 1);
    for (size_t i = 0; i < *n; i++) s[i] = data[i % size];
    while (*n > 0 && ((unsigned char)s[*n] & 0xC0) == 0x80) --*n;
    s[*n] = '\0';
    free(data);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR [TEXT_FILE]\n", argv[0]);
        return 2;
    }
    size_t n = BENCH_BYTES;
    char *text = argc == 3 ? file_text(argv[2], &n) : synth_text(n);
    double cold[BENCH_RUNS], warm[BENCH_RUNS];
    size_t n_ids = 0;
    for (int r = 0; r < BENCH_RUNS; r++) {
        tokenizer *t;
        if (tokenizer_load(argv[1], &t) != ENC_OK) {
            fprintf(stderr, "%s\n", enc_last_error());
            return 1;
        }
        int32_t *ids;
        double t0 = now();
        if (tokenizer_encode(t, text, n, &ids, &n_ids) != ENC_OK) {
            fprintf(stderr, "%s\n", enc_last_error());
            return 1;
        }
        cold[r] = now() - t0;
        free(ids);
        t0 = now();
        if (tokenizer_encode(t, text, n, &ids, &n_ids) != ENC_OK) return 1;
        warm[r] = now() - t0;
        free(ids);
        tokenizer_free(t);
    }
    qsort(cold, BENCH_RUNS, sizeof *cold, cmp_double);
    qsort(warm, BENCH_RUNS, sizeof *warm, cmp_double);
    printf("text: %s, %zu bytes, %zu tokens\n", argc == 3 ? argv[2] : "synthetic English", n, n_ids);
    printf("encode, cold cache: median %.1f ms (%.1f MB/s) of %d runs\n", cold[1] * 1e3,
           (double)n / cold[1] / 1e6, BENCH_RUNS);
    printf("encode, warm cache: median %.1f ms (%.1f MB/s) of %d runs\n", warm[1] * 1e3,
           (double)n / warm[1] / 1e6, BENCH_RUNS);
    free(text);
    return 0;
}
