/* http_clients.c - requests admitted per client: an unordered array of
 * (name, count), searched linearly. Only clients with requests admitted
 * are in it, so it holds at most --max-queue entries and, in practice,
 * about as many as there are clients at once. */
#include "http_clients.h"

#include <stdlib.h>
#include <string.h>

static http_client_count *http__clients_find(http_clients *t, const char *id)
{
    for (size_t i = 0; i < t->n_items; i++)
        if (!strncmp(t->items[i].id, id, HTTP_CLIENT_ID_MAX - 1)) return &t->items[i];
    return NULL;
}

int http_clients_add(http_clients *t, const char *id, int64_t n, int64_t max, int64_t *was)
{
    http_client_count *c = http__clients_find(t, id);
    *was = c ? c->n : 0;
    if (*was + n > max) return 0;
    if (!c) {
        if (t->n_items == t->cap_items) {
            size_t cap = t->cap_items ? t->cap_items * 2 : 16;
            http_client_count *p = realloc(t->items, cap * sizeof *p);
            if (!p) {
                *was = -1;
                return 0;
            }
            t->items = p;
            t->cap_items = cap;
        }
        c = &t->items[t->n_items++];
        memset(c, 0, sizeof *c);
        strncpy(c->id, id, sizeof c->id - 1);
    }
    c->n += n;
    return 1;
}

void http_clients_sub(http_clients *t, const char *id, int64_t n)
{
    http_client_count *c = http__clients_find(t, id);
    if (!c) return;
    c->n -= n;
    if (c->n <= 0) *c = t->items[--t->n_items]; /* the last one takes its place */
}

void http_clients_free(http_clients *t)
{
    free(t->items);
    memset(t, 0, sizeof *t);
}
