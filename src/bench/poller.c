/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A worker's epoll (poller.h) and the library's hooks over it: the library says when to watch
 * an fd for writing and when to wake the worker up. Syscalls are the cost that matters on
 * loopback, so fds are registered once, level-triggered, for reading; EPOLLOUT only while a
 * socket would block. A batch then costs one send per node, one recv per node (usually) and a
 * share of one epoll_wait. Library timers are run when the worker sweeps (every 10 ms), or at
 * once when the library asks for "now".
 *
 * Ownership: the epoll fd is the worker's context's (x->poll), opened and closed here; an fd's
 * registration lives in the connection's slot the library keeps for it. One thread, the
 * worker's.
 */
#include "bench/poller.h"

#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define MAX_EVENTS 256

/* ---- the library's hooks over this worker's epoll ---------------------------------------------
 * The loop pointer is the lane (cp__client_state); a connection's slot holds the events it is
 * registered with, plus REGISTERED once it is in epoll. */

#define REGISTERED 0x100u

static void set_interest(cp__client_state *cs, int fd, void **slot, unsigned on, unsigned off) {
    unsigned old = (unsigned)(uintptr_t)*slot, now = ((old | on) & ~off) | REGISTERED;
    if (now == old)
        return;
    struct epoll_event ev = {0};
    ev.events = ((now & CP_EV_READ) ? EPOLLIN : 0) | ((now & CP_EV_WRITE) ? EPOLLOUT : 0);
    ev.data.u64 = ((uint64_t)(uint32_t)(cs - cs->x->w->cs) << 32) | (uint32_t)fd;
    if (epoll_ctl(cs->x->poll.epfd, (old & REGISTERED) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) !=
        0)
        cp__acct_note_error(&cs->x->w->acct, "epoll_ctl: %s", strerror(errno));
    *slot = (void *)(uintptr_t)now;
}

static void ev_add_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, CP_EV_READ, 0);
}

static void ev_del_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, 0, CP_EV_READ);
}

static void ev_add_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, CP_EV_WRITE, 0);
}

static void ev_del_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, 0, CP_EV_WRITE);
}

static void ev_cleanup(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__client_state *cs = loop;
    if ((uintptr_t)*slot & REGISTERED)
        epoll_ctl(cs->x->poll.epfd, EPOLL_CTL_DEL, fd, NULL);
    *slot = NULL;
}

static void ev_set_timer(void *loop, cp_client *c, long ms) {
    (void)c;
    cp__client_state *cs = loop;
    if (ms < 0) {
        cs->timer_at = 0;
        return;
    }
    cs->timer_at = cp__now_ns() + (uint64_t)ms * 1000000ull;
    if (cs->x->poll.soonest == 0 || cs->timer_at < cs->x->poll.soonest)
        cs->x->poll.soonest = cs->timer_at;
}

static const cp_event_ops ops = {ev_add_read, ev_del_read,  ev_add_write, ev_del_write,
                                 ev_cleanup,  ev_set_timer, NULL /* detach */};

int cp__poller_open(cp__wctx *x) {
    x->poll.epfd = epoll_create1(EPOLL_CLOEXEC);
    return x->poll.epfd < 0 ? -1 : 0;
}

void cp__poller_close(cp__wctx *x) {
    if (x->poll.epfd >= 0)
        close(x->poll.epfd);
    x->poll.epfd = -1;
}

/* A client's lifecycle event, kept with its time for the run's "events" (engine.c merges the
 * workers' after the join). The worker's thread only: the library calls it from the loop. */
static void on_event(cp_client *c, const cp_event *ev, void *data) {
    (void)c;
    cp__worker *w = data;
    if (ev->type == CP_EVENT_READY)
        return; /* the first map, before the run */
    if (w->nevents == CP__BENCH_EVENTS) {
        w->events_lost++;
        return;
    }
    cp__bench_event *e = &w->events[w->nevents++];
    e->at_ns = ev->at_ns;
    e->type = (int)ev->type;
    e->clients = 1;
    if (ev->node >= 0)
        snprintf(e->addr, sizeof(e->addr), "%s:%d", ev->host, ev->port);
    else
        e->addr[0] = '\0';
}

int cp__poller_attach(cp__client_state *cs) {
    cp_set_event_callback(cs->c, on_event, cs->x->w);
    return cp_attach(cs->c, &ops, cs);
}

int cp__poller_wait(cp__wctx *x, int timeout_ms, uint64_t *now) {
    cp__worker *w = x->w;
    struct epoll_event evs[MAX_EVENTS];
    int n = epoll_wait(x->poll.epfd, evs, MAX_EVENTS, timeout_ms);
    if (n < 0 && errno != EINTR) {
        cp__acct_note_error(&w->acct, "epoll_wait: %s", strerror(errno));
        return -1;
    }
    *now = cp__now_ns();
    for (int k = 0; k < n; k++) {
        cp__client_state *cs = &w->cs[evs[k].data.u64 >> 32];
        int fd = (int)(uint32_t)evs[k].data.u64;
        uint32_t e = evs[k].events;
        cp_on_ready(cs->c, fd,
                    ((e & (EPOLLIN | EPOLLHUP | EPOLLERR)) ? CP_EV_READ : 0) |
                        ((e & (EPOLLOUT | EPOLLERR)) ? CP_EV_WRITE : 0));
    }
    return 0;
}

void cp__poller_timers(cp__wctx *x, uint64_t now) {
    cp__worker *w = x->w;
    x->poll.soonest = 0;
    for (int i = 0; i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if (cs->timer_at != 0 && now >= cs->timer_at) {
            cs->timer_at = 0;
            cp_on_timer(cs->c);
        }
        if (cs->timer_at != 0 && (x->poll.soonest == 0 || cs->timer_at < x->poll.soonest))
            x->poll.soonest = cs->timer_at;
    }
}
