// get_rows_q.comp - out[i, :] = table[ids[i] - row0, :] as f32 for a table
// in a GGUF block type (quant.glsl, constant 5), each value decoded from
// its block as base/quant.c does, for the ids in this dispatch's row window
// [row0, row0 + n_win); an id outside [0, n_rows) gives a zero row (in the
// window holding row 0). As get_rows.comp, one invocation per value.
// buf: 0 table, 1 ids, 2 out. p: 0 n, 1 dim, 2 bytes per table row,
// 3 n_rows, 4 row0, 5 n_win
#version 450
#include "common.glsl"
#define QW 0
#include "quant.glsl"
layout(local_size_x = 256) in;
void main()
{
    uint g = linear_id(256u), n = pc.p[0], dim = pc.p[1];
    if (g >= n * dim) return;
    uint i = g / dim, d = g % dim;
    int id = LDI(1, i);
    uint row0 = pc.p[4], n_win = pc.p[5];
    bool valid = id >= 0 && uint(id) < pc.p[3];
    if (!valid) {
        if (row0 == 0u) STF(2, g, 0.0);
        return;
    }
    if (uint(id) < row0 || uint(id) >= row0 + n_win) return;
    uint r = (uint(id) - row0) * pc.p[2], u = d / QU, j = (d % QU) / 4u;
    STF(2, g, q_values(r, u, j, q_head(r, u))[d % 4u]);
}
