/* http_guard.c - the checks on a request's headers (http_guard.h): the media
 * type of a POST body, the Host header of a server bound to a loopback
 * address (DNS rebinding: a web page whose name resolves to 127.0.0.1 must
 * not reach a local server), the API key. Pure functions of the header
 * strings, so that they are tested without a connection. */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "http_guard.h"

static const char *http_guard__skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

int http_guard_json_type(const char *content_type)
{
    static const char want[] = "application/json";
    if (!content_type) return 0;
    const char *p = http_guard__skip_space(content_type);
    if (strncasecmp(p, want, sizeof want - 1) != 0) return 0;
    p = http_guard__skip_space(p + sizeof want - 1);
    return *p == '\0' || *p == ';';
}

/* 1 when the n bytes at `name` equal one of the comma-separated names in
 * `list` (case-insensitively; spaces around a name are ignored), or the
 * list has "*". */
static int http_guard__in_list(const char *name, size_t n, const char *list)
{
    while (list && *list) {
        const char *item = http_guard__skip_space(list);
        const char *end = strchr(item, ',');
        size_t len = end ? (size_t)(end - item) : strlen(item);
        while (len && (item[len - 1] == ' ' || item[len - 1] == '\t'))
            len--;
        if ((len == 1 && item[0] == '*') || (len && len == n && strncasecmp(item, name, n) == 0))
            return 1;
        list = end ? end + 1 : NULL;
    }
    return 0;
}

int http_guard_host(const char *host, const char *allowed)
{
    if (!host || http_guard__in_list("*", 1, allowed)) return 1;
    const char *name = host, *end;
    if (*host == '[') { /* [v6] or [v6]:port */
        name = host + 1;
        end = strchr(name, ']');
        if (!end || (end[1] != '\0' && end[1] != ':')) return 0;
    } else {
        end = strchr(host, ':');
        if (!end) end = host + strlen(host);
    }
    size_t n = (size_t)(end - name);
    return http_guard__in_list(name, n, "localhost,127.0.0.1,::1") ||
           http_guard__in_list(name, n, allowed);
}

int http_guard_bearer(const char *authorization, const char *key)
{
    /* RFC 7235: the scheme is case-insensitive, then one or more spaces */
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0) return 0;
    const char *h = authorization + 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h), k = strlen(key);
    unsigned diff = n != k;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)h[i] ^ (unsigned char)key[i % (k ? k : 1)];
    return diff == 0;
}
