/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The target client's registrations (tpoll.h). Each carries a number that no later registration
 * reuses, kept beside the pollfds written, so a result is handed over only while the fd it was
 * polled for is still registered as it was.
 */
#include "migrate/tpoll.h"

#include <stdint.h>
#include <stdlib.h>

#include "util/clock.h"

typedef struct reg {
    int fd;
    short events;
    unsigned id;
} reg;

struct cp__tpoll {
    cp_client *c;
    reg *r;
    int n, cap;
    unsigned next_id;
    unsigned *polled; /* the id of each fd written by the last fill */
    int polled_cap;
    int64_t timer_at; /* cp__now_ms; -1: disarmed */
};

cp__tpoll *cp__tpoll_new(void) {
    cp__tpoll *t = calloc(1, sizeof *t);
    if (t != NULL)
        t->timer_at = -1;
    return t;
}

void cp__tpoll_free(cp__tpoll *t) {
    if (t == NULL)
        return;
    free(t->r);
    free(t->polled);
    free(t);
}

static reg *find(cp__tpoll *t, int fd) {
    for (int i = 0; i < t->n; i++)
        if (t->r[i].fd == fd)
            return &t->r[i];
    return NULL;
}

/* fd's events turned on and off; a new fd registered (out of memory: not watched, and its
 * connection ends by the I/O timeout, as the library documents). */
static void set_events(void *loop, int fd, short on, short off) {
    cp__tpoll *t = loop;
    reg *r = find(t, fd);
    if (r == NULL) {
        if (t->n == t->cap) {
            int cap = t->cap ? t->cap * 2 : 16;
            reg *v = realloc(t->r, (size_t)cap * sizeof *v);
            if (v == NULL)
                return;
            t->r = v;
            t->cap = cap;
        }
        r = &t->r[t->n++];
        *r = (reg){.fd = fd, .id = ++t->next_id};
    }
    r->events = (short)((r->events | on) & ~off);
}

static void add_read(void *loop, cp_client *c, int fd, void **data) {
    (void)c, (void)data;
    set_events(loop, fd, POLLIN, 0);
}

static void del_read(void *loop, cp_client *c, int fd, void **data) {
    (void)c, (void)data;
    set_events(loop, fd, 0, POLLIN);
}

static void add_write(void *loop, cp_client *c, int fd, void **data) {
    (void)c, (void)data;
    set_events(loop, fd, POLLOUT, 0);
}

static void del_write(void *loop, cp_client *c, int fd, void **data) {
    (void)c, (void)data;
    set_events(loop, fd, 0, POLLOUT);
}

static void cleanup(void *loop, cp_client *c, int fd, void **data) {
    (void)c, (void)data;
    cp__tpoll *t = loop;
    reg *r = find(t, fd);
    if (r != NULL)
        *r = t->r[--t->n];
}

static void set_timer(void *loop, cp_client *c, long ms) {
    (void)c;
    cp__tpoll *t = loop;
    t->timer_at = ms < 0 ? -1 : cp__now_ms() + ms;
}

static void detach(void *loop, cp_client *c) {
    (void)c;
    cp__tpoll *t = loop;
    t->n = 0;
    t->timer_at = -1;
}

static const cp_event_ops tpoll_ops = {add_read, del_read,  add_write, del_write,
                                       cleanup,  set_timer, detach};

int cp__tpoll_attach(cp__tpoll *t, cp_client *c) {
    t->c = c;
    return cp_attach(c, &tpoll_ops, t);
}

int cp__tpoll_count(const cp__tpoll *t) {
    return t->n;
}

int cp__tpoll_fill(cp__tpoll *t, struct pollfd *pf, int *timeout_ms) {
    if (t->n > t->polled_cap) {
        unsigned *p = realloc(t->polled, (size_t)t->n * sizeof *p);
        if (p == NULL)
            return 0; /* out of memory: this turn polls only the timer */
        t->polled = p;
        t->polled_cap = t->n;
    }
    for (int i = 0; i < t->n; i++) {
        /* an fd wanted for nothing is not polled: poll would still report its hang-up at every
         * turn, and nothing would take it */
        pf[i] = (struct pollfd){.fd = t->r[i].events ? t->r[i].fd : -1, .events = t->r[i].events};
        t->polled[i] = t->r[i].id;
    }
    if (t->timer_at >= 0) {
        int64_t left = t->timer_at - cp__now_ms();
        int ms = left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
        if (*timeout_ms < 0 || ms < *timeout_ms)
            *timeout_ms = ms;
    }
    return t->n;
}

void cp__tpoll_dispatch(cp__tpoll *t, const struct pollfd *pf, int n) {
    for (int i = 0; i < n; i++) {
        if (pf[i].revents == 0)
            continue;
        reg *r = find(t, pf[i].fd);
        if (r == NULL || r->id != t->polled[i])
            continue; /* closed by a callback of this turn (and maybe reopened) */
        int ev = (pf[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL) ? CP_EV_READ : 0) |
                 (pf[i].revents & POLLOUT ? CP_EV_WRITE : 0);
        if (pf[i].revents & (POLLHUP | POLLERR))
            ev |= r->events & POLLOUT ? CP_EV_WRITE : 0; /* a failed connect is seen by writing */
        cp_on_ready(t->c, pf[i].fd, ev);
    }
    if (t->timer_at >= 0 && cp__now_ms() >= t->timer_at) {
        t->timer_at = -1;
        cp_on_timer(t->c);
    }
}
