/* bad_words.h - a request's bad_words (vLLM's: word sequences never
 * generated) as an engine constraint, on top of the one it wraps (a
 * structured output's, allowed_token_ids', or none). */
#ifndef ENC_API_BAD_WORDS_H
#define ENC_API_BAD_WORDS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

/* Make *c never generate words[0..n): each word, its leading whitespace
 * stripped, is encoded as it stands and with one leading space (that
 * spelling kept when it gives as many tokens, the first one different), as
 * vLLM does; at every position the last id of each such sequence whose
 * other ids end the output so far is masked (a one-token word everywhere).
 * tok is encoded under tok_mu. A word with nothing but whitespace is
 * ENC_ERR_INVALID_ARGUMENT naming it. On success *c is the wrapper and owns
 * the old constraint's state; on failure *c is unchanged. */
enc_status api_bad_words_wrap(tokenizer *tok, pthread_mutex_t *tok_mu, const char *const *words,
                              size_t n, int32_t n_vocab, engine_constraint *c);

#endif
