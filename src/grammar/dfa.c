/* dfa.c - the lazily built states of a grammar (see dfa.h).
 *
 * A stack node (pos, parent): pos indexes grammar.elems, parent is the node
 * to return to when the alternative at pos ends; node 0 is the empty stack
 * (the text is complete). The closure of a node expands REFs and pops ENDs
 * until every stack's top is a BYTES element or the stack is empty:
 *
 *   closure(pos: REF r, parent) = U closure(alt_start(a), ret) for a in r,
 *       ret = parent when pos+1 is END (a tail call), else (pos+1, parent)
 *   closure(pos: END, parent)   = closure(parent)
 *   closure(pos: BYTES, parent) = {node}
 *
 * Left recursion was refused at compile time, so a closure terminates. */
#include <stdlib.h>
#include <string.h>

#include "grammar/dfa.h"

#define GD_EMPTY 0u
#define GD_MAX_NODES (1u << 24)
#define GD_MAX_SETS (1u << 22)
/* bytes of cached masks per grammar (19 KB each at 151,936 ids); the oldest
 * is dropped beyond */
#define GD_MASK_BUDGET (16u << 20)
#define GD_MAX_MASKS 4096
#define GD_UNKNOWN (-3)

typedef struct gd_node {
    uint32_t pos, parent;
} gd_node;

typedef struct gd_set {
    uint32_t off, n; /* items[off .. off+n): sorted node ids */
    uint32_t hash;
    int32_t *next;   /* [256] transitions (GD_UNKNOWN until computed), NULL until the first */
    uint32_t *mask;  /* cached token mask, or NULL */
    uint8_t can_end; /* the empty stack is in the set */
} gd_set;

struct grammar_dfa {
    const grammar *g;
    const grammar_vocab *v;
    gd_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *node_tab; /* open addressing: node id + 1, 0 = free */
    uint32_t node_tab_cap;
    uint32_t *visit; /* [cap_nodes]: the closure generation that last saw the node */
    uint32_t gen;
    uint32_t *items;
    size_t n_items, cap_items;
    gd_set *sets;
    uint32_t n_sets, cap_sets;
    uint32_t *set_tab; /* open addressing: set id + 1 */
    uint32_t set_tab_cap;
    uint32_t *scratch; /* the closure's output */
    uint32_t n_scratch, cap_scratch;
    int32_t start;
    int32_t *walk;                   /* [max_depth + 1] states along the trie path */
    int32_t mask_ring[GD_MAX_MASKS]; /* the sets holding a mask, oldest first */
    uint32_t n_masks, ring_head;
    uint32_t max_masks; /* GD_MASK_BUDGET / the mask size, at most GD_MAX_MASKS */
    int failed;
};

static uint32_t gd__mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

static int gd__fail(grammar_dfa *d, const char *what)
{
    d->failed = 1;
    enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar matcher: %s", what);
    return -1;
}

/* --- nodes -------------------------------------------------------------------- */

static int gd__node_tab_grow(grammar_dfa *d)
{
    uint32_t cap = d->node_tab_cap ? d->node_tab_cap * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return gd__fail(d, "out of memory");
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        uint32_t h = gd__mix(d->nodes[i].pos * 0x9E3779B1u ^ d->nodes[i].parent) & (cap - 1);
        while (t[h])
            h = (h + 1) & (cap - 1);
        t[h] = i + 1;
    }
    free(d->node_tab);
    d->node_tab = t;
    d->node_tab_cap = cap;
    return 0;
}

/* The id of node (pos, parent), made when new; UINT32_MAX on failure. */
static uint32_t gd__node(grammar_dfa *d, uint32_t pos, uint32_t parent)
{
    if ((d->n_nodes + 1) * 2 > d->node_tab_cap && gd__node_tab_grow(d)) return UINT32_MAX;
    uint32_t mask = d->node_tab_cap - 1, h = gd__mix(pos * 0x9E3779B1u ^ parent) & mask;
    for (; d->node_tab[h]; h = (h + 1) & mask) {
        const gd_node *n = &d->nodes[d->node_tab[h] - 1];
        if (n->pos == pos && n->parent == parent) return d->node_tab[h] - 1;
    }
    if (d->n_nodes == d->cap_nodes) {
        if (d->cap_nodes >= GD_MAX_NODES)
            return gd__fail(d, "more than 2^24 stack nodes"), UINT32_MAX;
        uint32_t cap = d->cap_nodes * 2;
        gd_node *nn = realloc(d->nodes, cap * sizeof *nn);
        uint32_t *nv = nn ? realloc(d->visit, cap * sizeof *nv) : NULL;
        if (nn) d->nodes = nn;
        if (!nv) return gd__fail(d, "out of memory"), UINT32_MAX;
        memset(nv + d->cap_nodes, 0, (cap - d->cap_nodes) * sizeof *nv);
        d->visit = nv;
        d->cap_nodes = cap;
    }
    d->nodes[d->n_nodes].pos = pos;
    d->nodes[d->n_nodes].parent = parent;
    d->node_tab[h] = d->n_nodes + 1;
    return d->n_nodes++;
}

static int gd__emit(grammar_dfa *d, uint32_t node)
{
    if (d->n_scratch == d->cap_scratch) {
        uint32_t cap = d->cap_scratch ? d->cap_scratch * 2 : 64;
        uint32_t *s = realloc(d->scratch, cap * sizeof *s);
        if (!s) return gd__fail(d, "out of memory");
        d->scratch = s;
        d->cap_scratch = cap;
    }
    d->scratch[d->n_scratch++] = node;
    return 0;
}

static int gd__closure(grammar_dfa *d, uint32_t node)
{
    if (node == UINT32_MAX) return -1;
    if (d->visit[node] == d->gen) return 0;
    d->visit[node] = d->gen;
    if (node == GD_EMPTY) return gd__emit(d, node);
    uint32_t pos = d->nodes[node].pos, parent = d->nodes[node].parent;
    uint32_t e = d->g->elems[pos];
    if (GR_KIND(e) == GR_BYTES) return gd__emit(d, node);
    if (GR_KIND(e) == GR_END) return gd__closure(d, parent);
    uint32_t r = GR_ARG(e);
    uint32_t ret = GR_KIND(d->g->elems[pos + 1]) == GR_END ? parent : gd__node(d, pos + 1, parent);
    if (ret == UINT32_MAX) return -1;
    for (uint32_t a = d->g->rule_alt[r]; a < d->g->rule_alt[r + 1]; a++)
        if (gd__closure(d, gd__node(d, d->g->alts[a], ret))) return -1;
    return 0;
}

/* --- sets ----------------------------------------------------------------------- */

static uint32_t gd__set_hash(const uint32_t *items, uint32_t n)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++)
        h = gd__mix(h ^ items[i]) + 0x9E3779B9u;
    return h;
}

static int gd__set_tab_grow(grammar_dfa *d)
{
    uint32_t cap = d->set_tab_cap ? d->set_tab_cap * 2 : 256;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return gd__fail(d, "out of memory");
    for (uint32_t i = 0; i < d->n_sets; i++) {
        uint32_t h = d->sets[i].hash & (cap - 1);
        while (t[h])
            h = (h + 1) & (cap - 1);
        t[h] = i + 1;
    }
    free(d->set_tab);
    d->set_tab = t;
    d->set_tab_cap = cap;
    return 0;
}

static int gd__u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The scratch list as an interned set: its id, GD_DEAD when empty. */
static int32_t gd__intern_scratch(grammar_dfa *d)
{
    if (d->n_scratch == 0) return GD_DEAD;
    qsort(d->scratch, d->n_scratch, sizeof *d->scratch, gd__u32_cmp);
    const uint32_t *it = d->scratch;
    uint32_t n = d->n_scratch, hash = gd__set_hash(it, n);
    if ((d->n_sets + 1) * 2 > d->set_tab_cap && gd__set_tab_grow(d)) return GD_ERROR;
    uint32_t mask = d->set_tab_cap - 1, h = hash & mask;
    for (; d->set_tab[h]; h = (h + 1) & mask) {
        const gd_set *s = &d->sets[d->set_tab[h] - 1];
        if (s->hash == hash && s->n == n && !memcmp(d->items + s->off, it, n * sizeof *it))
            return (int32_t)(d->set_tab[h] - 1);
    }
    if (d->n_sets >= GD_MAX_SETS) return gd__fail(d, "more than 2^22 states"), GD_ERROR;
    if (d->n_sets == d->cap_sets) {
        uint32_t cap = d->cap_sets ? d->cap_sets * 2 : 64;
        gd_set *ns = realloc(d->sets, cap * sizeof *ns);
        if (!ns) return gd__fail(d, "out of memory"), GD_ERROR;
        d->sets = ns;
        d->cap_sets = cap;
    }
    if (d->n_items + n > d->cap_items) {
        size_t cap = d->cap_items ? d->cap_items * 2 : 1024;
        while (cap < d->n_items + n)
            cap *= 2;
        uint32_t *ni = realloc(d->items, cap * sizeof *ni);
        if (!ni) return gd__fail(d, "out of memory"), GD_ERROR;
        d->items = ni;
        d->cap_items = cap;
    }
    memcpy(d->items + d->n_items, it, n * sizeof *it);
    gd_set *s = &d->sets[d->n_sets];
    memset(s, 0, sizeof *s);
    s->off = (uint32_t)d->n_items;
    s->n = n;
    s->hash = hash;
    s->can_end = it[0] == GD_EMPTY;
    d->n_items += n;
    d->set_tab[h] = d->n_sets + 1;
    return (int32_t)d->n_sets++;
}

static void gd__begin(grammar_dfa *d)
{
    d->n_scratch = 0;
    if (++d->gen == 0) { /* wrapped: forget every mark */
        memset(d->visit, 0, d->cap_nodes * sizeof *d->visit);
        d->gen = 1;
    }
}

static int32_t gd__transition(grammar_dfa *d, int32_t state, uint8_t byte)
{
    gd__begin(d);
    gd_set *s = &d->sets[state];
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t node = d->items[s->off + i];
        if (node == GD_EMPTY) continue;
        uint32_t pos = d->nodes[node].pos;
        if (!grammar_byteset_has(&d->g->sets[GR_ARG(d->g->elems[pos])], byte)) continue;
        if (gd__closure(d, gd__node(d, pos + 1, d->nodes[node].parent))) return GD_ERROR;
        s = &d->sets[state];
    }
    return gd__intern_scratch(d);
}

int32_t grammar_dfa_step(grammar_dfa *d, int32_t state, uint8_t byte)
{
    if (state < 0) return state;
    gd_set *s = &d->sets[state];
    if (s->next && s->next[byte] != GD_UNKNOWN) return s->next[byte];
    if (!s->next) {
        s->next = malloc(256 * sizeof *s->next);
        if (!s->next) return gd__fail(d, "out of memory"), GD_ERROR;
        for (int i = 0; i < 256; i++)
            s->next[i] = GD_UNKNOWN;
    }
    int32_t t = gd__transition(d, state, byte);
    if (t != GD_ERROR) d->sets[state].next[byte] = t;
    return t;
}

/* --- masks ----------------------------------------------------------------------- */

static void gd__walk(grammar_dfa *d, int32_t state, uint32_t *mask)
{
    const grammar_vocab *v = d->v;
    int32_t *walk = d->walk;
    walk[0] = state;
    for (uint32_t i = 1; i < v->n_nodes;) {
        int32_t from = walk[v->depth[i] - 1];
        const gd_set *s = &d->sets[from];
        int32_t t = s->next && s->next[v->byte[i]] != GD_UNKNOWN
                        ? s->next[v->byte[i]]
                        : grammar_dfa_step(d, from, v->byte[i]);
        if (t < 0) {
            if (t == GD_ERROR) return;
            i = v->subtree_end[i];
            continue;
        }
        walk[v->depth[i]] = t;
        for (int32_t k = v->tok_first[i]; k < v->tok_first[i + 1]; k++)
            mask[v->tok_ids[k] >> 5] |= 1u << (v->tok_ids[k] & 31);
        i++;
    }
}

const uint32_t *grammar_dfa_mask(grammar_dfa *d, int32_t state)
{
    if (d->sets[state].mask) return d->sets[state].mask;
    size_t words = ((size_t)d->v->n_vocab + 31) / 32;
    uint32_t *mask;
    if (d->n_masks == d->max_masks) { /* reuse the oldest */
        int32_t old = d->mask_ring[d->ring_head];
        mask = d->sets[old].mask;
        d->sets[old].mask = NULL;
        d->mask_ring[d->ring_head] = state;
        d->ring_head = (d->ring_head + 1) % d->max_masks;
    } else {
        mask = malloc(words * sizeof *mask);
        if (!mask) return gd__fail(d, "out of memory"), NULL;
        d->mask_ring[d->n_masks++] = state;
    }
    memset(mask, 0, words * sizeof *mask);
    d->failed = 0;
    gd__walk(d, state, mask);
    d->sets[state].mask = mask;
    if (d->failed) { /* a partial mask would allow too little: allow nothing, say why */
        memset(mask, 0, words * sizeof *mask);
        return NULL;
    }
    return mask;
}

/* --- the whole ---------------------------------------------------------------------- */

enc_status grammar_dfa_new(const grammar *g, const grammar_vocab *v, grammar_dfa **out)
{
    *out = NULL;
    grammar_dfa *d = calloc(1, sizeof *d);
    if (!d) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar matcher: out of memory");
    d->g = g;
    d->v = v;
    size_t mask_bytes = ((size_t)v->n_vocab + 31) / 32 * 4;
    d->max_masks = GD_MASK_BUDGET / mask_bytes < GD_MAX_MASKS
                       ? (uint32_t)(GD_MASK_BUDGET / mask_bytes)
                       : GD_MAX_MASKS;
    if (d->max_masks < 1) d->max_masks = 1;
    d->cap_nodes = 1024;
    d->nodes = malloc(d->cap_nodes * sizeof *d->nodes);
    d->visit = calloc(d->cap_nodes, sizeof *d->visit);
    d->walk = malloc(((size_t)v->max_depth + 1) * sizeof *d->walk);
    if (!d->nodes || !d->visit || !d->walk) {
        grammar_dfa_free(d);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "grammar matcher: out of memory");
    }
    d->nodes[0].pos = UINT32_MAX; /* the empty stack */
    d->nodes[0].parent = UINT32_MAX;
    d->n_nodes = 1;
    if (gd__node_tab_grow(d)) {
        grammar_dfa_free(d);
        return ENC_ERR_OUT_OF_MEMORY;
    }
    gd__begin(d);
    uint32_t r = g->root;
    int bad = 0;
    for (uint32_t a = g->rule_alt[r]; a < g->rule_alt[r + 1] && !bad; a++)
        bad = gd__closure(d, gd__node(d, g->alts[a], GD_EMPTY));
    d->start = bad ? GD_ERROR : gd__intern_scratch(d);
    if (d->start < 0) {
        grammar_dfa_free(d);
        return bad || d->start == GD_ERROR
                   ? ENC_ERR_OUT_OF_MEMORY
                   : enc_fail(ENC_ERR_INVALID_ARGUMENT, "grammar: the root matches nothing");
    }
    *out = d;
    return ENC_OK;
}

void grammar_dfa_free(grammar_dfa *d)
{
    if (!d) return;
    for (uint32_t i = 0; i < d->n_sets; i++) {
        free(d->sets[i].next);
        free(d->sets[i].mask);
    }
    free(d->sets);
    free(d->set_tab);
    free(d->items);
    free(d->nodes);
    free(d->node_tab);
    free(d->visit);
    free(d->scratch);
    free(d->walk);
    free(d);
}

const grammar_vocab *grammar_dfa_vocab(const grammar_dfa *d)
{
    return d->v;
}
int32_t grammar_dfa_start(grammar_dfa *d)
{
    return d->start;
}
int grammar_dfa_can_end(const grammar_dfa *d, int32_t state)
{
    return d->sets[state].can_end;
}
int grammar_dfa_is_final(const grammar_dfa *d, int32_t state)
{
    return d->sets[state].n == 1 && d->sets[state].can_end;
}
