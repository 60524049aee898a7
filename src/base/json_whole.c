/* json_whole.c - one JSON value and nothing after it (json_whole.h). */
#include "base/json_whole.h"

cJSON *json_parse_whole(const char *text, size_t len, size_t *bad_at)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    while (v && at < len &&
           (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r'))
        at++;
    if (v && at < len) {
        cJSON_Delete(v);
        v = NULL;
    }
    if (!v && bad_at) *bad_at = at;
    return v;
}
