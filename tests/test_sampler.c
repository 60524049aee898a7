/* test_sampler.c - the sampler (src/engine/sampler.c) against reference
 * computations written here, independently and plainly: a full sort in
 * double precision for the kept sets, the penalty formulas term by term, a
 * double log-softmax for the logprobs.
 *
 *   filters     top-k, top-p, min-p and their combinations on crafted rows:
 *               the candidate set equals the reference's exactly, and over
 *               many seeded draws every kept token's count is within 5
 *               binomial standard deviations (+1) of N x its renormalised
 *               probability (tokens expected < 20 times are pooled into
 *               one bin), while excluded tokens are never drawn
 *   large       a 151936-id row whose kept set needs the threshold to fall
 *               several times, and a flat row (ties: lower ids first)
 *   penalties   repetition / presence / frequency arithmetic per id
 *   min_tokens  EOS and stop ids masked until min_tokens, not after, and
 *               EOS not masked under ignore_eos (no EOS ids given)
 *   greedy      argmax after penalties and masks, first id on ties,
 *               n_sample masking
 *   logprobs    the raw row's log-softmax, top_logprobs order and ties, the
 *               n_sample mask, unchanged by penalties and temperature
 *   seed        the same seed gives the same picks, another seed others
 *
 * usage: test_sampler */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/sampler.h"

/* --- the reference ---------------------------------------------------------- */

typedef struct ref_item {
    double l;
    int32_t id;
} ref_item;

static int ref_cmp(const void *a, const void *b)
{
    const ref_item *x = a, *y = b;
    if (x->l != y->l) return x->l > y->l ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The renormalised distribution after temperature, min-p, top-k, top-p (vLLM's
 * order), in its words: probabilities, not weights; prob[i] = 0 for excluded ids. */
static void ref_distribution(const float *x, int64_t n, const engine_sampling *p, double *prob)
{
    ref_item *it = malloc((size_t)n * sizeof *it);
    for (int64_t i = 0; i < n; i++) it[i] = (ref_item){(double)x[i] / p->temperature, (int32_t)i};
    qsort(it, (size_t)n, sizeof *it, ref_cmp);
    int64_t kept = n; /* min-p: p / p_max = exp(l - l_max) >= min_p */
    while (kept > 1 && exp(it[kept - 1].l - it[0].l) < p->min_p) kept--;
    if (p->top_k > 0 && p->top_k < kept) { /* every id at least as likely as the k-th */
        int64_t min_p_kept = kept;
        kept = p->top_k;
        while (kept < min_p_kept && it[kept].l == it[p->top_k - 1].l) kept++;
    }
    double z = 0.0;
    for (int64_t r = 0; r < kept; r++) z += exp(it[r].l - it[0].l);
    if (p->top_p > 0.0 && p->top_p < 1.0) { /* the smallest prefix with mass >= top_p */
        double cum = 0.0;
        int64_t r = 0;
        while (r < kept && cum < p->top_p) cum += exp(it[r++].l - it[0].l) / z;
        kept = r;
    }
    z = 0.0;
    for (int64_t r = 0; r < kept; r++) z += exp(it[r].l - it[0].l);
    memset(prob, 0, (size_t)n * sizeof *prob);
    for (int64_t r = 0; r < kept; r++) prob[it[r].id] = exp(it[r].l - it[0].l) / z;
    free(it);
}

/* --- filters ------------------------------------------------------------------ */

/* Is a count of `hits` in n draws within 5 standard deviations of the
 * binomial mean n p (plus one count, for bins expected only a few times)? */
static bool check_frequency(const char *what, int64_t id, int64_t hits, double p, int64_t n)
{
    double mean = p * (double)n, sd = sqrt(mean * fmax(0.0, 1.0 - p));
    if (fabs((double)hits - mean) <= 5.0 * sd + 1.0) return true;
    fprintf(stderr, "%s: id %lld (-1: the pooled rare ids) drawn %lld times, expected %.1f (sd %.1f)\n", what,
            (long long)id, (long long)hits, mean, sd);
    return false;
}

/* Compare the candidate set with the reference, then draw N tokens. */
static void check_filter(sampler *s, const char *what, const float *x, int64_t n, engine_sampling p, int64_t n_draws)
{
    double *prob = malloc((size_t)n * sizeof *prob);
    int64_t *hits = calloc((size_t)n, sizeof *hits);
    ref_distribution(x, n, &p, prob);
    int64_t nc = sampler_candidates(s, x, n, &p), n_ref = 0;
    double wsum = 0.0;
    for (int64_t i = 0; i < nc; i++) wsum += s->cand[i].w;
    for (int64_t i = 0; i < n; i++) n_ref += prob[i] > 0.0;
    bool same = nc == n_ref;
    for (int64_t i = 0; same && i < nc; i++) {
        int32_t id = s->cand[i].id;
        same = prob[id] > 0.0 && fabs(s->cand[i].w / wsum - prob[id]) < 1e-12;
    }
    if (!same) fprintf(stderr, "%s: %lld candidates, the reference keeps %lld\n", what, (long long)nc, (long long)n_ref);
    CHECK(same);

    float *row = malloc((size_t)n * sizeof *row);
    memcpy(row, x, (size_t)n * sizeof *row);
    sampler_input in = {.logits = row, .n_sample = n, .params = &p, .seed = 12345};
    for (int64_t d = 0; d < n_draws; d++) {
        in.position = d; /* one draw per position */
        hits[sampler_pick(s, &in, NULL)]++;
    }
    /* kept ids expected >= 20 times are checked one by one, the rest pooled */
    int bad = 0;
    double pool_p = 0.0;
    int64_t pool_hits = 0;
    for (int64_t i = 0; i < n; i++) {
        if (prob[i] == 0.0) {
            if (hits[i]) fprintf(stderr, "%s: excluded id %lld drawn %lld times\n", what, (long long)i, (long long)hits[i]);
            bad += hits[i] != 0;
        } else if (prob[i] * (double)n_draws < 20.0) {
            pool_p += prob[i];
            pool_hits += hits[i];
        } else {
            bad += !check_frequency(what, i, hits[i], prob[i], n_draws);
        }
    }
    if (pool_p > 0.0) bad += !check_frequency(what, -1, pool_hits, pool_p, n_draws);
    CHECK(bad == 0);
    printf("ok %s: %lld kept, %lld draws\n", what, (long long)nc, (long long)n_draws);
    free(row);
    free(prob);
    free(hits);
}

/* A row whose softmax (at temperature 1) is `probs`, in the order given. */
static void row_from_probs(float *x, const double *probs, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)log(probs[i]);
}

static void test_filters(sampler *s)
{
    /* ids shuffled so that sorted order is not id order */
    enum { N = 8 };
    const double probs[N] = {0.05, 0.30, 0.02, 0.20, 0.15, 0.12, 0.10, 0.06};
    float x[N];
    row_from_probs(x, probs, N);
    const int64_t D = 200000;
    check_filter(s, "temperature 1", x, N, (engine_sampling){.temperature = 1}, D);
    check_filter(s, "temperature 0.5", x, N, (engine_sampling){.temperature = 0.5}, D);
    check_filter(s, "temperature 3", x, N, (engine_sampling){.temperature = 3}, D);
    check_filter(s, "top_k 3", x, N, (engine_sampling){.temperature = 1, .top_k = 3}, D);
    check_filter(s, "top_k 1", x, N, (engine_sampling){.temperature = 1, .top_k = 1}, D);
    check_filter(s, "top_k 8 (off)", x, N, (engine_sampling){.temperature = 1, .top_k = 8}, D);
    check_filter(s, "top_k -1 (off)", x, N, (engine_sampling){.temperature = 1, .top_k = -1}, D);
    /* cumulative 0.30, 0.50, 0.65, 0.77: top_p 0.6 keeps 3 ids, 0.49 keeps 2,
     * 0.51 keeps 3, 0.05 keeps 1 (0.5 itself is left out: the float row puts
     * the second sum at 0.5 +- 1e-8) */
    check_filter(s, "top_p 0.6", x, N, (engine_sampling){.temperature = 1, .top_p = 0.6}, D);
    check_filter(s, "top_p 0.49", x, N, (engine_sampling){.temperature = 1, .top_p = 0.49}, D);
    check_filter(s, "top_p 0.51", x, N, (engine_sampling){.temperature = 1, .top_p = 0.51}, D);
    check_filter(s, "top_p 0.05", x, N, (engine_sampling){.temperature = 1, .top_p = 0.05}, D);
    check_filter(s, "top_p 0.95", x, N, (engine_sampling){.temperature = 1, .top_p = 0.95}, D);
    /* min_p 0.3: keep p >= 0.09 (0.30, 0.20, 0.15, 0.12, 0.10) */
    check_filter(s, "min_p 0.3", x, N, (engine_sampling){.temperature = 1, .min_p = 0.3}, D);
    check_filter(s, "min_p 1", x, N, (engine_sampling){.temperature = 1, .min_p = 1}, D);
    /* top-p over the renormalised top-k set: top 4 mass 0.77, 0.30/0.77 =
     * 0.39, 0.50/0.77 = 0.65: top_p 0.6 keeps 2 */
    check_filter(s, "top_k 4 + top_p 0.6", x, N, (engine_sampling){.temperature = 1, .top_k = 4, .top_p = 0.6}, D);
    check_filter(s, "top_k 5 + top_p 0.9 + min_p 0.45, T 0.7", x, N,
                 (engine_sampling){.temperature = 0.7, .top_k = 5, .top_p = 0.9, .min_p = 0.45}, D);
    check_filter(s, "top_p 0.8 + min_p 0.5, T 2", x, N,
                 (engine_sampling){.temperature = 2, .top_p = 0.8, .min_p = 0.5}, D);

    /* hand-checked kept sets, independent of the reference */
    engine_sampling p = {.temperature = 1, .top_p = 0.6};
    CHECK(sampler_candidates(s, x, N, &p) == 3 && s->cand[0].id == 1 && s->cand[1].id == 3 && s->cand[2].id == 4);
    p = (engine_sampling){.temperature = 1, .min_p = 0.3};
    CHECK(sampler_candidates(s, x, N, &p) == 5);
    p = (engine_sampling){.temperature = 1, .top_k = 4, .top_p = 0.6};
    CHECK(sampler_candidates(s, x, N, &p) == 2 && s->cand[0].id == 1 && s->cand[1].id == 3);

    /* ties at the k-th logit are kept, as in vLLM: 3 ids tie for second */
    const float tie[6] = {0.0f, 2.0f, 1.0f, 1.0f, -1.0f, 1.0f};
    p = (engine_sampling){.temperature = 1, .top_k = 2};
    CHECK(sampler_candidates(s, tie, 6, &p) == 4);
    check_filter(s, "top_k 2 with a 3-way tie", tie, 6, p, D);
    /* top-p walks ties in id order: 2 of the 3 tied ids */
    p = (engine_sampling){.temperature = 1, .top_p = 0.75};
    double z = exp(2.0) + 3 * exp(1.0) + exp(0.0) + exp(-1.0), m1 = exp(2.0) / z, m2 = exp(1.0) / z;
    CHECK(m1 + m2 < 0.75 && m1 + 2 * m2 >= 0.75 - 1e-9 && m1 + 2 * m2 < 0.75 + 0.1); /* the row is as meant */
    int64_t nc = sampler_candidates(s, tie, 6, &p);
    CHECK((m1 + 2 * m2 >= 0.75 ? nc == 3 : nc == 4) && s->cand[1].id == 2 && s->cand[2].id == 3);
}

/* The large rows' draws: every one costs passes over 151936 ids, and their
 * kept ids are each expected under 20 times (all pooled), so what the draws
 * check is that no excluded id comes out; the kept sets themselves are
 * compared exactly. With the cut ignored (10% of the mass excluded at top_p
 * 0.9), 200 draws miss every excluded id with probability 0.9^200 < 1e-9. */
enum { LARGE_DRAWS = 200 };

static void test_large(sampler *s)
{
    int64_t n = 151936;
    float *x = malloc((size_t)n * sizeof *x);
    /* weights fall by e^-0.002 per rank over ids scrambled by a multiplier:
     * top_p 0.9 keeps ~1150 ids, below the first thresholds' reach */
    for (int64_t r = 0; r < n; r++) x[(r * 7919) % n] = (float)(-0.002 * (double)r);
    check_filter(s, "151936 ids, top_p 0.9", x, n, (engine_sampling){.temperature = 1, .top_p = 0.9}, LARGE_DRAWS);
    check_filter(s, "151936 ids, top_k 3000 + top_p 0.99", x, n,
                 (engine_sampling){.temperature = 1, .top_k = 3000, .top_p = 0.99}, LARGE_DRAWS);
    check_filter(s, "151936 ids, top_k 40", x, n, (engine_sampling){.temperature = 0.8, .top_k = 40}, LARGE_DRAWS);
    check_filter(s, "151936 ids, min_p 0.001", x, n, (engine_sampling){.temperature = 1, .min_p = 0.001}, LARGE_DRAWS);
    /* flat: every weight 1; top_p 0.25 keeps the lowest quarter of the ids */
    for (int64_t i = 0; i < n; i++) x[i] = 3.0f;
    engine_sampling p = {.temperature = 1, .top_p = 0.25};
    int64_t nc = sampler_candidates(s, x, n, &p);
    CHECK(nc == n / 4 && s->cand[0].id == 0 && s->cand[nc - 1].id == nc - 1);
    printf("ok flat row: top_p 0.25 keeps ids 0..%lld\n", (long long)nc - 1);
    free(x);
}

/* --- penalties and masks ------------------------------------------------------ */

static void test_penalties(sampler *s)
{
    enum { N = 10 };
    const float raw[N] = {2.0f, -1.0f, 0.5f, -0.25f, 3.0f, 0.0f, 1.5f, -2.0f, 0.75f, 4.0f};
    const int32_t prompt[] = {0, 1, 1, 8};
    const int32_t output[] = {2, 3, 3, 3, 0, 9};
    struct {
        double rep, pres, freq;
    } cases[] = {{1.3, 0, 0}, {0.7, 0, 0}, {0, 0.5, 0}, {0, 0, 0.4}, {1.2, -0.3, 0.25}, {2.0, 2.0, -2.0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        engine_sampling p = {.repetition_penalty = cases[c].rep, .presence_penalty = cases[c].pres,
                             .frequency_penalty = cases[c].freq};
        sampler_input in = {.logits = raw, .n_sample = N, .params = &p, .prompt = prompt, .n_prompt = 4,
                            .output = output, .n_output = 6};
        const float *got = sampler_process(s, &in);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            int count = 0, in_prompt = 0;
            for (int j = 0; j < 6; j++) count += output[j] == i;
            for (int j = 0; j < 4; j++) in_prompt |= prompt[j] == i;
            double want = raw[i];
            double r = cases[c].rep == 0 ? 1.0 : cases[c].rep;
            if (count || in_prompt) want = want > 0 ? want / r : want * r;
            want -= cases[c].freq * count + cases[c].pres * (count > 0);
            if (fabs(got[i] - want) > 1e-6) {
                fprintf(stderr, "penalty case %zu: id %d is %.9g, expected %.9g\n", c, i, got[i], want);
                bad++;
            }
        }
        CHECK(bad == 0);
        for (int i = 0; i < N; i++) CHECK(s->counts[i] == 0 && s->done[i] == 0); /* scratch restored */
    }
    /* ids outside [0, n_sample) are skipped; the row beyond n_sample is not read */
    engine_sampling p = {.repetition_penalty = 2.0};
    const int32_t far[] = {9, 8};
    sampler_input in = {.logits = raw, .n_sample = 9, .params = &p, .output = far, .n_output = 2};
    const float *got = sampler_process(s, &in);
    CHECK(got[8] == 0.375f && got[0] == 2.0f);
    printf("ok penalties: %zu cases\n", sizeof cases / sizeof *cases);
}

static void test_min_tokens(sampler *s)
{
    enum { N = 6 };
    const float raw[N] = {0.0f, 5.0f, 1.0f, 4.0f, 2.0f, 3.0f}; /* EOS 1 is the argmax, stop 3 the next */
    const int32_t eos[] = {1}, stop[] = {3}, out[] = {2, 2, 2};
    engine_sampling p = {.min_tokens = 3};
    sampler_input in = {.logits = raw, .n_sample = N, .params = &p, .output = out, .n_output = 2,
                        .eos_ids = eos, .n_eos = 1, .stop_ids = stop, .n_stop_ids = 1};
    const float *got = sampler_process(s, &in);
    CHECK(isinf(got[1]) && got[1] < 0 && isinf(got[3]) && got[3] < 0 && got[5] == 3.0f);
    CHECK(sampler_pick(s, &in, NULL) == 5);
    in.n_output = 3; /* met: nothing masked */
    CHECK(sampler_pick(s, &in, NULL) == 1);
    in.n_output = 0;
    in.n_eos = 0; /* ignore_eos: only the stop id */
    CHECK(sampler_pick(s, &in, NULL) == 1);
    in.n_eos = 1;
    p.temperature = 1.0; /* sampled: the masked ids are never drawn */
    in.seed = 7;
    int masked = 0;
    for (int d = 0; d < 20000; d++) {
        in.position = d;
        int32_t id = sampler_pick(s, &in, NULL);
        masked += id == 1 || id == 3;
    }
    CHECK(masked == 0);
    printf("ok min_tokens\n");
}

static void test_greedy(sampler *s)
{
    const float x[6] = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 9.0f};
    engine_sampling p = {0};
    sampler_input in = {.logits = x, .n_sample = 6, .params = &p};
    CHECK(sampler_pick(s, &in, NULL) == 5);
    in.n_sample = 5; /* id 5 masked: the first of the two 3.0s */
    CHECK(sampler_pick(s, &in, NULL) == 1);
    const int32_t out[] = {1};
    p.presence_penalty = 0.5; /* 1 drops to 2.5: 3 wins */
    in.output = out;
    in.n_output = 1;
    CHECK(sampler_pick(s, &in, NULL) == 3);
    p = (engine_sampling){.repetition_penalty = 4.0}; /* 1 and 3 both seen: 0.75; 2 wins */
    const int32_t prompt[] = {3};
    in.prompt = prompt;
    in.n_prompt = 1;
    CHECK(sampler_pick(s, &in, NULL) == 2);
    /* sampled with n_sample: the masked id is never drawn, even as the argmax */
    p = (engine_sampling){.temperature = 1.0};
    in = (sampler_input){.logits = x, .n_sample = 5, .params = &p, .seed = 3};
    int hit5 = 0;
    for (int d = 0; d < 10000; d++) {
        in.position = d;
        hit5 += sampler_pick(s, &in, NULL) == 5;
    }
    CHECK(hit5 == 0);
    printf("ok greedy and n_sample\n");
}

/* --- logprobs ----------------------------------------------------------------- */

/* A float logprob against a double: within a few float roundings. */
static bool near(float got, double want) { return fabs((double)got - want) <= 1e-6 * (1.0 + fabs(want)); }

static void test_logprobs(sampler *s)
{
    enum { N = 300 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)(sin(i * 1.7) * 6.0);
    x[17] = x[250] = 7.5f; /* a tie at the top: 17 first */
    x[299] = 50.0f;        /* the largest, masked by n_sample below */
    for (int n_sample = N; n_sample >= N - 1; n_sample--) {
        double max = -INFINITY, sum = 0.0;
        for (int i = 0; i < n_sample; i++) max = fmax(max, x[i]);
        for (int i = 0; i < n_sample; i++) sum += exp((double)x[i] - max);
        double lse = max + log(sum);
        const int32_t out[] = {17, 5, 5};
        engine_sampling p = {.temperature = 0.6, .top_k = 30, .repetition_penalty = 1.5, .frequency_penalty = 1,
                             .logprobs = true, .top_logprobs = 20};
        sampler_input in = {.logits = x, .n_sample = n_sample, .params = &p, .output = out, .n_output = 3, .seed = 99};
        engine_token_logprob lp;
        memset(&lp, 0xff, sizeof lp);
        int32_t id = sampler_pick(s, &in, &lp);
        CHECK(lp.id == id && near(lp.logprob, x[id] - lse));
        CHECK(lp.n_top == 20);
        /* the reference order: sort all ids by raw logit, ties by id */
        ref_item *it = malloc(sizeof(ref_item) * N);
        for (int i = 0; i < n_sample; i++) it[i] = (ref_item){x[i], i};
        qsort(it, (size_t)n_sample, sizeof *it, ref_cmp);
        int bad = 0;
        for (int j = 0; j < 20; j++)
            bad += lp.top_ids[j] != it[j].id || !near(lp.top_logprobs[j], it[j].l - lse);
        CHECK(bad == 0);
        if (n_sample == N) CHECK(lp.top_ids[0] == 299);
        else CHECK(lp.top_ids[0] == 17 && lp.top_ids[1] == 250);
        free(it);
        /* fewer alternatives, and none */
        p.top_logprobs = 3;
        sampler_pick(s, &in, &lp);
        CHECK(lp.n_top == 3);
        p.top_logprobs = 0;
        sampler_pick(s, &in, &lp);
        CHECK(lp.n_top == 0 && near(lp.logprob, x[lp.id] - lse));
    }
    /* more alternatives than ids */
    const float tiny[3] = {1.0f, 1.0f, 0.0f};
    engine_sampling p = {.logprobs = true, .top_logprobs = 20};
    sampler_input in = {.logits = tiny, .n_sample = 3, .params = &p};
    engine_token_logprob lp;
    CHECK(sampler_pick(s, &in, &lp) == 0 && lp.n_top == 3 && lp.top_ids[0] == 0 && lp.top_ids[1] == 1 &&
          lp.top_ids[2] == 2);
    CHECK(near(lp.logprob, 1.0 - log(2 * exp(1.0) + 1.0)));
    printf("ok logprobs\n");
}

static void test_seed(sampler *s)
{
    enum { N = 50, T = 200 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)cos(i * 0.9);
    engine_sampling p = {.temperature = 1.0, .top_p = 0.9};
    int32_t a[T], b[T], c[T];
    int32_t *runs[3] = {a, b, c};
    uint64_t seeds[3] = {42, 42, 43};
    for (int r = 0; r < 3; r++) {
        sampler_input in = {.logits = x, .n_sample = N, .params = &p, .seed = seeds[r]};
        for (int t = 0; t < T; t++) {
            in.position = t;
            runs[r][t] = sampler_pick(s, &in, NULL);
        }
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
    printf("ok seed\n");
}

int main(void)
{
    sampler s;
    if (sampler_init(&s, 151936) != ENC_OK) return 1;
    test_filters(&s);
    test_large(&s);
    test_penalties(&s);
    test_min_tokens(&s);
    test_greedy(&s);
    test_logprobs(&s);
    test_seed(&s);
    sampler_free(&s);
    sampler_free(&s); /* a zeroed sampler is fine */
    if (check_failures) fprintf(stderr, "%d checks failed\n", check_failures);
    return check_failures != 0;
}
