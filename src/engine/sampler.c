/* sampler.c - penalties, masks, temperature, top-k / top-p / min-p and the
 * draw, with a per-request random stream; raw logprobs. The order and the
 * meanings are vLLM's (sampler.h); the draw is base/philox.h's. */
#include "engine/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/philox.h"

/* --- scratch ------------------------------------------------------------------ */

enc_status sampler_init(sampler *s, int64_t n_vocab)
{
    memset(s, 0, sizeof *s);
    s->n_vocab = n_vocab;
    s->work = malloc((size_t)n_vocab * sizeof *s->work);
    s->w = malloc((size_t)n_vocab * sizeof *s->w);
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->tmp = malloc((size_t)n_vocab * sizeof *s->tmp);
    s->ids = malloc((size_t)n_vocab * sizeof *s->ids);
    s->chunks = malloc((size_t)(n_vocab + SMATH_CHUNK - 1) / SMATH_CHUNK * sizeof *s->chunks);
    s->counts = calloc((size_t)n_vocab, sizeof *s->counts);
    s->done = calloc((size_t)n_vocab, sizeof *s->done);
    if (!s->work || !s->w || !s->cand || !s->tmp || !s->ids || !s->chunks || !s->counts ||
        !s->done) {
        sampler_free(s);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "sampler scratch for a vocabulary of %lld", (long long)n_vocab);
    }
    return ENC_OK;
}

void sampler_free(sampler *s)
{
    free(s->work);
    free(s->w);
    free(s->cand);
    free(s->tmp);
    free(s->ids);
    free(s->chunks);
    free(s->counts);
    free(s->done);
    memset(s, 0, sizeof *s);
}

int32_t sampler_argmax(const float *logits, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return (int32_t)best;
}

static bool sampler__repetition_on(const engine_sampling *p)
{
    return p->repetition_penalty != 0.0 && p->repetition_penalty != 1.0;
}

bool sampler_penalties_on(const engine_sampling *p)
{
    return sampler__repetition_on(p) || p->presence_penalty != 0.0 || p->frequency_penalty != 0.0;
}

bool sampler_is_plain_greedy(const engine_sampling *p, int64_t n_output)
{
    return p->temperature == 0.0 && !sampler_penalties_on(p) && !p->logprobs &&
           n_output >= p->min_tokens && p->n_logit_bias == 0;
}

/* --- penalties and masks ------------------------------------------------------ */

/* Penalise each distinct id of tokens[0..n) once (ids >= n_sample are never
 * chosen and are skipped). */
static void sampler__penalize_ids(sampler *s, const engine_sampling *p, const int32_t *tokens, int64_t n,
                                  int64_t n_sample)
{
    bool rep = sampler__repetition_on(p);
    for (int64_t i = 0; i < n; i++) {
        int32_t t = tokens[i];
        if (t < 0 || t >= n_sample || s->done[t]) continue;
        s->done[t] = 1;
        double l = s->work[t];
        if (rep) l = l > 0.0 ? l / p->repetition_penalty : l * p->repetition_penalty;
        int32_t c = s->counts[t];
        l -= p->frequency_penalty * c + p->presence_penalty * (c > 0);
        s->work[t] = (float)l;
    }
}

static void sampler__clear_ids(sampler *s, const int32_t *tokens, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        int32_t t = tokens[i];
        if (t < 0 || t >= s->n_vocab) continue;
        s->counts[t] = 0;
        s->done[t] = 0;
    }
}

const float *sampler_process(sampler *s, const sampler_input *in)
{
    const engine_sampling *p = in->params;
    int64_t n = in->n_sample;
    memcpy(s->work, in->logits, (size_t)n * sizeof *s->work);
    for (int i = 0; i < p->n_logit_bias; i++) { /* in entry order: a repeated id adds up */
        const graph_sample_bias *b = &p->logit_bias[i];
        if (b->id >= 0 && b->id < n) s->work[b->id] += b->bias;
    }
    if (sampler_penalties_on(p)) {
        for (int64_t i = 0; i < in->n_output; i++)
            if (in->output[i] >= 0 && in->output[i] < n) s->counts[in->output[i]]++;
        sampler__penalize_ids(s, p, in->output, in->n_output, n);
        if (sampler__repetition_on(p)) {
            /* prompt-only ids: their count is 0, so only the repetition penalty bites */
            engine_sampling rep_only = {.repetition_penalty = p->repetition_penalty};
            sampler__penalize_ids(s, &rep_only, in->prompt, in->n_prompt, n);
            sampler__clear_ids(s, in->prompt, in->n_prompt);
        }
        sampler__clear_ids(s, in->output, in->n_output);
    }
    if (in->n_output < p->min_tokens) {
        for (int i = 0; i < in->n_eos; i++)
            if (in->eos_ids[i] >= 0 && in->eos_ids[i] < n) s->work[in->eos_ids[i]] = -INFINITY;
        for (int i = 0; i < in->n_stop_ids; i++)
            if (in->stop_ids[i] >= 0 && in->stop_ids[i] < n) s->work[in->stop_ids[i]] = -INFINITY;
    }
    for (int64_t i = 0; in->allowed && i < n; i++)
        if (!graph_sample_allowed(in->allowed, i)) s->work[i] = -INFINITY;
    return s->work;
}

/* --- the kept set and the draw --------------------------------------------------- */

/* The weights of x[0..n) in s->w and their kept set (base/sample_select.h). */
static void sampler__kept(sampler *s, const float *x, int64_t n, const engine_sampling *p, sample_kept *k)
{
    /* min_p first, as in vLLM: the largest weight is 1, so the argmax survives */
    smath_weights_best(x, n, x[sampler_argmax(x, n)], 1.0 / p->temperature, p->min_p, s->w);
    sample_select(s->w, n, p->top_k, p->top_p, &(sample_work){s->cand, s->tmp, s->ids, s->chunks},
                  k);
}

int64_t sampler_candidates(sampler *s, const float *x, int64_t n, const engine_sampling *p)
{
    sample_kept k;
    sampler__kept(s, x, n, p, &k);
    int64_t nc = 0;
    for (int64_t i = 0; i < n; i++)
        if (smath_kept(s->w, i, k.cut)) s->cand[nc++] = (sample_cand){s->w[i], (int32_t)i, 0};
    return nc;
}

static int32_t sampler__draw(sampler *s, const float *x, int64_t n, const engine_sampling *p, double u01)
{
    sample_kept k;
    sampler__kept(s, x, n, p, &k);
    int64_t id = sample_select_draw(s->w, n, &k, s->chunks, u01);
    return id >= 0 ? (int32_t)id : sampler_argmax(x, n);
}

/* --- logprobs --------------------------------------------------------------------- */

/* log_softmax of the raw row over ids < n, and the n_top largest (ties: lower
 * id first). Returns the log of the normaliser. */
static double sampler__logprobs(sampler *s, const float *x, int64_t n, int n_top, engine_token_logprob *lp)
{
    double max = x[sampler_argmax(x, n)];
    smath_weights_best(x, n, max, 1.0, 0.0, s->w);
    sample_kept all;
    smath_masses(s->w, n, (smath_cut){0.0, -1}, all.count, all.mass);
    double lse = max + smath_log(smath_total(all.mass));
    if (n_top > n) n_top = (int)n;
    int have = 0;
    for (int64_t i = 0; i < n; i++) {
        if (have == n_top && !(have > 0 && x[i] > x[lp->top_ids[have - 1]])) continue;
        int j = have < n_top ? have++ : have - 1; /* drop the smallest when full */
        while (j > 0 && x[i] > x[lp->top_ids[j - 1]]) {
            lp->top_ids[j] = lp->top_ids[j - 1];
            j--;
        }
        lp->top_ids[j] = (int32_t)i;
    }
    lp->n_top = have;
    for (int j = 0; j < have; j++) lp->top_logprobs[j] = (float)((double)x[lp->top_ids[j]] - lse);
    return lse;
}

void sampler_prompt_logprobs(sampler *s, const float *logits, int64_t n, int n_top, int32_t id,
                             engine_token_logprob *lp)
{
    double lse = sampler__logprobs(s, logits, n, n_top, lp);
    lp->id = id;
    lp->logprob = id >= 0 && id < n ? (float)((double)logits[id] - lse) : -INFINITY;
    int64_t rank = 0;
    for (int64_t i = 0; i < n; i++)
        rank += (float)((double)logits[i] - lse) >= lp->logprob;
    lp->rank = (int32_t)rank;
}

int32_t sampler_pick(sampler *s, const sampler_input *in, engine_token_logprob *lp)
{
    const engine_sampling *p = in->params;
    int64_t n = in->n_sample;
    double lse = lp ? sampler__logprobs(s, in->logits, n, p->top_logprobs, lp) : 0.0;
    if (lp) lp->rank = 0;
    const float *x = in->logits;
    if (p->n_logit_bias || sampler_penalties_on(p) || in->n_output < p->min_tokens || in->allowed)
        x = sampler_process(s, in);
    if (in->allowed && x[sampler_argmax(x, n)] == -INFINITY) return GRAPH_SAMPLE_NO_TOKEN;
    int32_t id = p->temperature == 0.0 ? sampler_argmax(x, n) : sampler__draw(s, x, n, p, philox_uniform(in->seed, in->position));
    if (lp) {
        lp->id = id;
        lp->logprob = (float)((double)in->logits[id] - lse);
    }
    return id;
}
