// moe_group.glsl - the matmul_id grouping scratch (src/graph/graph.h
// GRAPH_MOE_GROUP_TILE), written by matmul_id.comp's grouping pass and read
// by the tile passes of matmul_id.comp and matmul_id_q.comp:
//
//   words [0, P)        the pair indices p = t * k + s in expert order
//   words P + 3 i ..    tile i: first position in the list above, expert,
//                       count (at most MG_TP pairs of one expert; 0 past
//                       the last tile)
//
// Both shaders take the push constants p[0] pairs, p[1] k, p[2] K,
// p[6] x_per_slot and the scratch at binding MG_BUF (4).
#define MG_BUF 4
#define MG_TP 4u

// The first word of pair p's activation row: x[t] (or x[p] when x_per_slot).
uint mg_xrow(uint p) { return (pc.p[6] != 0u ? p : p / pc.p[1]) * pc.p[2]; }

// Tile `tile`'s entry, written by one invocation.
void mg_put_tile(uint tile, uint first, uint e, uint count)
{
    uint b = pc.p[0] + 3u * tile;
    STI(MG_BUF, b, first);
    STI(MG_BUF, b + 1u, e);
    STI(MG_BUF, b + 2u, count);
}

// Tile `tile`: its expert e, its pair count (0: no tile), its pairs pr and
// their activation rows xr; slots past the count repeat the last pair (their
// results are to be dropped).
uint mg_tile(uint tile, out uint e, out uvec4 pr, out uvec4 xr)
{
    uint b = pc.p[0] + 3u * tile, count = uint(LDI(MG_BUF, b + 2u));
    uint first = uint(LDI(MG_BUF, b));
    e = uint(LDI(MG_BUF, b + 1u));
    [[unroll]] for (uint q = 0u; q < MG_TP; q++) {
        pr[q] = count == 0u ? 0u : uint(LDI(MG_BUF, first + min(q, count - 1u)));
        xr[q] = mg_xrow(pr[q]);
    }
    return count;
}
