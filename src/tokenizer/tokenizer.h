/* tokenizer.h - byte-level BPE tokenizers read from Hugging Face tokenizer.json.
 *
 * The tokenizer layer turns UTF-8 text into token ids and back, the way the
 * Hugging Face `tokenizers` library does for byte-level BPE models (Qwen3,
 * GPT-2 and friends):
 *
 *   text --split added tokens (longest match, never split further)--> sections
 *        --NFC--> --pre-tokenizer regex (PCRE2, JIT)--> pieces
 *        --bytes, merged by rank (cache: piece -> ids)--> ids
 *
 * Decoding maps ids back to their bytes; invalid UTF-8 in the result becomes
 * U+FFFD exactly as Rust's String::from_utf8_lossy does. A stream decoder
 * emits only complete UTF-8 characters.
 *
 * What a loader does not support (another normalizer, a WordPiece model, a
 * Split behavior other than Isolated/Removed, ...) is refused with
 * ENC_ERR_UNSUPPORTED and a last-error message naming the tokenizer.json
 * field; it never silently encodes differently.
 *
 * Threads: a tokenizer is read-only after loading except for its encode cache
 * and scratch buffers, so tokenizer_encode() takes a non-const handle and must
 * not run on two threads at once for the same tokenizer (wrap it in a lock, or
 * load one tokenizer per thread). Everything that takes a const tokenizer
 * (decode, streams, lookups, the chat template) is safe from any number of
 * threads at once. */
#ifndef ENC_TOKENIZER_TOKENIZER_H
#define ENC_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct tokenizer tokenizer;

/* --- loading ---------------------------------------------------------------- */

/* Load DIR/tokenizer.json, and DIR/tokenizer_config.json when present (eos /
 * pad tokens, chat template; DIR/chat_template.jinja is read when the config
 * has no chat_template). On failure *out is NULL and the last error says why. */
enc_status tokenizer_load(const char *model_dir, tokenizer **out);

/* Load from explicit paths; config_path_or_null may be NULL. */
enc_status tokenizer_load_file(const char *tokenizer_json_path,
                               const char *config_path_or_null,
                               tokenizer **out);

/* Load from memory: json is tokenizer.json's text (len bytes, need not be
 * NUL-terminated), config_json the tokenizer_config.json text or NULL. The
 * buffers are not kept. (Used by the fuzzer; also handy for embedding.) */
enc_status tokenizer_load_buffer(const char *json, size_t len,
                                 const char *config_json, size_t config_len,
                                 tokenizer **out);

/* A byte-level BPE tokenizer from lists, as a GGUF file stores them
 * (tokenizer.ggml.*): the token texts (written as in tokenizer.json), their
 * types, the merges "a b" in rank order, and the pre-tokenizer by name. */
typedef struct tokenizer_lists {
    size_t n_tokens;
    const char *const *tokens; /* [n_tokens], token_lens[i] bytes each */
    const size_t *token_lens;
    /* [n_tokens] or NULL (all normal): GGUF's token types, 1 normal, 2 unknown,
     * 3 control (a special added token), 4 user-defined (an added token),
     * 5 unused (no token: padding ids), 6 byte */
    const int32_t *token_types;
    size_t n_merges;
    const char *const *merges; /* [n_merges], merge_lens[i] bytes each */
    const size_t *merge_lens;
    const char *pre;       /* the pre-tokenizer: "qwen2" (others are refused) */
    int32_t bos_id, eos_id, pad_id; /* -1 when absent */
    const char *chat_template; /* chat_template_len bytes, or NULL */
    size_t chat_template_len;
} tokenizer_lists;

/* Build a tokenizer from lists; the lists are not kept. Anything it cannot
 * honour (a pre-tokenizer it does not know, a bad type, a merge of tokens
 * not in the vocabulary) is refused naming the tokenizer.ggml key. */
enc_status tokenizer_load_lists(const tokenizer_lists *l, tokenizer **out);

/* Destroying NULL is a no-op. */
void tokenizer_free(tokenizer *t);

/* --- encoding --------------------------------------------------------------- */

/* Encode len bytes of UTF-8 text (NUL bytes are ordinary characters). Added
 * tokens, special or not, are recognised in the text. On success *ids is a
 * malloc'd array of *n_ids ids (never NULL, even for no ids) that the caller
 * frees with free(). Invalid UTF-8 is refused with ENC_ERR_INVALID_ARGUMENT
 * naming the byte offset; nothing is allocated then. Not thread-safe for one
 * tokenizer (see above). */
enc_status tokenizer_encode(tokenizer *t, const char *text, size_t len,
                            int32_t **ids, size_t *n_ids);

/* The same, but an added token is not matched where it would overlap one of
 * the n_plain byte ranges [plain[2k], plain[2k+1]) of the text: there,
 * "<|im_start|>" is ordinary text (Hugging Face's split_special_tokens, for
 * those ranges only). Added tokens that match after normalization
 * (normalized: true; Qwen3 has none) are not matched anywhere in a stretch
 * between other added tokens that overlaps a range. */
enc_status tokenizer_encode_plain(tokenizer *t, const char *text, size_t len,
                                  const size_t *plain, size_t n_plain, int32_t **ids,
                                  size_t *n_ids);

/* --- decoding --------------------------------------------------------------- */

/* Decode ids to a malloc'd NUL-terminated UTF-8 string (caller frees). With
 * skip_special, added tokens marked "special" produce nothing. An id with no
 * token (negative, >= vocab size, or a hole) is refused with
 * ENC_ERR_INVALID_ARGUMENT naming its index. */
enc_status tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n,
                            int skip_special, char **text);

/* The same, also giving the length (the text may hold NUL bytes). */
enc_status tokenizer_decode_bytes(const tokenizer *t, const int32_t *ids, size_t n,
                                  int skip_special, char **text, size_t *len);

/* Streaming decode: feed one id at a time, get back the text that became
 * complete (maybe empty). The bytes of a character split across tokens are
 * held back until the character is complete; a byte sequence that can never
 * become valid UTF-8 is emitted as U+FFFD, as the full decode does. The
 * concatenation of all outputs plus tokenizer_stream_flush() equals
 * tokenizer_decode() of the same ids. */
typedef struct tokenizer_stream tokenizer_stream;

/* The stream keeps a pointer to t, which must outlive it. */
enc_status tokenizer_stream_create(const tokenizer *t, int skip_special,
                                   tokenizer_stream **out);
/* *text points into the stream and stays valid until the next call on s;
 * it is NUL-terminated. A bad id is refused as in tokenizer_decode. */
enc_status tokenizer_stream_put(tokenizer_stream *s, int32_t id,
                                const char **text, size_t *len);
/* End of stream: returns what is still held back (an incomplete character
 * becomes U+FFFD) and resets the stream for reuse. */
enc_status tokenizer_stream_flush(tokenizer_stream *s, const char **text,
                                  size_t *len);
/* Destroying NULL is a no-op. */
void tokenizer_stream_destroy(tokenizer_stream *s);

/* --- vocabulary --------------------------------------------------------------- */

/* Number of ids: one more than the largest id of the vocabulary or of an
 * added token (151669 for Qwen3; the model's embedding may have more rows). */
int32_t tokenizer_vocab_size(const tokenizer *t);

/* Id of a token written as in tokenizer.json ("Ġhello", "<|im_end|>"), or -1. */
int32_t tokenizer_token_id(const tokenizer *t, const char *token);

/* The token text of id as in tokenizer.json (NUL-terminated, owned by t), or
 * NULL for an id with no token. */
const char *tokenizer_token_text(const tokenizer *t, int32_t id);

/* The bytes id decodes to (*len of them; may be part of a UTF-8 character),
 * owned by t, or NULL for an id with no token. */
const char *tokenizer_token_bytes(const tokenizer *t, int32_t id, size_t *len);

/* Whether id is an added token marked "special" (skipped by skip_special). */
int tokenizer_is_special(const tokenizer *t, int32_t id);

/* Whether id is an added token, special or not. */
int tokenizer_is_added(const tokenizer *t, int32_t id);

/* The merges in rank order, as (left id, right id) pairs: *pairs is a
 * malloc'd [*n][2] array the caller frees. */
enc_status tokenizer_merges(const tokenizer *t, int32_t **pairs, size_t *n);

/* The chat template text, or NULL when the model has none. */
const char *tokenizer_chat_template(const tokenizer *t);

/* Ids of the tokens named by tokenizer_config.json, or -1 when absent. */
int32_t tokenizer_eos_id(const tokenizer *t);
int32_t tokenizer_pad_id(const tokenizer *t);
int32_t tokenizer_bos_id(const tokenizer *t);

/* The stop ids: eos_token from the config, then <|im_end|> and <|endoftext|>
 * when the vocabulary has them, without duplicates. Writes at most cap ids to
 * out and returns how many there are in all (so a short out still counts). */
size_t tokenizer_stop_ids(const tokenizer *t, int32_t *out, size_t cap);

/* The ids the tokenizer's post-processor puts around one sequence when
 * special tokens are added (Hugging Face's add_special_tokens=True; its
 * TemplateProcessing "single" template): prefix[n_prefix] before the text's
 * ids, suffix[n_suffix] after them. Both empty (NULL, 0) when the
 * tokenizer.json has none (ByteLevel or no post-processor). The arrays are
 * owned by t; tokenizer_encode() never adds them: the caller does. */
void tokenizer_special_template(const tokenizer *t, const int32_t **prefix, size_t *n_prefix,
                                const int32_t **suffix, size_t *n_suffix);

/* --- JSON strings ---------------------------------------------------------------- */

/* Decode the one JSON string literal in json[0..len) (surrounding whitespace
 * allowed) into a malloc'd UTF-8 buffer of *n bytes, NUL-terminated, that may
 * itself contain NUL (cJSON stops at "\u0000"). Lone surrogates, raw control
 * characters and invalid UTF-8 are refused, naming the byte offset. */
enc_status tokenizer_json_unquote(const char *json, size_t len, char **out, size_t *n);

/* Quote s[0..n) as a JSON string literal, as Python's json.dumps with
 * ensure_ascii=False does; malloc'd, NUL-terminated, caller frees. */
enc_status tokenizer_json_quote(const char *s, size_t n, char **out);

#endif
