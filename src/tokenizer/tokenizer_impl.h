/* tokenizer_impl.h - the insides of a tokenizer, shared by the layer's files.
 *
 * Not an API: only the .c files of src/tokenizer include this. The layout:
 *
 *   tokens[id]    text (as in tokenizer.json) and bytes (what it decodes to),
 *                 both as offsets into one string pool `strs`
 *   vocab_index   open addressing: token text -> id           (lookups, merges)
 *   merges        open addressing: (left id, right id) -> (rank, merged id)
 *   byte_id[b]    id of the one-character token of byte b     (BPE start)
 *   added[]       added tokens, matched before anything else
 *   steps[]       the pre-tokenizer: Split/ByteLevel steps applied in order
 *   post_ids      the post-processor's special tokens around a sequence
 *   cache         piece bytes -> ids, plus the scratch buffers of one encode
 *                 (the only state that changes after loading)
 */
#ifndef ENC_TOKENIZER_TOKENIZER_IMPL_H
#define ENC_TOKENIZER_TOKENIZER_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

/* --- small helpers ------------------------------------------------------------- */

/* A growable byte buffer and a growable id array; grown with tok__reserve. */
typedef struct tok__bytes {
    char *data;
    size_t len, cap;
} tok__bytes;

typedef struct tok__ids {
    int32_t *data;
    size_t len, cap;
} tok__ids;

/* Make room for n more elements of size elem in *data (cap counts elements).
 * Returns ENC_ERR_OUT_OF_MEMORY (with a message) on failure. */
enc_status tok__reserve(void **data, size_t *cap, size_t len, size_t n,
                        size_t elem);
enc_status tok__bytes_append(tok__bytes *b, const void *p, size_t n);
enc_status tok__ids_push(tok__ids *a, int32_t id);

uint64_t tok__hash(const void *p, size_t n);

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if the bytes there are
 * not a complete valid sequence. */
size_t tok__utf8_seq_len(const unsigned char *s, size_t n);

/* Offset of the first invalid byte of s[0..n), or n when all is valid. */
size_t tok__utf8_check(const unsigned char *s, size_t n);

/* --- the vocabulary -------------------------------------------------------------- */

enum tok__kind {
    TOK__HOLE = 0,    /* no token has this id */
    TOK__VOCAB = 1,   /* model.vocab */
    TOK__ADDED = 2,   /* added_tokens, not special */
    TOK__SPECIAL = 3, /* added_tokens with "special": true */
};

typedef struct tok__token {
    uint32_t text_off, text_len;   /* in strs */
    uint32_t bytes_off, bytes_len; /* in strs */
    uint8_t kind;                  /* enum tok__kind */
} tok__token;

typedef struct tok__added {
    uint32_t off, len; /* content in strs (NFC-normalized when normalized) */
    int32_t id;
    uint8_t normalized; /* matched in the normalized text, not the raw text */
    uint8_t lstrip;     /* swallows the whitespace on its left */
    uint8_t rstrip;     /* swallows the whitespace on its right */
} tok__added;

typedef struct tok__merge {
    uint64_t key; /* left id << 32 | right id; TOK__EMPTY_KEY when free */
    int32_t rank; /* index in model.merges: lower merges first */
    int32_t id;   /* the merged token */
} tok__merge;

#define TOK__EMPTY_KEY UINT64_MAX

/* --- the pre-tokenizer ------------------------------------------------------------- */

enum tok__step_kind { TOK__STEP_SPLIT, TOK__STEP_BYTELEVEL };

typedef struct tok__step {
    int kind;                /* enum tok__step_kind */
    pcre2_code *re;          /* the split pattern; NULL for ByteLevel w/o regex */
    int remove;              /* Split behavior "Removed" (else "Isolated") */
    int add_prefix_space;    /* ByteLevel: prepend ' ' to a piece lacking one */
} tok__step;

enum { TOK__MAX_STEPS = 8 };

/* Pieces: spans of one buffer. */
typedef struct tok__span {
    size_t off, len;
} tok__span;

typedef struct tok__pieces {
    tok__bytes text;
    tok__span *span;
    size_t n, cap;
} tok__pieces;

/* --- the encode cache and scratch (the mutable part) ---------------------------------- */

typedef struct tok__cache_entry {
    uint64_t hash;           /* 0 marks a free slot (real hashes are forced odd) */
    uint32_t key_off, key_len; /* piece bytes in keys */
    uint32_t ids_off, n_ids;   /* in ids */
} tok__cache_entry;

typedef struct tok__cache {
    tok__cache_entry *slot; /* [cap], allocated on first use */
    size_t cap, used;
    tok__bytes keys;
    tok__ids ids;
} tok__cache;

/* One BPE symbol: a token id in a doubly linked list over the piece. */
typedef struct tok__sym {
    int32_t id; /* -1 once merged into its left neighbour */
    int32_t prev, next;
} tok__sym;

typedef struct tok__scratch {
    int32_t *cps;       /* NFC: code points [n_cps_cap] */
    size_t n_cps_cap;
    tok__bytes norm;    /* NFC output */
    tok__bytes prefixed; /* a piece with the prefix space */
    tok__pieces pieces[2];
    tok__sym *sym;      /* BPE symbols [n_sym_cap] */
    size_t n_sym_cap;
    uint64_t *heap;     /* BPE candidate merges: rank << 32 | position */
    size_t n_heap_cap;
    tok__ids out;       /* ids of the encode in progress */
    const char *plain_base; /* the text of the encode in progress, and its byte ranges where */
    const size_t *plain;    /* added tokens are not matched: [2 * n_plain] begin, end */
    size_t n_plain;
    int gap_plain;      /* the gap being encoded overlaps one of them */
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack;
} tok__scratch;

/* --- the tokenizer ------------------------------------------------------------------ */

struct tokenizer {
    int32_t n_ids;
    tok__token *tokens; /* [n_ids] */
    tok__bytes strs;    /* every token text and bytes, each NUL-terminated */

    int32_t *vocab_index; /* [vocab_index_cap] ids, -1 free */
    size_t vocab_index_cap;

    tok__merge *merges; /* [merges_cap] */
    size_t merges_cap;
    int32_t byte_id[256]; /* -1 when the vocabulary lacks that byte */
    int32_t unk_id;       /* -1 when none */
    int ignore_merges;    /* a piece that is a token stays whole */

    tok__added *added; /* [n_added], longest first */
    size_t n_added;
    uint8_t added_first[2][256]; /* [normalized][first byte]: some token starts so */

    int nfc; /* normalizer NFC (else none) */
    tok__step steps[TOK__MAX_STEPS];
    size_t n_steps;

    int32_t eos_id, pad_id, bos_id;
    /* The post-processor's TemplateProcessing "single" template: the ids put
     * before sequence A, then those after it: [n_post_prefix + n_post_suffix],
     * malloc'd, NULL when both are empty. Applied by the caller, never by encode. */
    int32_t *post_ids;
    size_t n_post_prefix, n_post_suffix;
    int post_template;   /* a TemplateProcessing was read (at most one is allowed) */
    char *chat_template; /* NULL when the config has none */
    chat_template_family family;

    tok__cache cache;
    tok__scratch scratch;
};

/* --- between the layer's files ----------------------------------------------------- */

/* pretokenize.c */
extern const uint16_t tok__byte_to_cp[256]; /* GPT-2's bytes_to_unicode */
int tok__cp_to_byte(uint32_t cp);           /* the inverse, or -1 */
enc_status tok__regex_compile(const char *pattern, int literal,
                              const char *field, pcre2_code **out);
enc_status tok__pretokenize(tokenizer *t, const char *s, size_t n,
                            tok__pieces **out);
void tok__pieces_free(tok__pieces *p);

/* bpe.c */
enc_status tok__merges_insert(tokenizer *t, int32_t left, int32_t right,
                              int32_t rank, int32_t id);
enc_status tok__bpe_piece(tokenizer *t, const char *s, size_t n);
void tok__cache_free(tok__cache *c);

/* encode.c */
enc_status tok__nfc(tokenizer *t, const char *s, size_t n, tok__bytes *out);
void tok__scratch_free(tok__scratch *s);

/* json.c: format each element of the JSON array json as tojson does, each
 * preceded by the text before; *count says how many there were. */
enc_status tok__json_each(const char *json, const char *before, tok__bytes *out,
                          size_t *count);
/* Append Python's str() of the JSON value json[0..len) as json.loads gives
 * it: a string is its text, anything else its repr (True, None, 1.0,
 * ['a', {'b': 2}]). */
enc_status tok__json_py_str(const char *json, size_t len, tok__bytes *out);
/* The kind of the JSON value json[0..len) by its first character: '{', '[',
 * '"', 't', 'f', 'n', '0' for a number, 0 when empty (not validated). */
char tok__json_kind(const char *json, size_t len);
/* The members of the JSON object json[0..len), in order (repeated keys
 * too), or the items of the array (their keys NULL). */
typedef struct tok__json_member {
    char *key; /* decoded, NUL-terminated, malloc'd; NULL for an array's item */
    size_t key_len;
    const char *value; /* its JSON text, a span of the object's */
    size_t value_len;
} tok__json_member;
enc_status tok__json_members(const char *json, size_t len, tok__json_member **out, size_t *n);
void tok__json_members_free(tok__json_member *m, size_t n);
/* The index of key's member (its last, as Python's dict keeps), or -1. */
long tok__json_member_find(const tok__json_member *m, size_t n, const char *key);

/* tokenizer.c: the building blocks of a loader, shared by the tokenizer.json
 * loader and tokenizer_load_lists (lists.c). Messages name `where` / `field`. */
int32_t tok__lookup(const tokenizer *t, const char *text, size_t len);
tokenizer *tok__alloc(void); /* ids -1, everything else empty */
/* Make id the token text[0..len) of the given kind (its text and bytes). */
enc_status tok__set_token(tokenizer *t, int32_t id, const char *text, size_t len, uint8_t kind);
/* An added token (t->added has room for it); call tok__sort_added after the last. */
enc_status tok__add_added(tokenizer *t, int32_t id, const char *content, size_t len, int special,
                          int normalized, int lstrip, int rstrip, const char *where);
void tok__sort_added(tokenizer *t);
enc_status tok__build_index(tokenizer *t); /* after every token is set */
enc_status tok__merges_alloc(tokenizer *t, size_t n, const char *field);
/* The merge of rank `rank`, a + b; joined is scratch (caller frees its data). */
enc_status tok__add_merge(tokenizer *t, const char *a, size_t na, const char *b, size_t nb,
                          size_t rank, tok__bytes *joined, const char *field);
void tok__init_byte_ids(tokenizer *t); /* after the index is built */
enc_status tok__add_step(tokenizer *t, const char *where, tok__step **out);
enc_status tok__set_template(tokenizer *t, const char *text, size_t len);

#endif
