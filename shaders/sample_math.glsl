// sample_math.glsl - the sampler's arithmetic for shaders, the same bits as
// src/base/sample_math.h and src/base/philox.h compute on the host: an exp
// and a log of correctly rounded double adds, multiplies and one divide,
// every one `precise` (no fused multiply-add), the exponent bin of a weight,
// and Philox4x32-10 from 32-bit integer multiplies (umulExtended). Doubles
// travel through buffers as two words, low first (packDouble2x32).

#define SM_BINS 64
#define SM_CHUNK 256u
#define SM_LN2_HI 6.93147180369123816490e-01lf
#define SM_LN2_LO 1.90821492927058770002e-10lf
#define SM_LOG2E 1.44269504088896338700e+00lf
#define SM_ROUNDER 6755399441055744.0lf // 1.5 * 2^52
#define SM_EXP_MIN (-708.0lf)

// e^x for x <= 0; 0 below SM_EXP_MIN (and for NaN, -inf).
double sm_exp(double x)
{
    precise double t = x * SM_LOG2E + SM_ROUNDER;
    precise double k = t - SM_ROUNDER;
    precise double r = x - k * SM_LN2_HI;
    r = r - k * SM_LN2_LO;
    precise double p = 2.08767569878681e-09lf;
    p = p * r + 2.505210838544172e-08lf;
    p = p * r + 2.755731922398589e-07lf;
    p = p * r + 2.7557319223985893e-06lf;
    p = p * r + 2.48015873015873e-05lf;
    p = p * r + 0.0001984126984126984lf;
    p = p * r + 0.001388888888888889lf;
    p = p * r + 0.008333333333333333lf;
    p = p * r + 0.041666666666666664lf;
    p = p * r + 0.16666666666666666lf;
    p = p * r + 0.5lf;
    p = p * r + 1.0lf;
    p = p * r + 1.0lf;
    precise double res = 0.0lf;
    if (x >= SM_EXP_MIN) { // k in [-1022, 1023]: 2^k from its exponent bits
        uint e = uint(int(k) + 1023) & 0x7ffu;
        res = p * packDouble2x32(uvec2(0u, e << 20u));
    }
    return res;
}

// log(x) for a positive normal finite x.
double sm_log(double x)
{
    uvec2 u = unpackDouble2x32(x);
    int e = int(u.y >> 20u) - 1023;
    precise double m = packDouble2x32(uvec2(u.x, (u.y & 0x000FFFFFu) | 0x3FF00000u));
    if (m > 1.4142135623730951lf) {
        m = m * 0.5lf;
        e++;
    }
    precise double f = m - 1.0lf;
    precise double s = f / (2.0lf + f);
    precise double z = s * s;
    precise double q = 0.047619047619047616lf;
    q = q * z + 0.05263157894736842lf;
    q = q * z + 0.058823529411764705lf;
    q = q * z + 0.06666666666666667lf;
    q = q * z + 0.07692307692307693lf;
    q = q * z + 0.09090909090909091lf;
    q = q * z + 0.1111111111111111lf;
    q = q * z + 0.14285714285714285lf;
    q = q * z + 0.2lf;
    q = q * z + 0.3333333333333333lf;
    precise double hs = 2.0lf * s;
    precise double ed = double(e);
    precise double lm = hs + hs * (q * z);
    precise double res = (ed * SM_LN2_HI + lm) + ed * SM_LN2_LO;
    return res;
}

// The bin of a weight in (0, 1]: 0 for 1, b for [2^-b, 2^-b+1), 63 below.
int sm_bin(double w)
{
    int b = 1023 - int(unpackDouble2x32(w).y >> 20u);
    return b < SM_BINS - 1 ? b : SM_BINS - 1;
}

// Philox4x32-10 of counter c under key k.
uvec4 philox4x32_10(uvec4 c, uvec2 k)
{
    for (int r = 0; r < 10; r++) {
        if (r > 0) k += uvec2(0x9E3779B9u, 0xBB67AE85u);
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

// The uniform in [0, 1) of the token at position pos of the request seeded
// with seed (low word, high word): 27 + 26 bits of the first two words.
double philox_uniform(uvec2 seed, int pos)
{
    uvec4 o = philox4x32_10(uvec4(uint(pos), pos < 0 ? 0xffffffffu : 0u, 0u, 0u), seed);
    precise double u = (double(o.x >> 5u) * 67108864.0lf + double(o.y >> 6u)) * 1.1102230246251565e-16lf;
    return u;
}
