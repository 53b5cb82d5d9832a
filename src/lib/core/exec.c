/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The core's side of the loop (exec.h): readiness on a node's connection (the connect and
 * handshake moved on, replies read, output written), the timer's work (connect and I/O
 * timeouts, retry rounds due, finished batches completed, the refresh's hedge), and when the
 * timer should next fire (the resolver's retries included). Every batch of a client runs through
 * here the same way: the caller's pipelines, the async layer's batches and the refresh's requests,
 * any number at once, so a slow or dead node holds back only its own commands. Calls only down:
 * recv.c, send.c, batch.c. One thread, the client's.
 */
#include "lib/core/exec.h"

#include "lib/core/batch.h"
#include "lib/client/lifecycle.h"
#include "lib/client/pool.h"
#include "lib/pubsub/sub.h"
#include "lib/core/recv.h"
#include "lib/core/send.h"
#include "lib/pubsub/tracklink.h"

void cp__exec_ready(cp__client *c, int n, int events) {
    cp__conn *conn = &c->nodes[n].conn;
    if (cp__conn_opening(conn)) {
        int rc = cp__client_conn_progress(c, conn, events);
        if (rc != 0) {
            cp__send_fail_node(c, n, rc, c->nodes[n].conn.errstr);
            return;
        }
        cp__lifecycle_check_up(c, n); /* ready now when there is no handshake */
        cp__send_pump(c, n);          /* AUTH, or commands queued while connecting */
        return;
    }
    if (events & CP__EV_READ)
        cp__recv_node(c, n);
    /* reading may have failed and closed it; a redirect may have queued more */
    if (c->nodes[n].conn.state != CP__CONN_CLOSED && (events & CP__EV_WRITE))
        cp__send_pump(c, n);
}

/* Writes what a pool connection has buffered; 0, or 1 when that failed it (pc is gone). */
static int pool_flush(cp__client *c, cp__pconn *pc, uint64_t now) {
    int rc = cp__conn_flush(&pc->conn, now);
    if (rc < 0) {
        cp__send_fail_pool(c, pc, rc, pc->conn.errstr);
        return 1;
    }
    cp__client_sync_conn(c, &pc->conn, cp__conn_interest(&pc->conn));
    return 0;
}

void cp__exec_pool_ready(cp__client *c, cp__pconn *pc, int events) {
    cp__conn *conn = &pc->conn;
    uint64_t now = cp__now_ns();
    if (cp__conn_opening(conn)) {
        int rc = cp__client_conn_progress(c, conn, events);
        if (rc != 0) {
            cp__send_fail_pool(c, pc, rc, conn->errstr);
            return;
        }
        cp__pool_send(c, pc, now); /* READY at once (no handshake): the command goes in */
        pool_flush(c, pc, now);    /* the handshake, or the command */
        return;
    }
    if ((events & CP__EV_READ) && cp__recv_pool(c, pc))
        return; /* it failed: gone */
    if (events & CP__EV_WRITE)
        pool_flush(c, pc, now);
    else
        cp__client_sync_conn(c, &pc->conn, cp__conn_interest(&pc->conn));
}

/* When node n's connection, with requests in flight, has waited too long for a reply: io_ns
 * after its last progress, or after its WAITs' timeouts when later; 0 for never (a WAIT 0). */
static uint64_t io_deadline(const cp__node *node, uint64_t io_ns) {
    if (node->wait_until == UINT64_MAX)
        return 0;
    uint64_t from = node->conn.last_io_ns;
    return (node->wait_until > from ? node->wait_until : from) + io_ns;
}

uint64_t cp__exec_next_wake(const cp__client *c) {
    uint64_t wake = 0;
#define EARLIER(t) (wake == 0 || (t) < wake ? (t) : wake)
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int n = 0; n < c->nnodes; n++) {
        const cp__node *node = &c->nodes[n];
        const cp__conn *conn = &node->conn;
        if (node->cautious)
            wake = EARLIER(node->cautious_until);
        if (cp__conn_opening(conn))
            wake = EARLIER(conn->connect_deadline);
        else if (conn->state != CP__CONN_CLOSED && conn->fcount > 0 &&
                 io_deadline(node, io_ns) != 0)
            wake = EARLIER(io_deadline(node, io_ns));
        else if (conn->state == CP__CONN_CLOSED && node->q.n > 0)
            wake = EARLIER(1); /* connect it */
    }
    uint64_t pool = cp__pool_next_wake(c), sub = cp__sub_next_wake(c);
    uint64_t tracking = cp__tlink_next_wake(c);
    uint64_t dns = cp__resolve_next_wake(&c->resolver);
    if (pool != 0)
        wake = EARLIER(pool);
    if (sub != 0)
        wake = EARLIER(sub);
    if (tracking != 0)
        wake = EARLIER(tracking);
    if (dns != 0)
        wake = EARLIER(dns);
    if (c->deferred.n > 0)
        wake = EARLIER(1);
    if (c->batch_wake != 0)
        wake = EARLIER(c->batch_wake);
    if (c->refresh.running && c->refresh.hedge_at != 0)
        wake = EARLIER(c->refresh.hedge_at);
    if (c->cluster && c->need_refresh && !c->refresh.running &&
        (c->running != NULL || c->refresh.not_before == 0))
        wake = EARLIER(c->refresh.not_before ? c->refresh.not_before : 1);
#undef EARLIER
    return wake;
}

void cp__exec_timers(cp__client *c) {
    cp__resolve_timers(&c->resolver); /* c-ares's retries; a query that ends wakes its conn */
    uint64_t now = cp__now_ns();
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        if (c->nodes[n].cautious && now >= c->nodes[n].cautious_until)
            c->nodes[n].cautious = 0; /* no refusal for a while: commands stream again */
        if (cp__conn_opening(conn) && now >= conn->connect_deadline)
            cp__send_fail_node(c, n, CP_ETIMEDOUT, cp__conn_timed_out(conn));
        else if (conn->state != CP__CONN_CLOSED && conn->fcount > 0 &&
                 io_deadline(&c->nodes[n], io_ns) != 0 && now >= io_deadline(&c->nodes[n], io_ns))
            cp__send_fail_node(c, n, CP_ETIMEDOUT, "no reply within the I/O timeout");
    }
    for (int i = 0; i < c->npool;) { /* a failed one leaves, the last one takes its place */
        cp__pconn *pc = c->pool[i];
        int opening = cp__conn_opening(&pc->conn) || pc->conn.state == CP__CONN_AUTH;
        if (opening && now >= pc->conn.connect_deadline)
            cp__send_fail_pool(c, pc, CP_ETIMEDOUT, cp__conn_timed_out(&pc->conn));
        else if (!opening && pc->deadline != 0 && now >= pc->deadline)
            cp__send_fail_pool(c, pc, CP_ETIMEDOUT,
                               "no reply within the blocking command's timeout plus the I/O "
                               "timeout");
        else
            i++;
    }
    cp__sub_timers(c, now);   /* subscriptions: links watched, (re)subscribing */
    cp__tlink_timers(c, now); /* RESP2's client-side cache: tracking links, REDIRECTs */
    cp__send_pump_all(c, 0);  /* connects nodes with queued commands */
    cp__send_kick_refresh(c, now);
    /* Each step may finish, free or start batches. The stamp marks the batches seen; after a
     * step the walk goes on from the batch's successor, or from the head when the batch left
     * the list. What is not due yet is the new lower bound. */
    unsigned stamp = ++c->stamp;
    c->batch_wake = 0;
    cp_pipeline *p = c->running;
    while (p != NULL) {
        if (p->stamp == stamp) {
            p = p->next_run;
            continue;
        }
        p->stamp = stamp;
        int due = cp__batch_finished(p) || (p->retry_at != 0 && now >= p->retry_at) ||
                  (p->wait_map && now >= p->deadline);
        if (!due) {
            if (p->retry_at != 0)
                cp__batch_wake_at(c, p->retry_at);
            else if (p->wait_map)
                cp__batch_wake_at(c, p->deadline);
            p = p->next_run;
            continue;
        }
        if (!cp__batch_finished(p)) {
            c->stepping = p; /* its last outcome waits for the end of the round: p stays */
            cp__send_run_retries(p, now);
            c->stepping = NULL;
        }
        if (cp__batch_finished(p)) {
            if (!cp__batch_may_complete(p)) { /* callbacks still put off: after them */
                cp__batch_wake_at(c, 1);
                p = p->next_run;
                continue;
            }
            cp__batch_complete(p); /* p may be gone: start over (the stamps skip what was seen) */
            p = c->running;
            continue;
        }
        p = p->next_run;
    }
    if (c->refresh.running && c->refresh.hedge_at != 0) {
        if (now >= c->refresh.hedge_at)
            cp__send_refresh(c, now, 1); /* no answer yet: a connected candidate too */
        else
            cp__batch_wake_at(c, c->refresh.hedge_at);
    }
    cp__send_pump_all(c, 0);
}
