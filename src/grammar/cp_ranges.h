/* cp_ranges.h - sets of Unicode scalar values as sorted ranges (character
 * classes of the EBNF and regex compilers). */
#ifndef ENC_GRAMMAR_CP_RANGES_H
#define ENC_GRAMMAR_CP_RANGES_H

#include <stdint.h>

#define CP_RANGES_MAX 512

typedef struct cp_ranges {
    uint32_t lo[CP_RANGES_MAX], hi[CP_RANGES_MAX]; /* inclusive */
    int n;
} cp_ranges;

/* Appends [lo, hi]; -1 when full. */
int cp_ranges_add(cp_ranges *r, uint32_t lo, uint32_t hi);
/* Sorts and merges, removes the surrogates, complements when negate. */
void cp_ranges_normalize(cp_ranges *r, int negate);

#endif
