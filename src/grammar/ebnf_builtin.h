/* ebnf_builtin.h - fixed JSON rules shared by the JSON-object grammar and the
 * schema compiler. */
#ifndef ENC_GRAMMAR_EBNF_BUILTIN_H
#define ENC_GRAMMAR_EBNF_BUILTIN_H

#include "grammar/ebnf_buf.h"
#include "grammar/grammar.h"

/* Writes the rules <p>value, <p>object, <p>array, <p>string, <p>char,
 * <p>hex4, <p>hex, <p>int and <p>number. */
void ebnf_json_basics(ebnf_buf *b, const char *p);

#endif
