/* openai_structured.h - the structured-output fields of an OpenAI request:
 * OpenAI's response_format ({"type": "text" | "json_object" | "json_schema"}),
 * vLLM's structured_outputs {json, regex, choice, grammar, json_object} and
 * its older guided_json, guided_regex, guided_choice, guided_grammar. At most
 * one constraint; anything encore does not do (another response_format type,
 * whitespace patterns, a backend choice) is a 400 naming the field. The
 * grammar itself is compiled at submission (encore_submit), whose refusal is
 * a 400 as well. */
#ifndef ENC_SERVER_OPENAI_STRUCTURED_H
#define ENC_SERVER_OPENAI_STRUCTURED_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct oai_error oai_error;

typedef struct oai_structured {
    char *json_schema; /* the schema's JSON text */
    char *regex;
    char *grammar;  /* EBNF */
    char **choices; /* [n_choices] */
    size_t n_choices;
    int json_object;
    int schema_printed; /* json_schema is cJSON's print of an object, not the client's text */
    const char *param;  /* the field that gave the constraint, for messages (its path) */
} oai_structured;

/* Read the fields of the request object obj into *out (zeroed first). 1, or
 * 0 with err filled. */
int oai_structured_parse(const cJSON *obj, oai_structured *out, oai_error *err);
/* An object-form schema as the client wrote it in body[0, len) (compacted),
 * in place of cJSON's print, whose 15 significant digits make a number
 * within a rounding step of them those digits (5.000000000000001 prints as
 * 5: another schema). Kept only when the text found at the field's path
 * reads back to the same value. 1, or 0 with err filled (out of memory). */
int oai_structured_keep_text(const char *body, size_t len, oai_structured *s, oai_error *err);
void oai_structured_free(oai_structured *s);

#endif
