/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libclusterpipe on libuv (header only): cp_libuv_attach puts an event-loop client
 * (cp_client_new) on a uv_loop_t; cp_free frees it, as on any loop. The hooks are cp_event_ops
 * (clusterpipe.h, docs/async.md); the built-in loop, src/lib/api/loop.c, is the model.
 *
 *     uv_loop_t loop;
 *     uv_loop_init(&loop);
 *     cp_client *c = cp_client_new(&opt);
 *     cp_libuv_attach(c, &loop);
 *     cp_async_command(c, on_reply, ctx, "GET %s", key);
 *     uv_run(&loop, UV_RUN_DEFAULT);  // read interest stays on: uv_stop when done
 *     cp_free(c);                     // (or cp_free c in its last callback: uv_run then returns)
 *     uv_run(&loop, UV_RUN_DEFAULT);  // runs the close callbacks: the handles are freed there
 *     uv_loop_close(&loop);           // 0: nothing of the client's is left on the loop
 *
 * Who frees what:
 *  - Per connection: a uv_poll_t, made at the connection's first add_read or add_write and
 *    kept in its fd_data slot, restarted with the new events on each change. The cleanup hook
 *    (the library's last call for that fd, right before it closes it) uv_close's it: that stops
 *    the watch at once (the fd may be closed and its number reused right after), and the memory
 *    is freed in the close callback, on the loop's next turn.
 *  - Per client: a record with the uv_timer_t, made by cp_libuv_attach and uv_close'd by the
 *    detach hook, the library's last call for the client on this loop: from cp_free, or from
 *    cp_attach moving the client to another loop, adapter or cp_loop. The record is freed in
 *    the timer's close callback, on the loop's next turn. There is nothing else to call: plain
 *    cp_free is the whole story, from anywhere. When detach comes from inside this adapter's own
 *    callback for the client (cp_free in one of the client's callbacks takes effect as the
 *    library returns to that callback), the timer is stopped at once and closed as the
 *    adapter's callback returns.
 *  - The uv_loop_t is the caller's. Close it (uv_loop_close) after its clients are freed or
 *    have moved off it, and one more uv_run has run the close callbacks: a client leaves
 *    nothing on a loop it has left.
 *
 * Attaching again (to this or another loop) makes a new record; detach closes the old one. One
 * thread per uv_loop_t.
 */
#ifndef CLUSTERPIPE_ADAPTERS_LIBUV_H
#define CLUSTERPIPE_ADAPTERS_LIBUV_H

#include <stdlib.h>

#include <uv.h>

#include "clusterpipe/clusterpipe.h"

/* The adapter's record of one client. */
typedef struct cp_libuv_client {
    cp_client *c;
    uv_loop_t *loop;
    uv_timer_t timer;
    int depth; /* inside cp_on_ready / cp_on_timer called from here */
    int dying; /* detach came in there: close on the way out */
} cp_libuv_client;

/* One connection: what its fd_data slot holds. */
typedef struct cp__libuv_conn {
    cp_libuv_client *a;
    uv_poll_t poll;
    int fd;
    int events; /* UV_READABLE | UV_WRITABLE wanted */
} cp__libuv_conn;

static void cp__libuv_free_handle_data(uv_handle_t *h) {
    free(h->data);
}

/* The record goes: its timer is closed (stopped too), the memory freed in the close callback. */
static void cp__libuv_close_record(cp_libuv_client *a) {
    uv_close((uv_handle_t *)&a->timer, cp__libuv_free_handle_data);
}

static void cp__libuv_leave(cp_libuv_client *a) {
    if (--a->depth == 0 && a->dying)
        cp__libuv_close_record(a);
}

static void cp__libuv_on_poll(uv_poll_t *h, int status, int events) {
    cp__libuv_conn *e = (cp__libuv_conn *)h->data;
    cp_libuv_client *a = e->a; /* the conn may go in the call */
    int ev;
    if (status < 0) /* POLLERR: libuv has stopped the handle; the library's read finds out */
        ev = CP_EV_READ | ((e->events & UV_WRITABLE) ? CP_EV_WRITE : 0);
    else
        ev = ((events & (UV_READABLE | UV_DISCONNECT)) ? CP_EV_READ : 0) |
             ((events & UV_WRITABLE) ? CP_EV_WRITE : 0);
    a->depth++;
    cp_on_ready(a->c, e->fd, ev);
    cp__libuv_leave(a);
}

static void cp__libuv_on_timer(uv_timer_t *t) {
    cp_libuv_client *a = (cp_libuv_client *)t->data;
    a->depth++;
    cp_on_timer(a->c);
    cp__libuv_leave(a);
}

/* The connection's poll handle, made on first use. NULL when out of memory (or libuv refused the
 * fd): the fd then goes unwatched and its connection ends by the I/O or connect timeout, as with
 * cp_loop. */
static cp__libuv_conn *cp__libuv_conn_of(void *loop, int fd, void **slot) {
    cp__libuv_conn *e = (cp__libuv_conn *)*slot;
    if (e != NULL)
        return e;
    if ((e = (cp__libuv_conn *)calloc(1, sizeof(*e))) == NULL)
        return NULL;
    e->a = (cp_libuv_client *)loop;
    e->fd = fd;
    if (uv_poll_init_socket(e->a->loop, &e->poll, fd) != 0) {
        free(e); /* nothing registered with the loop yet: plain free */
        return NULL;
    }
    e->poll.data = e;
    *slot = e;
    return e;
}

/* Sets the events wanted and restarts (or stops) the poll when that changes anything; also
 * restarts one libuv stopped after reporting an error. */
static void cp__libuv_update(cp__libuv_conn *e, int on, int off) {
    int want = (e->events | on) & ~off;
    if (want == e->events && (want != 0) == (uv_is_active((uv_handle_t *)&e->poll) != 0))
        return;
    e->events = want;
    if (want != 0)
        uv_poll_start(&e->poll, want, cp__libuv_on_poll);
    else
        uv_poll_stop(&e->poll);
}

static void cp__libuv_add_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__libuv_conn *e = cp__libuv_conn_of(loop, fd, slot);
    if (e != NULL)
        cp__libuv_update(e, UV_READABLE, 0);
}

static void cp__libuv_del_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)loop, (void)c, (void)fd;
    if (*slot != NULL)
        cp__libuv_update((cp__libuv_conn *)*slot, 0, UV_READABLE);
}

static void cp__libuv_add_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__libuv_conn *e = cp__libuv_conn_of(loop, fd, slot);
    if (e != NULL)
        cp__libuv_update(e, UV_WRITABLE, 0);
}

static void cp__libuv_del_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)loop, (void)c, (void)fd;
    if (*slot != NULL)
        cp__libuv_update((cp__libuv_conn *)*slot, 0, UV_WRITABLE);
}

static void cp__libuv_cleanup(void *loop, cp_client *c, int fd, void **slot) {
    (void)loop, (void)c, (void)fd;
    cp__libuv_conn *e = (cp__libuv_conn *)*slot;
    if (e == NULL)
        return;
    /* Stops the watch now (the fd is closed right after); e is freed on the loop's next turn. */
    uv_close((uv_handle_t *)&e->poll, cp__libuv_free_handle_data);
    *slot = NULL;
}

static void cp__libuv_set_timer(void *loop, cp_client *c, long ms) {
    (void)c;
    cp_libuv_client *a = (cp_libuv_client *)loop;
    if (ms < 0)
        uv_timer_stop(&a->timer);
    else /* restarts an armed timer; relative to the loop's cached time, so it may fire early */
        uv_timer_start(&a->timer, cp__libuv_on_timer, (uint64_t)ms, 0);
}

/* The client leaves this loop (cp_free, or cp_attach elsewhere); its fds are cleaned up
 * already. From inside cp__libuv_on_poll / _on_timer for this client the record is still in use
 * there: that callback closes it on its way out. */
static void cp__libuv_detach(void *loop, cp_client *c) {
    (void)c;
    cp_libuv_client *a = (cp_libuv_client *)loop;
    if (a->depth > 0) {
        uv_timer_stop(&a->timer);
        a->dying = 1;
    } else {
        cp__libuv_close_record(a);
    }
}

static const cp_event_ops cp__libuv_ops = {
    cp__libuv_add_read, cp__libuv_del_read,  cp__libuv_add_write, cp__libuv_del_write,
    cp__libuv_cleanup,  cp__libuv_set_timer, cp__libuv_detach};

/* Puts c on loop (or moves it there). Returns 0, CP_ENOMEM, or CP_EINVAL (c or loop NULL, or
 * called from inside one of c's callbacks; c->err tells). On failure nothing changed. */
static inline int cp_libuv_attach(cp_client *c, uv_loop_t *loop) {
    if (c == NULL || loop == NULL)
        return CP_EINVAL;
    cp_libuv_client *a = (cp_libuv_client *)calloc(1, sizeof(*a));
    if (a == NULL)
        return CP_ENOMEM;
    a->c = c;
    a->loop = loop;
    uv_timer_init(loop, &a->timer); /* cannot fail */
    a->timer.data = a;
    /* Cleans up the old loop's registrations first, and detaches from it (an old record of
     * this adapter is closed there). */
    int rc = cp_attach(c, &cp__libuv_ops, a);
    if (rc != 0)
        cp__libuv_close_record(a); /* freed on the loop's next turn */
    return rc;
}

#endif /* CLUSTERPIPE_ADAPTERS_LIBUV_H */
