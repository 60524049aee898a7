/* http_guard.h - the checks on a request's headers that need no server:
 * the media type, the Host header, the API key. http.c makes them on the
 * first call, before any of the body is read. */
#ifndef ENC_SERVER_HTTP_GUARD_H
#define ENC_SERVER_HTTP_GUARD_H

/* 1 when `content_type` is application/json, in any case, with or without
 * parameters ("application/json; charset=utf-8"); 0 for NULL or another. */
int http_guard_json_type(const char *content_type);

/* 1 when the name in `host` (a Host header: "name", "name:port",
 * "[v6]:port") is localhost, 127.0.0.1 or ::1, or one of `allowed` (a
 * comma-separated list of names, NULL for none; "*" in it accepts any host).
 * A missing Host (NULL, HTTP/1.0) is accepted: a browser always sends one. */
int http_guard_host(const char *host, const char *allowed);

/* 1 when `authorization` (the header, NULL when absent) is "Bearer KEY",
 * the scheme in any case (RFC 7235), then one or more spaces; KEY equal to
 * `key`, compared in time independent of where they differ. */
int http_guard_bearer(const char *authorization, const char *key);

#endif
