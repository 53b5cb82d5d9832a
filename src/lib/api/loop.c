/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The built-in loop, cp_loop: poll(2) over the fds of any number of clients plus one timer per
 * client, through the same cp_event_ops hooks any adapter implements (it uses only the public
 * API). Blocking clients run on one of these too (blocking.c).
 *
 * Callbacks may close fds, open new ones (maybe with the same number) and free clients while a
 * turn's results are being handled, so each registration carries a generation: a result is
 * handled only while its registration is still the one polled, and the lists are searched again
 * after every call into a client. One thread.
 */
#include "clusterpipe/clusterpipe.h"
#include "lib/base/alloc.h"
#include "util/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

typedef struct watch {
    cp_client *c;
    int fd;
    short events;
    unsigned gen;
} watch;

typedef struct timer {
    cp_client *c;
    uint64_t at; /* CLOCK_MONOTONIC ns */
} timer;

struct cp_loop {
    watch *w;
    int nw, capw;
    timer *t;
    int nt, capt;
    unsigned gen;
    struct pollfd *pfd; /* scratch for poll(2) */
    unsigned *pgen;
    int cappfd;
};

cp_loop *cp_loop_new(void) {
    return cp__calloc(1, sizeof(cp_loop));
}

void cp_loop_free(cp_loop *l) {
    if (l == NULL)
        return;
    cp__free(l->w);
    cp__free(l->t);
    cp__free(l->pfd);
    cp__free(l->pgen);
    cp__free(l);
}

static watch *find_watch(cp_loop *l, int fd) {
    for (int i = 0; i < l->nw; i++)
        if (l->w[i].fd == fd)
            return &l->w[i];
    return NULL;
}

/* The watch for fd, made when new. NULL when out of memory: then that fd is not watched and its
 * connection ends by the I/O timeout, the documented worst case. */
static watch *get_watch(cp_loop *l, cp_client *c, int fd) {
    watch *w = find_watch(l, fd);
    if (w != NULL)
        return w;
    if (l->nw == l->capw) {
        int ncap = l->capw ? l->capw * 2 : 16;
        watch *v = cp__realloc(l->w, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return NULL;
        l->w = v;
        l->capw = ncap;
    }
    w = &l->w[l->nw++];
    *w = (watch){c, fd, 0, ++l->gen};
    return w;
}

static void set_events(void *loop, cp_client *c, int fd, short on, short off) {
    watch *w = get_watch(loop, c, fd);
    if (w != NULL)
        w->events = (short)((w->events | on) & ~off);
}

static void add_read(void *loop, cp_client *c, int fd, void **data) {
    (void)data;
    set_events(loop, c, fd, POLLIN, 0);
}

static void del_read(void *loop, cp_client *c, int fd, void **data) {
    (void)data;
    set_events(loop, c, fd, 0, POLLIN);
}

static void add_write(void *loop, cp_client *c, int fd, void **data) {
    (void)data;
    set_events(loop, c, fd, POLLOUT, 0);
}

static void del_write(void *loop, cp_client *c, int fd, void **data) {
    (void)data;
    set_events(loop, c, fd, 0, POLLOUT);
}

static void cleanup(void *loop, cp_client *c, int fd, void **data) {
    (void)c, (void)data;
    cp_loop *l = loop;
    watch *w = find_watch(l, fd);
    if (w != NULL)
        *w = l->w[--l->nw];
}

static void set_timer(void *loop, cp_client *c, long ms) {
    cp_loop *l = loop;
    int i = 0;
    while (i < l->nt && l->t[i].c != c)
        i++;
    if (ms < 0) {
        if (i < l->nt)
            l->t[i] = l->t[--l->nt];
        return;
    }
    if (i == l->nt) {
        if (l->nt == l->capt) {
            int ncap = l->capt ? l->capt * 2 : 8;
            timer *v = cp__realloc(l->t, (size_t)ncap * sizeof(*v));
            if (v == NULL)
                return; /* out of memory: the client's timeouts wait for its next event */
            l->t = v;
            l->capt = ncap;
        }
        l->t[l->nt++].c = c;
    }
    l->t[i].at = cp__now_ns() + (uint64_t)ms * 1000000ull;
}

/* The client leaves: nothing of it may stay (its fds were cleaned up; this is the safety net). */
static void detach(void *loop, cp_client *c) {
    cp_loop *l = loop;
    set_timer(loop, c, -1);
    for (int i = 0; i < l->nw;)
        if (l->w[i].c == c)
            l->w[i] = l->w[--l->nw];
        else
            i++;
}

static const cp_event_ops loop_ops = {add_read, del_read,  add_write, del_write,
                                      cleanup,  set_timer, detach};

int cp_loop_attach(cp_loop *l, cp_client *c) {
    return cp_attach(c, &loop_ops, l);
}

/* Fires the first due timer; 1 when one fired (the lists may have changed: look again). */
static int fire_one_timer(cp_loop *l, uint64_t now) {
    for (int i = 0; i < l->nt; i++)
        if (l->t[i].at <= now) {
            cp_client *c = l->t[i].c;
            l->t[i] = l->t[--l->nt];
            cp_on_timer(c);
            return 1;
        }
    return 0;
}

int cp_loop_run_once(cp_loop *l, int timeout_ms) {
    uint64_t now = cp__now_ns();
    for (int i = 0; i < l->nt; i++) {
        uint64_t at = l->t[i].at;
        int ms = at <= now ? 0 : (int)((at - now + 999999) / 1000000);
        if (timeout_ms < 0 || ms < timeout_ms)
            timeout_ms = ms;
    }
    if (l->nw > l->cappfd) {
        struct pollfd *p = cp__realloc(l->pfd, (size_t)l->nw * sizeof(*p));
        if (p != NULL)
            l->pfd = p;
        unsigned *g = cp__realloc(l->pgen, (size_t)l->nw * sizeof(*g));
        if (g != NULL)
            l->pgen = g;
        if (p == NULL || g == NULL) {
            errno = ENOMEM;
            return CP_EIO;
        }
        l->cappfd = l->nw;
    }
    nfds_t n = l->nw > 0 ? (nfds_t)l->nw : 0;
    for (nfds_t i = 0; i < n; i++) {
        l->pfd[i] = (struct pollfd){.fd = l->w[i].fd, .events = l->w[i].events};
        l->pgen[i] = l->w[i].gen;
    }
    int ready = poll(l->pfd, n, timeout_ms);
    if (ready < 0) {
        if (errno == EINTR)
            return 0;
        return CP_EIO; /* EINVAL (more fds than RLIMIT_NOFILE) or ENOMEM: waiting cannot help */
    }
    int handled = 0;
    for (nfds_t i = 0; i < n && ready > 0; i++) {
        short re = l->pfd[i].revents;
        if (re == 0)
            continue;
        ready--;
        watch *w = find_watch(l, l->pfd[i].fd);
        if (w == NULL || w->gen != l->pgen[i])
            continue; /* closed (maybe reopened) since the poll */
        int ev = ((re & (POLLIN | POLLHUP | POLLERR)) ? CP_EV_READ : 0) |
                 ((re & (POLLOUT | POLLERR | POLLHUP)) && (w->events & POLLOUT) ? CP_EV_WRITE : 0);
        cp_on_ready(w->c, l->pfd[i].fd, ev);
        handled++;
    }
    now = cp__now_ns();
    while (fire_one_timer(l, now))
        handled++;
    return handled;
}

int cp_loop_run(cp_loop *l) {
    for (;;) {
        int busy = 0;
        for (int i = 0; i < l->nw && !busy; i++)
            busy = cp_pending(l->w[i].c) > 0;
        for (int i = 0; i < l->nt && !busy; i++)
            busy = cp_pending(l->t[i].c) > 0;
        if (!busy)
            return 0;
        int rc = cp_loop_run_once(l, -1);
        if (rc < 0)
            return rc;
    }
}
