/* kv_cache.h - the paged KV cache: a pool of fixed-size blocks, per-sequence
 * block tables, and the device buffers that hold K and V for every layer.
 *
 * The pool is a page cache in SQLite's manner: allocated up front, blocks
 * reference-counted, a free list of unused blocks. A sequence's block table
 * maps its logical block i (positions [i*B, (i+1)*B)) to a physical block;
 * token position p lives at slot table[p / B] * B + p % B.
 *
 * With prefix caching on (prefix_cache.h), a full block whose K/V are
 * computed is entered under the chained hash of its tokens and can be shared
 * by several tables (one reference each). When its last reference goes it
 * keeps its hash and waits on an LRU; the pool takes a plain free block
 * first and evicts the least recently freed cached one only when none is
 * left. Shared blocks are full and never written again: a sequence only
 * writes positions past its cached prefix, in blocks it holds alone.
 *
 *   k_cache[layer]: [n_blocks * block_size, n_kv_heads * head_dim] of dtype
 *   v_cache[layer]: same
 *
 * dtype is the cache's element type: F32, or F16 / BF16 (half the bytes;
 * attention widens them to f32 exactly, store_kv rounds to nearest even).
 */
#ifndef ENC_KV_KV_CACHE_H
#define ENC_KV_KV_CACHE_H

#include <stdint.h>

#include "backend/backend.h"
#include "kv/prefix_cache.h"

typedef struct kv_pool {
    int32_t n_blocks;
    int32_t block_size;
    int32_t *refcount;  /* [n_blocks] */
    int32_t *free_list; /* [n_blocks], a stack of free blocks holding no cached
                         * hash; top at n_plain - 1 */
    int32_t n_plain;
    int32_t n_free;           /* every unreferenced block: n_plain + prefix->n_lru */
    kv_prefix_cache *prefix;  /* owned; NULL while prefix caching is off */
} kv_pool;

enc_status kv_pool_init(kv_pool *p, int32_t n_blocks, int32_t block_size);
void kv_pool_free(kv_pool *p);
/* Turn prefix caching on (a fresh pool only). */
enc_status kv_pool_enable_prefix_caching(kv_pool *p);
/* A block with refcount 1, or -1 when none is free. A plain free block is
 * taken first; then the least recently freed cached block loses its hash. */
int32_t kv_block_alloc(kv_pool *p);
/* Drop one reference. At zero a cached block goes to the LRU keeping its
 * hash, any other block back to the free list. */
void kv_block_release(kv_pool *p, int32_t block);
/* The pool's own consistency: free counts, free list, LRU links, and every
 * cached block found by its hash, which its stored tokens hash to (tests). */
enc_status kv_pool_validate(const kv_pool *p);

/* A sequence's block table (host side). */
typedef struct kv_block_table {
    int32_t *blocks; /* [n_blocks_max] */
    int32_t n_blocks;
    int32_t n_blocks_max; /* max_blocks_per_seq */
    uint64_t *hashes;     /* [n_blocks_max] chained hash of the sequence's full
                           * blocks, valid below n_hashed (prefix caching) */
    int32_t n_hashed;
    int32_t n_committed;  /* leading blocks already offered to the prefix cache */
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
/* Release every block of the table, last block first (so that a
 * sequence's tail is evicted before its head). */
void kv_block_table_release(kv_pool *p, kv_block_table *t);
/* Start an empty table with the longest run of cached blocks that equals
 * the first full blocks of tokens, at most n_blocks_max of them; each gets
 * one more reference. Returns how many (0 while prefix caching is off). */
int32_t kv_prefix_match(kv_pool *p, kv_block_table *t, const int32_t *tokens, int32_t n_blocks_max);
/* The first n_computed tokens of the table's sequence have their K/V in the
 * cache: enter every full block among them not yet offered into the prefix
 * cache (unless an equal block is there already). No-op while it is off. */
void kv_prefix_commit(kv_pool *p, kv_block_table *t, const int32_t *tokens, int64_t n_computed);
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
    enc_dtype dtype;    /* F32, F16 or BF16 */
    backend_buffer **k; /* [n_layers] */
    backend_buffer **v; /* [n_layers] */
} kv_cache;

enc_status kv_cache_init(kv_cache *c, backend *be, int64_t n_layers, int64_t kv_dim,
                         enc_dtype dtype, int32_t n_blocks, int32_t block_size);
void kv_cache_free(kv_cache *c);
/* Bytes of K+V one token takes in a cache of dtype, over all layers. */
int64_t kv_cache_bytes_per_token(int64_t n_layers, int64_t kv_dim, enc_dtype dtype);

#endif
