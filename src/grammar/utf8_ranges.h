/* utf8_ranges.h - a range of code points as UTF-8 byte-range sequences.
 *
 * [lo, hi] (no surrogates inside) becomes a few sequences of 1-4 byte ranges
 * such that a byte string is the UTF-8 encoding of a code point in [lo, hi]
 * exactly when it matches one sequence: [0x80, 0x7FF] is
 * [C2-DF][80-BF]. The grammar compiler turns character classes into these,
 * so that matching needs no UTF-8 decoding. */
#ifndef ENC_GRAMMAR_UTF8_RANGES_H
#define ENC_GRAMMAR_UTF8_RANGES_H

#include <stdint.h>

typedef struct utf8_seq {
    int n;         /* 1..4 bytes */
    uint8_t lo[4]; /* byte i is in [lo[i], hi[i]] */
    uint8_t hi[4];
} utf8_seq;

/* Calls emit(seq, ctx) for each sequence of [lo, hi]; returns the first
 * non-zero value emit returns, else 0. */
int utf8_ranges_split(uint32_t lo, uint32_t hi, int (*emit)(const utf8_seq *seq, void *ctx),
                      void *ctx);

/* Encodes cp (<= 0x10FFFF) into out; returns the length. */
int utf8_encode(uint32_t cp, uint8_t out[4]);

#endif
