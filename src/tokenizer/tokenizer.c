/* tokenizer.c - loading tokenizer.json and tokenizer_config.json; lookups.
 *
 * The loader reads the Hugging Face format into the tables of
 * tokenizer_impl.h and refuses, naming the field, anything whose meaning it
 * does not implement: an encoding that silently differs from the reference is
 * worse than no encoding. Messages from the tok__load_* functions name the
 * field ("model.merges[3]: ..."); the public entry points prefix the file. */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json_whole.h"
#include "base/mapfile.h"
#include "tokenizer/tokenizer_impl.h"

enum { TOK__MAX_ID = 1 << 24 }; /* ids above this are refused, not allocated */

/* --- JSON helpers ------------------------------------------------------------ */

static const cJSON *tok__get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static int tok__absent(const cJSON *j) { return !j || cJSON_IsNull(j); }

/* obj.key as a boolean; dflt when absent or null. */
static enc_status tok__get_bool(const cJSON *obj, const char *key, int dflt,
                                const char *where, int *out)
{
    const cJSON *j = tok__get(obj, key);
    *out = dflt;
    if (tok__absent(j)) return ENC_OK;
    if (!cJSON_IsBool(j))
        return enc_fail(ENC_ERR_FORMAT, "%s.%s: expected true or false", where, key);
    *out = cJSON_IsTrue(j);
    return ENC_OK;
}

/* obj.key as a string; NULL when absent or null. */
static enc_status tok__get_str(const cJSON *obj, const char *key,
                               const char *where, const char **out)
{
    const cJSON *j = tok__get(obj, key);
    *out = NULL;
    if (tok__absent(j)) return ENC_OK;
    if (!cJSON_IsString(j))
        return enc_fail(ENC_ERR_FORMAT, "%s.%s: expected a string", where, key);
    *out = j->valuestring;
    return ENC_OK;
}

static enc_status tok__get_id(const cJSON *j, const char *what, int32_t *out)
{
    if (!cJSON_IsNumber(j)) return enc_fail(ENC_ERR_FORMAT, "%s: the id is not a number", what);
    double v = j->valuedouble;
    if (!(v >= 0 && v < TOK__MAX_ID)) /* also NaN and infinities */
        return enc_fail(ENC_ERR_FORMAT, "%s: id %g is out of range [0, %d)", what, v,
                        TOK__MAX_ID);
    if (v != (double)(int32_t)v)
        return enc_fail(ENC_ERR_FORMAT, "%s: id %g is not an integer", what, v);
    *out = (int32_t)v;
    return ENC_OK;
}

static enc_status tok__parse(const char *json, size_t len, cJSON **out)
{
    size_t at = 0;
    *out = json_parse_whole(json, len, &at);
    if (*out) return ENC_OK;
    return enc_fail(ENC_ERR_FORMAT, "not valid JSON, or more than one value (near byte %zu)", at);
}

/* --- the vocabulary ------------------------------------------------------------ */

/* What a token's text decodes to, as the ByteLevel decoder does it: every
 * character mapped back through bytes_to_unicode when all of them map (they
 * are all below U+0144, so 1 or 2 bytes long), else the text itself. dst has
 * room for len bytes; returns how many were written. */
static size_t tok__text_to_bytes(const char *text, size_t len, char *dst)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t k = tok__utf8_seq_len(s + i, len - i);
        uint32_t cp = k == 1 ? s[i] : k == 2 ? (s[i] & 0x1Fu) << 6 | (s[i + 1] & 0x3Fu) : 0x110000;
        int b = tok__cp_to_byte(cp);
        if (b < 0) {
            memcpy(dst, text, len);
            return len;
        }
        dst[n++] = (char)b;
        i += k;
    }
    return n;
}

/* Make id the token text[0..len): its text and its bytes go to the string
 * pool, each followed by a NUL. */
enc_status tok__set_token(tokenizer *t, int32_t id, const char *text, size_t len,
                          uint8_t kind)
{
    if (t->strs.len + 2 * len + 2 > UINT32_MAX)
        return enc_fail(ENC_ERR_FORMAT, "the vocabulary text is too large");
    ENC_TRY(tok__reserve((void **)&t->strs.data, &t->strs.cap, t->strs.len, 2 * len + 2, 1));
    tok__token *tk = &t->tokens[id];
    char *dst = t->strs.data + t->strs.len;
    tk->kind = kind;
    tk->text_off = (uint32_t)t->strs.len;
    tk->text_len = (uint32_t)len;
    memcpy(dst, text, len);
    dst[len] = '\0';
    dst += len + 1;
    tk->bytes_off = tk->text_off + (uint32_t)len + 1;
    tk->bytes_len = (uint32_t)tok__text_to_bytes(text, len, dst);
    dst[tk->bytes_len] = '\0';
    t->strs.len += len + 1 + tk->bytes_len + 1;
    return ENC_OK;
}

int32_t tok__lookup(const tokenizer *t, const char *text, size_t len)
{
    if (!t->vocab_index) return -1;
    size_t mask = t->vocab_index_cap - 1;
    for (size_t i = tok__hash(text, len) & mask;; i = (i + 1) & mask) {
        int32_t id = t->vocab_index[i];
        if (id < 0) return -1;
        const tok__token *tk = &t->tokens[id];
        if (tk->text_len == len && memcmp(t->strs.data + tk->text_off, text, len) == 0)
            return id;
    }
}

/* Insert id under its text; an existing entry with the same text is replaced
 * (added tokens override the model's vocabulary, as in Hugging Face). */
static void tok__index_insert(tokenizer *t, int32_t id)
{
    const tok__token *tk = &t->tokens[id];
    const char *text = t->strs.data + tk->text_off;
    size_t mask = t->vocab_index_cap - 1;
    for (size_t i = tok__hash(text, tk->text_len) & mask;; i = (i + 1) & mask) {
        int32_t old = t->vocab_index[i];
        if (old >= 0) {
            const tok__token *o = &t->tokens[old];
            if (o->text_len != tk->text_len ||
                memcmp(t->strs.data + o->text_off, text, tk->text_len) != 0)
                continue;
        }
        t->vocab_index[i] = id;
        return;
    }
}

enc_status tok__build_index(tokenizer *t)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)t->n_ids) cap *= 2;
    t->vocab_index = malloc(cap * sizeof *t->vocab_index);
    if (!t->vocab_index) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vocabulary index");
    memset(t->vocab_index, 0xff, cap * sizeof *t->vocab_index); /* all -1 */
    t->vocab_index_cap = cap;
    for (int pass = 0; pass < 2; pass++) /* the vocabulary, then added tokens */
        for (int32_t id = 0; id < t->n_ids; id++) {
            uint8_t k = t->tokens[id].kind;
            if (k != TOK__HOLE && (k == TOK__VOCAB) == (pass == 0))
                tok__index_insert(t, id);
        }
    return ENC_OK;
}

static enc_status tok__max_id(const cJSON *vocab, const cJSON *added, int32_t *max)
{
    *max = -1;
    char what[96];
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int32_t id = 0;
        snprintf(what, sizeof what, "model.vocab[\"%.40s\"]", e->string);
        ENC_TRY(tok__get_id(e, what, &id));
        if (id > *max) *max = id;
    }
    size_t i = 0;
    cJSON_ArrayForEach(e, added) {
        int32_t id = 0;
        snprintf(what, sizeof what, "added_tokens[%zu].id", i++);
        ENC_TRY(tok__get_id(tok__get(e, "id"), what, &id));
        if (id > *max) *max = id;
    }
    return ENC_OK;
}

static enc_status tok__load_vocab(tokenizer *t, const cJSON *vocab)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        int32_t id = (int32_t)e->valuedouble; /* checked by tok__max_id */
        if (t->tokens[id].kind != TOK__HOLE)
            return enc_fail(ENC_ERR_FORMAT, "model.vocab: id %d is used twice "
                            "(\"%s\" and \"%s\")", id, e->string,
                            t->strs.data + t->tokens[id].text_off);
        ENC_TRY(tok__set_token(t, id, e->string, strlen(e->string), TOK__VOCAB));
    }
    return ENC_OK;
}

static enc_status tok__load_added_token(tokenizer *t, const cJSON *e,
                                        const char *where)
{
    const char *content;
    int special, normalized, lstrip, rstrip, single_word;
    ENC_TRY(tok__get_str(e, "content", where, &content));
    if (!content || !*content)
        return enc_fail(ENC_ERR_FORMAT, "%s.content: missing or empty", where);
    ENC_TRY(tok__get_bool(e, "special", 0, where, &special));
    ENC_TRY(tok__get_bool(e, "normalized", !special, where, &normalized));
    ENC_TRY(tok__get_bool(e, "lstrip", 0, where, &lstrip));
    ENC_TRY(tok__get_bool(e, "rstrip", 0, where, &rstrip));
    ENC_TRY(tok__get_bool(e, "single_word", 0, where, &single_word));
    if (single_word)
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s.single_word: true is not supported", where);
    int32_t id = (int32_t)tok__get(e, "id")->valuedouble; /* checked */
    return tok__add_added(t, id, content, strlen(content), special, normalized, lstrip, rstrip,
                          where);
}

enc_status tok__add_added(tokenizer *t, int32_t id, const char *content, size_t len, int special,
                          int normalized, int lstrip, int rstrip, const char *where)
{
    if (t->tokens[id].kind >= TOK__ADDED)
        return enc_fail(ENC_ERR_FORMAT, "%s: id %d is used twice", where, id);
    ENC_TRY(tok__set_token(t, id, content, len, special ? TOK__SPECIAL : TOK__ADDED));

    /* What is matched: the content, normalized like the text it is found in. */
    tok__bytes norm = {0};
    if (normalized && t->nfc) {
        enc_status s = tok__nfc(t, content, len, &norm);
        if (s != ENC_OK) {
            free(norm.data);
            return enc_fail_context(s, "%s.content", where);
        }
        content = norm.data, len = norm.len;
    }
    tok__added *a = &t->added[t->n_added++];
    a->off = (uint32_t)t->strs.len;
    a->len = (uint32_t)len;
    a->id = id;
    a->normalized = (uint8_t)normalized;
    a->lstrip = (uint8_t)lstrip;
    a->rstrip = (uint8_t)rstrip;
    t->added_first[a->normalized][(unsigned char)content[0]] = 1;
    enc_status s = tok__bytes_append(&t->strs, content, len); /* content may end unterminated */
    free(norm.data);
    return s;
}

static int tok__added_longer(const void *a, const void *b)
{
    const tok__added *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static enc_status tok__load_added(tokenizer *t, const cJSON *added)
{
    size_t n = (size_t)cJSON_GetArraySize(added);
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "added_tokens");
    const cJSON *e;
    size_t i = 0;
    char where[48];
    cJSON_ArrayForEach(e, added) {
        snprintf(where, sizeof where, "added_tokens[%zu]", i++);
        ENC_TRY(tok__load_added_token(t, e, where));
    }
    tok__sort_added(t);
    return ENC_OK;
}

void tok__sort_added(tokenizer *t)
{
    /* Longest first: the first that matches at a position is the longest. */
    qsort(t->added, t->n_added, sizeof *t->added, tok__added_longer);
}

/* Every model.vocab text names one id: two are a key given twice, or one
 * cut short at a \u0000 (cJSON ends keys at NUL), and only one of them
 * could be reached. (Added tokens may override the vocabulary.) */
static enc_status tok__vocab_unique(const tokenizer *t)
{
    for (int32_t id = 0; id < t->n_ids; id++) {
        const tok__token *tk = &t->tokens[id];
        if (tk->kind != TOK__VOCAB) continue;
        const char *text = t->strs.data + tk->text_off;
        int32_t found = tok__lookup(t, text, tk->text_len);
        if (found != id && t->tokens[found].kind == TOK__VOCAB)
            return enc_fail(ENC_ERR_FORMAT,
                            "model.vocab: \"%.40s\" is both id %d and id %d (a key given twice, or "
                            "one holding \\u0000)",
                            text, id < found ? id : found, id < found ? found : id);
    }
    return ENC_OK;
}

static enc_status tok__load_tokens(tokenizer *t, const cJSON *model,
                                   const cJSON *added)
{
    const cJSON *vocab = tok__get(model, "vocab");
    if (!cJSON_IsObject(vocab))
        return enc_fail(ENC_ERR_FORMAT, "model.vocab: missing or not an object");
    if (!tok__absent(added) && !cJSON_IsArray(added))
        return enc_fail(ENC_ERR_FORMAT, "added_tokens: expected an array");
    int32_t max;
    ENC_TRY(tok__max_id(vocab, added, &max));
    if (max < 0) return enc_fail(ENC_ERR_FORMAT, "model.vocab: empty");
    t->n_ids = max + 1;
    t->tokens = calloc((size_t)t->n_ids, sizeof *t->tokens);
    if (!t->tokens) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vocabulary of %d ids", t->n_ids);
    ENC_TRY(tok__load_vocab(t, vocab));
    ENC_TRY(tok__load_added(t, added));
    ENC_TRY(tok__build_index(t));
    return tok__vocab_unique(t);
}

/* --- the BPE model -------------------------------------------------------------- */

static enc_status tok__check_model(const cJSON *model)
{
    const char *type, *s;
    int b;
    ENC_TRY(tok__get_str(model, "type", "model", &type));
    if (!type) return enc_fail(ENC_ERR_FORMAT, "model.type: missing");
    if (strcmp(type, "BPE") != 0)
        return enc_fail(ENC_ERR_UNSUPPORTED, "model.type \"%s\" is not supported "
                        "(encore supports BPE)", type);
    const cJSON *dropout = tok__get(model, "dropout");
    if (!tok__absent(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        return enc_fail(ENC_ERR_UNSUPPORTED, "model.dropout: BPE dropout is not supported");
    ENC_TRY(tok__get_bool(model, "byte_fallback", 0, "model", &b));
    if (b) return enc_fail(ENC_ERR_UNSUPPORTED, "model.byte_fallback: true is not supported");
    const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t i = 0; i < 2; i++) {
        ENC_TRY(tok__get_str(model, affix[i], "model", &s));
        if (s && *s)
            return enc_fail(ENC_ERR_UNSUPPORTED, "model.%s \"%s\" is not supported",
                            affix[i], s);
    }
    return ENC_OK;
}

/* One merge: the two parts, from either ["a", "b"] or "a b". */
static enc_status tok__merge_parts(const cJSON *e, size_t i, const char **a,
                                   size_t *na, const char **b, size_t *nb)
{
    if (cJSON_IsArray(e)) {
        const cJSON *x = cJSON_GetArrayItem(e, 0), *y = cJSON_GetArrayItem(e, 1);
        if (cJSON_GetArraySize(e) != 2 || !cJSON_IsString(x) || !cJSON_IsString(y))
            return enc_fail(ENC_ERR_FORMAT, "model.merges[%zu]: expected two strings", i);
        *a = x->valuestring, *na = strlen(x->valuestring);
        *b = y->valuestring, *nb = strlen(y->valuestring);
        return ENC_OK;
    }
    if (!cJSON_IsString(e))
        return enc_fail(ENC_ERR_FORMAT, "model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]", i);
    const char *s = e->valuestring, *sp = strchr(s, ' ');
    if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' '))
        return enc_fail(ENC_ERR_FORMAT, "model.merges[%zu]: \"%s\" is not two "
                        "tokens separated by one space", i, s);
    *a = s, *na = (size_t)(sp - s);
    *b = sp + 1, *nb = strlen(sp + 1);
    return ENC_OK;
}

enc_status tok__merges_alloc(tokenizer *t, size_t n, const char *field)
{
    size_t cap = 16;
    if (n >= (size_t)INT32_MAX) return enc_fail(ENC_ERR_FORMAT, "%s: too many", field);
    while (cap < 2 * n) cap *= 2;
    t->merges = malloc(cap * sizeof *t->merges);
    if (!t->merges) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "%s", field);
    t->merges_cap = cap;
    for (size_t i = 0; i < cap; i++) t->merges[i].key = TOK__EMPTY_KEY;
    return ENC_OK;
}

enc_status tok__add_merge(tokenizer *t, const char *a, size_t na, const char *b, size_t nb,
                          size_t rank, tok__bytes *joined, const char *field)
{
    int32_t left = tok__lookup(t, a, na), right = tok__lookup(t, b, nb);
    joined->len = 0;
    ENC_TRY(tok__bytes_append(joined, a, na));
    ENC_TRY(tok__bytes_append(joined, b, nb));
    ENC_TRY(tok__bytes_append(joined, "", 1)); /* NUL-terminated for the message */
    joined->len--;
    int32_t id = tok__lookup(t, joined->data, joined->len);
    if (left < 0 || right < 0 || id < 0)
        return enc_fail(ENC_ERR_FORMAT, "%s[%zu]: \"%.*s\" is not in the vocabulary", field, rank,
                        left < 0 ? (int)na : right < 0 ? (int)nb : (int)joined->len,
                        left < 0 ? a : right < 0 ? b : joined->data);
    return tok__merges_insert(t, left, right, (int32_t)rank, id);
}

static enc_status tok__load_merges(tokenizer *t, const cJSON *merges)
{
    if (!cJSON_IsArray(merges))
        return enc_fail(ENC_ERR_FORMAT, "model.merges: missing or not an array");
    ENC_TRY(tok__merges_alloc(t, (size_t)cJSON_GetArraySize(merges), "model.merges"));
    tok__bytes joined = {0};
    enc_status s = ENC_OK;
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, merges) {
        const char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        if ((s = tok__merge_parts(e, i, &a, &na, &b, &nb)) != ENC_OK) break;
        if ((s = tok__add_merge(t, a, na, b, nb, i, &joined, "model.merges")) != ENC_OK) break;
        i++;
    }
    free(joined.data);
    return s;
}

void tok__init_byte_ids(tokenizer *t)
{
    for (int b = 0; b < 256; b++) {
        char u[4];
        uint16_t cp = tok__byte_to_cp[b];
        size_t n = cp < 0x80 ? 1 : 2; /* all of them are below U+0800 */
        if (n == 1) u[0] = (char)cp;
        else u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F));
        t->byte_id[b] = tok__lookup(t, u, n);
    }
}

static enc_status tok__load_bpe(tokenizer *t, const cJSON *model)
{
    ENC_TRY(tok__load_merges(t, tok__get(model, "merges")));
    tok__init_byte_ids(t);
    const char *unk;
    ENC_TRY(tok__get_str(model, "unk_token", "model", &unk));
    t->unk_id = -1;
    if (unk && (t->unk_id = tok__lookup(t, unk, strlen(unk))) < 0)
        return enc_fail(ENC_ERR_FORMAT, "model.unk_token \"%s\" is not in the vocabulary", unk);
    return tok__get_bool(model, "ignore_merges", 0, "model", &t->ignore_merges);
}

/* --- normalizer, pre-tokenizer, decoder ---------------------------------------------- */

typedef enc_status (*tok__loader)(tokenizer *t, const cJSON *node, const char *where);

/* A "Sequence" node: load each element of node[key] with `load`, naming it
 * where.key[i] in errors. */
static enc_status tok__load_sequence(tokenizer *t, const cJSON *node, const char *key,
                                     const char *where, tok__loader load)
{
    const cJSON *list = tok__get(node, key), *e;
    if (!cJSON_IsArray(list)) return enc_fail(ENC_ERR_FORMAT, "%s.%s: expected an array", where, key);
    size_t i = 0;
    char sub[96];
    cJSON_ArrayForEach(e, list) {
        snprintf(sub, sizeof sub, "%s.%s[%zu]", where, key, i++);
        ENC_TRY(load(t, e, sub));
    }
    return ENC_OK;
}

static enc_status tok__load_normalizer(tokenizer *t, const cJSON *n, const char *where)
{
    if (tok__absent(n)) return ENC_OK;
    const char *type;
    ENC_TRY(tok__get_str(n, "type", where, &type));
    if (type && strcmp(type, "NFC") == 0) {
        t->nfc = 1;
        return ENC_OK;
    }
    if (type && strcmp(type, "Sequence") == 0)
        return tok__load_sequence(t, n, "normalizers", where, tok__load_normalizer);
    return enc_fail(ENC_ERR_UNSUPPORTED, "%s.type \"%s\" is not supported "
                    "(encore supports NFC or no normalizer)", where, type ? type : "");
}

/* The regex of the ByteLevel pre-tokenizer (GPT-2's), for use_regex: true. */
static const char tok__gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

enc_status tok__add_step(tokenizer *t, const char *where, tok__step **out)
{
    if (t->n_steps == TOK__MAX_STEPS)
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: more than %d pre-tokenizer steps",
                        where, TOK__MAX_STEPS);
    *out = &t->steps[t->n_steps++];
    return ENC_OK;
}

static enc_status tok__load_split(tokenizer *t, const cJSON *p, const char *where)
{
    const char *behavior, *regex = NULL, *literal = NULL;
    int invert;
    ENC_TRY(tok__get_str(p, "behavior", where, &behavior));
    ENC_TRY(tok__get_bool(p, "invert", 0, where, &invert));
    if (invert) return enc_fail(ENC_ERR_UNSUPPORTED, "%s.invert: true is not supported", where);
    if (!behavior || (strcmp(behavior, "Isolated") != 0 && strcmp(behavior, "Removed") != 0))
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s.behavior \"%s\" is not supported "
                        "(encore supports Isolated and Removed)", where,
                        behavior ? behavior : "");
    const cJSON *pat = tok__get(p, "pattern");
    char sub[96];
    snprintf(sub, sizeof sub, "%s.pattern", where);
    if (!cJSON_IsObject(pat))
        return enc_fail(ENC_ERR_FORMAT, "%s: expected {\"Regex\": ...} or {\"String\": ...}", sub);
    ENC_TRY(tok__get_str(pat, "Regex", sub, &regex));
    ENC_TRY(tok__get_str(pat, "String", sub, &literal));
    if (!regex == !literal)
        return enc_fail(ENC_ERR_FORMAT, "%s: expected {\"Regex\": ...} or {\"String\": ...}", sub);
    tok__step *st = NULL;
    ENC_TRY(tok__add_step(t, where, &st));
    st->kind = TOK__STEP_SPLIT;
    st->remove = strcmp(behavior, "Removed") == 0;
    return tok__regex_compile(regex ? regex : literal, literal != NULL, sub, &st->re);
}

static enc_status tok__load_bytelevel(tokenizer *t, const cJSON *p, const char *where)
{
    int prefix, use_regex;
    ENC_TRY(tok__get_bool(p, "add_prefix_space", 0, where, &prefix));
    ENC_TRY(tok__get_bool(p, "use_regex", 1, where, &use_regex));
    tok__step *st = NULL;
    ENC_TRY(tok__add_step(t, where, &st));
    st->kind = TOK__STEP_BYTELEVEL;
    st->add_prefix_space = prefix;
    if (!use_regex) return ENC_OK;
    return tok__regex_compile(tok__gpt2_pattern, 0, where, &st->re);
}

static enc_status tok__load_pre(tokenizer *t, const cJSON *p, const char *where)
{
    const char *type;
    if (!cJSON_IsObject(p)) return enc_fail(ENC_ERR_FORMAT, "%s: expected an object", where);
    ENC_TRY(tok__get_str(p, "type", where, &type));
    if (type && strcmp(type, "Sequence") == 0)
        return tok__load_sequence(t, p, "pretokenizers", where, tok__load_pre);
    if (type && strcmp(type, "Split") == 0) return tok__load_split(t, p, where);
    if (type && strcmp(type, "ByteLevel") == 0) return tok__load_bytelevel(t, p, where);
    return enc_fail(ENC_ERR_UNSUPPORTED, "%s.type \"%s\" is not supported (encore "
                    "supports Split, ByteLevel and Sequence)", where, type ? type : "");
}

static enc_status tok__load_pretokenizer(tokenizer *t, const cJSON *p)
{
    if (tok__absent(p))
        return enc_fail(ENC_ERR_UNSUPPORTED, "pre_tokenizer: missing; encore supports "
                        "byte-level BPE, which needs a ByteLevel pre-tokenizer");
    ENC_TRY(tok__load_pre(t, p, "pre_tokenizer"));
    for (size_t i = 0; i < t->n_steps; i++)
        if (t->steps[i].kind == TOK__STEP_BYTELEVEL && i + 1 != t->n_steps)
            return enc_fail(ENC_ERR_UNSUPPORTED, "pre_tokenizer: a step after ByteLevel "
                            "is not supported");
    if (t->n_steps == 0 || t->steps[t->n_steps - 1].kind != TOK__STEP_BYTELEVEL)
        return enc_fail(ENC_ERR_UNSUPPORTED, "pre_tokenizer: no ByteLevel step; encore "
                        "supports byte-level BPE only");
    return ENC_OK;
}

/* A component that must be absent or of one of the types listed. */
static enc_status tok__check_type(const cJSON *root, const char *field,
                                  int required, const char *allowed)
{
    const cJSON *j = tok__get(root, field);
    if (tok__absent(j)) {
        if (!required) return ENC_OK;
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: missing (encore needs %s)", field, allowed);
    }
    const char *type;
    ENC_TRY(tok__get_str(j, "type", field, &type));
    if (type && strcmp(type, allowed) == 0) return ENC_OK;
    return enc_fail(ENC_ERR_UNSUPPORTED, "%s.type \"%s\" is not supported (encore "
                    "supports %s)", field, type ? type : "", allowed);
}

/* --- the post-processor --------------------------------------------------------------- */

/* One piece of a TemplateProcessing template: {"Sequence": {"id": "A"}}
 * (*is_seq set), or {"SpecialToken": {"id": name}} (*name set). */
static enc_status tok__template_piece(const cJSON *p, const char *where, int *is_seq,
                                      const char **name)
{
    const cJSON *seq = tok__get(p, "Sequence"), *special = tok__get(p, "SpecialToken");
    if (!cJSON_IsObject(p) || cJSON_GetArraySize(p) != 1 || !cJSON_IsObject(seq ? seq : special))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s: expected {\"Sequence\": {...}} or {\"SpecialToken\": {...}}", where);
    char sub[192]; /* where (a piece[160]) and the key */
    snprintf(sub, sizeof sub, "%s.%s", where, seq ? "Sequence" : "SpecialToken");
    ENC_TRY(tok__get_str(seq ? seq : special, "id", sub, name));
    if (!*name) return enc_fail(ENC_ERR_FORMAT, "%s.id: missing", sub);
    *is_seq = seq != NULL;
    if (seq && strcmp(*name, "A") != 0)
        return enc_fail(ENC_ERR_UNSUPPORTED,
                        "%s.id \"%s\" is not supported (encore encodes one sequence, A)", sub,
                        *name);
    return ENC_OK;
}

/* Append to ids the ids of special token `name`, a key of the template's
 * special_tokens (`specials`, may be NULL): its "ids", each in the vocabulary.
 * `where` is the template, `piece` the piece naming it. */
static enc_status tok__template_special(const tokenizer *t, const cJSON *specials, const char *name,
                                        const char *where, const char *piece, tok__ids *ids)
{
    const cJSON *st = specials ? tok__get(specials, name) : NULL, *e;
    if (!st)
        return enc_fail(ENC_ERR_FORMAT, "%s.SpecialToken.id \"%s\" is not in %s.special_tokens",
                        piece, name, where);
    char what[192];
    snprintf(what, sizeof what, "%s.special_tokens[\"%.40s\"].ids", where, name);
    const cJSON *list = tok__get(st, "ids");
    if (!cJSON_IsArray(list)) return enc_fail(ENC_ERR_FORMAT, "%s: expected an array", what);
    size_t i = 0;
    cJSON_ArrayForEach(e, list)
    {
        char item[224];
        int32_t id = 0;
        snprintf(item, sizeof item, "%s[%zu]", what, i++);
        ENC_TRY(tok__get_id(e, item, &id));
        if (!tokenizer_token_text(t, id))
            return enc_fail(ENC_ERR_FORMAT, "%s: id %d is not in the vocabulary", item, id);
        ENC_TRY(tok__ids_push(ids, id));
    }
    return ENC_OK;
}

/* The pieces of `single` (where.single): the special tokens' ids in order
 * into ids, *n_prefix of them before the one Sequence A. */
static enc_status tok__template_single(const tokenizer *t, const cJSON *single,
                                       const cJSON *specials, const char *where, tok__ids *ids,
                                       size_t *n_prefix)
{
    size_t i = 0, n_seq = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, single)
    {
        char piece[160];
        int is_seq = 0;
        const char *name = NULL;
        snprintf(piece, sizeof piece, "%s.single[%zu]", where, i++);
        ENC_TRY(tok__template_piece(e, piece, &is_seq, &name));
        if (is_seq)
            n_seq++, *n_prefix = ids->len;
        else
            ENC_TRY(tok__template_special(t, specials, name, where, piece, ids));
    }
    if (n_seq != 1)
        return enc_fail(n_seq ? ENC_ERR_UNSUPPORTED : ENC_ERR_FORMAT,
                        "%s.single: %zu {\"Sequence\": {\"id\": \"A\"}} pieces (encore needs "
                        "exactly one)",
                        where, n_seq);
    return ENC_OK;
}

/* TemplateProcessing: the special tokens of its "single" template into
 * t->post_ids. "pair" is not read: encore never encodes a pair. */
static enc_status tok__load_template(tokenizer *t, const cJSON *p, const char *where)
{
    if (t->post_template)
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s: a second TemplateProcessing is not supported",
                        where);
    t->post_template = 1;
    const cJSON *single = tok__get(p, "single"), *specials = tok__get(p, "special_tokens");
    if (!cJSON_IsArray(single))
        return enc_fail(ENC_ERR_FORMAT, "%s.single: missing or not an array", where);
    if (!tok__absent(specials) && !cJSON_IsObject(specials))
        return enc_fail(ENC_ERR_FORMAT, "%s.special_tokens: expected an object", where);
    tok__ids ids = {0};
    size_t n_prefix = 0;
    enc_status s = tok__template_single(t, single, cJSON_IsObject(specials) ? specials : NULL,
                                        where, &ids, &n_prefix);
    if (s != ENC_OK) {
        free(ids.data);
        return s;
    }
    t->post_ids = ids.data; /* NULL when there are none; freed by tokenizer_free */
    t->n_post_prefix = n_prefix;
    t->n_post_suffix = ids.len - n_prefix;
    return ENC_OK;
}

/* A post-processor node: ByteLevel (it only trims offsets, which encore does
 * not report: nothing to do), TemplateProcessing, or a Sequence of them. */
static enc_status tok__load_post(tokenizer *t, const cJSON *p, const char *where)
{
    const char *type;
    if (!cJSON_IsObject(p)) return enc_fail(ENC_ERR_FORMAT, "%s: expected an object", where);
    ENC_TRY(tok__get_str(p, "type", where, &type));
    if (type && strcmp(type, "Sequence") == 0)
        return tok__load_sequence(t, p, "processors", where, tok__load_post);
    if (type && strcmp(type, "TemplateProcessing") == 0) return tok__load_template(t, p, where);
    if (type && strcmp(type, "ByteLevel") == 0) return ENC_OK;
    return enc_fail(ENC_ERR_UNSUPPORTED,
                    "%s.type \"%s\" is not supported (encore supports "
                    "ByteLevel, TemplateProcessing and a Sequence of them)",
                    where, type ? type : "");
}

static enc_status tok__load_root(tokenizer *t, const cJSON *root)
{
    if (!cJSON_IsObject(root)) return enc_fail(ENC_ERR_FORMAT, "expected a JSON object");
    const cJSON *model = tok__get(root, "model");
    if (!cJSON_IsObject(model))
        return enc_fail(ENC_ERR_FORMAT, "model: missing or not an object");
    ENC_TRY(tok__check_model(model));
    ENC_TRY(tok__load_normalizer(t, tok__get(root, "normalizer"), "normalizer"));
    ENC_TRY(tok__load_tokens(t, model, tok__get(root, "added_tokens")));
    ENC_TRY(tok__load_bpe(t, model));
    ENC_TRY(tok__load_pretokenizer(t, tok__get(root, "pre_tokenizer")));
    ENC_TRY(tok__check_type(root, "decoder", 1, "ByteLevel"));
    const cJSON *post = tok__get(root, "post_processor");
    if (!tok__absent(post)) ENC_TRY(tok__load_post(t, post, "post_processor"));
    const char *unused[] = {"truncation", "padding"};
    for (size_t i = 0; i < 2; i++)
        if (!tok__absent(tok__get(root, unused[i])))
            return enc_fail(ENC_ERR_UNSUPPORTED, "%s: must be null (encore neither "
                            "truncates nor pads)", unused[i]);
    return ENC_OK;
}

/* --- tokenizer_config.json ------------------------------------------------------------ */

/* A token named by the config: "text" or {"content": "text", ...}; -1 if null. */
static enc_status tok__config_token(tokenizer *t, const cJSON *root,
                                    const char *key, int32_t *id)
{
    const cJSON *j = tok__get(root, key);
    *id = -1;
    if (tok__absent(j)) return ENC_OK;
    if (cJSON_IsObject(j)) j = tok__get(j, "content");
    if (!cJSON_IsString(j))
        return enc_fail(ENC_ERR_FORMAT, "%s: expected a string or {\"content\": ...}", key);
    if ((*id = tokenizer_token_id(t, j->valuestring)) < 0)
        return enc_fail(ENC_ERR_FORMAT, "%s \"%s\" is not a token of tokenizer.json",
                        key, j->valuestring);
    return ENC_OK;
}

enc_status tok__set_template(tokenizer *t, const char *text, size_t len)
{
    const char *nul = memchr(text, '\0', len); /* text may end unterminated (a GGUF's) */
    if (nul)
        return enc_fail(ENC_ERR_FORMAT, "chat_template: a NUL byte at offset %zu of its %zu",
                        (size_t)(nul - text), len);
    free(t->chat_template);
    t->chat_template = malloc(len + 1);
    if (t->chat_template) memcpy(t->chat_template, text, len), t->chat_template[len] = '\0';
    if (!t->chat_template) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "chat_template");
    t->family = chat_template_detect(t->chat_template);
    return ENC_OK;
}

static enc_status tok__config_template(tokenizer *t, const cJSON *j)
{
    if (tok__absent(j)) return ENC_OK;
    if (cJSON_IsString(j)) return tok__set_template(t, j->valuestring, strlen(j->valuestring));
    if (cJSON_IsArray(j)) { /* [{"name": ..., "template": ...}]: the default */
        const cJSON *e;
        cJSON_ArrayForEach(e, j) {
            const cJSON *name = tok__get(e, "name"), *tpl = tok__get(e, "template");
            if (cJSON_IsString(name) && strcmp(name->valuestring, "default") == 0 &&
                cJSON_IsString(tpl))
                return tok__set_template(t, tpl->valuestring, strlen(tpl->valuestring));
        }
        return enc_fail(ENC_ERR_FORMAT, "chat_template: the list has no \"default\" template");
    }
    return enc_fail(ENC_ERR_FORMAT, "chat_template: expected a string or a list");
}

static enc_status tok__load_config(tokenizer *t, const char *json, size_t len)
{
    cJSON *root;
    ENC_TRY(tok__parse(json, len, &root));
    enc_status s = ENC_OK;
    if (!cJSON_IsObject(root)) s = enc_fail(ENC_ERR_FORMAT, "expected a JSON object");
    if (s == ENC_OK) s = tok__config_token(t, root, "eos_token", &t->eos_id);
    if (s == ENC_OK) s = tok__config_token(t, root, "pad_token", &t->pad_id);
    if (s == ENC_OK) s = tok__config_token(t, root, "bos_token", &t->bos_id);
    if (s == ENC_OK) s = tok__config_template(t, tok__get(root, "chat_template"));
    cJSON_Delete(root);
    return s;
}

/* --- entry points ---------------------------------------------------------------------- */

tokenizer *tok__alloc(void)
{
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->unk_id = t->eos_id = t->pad_id = t->bos_id = -1;
    return t;
}

static enc_status tok__load_json(tokenizer *t, const char *json, size_t len)
{
    cJSON *root;
    ENC_TRY(tok__parse(json, len, &root));
    enc_status s = tok__load_root(t, root);
    cJSON_Delete(root);
    return s;
}

enc_status tokenizer_load_buffer(const char *json, size_t len,
                                 const char *config_json, size_t config_len,
                                 tokenizer **out)
{
    *out = NULL;
    tokenizer *t = tok__alloc();
    if (!t) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer");
    enc_status s = tok__load_json(t, json, len);
    if (s != ENC_OK) s = enc_fail_context(s, "tokenizer.json");
    if (s == ENC_OK && config_json) {
        s = tok__load_config(t, config_json, config_len);
        if (s != ENC_OK) s = enc_fail_context(s, "tokenizer_config.json");
    }
    if (s != ENC_OK) {
        tokenizer_free(t);
        return s;
    }
    *out = t;
    return ENC_OK;
}

/* Load from paths; jinja_path (may be NULL) supplies a template the config
 * lacks (newer Hugging Face repositories keep it in chat_template.jinja). */
static enc_status tok__load_paths(const char *json_path, const char *config_path,
                                  const char *jinja_path, tokenizer **out)
{
    *out = NULL;
    enc_mapfile m;
    ENC_TRY(mapfile_open(json_path, &m));
    tokenizer *t = tok__alloc();
    if (!t) {
        mapfile_close(&m);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer");
    }
    enc_status s = tok__load_json(t, (const char *)m.data, m.size);
    mapfile_close(&m);
    if (s != ENC_OK) s = enc_fail_context(s, "%s", json_path);
    char *text = NULL;
    size_t n;
    if (s == ENC_OK && config_path) {
        if ((s = file_read_all(config_path, &text, &n)) == ENC_OK &&
            (s = tok__load_config(t, text, n)) != ENC_OK)
            s = enc_fail_context(s, "%s", config_path);
        free(text);
    }
    if (s == ENC_OK && !t->chat_template && jinja_path && access(jinja_path, R_OK) == 0) {
        if ((s = file_read_all(jinja_path, &text, &n)) == ENC_OK)
            s = tok__set_template(t, text, n);
        free(text);
    }
    if (s != ENC_OK) {
        tokenizer_free(t);
        return s;
    }
    *out = t;
    return ENC_OK;
}

enc_status tokenizer_load_file(const char *tokenizer_json_path,
                               const char *config_path_or_null, tokenizer **out)
{
    return tok__load_paths(tokenizer_json_path, config_path_or_null, NULL, out);
}

enc_status tokenizer_load(const char *model_dir, tokenizer **out)
{
    *out = NULL;
    size_t n = strlen(model_dir) + sizeof "/tokenizer_config.json";
    char *json = malloc(n), *cfg = malloc(n), *jinja = malloc(n);
    enc_status s;
    if (!json || !cfg || !jinja) {
        s = enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer paths");
    } else {
        snprintf(json, n, "%s/tokenizer.json", model_dir);
        snprintf(cfg, n, "%s/tokenizer_config.json", model_dir);
        snprintf(jinja, n, "%s/chat_template.jinja", model_dir);
        s = tok__load_paths(json, access(cfg, F_OK) == 0 ? cfg : NULL, jinja, out);
    }
    free(json);
    free(cfg);
    free(jinja);
    return s;
}

void tokenizer_free(tokenizer *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n_steps; i++) pcre2_code_free(t->steps[i].re);
    free(t->tokens);
    free(t->strs.data);
    free(t->vocab_index);
    free(t->merges);
    free(t->added);
    free(t->post_ids);
    free(t->chat_template);
    tok__cache_free(&t->cache);
    tok__scratch_free(&t->scratch);
    free(t);
}

/* --- lookups ---------------------------------------------------------------------------- */

int32_t tokenizer_vocab_size(const tokenizer *t) { return t->n_ids; }

int32_t tokenizer_token_id(const tokenizer *t, const char *token)
{
    return tok__lookup(t, token, strlen(token));
}

const char *tokenizer_token_text(const tokenizer *t, int32_t id)
{
    if (id < 0 || id >= t->n_ids || t->tokens[id].kind == TOK__HOLE) return NULL;
    return t->strs.data + t->tokens[id].text_off;
}

const char *tokenizer_token_bytes(const tokenizer *t, int32_t id, size_t *len)
{
    *len = 0;
    if (!tokenizer_token_text(t, id)) return NULL;
    *len = t->tokens[id].bytes_len;
    return t->strs.data + t->tokens[id].bytes_off;
}

int tokenizer_is_special(const tokenizer *t, int32_t id)
{
    return id >= 0 && id < t->n_ids && t->tokens[id].kind == TOK__SPECIAL;
}

int tokenizer_is_added(const tokenizer *t, int32_t id)
{
    return id >= 0 && id < t->n_ids && t->tokens[id].kind >= TOK__ADDED;
}

static int tok__merge_by_rank(const void *x, const void *y)
{
    const tok__merge *a = x, *b = y;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

enc_status tokenizer_merges(const tokenizer *t, int32_t **pairs, size_t *n)
{
    size_t count = 0;
    for (size_t i = 0; i < t->merges_cap; i++) count += t->merges[i].key != TOK__EMPTY_KEY;
    tok__merge *m = malloc((count ? count : 1) * sizeof *m);
    int32_t *p = malloc((count ? count : 1) * 2 * sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "tokenizer merges");
    }
    size_t k = 0;
    for (size_t i = 0; i < t->merges_cap; i++)
        if (t->merges[i].key != TOK__EMPTY_KEY) m[k++] = t->merges[i];
    /* ranks are indexes into the source list (a pair listed twice kept its last) */
    qsort(m, count, sizeof *m, tok__merge_by_rank);
    for (size_t i = 0; i < count; i++) {
        p[2 * i] = (int32_t)(m[i].key >> 32);
        p[2 * i + 1] = (int32_t)(m[i].key & 0xffffffffu);
    }
    free(m);
    *pairs = p;
    *n = count;
    return ENC_OK;
}

const char *tokenizer_chat_template(const tokenizer *t) { return t->chat_template; }

int32_t tokenizer_eos_id(const tokenizer *t) { return t->eos_id; }
int32_t tokenizer_pad_id(const tokenizer *t) { return t->pad_id; }
int32_t tokenizer_bos_id(const tokenizer *t) { return t->bos_id; }

void tokenizer_special_template(const tokenizer *t, const int32_t **prefix, size_t *n_prefix,
                                const int32_t **suffix, size_t *n_suffix)
{
    *n_prefix = t->n_post_prefix;
    *n_suffix = t->n_post_suffix;
    *prefix = *n_prefix ? t->post_ids : NULL;
    *suffix = *n_suffix ? t->post_ids + *n_prefix : NULL;
}

size_t tokenizer_stop_ids(const tokenizer *t, int32_t *out, size_t cap)
{
    int32_t cand[3] = {t->eos_id, tokenizer_token_id(t, "<|im_end|>"),
                       tokenizer_token_id(t, "<|endoftext|>")};
    size_t n = 0;
    for (size_t i = 0; i < 3; i++) {
        int dup = cand[i] < 0;
        for (size_t j = 0; j < i && !dup; j++) dup = cand[j] == cand[i];
        if (dup) continue;
        if (n < cap) out[n] = cand[i];
        n++;
    }
    return n;
}
