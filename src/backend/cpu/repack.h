/* repack.h - the CPU backend's interleaved layout of block-quantized weight
 * matrices, made once at load (cpu_repack_matrix) and read by the matmul's
 * interleaved kernels (cpu_matmul_packed; kernels_quant_impl.h).
 *
 * Rows go in groups of CPU_REPACK_ROWS = 8. A group takes the bytes its 8
 * rows took in the row layout, so a matrix keeps its size and the rows past
 * the last whole group (rows % 8, the tail) stay where they were, in the
 * row layout. Within a group, block b of the 8 rows (Q4_0 / Q8_0: an f16
 * scale d and qs bytes, nq = 16 or 32 of them) is stored as
 *
 *   d[row 0] ... d[row 7]                      8 x f16  (16 bytes)
 *   chunk c = 0 .. nq/4 - 1:                   32 bytes each
 *       qs[4c .. 4c+3] of row 0, of row 1, ..., of row 7
 *
 * so that one 256-bit load of a chunk holds the same 4 consecutive qs bytes
 * of 8 rows: against a token's 4 bytes broadcast, the u8 x s8 dot of each
 * 4-byte group lands row r's partial sum in int32 lane r, with no sum across
 * lanes. */
#ifndef ENC_CPU_REPACK_H
#define ENC_CPU_REPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"

enum { CPU_REPACK_ROWS = 8 };

/* Whether a [rows, k] matrix of dtype has an interleaved layout: Q4_0 and
 * Q8_0, k a whole number of blocks, at least one group of rows. */
bool cpu_repack_supports(enc_dtype dt, int64_t rows, int64_t k);

/* In place, w [rows, k] of dtype: row layout -> interleaved (to_rows false)
 * or back (true). tmp holds CPU_REPACK_ROWS rows (cpu_repack_tmp_bytes).
 * Only for a matrix cpu_repack_supports. */
void cpu_repack_matrix(void *w, enc_dtype dt, int64_t rows, int64_t k, bool to_rows, void *tmp);
size_t cpu_repack_tmp_bytes(enc_dtype dt, int64_t k);

/* Block b of row r (< 8) of the group g (interleaved bytes), written in the
 * row layout to out (one block of dtype). */
void cpu_repack_block(const void *g, enc_dtype dt, int64_t b, int r, void *out);

#endif
