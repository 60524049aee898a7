/* prefix_cache.h - automatic prefix caching for the KV block pool.
 *
 * A full block (block_size tokens whose K/V are computed) is named by a
 * chained hash: hash(block i) = XXH64(hash(block i-1) || its token ids), with
 * KV_HASH_ROOT standing in for the parent of block 0. Equal hashes mean an
 * equal prefix up to and including the block, so a new sequence whose first
 * n full blocks hash the same can read their K/V instead of computing them.
 *
 * Each cached block also keeps its parent's hash and its own token ids, and a
 * lookup compares both, so two blocks whose 64-bit hashes collide by chance
 * are never confused. What a lookup cannot see is the prefix behind the
 * parent's hash: a false hit needs two different prefixes of whole blocks
 * with equal 64-bit chained hashes, about 2^-64 per pair for XXH64 (vLLM
 * accepts the same with SHA-256 or its builtin hash).
 *
 *   cached block b:  hash[b]  parent[b]  tokens[b * block_size .. +block_size]
 *   bucket[hash & mask] -> b -> chain[b] -> ... -> -1   (the hash table)
 *   head -> ... -> tail   cached blocks with refcount 0, least recently freed
 *                         first (the LRU); the pool evicts from the head only
 *                         when it has no plain free block left
 *
 * The pool (kv_cache.h) owns one of these when prefix caching is on and calls
 * the kv_prefix__ hooks below as blocks are freed and taken. */
#ifndef ENC_KV_PREFIX_CACHE_H
#define ENC_KV_PREFIX_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The parent hash of a sequence's first block. */
#define KV_HASH_ROOT 0x656e636f72650001ull

typedef struct kv_prefix_cache {
    int32_t n_blocks;
    int32_t block_size;
    uint64_t *hash;   /* [n_blocks] chained hash of a cached block */
    uint64_t *parent; /* [n_blocks] the hash it was chained from */
    int32_t *tokens;  /* [n_blocks, block_size] the token ids it holds */
    uint8_t *cached;  /* [n_blocks] 1 while the block is in the hash table */
    int32_t *bucket;  /* [bucket_mask + 1] first cached block of the bucket, -1: none */
    int32_t *chain;   /* [n_blocks] next cached block in the same bucket, -1 ends */
    uint32_t bucket_mask;
    int32_t *prev, *next; /* [n_blocks] LRU links, -1 ends */
    int32_t head, tail;   /* least / most recently freed cached block, -1: empty */
    int32_t n_lru;        /* cached blocks with refcount 0 (on the LRU) */
    int32_t n_cached;     /* blocks in the hash table, in use or not */
    int64_t n_evictions;  /* cached blocks whose hash was dropped to reuse them */
} kv_prefix_cache;

/* XXH64 of len bytes (the reference algorithm, little-endian reads). */
uint64_t kv_xxh64(const void *data, size_t len, uint64_t seed);
/* The chained hash of a block of n token ids (n <= 32) after `parent`. */
uint64_t kv_block_hash(uint64_t parent, const int32_t *tokens, int32_t n);

/* --- hooks of the block pool (kv_cache.c) --------------------------------- */
kv_prefix_cache *kv_prefix__create(int32_t n_blocks, int32_t block_size);
void kv_prefix__destroy(kv_prefix_cache *c); /* NULL is a no-op */
/* A cached block's refcount dropped to zero: it joins the LRU at the tail. */
void kv_prefix__park(kv_prefix_cache *c, int32_t b);
/* A cached block on the LRU is taken again (a hit): off the LRU. */
void kv_prefix__unpark(kv_prefix_cache *c, int32_t b);
/* Take the least recently freed cached block and drop its hash; -1 if none. */
int32_t kv_prefix__evict(kv_prefix_cache *c);

#endif
