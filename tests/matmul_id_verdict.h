/* matmul_id_verdict.h - the verdict of one matmul_id case in the MoE kernel
 * tests (test_moe_ops, test_moe_quant_ops): the counts of rows that differ
 * from the token alone, values off the reference and nonzero rows of bad
 * ids, printed with the case's shape when any is nonzero, then CHECKed. */
#ifndef ENC_TESTS_MATMUL_ID_VERDICT_H
#define ENC_TESTS_MATMUL_ID_VERDICT_H

#include <stdint.h>
#include <stdio.h>

#include "base/dtype.h"
#include "check.h"

typedef struct matmul_id_shape {
    enc_dtype dt;
    int64_t T, k, K, N, E;
    int per_slot;
} matmul_id_shape;

static inline void matmul_id_verdict(matmul_id_shape s, int bad_bits, int bad_ref, int bad_zero)
{
    if (bad_bits || bad_ref || bad_zero)
        fprintf(stderr, "  matmul_id %s T=%lld k=%lld K=%lld N=%lld E=%lld slot=%d: %d %d %d\n",
                enc_dtype_name(s.dt), (long long)s.T, (long long)s.k, (long long)s.K,
                (long long)s.N, (long long)s.E, s.per_slot, bad_bits, bad_ref, bad_zero);
    CHECK(bad_bits == 0 && bad_ref == 0 && bad_zero == 0);
}

#endif
