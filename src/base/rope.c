/* rope.c - RoPE's frequency schedule from a checkpoint's rope scaling
 * (rope.h says what the numbers mean). */
#include "base/rope.h"

#include <math.h>

/* The frequency index at which a frequency turns num_rotations times over
 * ctx positions: hd ln(ctx / (2 pi num_rotations)) / (2 ln theta). */
static double rope__correction_dim(double num_rotations, int64_t hd, double theta, int64_t ctx)
{
    const double pi = 3.14159265358979323846;
    return (double)hd * log((double)ctx / (num_rotations * 2.0 * pi)) / (2.0 * log(theta));
}

enc_rope enc_rope_make(double theta, int64_t head_dim, const enc_rope_scaling *s, int64_t max_pos)
{
    enc_rope r = {theta, 1.0, 0.0, 0.0, 1.0};
    if (s && s->kind == ENC_ROPE_LINEAR) {
        r.factor = s->factor;
        r.low = -1.0; /* the ramp at 1 from frequency 0 on */
    } else if (s && s->kind == ENC_ROPE_YARN) {
        int64_t ctx = s->original_ctx > 0 ? s->original_ctx : max_pos;
        double low = rope__correction_dim(s->beta_fast, head_dim, theta, ctx);
        double high = rope__correction_dim(s->beta_slow, head_dim, theta, ctx);
        if (s->truncate) low = floor(low), high = ceil(high);
        r.factor = s->factor;
        r.low = low > 0.0 ? low : 0.0;
        r.high = high < (double)(head_dim - 1) ? high : (double)(head_dim - 1);
        r.attn = s->attention_factor > 0.0 ? s->attention_factor
                 : s->factor <= 1.0        ? 1.0
                                           : 0.1 * log(s->factor) + 1.0;
    }
    if (r.high == r.low) r.high += 0.001; /* as transformers and vLLM: no 0/0 */
    return r;
}

double enc_rope_inv_freq(const enc_rope *r, int64_t i, int64_t hd)
{
    double t = ((double)i - r->low) / (r->high - r->low);
    double ramp = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
    return pow(r->theta, -(double)(2 * i) / (double)hd) * (1.0 - ramp * (1.0 - 1.0 / r->factor));
}

int64_t enc_rope_context_limit(const enc_rope_scaling *s, int64_t max_pos)
{
    if (!s || s->kind == ENC_ROPE_NONE || s->factor <= 1.0) return max_pos;
    int64_t base = s->kind == ENC_ROPE_YARN && s->original_ctx > 0 ? s->original_ctx : max_pos;
    double scaled = (double)base * s->factor;
    int64_t limit = scaled < 9.0e15 ? (int64_t)scaled : (int64_t)9.0e15;
    return limit > max_pos ? limit : max_pos;
}

enc_status enc_rope_theta_check(double theta, const char *where, const char *key)
{
    if (!(theta > 1.0) || !isfinite(theta))
        return enc_fail(ENC_ERR_FORMAT, "%s: %s must be a number above 1 (got %g)", where, key,
                        theta);
    return ENC_OK;
}

enc_status enc_rope_scaling_check(const enc_rope_scaling *s, const char *where)
{
    if (s->kind == ENC_ROPE_NONE) return ENC_OK;
    if (!(s->factor > 0.0) || !isfinite(s->factor) || !isfinite(1.0 / s->factor))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: rope scaling factor must be a positive number (got %g)", where,
                        s->factor);
    if (s->kind != ENC_ROPE_YARN) return ENC_OK;
    if (s->original_ctx < 0)
        return enc_fail(ENC_ERR_FORMAT, "%s: rope scaling original context %lld is negative", where,
                        (long long)s->original_ctx);
    if (!(s->beta_fast > 0.0) || !(s->beta_slow > 0.0) || !isfinite(s->beta_fast) ||
        !isfinite(s->beta_slow))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: yarn beta_fast (%g) and beta_slow (%g) must be positive", where,
                        s->beta_fast, s->beta_slow);
    if (s->attention_factor < 0.0 || !isfinite(s->attention_factor))
        return enc_fail(ENC_ERR_FORMAT, "%s: yarn attention_factor must be positive (got %g)",
                        where, s->attention_factor);
    return ENC_OK;
}
