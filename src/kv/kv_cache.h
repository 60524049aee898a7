/* kv_cache.h - the paged KV cache: a pool of fixed-size blocks, per-sequence
 * block tables, and the device buffers that hold K and V for every layer.
 *
 * The pool is a page cache in SQLite's manner: allocated up front, blocks
 * reference-counted, a free list of unused blocks. A sequence's block table
 * maps its logical block i (positions [i*B, (i+1)*B)) to a physical block;
 * token position p lives at slot table[p / B] * B + p % B.
 *
 *   k_cache[layer]: [n_blocks * block_size, n_kv_heads * head_dim] f32
 *   v_cache[layer]: same
 */
#ifndef ENC_KV_KV_CACHE_H
#define ENC_KV_KV_CACHE_H

#include <stdint.h>

#include "backend/backend.h"

typedef struct kv_pool {
    int32_t n_blocks;
    int32_t block_size;
    int32_t *refcount;  /* [n_blocks] */
    int32_t *free_list; /* [n_blocks], a stack; top at n_free - 1 */
    int32_t n_free;
} kv_pool;

enc_status kv_pool_init(kv_pool *p, int32_t n_blocks, int32_t block_size);
void kv_pool_free(kv_pool *p);
/* A block with refcount 1, or -1 when none is free. */
int32_t kv_block_alloc(kv_pool *p);
/* Drop one reference; the block returns to the free list at zero. */
void kv_block_release(kv_pool *p, int32_t block);

/* A sequence's block table (host side). */
typedef struct kv_block_table {
    int32_t *blocks; /* [n_blocks_max] */
    int32_t n_blocks;
    int32_t n_blocks_max; /* max_blocks_per_seq */
} kv_block_table;

enc_status kv_block_table_init(kv_block_table *t, int32_t n_blocks_max);
void kv_block_table_free(kv_block_table *t);
/* Make the table cover n_tokens positions, allocating blocks as needed.
 * All or nothing: when the pool runs out, blocks taken by this call are
 * given back and ENC_ERR_OUT_OF_MEMORY is returned (no message: the caller
 * decides whether that is an error or a reason to wait). */
enc_status kv_block_table_reserve(kv_pool *p, kv_block_table *t, int64_t n_tokens);
/* Blocks the table still needs to cover n_tokens. */
int32_t kv_blocks_needed(const kv_pool *p, const kv_block_table *t, int64_t n_tokens);
/* Release every block of the table. */
void kv_block_table_release(kv_pool *p, kv_block_table *t);
/* The cache slot of token position pos. */
static inline int32_t kv_slot(const kv_pool *p, const kv_block_table *t, int64_t pos)
{
    return t->blocks[pos / p->block_size] * p->block_size + (int32_t)(pos % p->block_size);
}

/* The device side: K and V buffers for every layer. */
typedef struct kv_cache {
    backend *be; /* not owned */
    kv_pool pool;
    int64_t n_layers;
    int64_t kv_dim; /* n_kv_heads * head_dim */
    backend_buffer **k; /* [n_layers] */
    backend_buffer **v; /* [n_layers] */
} kv_cache;

enc_status kv_cache_init(kv_cache *c, backend *be, int64_t n_layers, int64_t kv_dim,
                         int32_t n_blocks, int32_t block_size);
void kv_cache_free(kv_cache *c);
/* Bytes of K+V one token takes in the cache, over all layers. */
int64_t kv_cache_bytes_per_token(int64_t n_layers, int64_t kv_dim);

#endif
