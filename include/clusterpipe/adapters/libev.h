/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libclusterpipe on libev (header only): cp_libev_attach puts an event-loop client
 * (cp_client_new) on a struct ev_loop; cp_free frees it, as on any loop. The hooks are
 * cp_event_ops (clusterpipe.h, docs/async.md); the built-in loop, src/lib/api/loop.c, is the model.
 *
 *     struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);   // or EV_DEFAULT
 *     cp_client *c = cp_client_new(&opt);
 *     cp_libev_attach(c, loop);
 *     cp_async_command(c, on_reply, ctx, "GET %s", key);
 *     ev_run(loop, 0);        // read interest stays on: ev_break when done
 *     cp_free(c);             // (or cp_free c in its last callback: ev_run then returns by
 *     ev_loop_destroy(loop);  // itself, as no watcher of c is left on the loop)
 *
 * Who frees what:
 *  - Per connection: an ev_io watcher per direction, in one allocation made at the connection's
 *    first add_read or add_write and kept in its fd_data slot; the cleanup hook (the library's
 *    last call for that fd, right before it closes it) stops both and frees it.
 *  - Per client: a record with the ev_timer, made by cp_libev_attach and freed by the detach
 *    hook, the library's last call for the client on this loop: from cp_free, or from cp_attach
 *    moving the client to another loop, adapter or cp_loop. There is nothing else to call: plain
 *    cp_free is the whole story, from anywhere. When detach comes from inside this adapter's own
 *    callback for the client (cp_free in one of the client's callbacks takes effect as the
 *    library returns to that callback), the timer is stopped at once and the record, still in
 *    use up the stack, is freed as the adapter's callback returns.
 *  - The ev_loop is the caller's. Destroy it (ev_loop_destroy) after its clients are freed or
 *    have moved off it: a client leaves nothing on a loop it has left.
 *
 * Attaching again (to this or another loop) makes a new record; detach frees the old one. One
 * thread per ev_loop. ev.h and libevent's event2/event.h both define EV_READ and friends: one
 * source file can have only one of them (or #undef libevent's EV_TIMEOUT, EV_READ, EV_WRITE,
 * EV_SIGNAL in between).
 */
#ifndef CLUSTERPIPE_ADAPTERS_LIBEV_H
#define CLUSTERPIPE_ADAPTERS_LIBEV_H

#include <stdlib.h>

#include <ev.h>

#include "clusterpipe/clusterpipe.h"

/* The adapter's record of one client. */
typedef struct cp_libev_client {
    cp_client *c;
    struct ev_loop *loop;
    ev_timer timer;
    int depth; /* inside cp_on_ready / cp_on_timer called from here */
    int dying; /* detach came in there: free on the way out */
} cp_libev_client;

/* One connection: what its fd_data slot holds. */
typedef struct cp__libev_conn {
    cp_libev_client *a;
    ev_io rd, wr;
} cp__libev_conn;

static void cp__libev_free_record(cp_libev_client *a) {
    ev_timer_stop(a->loop, &a->timer); /* also drops an event still pending for it */
    free(a);
}

static void cp__libev_leave(cp_libev_client *a) {
    if (--a->depth == 0 && a->dying)
        cp__libev_free_record(a);
}

static void cp__libev_on_io(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop;
    cp_libev_client *a = ((cp__libev_conn *)w->data)->a; /* the conn may go in the call */
    int ev = ((revents & (EV_READ | EV_ERROR)) ? CP_EV_READ : 0) |
             ((revents & EV_WRITE) ? CP_EV_WRITE : 0);
    a->depth++;
    cp_on_ready(a->c, w->fd, ev);
    cp__libev_leave(a);
}

static void cp__libev_on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)revents;
    cp_libev_client *a = (cp_libev_client *)w->data;
    a->depth++;
    cp_on_timer(a->c);
    cp__libev_leave(a);
}

/* The connection's watchers, made on first use. NULL when out of memory: the fd then goes
 * unwatched and its connection ends by the I/O or connect timeout, as with cp_loop. */
static cp__libev_conn *cp__libev_conn_of(void *loop, int fd, void **slot) {
    cp__libev_conn *e = (cp__libev_conn *)*slot;
    if (e != NULL)
        return e;
    if ((e = (cp__libev_conn *)calloc(1, sizeof(*e))) == NULL)
        return NULL;
    e->a = (cp_libev_client *)loop;
    ev_io_init(&e->rd, cp__libev_on_io, fd, EV_READ);
    ev_io_init(&e->wr, cp__libev_on_io, fd, EV_WRITE);
    e->rd.data = e->wr.data = e;
    *slot = e;
    return e;
}

static void cp__libev_add_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__libev_conn *e = cp__libev_conn_of(loop, fd, slot);
    if (e != NULL)
        ev_io_start(e->a->loop, &e->rd); /* a no-op when started */
}

static void cp__libev_del_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c, (void)fd;
    if (*slot != NULL)
        ev_io_stop(((cp_libev_client *)loop)->loop, &((cp__libev_conn *)*slot)->rd);
}

static void cp__libev_add_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__libev_conn *e = cp__libev_conn_of(loop, fd, slot);
    if (e != NULL)
        ev_io_start(e->a->loop, &e->wr);
}

static void cp__libev_del_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c, (void)fd;
    if (*slot != NULL)
        ev_io_stop(((cp_libev_client *)loop)->loop, &((cp__libev_conn *)*slot)->wr);
}

static void cp__libev_cleanup(void *loop, cp_client *c, int fd, void **slot) {
    (void)c, (void)fd;
    cp__libev_conn *e = (cp__libev_conn *)*slot;
    if (e == NULL)
        return;
    struct ev_loop *l = ((cp_libev_client *)loop)->loop;
    ev_io_stop(l, &e->rd); /* also drops an event still pending for this iteration */
    ev_io_stop(l, &e->wr);
    free(e);
    *slot = NULL;
}

static void cp__libev_set_timer(void *loop, cp_client *c, long ms) {
    (void)c;
    cp_libev_client *a = (cp_libev_client *)loop;
    ev_timer_stop(a->loop, &a->timer);
    if (ms < 0)
        return;
    /* Relative to the loop's cached time, so it may fire early: the library allows that. */
    ev_timer_set(&a->timer, (ev_tstamp)ms / 1000.0, 0.0);
    ev_timer_start(a->loop, &a->timer);
}

/* The client leaves this loop (cp_free, or cp_attach elsewhere); its fds are cleaned up
 * already. From inside cp__libev_on_io / _on_timer for this client the record is still in use
 * there: that callback frees it on its way out. */
static void cp__libev_detach(void *loop, cp_client *c) {
    (void)c;
    cp_libev_client *a = (cp_libev_client *)loop;
    if (a->depth > 0) {
        ev_timer_stop(a->loop, &a->timer);
        a->dying = 1;
    } else {
        cp__libev_free_record(a);
    }
}

static const cp_event_ops cp__libev_ops = {
    cp__libev_add_read, cp__libev_del_read,  cp__libev_add_write, cp__libev_del_write,
    cp__libev_cleanup,  cp__libev_set_timer, cp__libev_detach};

/* Puts c on loop (or moves it there). Returns 0, CP_ENOMEM, or CP_EINVAL (c or loop NULL, or
 * called from inside one of c's callbacks; c->err tells). On failure nothing changed. */
static inline int cp_libev_attach(cp_client *c, struct ev_loop *loop) {
    if (c == NULL || loop == NULL)
        return CP_EINVAL;
    cp_libev_client *a = (cp_libev_client *)calloc(1, sizeof(*a));
    if (a == NULL)
        return CP_ENOMEM;
    a->c = c;
    a->loop = loop;
    ev_timer_init(&a->timer, cp__libev_on_timer, 0.0, 0.0);
    a->timer.data = a;
    /* Cleans up the old loop's registrations first, and detaches from it (an old record of
     * this adapter goes there). */
    int rc = cp_attach(c, &cp__libev_ops, a);
    if (rc != 0)
        free(a); /* its timer was never started */
    return rc;
}

#endif /* CLUSTERPIPE_ADAPTERS_LIBEV_H */
