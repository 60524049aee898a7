/* cp_ranges.c - code point range sets: add, normalize, complement. */
#include <stdlib.h>

#include "grammar/cp_ranges.h"

int cp_ranges_add(cp_ranges *r, uint32_t lo, uint32_t hi)
{
    if (r->n == CP_RANGES_MAX) return -1;
    r->lo[r->n] = lo;
    r->hi[r->n] = hi;
    r->n++;
    return 0;
}

static int cp__cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* [lo, hi] into out[] without the surrogates D800-DFFF. */
static int cp__add_cut(uint32_t (*out)[2], int n, uint32_t lo, uint32_t hi)
{
    if (lo <= 0xDFFF && hi >= 0xD800) {
        if (lo < 0xD800) out[n][0] = lo, out[n][1] = 0xD7FF, n++;
        if (hi > 0xDFFF) out[n][0] = 0xE000, out[n][1] = hi, n++;
        return n;
    }
    out[n][0] = lo, out[n][1] = hi;
    return n + 1;
}

void cp_ranges_normalize(cp_ranges *r, int negate)
{
    uint32_t pairs[2 * CP_RANGES_MAX + 2][2];
    int n = 0;
    for (int i = 0; i < r->n; i++)
        n = cp__add_cut(pairs, n, r->lo[i], r->hi[i] > 0x10FFFF ? 0x10FFFF : r->hi[i]);
    qsort(pairs, (size_t)n, sizeof pairs[0], cp__cmp);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && pairs[i][0] <= pairs[m - 1][1] + 1) {
            if (pairs[i][1] > pairs[m - 1][1]) pairs[m - 1][1] = pairs[i][1];
        } else {
            pairs[m][0] = pairs[i][0], pairs[m][1] = pairs[i][1], m++;
        }
    }
    if (negate) {
        uint32_t comp[2 * CP_RANGES_MAX + 2][2];
        int k = 0;
        uint32_t next = 0;
        for (int i = 0; i <= m; i++) {
            uint32_t end = i < m ? pairs[i][0] : 0x110000;
            if (end > next) k = cp__add_cut(comp, k, next, end - 1);
            if (i < m) next = pairs[i][1] + 1;
        }
        for (int i = 0; i < k; i++)
            pairs[i][0] = comp[i][0], pairs[i][1] = comp[i][1];
        m = k;
    }
    r->n = 0;
    for (int i = 0; i < m && i < CP_RANGES_MAX; i++)
        r->lo[r->n] = pairs[i][0], r->hi[r->n] = pairs[i][1], r->n++;
}
