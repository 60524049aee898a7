/* sample_math_lanes.h - smath_weights (base/sample_math.h) over SIMD lanes,
 * written once for every vector width: each lane does the portable loop's
 * correctly rounded adds, multiplies and selects in the same order, so the
 * bits are the same (no fused multiply-add: CMake compiles with
 * -ffp-contract=off, and the macros below are plain multiplies and adds).
 *
 * The including file (sample_math_avx2.c, sample_math_avx512.c) defines:
 *
 *   SM_VEC, SM_IVEC, SM_LANES     the double and 64-bit integer vectors
 *   SM_SET1(c), SM_ISET1(c)       c in every lane
 *   SM_ADD, SM_SUB, SM_MUL        lane by lane, rounded once each
 *   SM_IADD, SM_ISUB, SM_SHL52    64-bit integer lanes; shift left by 52
 *   SM_AS_INT(v), SM_AS_VEC(i)    the same bits as the other type
 *   SM_LOAD(x)                    SM_LANES floats from x, widened
 *   SM_STORE(w, v)                SM_LANES doubles to w
 *   SM_KEEP_GE(v, a, c)           v where a >= c, else 0 (ordered compare)
 *   SM_DROP_LT(v, c)              0 where v < c, else v (ordered compare)
 *   SM_IRAMP(lo)                  lo + the lane's index in each lane
 *   SM_ADD_IF_EQ(acc, i, j, v)    acc + v in the lanes where i == j, acc
 *                                 itself (its bits) in the others
 *   SM_COUNT_IF_EQ(n, i, j)       n + 1 in the lanes where i == j
 *   SM_ISTORE(p, i)               SM_LANES 64-bit integers to p
 *   SM_LOADD(p)                   SM_LANES doubles from p
 *   SM_BIN(v)                     smath_bin of each lane's weight, or
 *                                 SMATH_BINS where it is not above 0
 *   SM_STORE_BYTES(p, i)          the low byte of each 64-bit lane to p
 *   SM_IOR(a, b), SM_SHLV1(i)     or; 1 << i in each lane (0 for i >= 64)
 *   SM_WINDOW                     the bins a chunk's parts may span to be
 *                                 summed in lanes (a multiple of SM_LANES:
 *                                 as many vectors as stay in registers)
 *   SM_WEIGHTS, SM_CHUNK_ALL      the names of the functions to define */

/* smath_exp of SM_LANES lanes (a is already (x - max) * inv_t). */
static inline SM_VEC smath__exp_lanes(SM_VEC a)
{
    const SM_VEC rounder = SM_SET1(SMATH_ROUNDER);
    SM_VEC t = SM_ADD(SM_MUL(a, SM_SET1(SMATH_LOG2E)), rounder);
    SM_VEC k = SM_SUB(t, rounder);
    SM_VEC r = SM_SUB(a, SM_MUL(k, SM_SET1(SMATH_LN2_HI)));
    r = SM_SUB(r, SM_MUL(k, SM_SET1(SMATH_LN2_LO)));
#define SMATH__STEP(c) p = SM_ADD(SM_MUL(p, r), SM_SET1(c)) /* written out: no loop in the chain */
    SM_VEC p = SM_SET1(SMATH_EXP_C12);
    SMATH__STEP(SMATH_EXP_C11);
    SMATH__STEP(SMATH_EXP_C10);
    SMATH__STEP(SMATH_EXP_C9);
    SMATH__STEP(SMATH_EXP_C8);
    SMATH__STEP(SMATH_EXP_C7);
    SMATH__STEP(SMATH_EXP_C6);
    SMATH__STEP(SMATH_EXP_C5);
    SMATH__STEP(SMATH_EXP_C4);
    SMATH__STEP(SMATH_EXP_C3);
    SMATH__STEP(SMATH_EXP_C2);
    SMATH__STEP(1.0);
    SMATH__STEP(1.0);
#undef SMATH__STEP
    /* k sits in the low bits of t: 2^k = (k + 1023) << 52 */
    SM_IVEC kb = SM_ISUB(SM_AS_INT(t), SM_AS_INT(rounder));
    SM_VEC scale = SM_AS_VEC(SM_SHL52(SM_IADD(kb, SM_ISET1(1023))));
    return SM_KEEP_GE(SM_MUL(p, scale), a, SM_SET1(SMATH_EXP_MIN));
}

/* The weights of x[0 .. SM_LANES) into w. */
static inline void smath__weights_lanes(const float *x, SM_VEC vmax, SM_VEC vinv, SM_VEC vmin_p,
                                        double *w)
{
    SM_VEC e = smath__exp_lanes(SM_MUL(SM_SUB(SM_LOAD(x), vmax), vinv));
    SM_STORE(w, SM_DROP_LT(e, vmin_p));
}

void SM_WEIGHTS(const float *x, int64_t n, double max, double inv_t, double min_p, double *w)
{
    const SM_VEC vmax = SM_SET1(max), vinv = SM_SET1(inv_t), vmin_p = SM_SET1(min_p);
    int64_t i = 0;
    for (; i + 4 * SM_LANES <= n; i += 4 * SM_LANES) { /* four independent chains at once */
        smath__weights_lanes(x + i, vmax, vinv, vmin_p, w + i);
        smath__weights_lanes(x + i + SM_LANES, vmax, vinv, vmin_p, w + i + SM_LANES);
        smath__weights_lanes(x + i + 2 * SM_LANES, vmax, vinv, vmin_p, w + i + 2 * SM_LANES);
        smath__weights_lanes(x + i + 3 * SM_LANES, vmax, vinv, vmin_p, w + i + 3 * SM_LANES);
    }
    for (; i + SM_LANES <= n; i += SM_LANES)
        smath__weights_lanes(x + i, vmax, vinv, vmin_p, w + i);
    smath_weights(x + i, n - i, max, inv_t, min_p, w + i);
}

enum { SM__WINDOW = SM_WINDOW, SM__VECS = SM__WINDOW / SM_LANES };

/* The parts and counts of bins lo .. lo + SM__WINDOW - 1 of chunk [c0, c1),
 * whose bins are all there: lane l of vector k is bin lo + k SM_LANES + l,
 * and each id adds its weight to its bin's lane alone, in id order. */
static inline void smath__window_sums(const double *w, int64_t c0, int64_t c1, int lo,
                                      smath_chunk *out)
{
    SM_VEC acc[SM__VECS];
    SM_IVEC n[SM__VECS], lane[SM__VECS];
    for (int k = 0; k < SM__VECS; k++) {
        acc[k] = SM_SET1(0.0);
        n[k] = SM_ISET1(0);
        lane[k] = SM_IRAMP(lo + k * SM_LANES);
    }
    for (int64_t j = 0; j < c1 - c0; j++) {
        SM_IVEC b = SM_ISET1(out->bin[j]);
        SM_VEC v = SM_SET1(w[c0 + j]);
        for (int k = 0; k < SM__VECS; k++) {
            acc[k] = SM_ADD_IF_EQ(acc[k], b, lane[k], v);
            n[k] = SM_COUNT_IF_EQ(n[k], b, lane[k]);
        }
    }
    double part[SM__WINDOW];
    int64_t count[SM__WINDOW];
    for (int k = 0; k < SM__VECS; k++) {
        SM_STORE(part + k * SM_LANES, acc[k]);
        SM_ISTORE(count + k * SM_LANES, n[k]);
    }
    uint64_t seen = 0;
    for (int t = 0; t < SM__WINDOW && lo + t < SMATH_BINS; t++) {
        if (!count[t]) continue;
        seen |= 1ull << (lo + t);
        out->part[lo + t] = part[t];
        out->count[lo + t] = (int32_t)count[t];
    }
    out->seen = seen;
}

/* smath_chunk_bins under the cut {0, -1}, SM_LANES ids at a time. */
static inline uint64_t smath__bins_lanes(const double *w, int64_t c0, int64_t c1, smath_chunk *out)
{
    int64_t j = 0, len = c1 - c0;
    SM_IVEC seen = SM_ISET1(0);
    for (; j + SM_LANES <= len; j += SM_LANES) {
        SM_IVEC b = SM_BIN(SM_LOADD(w + c0 + j));
        SM_STORE_BYTES(out->bin + j, b);
        seen = SM_IOR(seen, SM_SHLV1(b)); /* bin SMATH_BINS sets no bit */
    }
    uint64_t lanes[SM_LANES], there = 0;
    SM_ISTORE(lanes, seen);
    for (int l = 0; l < SM_LANES; l++)
        there |= lanes[l];
    return there | smath_chunk_bins(w, c0 + j, c1, (smath_cut){0.0, -1}, out, j);
}

void SM_CHUNK_ALL(const double *w, int64_t c0, int64_t c1, smath_chunk *out)
{
    uint64_t there = smath__bins_lanes(w, c0, c1, out);
    int lo = there ? __builtin_ctzll(there) : 0;
    if (there >> lo >> (SM__WINDOW - 1) >> 1) /* bins past the window: through memory */
        smath_chunk_sums(w, c0, c1, out);
    else
        smath__window_sums(w, c0, c1, lo, out);
}
