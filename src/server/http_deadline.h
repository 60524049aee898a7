/* http_deadline.h - the request read deadline: a connection must deliver a
 * whole request (headers and body) within a fixed number of seconds of its
 * accept, or of the end of its previous request, however slowly it
 * trickles. libmicrohttpd's own timeout restarts on every byte received, so
 * a client sending one header byte a minute would hold its slot forever.
 *
 * A watchdog thread looks at every connection still reading a request a few
 * times a second and shuts down the socket of one past its deadline;
 * libmicrohttpd then sees the peer gone and closes the connection. Each
 * watched connection keeps a dup() of its socket, so that the descriptor
 * shut down is never one reused by a newer connection. Thread-safe. */
#ifndef ENC_SERVER_HTTP_DEADLINE_H
#define ENC_SERVER_HTTP_DEADLINE_H

#include <stddef.h>

typedef struct http_deadline http_deadline;
typedef struct http_deadline_conn http_deadline_conn;

/* A deadline of `seconds` (> 0). With `watch` set a thread enforces it;
 * without, only http_deadline_expire does (tests). NULL when out of memory
 * or when the thread cannot start. */
http_deadline *http_deadline_create(double seconds, int watch);
/* Stop the thread, free every entry still in. NULL is a no-op. */
void http_deadline_destroy(http_deadline *d);

/* Watch the connection on socket `fd`, reading from now. NULL when out of
 * memory or descriptors (the caller should refuse the connection). */
http_deadline_conn *http_deadline_add(http_deadline *d, int fd);
/* The connection's request is all in (reading 0: its deadline is off while
 * the reply is made), or it waits for its next one (1: the deadline starts
 * again from now). */
void http_deadline_reading(http_deadline *d, http_deadline_conn *c, int reading);
/* Stop watching (the connection closes); frees c. c NULL is a no-op. */
void http_deadline_remove(http_deadline *d, http_deadline_conn *c);

/* Shut down the socket of every connection still reading at monotonic time
 * `now` (seconds, as CLOCK_MONOTONIC) that started reading more than the
 * deadline before; each once. Returns how many it shut down now. */
size_t http_deadline_expire(http_deadline *d, double now);
/* CLOCK_MONOTONIC in seconds. */
double http_deadline_now(void);

#endif
