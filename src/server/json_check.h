/* json_check.h - what cJSON accepts in a request body but encore refuses,
 * found with the path of the field so that the 400 can name it: a string
 * holding U+0000 (written "\u0000", or a raw NUL byte), which cJSON would
 * hand over cut short at the NUL, and a key written twice in one object,
 * of which cJSON's lookups would silently see only the first. */
#ifndef ENC_SERVER_JSON_CHECK_H
#define ENC_SERVER_JSON_CHECK_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* 1 when a string of text[0..len) (a key or a value) holds U+0000, with its
 * path ("prompt", "messages[1].content", "stop[0]") in path[cap]; else 0.
 * `root` is cJSON's parse of the same text. */
int json_check_nul(const char *text, size_t len, const cJSON *root, char *path, size_t cap);

/* 1 when an object anywhere in `root` has two members with the same key,
 * the path of the second in path[cap] ("prompt", "messages[0].role"); 0
 * when none does; -1 when out of memory. */
int json_check_dup(const cJSON *root, char *path, size_t cap);

#endif
