/* arena.h - a bump allocator reset as a whole.
 *
 * Per-step and per-request host memory comes from an arena: one block
 * reserved up front, allocations bump a pointer, arena_reset frees them all
 * at once. An arena never grows behind the caller's back: when it is full,
 * arena_alloc returns NULL, so the caller sizes it at plan time.
 *
 *   base                          used             size
 *   |##########|######|###########|................|
 */
#ifndef ENC_BASE_ARENA_H
#define ENC_BASE_ARENA_H

#include <stddef.h>

#include "base/status.h"

typedef struct enc_arena {
    unsigned char *base;
    size_t size; /* bytes reserved */
    size_t used; /* bytes handed out, including alignment padding */
} enc_arena;

enc_status arena_init(enc_arena *a, size_t size);
void arena_free(enc_arena *a);
/* size bytes aligned to 64; NULL when the arena is full. Zeroed. */
void *arena_alloc(enc_arena *a, size_t size);
void arena_reset(enc_arena *a);

#endif
