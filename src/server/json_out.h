/* json_out.h - JSON written straight into one growable string, for replies
 * too large to build as a tree first (a cJSON node per token, per byte and
 * per log-probability alternative). The text is what cJSON_PrintUnformatted
 * prints for the same values, byte for byte: the same escapes, the same
 * number format.
 *
 *   json_out w;
 *   json_out_init(&w);
 *   json_out_begin_object(&w);
 *   json_out_key(&w, "n");  json_out_number(&w, 3);
 *   json_out_key(&w, "ids"); json_out_begin_array(&w); ... json_out_end_array(&w);
 *   json_out_end_object(&w);
 *   char *text = json_out_finish(&w);  // {"n":3,"ids":[...]}, or NULL when out of memory
 *
 * Out of memory is sticky: every later call does nothing, and
 * json_out_finish returns NULL (and frees). Nesting deeper than
 * JSON_OUT_MAX_DEPTH, or closing what is not open, fails the same way. */
#ifndef ENC_SERVER_JSON_OUT_H
#define ENC_SERVER_JSON_OUT_H

#include <stddef.h>

enum { JSON_OUT_MAX_DEPTH = 16 };

typedef struct json_out {
    char *buf; /* [cap], NUL-terminated at len; owned until json_out_finish */
    size_t len, cap;
    int oom;       /* a growth failed (or the nesting did): the text is lost */
    int depth;     /* objects and arrays open */
    int after_key; /* a key was written: its value comes next, no comma */
    unsigned char first[JSON_OUT_MAX_DEPTH + 1]; /* 1 until the first item at each depth */
} json_out;

void json_out_init(json_out *w);
/* The text (malloc'd, the caller frees it), or NULL when out of memory; w is
 * empty afterwards. */
char *json_out_finish(json_out *w);
/* Drop the text. */
void json_out_free(json_out *w);

void json_out_begin_object(json_out *w);
void json_out_end_object(json_out *w);
void json_out_begin_array(json_out *w);
void json_out_end_array(json_out *w);
/* A member's name, in an object; its value is the next call. */
void json_out_key(json_out *w, const char *key);
/* Values. A NULL string writes "" (as cJSON does); json_out_string_or_null
 * writes null for it. NaN and infinities are written null. */
void json_out_string(json_out *w, const char *s);
void json_out_string_or_null(json_out *w, const char *s);
void json_out_number(json_out *w, double d);
void json_out_null(json_out *w);
/* A member of an object: its name and value. */
void json_out_member_string(json_out *w, const char *name, const char *s);
void json_out_member_number(json_out *w, const char *name, double d);
/* Text that is JSON already, written as it is: one value (json_out_raw), or
 * in an object, members "\"a\":1,\"b\":2" ("" writes nothing). */
void json_out_raw(json_out *w, const char *json);
void json_out_members(json_out *w, const char *members);

/* 1 when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates); the
 * strings written are (other bytes become \ufffd). */
int json_utf8_valid(const char *s, size_t len);

#endif
