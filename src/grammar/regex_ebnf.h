/* regex_ebnf.h - a regular expression as an EBNF expression (internal: the
 * JSON Schema compiler writes `pattern` inside a JSON string with it). */
#ifndef ENC_GRAMMAR_REGEX_EBNF_H
#define ENC_GRAMMAR_REGEX_EBNF_H

#include "grammar/ebnf_buf.h"

typedef struct regex_ebnf_mode {
    int json_string;      /* write each character as it appears inside a JSON string */
    int search;           /* unanchored ends match anything (JSON Schema's semantics) */
    const char *any_rule; /* with search: the rule for one character of the padding */
    const char *where;    /* for messages: "regex", "pattern at #/properties/x" */
} regex_ebnf_mode;

/* Appends one parenthesized EBNF item matching what the regex matches. */
enc_status regex_ebnf_expr(const char *regex, const regex_ebnf_mode *mode, ebnf_buf *out);

#endif
