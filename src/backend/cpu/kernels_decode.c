/* kernels_decode.c - the device-side bookkeeping of multi-step decode: after
 * the argmax of a step, advance every row's inputs to the next token so that
 * the next step of the same recording runs without the host. */
#include "backend/cpu/kernels.h"

void cpu_decode_advance(const cpu_advance_args *a, int ith, int nth)
{
    (void)nth;
    if (ith != 0) return; /* a few dozen integers: one thread */
    for (int64_t i = 0; i < a->n_rows; i++) {
        if (a->seq_lens[i] <= 0) {
            a->out[i] = -1;
            continue;
        }
        int32_t p = a->positions[i] + 1;
        int64_t block = p / a->block_size;
        a->input_ids[i] = a->next[i];
        a->positions[i] = p;
        a->seq_lens[i] += 1;
        a->slot_mapping[i] = block < a->max_blocks
                                 ? a->block_tables[i * a->max_blocks + block] * (int32_t)a->block_size +
                                       (int32_t)(p % a->block_size)
                                 : -1;
        a->out[i] = a->next[i];
    }
}
