/* http_clients.h - requests admitted per client, for --max-queue-per-client.
 *
 * A client is named by a short string (the peer's IP address, or one name
 * for every holder of the API key). The table keeps one count per client
 * with requests admitted; a client whose count drops to 0 leaves it. Not
 * thread-safe: http.c calls it under the server's mutex. */
#ifndef ENC_SERVER_HTTP_CLIENTS_H
#define ENC_SERVER_HTTP_CLIENTS_H

#include <stddef.h>
#include <stdint.h>

enum { HTTP_CLIENT_ID_MAX = 64 }; /* bytes of a client's name, with the NUL */

typedef struct http_client_count {
    char id[HTTP_CLIENT_ID_MAX];
    int64_t n;                 /* requests admitted, > 0 */
} http_client_count;

typedef struct http_clients {
    http_client_count *items;  /* [n_items], unordered; owned, freed by http_clients_free */
    size_t n_items, cap_items;
} http_clients;

/* Add n to the count of `id` unless that makes it more than `max`: 1 when
 * added; 0 when over `max` (*was its count) or out of memory (*was -1). */
int http_clients_add(http_clients *t, const char *id, int64_t n, int64_t max, int64_t *was);
/* Take n from the count of `id` (added before). */
void http_clients_sub(http_clients *t, const char *id, int64_t n);
void http_clients_free(http_clients *t);

#endif
