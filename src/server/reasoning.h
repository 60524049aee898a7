/* reasoning.h - split a Qwen3 reply into reasoning and content, as it streams.
 *
 * A thinking reply reads "<think>REASONING</think>CONTENT". Text goes in piece
 * by piece (any split, even inside a tag); out comes reasoning and content
 * with the tags removed. A reply that does not begin with "<think>" is all
 * content (unless the prompt opened the block); one that never closes its
 * think block is all reasoning. As in
 * vLLM's Qwen3 parser, the content keeps what follows "</think>" verbatim. */
#ifndef ENC_SERVER_REASONING_H
#define ENC_SERVER_REASONING_H

#include <stddef.h>

typedef enum reasoning_state {
    REASONING_START,   /* not yet known whether the reply thinks */
    REASONING_THINK,   /* inside the think block */
    REASONING_CONTENT, /* after it, or no think block */
} reasoning_state;

typedef struct reasoning_split {
    reasoning_state state;
    char held[16]; /* text that may be the start of a tag */
    size_t n_held;
} reasoning_split;

/* in_think: the prompt opened the think block (a Qwen3 Thinking-2507
 * template), so the reply is reasoning until "</think>". */
void reasoning_init(reasoning_split *r, int in_think);

/* Append what `text[0..len)` adds to *reasoning and *content: each is a
 * malloc'd NUL-terminated string the caller owns, grown with realloc, and
 * *n_reasoning / *n_content its length. `final` flushes held-back text.
 * Returns 0 when out of memory (the piece is then lost, and nothing held). */
int reasoning_put(reasoning_split *r, const char *text, size_t len, int final, char **reasoning,
                  size_t *n_reasoning, char **content, size_t *n_content);

#endif
