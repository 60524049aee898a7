/* kv_cache.c - block pool, block tables and the per-layer K/V buffers.
 * The prefix cache's hash table and LRU are in prefix_cache.c. */
#include "kv/kv_cache.h"

#include <stdlib.h>
#include <string.h>

/* --- block pool ---------------------------------------------------------- */

enc_status kv_pool_init(kv_pool *p, int32_t n_blocks, int32_t block_size)
{
    memset(p, 0, sizeof *p);
    if (n_blocks < 1) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "kv cache: need at least one block (got %d)", n_blocks);
    if (block_size != 16 && block_size != 32)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "kv cache: block size must be 16 or 32 (got %d)", block_size);
    p->refcount = calloc((size_t)n_blocks, sizeof *p->refcount);
    p->free_list = malloc((size_t)n_blocks * sizeof *p->free_list);
    if (!p->refcount || !p->free_list) {
        kv_pool_free(p);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "kv cache: block pool of %d blocks", n_blocks);
    }
    p->n_blocks = n_blocks;
    p->block_size = block_size;
    /* Lowest block ids on top of the stack, so a fresh pool hands out 0, 1, 2... */
    for (int32_t i = 0; i < n_blocks; i++) p->free_list[i] = n_blocks - 1 - i;
    p->n_plain = p->n_free = n_blocks;
    return ENC_OK;
}

enc_status kv_pool_enable_prefix_caching(kv_pool *p)
{
    ENC_ASSERT(p->n_free == p->n_blocks && !p->prefix);
    p->prefix = kv_prefix__create(p->n_blocks, p->block_size);
    if (!p->prefix) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "kv cache: prefix cache of %d blocks", p->n_blocks);
    return ENC_OK;
}

void kv_pool_free(kv_pool *p)
{
    free(p->refcount);
    free(p->free_list);
    kv_prefix__destroy(p->prefix);
    memset(p, 0, sizeof *p);
}

int32_t kv_block_alloc(kv_pool *p)
{
    int32_t b;
    if (p->n_plain > 0) b = p->free_list[--p->n_plain];
    else if (p->prefix && p->prefix->n_lru > 0) b = kv_prefix__evict(p->prefix);
    else return -1;
    ENC_ASSERT(p->refcount[b] == 0);
    p->refcount[b] = 1;
    p->n_free--;
    return b;
}

void kv_block_release(kv_pool *p, int32_t block)
{
    ENC_ASSERT(block >= 0 && block < p->n_blocks && p->refcount[block] > 0);
    if (--p->refcount[block] > 0) return;
    p->n_free++;
    if (p->prefix && p->prefix->cached[block]) kv_prefix__park(p->prefix, block);
    else p->free_list[p->n_plain++] = block;
}

/* --- block tables -------------------------------------------------------- */

enc_status kv_block_table_init(kv_block_table *t, int32_t n_blocks_max)
{
    memset(t, 0, sizeof *t);
    t->n_blocks_max = n_blocks_max;
    t->blocks = malloc((size_t)n_blocks_max * sizeof *t->blocks);
    t->hashes = malloc((size_t)n_blocks_max * sizeof *t->hashes);
    if (!t->blocks || !t->hashes) {
        kv_block_table_free(t);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "kv cache: block table");
    }
    return ENC_OK;
}

void kv_block_table_free(kv_block_table *t)
{
    free(t->blocks);
    free(t->hashes);
    memset(t, 0, sizeof *t);
}

int32_t kv_blocks_needed(const kv_pool *p, const kv_block_table *t, int64_t n_tokens)
{
    int64_t need = (n_tokens + p->block_size - 1) / p->block_size;
    return need > t->n_blocks ? (int32_t)(need - t->n_blocks) : 0;
}

enc_status kv_block_table_reserve(kv_pool *p, kv_block_table *t, int64_t n_tokens)
{
    int32_t more = kv_blocks_needed(p, t, n_tokens);
    if (t->n_blocks + more > t->n_blocks_max)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "kv cache: %lld tokens exceed the %d-block table",
                        (long long)n_tokens, t->n_blocks_max);
    if (more > p->n_free) return ENC_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; i < more; i++) t->blocks[t->n_blocks++] = kv_block_alloc(p);
    return ENC_OK;
}

void kv_block_table_release(kv_pool *p, kv_block_table *t)
{
    for (int32_t i = t->n_blocks - 1; i >= 0; i--) kv_block_release(p, t->blocks[i]);
    t->n_blocks = 0;
    t->n_hashed = t->n_committed = 0;
}

/* --- device buffers ------------------------------------------------------ */

int64_t kv_cache_bytes_per_token(int64_t n_layers, int64_t kv_dim, enc_dtype dtype)
{
    return 2 * n_layers * (int64_t)enc_dtype_row_bytes(dtype, kv_dim);
}

enc_status kv_cache_init(kv_cache *c, backend *be, int64_t n_layers, int64_t kv_dim,
                         enc_dtype dtype, int32_t n_blocks, int32_t block_size)
{
    memset(c, 0, sizeof *c);
    int q8 = dtype == ENC_Q8_0 && enc_dtype_row_bytes(dtype, kv_dim) > 0;
    if (dtype != ENC_F32 && dtype != ENC_F16 && dtype != ENC_BF16 && !q8)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT,
                        "kv cache: dtype %s is not F32, F16, BF16 or Q8_0 (rows of whole 32-value "
                        "blocks)",
                        enc_dtype_name(dtype));
    c->be = be;
    c->dtype = dtype;
    ENC_TRY(kv_pool_init(&c->pool, n_blocks, block_size));
    c->n_layers = n_layers;
    c->kv_dim = kv_dim;
    c->k = calloc((size_t)n_layers, sizeof *c->k);
    c->v = calloc((size_t)n_layers, sizeof *c->v);
    if (!c->k || !c->v) {
        kv_cache_free(c);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "kv cache: layer table");
    }
    size_t bytes = (size_t)n_blocks * (size_t)block_size * enc_dtype_row_bytes(dtype, kv_dim);
    for (int64_t l = 0; l < n_layers; l++) {
        enc_status s = backend_buffer_alloc(be, bytes, "kv cache K", &c->k[l]);
        if (s == ENC_OK) s = backend_buffer_alloc(be, bytes, "kv cache V", &c->v[l]);
        if (s != ENC_OK) {
            kv_cache_free(c);
            return enc_fail_context(s, "kv cache: layer %lld (%d blocks of %d tokens)",
                                    (long long)l, n_blocks, block_size);
        }
    }
    return ENC_OK;
}

void kv_cache_free(kv_cache *c)
{
    for (int64_t l = 0; c->k && l < c->n_layers; l++) backend_buffer_free(c->be, c->k[l]);
    for (int64_t l = 0; c->v && l < c->n_layers; l++) backend_buffer_free(c->be, c->v[l]);
    free(c->k);
    free(c->v);
    kv_pool_free(&c->pool);
    memset(c, 0, sizeof *c);
}
