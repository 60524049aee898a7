/* http_deadline.c - the request read deadline (http_deadline.h): a doubly
 * linked list of the connections, each with the time its current request
 * began, under one mutex; a thread wakes every HTTP_DEADLINE_TICK_MS and
 * shuts down the sockets of those past it.
 *
 *   head <-> conn <-> conn <-> ...    conn: {dup'd fd, t_start, reading, shut}
 */
#define _GNU_SOURCE
#include "http_deadline.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { HTTP_DEADLINE_TICK_MS = 100 };

struct http_deadline_conn {
    http_deadline_conn *prev, *next;
    int fd;         /* a dup of the connection's socket, owned: closed on remove */
    double t_start; /* when its current request began (http_deadline_now) */
    int reading;    /* 1 while a request is coming in */
    int shut;       /* its socket was shut down */
};

struct http_deadline {
    pthread_mutex_t mu;  /* guards the list and `stopping` */
    pthread_cond_t wake; /* signals `stopping` */
    http_deadline_conn *head;
    double seconds;
    int stopping;
    int has_thread;
    pthread_t thread;
};

double http_deadline_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t http_deadline_expire(http_deadline *d, double now)
{
    size_t n = 0;
    pthread_mutex_lock(&d->mu);
    for (http_deadline_conn *c = d->head; c; c = c->next) {
        if (!c->reading || c->shut || now - c->t_start <= d->seconds) continue;
        shutdown(c->fd, SHUT_RDWR); /* the connection's own poll wakes with a hang-up */
        c->shut = 1;
        n++;
    }
    pthread_mutex_unlock(&d->mu);
    return n;
}

static void *http__deadline_main(void *arg)
{
    http_deadline *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += HTTP_DEADLINE_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&d->wake, &d->mu, &ts);
        if (d->stopping) break;
        pthread_mutex_unlock(&d->mu);
        http_deadline_expire(d, http_deadline_now());
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

http_deadline *http_deadline_create(double seconds, int watch)
{
    http_deadline *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->seconds = seconds;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&d->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&d->mu, NULL);
    if (watch && pthread_create(&d->thread, NULL, http__deadline_main, d) != 0) {
        http_deadline_destroy(d);
        return NULL;
    }
    d->has_thread = watch;
    return d;
}

void http_deadline_destroy(http_deadline *d)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->stopping = 1;
    pthread_cond_broadcast(&d->wake);
    pthread_mutex_unlock(&d->mu);
    if (d->has_thread) pthread_join(d->thread, NULL);
    for (http_deadline_conn *c = d->head, *next; c; c = next) {
        next = c->next;
        close(c->fd);
        free(c);
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->wake);
    free(d);
}

http_deadline_conn *http_deadline_add(http_deadline *d, int fd)
{
    http_deadline_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (c->fd < 0) {
        free(c);
        return NULL;
    }
    c->t_start = http_deadline_now();
    c->reading = 1;
    pthread_mutex_lock(&d->mu);
    c->next = d->head;
    if (d->head) d->head->prev = c;
    d->head = c;
    pthread_mutex_unlock(&d->mu);
    return c;
}

void http_deadline_reading(http_deadline *d, http_deadline_conn *c, int reading)
{
    if (!c) return;
    pthread_mutex_lock(&d->mu);
    c->reading = reading;
    if (reading) c->t_start = http_deadline_now();
    pthread_mutex_unlock(&d->mu);
}

void http_deadline_remove(http_deadline *d, http_deadline_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&d->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        d->head = c->next;
    if (c->next) c->next->prev = c->prev;
    pthread_mutex_unlock(&d->mu);
    close(c->fd);
    free(c);
}
