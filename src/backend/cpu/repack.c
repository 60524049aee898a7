/* repack.c - converting block-quantized weight matrices between the row
 * layout of GGUF and the CPU backend's interleaved groups of 8 rows (the
 * layout is drawn in repack.h). One permutation of bytes per group, both
 * ways; nothing is rounded, so the round trip gives back every byte. */
#include "backend/cpu/repack.h"

#include <string.h>

#include "base/quant.h"

enum { CPU__RP_F16 = 2, CPU__RP_CHUNK = 4 }; /* bytes of an f16 field; of a chunk */

/* Where a block of one type keeps its f16 fields (nf of them, at off[]) and
 * the rest of its bytes ([rest, rest + nq)). */
typedef struct cpu__rp_kind {
    int nf, off[2], rest, nq;
} cpu__rp_kind;

/* The kind of dt; nq 0 for a type without an interleaved layout. */
static cpu__rp_kind cpu__rp_kind_of(enc_dtype dt)
{
    switch (dt) {
    case ENC_Q4_0:
    case ENC_IQ4_NL:
        return (cpu__rp_kind){1, {0, 0}, 2, 16};
    case ENC_Q5_0:
        return (cpu__rp_kind){1, {0, 0}, 2, 20};
    case ENC_Q4_1:
        return (cpu__rp_kind){2, {0, 2}, 4, 16};
    case ENC_Q5_1:
        return (cpu__rp_kind){2, {0, 2}, 4, 20};
    case ENC_Q8_0:
        return (cpu__rp_kind){1, {0, 0}, 2, 32};
    case ENC_Q4_K:
        return (cpu__rp_kind){2, {0, 2}, 4, 140};
    case ENC_Q5_K:
        return (cpu__rp_kind){2, {0, 2}, 4, 172};
    case ENC_Q6_K:
        return (cpu__rp_kind){1, {208, 0}, 0, 208};
    case ENC_Q2_K:
        return (cpu__rp_kind){2, {80, 82}, 0, 80};
    case ENC_Q3_K:
        return (cpu__rp_kind){1, {108, 0}, 0, 108};
    case ENC_IQ4_XS: /* d and scales_h as the two 16-bit planes */
        return (cpu__rp_kind){2, {0, 2}, 4, 132};
    default:
        return (cpu__rp_kind){0, {0, 0}, 0, 0};
    }
}

bool cpu_repack_supports(enc_dtype dt, int64_t rows, int64_t k)
{
    return cpu__rp_kind_of(dt).nq > 0 && k > 0 && k % enc_dtype_block_elems(dt) == 0 &&
           rows >= CPU_REPACK_ROWS;
}

size_t cpu_repack_tmp_bytes(enc_dtype dt, int64_t k)
{
    return CPU_REPACK_ROWS * enc_dtype_row_bytes(dt, k);
}

/* Offsets in one interleaved block of 8 rows: row r's field f, and row r's
 * rest byte j. */
static size_t cpu__rp_f_at(int f, int r)
{
    return (size_t)CPU__RP_F16 * (size_t)(CPU_REPACK_ROWS * f + r);
}
static size_t cpu__rp_q_at(const cpu__rp_kind *kd, int r, int j)
{
    return (size_t)CPU__RP_F16 * CPU_REPACK_ROWS * (size_t)kd->nf +
           (size_t)(j / CPU__RP_CHUNK) * CPU__RP_CHUNK * CPU_REPACK_ROWS +
           (size_t)r * CPU__RP_CHUNK + (size_t)(j % CPU__RP_CHUNK);
}

/* One block: row-layout block `row` (of row r) <-> its place in the
 * interleaved block `il`. */
static void cpu__rp_move(const cpu__rp_kind *kd, unsigned char *il, unsigned char *row, int r,
                         bool to_rows)
{
    for (int f = 0; f < kd->nf; f++) {
        unsigned char *a = il + cpu__rp_f_at(f, r), *b = row + kd->off[f];
        memcpy(to_rows ? b : a, to_rows ? a : b, CPU__RP_F16);
    }
    for (int j = 0; j < kd->nq; j += CPU__RP_CHUNK) {
        unsigned char *a = il + cpu__rp_q_at(kd, r, j), *b = row + kd->rest + j;
        memcpy(to_rows ? b : a, to_rows ? a : b, CPU__RP_CHUNK);
    }
}

void cpu_repack_block(const void *g, enc_dtype dt, int64_t b, int r, void *out)
{
    cpu__rp_kind kd = cpu__rp_kind_of(dt);
    size_t bb = enc_dtype_block_bytes(dt);
    cpu__rp_move(&kd, (unsigned char *)g + (size_t)b * CPU_REPACK_ROWS * bb, out, r, true);
}

void cpu_repack_row_block(const void *w, enc_dtype dt, int64_t rows, int64_t k, int64_t r,
                          int64_t b, void *out)
{
    size_t rb = enc_dtype_row_bytes(dt, k), bb = enc_dtype_block_bytes(dt);
    const unsigned char *p = w;
    if (r >= rows / CPU_REPACK_ROWS * CPU_REPACK_ROWS) { /* the tail: in rows */
        memcpy(out, p + (size_t)r * rb + (size_t)b * bb, bb);
        return;
    }
    int64_t g = r / CPU_REPACK_ROWS * CPU_REPACK_ROWS;
    cpu_repack_block(p + (size_t)g * rb, dt, b, (int)(r - g), out);
}

void cpu_repack_matrix(void *w, enc_dtype dt, int64_t rows, int64_t k, bool to_rows, void *tmp)
{
    cpu__rp_kind kd = cpu__rp_kind_of(dt);
    size_t bb = enc_dtype_block_bytes(dt), rb = enc_dtype_row_bytes(dt, k);
    int64_t nb = k / enc_dtype_block_elems(dt);
    unsigned char *t = tmp;
    for (int64_t g = 0; g + CPU_REPACK_ROWS <= rows; g += CPU_REPACK_ROWS) {
        unsigned char *gp = (unsigned char *)w + (size_t)g * rb; /* the group's 8 rows' bytes */
        memcpy(t, gp, CPU_REPACK_ROWS * rb);
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < CPU_REPACK_ROWS; r++) {
                unsigned char *il = (to_rows ? t : gp) + (size_t)b * CPU_REPACK_ROWS * bb;
                unsigned char *row = (to_rows ? gp : t) + (size_t)r * rb + (size_t)b * bb;
                cpu__rp_move(&kd, il, row, r, to_rows);
            }
    }
}
