/* text_out.h - one request's output text: its ids streamed through the
 * tokenizer, cut at its stop strings.
 *
 * Text arrives in pieces (what each token completed, whole UTF-8 characters).
 * Each piece is appended to `held`; what can no longer be part of a stop
 * string moves on to `out`, the text of the next callback:
 *
 *   output so far:  [ released (out, earlier callbacks) ][ held ]
 *                                                         ^ the longest tail that is
 *                                                           a proper prefix of a stop string
 *
 * A match can only begin inside `held` (anything earlier was released because
 * no stop string could start there), so only `held` is searched, and a match
 * must end in the newest piece (an older one would have been found already,
 * or was not looked for before min_tokens). The earliest match wins, ties go
 * to the first string given; the match (unless include_stop) and all after
 * it are dropped (vLLM's semantics, with the hold-back exact instead of
 * max(len) - 1 bytes). With no
 * stop strings nothing is held. */
#ifndef ENC_API_TEXT_OUT_H
#define ENC_API_TEXT_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

typedef struct text_out {
    tokenizer_stream *stream; /* NULL without a tokenizer: no text at all */
    const tokenizer *tok;
    char **stop;        /* [n_stop] NUL-terminated copies; one allocation with stop_len */
    size_t *stop_len;   /* [n_stop] */
    size_t n_stop;
    char *held;         /* [n_held] kept back, may begin a stop string */
    size_t n_held, cap_held;
    char *out;          /* [n_out] released since the last take, NUL-terminated */
    size_t n_out, cap_out;
    int matched;        /* index of the stop string that matched, -1 */
    bool include_stop;  /* the match stays in the text (vLLM's include_stop_str_in_output);
                         * what follows it is dropped either way */
} text_out;

/* tok may be NULL: then ids give no text (put_text still works). The stop
 * strings are copied. On failure nothing is left allocated. */
enc_status text_out_init(text_out *t, const tokenizer *tok, int skip_special,
                         const char *const *stop, size_t n_stop);
void text_out_free(text_out *t); /* a zeroed text_out is fine */

/* Add the text of one generated id. Ids the tokenizer has no token for give
 * no text. check_stop: look for stop strings (off before min_tokens, as in
 * vLLM). After a match (t->matched >= 0) every put is ignored. */
enc_status text_out_put_id(text_out *t, int32_t id, bool check_stop);
/* Add a piece of text (what put_id does after decoding). */
enc_status text_out_put_text(text_out *t, const char *s, size_t len, bool check_stop);
/* The output ended: flush the stream (an incomplete character becomes
 * U+FFFD, as in a full decode) and release everything held. */
enc_status text_out_finish(text_out *t, bool check_stop);
/* The text released since the last take (NUL-terminated, never NULL); valid
 * until the next put or finish. */
const char *text_out_take(text_out *t, size_t *len);

#endif
