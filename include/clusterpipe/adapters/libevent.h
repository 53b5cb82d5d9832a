/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libclusterpipe on libevent 2 (header only): cp_libevent_attach puts an event-loop client
 * (cp_client_new) on an event_base; cp_free frees it, as on any loop. The hooks are
 * cp_event_ops (clusterpipe.h, docs/async.md); the built-in loop, src/lib/api/loop.c, is the model.
 *
 *     struct event_base *base = event_base_new();
 *     cp_client *c = cp_client_new(&opt);
 *     cp_libevent_attach(c, base);
 *     cp_async_command(c, on_reply, ctx, "GET %s", key);
 *     event_base_dispatch(base);  // read interest stays on: break out of it when done
 *     cp_free(c);                 // (or cp_free c in its last callback: dispatch then returns
 *     event_base_free(base);      // by itself, as nothing of c is left on the base)
 *
 * Who frees what:
 *  - Per connection: a read and a write event, made at the connection's first add_read or
 *    add_write and kept in its fd_data slot; the cleanup hook (the library's last call for that
 *    fd, right before it closes it) frees them, so closing connections never leaks.
 *  - Per client: a record with the timer event, made by cp_libevent_attach and freed by the
 *    detach hook, the library's last call for the client on this base: from cp_free, or from
 *    cp_attach moving the client to another base, adapter or cp_loop. There is nothing else to
 *    call: plain cp_free is the whole story, from anywhere. When detach comes from inside this
 *    adapter's own callback for the client (cp_free in one of the client's callbacks takes
 *    effect as the library returns to that callback), the timer is deleted at once and the
 *    record, still in use up the stack, is freed as the adapter's callback returns.
 *  - The event_base is the caller's. Free it (event_base_free) after its clients are freed or
 *    have moved off it: a client leaves nothing on a base it has left.
 *
 * Attaching again (to this or another base) makes a new record; detach frees the old one. One
 * thread per base, as always with libevent; the client belongs to the base's thread.
 */
#ifndef CLUSTERPIPE_ADAPTERS_LIBEVENT_H
#define CLUSTERPIPE_ADAPTERS_LIBEVENT_H

#include <stdlib.h>

#include <event2/event.h>

#include "clusterpipe/clusterpipe.h"

/* The adapter's record of one client. */
typedef struct cp_libevent_client {
    cp_client *c;
    struct event_base *base;
    struct event *timer;
    int depth; /* inside cp_on_ready / cp_on_timer called from here */
    int dying; /* detach came in there: free on the way out */
} cp_libevent_client;

/* One connection: what its fd_data slot holds. */
typedef struct cp__libevent_conn {
    cp_libevent_client *a;
    struct event *rd, *wr;
} cp__libevent_conn;

static void cp__libevent_free_record(cp_libevent_client *a) {
    event_free(a->timer); /* deletes it first */
    free(a);
}

static void cp__libevent_leave(cp_libevent_client *a) {
    if (--a->depth == 0 && a->dying)
        cp__libevent_free_record(a);
}

static void cp__libevent_on_io(evutil_socket_t fd, short what, void *arg) {
    cp_libevent_client *a = ((cp__libevent_conn *)arg)->a; /* the conn may go in the call */
    int ev = ((what & EV_READ) ? CP_EV_READ : 0) | ((what & EV_WRITE) ? CP_EV_WRITE : 0);
    a->depth++;
    cp_on_ready(a->c, (int)fd, ev);
    cp__libevent_leave(a);
}

static void cp__libevent_on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    cp_libevent_client *a = (cp_libevent_client *)arg;
    a->depth++;
    cp_on_timer(a->c);
    cp__libevent_leave(a);
}

/* The connection's events, made on first use. NULL when out of memory: the fd then goes
 * unwatched and its connection ends by the I/O or connect timeout, as with cp_loop. */
static cp__libevent_conn *cp__libevent_conn_of(void *loop, int fd, void **slot) {
    cp__libevent_conn *e = (cp__libevent_conn *)*slot;
    if (e != NULL)
        return e;
    cp_libevent_client *a = (cp_libevent_client *)loop;
    if ((e = (cp__libevent_conn *)calloc(1, sizeof(*e))) == NULL)
        return NULL;
    e->a = a;
    e->rd = event_new(a->base, fd, EV_READ | EV_PERSIST, cp__libevent_on_io, e);
    e->wr = event_new(a->base, fd, EV_WRITE | EV_PERSIST, cp__libevent_on_io, e);
    if (e->rd == NULL || e->wr == NULL) {
        if (e->rd != NULL)
            event_free(e->rd);
        if (e->wr != NULL)
            event_free(e->wr);
        free(e);
        return NULL;
    }
    *slot = e;
    return e;
}

static void cp__libevent_add_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__libevent_conn *e = cp__libevent_conn_of(loop, fd, slot);
    if (e != NULL)
        event_add(e->rd, NULL);
}

static void cp__libevent_del_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)loop, (void)c, (void)fd;
    if (*slot != NULL)
        event_del(((cp__libevent_conn *)*slot)->rd);
}

static void cp__libevent_add_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__libevent_conn *e = cp__libevent_conn_of(loop, fd, slot);
    if (e != NULL)
        event_add(e->wr, NULL);
}

static void cp__libevent_del_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)loop, (void)c, (void)fd;
    if (*slot != NULL)
        event_del(((cp__libevent_conn *)*slot)->wr);
}

static void cp__libevent_cleanup(void *loop, cp_client *c, int fd, void **slot) {
    (void)loop, (void)c, (void)fd;
    cp__libevent_conn *e = (cp__libevent_conn *)*slot;
    if (e == NULL)
        return;
    event_free(e->rd); /* event_free deletes the event first */
    event_free(e->wr);
    free(e);
    *slot = NULL;
}

static void cp__libevent_set_timer(void *loop, cp_client *c, long ms) {
    (void)c;
    cp_libevent_client *a = (cp_libevent_client *)loop;
    if (ms < 0) {
        evtimer_del(a->timer);
        return;
    }
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    evtimer_add(a->timer, &tv); /* re-adding a pending timer moves it */
}

/* The client leaves this base (cp_free, or cp_attach elsewhere); its fds are cleaned up
 * already. From inside cp__libevent_on_io / _on_timer for this client the record is still in
 * use there: that callback frees it on its way out. */
static void cp__libevent_detach(void *loop, cp_client *c) {
    (void)c;
    cp_libevent_client *a = (cp_libevent_client *)loop;
    if (a->depth > 0) {
        evtimer_del(a->timer);
        a->dying = 1;
    } else {
        cp__libevent_free_record(a);
    }
}

static const cp_event_ops cp__libevent_ops = {
    cp__libevent_add_read, cp__libevent_del_read,  cp__libevent_add_write, cp__libevent_del_write,
    cp__libevent_cleanup,  cp__libevent_set_timer, cp__libevent_detach};

/* Puts c on base (or moves it there). Returns 0, CP_ENOMEM, or CP_EINVAL (c or base NULL, or
 * called from inside one of c's callbacks; c->err tells). On failure nothing changed. */
static inline int cp_libevent_attach(cp_client *c, struct event_base *base) {
    if (c == NULL || base == NULL)
        return CP_EINVAL;
    cp_libevent_client *a = (cp_libevent_client *)calloc(1, sizeof(*a));
    if (a == NULL)
        return CP_ENOMEM;
    a->c = c;
    a->base = base;
    if ((a->timer = evtimer_new(base, cp__libevent_on_timer, a)) == NULL) {
        free(a);
        return CP_ENOMEM;
    }
    /* Cleans up the old loop's registrations first, and detaches from it (an old record of
     * this adapter goes there). */
    int rc = cp_attach(c, &cp__libevent_ops, a);
    if (rc != 0)
        cp__libevent_free_record(a);
    return rc;
}

#endif /* CLUSTERPIPE_ADAPTERS_LIBEVENT_H */
