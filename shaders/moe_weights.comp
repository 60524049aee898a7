// moe_weights.comp - w[t, s] = the router score (softmax in f32, as
// moe_route.comp computes it) of expert ids[t, s], divided by the sum of the
// k weights (in slot order) when norm; a bad id weighs 0. One invocation
// per token.
// buf: 0 logits [T, E], 1 ids [T, k], 2 w [T, k]. p: 0 T, 1 E, 2 k, 3 router, 4 norm
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
    float total = 0.0;
    for (uint s = 0u; s < k; s++) {
        int e = LDI(1, t * k + s);
        float v = e >= 0 && uint(e) < E ? exp(LDF(0, row + uint(e)) - m) / sum : 0.0;
        STF(2, t * k + s, v);
        total += v;
    }
    if (pc.p[4] != 0u && total > 0.0)
        for (uint s = 0u; s < k; s++) STF(2, t * k + s, LDF(2, t * k + s) / total);
}
