/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Event-loop integration: cp_attach, the loop's calls (cp_on_ready, cp_on_timer), starting a
 * pipeline without waiting (cp_exec_async) and freeing a client (cp_free). Every call from the
 * loop runs callbacks put off since the last one, lets the core work, then seals the turn's
 * async batch, brings every connection's registration in line and arms the one timer. The timer
 * is re-armed only when the next work is due earlier than it fires, and never disarmed while
 * the client is on the loop: one that fires early finds nothing due. The same timer wakes
 * library code that waits for a time or for the slot map (cp__events_wake_*: the async cluster
 * SCAN's pauses), folded into the next wake-up and run after the core's timer work. One thread,
 * the client's.
 */
#include "lib/base/alloc.h"
#include "lib/api/events.h"

#include "lib/core/batch.h"
#include "lib/client/pool.h"
#include "lib/pubsub/sub.h"
#include "lib/pubsub/tracklink.h"

#include <stdlib.h>

int cp__events_async_ok(const cp__client *c) {
    return c->ops != NULL && (c->own_loop == NULL || c->loop != c->own_loop);
}

/* ---- library code woken by the timer --------------------------------------------------------- */

static void wake_unlink(cp__client *c, cp__wake *w) {
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        c->wakes = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->armed = 0;
}

void cp__events_wake_at(cp__client *c, cp__wake *w, uint64_t at) {
    if (w->armed)
        wake_unlink(c, w);
    w->at = at;
    w->after_refresh = 0;
    w->pass = c->wake_pass;
    w->prev = NULL;
    w->next = c->wakes;
    if (c->wakes != NULL)
        c->wakes->prev = w;
    c->wakes = w;
    w->armed = 1;
}

void cp__events_wake_after_refresh(cp__client *c, cp__wake *w) {
    cp__events_wake_at(c, w, 0);
    w->after_refresh = 1;
    w->refresh_gen = c->refresh.generation;
}

void cp__events_wake_cancel(cp__client *c, cp__wake *w) {
    if (w->armed)
        wake_unlink(c, w);
}

/* When w is due: its time, or the end of the refresh it waits for (0: neither is known). */
static uint64_t wake_time(const cp__client *c, const cp__wake *w) {
    if (w->after_refresh && (!c->refresh.running || c->refresh.generation != w->refresh_gen))
        return 1;
    return w->at;
}

static uint64_t wakes_next(const cp__client *c) {
    uint64_t next = 0;
    for (const cp__wake *w = c->wakes; w != NULL; w = w->next) {
        uint64_t t = wake_time(c, w);
        if (t != 0 && (next == 0 || t < next))
            next = t;
    }
    return next;
}

/* Calls the wakes that are due (err 0), or every armed one (err CP_ECANCELED, cp_free). Each
 * call may arm, cancel or free wakes: the walk starts over after it, and a wake armed during
 * the run waits for the next one. */
static void run_wakes(cp__client *c, int err) {
    unsigned pass = ++c->wake_pass;
    uint64_t now = cp__now_ns();
again:
    for (cp__wake *w = c->wakes; w != NULL; w = w->next) {
        uint64_t t = wake_time(c, w);
        if (w->pass == pass || (err == 0 && (t == 0 || t > now)))
            continue;
        wake_unlink(c, w);
        w->fn(w->data, err);
        goto again;
    }
}

/* ---- the loop -------------------------------------------------------------------------------- */

static void arm_timer(cp__client *c) {
    if (c->ops == NULL)
        return;
    uint64_t wake = cp__exec_next_wake(c), mine = wakes_next(c);
    if (mine != 0 && (wake == 0 || mine < wake))
        wake = mine;
    /* Nothing due: an armed timer is left to fire early (harmless) rather than disarmed and
     * armed again around every batch, two calls into the loop per batch. */
    if (wake == 0 || (c->timer_at != 0 && c->timer_at <= wake))
        return;
    uint64_t now = cp__now_ns();
    long ms = wake <= now ? 0 : (long)((wake - now + 999999) / 1000000);
    c->ops->set_timer(c->loop, &c->pub, ms);
    c->timer_at = wake;
}

void cp__events_after_call(cp__client *c) {
    if (c->depth > 0)
        return; /* the loop's call that runs this callback does it on the way out */
    for (int n = 0; n < c->nnodes; n++)
        cp__client_sync_node(c, n);
    cp__pool_sync_all(c);
    cp__sub_sync_all(c);
    cp__tlink_sync_all(c);
    cp__client_sync_dns(c);
    arm_timer(c);
}

static void really_free(cp__client *c);

static void enter(cp__client *c) {
    c->depth++;
    cp__batch_flush_deferred(c);
}

/* Seals the turn's open async batch. A transaction whose EXEC did not come this turn is
 * refused: its commands end not executed (called back from here). */
static void seal(cp__client *c) {
    cp_pipeline *p = c->open;
    long u = cp__txn_refuse_open(p);
    if (u >= 0)
        for (uint32_t j = p->txns[u].first; j <= p->txns[u].last; j++)
            cp__send_add(p, j);
    p->sealed = 1;
    if (p->remaining == 0)
        cp__batch_wake_soon(c); /* finished already: completed from the timer */
    c->open = NULL;
    if (u >= 0)
        cp__batch_flush_deferred(c); /* the refusals' callbacks */
}

static void leave(cp__client *c) {
    if (c->depth > 1) {
        c->depth--;
        return;
    }
    cp__batch_flush_deferred(c); /* callbacks put off by sends made from callbacks */
    if (c->open != NULL)         /* this turn's async commands: a new batch from now on */
        seal(c);
    c->depth--;
    if (c->free_pending) {
        really_free(c);
        return;
    }
    cp__events_after_call(c);
}

int cp_attach(cp_client *pc, const cp_event_ops *ops, void *loop) {
    cp__client *c = cp__client_of(pc);
    if (ops == NULL || c->depth > 0)
        return cp__client_err(c, CP_EINVAL, "cp_attach: %s",
                              ops == NULL ? "no hooks given" : "not from inside a callback");
    if (c->ops != NULL) { /* leave the old loop clean */
        for (int n = 0; n < c->nnodes; n++)
            cp__client_unregister_conn(c, &c->nodes[n].conn);
        for (int i = 0; i < c->npool; i++)
            cp__client_unregister_conn(c, &c->pool[i]->conn);
        cp__sub_unregister_all(c);
        cp__tlink_unregister_all(c);
        cp__client_unregister_dns(c);
        if (c->timer_at != 0)
            c->ops->set_timer(c->loop, pc, -1);
        if (c->ops->detach != NULL)
            c->ops->detach(c->loop, pc);
    }
    c->ops = ops;
    c->loop = loop;
    c->timer_at = 0;
    cp__events_after_call(c);
    return 0;
}

void cp_on_ready(cp_client *pc, int fd, int events) {
    cp__client *c = cp__client_of(pc);
    for (int n = 0; n < c->nnodes; n++) {
        if (c->nodes[n].conn.fd != fd || c->nodes[n].conn.state == CP__CONN_CLOSED)
            continue;
        enter(c);
        cp__exec_ready(c, n, events);
        leave(c);
        return;
    }
    cp__pconn *blocking = cp__pool_of_fd(c, fd);
    if (blocking != NULL) {
        enter(c);
        cp__exec_pool_ready(c, blocking, events);
        leave(c);
        return;
    }
    cp__slink *link = cp__sub_of_fd(c, fd);
    if (link != NULL) {
        enter(c);
        cp__sub_ready(c, link, events);
        leave(c);
        return;
    }
    cp__tlink *tracking = cp__tlink_of_fd(c, fd);
    if (tracking != NULL) {
        enter(c);
        cp__tlink_ready(c, tracking, events);
        leave(c);
        return;
    }
    /* One of c-ares's sockets: the queries that end are told through their connections'
     * eventfds, which the loop reports next. */
    if (cp__resolve_sock(&c->resolver, fd) != NULL) {
        enter(c);
        cp__resolve_ready(&c->resolver, fd, events);
        leave(c);
    }
}

void cp_on_timer(cp_client *pc) {
    cp__client *c = cp__client_of(pc);
    c->timer_at = 0;
    enter(c);
    cp__exec_timers(c);
    if (!c->free_pending)
        run_wakes(c, 0);
    leave(c);
}

int cp_exec_async(cp_pipeline *p, cp_exec_callback *done, void *privdata) {
    cp__client *c = p->c;
    int rc = 0;
    if (!cp__events_async_ok(c) || c->closing)
        rc = CP_EINVAL;
    else if (p->executed || p->running)
        rc = CP_EINVAL;
    else if (c->pending + p->cmds.n + p->parts.n > c->max_pending)
        rc = CP_ELIMIT;
    if (rc != 0) {
        cp__pipeline_set_err(p, rc, "cp_exec_async: %s",
                             rc == CP_ELIMIT ? "max_pending commands queued or in flight"
                             : p->executed   ? "the pipeline ran since its last reset"
                                             : "not an event-loop client");
        return rc;
    }
    p->done = done;
    p->done_data = privdata;
    cp__send_start(p, 1); /* a pipeline is one unit already: it goes out now */
    cp__events_after_call(c);
    return 0;
}

int cp_subscribe(cp_client *pc, cp_sub_kind kind, const char *name, size_t len, cp_sub_callback *cb,
                 void *privdata) {
    cp__client *c = cp__client_of(pc);
    if (!cp__events_async_ok(c) || c->closing || cb == NULL || (name == NULL && len > 0))
        return cp__client_err(c, CP_EINVAL, "cp_subscribe: %s",
                              cb == NULL || (name == NULL && len > 0) ? "no callback or no name"
                              : c->closing                            ? "the client is being freed"
                                           : "not an event-loop client (a subscription needs a "
                                             "loop: cp_attach, cp_loop)");
    int rc = cp__sub_add(c, (int)kind, name != NULL ? name : "", len, cb, privdata);
    if (rc == 0)
        cp__events_after_call(c); /* sent from the loop's next call */
    return rc;
}

int cp_unsubscribe(cp_client *pc, cp_sub_kind kind, const char *name, size_t len) {
    cp__client *c = cp__client_of(pc);
    if (name == NULL && len > 0)
        return cp__client_err(c, CP_EINVAL, "cp_unsubscribe: no name");
    int rc = cp__sub_remove(c, (int)kind, name != NULL ? name : "", len);
    if (rc == 0)
        cp__events_after_call(c);
    return rc;
}

static void really_free(cp__client *c) {
    c->free_pending = 0;
    c->event_cb = NULL; /* cp_free tells no lifecycle events (event.h) */
    cp__batch_cancel_all(c, CP_ECANCELED, "the client was freed");
    /* Then what waits for the timer hears of the end (a SCAN step: its callback), from a client
     * that takes no more work. */
    c->closing = 1;
    c->depth++;
    run_wakes(c, CP_ECANCELED);
    cp__sub_end_all(c, CP_ECANCELED, "the client was freed");
    c->depth--;
    for (int n = 0; n < c->nnodes; n++) /* every fd cleaned up, then the client leaves */
        cp__client_close_node(c, n);
    cp__resolve_free(&c->resolver); /* c-ares's sockets leave the loop as they close */
    if (c->ops != NULL) {
        if (c->timer_at != 0)
            c->ops->set_timer(c->loop, &c->pub, -1);
        if (c->ops->detach != NULL)
            c->ops->detach(c->loop, &c->pub);
        c->ops = NULL;
    }
    while (c->spare != NULL) {
        cp_pipeline *p = c->spare;
        c->spare = p->next_spare;
        cp__pipeline_destroy(p);
    }
    if (c->single != NULL)
        cp__pipeline_destroy(c->single);
    cp__free(c->deferred.v);
    void *own = c->own_loop;
    void (*own_free)(void *) = c->own_loop_free;
    cp__client_destroy(c); /* tells the loop of every fd first */
    if (own != NULL)
        own_free(own);
}

void cp_free(cp_client *pc) {
    if (pc == NULL)
        return;
    cp__client *c = cp__client_of(pc);
    if (c->depth > 0) { /* inside a callback: when the loop's call returns */
        c->free_pending = 1;
        return;
    }
    really_free(c);
}
