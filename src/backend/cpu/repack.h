/* repack.h - the CPU backend's interleaved layout of block-quantized weight
 * matrices, made once at load (cpu_repack_matrix) and read by the matmul's
 * interleaved kernels (cpu_matmul_packed; kernels_repack_impl.h,
 * kernels_repack_k_impl.h) and by get_rows (cpu_repack_row_block).
 *
 * Rows go in groups of CPU_REPACK_ROWS = 8. A group takes the bytes its 8
 * rows took in the row layout, so a matrix keeps its size and the rows past
 * the last whole group (rows % 8, the tail) stay where they were, in the
 * row layout. Within a group, block b of the 8 rows is stored as its f16
 * fields (and IQ4_XS's 16-bit scales_h), one plane of 8 per field, then
 * the rest of the block's bytes (in their row-layout order) as 4-byte
 * chunks of the 8 rows side by side:
 *
 *   field f = 0 .. nf - 1:                     16 bytes each
 *       field f of row 0, of row 1, ..., of row 7      (8 x 16 bits)
 *   chunk c = 0 .. nq/4 - 1:                   32 bytes each
 *       rest[4c .. 4c+3] of row 0, of row 1, ..., of row 7
 *
 *   type   block  fields (nf)    rest (nq bytes)
 *   Q4_0   18     d              qs[16]
 *   IQ4_NL 18     d              qs[16]
 *   Q5_0   22     d              qh[4] qs[16]           (chunks 0, 1-4)
 *   Q4_1   20     d, m           qs[16]
 *   Q5_1   24     d, m           qh[4] qs[16]           (chunks 0, 1-4)
 *   Q8_0   34     d              qs[32]
 *   Q4_K   144    d, dmin        scales[12] qs[128]     (chunks 0-2, 3-34)
 *   Q5_K   176    d, dmin        scales[12] qh[32] qs[128]
 *                                                       (chunks 0-2, 3-10, 11-42)
 *   Q6_K   210    d (at 208)     ql[128] qh[64] scales[16]
 *                                                       (chunks 0-31, 32-47, 48-51)
 *   IQ4_XS 136    d, scales_h    scales_l[4] qs[128]    (chunks 0, 1-32)
 *   Q2_K   84     d, dmin (at 80) scales[16] qs[64]     (chunks 0-3, 4-19)
 *   Q3_K   110    d (at 108)     hmask[32] qs[64] scales[12]
 *                                                       (chunks 0-7, 8-23, 24-26)
 *
 * so that one 256-bit load of a chunk holds the same 4 consecutive bytes of
 * 8 rows: against a token's 4 bytes broadcast, the u8 x s8 dot of each
 * 4-byte group lands row r's partial sum in int32 lane r, with no sum across
 * lanes. Q4_K's and Q5_K's packed 6-bit scales stay packed (3 chunks:
 * byte j of row r's 12 in lane r of chunk j / 4), unpacked by the kernel
 * for 8 rows at once. */
#ifndef ENC_CPU_REPACK_H
#define ENC_CPU_REPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"

enum { CPU_REPACK_ROWS = 8 };

/* Whether a [rows, k] matrix of dtype has an interleaved layout: Q4_0,
 * Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS, k a whole number of
 * blocks, at least one group of rows. */
bool cpu_repack_supports(enc_dtype dt, int64_t rows, int64_t k);

/* In place, w [rows, k] of dtype: row layout -> interleaved (to_rows false)
 * or back (true). tmp holds CPU_REPACK_ROWS rows (cpu_repack_tmp_bytes).
 * Only for a matrix cpu_repack_supports. */
void cpu_repack_matrix(void *w, enc_dtype dt, int64_t rows, int64_t k, bool to_rows, void *tmp);
size_t cpu_repack_tmp_bytes(enc_dtype dt, int64_t k);

/* Block b of row r (< 8) of the group g (interleaved bytes), written in the
 * row layout to out (one block of dtype). */
void cpu_repack_block(const void *g, enc_dtype dt, int64_t b, int r, void *out);

/* Block b of row r of a whole interleaved matrix w [rows, k] (a group's
 * row or a tail row), written in the row layout to out. */
void cpu_repack_row_block(const void *w, enc_dtype dt, int64_t rows, int64_t k, int64_t r,
                          int64_t b, void *out);

#endif
