/* test_philox.c - the generator of the sampler (src/base/philox.h):
 *
 *   kat      Philox4x32-10 against the known-answer vectors published with
 *            Random123 (its tests/kat_vectors, the three "philox4x32 10"
 *            lines: counter, key, expected output)
 *   uniform  philox_uniform is built from the first two words as documented
 *            (53 bits, in [0, 1)), differs across positions and seeds, and its
 *            mean and variance over 100,000 positions are those of U(0, 1)
 *            (within 5 standard errors)
 *
 * usage: test_philox */
#include <math.h>

#include "base/philox.h"
#include "check.h"

static void test_kat(void)
{
    static const struct {
        uint32_t ctr[4], key[2], want[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        philox4x32_10(kat[i].ctr, kat[i].key, out);
        for (int w = 0; w < 4; w++) {
            if (out[w] != kat[i].want[w])
                fprintf(stderr, "kat %zu word %d: %08x, want %08x\n", i, w, out[w], kat[i].want[w]);
            CHECK(out[w] == kat[i].want[w]);
        }
    }
}

static void test_uniform(void)
{
    /* the documented construction, from the raw words */
    uint64_t seed = 0x0123456789abcdefull;
    int64_t pos = 0x100000007ll;
    uint32_t key[2] = {0x89abcdefu, 0x01234567u}, ctr[4] = {7u, 1u, 0u, 0u}, out[4];
    philox4x32_10(ctr, key, out);
    double want = (double)(((uint64_t)(out[0] >> 5) << 26) | (out[1] >> 6)) / 9007199254740992.0;
    CHECK(philox_uniform(seed, pos) == want);
    CHECK(philox_uniform(seed, pos) != philox_uniform(seed, pos + 1));
    CHECK(philox_uniform(seed, pos) != philox_uniform(seed + 1, pos));
    CHECK(philox_uniform(seed, pos) != philox_uniform(seed + (1ull << 32), pos));

    enum { N = 100000 };
    double sum = 0.0, sum2 = 0.0, lo = 1.0, hi = 0.0;
    for (int64_t i = 0; i < N; i++) {
        double u = philox_uniform(42, i);
        sum += u;
        sum2 += u * u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    CHECK(lo >= 0.0 && hi < 1.0);
    CHECK(fabs(mean - 0.5) < 5.0 * sqrt(1.0 / 12.0 / N));
    CHECK(fabs(var - 1.0 / 12.0) < 5.0 * sqrt(1.0 / 180.0 / N)); /* var of (u - 1/2)^2 is 1/180 */
}

int main(void)
{
    test_kat();
    test_uniform();
    if (check_failures) fprintf(stderr, "test_philox: %d checks failed\n", check_failures);
    return check_failures != 0;
}
