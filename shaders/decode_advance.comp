// decode_advance.comp - multi-step decode bookkeeping, one invocation per
// row: a real row (seq_lens > 0) moves to the token just chosen (input id,
// position + 1, seq_len + 1, the slot of the new position from its block
// table, -1 past the table); out[i] = next[i], or -1 for a padding row.
// buf: 0 next, 1 input_ids, 2 positions, 3 seq_lens, 4 slot_mapping,
//      5 block_tables, 6 out. p: 0 rows, 1 max_blocks, 2 block_size
#version 450
#include "common.glsl"
layout(local_size_x = 64) in;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.p[0]) return;
    if (LDI(3, i) <= 0) {
        STI(6, i, -1);
        return;
    }
    int next = LDI(0, i), p = LDI(2, i) + 1, bs = int(pc.p[2]);
    int block = p / bs;
    STI(1, i, next);
    STI(2, i, p);
    STI(3, i, LDI(3, i) + 1);
    STI(4, i, block < int(pc.p[1]) ? LDI(5, i * pc.p[1] + uint(block)) * bs + p % bs : -1);
    STI(6, i, next);
}
