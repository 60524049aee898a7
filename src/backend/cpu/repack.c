/* repack.c - converting block-quantized weight matrices between the row
 * layout of GGUF and the CPU backend's interleaved groups of 8 rows (the
 * layout is drawn in repack.h). One permutation of bytes per group, both
 * ways; nothing is rounded, so the round trip gives back every byte. */
#include "backend/cpu/repack.h"

#include <string.h>

#include "base/quant.h"

enum { CPU__RP_D = 2, CPU__RP_CHUNK = 4 }; /* bytes of a block's f16 scale; of a qs chunk */

/* The qs bytes of one block of dt (Q4_0: 16, Q8_0: 32); 0 for any other type. */
static int cpu__rp_qs(enc_dtype dt)
{
    return dt == ENC_Q4_0 ? 16 : dt == ENC_Q8_0 ? 32 : 0;
}

bool cpu_repack_supports(enc_dtype dt, int64_t rows, int64_t k)
{
    return cpu__rp_qs(dt) > 0 && k > 0 && k % enc_dtype_block_elems(dt) == 0 &&
           rows >= CPU_REPACK_ROWS;
}

size_t cpu_repack_tmp_bytes(enc_dtype dt, int64_t k)
{
    return CPU_REPACK_ROWS * enc_dtype_row_bytes(dt, k);
}

/* Offsets in one interleaved block of 8 rows: row r's scale, and row r's
 * qs byte j. */
static size_t cpu__rp_d_at(int r)
{
    return (size_t)CPU__RP_D * (size_t)r;
}
static size_t cpu__rp_q_at(int r, int j)
{
    return CPU__RP_D * CPU_REPACK_ROWS +
           (size_t)(j / CPU__RP_CHUNK) * CPU__RP_CHUNK * CPU_REPACK_ROWS +
           (size_t)r * CPU__RP_CHUNK + (size_t)(j % CPU__RP_CHUNK);
}

/* One block: row-layout block `row` (of row r) <-> its place in the
 * interleaved block `il`. */
static void cpu__rp_move(unsigned char *il, unsigned char *row, int r, int nq, bool to_rows)
{
    if (to_rows) {
        memcpy(row, il + cpu__rp_d_at(r), CPU__RP_D);
        for (int j = 0; j < nq; j += CPU__RP_CHUNK)
            memcpy(row + CPU__RP_D + j, il + cpu__rp_q_at(r, j), CPU__RP_CHUNK);
        return;
    }
    memcpy(il + cpu__rp_d_at(r), row, CPU__RP_D);
    for (int j = 0; j < nq; j += CPU__RP_CHUNK)
        memcpy(il + cpu__rp_q_at(r, j), row + CPU__RP_D + j, CPU__RP_CHUNK);
}

void cpu_repack_block(const void *g, enc_dtype dt, int64_t b, int r, void *out)
{
    int nq = cpu__rp_qs(dt);
    size_t bb = (size_t)(CPU__RP_D + nq);
    cpu__rp_move((unsigned char *)g + (size_t)b * CPU_REPACK_ROWS * bb, out, r, nq, true);
}

void cpu_repack_matrix(void *w, enc_dtype dt, int64_t rows, int64_t k, bool to_rows, void *tmp)
{
    int nq = cpu__rp_qs(dt);
    size_t bb = (size_t)(CPU__RP_D + nq), rb = enc_dtype_row_bytes(dt, k);
    int64_t nb = k / enc_dtype_block_elems(dt);
    unsigned char *t = tmp;
    for (int64_t g = 0; g + CPU_REPACK_ROWS <= rows; g += CPU_REPACK_ROWS) {
        unsigned char *gp = (unsigned char *)w + (size_t)g * rb; /* the group's 8 rows' bytes */
        memcpy(t, gp, CPU_REPACK_ROWS * rb);
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < CPU_REPACK_ROWS; r++) {
                unsigned char *il = (to_rows ? t : gp) + (size_t)b * CPU_REPACK_ROWS * bb;
                unsigned char *row = (to_rows ? gp : t) + (size_t)r * rb + (size_t)b * bb;
                cpu__rp_move(il, row, r, nq, to_rows);
            }
    }
}
