/* token_mask.h - a request's allowed_token_ids (encore_sampling) as an
 * engine constraint: a fixed token mask, ANDed with the mask of the
 * request's structured-output constraint when it has one (which it then
 * wraps: its accept and destroy still run). */
#ifndef ENC_API_TOKEN_MASK_H
#define ENC_API_TOKEN_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "engine/engine.h"

/* Make *c allow only ids[0..n) (each in [0, n_vocab), checked: an id
 * outside is ENC_ERR_INVALID_ARGUMENT naming it) at every position, on top
 * of what *c allowed (c->fill_mask NULL: no constraint yet). On success *c
 * is the wrapper and owns the old constraint's state; on failure *c is
 * unchanged. */
enc_status api_token_mask_wrap(const int32_t *ids, size_t n, int32_t n_vocab, engine_constraint *c);

#endif
