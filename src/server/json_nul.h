/* json_nul.h - find a JSON string that holds U+0000 (written "\u0000", or a
 * raw NUL byte), which cJSON would hand over cut short at the NUL. */
#ifndef ENC_SERVER_JSON_NUL_H
#define ENC_SERVER_JSON_NUL_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* 1 when a string of text[0..len) (a key or a value) holds U+0000, with its
 * path ("prompt", "messages[1].content", "stop[0]") in path[cap]; else 0.
 * `root` is cJSON's parse of the same text. */
int json_nul_find(const char *text, size_t len, const cJSON *root, char *path, size_t cap);

#endif
