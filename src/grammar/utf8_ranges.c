/* utf8_ranges.c - code point ranges as UTF-8 byte-range sequences (the
 * splitting regex engines use: first at the encoding-length boundaries, then
 * where continuation bytes stop being full ranges). */
#include "grammar/utf8_ranges.h"

int utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

int utf8_ranges_split(uint32_t lo, uint32_t hi, int (*emit)(const utf8_seq *seq, void *ctx),
                      void *ctx)
{
    if (lo > hi) return 0;
    static const uint32_t len_max[3] = {0x7F, 0x7FF, 0xFFFF};
    for (int i = 0; i < 3; i++) {
        if (lo <= len_max[i] && len_max[i] < hi) {
            int r = utf8_ranges_split(lo, len_max[i], emit, ctx);
            return r ? r : utf8_ranges_split(len_max[i] + 1, hi, emit, ctx);
        }
    }
    for (int i = 1; i < 4; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                int r = utf8_ranges_split(lo, lo | m, emit, ctx);
                return r ? r : utf8_ranges_split((lo | m) + 1, hi, emit, ctx);
            }
            if ((hi & m) != m) {
                int r = utf8_ranges_split(lo, (hi & ~m) - 1, emit, ctx);
                return r ? r : utf8_ranges_split(hi & ~m, hi, emit, ctx);
            }
        }
    }
    utf8_seq s;
    uint8_t a[4], b[4];
    s.n = utf8_encode(lo, a);
    utf8_encode(hi, b);
    for (int i = 0; i < s.n; i++) {
        s.lo[i] = a[i];
        s.hi[i] = b[i];
    }
    return emit(&s, ctx);
}
