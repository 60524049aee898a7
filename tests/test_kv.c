/* test_kv.c - the paged KV cache's block pool and block tables.
 *
 * Checks: a fresh pool hands out distinct blocks; reserve is all or nothing;
 * kv_slot follows the table; and a seeded random walk of thousands of
 * reserve / release events against a shadow model never leaks, double-frees
 * or shares a block between two tables. Prefix caching: XXH64 against its
 * published test vectors; a match takes exactly the cached run of equal full
 * blocks (same tokens after the same prefix), shares it by reference count,
 * and leaves the blocks cached on the LRU when released; eviction takes plain
 * free blocks first, then the least recently freed cached block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kv/kv_cache.h"


static void test_reserve_all_or_nothing(void)
{
    kv_pool p;
    kv_block_table a, b;
    CHECK(kv_pool_init(&p, 5, 16) == ENC_OK);
    CHECK(kv_block_table_init(&a, 8) == ENC_OK);
    CHECK(kv_block_table_init(&b, 8) == ENC_OK);
    CHECK(kv_block_table_reserve(&p, &a, 33) == ENC_OK); /* 3 blocks */
    CHECK(a.n_blocks == 3 && p.n_free == 2);
    CHECK(kv_block_table_reserve(&p, &a, 48) == ENC_OK); /* still 3 */
    CHECK(a.n_blocks == 3);
    CHECK(kv_block_table_reserve(&p, &b, 49) == ENC_ERR_OUT_OF_MEMORY); /* needs 4, 2 free */
    CHECK(b.n_blocks == 0 && p.n_free == 2);                          /* nothing taken */
    CHECK(kv_block_table_reserve(&p, &b, 32) == ENC_OK);
    CHECK(p.n_free == 0);
    /* slot = block * B + offset, through the table */
    CHECK(kv_slot(&p, &a, 0) == a.blocks[0] * 16);
    CHECK(kv_slot(&p, &a, 37) == a.blocks[2] * 16 + 5);
    kv_block_table_release(&p, &a);
    kv_block_table_release(&p, &b);
    CHECK(p.n_free == 5);
    CHECK(kv_block_table_reserve(&p, &a, 9 * 16) == ENC_ERR_INVALID_ARGUMENT); /* wider than the table */
    kv_block_table_free(&a);
    kv_block_table_free(&b);
    kv_pool_free(&p);
}

static void test_bad_pool(void)
{
    kv_pool p;
    CHECK(kv_pool_init(&p, 0, 16) == ENC_ERR_INVALID_ARGUMENT);
    CHECK(kv_pool_init(&p, 4, 8) == ENC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(enc_last_error(), "16 or 32") != NULL);
}

static void test_xxh64(void)
{
    /* the reference implementation's values (xxhsum; python-xxhash's README) */
    CHECK(kv_xxh64("", 0, 0) == 0xEF46DB3751D8E999ull);
    CHECK(kv_xxh64("abc", 3, 0) == 0x44BC2CF5AD770999ull);
    const char *s = "Nobody inspects the spammish repetition";
    CHECK(kv_xxh64(s, strlen(s), 0) == 0xFBCEA83C8A378BF1ull);
    int32_t a[16] = {1, 2, 3}, b[16] = {1, 2, 4};
    CHECK(kv_block_hash(KV_HASH_ROOT, a, 16) != kv_block_hash(KV_HASH_ROOT, b, 16));
    CHECK(kv_block_hash(KV_HASH_ROOT, a, 16) != kv_block_hash(KV_HASH_ROOT + 1, a, 16));
}

static void fill_tokens(int32_t *t, int n, int seed)
{
    for (int i = 0; i < n; i++) t[i] = seed * 1000 + i;
}

static void test_prefix_match(void)
{
    kv_pool p;
    kv_block_table a, b, c;
    int32_t ta[64], tb[64], tc[64];
    CHECK(kv_pool_init(&p, 8, 16) == ENC_OK && kv_pool_enable_prefix_caching(&p) == ENC_OK);
    CHECK(kv_block_table_init(&a, 8) == ENC_OK && kv_block_table_init(&b, 8) == ENC_OK);
    CHECK(kv_block_table_init(&c, 8) == ENC_OK);
    fill_tokens(ta, 64, 1);
    memcpy(tb, ta, sizeof tb);
    tb[40] = -5; /* b equals a in blocks 0 and 1, differs in block 2 */
    /* a computes 50 tokens: blocks 0..2 full and cached, block 3 partial */
    CHECK(kv_prefix_match(&p, &a, ta, 3) == 0);
    CHECK(kv_block_table_reserve(&p, &a, 50) == ENC_OK && a.n_blocks == 4);
    kv_prefix_commit(&p, &a, ta, 50);
    CHECK(p.prefix->n_cached == 3 && a.n_committed == 3);
    CHECK(kv_pool_validate(&p) == ENC_OK);
    /* b matches blocks 0 and 1 only, sharing them */
    CHECK(kv_prefix_match(&p, &b, tb, 3) == 2);
    CHECK(b.blocks[0] == a.blocks[0] && b.blocks[1] == a.blocks[1]);
    CHECK(p.refcount[a.blocks[0]] == 2 && p.n_free == 4);
    /* the same block 2 tokens after a different block 0: no match at all */
    memcpy(tc, ta, sizeof tc);
    tc[0] = -1;
    CHECK(kv_prefix_match(&p, &c, tc, 3) == 0);
    /* a match never exceeds n_blocks_max */
    kv_block_table_release(&p, &b);
    CHECK(kv_prefix_match(&p, &b, ta, 1) == 1);
    kv_block_table_release(&p, &b);
    /* a released: its cached blocks wait on the LRU with their hashes, the
     * partial one is plain free */
    int32_t a0 = a.blocks[0], a2 = a.blocks[2];
    kv_block_table_release(&p, &a);
    CHECK(p.n_free == 8 && p.prefix->n_lru == 3 && p.n_plain == 5);
    CHECK(kv_pool_validate(&p) == ENC_OK);
    /* matched again from the LRU */
    CHECK(kv_prefix_match(&p, &a, ta, 4) == 3 && a.blocks[0] == a0 && p.n_free == 5);
    kv_block_table_release(&p, &a);
    /* a fresh table takes the 5 plain blocks first, then evicts the least
     * recently freed cached block: a's last (released first) */
    CHECK(kv_block_table_reserve(&p, &c, 5 * 16) == ENC_OK && p.prefix->n_cached == 3);
    CHECK(kv_block_table_reserve(&p, &c, 6 * 16) == ENC_OK);
    CHECK(c.blocks[5] == a2 && p.prefix->n_cached == 2 && p.prefix->n_evictions == 1);
    CHECK(kv_prefix_match(&p, &a, ta, 3) == 2); /* blocks 0 and 1 are still there */
    CHECK(kv_pool_validate(&p) == ENC_OK);
    /* a block computed again beside a cached equal one stays plain */
    kv_block_table_release(&p, &c);
    CHECK(kv_block_table_reserve(&p, &b, 32) == ENC_OK);
    kv_prefix_commit(&p, &b, ta, 32);
    CHECK(p.prefix->n_cached == 2 && b.n_committed == 2);
    kv_block_table_release(&p, &b);
    kv_block_table_release(&p, &a);
    CHECK(p.n_free == 8 && kv_pool_validate(&p) == ENC_OK);
    kv_block_table_free(&a);
    kv_block_table_free(&b);
    kv_block_table_free(&c);
    kv_pool_free(&p);
}

enum { N_TABLES = 12, N_BLOCKS = 40, WIDTH = 16 };

/* Every block is owned by at most one table and free iff owned by none. */
static void check_ownership(const kv_pool *p, kv_block_table *t)
{
    int owner[N_BLOCKS];
    for (int i = 0; i < N_BLOCKS; i++) owner[i] = -1;
    int used = 0;
    for (int s = 0; s < N_TABLES; s++)
        for (int i = 0; i < t[s].n_blocks; i++) {
            int b = t[s].blocks[i];
            CHECK(b >= 0 && b < N_BLOCKS && owner[b] == -1);
            if (b >= 0 && b < N_BLOCKS) owner[b] = s;
            used++;
        }
    CHECK(used + p->n_free == N_BLOCKS);
    for (int i = 0; i < N_BLOCKS; i++) CHECK((owner[i] >= 0) == (p->refcount[i] == 1));
}

static void test_random_walk(void)
{
    kv_pool p;
    kv_block_table t[N_TABLES];
    int64_t len[N_TABLES] = {0};
    CHECK(kv_pool_init(&p, N_BLOCKS, 16) == ENC_OK);
    for (int s = 0; s < N_TABLES; s++) CHECK(kv_block_table_init(&t[s], WIDTH) == ENC_OK);
    uint64_t x = 12345;
    for (int step = 0; step < 20000; step++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int s = (int)((x >> 33) % N_TABLES);
        if ((x >> 20) % 7 == 0) {
            kv_block_table_release(&p, &t[s]);
            len[s] = 0;
        } else {
            int64_t want = len[s] + 1 + (int64_t)((x >> 40) % 40);
            if (want > WIDTH * 16) want = WIDTH * 16;
            int32_t before_free = p.n_free, before_blocks = t[s].n_blocks;
            enc_status st = kv_block_table_reserve(&p, &t[s], want);
            if (st == ENC_OK) {
                len[s] = want;
                CHECK(t[s].n_blocks == (want + 15) / 16);
            } else {
                CHECK(st == ENC_ERR_OUT_OF_MEMORY);
                CHECK(p.n_free == before_free && t[s].n_blocks == before_blocks);
            }
        }
        if (step % 97 == 0) check_ownership(&p, t);
    }
    for (int s = 0; s < N_TABLES; s++) {
        kv_block_table_release(&p, &t[s]);
        kv_block_table_free(&t[s]);
    }
    CHECK(p.n_free == N_BLOCKS);
    kv_pool_free(&p);
}

int main(void)
{
    test_reserve_all_or_nothing();
    test_bad_pool();
    test_random_walk();
    test_xxh64();
    test_prefix_match();
    if (check_failures) fprintf(stderr, "test_kv: %d check(s) failed\n", check_failures);
    return check_failures != 0;
}
