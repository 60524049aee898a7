/* prefix_cache.c - the prefix cache of the KV block pool: XXH64 chained
 * block hashes, the hash table of cached blocks, the LRU of cached blocks
 * nobody holds, and matching / committing a sequence's full blocks.
 * The layout is drawn in prefix_cache.h. */
#include "kv/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

#include "kv/kv_cache.h"

/* --- XXH64 ----------------------------------------------------------------- */

#define XXH_P1 11400714785074694791ull
#define XXH_P2 14029467366897019727ull
#define XXH_P3 1609587929392839161ull
#define XXH_P4 9650029242287828579ull
#define XXH_P5 2870177450012600261ull

static uint64_t kv__rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t kv__read64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint32_t kv__read32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t kv__xxh_round(uint64_t acc, uint64_t in)
{
    acc += in * XXH_P2;
    return kv__rotl(acc, 31) * XXH_P1;
}

static uint64_t kv__xxh_merge(uint64_t h, uint64_t v)
{
    h ^= kv__xxh_round(0, v);
    return h * XXH_P1 + XXH_P4;
}

uint64_t kv_xxh64(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + XXH_P1 + XXH_P2, v2 = seed + XXH_P2, v3 = seed, v4 = seed - XXH_P1;
        for (; end - p >= 32; p += 32) {
            v1 = kv__xxh_round(v1, kv__read64(p));
            v2 = kv__xxh_round(v2, kv__read64(p + 8));
            v3 = kv__xxh_round(v3, kv__read64(p + 16));
            v4 = kv__xxh_round(v4, kv__read64(p + 24));
        }
        h = kv__rotl(v1, 1) + kv__rotl(v2, 7) + kv__rotl(v3, 12) + kv__rotl(v4, 18);
        h = kv__xxh_merge(h, v1);
        h = kv__xxh_merge(h, v2);
        h = kv__xxh_merge(h, v3);
        h = kv__xxh_merge(h, v4);
    } else {
        h = seed + XXH_P5;
    }
    h += (uint64_t)len;
    for (; end - p >= 8; p += 8) h = kv__rotl(h ^ kv__xxh_round(0, kv__read64(p)), 27) * XXH_P1 + XXH_P4;
    if (end - p >= 4) {
        h = kv__rotl(h ^ (uint64_t)kv__read32(p) * XXH_P1, 23) * XXH_P2 + XXH_P3;
        p += 4;
    }
    for (; p < end; p++) h = kv__rotl(h ^ (uint64_t)*p * XXH_P5, 11) * XXH_P1;
    h ^= h >> 33;
    h *= XXH_P2;
    h ^= h >> 29;
    h *= XXH_P3;
    h ^= h >> 32;
    return h;
}

uint64_t kv_block_hash(uint64_t parent, const int32_t *tokens, int32_t n)
{
    uint8_t buf[8 + 4 * 32]; /* the parent hash, then the ids, all little-endian */
    ENC_ASSERT(n >= 0 && n <= 32);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(parent >> (8 * i));
    for (int32_t j = 0; j < n; j++)
        for (int i = 0; i < 4; i++) buf[8 + 4 * j + i] = (uint8_t)((uint32_t)tokens[j] >> (8 * i));
    return kv_xxh64(buf, 8 + 4 * (size_t)n, 0);
}

/* --- the hash table and the LRU -------------------------------------------- */

kv_prefix_cache *kv_prefix__create(int32_t n_blocks, int32_t block_size)
{
    kv_prefix_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    uint32_t n_buckets = 1;
    while (n_buckets < (uint32_t)n_blocks) n_buckets *= 2;
    c->n_blocks = n_blocks;
    c->block_size = block_size;
    c->bucket_mask = n_buckets - 1;
    c->hash = calloc((size_t)n_blocks, sizeof *c->hash);
    c->parent = calloc((size_t)n_blocks, sizeof *c->parent);
    c->tokens = calloc((size_t)n_blocks * (size_t)block_size, sizeof *c->tokens);
    c->cached = calloc((size_t)n_blocks, sizeof *c->cached);
    c->bucket = malloc((size_t)n_buckets * sizeof *c->bucket);
    c->chain = malloc((size_t)n_blocks * sizeof *c->chain);
    c->prev = malloc((size_t)n_blocks * sizeof *c->prev);
    c->next = malloc((size_t)n_blocks * sizeof *c->next);
    if (!c->hash || !c->parent || !c->tokens || !c->cached || !c->bucket || !c->chain || !c->prev ||
        !c->next) {
        kv_prefix__destroy(c);
        return NULL;
    }
    memset(c->bucket, 0xff, (size_t)n_buckets * sizeof *c->bucket); /* -1 */
    memset(c->chain, 0xff, (size_t)n_blocks * sizeof *c->chain);
    memset(c->prev, 0xff, (size_t)n_blocks * sizeof *c->prev);
    memset(c->next, 0xff, (size_t)n_blocks * sizeof *c->next);
    c->head = c->tail = -1;
    return c;
}

void kv_prefix__destroy(kv_prefix_cache *c)
{
    if (!c) return;
    free(c->hash);
    free(c->parent);
    free(c->tokens);
    free(c->cached);
    free(c->bucket);
    free(c->chain);
    free(c->prev);
    free(c->next);
    free(c);
}

/* The cached block holding exactly (hash, parent, tokens), or -1. */
static int32_t kv__find(const kv_prefix_cache *c, uint64_t hash, uint64_t parent, const int32_t *tokens)
{
    size_t bytes = (size_t)c->block_size * sizeof *tokens;
    for (int32_t b = c->bucket[hash & c->bucket_mask]; b >= 0; b = c->chain[b])
        if (c->hash[b] == hash && c->parent[b] == parent &&
            !memcmp(&c->tokens[(size_t)b * (size_t)c->block_size], tokens, bytes))
            return b;
    return -1;
}

static void kv__insert(kv_prefix_cache *c, int32_t b, uint64_t hash, uint64_t parent, const int32_t *tokens)
{
    ENC_ASSERT(!c->cached[b]);
    c->hash[b] = hash;
    c->parent[b] = parent;
    memcpy(&c->tokens[(size_t)b * (size_t)c->block_size], tokens, (size_t)c->block_size * sizeof *tokens);
    uint32_t k = (uint32_t)(hash & c->bucket_mask);
    c->chain[b] = c->bucket[k];
    c->bucket[k] = b;
    c->cached[b] = 1;
    c->n_cached++;
}

static void kv__remove(kv_prefix_cache *c, int32_t b)
{
    int32_t *link = &c->bucket[c->hash[b] & c->bucket_mask];
    while (*link != b) {
        ENC_ASSERT(*link >= 0);
        link = &c->chain[*link];
    }
    *link = c->chain[b];
    c->chain[b] = -1;
    c->cached[b] = 0;
    c->n_cached--;
}

void kv_prefix__park(kv_prefix_cache *c, int32_t b)
{
    ENC_ASSERT(c->cached[b]);
    c->prev[b] = c->tail;
    c->next[b] = -1;
    if (c->tail >= 0) c->next[c->tail] = b;
    else c->head = b;
    c->tail = b;
    c->n_lru++;
}

void kv_prefix__unpark(kv_prefix_cache *c, int32_t b)
{
    if (c->prev[b] >= 0) c->next[c->prev[b]] = c->next[b];
    else c->head = c->next[b];
    if (c->next[b] >= 0) c->prev[c->next[b]] = c->prev[b];
    else c->tail = c->prev[b];
    c->prev[b] = c->next[b] = -1;
    c->n_lru--;
}

int32_t kv_prefix__evict(kv_prefix_cache *c)
{
    int32_t b = c->head;
    if (b < 0) return -1;
    kv_prefix__unpark(c, b);
    kv__remove(c, b);
    c->n_evictions++;
    return b;
}

/* --- sequences: match and commit ------------------------------------------- */

/* Make t->hashes cover the first n full blocks of tokens. */
static void kv__hash_upto(const kv_pool *p, kv_block_table *t, const int32_t *tokens, int32_t n)
{
    for (int32_t i = t->n_hashed; i < n; i++)
        t->hashes[i] = kv_block_hash(i ? t->hashes[i - 1] : KV_HASH_ROOT,
                                     tokens + (int64_t)i * p->block_size, p->block_size);
    if (n > t->n_hashed) t->n_hashed = n;
}

int32_t kv_prefix_match(kv_pool *p, kv_block_table *t, const int32_t *tokens, int32_t n_blocks_max)
{
    kv_prefix_cache *c = p->prefix;
    ENC_ASSERT(t->n_blocks == 0);
    if (n_blocks_max > t->n_blocks_max) n_blocks_max = t->n_blocks_max;
    int32_t n = 0;
    for (; c && n < n_blocks_max; n++) {
        kv__hash_upto(p, t, tokens, n + 1);
        int32_t b = kv__find(c, t->hashes[n], n ? t->hashes[n - 1] : KV_HASH_ROOT,
                             tokens + (int64_t)n * p->block_size);
        if (b < 0) break;
        if (p->refcount[b]++ == 0) { /* it sat on the LRU: free no more */
            kv_prefix__unpark(c, b);
            p->n_free--;
        }
        t->blocks[t->n_blocks++] = b;
    }
    t->n_committed = n;
    return n;
}

void kv_prefix_commit(kv_pool *p, kv_block_table *t, const int32_t *tokens, int64_t n_computed)
{
    kv_prefix_cache *c = p->prefix;
    int32_t n_full = (int32_t)(n_computed / p->block_size);
    if (!c || n_full <= t->n_committed) return;
    ENC_ASSERT(n_full <= t->n_blocks);
    kv__hash_upto(p, t, tokens, n_full);
    for (int32_t i = t->n_committed; i < n_full; i++) {
        int32_t b = t->blocks[i];
        uint64_t parent = i ? t->hashes[i - 1] : KV_HASH_ROOT;
        const int32_t *tok = tokens + (int64_t)i * p->block_size;
        /* An equal block cached already (computed side by side, or a hit
         * capped short of the last token) keeps the entry; this one stays
         * plain and is freed without a hash. */
        if (c->cached[b] || kv__find(c, t->hashes[i], parent, tok) >= 0) continue;
        kv__insert(c, b, t->hashes[i], parent, tok);
    }
    t->n_committed = n_full;
}

/* --- self-check ------------------------------------------------------------ */

enc_status kv_pool_validate(const kv_pool *p)
{
    const kv_prefix_cache *c = p->prefix;
    int32_t n_zero = 0;
    for (int32_t b = 0; b < p->n_blocks; b++) {
        if (p->refcount[b] < 0)
            return enc_fail(ENC_ERR_INTERNAL, "kv pool: block %d has refcount %d", b, p->refcount[b]);
        n_zero += p->refcount[b] == 0;
    }
    int32_t n_lru = c ? c->n_lru : 0;
    if (n_zero != p->n_free || p->n_plain + n_lru != p->n_free)
        return enc_fail(ENC_ERR_INTERNAL,
                        "kv pool: %d blocks unreferenced, n_free %d, %d plain + %d cached free", n_zero,
                        p->n_free, p->n_plain, n_lru);
    for (int32_t i = 0; i < p->n_plain; i++) {
        int32_t b = p->free_list[i];
        if (b < 0 || b >= p->n_blocks || p->refcount[b] != 0 || (c && c->cached[b]))
            return enc_fail(ENC_ERR_INTERNAL, "kv pool: free-list entry %d is block %d (refcount %d%s)", i, b,
                            b >= 0 && b < p->n_blocks ? p->refcount[b] : -1,
                            c && b >= 0 && b < p->n_blocks && c->cached[b] ? ", cached" : "");
    }
    if (!c) return ENC_OK;
    int32_t walked = 0;
    for (int32_t b = c->head, prev = -1; b >= 0; prev = b, b = c->next[b], walked++) {
        if (walked > c->n_blocks || c->prev[b] != prev || !c->cached[b] || p->refcount[b] != 0)
            return enc_fail(ENC_ERR_INTERNAL,
                            "kv prefix cache: LRU entry %d is block %d (refcount %d, cached %d)", walked, b,
                            p->refcount[b], c->cached[b]);
        if (c->next[b] < 0 && c->tail != b)
            return enc_fail(ENC_ERR_INTERNAL, "kv prefix cache: LRU tail is not %d", b);
    }
    if (walked != c->n_lru)
        return enc_fail(ENC_ERR_INTERNAL, "kv prefix cache: LRU holds %d, n_lru %d", walked, c->n_lru);
    int32_t n_cached = 0;
    for (int32_t b = 0; b < p->n_blocks; b++) {
        if (!c->cached[b]) continue;
        n_cached++;
        const int32_t *tok = &c->tokens[(size_t)b * (size_t)c->block_size];
        if (kv_block_hash(c->parent[b], tok, c->block_size) != c->hash[b])
            return enc_fail(ENC_ERR_INTERNAL, "kv prefix cache: block %d's tokens do not hash to its hash", b);
        if (kv__find(c, c->hash[b], c->parent[b], tok) != b)
            return enc_fail(ENC_ERR_INTERNAL, "kv prefix cache: block %d is not found by its hash", b);
    }
    if (n_cached != c->n_cached)
        return enc_fail(ENC_ERR_INTERNAL, "kv prefix cache: %d cached, n_cached %d", n_cached, c->n_cached);
    return ENC_OK;
}
