/* json_whole.h - parse a text that must be one JSON value and nothing more.
 *
 * cJSON's parse stops at the end of the first value and ignores what
 * follows, so `{"a": 1} garbage` or two objects on one line would pass as
 * the first alone. Files and lines that hold one value go through here. */
#ifndef ENC_BASE_JSON_WHOLE_H
#define ENC_BASE_JSON_WHOLE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The value of text[0, len), or NULL when it is not valid JSON or anything
 * but whitespace follows the value; *bad_at (may be NULL) is then the byte
 * offset where the text stops being one value. The caller deletes it. */
cJSON *json_parse_whole(const char *text, size_t len, size_t *bad_at);

#endif
