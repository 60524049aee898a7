/* bpe.c - byte-pair merging of one piece, and the piece -> ids cache.
 *
 * A piece starts as one symbol per byte (the id of that byte's token) in a
 * doubly linked list. Every adjacent pair that has a merge goes into a
 * min-heap keyed by (rank, position); popping the lowest rank merges it (the
 * leftmost first among equal ranks) and pushes the two pairs it forms with its
 * neighbours. A popped pair that no longer exists is skipped. That is Hugging
 * Face's Word::merge_all, O(n log n) per piece.
 *
 * The cache maps the bytes of short pieces to their ids: ordinary text
 * repeats its words, so most pieces are a hash lookup. It lives in the
 * tokenizer (see the threading note in tokenizer.h) and is dropped whole when
 * it fills up. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_impl.h"

enum {
    TOK__CACHE_SLOTS = 1 << 17,        /* cleared when half full */
    TOK__CACHE_MAX_PIECE = 128,        /* longer pieces are not cached */
    TOK__CACHE_MAX_BYTES = 16 << 20,   /* cleared when keys + ids reach this */
};

/* --- the merge table ------------------------------------------------------------- */

static uint64_t tok__pair_key(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

static size_t tok__pair_slot(uint64_t key, size_t mask)
{
    uint64_t h = key * 0x9E3779B97F4A7C15u;
    return (size_t)(h ^ h >> 29) & mask;
}

/* A later merge of the same pair replaces the earlier one, as a map does in
 * the reference implementations. */
enc_status tok__merges_insert(tokenizer *t, int32_t left, int32_t right,
                              int32_t rank, int32_t id)
{
    uint64_t key = tok__pair_key(left, right);
    size_t mask = t->merges_cap - 1;
    for (size_t i = tok__pair_slot(key, mask);; i = (i + 1) & mask) {
        tok__merge *m = &t->merges[i];
        if (m->key == key || m->key == TOK__EMPTY_KEY) {
            m->key = key;
            m->rank = rank;
            m->id = id;
            return ENC_OK;
        }
    }
}

static const tok__merge *tok__merge_find(const tokenizer *t, int32_t left, int32_t right)
{
    uint64_t key = tok__pair_key(left, right);
    size_t mask = t->merges_cap - 1;
    for (size_t i = tok__pair_slot(key, mask);; i = (i + 1) & mask) {
        const tok__merge *m = &t->merges[i];
        if (m->key == key) return m;
        if (m->key == TOK__EMPTY_KEY) return NULL;
    }
}

/* --- the heap of candidate merges: rank << 32 | position, smallest first ----------- */

static void tok__heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static uint64_t tok__heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* Push the pair starting at symbol pos, if it has a merge. */
static void tok__push_pair(const tokenizer *t, const tok__sym *sym, uint64_t *heap,
                           size_t *n_heap, int32_t pos)
{
    int32_t next = sym[pos].next;
    if (next < 0) return;
    const tok__merge *m = tok__merge_find(t, sym[pos].id, sym[next].id);
    if (m) tok__heap_push(heap, n_heap, (uint64_t)m->rank << 32 | (uint32_t)pos);
}

/* --- merging one piece ---------------------------------------------------------------- */

static enc_status tok__bpe_setup(tokenizer *t, const unsigned char *s, size_t n)
{
    tok__scratch *sc = &t->scratch;
    if (n > INT32_MAX / 4)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "tokenizer: a %zu-byte piece is too long", n);
    ENC_TRY(tok__reserve((void **)&sc->sym, &sc->n_sym_cap, 0, n, sizeof *sc->sym));
    ENC_TRY(tok__reserve((void **)&sc->heap, &sc->n_heap_cap, 0, 3 * n, sizeof *sc->heap));
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[s[i]];
        if (id < 0)
            return enc_fail(ENC_ERR_UNSUPPORTED, "tokenizer: byte 0x%02X has no token "
                            "in the vocabulary", s[i]);
        sc->sym[i].id = id;
        sc->sym[i].prev = (int32_t)i - 1;
        sc->sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    return ENC_OK;
}

/* ignore_merges: a piece that is itself a token is not merged. */
static int32_t tok__whole_piece(const tokenizer *t, const unsigned char *s, size_t n,
                                tok__bytes *tmp)
{
    tmp->len = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t cp = tok__byte_to_cp[s[i]];
        char u[2] = {(char)cp, 0};
        size_t k = 1;
        if (cp >= 0x80) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), k = 2;
        if (tok__bytes_append(tmp, u, k) != ENC_OK) return -1;
    }
    return tok__lookup(t, tmp->data, tmp->len);
}

/* Merge s[0..n) and append its ids to the scratch output. */
static enc_status tok__bpe_merge(tokenizer *t, const unsigned char *s, size_t n)
{
    tok__scratch *sc = &t->scratch;
    if (t->ignore_merges) {
        int32_t id = tok__whole_piece(t, s, n, &sc->prefixed);
        if (id >= 0) return tok__ids_push(&sc->out, id);
    }
    ENC_TRY(tok__bpe_setup(t, s, n));
    tok__sym *sym = sc->sym;
    uint64_t *heap = sc->heap;
    size_t n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++) tok__push_pair(t, sym, heap, &n_heap, (int32_t)i);
    while (n_heap > 0) {
        uint64_t top = tok__heap_pop(heap, &n_heap);
        int32_t pos = (int32_t)(uint32_t)top, next = sym[pos].next;
        if (sym[pos].id < 0 || next < 0) continue; /* gone since it was pushed */
        const tok__merge *m = tok__merge_find(t, sym[pos].id, sym[next].id);
        if (!m || m->rank != (int32_t)(top >> 32)) continue; /* pair changed */
        sym[pos].id = m->id;
        sym[next].id = -1;
        sym[pos].next = sym[next].next;
        if (sym[pos].next >= 0) sym[sym[pos].next].prev = pos;
        if (sym[pos].prev >= 0) tok__push_pair(t, sym, heap, &n_heap, sym[pos].prev);
        tok__push_pair(t, sym, heap, &n_heap, pos);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next) ENC_TRY(tok__ids_push(&sc->out, sym[i].id));
    return ENC_OK;
}

/* --- the cache ------------------------------------------------------------------------- */

static void tok__cache_clear(tok__cache *c)
{
    memset(c->slot, 0, c->cap * sizeof *c->slot);
    c->used = 0;
    c->keys.len = 0;
    c->ids.len = 0;
}

static enc_status tok__cache_init(tok__cache *c)
{
    if (c->slot) return ENC_OK;
    c->slot = calloc(TOK__CACHE_SLOTS, sizeof *c->slot);
    if (!c->slot) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer: encode cache");
    c->cap = TOK__CACHE_SLOTS;
    return ENC_OK;
}

/* The slot of s[0..n) with hash h: its entry, or the free slot to fill. */
static tok__cache_entry *tok__cache_slot(tok__cache *c, uint64_t h, const char *s, size_t n)
{
    size_t mask = c->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        tok__cache_entry *e = &c->slot[i];
        if (e->hash == 0) return e;
        if (e->hash == h && e->key_len == n && memcmp(c->keys.data + e->key_off, s, n) == 0)
            return e;
    }
}

static enc_status tok__cache_put(tok__cache *c, tok__cache_entry *e, uint64_t h,
                                 const char *s, size_t n, const int32_t *ids, size_t n_ids)
{
    e->key_off = (uint32_t)c->keys.len;
    e->key_len = (uint32_t)n;
    e->ids_off = (uint32_t)c->ids.len;
    e->n_ids = (uint32_t)n_ids;
    ENC_TRY(tok__bytes_append(&c->keys, s, n));
    ENC_TRY(tok__reserve((void **)&c->ids.data, &c->ids.cap, c->ids.len, n_ids,
                         sizeof *c->ids.data));
    memcpy(c->ids.data + c->ids.len, ids, n_ids * sizeof *ids);
    c->ids.len += n_ids;
    e->hash = h; /* last: a failed put leaves the slot free */
    c->used++;
    return ENC_OK;
}

enc_status tok__bpe_piece(tokenizer *t, const char *s, size_t n)
{
    tok__cache *c = &t->cache;
    tok__ids *out = &t->scratch.out;
    if (n > TOK__CACHE_MAX_PIECE) return tok__bpe_merge(t, (const unsigned char *)s, n);
    ENC_TRY(tok__cache_init(c));
    if (2 * c->used >= c->cap || c->keys.len + 4 * c->ids.len >= TOK__CACHE_MAX_BYTES)
        tok__cache_clear(c);
    uint64_t h = tok__hash(s, n) | 1;
    tok__cache_entry *e = tok__cache_slot(c, h, s, n);
    if (e->hash) {
        ENC_TRY(tok__reserve((void **)&out->data, &out->cap, out->len, e->n_ids,
                             sizeof *out->data));
        memcpy(out->data + out->len, c->ids.data + e->ids_off, e->n_ids * sizeof *out->data);
        out->len += e->n_ids;
        return ENC_OK;
    }
    size_t start = out->len;
    ENC_TRY(tok__bpe_merge(t, (const unsigned char *)s, n));
    return tok__cache_put(c, e, h, s, n, out->data + start, out->len - start);
}

void tok__cache_free(tok__cache *c)
{
    free(c->slot);
    free(c->keys.data);
    free(c->ids.data);
    memset(c, 0, sizeof *c);
}
