/* arena.c - a bump allocator reset as a whole. */
#include "base/arena.h"

#include <stdlib.h>
#include <string.h>

enc_status arena_init(enc_arena *a, size_t size)
{
    a->used = 0;
    a->size = size;
    a->base = size ? aligned_alloc(64, (size + 63) & ~(size_t)63) : NULL;
    if (size && !a->base)
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "arena: cannot reserve %zu bytes", size);
    return ENC_OK;
}

void arena_free(enc_arena *a)
{
    free(a->base);
    a->base = NULL;
    a->size = a->used = 0;
}

void *arena_alloc(enc_arena *a, size_t size)
{
    size_t start = (a->used + 63) & ~(size_t)63;
    if (start > a->size || size > a->size - start) return NULL;
    a->used = start + size;
    memset(a->base + start, 0, size);
    return a->base + start;
}

void arena_reset(enc_arena *a) { a->used = 0; }
