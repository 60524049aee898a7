/* json_schema_formats.h - the string formats a schema may name, as EBNF
 * rules <prefix>fmt-<name> (the text between the quotes). */
#ifndef ENC_GRAMMAR_JSON_SCHEMA_FORMATS_H
#define ENC_GRAMMAR_JSON_SCHEMA_FORMATS_H

#include "grammar/ebnf_buf.h"

/* The bit of a supported format ("date", "time", "date-time", "uuid",
 * "email", "ipv4"), 0 for any other. */
unsigned json_schema_format_bit(const char *name);
/* Writes the rules of the formats in bits (and those they use). */
void json_schema_formats_write(ebnf_buf *b, const char *prefix, unsigned bits);

#endif
