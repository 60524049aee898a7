/* grammar.h - structured outputs: grammars, their compilers, and token masks.
 *
 * A grammar is written as EBNF text (GBNF-like, see grammar_compile) and
 * compiled once into an immutable `grammar`, shareable by any number of
 * requests and threads. The other front ends (JSON Schema, regular
 * expressions, a list of choices, "any JSON object") produce EBNF text, so
 * callers may compose them: the tool-calling code wraps a schema's rules in
 * its own.
 *
 *   schema / regex / choices --*_to_ebnf--> EBNF text --grammar_compile--> grammar
 *   tokenizer's id -> bytes table --grammar_vocab_new--> grammar_vocab (trie)
 *   grammar + vocab --grammar_matcher_new--> matcher: fill_mask, accept, ...
 *
 * The matcher is a pushdown recognizer over UTF-8 bytes; a token is allowed
 * when its bytes keep the text a prefix of a sentence of the grammar. The
 * layer depends only on src/base. */
#ifndef ENC_GRAMMAR_GRAMMAR_H
#define ENC_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct grammar grammar; /* compiled, immutable, shareable across requests */
typedef struct grammar_vocab
    grammar_vocab; /* the tokenizer's id -> bytes table + trie, built once per model */
typedef struct grammar_matcher grammar_matcher; /* one request's state */

/* --- compiling ------------------------------------------------------------- */

/* Compile EBNF text (len bytes) whose start symbol is root_rule (NULL: "root").
 *   rule  ::= name "::=" alternatives    (a rule runs until the next `name ::=`)
 *   items: "literal" (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), [a-z]
 *   classes, [^...] negated classes, . (any character), rule names, ( ... ),
 *   and the postfix operators * + ? {m} {m,} {m,n}; # starts a comment.
 * Errors (ENC_ERR_INVALID_ARGUMENT) name line:col: a syntax error, an
 * undefined rule, a missing root, left recursion. *out is NULL on failure. */
enc_status grammar_compile(const char *ebnf, size_t len, const char *root_rule, grammar **out);
void grammar_free(grammar *g);

/* A JSON Schema (the subset listed in docs/STRUCTURED_OUTPUTS.md) as EBNF
 * whose root rule is <rule_prefix>root and whose other rules all start with
 * rule_prefix. An unsupported keyword or a bad schema is
 * ENC_ERR_INVALID_ARGUMENT, the last error naming the keyword and its JSON
 * pointer. *ebnf_out is malloc'ed; the caller frees it. */
enc_status grammar_json_schema_to_ebnf(const char *schema_json, size_t len, const char *rule_prefix,
                                       char **ebnf_out);

/* A regular expression (whole-text match; the syntax in
 * docs/STRUCTURED_OUTPUTS.md) as EBNF, root rule <rule_prefix>root. */
enc_status grammar_regex_to_ebnf(const char *regex, const char *rule_prefix, char **ebnf_out);

/* Exactly one of n strings, root rule <rule_prefix>root. */
enc_status grammar_choice_to_ebnf(const char *const *choices, size_t n, const char *rule_prefix,
                                  char **ebnf_out);

/* Any JSON object, in the layout the schema compiler uses; root rule "root". */
const char *grammar_json_object_ebnf(void);
/* The same, root rule <rule_prefix>root (*ebnf_out malloc'ed). */
enc_status grammar_json_object_to_ebnf(const char *rule_prefix, char **ebnf_out);

/* A thinking model's reasoning, root rule <rule_prefix>root:
 * "<think>\n" TEXT "\n</think>\n\n", TEXT never holding "</think>"; with
 * opened, the same without its "<think>\n" (the prompt wrote it). */
enc_status grammar_think_to_ebnf(int opened, const char *rule_prefix, char **ebnf_out);

/* --- the vocabulary -------------------------------------------------------- */

/* token_bytes[id] (token_lens[id] bytes) for id in [0, n_vocab); ids with NULL
 * bytes or length 0 (special tokens, unused ids) are never allowed. The
 * arrays are copied; the caller keeps its own. */
enc_status grammar_vocab_new(const uint8_t *const *token_bytes, const size_t *token_lens,
                             int32_t n_vocab, grammar_vocab **out);
void grammar_vocab_free(grammar_vocab *v);
int32_t grammar_vocab_size(const grammar_vocab *v);

/* --- matching -------------------------------------------------------------- */

/* A matcher at the start of the text. end_ids (n_end of them: EOS, stop ids)
 * may end the text; g and v must outlive the matcher. */
enc_status grammar_matcher_new(const grammar *g, const grammar_vocab *v, const int32_t *end_ids,
                               int n_end, grammar_matcher **out);
void grammar_matcher_free(grammar_matcher *m);

/* allowed[(n_vocab+31)/32]: bit t (word t/32, bit t%32) set when id t is
 * allowed now. End ids are allowed exactly when the bytes so far are a
 * complete sentence. After completion nothing is allowed. */
enc_status grammar_matcher_fill_mask(grammar_matcher *m, uint32_t *allowed);

/* Advance by one token; false (state unchanged) when it is not allowed. */
bool grammar_matcher_accept(grammar_matcher *m, int32_t id);

/* Advance by raw bytes (a test's or a prompt's text); false when they leave
 * the grammar (state unchanged). */
bool grammar_matcher_accept_bytes(grammar_matcher *m, const uint8_t *bytes, size_t n);

/* An end id was accepted, or no token can extend the text. */
bool grammar_matcher_is_complete(const grammar_matcher *m);

/* The bytes so far are a complete sentence (an end id would be allowed). */
bool grammar_matcher_can_end(const grammar_matcher *m);

#endif
