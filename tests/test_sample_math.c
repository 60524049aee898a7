/* test_sample_math.c - the sampler's arithmetic (base/sample_math.h), the
 * definition every backend reproduces:
 *
 *   exp, log   against libm: within 3 ulp over [-708, 0] (exp) and over
 *              (0, 2^20] (log); exp(0) is 1, below -708 / -inf / NaN is 0
 *   bin        against frexp's exponent
 *   weights    the AVX2 and AVX-512 loops (base/sample_math_avx2.c,
 *              _avx512.c) give the portable loop's bits, row lengths 1..67
 *              and 151936, -inf, min_p
 *   masses     smath_masses against the plain definition in ref_sampler.h
 *              (bin by bin, chunks of 256, id order), bit for bit, for
 *              every id kept and under cuts
 *   draw       smath_draw (over the chunk records made under the cut)
 *              against ref_walk at random u and at u exactly on
 *              each running sum of the definition (where a sum in any other
 *              order or chunking picks a neighbour)
 *   chunks     chunk records (smath_chunk_of) made for 1, 2 and 3 ranges of
 *              chunks, the last range first (threads finish in any order),
 *              then added in chunk order (smath_chunks_fold): the plain
 *              definition's masses bit for bit, smath_masses' counts;
 *              the AVX2 and AVX-512 records (a lane a bin) the portable
 *              ones, every field, every chunk length
 *
 * usage: test_sample_math */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels_impl.h"
#include "base/sample_math.h"
#include "check.h"
#include "ref_sampler.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double uniform(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

static double ulps(double got, double want)
{
    return fabs(got - want) / (nextafter(want, INFINITY) - want);
}

static void test_exp_log(void)
{
    double worst = 0.0;
    for (int i = 0; i <= 200000; i++) {
        double x = i < 100000 ? -708.0 * i / 100000.0 : -708.0 * uniform();
        double u = ulps(smath_exp(x), exp(x));
        if (u > worst) worst = u;
    }
    printf("exp: worst %.3f ulp over [-708, 0]\n", worst);
    CHECK(worst <= 3.0);
    CHECK(smath_exp(0.0) == 1.0 && smath_exp(-0.0) == 1.0);
    CHECK(smath_exp(-708.5) == 0.0 && smath_exp(-INFINITY) == 0.0 && smath_exp(NAN) == 0.0);
    CHECK(smath_exp(-1e30) == 0.0);
    worst = 0.0;
    for (int i = 0; i < 200000; i++) {
        double x = i % 2 ? 1.0 + uniform() * 1048576.0 : uniform() + 0x1p-30;
        double u = ulps(smath_log(x), log(x));
        if (u > worst) worst = u;
    }
    printf("log: worst %.3f ulp over (0, 2^20]\n", worst);
    CHECK(worst <= 3.0);
    CHECK(smath_log(1.0) == 0.0);
}

static void test_bin(void)
{
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        double w = i == 0 ? 1.0 : smath_exp(-700.0 * uniform());
        bad += smath_bin(w) != ref_bin(w);
    }
    CHECK(bad == 0);
    CHECK(smath_bin(1.0) == 0 && smath_bin(0.75) == 1 && smath_bin(0.5) == 1 &&
          smath_bin(0.25) == 2);
    CHECK(smath_bin(0x1p-80) == 63);
}

/* x[0..n): logits around 0 with a few -inf. */
static void random_row(float *x, int64_t n, double spread)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = uniform() < 0.01 ? -INFINITY : (float)(spread * (uniform() - 0.5));
}

/* The loop `weights` (an ISA's) against the portable one, row lengths
 * 1..67 (every tail) and 151936. */
static int weights_differ(void (*weights)(const float *, int64_t, double, double, double, double *))
{
    enum { N = 151936 };
    float *x = malloc(N * sizeof *x);
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    int bad = 0;
    for (int64_t n = 1; n <= 68; n++) {
        int64_t len = n == 68 ? N : n;
        random_row(x, len, n % 3 ? 40.0 : 3000.0);
        double max = 0.0, inv_t = n % 2 ? 1.0 / 0.8 : 1.0 / 1.7, min_p = n % 4 == 0 ? 0.05 : 0.0;
        for (int64_t i = 0; i < len; i++)
            if (x[i] > max) max = x[i];
        smath_weights(x, len, max, inv_t, min_p, a);
        weights(x, len, max, inv_t, min_p, b);
        bad += memcmp(a, b, (size_t)len * sizeof *a) != 0;
    }
    free(x);
    free(a);
    free(b);
    return bad;
}

static void test_weights(void)
{
#ifdef CPU__HAVE_X86
    if (!cpu_isa_supported(CPU_ISA_AVX2)) {
        printf("weights: no AVX2 here, the portable loop only\n");
        return;
    }
    int bad = weights_differ(smath_weights_avx2);
    CHECK(bad == 0);
    printf("weights: AVX2 and portable alike in %d of 68 rows\n", 68 - bad);
    if (!cpu_isa_supported(CPU_ISA_AVX512)) {
        printf("weights: no AVX-512 here\n");
        return;
    }
    bad = weights_differ(smath_weights_avx512);
    CHECK(bad == 0);
    printf("weights: AVX-512 and portable alike in %d of 68 rows\n", 68 - bad);
#else
    printf("weights: not x86-64, the portable loop only\n");
#endif
}

/* The chunk records of w[0..n) made range by range, the last of n_parts
 * ranges first, then folded. */
static void chunked_masses(const double *w, int64_t n, smath_cut cut, int n_parts, smath_chunk *ch,
                           int64_t *count, double *mass)
{
    int64_t n_chunks = (n + SMATH_CHUNK - 1) / SMATH_CHUNK;
    for (int part = n_parts - 1; part >= 0; part--)
        for (int64_t c = n_chunks * part / n_parts; c < n_chunks * (part + 1) / n_parts; c++) {
            int64_t c0 = c * SMATH_CHUNK, c1 = c0 + SMATH_CHUNK < n ? c0 + SMATH_CHUNK : n;
            smath_chunk_of(w, c0, c1, cut, &ch[c]);
        }
    smath_chunks_fold(ch, n_chunks, count, mass);
}

static void test_masses_and_draw(void)
{
    enum { N = 5000 };
    double *w = malloc(N * sizeof *w), mass[SMATH_BINS], ref_mass[64];
    bool *keep = malloc(N * sizeof *keep);
    smath_chunk *ch = malloc((N / SMATH_CHUNK + 1) * sizeof *ch);
    int64_t count[SMATH_BINS];
    int bad_mass = 0, bad_draw = 0, n_draws = 0;
    for (int t = 0; t < 40; t++) {
        int64_t n = t < 20 ? 1 + t * 97 : N;
        for (int64_t i = 0; i < n; i++)
            w[i] = uniform() < 0.05 ? 0.0 : smath_exp(-(t % 2 ? 3.0 : 30.0) * uniform());
        w[t % n] = 1.0;
        smath_cut cut = {0.0, -1};
        if (t % 3 == 1) cut = (smath_cut){w[(t * 7) % n], (t * 13) % n}; /* a cut inside */
        for (int64_t i = 0; i < n; i++)
            keep[i] = w[i] > 0.0 && (w[i] > cut.w || (w[i] == cut.w && i <= cut.id));
        smath_masses(w, n, cut, count, mass);
        double total = ref_masses(w, keep, n, ref_mass);
        bad_mass += memcmp(mass, ref_mass, sizeof mass) != 0 || smath_total(mass) != total;
        chunked_masses(w, n, cut, 1, ch, count, mass); /* the records the draw walks */
        /* u at random, and exactly on the definition's running sums */
        double acc = 0.0;
        for (int b = 0; b < 64; b++) {
            double u = uniform() * total;
            bad_draw += smath_draw(w, n, mass, ch, u) != ref_walk(w, keep, n, ref_mass, u);
            if (ref_mass[b] <= 0.0) continue;
            acc = acc + ref_mass[b];
            bad_draw += smath_draw(w, n, mass, ch, acc) != ref_walk(w, keep, n, ref_mass, acc);
            double run = 0.0, before = acc - ref_mass[b]; /* inside the bin: id by id */
            for (int64_t i = 0; i < n && i < 256; i++) {
                if (!keep[i] || ref_bin(w[i]) != b) continue;
                run += w[i];
                bad_draw += smath_draw(w, n, mass, ch, before + run) !=
                            ref_walk(w, keep, n, ref_mass, before + run);
                n_draws++;
            }
            n_draws += 2;
        }
    }
    printf("masses: %d mismatches over 40 rows; draws: %d of %d differ\n", bad_mass, bad_draw, n_draws);
    CHECK(bad_mass == 0);
    CHECK(bad_draw == 0);
    free(w);
    free(keep);
    free(ch);
}

static void test_chunks(void)
{
    enum { N = 20000 };
    double *w = malloc(N * sizeof *w), mass[SMATH_BINS], ref_mass[64];
    bool *keep = malloc(N * sizeof *keep);
    smath_chunk *ch = malloc((N / SMATH_CHUNK + 1) * sizeof *ch);
    int64_t count[SMATH_BINS], want_count[SMATH_BINS];
    int bad = 0;
    for (int t = 0; t < 12; t++) {
        int64_t n = t < 6 ? 1 + t * 1301 : N;
        for (int64_t i = 0; i < n; i++)
            w[i] = uniform() < 0.05 ? 0.0 : smath_exp(-(t % 2 ? 3.0 : 30.0) * uniform());
        smath_cut cut = t % 3 == 1 ? (smath_cut){w[(t * 7) % n], (t * 13) % n} : (smath_cut){0.0, -1};
        for (int64_t i = 0; i < n; i++)
            keep[i] = w[i] > 0.0 && (w[i] > cut.w || (w[i] == cut.w && i <= cut.id));
        ref_masses(w, keep, n, ref_mass);
        smath_masses(w, n, cut, want_count, mass);
        for (int parts = 1; parts <= 3; parts++) {
            chunked_masses(w, n, cut, parts, ch, count, mass);
            bad += memcmp(mass, ref_mass, sizeof mass) != 0 || memcmp(count, want_count, sizeof count) != 0;
        }
    }
    printf("chunks: %d mismatches over 12 rows x 3 splits\n", bad);
    CHECK(bad == 0);
    free(w);
    free(keep);
    free(ch);
}

/* Do two records of a chunk of len ids agree: seen, the bins of its ids,
 * and the part and count of every bin seen? */
static bool chunks_agree(const smath_chunk *a, const smath_chunk *b, int64_t len)
{
    if (a->seen != b->seen || memcmp(a->bin, b->bin, (size_t)len) != 0) return false;
    for (int k = 0; k < SMATH_BINS; k++)
        if (a->seen >> k & 1 && (a->part[k] != b->part[k] || a->count[k] != b->count[k]))
            return false;
    return true;
}

/* The SIMD chunk records against smath_chunk_of under the cut {0, -1}:
 * chunks of every length up to 256, weights within a few bins (the lanes'
 * path), across more bins (through memory), with zeros, 1.0, and bins
 * 48-63 and 57-63 (a window's end past the last bin). */
static void test_chunk_simd(void)
{
#ifdef CPU__HAVE_X86
    void (*forms[2])(const double *, int64_t, int64_t, smath_chunk *) = {smath_chunk_all_avx2,
                                                                         smath_chunk_all_avx512};
    const char *names[2] = {"AVX2", "AVX-512"};
    cpu_isa isas[2] = {CPU_ISA_AVX2, CPU_ISA_AVX512};
    double w[2 * SMATH_CHUNK];
    smath_chunk want, got;
    for (int f = 0; f < 2; f++) {
        if (!cpu_isa_supported(isas[f])) {
            printf("chunk records: no %s here\n", names[f]);
            continue;
        }
        int bad = 0, runs = 0;
        for (int64_t len = 1; len <= SMATH_CHUNK; len++)
            for (int kind = 0; kind < 5; kind++) {
                static const double span[] = {3.0, 40.0, 700.0, 8.0, 3.0},
                                    below[] = {0, 0, 0, 35, 41};
                for (int64_t i = 0; i < 2 * SMATH_CHUNK; i++) {
                    w[i] = smath_exp(-span[kind] * uniform() - below[kind]);
                    if (uniform() < 0.05) w[i] = 0.0;
                }
                w[len / 2] = kind == 1 ? 1.0 : w[len / 2];
                int64_t c0 = len % 7;
                smath_chunk_of(w, c0, c0 + len, (smath_cut){0.0, -1}, &want);
                forms[f](w, c0, c0 + len, &got);
                bad += !chunks_agree(&want, &got, len);
                runs++;
            }
        printf("chunk records: %s and portable alike in %d of %d chunks\n", names[f], runs - bad,
               runs);
        CHECK(bad == 0);
    }
#else
    printf("chunk records: not x86-64, the portable form only\n");
#endif
}

int main(void)
{
    test_exp_log();
    test_bin();
    test_weights();
    test_masses_and_draw();
    test_chunks();
    test_chunk_simd();
    return check_failures != 0;
}
