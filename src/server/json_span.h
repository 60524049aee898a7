/* json_span.h - where a member's value lies in JSON text, as it was written.
 *
 * cJSON keeps neither source positions nor the spelling of numbers (1.0 and
 * 1 parse the same). Where the text as the client or the model wrote it
 * matters (a tool call's arguments, the tools a chat template prints), this
 * finds it in text that cJSON has already accepted. */
#ifndef ENC_SERVER_JSON_SPAN_H
#define ENC_SERVER_JSON_SPAN_H

#include <stddef.h>

/* text[0..len) is a valid JSON object: 1 with [*begin, *end) the value of
 * its first top-level member whose key is written exactly as `key` (no
 * escapes), else 0. */
int json_span_member(const char *text, size_t len, const char *key, size_t *begin, size_t *end);

/* text[begin..end) with the whitespace outside strings removed, malloc'd
 * and NUL-terminated (the caller frees it); NULL when out of memory. */
char *json_span_compact(const char *text, size_t begin, size_t end);

/* The elements of the array text[begin..end) (valid JSON): *count of them,
 * element i at [(*spans)[2i], (*spans)[2i + 1]) (malloc'd, the caller frees
 * it). 0 when out of memory or not an array. */
int json_span_elements(const char *text, size_t begin, size_t end, size_t **spans, size_t *count);

/* The object text[begin..end) (valid JSON) without its whitespace and
 * without the top-level members whose key is written exactly as `key`,
 * malloc'd; NULL when out of memory or not an object. */
char *json_span_object_without(const char *text, size_t begin, size_t end, const char *key);

/* 1 when text[0..len) is JSON that cJSON prints as `printed` (the same value
 * as one checked before, compared by its print: cJSON_Compare takes time
 * exponential in the depth), 0 when not, -1 when out of memory. */
int json_span_prints_as(const char *text, size_t len, const char *printed);

/* 1 when s[0..n) holds a control byte JSON allows nowhere (cJSON takes them
 * as whitespace and inside strings; the chat template's reader does not). */
int json_span_has_control(const char *s, size_t n);

#endif
