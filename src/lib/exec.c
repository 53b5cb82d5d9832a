/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Pipeline execution: routes each command to the node serving its slot, writes to every node
 * before reading any, reads replies as they arrive on all connections, and follows the cluster's
 * answers: MOVED (patch the slot, resend), ASK (ASKING + resend, map untouched),
 * TRYAGAIN/CLUSTERDOWN/LOADING and broken connections (retry rounds with exponential backoff and
 * jitter inside the client's retry budget). Every command ends with an outcome and, when the
 * server answered, its reply.
 *
 * Execution is event-driven (cp_exec_start / cp_exec_on_ready / cp_exec_on_timer) so one event
 * loop can drive many clients; cp_exec is that same loop over poll(2). Runs on the pipeline's
 * thread; touches only the pipeline and its client.
 */
#include "lib/pipeline.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

/* ---- execution --------------------------------------------------------------------------------
 */

/* The command's outcome is final. A part may complete its split command. */
static inline void finish(cp_pipeline *p, uint32_t tag, cp_outcome outcome) {
    cp__cmd *cmd = cp__get(p, tag);
    cmd->outcome = (uint8_t)outcome;
    p->remaining--;
    if (cmd->parent >= 0) {
        cp__cmd *parent = &p->cmds.v[cmd->parent];
        if (--parent->pending == 0)
            cp__merge_parts(p, (size_t)cmd->parent);
    }
}

/* The command's answer came (anything but a redirect or a retry): its outcome is final. */
static inline void answered(cp_pipeline *p, uint32_t tag, redisReply *r, uint64_t now) {
    cp__cmd *cmd = cp__get(p, tag);
    cmd->reply = r;
    cmd->done_ns = now;
    finish(p, tag, CP_DONE);
}

static inline void enqueue(cp_pipeline *p, int n, uint32_t tag) {
    cp__node *node = &p->c->nodes[n];
    cp__get(p, tag)->next = CP__NIL;
    if (node->qtail == CP__NIL)
        node->qhead = tag;
    else
        cp__get(p, node->qtail)->next = tag;
    node->qtail = tag;
}

/* The node serving the command's slot. */
static inline int node_of(cp_pipeline *p, const cp__cmd *cmd) {
    cp__client *c = p->c;
    int n = 0;
    if (c->cluster) {
        n = cmd->slot >= 0 ? cp__routes_lookup(&c->routes, cmd->slot) : -1;
        /* No known owner: any master answers with MOVED or CLUSTERDOWN, which we follow. */
        if (n < 0)
            n = cp__client_any_node(c);
    }
    return n;
}

static inline void route(cp_pipeline *p, uint32_t tag) {
    enqueue(p, node_of(p, cp__get(p, tag)), tag);
}

/* route() for a command's first send (begin): straight into its node's output buffer when
 * nothing waits before it there and the connection is open (pump would move it there next,
 * in this order); queued otherwise. One pass over the batch instead of two. */
static inline void dispatch(cp_pipeline *p, uint32_t tag, uint64_t now) {
    cp__cmd *cmd = cp__get(p, tag);
    int n = node_of(p, cmd);
    cp__node *node = &p->c->nodes[n];
    cp__conn *conn = &node->conn;
    if (node->qhead == CP__NIL && conn->fd >= 0 && conn->olen - conn->opos < CP__OBUF_SOFT_LIMIT &&
        cp__conn_push(conn, p->arena.data + cmd->off, cmd->len, tag) == 0) {
        cmd->sent_ns = now; /* as pump would: latency counts from the first send */
        return;
    }
    enqueue(p, n, tag);
}

/* Backoff for retry round r: 2 ms doubling up to 512 ms, with jitter in [half, full]. */
static uint64_t backoff_ns(cp_pipeline *p) {
    unsigned shift = p->round < 8 ? p->round : 8;
    uint64_t base = 2000000ull << shift;
    return base / 2 + cp__client_rand(p->c, (uint32_t)(base / 2));
}

/* Puts a command aside for the next retry round, or ends it when the budget is spent: "unknown"
 * when it was ever written (it may have run), else "not executed". */
static void retry_later(cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = cp__get(p, tag);
    uint64_t now = cp__now_ns();
    if (now >= p->deadline) {
        finish(p, tag, (cmd->flags & CP__F_WRITTEN) ? CP_UNKNOWN : CP_NOT_EXECUTED);
        return;
    }
    if (p->nretry == p->capretry) {
        size_t ncap = p->capretry ? p->capretry * 2 : 64;
        uint32_t *r = realloc(p->retry, ncap * sizeof(*r));
        if (r == NULL) {
            cp__pipeline_set_err(p, CP_ENOMEM, "out of memory");
            finish(p, tag, (cmd->flags & CP__F_WRITTEN) ? CP_UNKNOWN : CP_NOT_EXECUTED);
            return;
        }
        p->retry = r;
        p->capretry = ncap;
    }
    p->retry[p->nretry++] = tag;
    if (p->retry_at == 0) {
        p->retry_at = now + backoff_ns(p);
        if (p->retry_at > p->deadline)
            p->retry_at = p->deadline;
    }
}

/* A written command lost its connection before the answer: re-send it only when that cannot
 * change data twice (read-only, or the caller flagged it idempotent). */
static void lost_in_flight(cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = cp__get(p, tag);
    cmd->flags |= CP__F_WRITTEN;
    if (cmd->flags & (CP__F_READONLY | CP__F_IDEMPOTENT)) {
        p->c->stats.io_retries++;
        retry_later(p, tag);
    } else {
        finish(p, tag, CP_UNKNOWN);
    }
}

/* Node n's connection is unusable: requests written on it end unknown (or are retried when
 * safe), requests not yet written go to the next retry round, and the map is re-read then. */
static void fail_node(cp_pipeline *p, int n, int code, const char *why) {
    cp__client *c = p->c;
    cp__conn *conn = &c->nodes[n].conn;
    cp__pipeline_set_err(p, code, "%s:%d: %s", c->nodes[n].host, c->nodes[n].port, why);
    for (size_t i = 0; i < conn->fcount; i++) {
        uint32_t tag = cp__conn_tag(conn, i);
        if (tag == CP__ASKING_TAG)
            continue;
        if (cp__conn_was_written(conn, i))
            lost_in_flight(p, tag);
        else
            retry_later(p, tag);
    }
    cp__conn_close(conn);
    c->nodes[n].failed_ns = cp__now_ns();
    while (c->nodes[n].qhead != CP__NIL) {
        uint32_t tag = c->nodes[n].qhead;
        c->nodes[n].qhead = cp__get(p, tag)->next;
        retry_later(p, tag);
    }
    c->nodes[n].qtail = CP__NIL;
    c->need_refresh = 1;
    p->node_failed = 1; /* a failover may be under way: re-read the map before the next round */
}

/* Connects node n if needed, moves queued commands into its output buffer (bounded) and writes
 * as much as the socket takes. */
static void pump(cp_pipeline *p, int n) {
    cp__client *c = p->c;
    if (c->nodes[n].qhead == CP__NIL && c->nodes[n].conn.olen == c->nodes[n].conn.opos)
        return; /* nothing to send: the common case after every read, without a clock read */
    uint64_t now = cp__now_ns();
    if (c->nodes[n].conn.fd < 0) {
        if (c->nodes[n].qhead == CP__NIL)
            return;
        if (cp__client_connect_node(c, n) != 0) {
            fail_node(p, n, c->nodes[n].conn.err, c->nodes[n].conn.errstr);
            return;
        }
    }
    cp__node *node = &c->nodes[n];
    cp__conn *conn = &node->conn;
    for (;;) {
        while (node->qhead != CP__NIL && conn->olen - conn->opos < CP__OBUF_SOFT_LIMIT) {
            uint32_t tag = node->qhead;
            cp__cmd *cmd = cp__get(p, tag);
            node->qhead = cmd->next;
            if (node->qhead == CP__NIL)
                node->qtail = CP__NIL;
            int rc = 0;
            if (cmd->flags & CP__F_ASKING) {
                cmd->flags &= (uint8_t)~CP__F_ASKING;
                rc = cp__conn_push(conn, asking_cmd, sizeof(asking_cmd) - 1, CP__ASKING_TAG);
            }
            if (rc == 0)
                rc = cp__conn_push(conn, p->arena.data + cmd->off, cmd->len, tag);
            if (cmd->sent_ns == 0) /* latency counts from the first send, redirects included */
                cmd->sent_ns = now;
            if (rc != 0) {
                cp__pipeline_set_err(p, CP_ENOMEM, "out of memory");
                finish(p, tag, CP_NOT_EXECUTED);
            }
        }
        int rc = cp__conn_flush(conn);
        if (rc < 0) {
            fail_node(p, n, rc, conn->errstr);
            return;
        }
        if (rc == 1 || node->qhead == CP__NIL)
            return;
    }
}

/* Acts on one reply: the answer, or a redirect / retry the caller never sees. */
static void on_reply(cp_pipeline *p, int n, uint32_t tag, redisReply *r, uint64_t now) {
    cp__client *c = p->c;
    if (tag == CP__ASKING_TAG) /* its command's own reply tells what happened */
        return;
    cp__cmd *cmd = cp__get(p, tag);
    int slot = 0, port = 0, m;
    char host[CP__HOSTLEN];
    cp__errkind kind = c->cluster && r->type == REDIS_REPLY_ERROR /* the call only for errors */
                           ? cp__classify(r, &slot, host, sizeof(host), &port)
                           : CP__ERR_NONE;
    switch (kind) {
    case CP__ERR_MOVED:
    case CP__ERR_ASK:
        if (kind == CP__ERR_MOVED)
            c->stats.moved++;
        else
            c->stats.ask++;
        /* A redirect loop ends at max_redirects (at most 255, what the uint8_t counter holds:
         * compared before counting, so it can never wrap) or at the batch's deadline: the first
         * hop is always followed (a stale slot map is routine after a reshard), later ones only
         * while the retry budget lasts. */
        if (cmd->redirects >= c->max_redirects || (cmd->redirects > 0 && now >= p->deadline)) {
            if (cmd->redirects >= c->max_redirects)
                cp__pipeline_set_err(p, CP_EREDIRECT, "more than %d redirects: %.60s",
                                     c->max_redirects, r->str);
            else
                cp__pipeline_set_err(p, CP_EREDIRECT,
                                     "retry budget spent after %u redirects: %.60s",
                                     (unsigned)cmd->redirects, r->str);
            cmd->reply = r;
            finish(p, tag, CP_NOT_EXECUTED);
            return;
        }
        cmd->redirects++;
        /* Redis may leave the host out (":port"): it means the host we asked. */
        m = cp__client_node(c, host[0] ? host : c->nodes[n].host, port);
        if (m < 0) {
            cp__pipeline_set_err(p, m, "cannot add node %s:%d", host, port);
            cmd->reply = r;
            finish(p, tag, CP_NOT_EXECUTED);
            return;
        }
        /* The server's word on the key's slot: retry rounds route by it (a caller's slot given
         * with cp_append_argv_slot may have been wrong). */
        cmd->slot = slot;
        if (kind == CP__ERR_MOVED) {
            cp__routes_patch(&c->routes, slot, m);
            c->nodes[m].is_master = 1;
            c->need_refresh = 1; /* the rest of the map is read once, before the next batch */
        } else {
            cmd->flags |= CP__F_ASKING;
        }
        enqueue(p, m, tag);
        return;
    case CP__ERR_TRYAGAIN:
    case CP__ERR_CLUSTERDOWN:
    case CP__ERR_LOADING:
        if (kind == CP__ERR_TRYAGAIN)
            c->stats.tryagain++;
        else if (kind == CP__ERR_CLUSTERDOWN) {
            c->stats.clusterdown++;
            c->need_refresh = 1;
            p->node_failed = 1;
        } else
            c->stats.loading++;
        /* Kept so that a command given up at the end of the budget shows why. */
        cmd->reply = r;
        if (cp__now_ns() >= p->deadline)
            cp__pipeline_set_err(p, CP_ESERVER, "retry budget spent: %.80s", r->str);
        retry_later(p, tag);
        return;
    default:
        answered(p, tag, r, now);
    }
}

/* Reads what node n has sent and acts on every complete reply. Replies that arrived before an
 * EOF or error are still delivered; only then is the connection failed. */
static void drain(cp_pipeline *p, int n) {
    cp__client *c = p->c;
    int rc = cp__conn_fill(&c->nodes[n].conn);
    uint64_t now = c->nodes[n].conn.last_io_ns; /* every new reply arrived with the last read */
    for (;;) {
        redisReply *r = NULL;
        uint32_t tag;
        /* on_reply may add nodes (realloc): re-read c->nodes[n] every time. */
        int got = cp__conn_reply(&c->nodes[n].conn, &r, &tag);
        if (got == 0)
            break;
        if (got < 0) {
            fail_node(p, n, got, c->nodes[n].conn.errstr);
            return;
        }
        if (tag != CP__ASKING_TAG && (r->type != REDIS_REPLY_ERROR || !c->cluster))
            answered(p, tag, r, now); /* nearly every reply: no call into on_reply */
        else
            on_reply(p, n, tag, r, now);
    }
    if (rc < 0)
        fail_node(p, n, rc, c->nodes[n].conn.errstr);
}

/* Starts the next retry round: re-read the map when something failed, re-route in order. */
static void run_retries(cp_pipeline *p) {
    cp__client *c = p->c;
    p->retry_at = 0;
    p->round++;
    /* After a broken connection or CLUSTERDOWN the map may be stale (a replica promoted), so it
     * is re-read before the round, spaced so a cluster in failover is not hammered. MOVED alone
     * never refreshes mid-batch: its slot is patched and the map is re-read before the next. */
    if (c->cluster && p->node_failed && cp__now_ns() - c->last_refresh_ns >= 50000000ull) {
        p->node_failed = 0;
        cp__client_refresh(c);
    }
    size_t n = p->nretry;
    p->nretry = 0;
    for (size_t i = 0; i < n; i++)
        route(p, p->retry[i]);
}

/* Ends every command still without an outcome as CP_UNKNOWN: a safety net that should never
 * fire. */
static void abandon(cp_pipeline *p) {
    for (size_t i = 0; i < p->cmds.n; i++)
        if (p->cmds.v[i].outcome == CP_PENDING && !(p->cmds.v[i].flags & CP__F_SPLIT))
            finish(p, (uint32_t)i, CP_UNKNOWN);
    for (size_t j = 0; j < p->parts.n; j++)
        if (p->parts.v[j].outcome == CP_PENDING)
            finish(p, CP__PART_TAG | (uint32_t)j, CP_UNKNOWN);
    p->remaining = 0;
}

/* A command the batch gives up on: unknown when it was ever written (it may have run), else not
 * executed. */
static void give_up(cp_pipeline *p, uint32_t tag, int written) {
    cp__cmd *cmd = cp__get(p, tag);
    if (cmd->outcome == CP_PENDING)
        finish(p, tag, written || (cmd->flags & CP__F_WRITTEN) ? CP_UNKNOWN : CP_NOT_EXECUTED);
}

/* Ends the batch at once, when waiting cannot go on (poll(2) failing for good, no memory for its
 * descriptors). Every connection with requests on it is closed and every node queue emptied, so
 * the client's next batch starts clean instead of reading this one's replies. */
static void end_batch(cp_pipeline *p, int code, const char *why) {
    cp__client *c = p->c;
    cp__pipeline_set_err(p, code, "%s", why);
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        for (size_t i = 0; i < conn->fcount; i++)
            if (cp__conn_tag(conn, i) != CP__ASKING_TAG)
                give_up(p, cp__conn_tag(conn, i), cp__conn_was_written(conn, i));
        if (conn->fcount > 0 || conn->olen > conn->opos)
            cp__conn_close(conn);
        while (c->nodes[n].qhead != CP__NIL) {
            uint32_t tag = c->nodes[n].qhead;
            c->nodes[n].qhead = cp__get(p, tag)->next;
            give_up(p, tag, 0);
        }
        c->nodes[n].qtail = CP__NIL;
    }
    for (size_t i = 0; i < p->nretry; i++)
        give_up(p, p->retry[i], 0);
    p->nretry = 0;
    p->retry_at = 0;
    abandon(p); /* nothing should be left; if anything is, it may have run */
}

/* Routes every command: parts of split commands instead of their parent; a command whose keys
 * span slots without splitting is refused here, without being sent. */
static void begin(cp_pipeline *p) {
    cp__client *c = p->c;
    p->executed = 1;
    c->replies = &p->replies; /* this batch's replies are built in its arena */
    p->remaining = 0;
    p->round = 0;
    p->retry_at = 0;
    p->nretry = 0;
    p->node_failed = 0;
    /* The map is re-read at most once per batch, lazily, after a MOVED in an earlier one. */
    if (c->cluster && c->need_refresh)
        cp__client_refresh(c);
    if (c->routes.stale) /* MOVED patched slots and no refresh rebuilt the runs */
        cp__routes_rebuild(&c->routes);
    uint64_t now = cp__now_ns();
    p->deadline = now + (uint64_t)c->retry_budget_ms * 1000000ull;
    for (size_t i = 0; i < p->cmds.n; i++) {
        cp__cmd *cmd = &p->cmds.v[i];
        if (cmd->flags & CP__F_SPLIT) {
            cmd->pending = cmd->nparts;
            for (uint32_t j = 0; j < cmd->nparts; j++)
                p->parts.v[cmd->part0 + j].flags |= cmd->flags & CP__F_IDEMPOTENT;
            continue;
        }
        if (cmd->slot == CP__SLOT_CROSS) {
            cp__pipeline_set_err(p, CP_ECROSSSLOT, "command %zu: keys in different slots", i);
            cmd->reply = cp__arena_error(&p->replies, "CROSSSLOT Keys in request don't hash to "
                                                      "the same slot (refused by the client)");
            cmd->outcome = CP_NOT_EXECUTED;
            continue;
        }
        p->remaining++;
        dispatch(p, (uint32_t)i, now);
    }
    for (size_t j = 0; j < p->parts.n; j++) {
        p->remaining++;
        dispatch(p, CP__PART_TAG | (uint32_t)j, now);
    }
}

/* ---- the event-driven interface and the blocking loop over it ------------------------------ */

/* Writes to every node with work; the first step of every cycle, so that all nodes are written
 * before any is read. Returns 1 when every command has an outcome. */
static int pump_all(cp_pipeline *p) {
    for (int n = 0; n < p->c->nnodes && p->remaining > 0; n++)
        pump(p, n);
    return p->remaining == 0;
}

int cp_exec_start(cp_pipeline *p) {
    if (p->executed)
        return CP_EINVAL;
    begin(p);
    return pump_all(p);
}

int cp_client_pollfds(cp_client *pc, struct pollfd *fds, int max) {
    cp__client *c = cp__client_of(pc);
    int k = 0;
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        if (conn->fd < 0)
            continue;
        int out = conn->olen > conn->opos || c->nodes[n].qhead != CP__NIL;
        if (k < max)
            fds[k] =
                (struct pollfd){.fd = conn->fd, .events = (short)(POLLIN | (out ? POLLOUT : 0))};
        k++;
    }
    return k;
}

int cp_exec_on_ready(cp_pipeline *p, int fd, short revents) {
    cp__client *c = p->c;
    if (p->remaining == 0)
        return 1;
    for (int n = 0; n < c->nnodes; n++) {
        if (c->nodes[n].conn.fd != fd)
            continue;
        if (revents & (POLLIN | POLLHUP | POLLERR))
            drain(p, n);
        /* drain may have failed and closed it, or a redirect may have queued more. */
        if (c->nodes[n].conn.fd == fd && (revents & POLLOUT))
            pump(p, n);
        break;
    }
    return pump_all(p);
}

int cp_exec_timeout_ms(const cp_pipeline *p) {
    const cp__client *c = p->c;
    if (p->remaining == 0)
        return -1;
    uint64_t wake = p->retry_at;
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int n = 0; n < c->nnodes; n++) {
        const cp__conn *conn = &c->nodes[n].conn;
        if (conn->fd >= 0 && conn->fcount > 0 && (wake == 0 || conn->last_io_ns + io_ns < wake))
            wake = conn->last_io_ns + io_ns;
    }
    if (wake == 0)
        return -1;
    uint64_t now = cp__now_ns();
    return wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
}

int cp_exec_on_timer(cp_pipeline *p) {
    cp__client *c = p->c;
    uint64_t now = cp__now_ns();
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int n = 0; n < c->nnodes && p->remaining > 0; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        if (conn->fd >= 0 && conn->fcount > 0 && now - conn->last_io_ns >= io_ns)
            fail_node(p, n, CP_ETIMEDOUT, "no reply within the I/O timeout");
    }
    if (p->retry_at != 0 && cp__now_ns() >= p->retry_at)
        run_retries(p);
    return pump_all(p);
}

int cp_exec_result(cp_pipeline *p) {
    if (p->remaining > 0)
        return CP_EINVAL;
    for (size_t i = 0; i < p->cmds.n; i++) {
        if (p->cmds.v[i].outcome != CP_DONE) {
            if (p->err == 0)
                cp__pipeline_set_err(p, CP_EPARTIAL, "command %zu did not complete", i);
            return CP_EPARTIAL;
        }
    }
    return 0;
}

/* One poll(2) over the client's connections, bounded by the next timer. */
static void wait_once(cp_pipeline *p) {
    struct pollfd stackfds[64], *fds = stackfds;
    int n = cp_client_pollfds(&p->c->pub, fds, 64);
    if (n > 64) {
        if ((fds = malloc((size_t)n * sizeof(*fds))) == NULL) {
            end_batch(p, CP_ENOMEM, "out of memory");
            return;
        }
        cp_client_pollfds(&p->c->pub, fds, n);
    }
    int timeout = cp_exec_timeout_ms(p);
    if (n == 0 && timeout < 0) {
        /* Nothing open and nothing scheduled cannot happen with commands remaining; end rather
         * than wait forever if it ever does. */
        cp__pipeline_set_err(p, CP_EINVAL, "internal error: %zu commands with nowhere to go",
                             p->remaining);
        abandon(p);
    } else {
        int ready = poll(fds, (nfds_t)n, timeout);
        if (ready > 0) {
            for (int k = 0; k < n && p->remaining > 0; k++)
                if (fds[k].revents)
                    cp_exec_on_ready(p, fds[k].fd, fds[k].revents);
        } else if (ready < 0 && errno != EINTR) {
            /* EINVAL (more sockets than RLIMIT_NOFILE) or ENOMEM never goes away by waiting:
             * end the batch now instead of spinning on the failing poll until the I/O timeout. */
            char why[64];
            snprintf(why, sizeof(why), "poll: %s", strerror(errno));
            end_batch(p, CP_EIO, why);
        }
    }
    if (fds != stackfds)
        free(fds);
    if (p->remaining > 0)
        cp_exec_on_timer(p);
}

int cp_exec(cp_pipeline *p) {
    int rc = cp_exec_start(p);
    if (rc < 0)
        return rc;
    while (p->remaining > 0)
        wait_once(p);
    return cp_exec_result(p);
}
