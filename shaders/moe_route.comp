// moe_route.comp - ids[t, s] = the experts of the k largest router scores of
// token t (softmax of logits[t, :] in f32), best first, of equal scores the
// lower id first; one invocation per token. Each pass takes the best expert
// ranked after the previous pass's (score descending, id ascending), so no
// per-token array is needed. Scores are computed as on the CPU: the max,
// exp(l - max) summed in index order, one division each.
// buf: 0 logits [T, E], 1 ids [T, k]. p: 0 T, 1 E, 2 k, 3 router (0 softmax)
#version 450
#include "common.glsl"
layout(local_size_x = 64) in;
void main()
{
    uint t = linear_id(64u), E = pc.p[1], k = pc.p[2];
    if (t >= pc.p[0]) return;
    uint row = t * E;
    float m = LDF(0, row);
    for (uint e = 1u; e < E; e++) m = max(m, LDF(0, row + e));
    float sum = 0.0;
    for (uint e = 0u; e < E; e++) sum += exp(LDF(0, row + e) - m);
    float prev = uintBitsToFloat(0x7f800000u); // +inf: nothing taken yet
    int prev_e = -1;
    for (uint s = 0u; s < k; s++) {
        int best = -1;
        float best_v = 0.0;
        for (uint e = 0u; e < E; e++) {
            float v = exp(LDF(0, row + e) - m) / sum;
            bool after = v < prev || (v == prev && int(e) > prev_e);
            if (after && (best < 0 || v > best_v)) {
                best = int(e);
                best_v = v;
            }
        }
        STI(1, t * k + s, best);
        prev = best_v;
        prev_e = best;
    }
}
