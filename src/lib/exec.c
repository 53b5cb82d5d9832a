/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The core: every batch running on a client (the caller's pipelines, the async layer's batches,
 * the refresh's request) is executed here, any number at once. Each command is routed to the
 * node serving its slot, written in order, and its reply read as its node sends it, so a slow
 * or dead node holds back only its own commands. The cluster's answers are followed: MOVED
 * (patch the slot, resend; later commands for the slot wait behind the redirected ones), ASK
 * (ASKING + resend, map untouched), TRYAGAIN/CLUSTERDOWN/LOADING and broken connections (retry
 * rounds with exponential backoff and jitter inside the batch's retry budget). Every command
 * ends with an outcome and, when the server answered, its reply; what an outcome sets off (the
 * callback, the batch's completion) is batch.c's.
 *
 * Nothing here blocks. Connections open without waiting (conn.c); the slot map is re-read
 * in-band, as a command to one node after another (refresh.h gives the order), while commands
 * whose slot has no known owner wait for it within their budget. I/O happens only inside the
 * loop's calls (cp__exec_ready / cp__exec_timers) or when a caller says io_now; elsewhere work
 * is queued and the loop told, so a callback never runs inside the call that sent its command.
 * One thread, the client's.
 */
#include "lib/exec.h"

#include "lib/batch.h"
#include "lib/fence.h"
#include "lib/readfrom.h"
#include "lib/refresh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

static void route(cp_pipeline *p, uint32_t tag, uint64_t now);
static void kick_refresh(cp__client *c, uint64_t now);

/* Queues a command on node n, behind what waits there. */
static void enqueue(cp_pipeline *p, int n, uint32_t tag) {
    if (cp__queue_push(&p->c->nodes[n].q, p, tag) != 0) {
        cp__pipeline_set_err(p, CP_ENOMEM, "out of memory");
        cp__batch_give_up(p, tag, 0, CP_ENOMEM);
    }
}

/* The node serving the command; -1 when its slot has no known owner, CP__READ_NONE for a read
 * that only a replica may serve when the shard has none usable. */
static inline int node_of(cp_pipeline *p, const cp__cmd *cmd) {
    cp__client *c = p->c;
    if (cmd->slot == CP__SLOT_NODE)
        return cmd->node;
    if (!c->cluster)
        return 0;
    if (cmd->slot >= 0) {
        int n = cp__routes_lookup(&c->routes, cmd->slot);
        /* A read under read_from; never a transaction's member nor a WATCH (the unit and what
         * guards it stay on the master). */
        if (c->read_from != CP_READ_MASTER && n >= 0 &&
            (cmd->flags & (CP__F_READONLY | CP__F_TX | CP__F_WATCH)) == CP__F_READONLY)
            n = cp__readfrom_node(c, n);
        return n;
    }
    return cp__client_any_node(c); /* keyless: any master */
}

/* ---- retries ------------------------------------------------------------------------------- */

/* Backoff for retry round r: 2 ms doubling up to 512 ms, with jitter in [half, full]. */
static uint64_t backoff_ns(cp_pipeline *p) {
    unsigned shift = p->round < 8 ? p->round : 8;
    uint64_t base = 2000000ull << shift;
    return base / 2 + cp__client_rand(p->c, (uint32_t)(base / 2));
}

static int retry_push(cp_pipeline *p, uint32_t tag) {
    if (p->nretry == p->capretry) {
        size_t ncap = p->capretry ? p->capretry * 2 : 64;
        uint32_t *r = realloc(p->retry, ncap * sizeof(*r));
        if (r == NULL)
            return CP_ENOMEM;
        p->retry = r;
        p->capretry = ncap;
    }
    p->retry[p->nretry++] = tag;
    return 0;
}

/* Puts a command aside for the next retry round, or ends it when the budget is spent. A command
 * for one chosen node is never retried: its caller decides (the refresh asks the next node). */
static void retry_later(cp_pipeline *p, uint32_t tag, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    uint64_t now = cp__now_ns();
    if (now >= p->deadline || cmd->slot == CP__SLOT_NODE || (cmd->flags & CP__F_TX)) {
        cp__batch_give_up(p, tag, 0, err ? err : CP_ETIMEDOUT);
        return;
    }
    if (retry_push(p, tag) != 0) {
        cp__pipeline_set_err(p, CP_ENOMEM, "out of memory");
        cp__batch_give_up(p, tag, 0, CP_ENOMEM);
        return;
    }
    if (cmd->err == 0)
        cmd->err = (int8_t)err; /* the reason, should the budget run out */
    if (p->retry_at == 0 && !p->wait_map) {
        p->retry_at = now + backoff_ns(p);
        if (p->retry_at > p->deadline)
            p->retry_at = p->deadline;
        cp__batch_wake_at(p->c, p->retry_at);
    }
}

/* A written command lost its connection before the answer: re-send it only when that cannot
 * change data twice (read-only, or the caller flagged it idempotent). */
static void lost_in_flight(cp_pipeline *p, uint32_t tag, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    cmd->flags |= CP__F_WRITTEN;
    if ((cmd->flags & (CP__F_READONLY | CP__F_IDEMPOTENT)) && cmd->slot != CP__SLOT_NODE &&
        !(cmd->flags & CP__F_TX)) {
        p->c->stats.io_retries++;
        retry_later(p, tag, err);
    } else {
        cp__batch_finish(p, tag, CP_UNKNOWN, err);
    }
}

/* Starts the next retry round of p: re-route in order. After a broken connection or
 * CLUSTERDOWN the map may be stale (a replica promoted), so the round waits for a refresh
 * first; at the end of the budget it goes anyway, and what cannot be routed ends. */
static void run_retries(cp_pipeline *p, uint64_t now) {
    cp__client *c = p->c;
    p->retry_at = 0;
    int need_map = c->cluster && p->node_failed; /* a replica may have taken over */
    p->node_failed = 0;
    if (need_map) {
        c->need_refresh = 1;
        kick_refresh(c, now);
        if (c->refresh.running && now < p->deadline) {
            p->wait_map = 1; /* released when the map comes (or the refresh fails) */
            p->node_failed = 1;
            cp__batch_wake_at(c, p->deadline);
            return;
        }
    }
    p->wait_map = 0;
    p->round++;
    size_t n = p->nretry;
    uint32_t *list = p->retry;
    size_t cap = p->capretry;
    p->retry = NULL; /* route may put commands back: into a fresh list */
    p->nretry = p->capretry = 0;
    for (size_t i = 0; i < n; i++)
        route(p, list[i], now);
    if (p->retry == NULL) {
        p->retry = list;
        p->capretry = cap;
    } else {
        free(list);
    }
}

/* ---- routing and sending ------------------------------------------------------------------- */

/* Routes a command (a first send or a retry): to its node's queue; behind a fence on its slot;
 * or, when its slot has no known owner, aside until the map comes, within its budget. */
static void route(cp_pipeline *p, uint32_t tag, uint64_t now) {
    cp__client *c = p->c;
    cp__cmd *cmd = cp__get(p, tag);
    int held = cp__fence_hold(c, cmd->slot, p, tag);
    if (held != 0) {
        if (held < 0)
            cp__batch_give_up(p, tag, 0, CP_ENOMEM);
        return;
    }
    int n = node_of(p, cmd);
    if (n >= 0) {
        enqueue(p, n, tag);
        return;
    }
    c->need_refresh = 1;
    kick_refresh(c, now);
    if (now >= p->deadline) {
        int err = c->refresh.err ? c->refresh.err : CP_ETOPOLOGY;
        if (n == CP__READ_NONE)
            cp__pipeline_set_err(p, err = CP_ETOPOLOGY,
                                 "slot %d: no replica to read from (read_from replica)", cmd->slot);
        else
            cp__pipeline_set_err(p, err, "no node serves slot %d: %s", cmd->slot,
                                 c->refresh.errstr[0] ? c->refresh.errstr : "no slot map");
        cp__batch_give_up(p, tag, 0, err);
        return;
    }
    if (retry_push(p, tag) != 0) {
        cp__batch_give_up(p, tag, 0, CP_ENOMEM);
        return;
    }
    if (c->refresh.running) { /* released when the map comes */
        p->wait_map = 1;
        p->retry_at = 0;
        cp__batch_wake_at(c, p->deadline);
    } else if (p->retry_at == 0 && !p->wait_map) { /* the next round asks again */
        p->retry_at = now + backoff_ns(p);
        if (p->retry_at > p->deadline)
            p->retry_at = p->deadline;
        cp__batch_wake_at(c, p->retry_at);
    }
}

/* The node of a batch's next first send: the one before's when it has the same slot and flags
 * (a batch of one hash tag's keys routes once), else node_of's answer. */
typedef struct dispatch_memo {
    int32_t slot;
    uint8_t flags;
    int node;
} dispatch_memo;

/* First send of a command: straight into its node's output buffer when the connection is ready
 * and nothing waits before it there (pump would move it there next, in this order). */
static inline void dispatch(cp_pipeline *p, uint32_t tag, uint64_t now, dispatch_memo *m) {
    cp__client *c = p->c;
    cp__cmd *cmd = cp__get(p, tag);
    int n;
    if (c->nfences > 0)
        n = -1;
    else if (cmd->slot >= 0 && cmd->slot == m->slot && cmd->flags == m->flags)
        n = m->node;
    else
        *m = (dispatch_memo){cmd->slot, cmd->flags, n = node_of(p, cmd)};
    if (n >= 0) {
        cp__node *node = &c->nodes[n];
        cp__conn *conn = &node->conn;
        size_t inflight = conn->fcount;
        if (node->q.n == 0 && conn->state == CP__CONN_READY &&
            conn->olen - conn->opos < CP__OBUF_SOFT_LIMIT &&
            cp__conn_push(conn, p->arena.data + cmd->off, cmd->len, tag, &p->replies) == 0) {
            cmd->sent_ns = now;         /* as pump would: latency counts from the first send */
            if (inflight == 0)          /* the I/O timeout counts from the first request, not the */
                conn->last_io_ns = now; /* last bytes an idle connection moved */
            return;
        }
    }
    route(p, tag, now);
}

/* What node n had: its requests in flight (and whether each was written) and its queue, taken
 * off it, the connection closed and the loop told. What the caller then finishes may send new
 * commands, to n too. */
typedef struct taken {
    cp__inflight *fifo;
    uint8_t *written;
    size_t nf;
    cp__queue q;
} taken;

static int take_node(cp__client *c, int n, taken *t) {
    cp__conn *conn = &c->nodes[n].conn;
    t->nf = conn->fcount;
    t->fifo = t->nf ? malloc(t->nf * sizeof(*t->fifo)) : NULL;
    t->written = t->nf ? malloc(t->nf) : NULL;
    if (t->nf > 0 && (t->fifo == NULL || t->written == NULL)) {
        free(t->fifo);
        free(t->written);
        t->fifo = NULL;
        t->written = NULL;
        return CP_ENOMEM;
    }
    for (size_t i = 0; i < t->nf; i++) {
        t->fifo[i] = conn->fifo[(conn->fhead + i) & (conn->fcap - 1)];
        t->written[i] = (uint8_t)cp__conn_was_written(conn, i);
    }
    cp__client_close_node(c, n);
    t->q = c->nodes[n].q;
    memset(&c->nodes[n].q, 0, sizeof(t->q));
    return 0;
}

static void taken_free(taken *t) {
    free(t->q.v);
    free(t->fifo);
    free(t->written);
}

/* Node n's connection is unusable: requests written on it end unknown (or are retried when
 * safe), requests not yet written go to the next retry round, and the map is re-read. */
static void fail_node(cp__client *c, int n, int code, const char *why) {
    uint64_t now = cp__now_ns();
    char msg[CP__HOSTLEN + CP_ERRSTR_LEN + 16], addr[CP__HOSTLEN + 8];
    snprintf(addr, sizeof(addr), "%s:%d", c->nodes[n].host, c->nodes[n].port);
    if (strstr(why, addr) != NULL) /* the connection's own message already names it */
        snprintf(msg, sizeof(msg), "%s", why);
    else
        snprintf(msg, sizeof(msg), "%s: %s", addr, why);
    taken t;
    if (take_node(c, n, &t) != 0) {
        cp__exec_cancel_all(c, CP_ENOMEM, "out of memory");
        return;
    }
    c->nodes[n].watched = 0; /* the connection's WATCHes went with it */
    c->need_refresh = 1;
    cp__readfrom_failed(c, n, now); /* reads it served go elsewhere from now on */
    for (size_t i = 0; i < t.nf; i++) {
        if (t.fifo[i].tag >= CP__TAG_INTERNAL || t.fifo[i].arena == NULL)
            continue;
        cp_pipeline *p = cp__pipeline_of_arena(t.fifo[i].arena);
        cp__pipeline_set_err(p, code, "%s", msg);
        p->node_failed = 1; /* a failover may be under way: re-read the map first */
        if (t.written[i])
            lost_in_flight(p, t.fifo[i].tag, code);
        else
            retry_later(p, t.fifo[i].tag, code);
    }
    while (t.q.n > 0) {
        cp__qent e = cp__queue_pop(&t.q);
        cp__pipeline_set_err(e.p, code, "%s", msg);
        e.p->node_failed = 1;
        retry_later(e.p, e.tag, code);
    }
    taken_free(&t);
    cp__fence_node_failed(c, n, route, now);
    kick_refresh(c, now);
}

/* Moves queued commands into node n's output buffer (bounded) and writes what the socket takes;
 * starts connecting a closed node that has commands. now: the caller's clock, or 0 to read it
 * here if anything is sent. */
static void pump_at(cp__client *c, int n, uint64_t now) {
    cp__node *node = &c->nodes[n];
    if (node->q.n == 0 && node->conn.olen == node->conn.opos)
        return; /* nothing to send: the common case after every read, without a clock read */
    if (node->conn.state == CP__CONN_CLOSED) {
        if (node->q.n == 0)
            return;
        if (cp__client_connect_node(c, n) != 0) {
            fail_node(c, n, c->nodes[n].conn.err, c->nodes[n].conn.errstr);
            return;
        }
    }
    if (node->conn.state != CP__CONN_READY && node->conn.state != CP__CONN_AUTH)
        return; /* the loop reports when the connect or handshake moves on */
    if (now == 0)
        now = cp__now_ns();
    cp__conn *conn = &node->conn;
    for (;;) {
        while (node->conn.state == CP__CONN_READY && node->q.n > 0 &&
               conn->olen - conn->opos < CP__OBUF_SOFT_LIMIT) {
            cp__qent e = cp__queue_pop(&node->q);
            cp__cmd *cmd = cp__get(e.p, e.tag);
            int rc = 0, idle = conn->fcount == 0;
            if (cmd->flags & CP__F_ASKING) {
                cmd->flags &= (uint8_t)~CP__F_ASKING;
                rc = cp__conn_push(conn, asking_cmd, sizeof(asking_cmd) - 1, CP__ASKING_TAG,
                                   &e.p->replies);
            }
            if (rc == 0)
                rc =
                    cp__conn_push(conn, e.p->arena.data + cmd->off, cmd->len, e.tag, &e.p->replies);
            if (cmd->sent_ns == 0) /* latency counts from the first send, redirects included */
                cmd->sent_ns = now;
            if (rc != 0) {
                cp__pipeline_set_err(e.p, CP_ENOMEM, "out of memory");
                cp__batch_give_up(e.p, e.tag, 0, CP_ENOMEM);
            } else if (idle) {
                conn->last_io_ns = now; /* the I/O timeout counts from the first request */
            }
            idle = 0;
        }
        int rc = cp__conn_flush(conn, now);
        if (rc < 0) {
            fail_node(c, n, rc, conn->errstr);
            return;
        }
        if (rc == 1 || node->q.n == 0 || node->conn.state != CP__CONN_READY)
            return;
        now = cp__now_ns(); /* a long queue: its next part is sent later */
    }
}

static void pump(cp__client *c, int n) {
    pump_at(c, n, 0);
}

static void pump_all_at(cp__client *c, uint64_t now) {
    for (int n = 0; n < c->nnodes; n++)
        pump_at(c, n, now);
}

void cp__exec_pump_all(cp__client *c) {
    pump_all_at(c, 0);
}

/* ---- transactions: a MULTI ... EXEC unit goes to one node and ends as one --------------- */

/* Re-sends unit t, whole and in order, to the node a MOVED or ASK named (ASKING before its
 * first command: the flag lasts through MULTI on the server). */
static void txn_resend(cp_pipeline *p, cp__txn *t) {
    int m = t->target;
    t->resent = 1;
    t->target = -1;
    for (uint32_t i = t->first; i <= t->last; i++) {
        cp__cmd *cmd = &p->cmds.v[i];
        cmd->reply = NULL;
        cmd->redirects++;
        cmd->flags &= (uint8_t) ~(CP__F_ASKING | CP__F_WRITTEN);
        if (i == t->first && t->ask)
            cmd->flags |= CP__F_ASKING;
        enqueue(p, m, i);
    }
}

/* A reply for a member of a unit (or for a WATCH, which only marks its node, or a part of
 * UNWATCH, which ends the mark: every command before it there has been answered). Members' replies
 * are kept and their outcomes wait for the last one's. A MOVED or ASK on any of them means the
 * server ran nothing (it answers EXECABORT, or discards on EXEC's own redirect): the unit is
 * re-sent once to the node named, unless a WATCH on this connection guards it (that WATCH does
 * not hold on another node: the caller gets the answers and decides). */
static void txn_reply(cp__client *c, int n, cp_pipeline *p, uint32_t tag, redisReply *r,
                      uint64_t now) {
    cp__cmd *cmd = cp__get(p, tag);
    if (!(cmd->flags & CP__F_TX)) {            /* WATCH or UNWATCH, answered */
        c->nodes[n].watched = cmd->parent < 0; /* UNWATCH goes as parts */
        cp__batch_answered(p, tag, r, now);
        return;
    }
    cmd->reply = r;
    cmd->done_ns = now;
    cp__txn *t = cp__txn_of(p, cmd);
    int slot = 0, port = 0;
    char host[CP__HOSTLEN];
    cp__errkind kind = cp__classify(r, &slot, host, sizeof(host), &port);
    if (kind == CP__ERR_MOVED || kind == CP__ERR_ASK) {
        if (kind == CP__ERR_MOVED)
            c->stats.moved++;
        else
            c->stats.ask++;
        if (host[0] == '\0')
            snprintf(host, sizeof(host), "%s", c->nodes[n].host);
        int m = cp__client_node(c, host, port);
        if (m >= 0 && t->target < 0) {
            t->target = m;
            t->ask = kind == CP__ERR_ASK;
        }
        if (m >= 0 && kind == CP__ERR_MOVED) {
            cp__fence_moved(c, n, slot); /* later commands for the slot wait for the unit */
            cp__routes_patch(&c->routes, slot, m);
            c->nodes[m].is_master = 1;
            c->need_refresh = 1;
        }
    }
    if (!(cmd->flags & CP__F_TXEND))
        return;
    int watched = c->nodes[n].watched;
    c->nodes[n].watched = 0; /* EXEC and DISCARD end every WATCH of the connection */
    if (t->target >= 0 && r->type == REDIS_REPLY_ERROR && !t->resent && !watched &&
        cmd->redirects < c->max_redirects && now < p->deadline) {
        txn_resend(p, t);
        return;
    }
    for (uint32_t i = t->first; i <= t->last; i++)
        if (p->cmds.v[i].outcome == CP_PENDING)
            cp__batch_finish(p, i, CP_DONE, 0);
}

/* ---- replies ------------------------------------------------------------------------------- */

/* Acts on one reply: the answer, or a redirect / retry the caller never sees. */
static void on_reply(cp__client *c, int n, cp_pipeline *p, uint32_t tag, redisReply *r,
                     uint64_t now) {
    if (tag == CP__ASKING_TAG) /* its command's own reply tells what happened */
        return;
    cp__cmd *cmd = cp__get(p, tag);
    if (cmd->flags & CP__F_TX) {
        txn_reply(c, n, p, tag, r, now);
        return;
    }
    int slot = 0, port = 0, m;
    char host[CP__HOSTLEN];
    cp__errkind kind = cmd->slot != CP__SLOT_NODE
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
            cp__batch_give_up(p, tag, 0, CP_EREDIRECT); /* unknown if an earlier send was lost */
            return;
        }
        cmd->redirects++;
        /* Redis may leave the host out (":port"): it means the host we asked (copied: adding a
         * node may move the node array). */
        if (host[0] == '\0')
            snprintf(host, sizeof(host), "%s", c->nodes[n].host);
        m = cp__client_node(c, host, port);
        if (m < 0) {
            cp__pipeline_set_err(p, m, "cannot add node %s:%d", host, port);
            cmd->reply = r;
            cp__batch_give_up(p, tag, 0, m);
            return;
        }
        /* The server's word on the key's slot: retry rounds route by it (a caller's slot given
         * with cp_append_argv_slot may have been wrong). */
        cmd->slot = slot;
        if (kind == CP__ERR_MOVED) {
            cp__fence_moved(c, n, slot);
            cp__routes_patch(&c->routes, slot, m);
            c->nodes[m].is_master = 1;
            c->need_refresh = 1; /* the rest of the map is read in-band, spaced */
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
        } else {
            c->stats.loading++;
            cp__readfrom_failed(c, n, now); /* a replica still loading: read elsewhere */
        }
        /* Kept so that a command given up at the end of the budget shows why. */
        cmd->reply = r;
        if (cp__now_ns() >= p->deadline)
            cp__pipeline_set_err(p, CP_ESERVER, "retry budget spent: %.80s", r->str);
        retry_later(p, tag, CP_ESERVER);
        return;
    default:
        cp__batch_answered(p, tag, r, now);
    }
}

/* Reads what node n has sent and acts on every complete reply. Replies that arrived before an
 * EOF or error are still delivered; only then is the connection failed. */
static void drain(cp__client *c, int n) {
    int rc = cp__conn_fill(&c->nodes[n].conn);
    uint64_t now = c->nodes[n].conn.last_io_ns; /* every new reply arrived with the last read */
    /* Callbacks may add nodes (realloc) or close this one: re-read c->nodes[n] every time. */
    while (c->nodes[n].conn.state != CP__CONN_CLOSED) {
        redisReply *r = NULL;
        uint32_t tag;
        cp__reply_arena *arena;
        int got = cp__conn_reply(&c->nodes[n].conn, &r, &tag, &arena);
        if (got == 0)
            break;
        if (got < 0) {
            fail_node(c, n, got, c->nodes[n].conn.errstr);
            return;
        }
        if (arena ==
            NULL) { /* the handshake answered (commands may go in now), or a dropped reply */
            if (tag == CP__TAG_AUTH || tag == CP__TAG_READONLY)
                pump(c, n);
            continue;
        }
        cp_pipeline *p = cp__pipeline_of_arena(arena);
        /* A fence is lifted after its last command's reply was acted on: a redirect of that
         * command goes before the commands the fence held. (Read first: acting may free p.) */
        int fenced = c->nfences > 0 && tag < CP__TAG_INTERNAL;
        int slot = fenced ? cp__get(p, tag)->slot : 0;
        fenced = fenced && cp__fence_counts(c, n, slot);
        if (tag < CP__TAG_INTERNAL && (r->type != REDIS_REPLY_ERROR || !c->cluster)) {
            if (cp__get(p, tag)->flags & (CP__F_TX | CP__F_WATCH))
                txn_reply(c, n, p, tag, r, now);
            else
                cp__batch_answered(p, tag, r, now); /* nearly every reply: no call into on_reply */
        } else {
            on_reply(c, n, p, tag, r, now);
        }
        if (fenced)
            cp__fence_reply(c, n, slot, route, now);
    }
    if (rc < 0 && c->nodes[n].conn.state != CP__CONN_CLOSED)
        fail_node(c, n, rc, c->nodes[n].conn.errstr);
}

/* ---- the in-band slot-map refresh: refresh.c decides and builds, this sends ------------ */

static void refresh_send(cp__client *c, uint64_t now, int hedge);

static void cmdtab_answered(cp_client *pc, const cp_response *r, void *data) {
    (void)data;
    cp__cmdtab_took(cp__client_of(pc), r);
}

static void refresh_answered(cp_client *pc, const cp_response *r, void *data) {
    cp__client *c = cp__client_of(pc);
    uint64_t now = cp__now_ns();
    int node = -1, rc = cp__refresh_took(c, data, r, now, &node);
    if (rc == 0) {
        refresh_send(c, now, 0);
    } else if (rc == 1 && node >= 0) {
        cp_pipeline *p = cp__cmdtab_ask(c, node, cmdtab_answered);
        if (p != NULL)
            cp__exec_start(p, 0);
    }
}

static void refresh_send(cp__client *c, uint64_t now, int hedge) {
    cp_pipeline *p = cp__refresh_ask(c, now, hedge, refresh_answered);
    if (p != NULL)
        cp__exec_start(p, 0);
}

static void kick_refresh(cp__client *c, uint64_t now) {
    if (cp__refresh_begin(c, now))
        refresh_send(c, now, 0);
}

void cp__exec_refresh_now(cp__client *c) {
    c->need_refresh = 1;
    c->refresh.not_before = 0;
    kick_refresh(c, cp__now_ns());
}

/* ---- the loop's side ----------------------------------------------------------------------- */

/* Command i, refused before sending (keys in several slots, or a transaction's MULTI without
 * its EXEC): its error reply, and the code it ends with. */
static int refusal(cp_pipeline *p, cp__cmd *cmd, size_t i) {
    int cross = cmd->slot == CP__SLOT_CROSS;
    cp__pipeline_set_err(p, cross ? CP_ECROSSSLOT : CP_EINVAL, "command %zu: %s", i,
                         cross ? "keys in different slots" : "MULTI without its EXEC");
    cmd->reply = cp__arena_error(&p->replies, cross ? "CROSSSLOT Keys in request don't hash to "
                                                      "the same slot (refused by the client)"
                                                    : "ERR MULTI without EXEC in the same "
                                                      "batch (refused by the client)");
    return cross ? CP_ECROSSSLOT : CP_EINVAL;
}

void cp__exec_start(cp_pipeline *p, int io_now) {
    cp__client *c = p->c;
    c->sending++; /* nothing completes, nothing is called back, until every command is out */
    p->executed = 1;
    p->remaining = 0;
    p->npending = 0;
    p->round = 0;
    p->retry_at = 0;
    p->nretry = 0;
    p->node_failed = 0;
    p->wait_map = 0;
    if (c->routes.stale) /* MOVED patched slots since: rebuild the runs */
        cp__routes_rebuild(&c->routes);
    uint64_t now = cp__now_ns();
    p->deadline = now + (uint64_t)c->retry_budget_ms * 1000000ull;
    cp__batch_link(p);
    kick_refresh(c, now);
    if (p->kind == CP__BATCH_USER)
        cp__txn_refuse_open(p); /* a MULTI without EXEC: none of it goes */
    /* Counted first, sent after: the batch is never "finished" half-way through its start. */
    for (size_t i = 0; i < p->cmds.n; i++) {
        cp__cmd *cmd = &p->cmds.v[i];
        if (cmd->flags & CP__F_SPLIT) {
            cmd->pending = cmd->nparts;
            for (uint32_t j = 0; j < cmd->nparts; j++)
                p->parts.v[cmd->part0 + j].flags |= cmd->flags & CP__F_IDEMPOTENT;
            p->npending++;
        } else if (cmd->slot == CP__SLOT_CROSS || cmd->slot == CP__SLOT_REFUSED) {
            cmd->outcome = CP_NOT_EXECUTED;
            cmd->err = (int8_t)refusal(p, cmd, i);
            p->npending++; /* its caller hears of it with the rest */
        } else {
            p->remaining++;
            p->npending++;
        }
    }
    p->remaining += p->parts.n;
    if (p->kind == CP__BATCH_USER)
        c->pending += p->npending; /* until the caller hears of them (complete) */
    /* In append order, a split or every-master command's parts where it stands: on each node
     * they go between the commands before and after it (SET k; FLUSHDB; GET k reads nil). */
    dispatch_memo m = {CP__SLOT_NONE, 0, -1};
    for (size_t i = 0; i < p->cmds.n; i++) {
        const cp__cmd *cmd = &p->cmds.v[i];
        if (cmd->flags & CP__F_SPLIT)
            for (uint32_t j = 0; j < cmd->nparts; j++)
                dispatch(p, CP__PART_TAG | (cmd->part0 + j), now, &m);
        else if (cmd->slot != CP__SLOT_CROSS && cmd->slot != CP__SLOT_REFUSED)
            dispatch(p, (uint32_t)i, now, &m);
    }
    if (io_now)
        pump_all_at(c, now);
    c->sending--;
    if (p->running && cp__batch_finished(p))
        cp__batch_wake_at(c, 1); /* completed from the loop's next call */
}

void cp__exec_add(cp_pipeline *p, uint32_t tag) {
    cp__client *c = p->c;
    c->sending++;
    c->pending++; /* until its callback is called */
    uint64_t now = cp__now_ns();
    cp__cmd *cmd = cp__get(p, tag);
    if (cmd->flags & CP__F_SPLIT) {
        uint32_t part0 = cmd->part0, nparts = cmd->nparts;
        cmd->pending = nparts;
        p->remaining += nparts; /* the parts carry it */
        for (uint32_t j = 0; j < nparts; j++)
            p->parts.v[part0 + j].flags |= cmd->flags & CP__F_IDEMPOTENT;
        dispatch_memo m = {CP__SLOT_NONE, 0, -1};
        for (uint32_t j = 0; j < nparts; j++)
            dispatch(p, CP__PART_TAG | (part0 + j), now, &m);
    } else if (cmd->slot == CP__SLOT_CROSS || cmd->slot == CP__SLOT_REFUSED) {
        p->remaining++;
        cp__batch_finish(p, tag, CP_NOT_EXECUTED,
                         refusal(p, cmd, tag)); /* called back after the send */
    } else {
        p->remaining++;
        dispatch(p, tag, now, &(dispatch_memo){CP__SLOT_NONE, 0, -1});
    }
    c->sending--;
}

void cp__exec_ready(cp__client *c, int n, int events) {
    cp__conn *conn = &c->nodes[n].conn;
    if (conn->state == CP__CONN_CONNECTING || conn->state == CP__CONN_TLS) {
        int rc = cp__conn_progress(conn, events);
        if (rc == CP__CONN_NEXT) { /* the loop lets go of the old fd before it closes */
            cp__client_unregister_node(c, n);
            rc = cp__conn_next(&c->nodes[n].conn);
        }
        if (rc != 0)
            fail_node(c, n, rc, c->nodes[n].conn.errstr);
        else
            pump(c, n); /* AUTH, or commands queued while connecting */
        return;
    }
    if (events & CP__EV_READ)
        drain(c, n);
    /* drain may have failed and closed it; a redirect may have queued more */
    if (c->nodes[n].conn.state != CP__CONN_CLOSED && (events & CP__EV_WRITE))
        pump(c, n);
}

uint64_t cp__exec_next_wake(const cp__client *c) {
    uint64_t wake = 0;
#define EARLIER(t) (wake == 0 || (t) < wake ? (t) : wake)
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int n = 0; n < c->nnodes; n++) {
        const cp__node *node = &c->nodes[n];
        const cp__conn *conn = &node->conn;
        if (conn->state == CP__CONN_CONNECTING || conn->state == CP__CONN_TLS)
            wake = EARLIER(conn->connect_deadline);
        else if (conn->state != CP__CONN_CLOSED && conn->fcount > 0)
            wake = EARLIER(conn->last_io_ns + io_ns);
        else if (conn->state == CP__CONN_CLOSED && node->q.n > 0)
            wake = EARLIER(1); /* connect it */
    }
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
    uint64_t now = cp__now_ns();
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        if ((conn->state == CP__CONN_CONNECTING || conn->state == CP__CONN_TLS) &&
            now >= conn->connect_deadline)
            fail_node(c, n, CP_ETIMEDOUT, "connect timed out");
        else if (conn->state != CP__CONN_CLOSED && conn->fcount > 0 &&
                 now - conn->last_io_ns >= io_ns)
            fail_node(c, n, CP_ETIMEDOUT, "no reply within the I/O timeout");
    }
    cp__exec_pump_all(c); /* connects nodes with queued commands */
    kick_refresh(c, now);
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
            run_retries(p, now);
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
            refresh_send(c, now, 1); /* no answer yet: a connected candidate too */
        else
            cp__batch_wake_at(c, c->refresh.hedge_at);
    }
    cp__exec_pump_all(c);
}

void cp__exec_cancel_all(cp__client *c, int code, const char *why) {
    c->depth++;
    c->closing = 1; /* callbacks run below may not send more: the lists below stay put */
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        for (size_t i = 0; i < conn->fcount; i++) {
            cp__inflight *f = &conn->fifo[(conn->fhead + i) & (conn->fcap - 1)];
            if (f->tag < CP__TAG_INTERNAL && f->arena != NULL) {
                cp_pipeline *p = cp__pipeline_of_arena(f->arena);
                cp__pipeline_set_err(p, code, "%s", why);
                cp__batch_give_up(p, f->tag, cp__conn_was_written(conn, i), code);
            }
        }
        cp__client_close_node(c, n);
        while (c->nodes[n].q.n > 0) {
            cp__qent e = cp__queue_pop(&c->nodes[n].q);
            cp__pipeline_set_err(e.p, code, "%s", why);
            cp__batch_give_up(e.p, e.tag, 0, code);
        }
    }
    while (c->nfences > 0) {
        cp__fence *f = &c->fences[c->nfences - 1];
        while (f->held.n > 0) {
            cp__qent e = cp__queue_pop(&f->held);
            cp__batch_give_up(e.p, e.tag, 0, code);
        }
        free(f->held.v);
        c->nfences--;
    }
    cp__batch_flush_deferred(c);
    /* Giving up a batch's last command completes it (it may be reused): start over after each. */
again:
    for (cp_pipeline *p = c->running; p != NULL; p = p->next_run) {
        p->retry_at = 0;
        p->wait_map = 0;
        if (p->nretry == 0)
            continue;
        size_t nr = p->nretry;
        p->nretry = 0;
        cp__pipeline_set_err(p, code, "%s", why);
        for (size_t i = 0; i < nr; i++)
            cp__batch_give_up(p, p->retry[i], 0, code);
        goto again;
    }
    c->refresh.running = 0;
    /* Every command had its outcome above; batches not completed by it yet are now. */
    while (c->running != NULL) {
        cp_pipeline *p = c->running;
        p->remaining = 0;
        p->sealed = 1;
        cp__batch_complete(p);
    }
    c->closing = 0;
    c->depth--;
}
