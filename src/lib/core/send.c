/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The sending side of the core (send.h). Each command is routed to the node serving its slot
 * and written in order; MOVED and ASK targets get it queued again by recv.c; TRYAGAIN,
 * CLUSTERDOWN, LOADING and broken connections put it aside for the batch's next retry round
 * (exponential backoff with jitter inside the retry budget; after a failure the round waits for
 * the map first). A command whose slot has no known owner waits for the in-band refresh, whose
 * requests start here as batches of their own.
 *
 * Nothing here blocks. Connections open without waiting (conn.c); I/O happens only when the
 * loop's calls (exec.c) or a caller with io_now ask for it; elsewhere work is queued and the loop
 * told. One thread, the client's.
 */
#include "lib/base/alloc.h"
#include "lib/core/send.h"

#include "lib/core/batch.h"
#include "lib/cache/cache.h"
#include "lib/client/fence.h"
#include "lib/client/lifecycle.h"
#include "lib/client/pool.h"
#include "lib/client/readfrom.h"
#include "lib/core/refresh.h"
#include "lib/client/script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

/* A blocking command for node n: to its pool (pool.h), once the earlier commands of its slot on
 * n's command connection have been answered (it sees what they did). */
static void enqueue_blocking(cp_pipeline *p, int n, uint32_t tag) {
    cp__client *c = p->c;
    int held = cp__fence_behind(c, n, p, tag);
    if (held > 0)
        return;
    char why[CP_ERRSTR_LEN];
    int rc = cp__pool_submit(c, p, tag, n, cp__now_ns(), why, sizeof(why));
    if (rc != 0) {
        cp__pipeline_set_err(p, rc, "%s", why);
        cp__send_retry_later(p, tag, rc);
    }
}

/* Queues a command on node n, behind what waits there (a blocking one: on n's pool). While n
 * is cautious (it refused commands lately, its state changing), a command of a slot n still
 * has an unanswered command of waits for that answer: were the earlier one refused and this one
 * run, because the state changed between them, the earlier one's retry would come after it. */
void cp__send_enqueue(cp_pipeline *p, int n, uint32_t tag) {
    /* A command that may write drops what the client-side cache kept of its slot, each time it
     * goes (the cache may have kept the slot's reads since its last send); every first send of
     * one comes here too (dispatch). The refresh's CLUSTER SHARDS changes nothing. */
    if ((cp__get(p, tag)->flags & CP__F_DROPS) && p->kind != CP__BATCH_REFRESH)
        cp__cache_wrote(p->c->cache, cp__get(p, tag)->slot);
    if (cp__get(p, tag)->flags & CP__F_BLOCKING) {
        enqueue_blocking(p, n, tag);
        return;
    }
    /* A transaction's members go in one piece (their unit is written back to back): held one
     * by one, other commands for the node would be written between MULTI and EXEC. */
    if (p->c->nodes[n].cautious && !(cp__get(p, tag)->flags & CP__F_TX) &&
        cp__fence_behind(p->c, n, p, tag) > 0)
        return;
    if (cp__queue_push(&p->c->nodes[n].q, p, tag) != 0) {
        cp__pipeline_set_err(p, CP_ENOMEM, "out of memory");
        cp__batch_give_up(p, tag, 0, CP_ENOMEM);
        return;
    }
    /* An EVALSHA may come back NOSCRIPT and go again as EVAL (recv.c): the slot's later
     * commands wait until n answered it, so that they run after the script. When they cannot
     * be held, it goes as EVAL now (still queued, not yet written), which needs no re-send. */
    cp__cmd *cmd = cp__get(p, tag);
    if ((cmd->flags & CP__F_SCRIPT) &&
        cp__fence_until_answered(p->c, n, cp__fence_slot(p->c, cmd)) != 0)
        cp__script_use_eval(p, tag);
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
        int n = cp__slottab_lookup(&c->slottab, cmd->slot);
        /* A read under read_from; never a transaction's member nor a WATCH (the unit and what
         * guards it stay on the master). */
        if (c->read_from != CP_READ_MASTER && n >= 0 &&
            (cmd->flags & (CP__F_READONLY | CP__F_TX | CP__F_WATCH | CP__F_BLOCKING)) ==
                CP__F_READONLY)
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
        /* From 4, doubling: a pipeline of one command waiting on a master down retries one. */
        size_t ncap = p->capretry ? p->capretry * 2 : 4;
        uint32_t *r = cp__realloc(p->retry, ncap * sizeof(*r));
        if (r == NULL)
            return CP_ENOMEM;
        p->retry = r;
        p->capretry = ncap;
    }
    p->retry[p->nretry++] = tag;
    return 0;
}

/* Puts command tag aside for p's next retry round: on p's list, and parked in the fence of the
 * slot whose order it keeps (fence.h), so that the slot's later commands wait behind it. 0 or
 * CP_ENOMEM (then it is on neither). */
static int put_aside(cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = cp__get(p, tag);
    if (retry_push(p, tag) != 0)
        return CP_ENOMEM;
    if (cmd->slot >= 0 || !p->c->cluster) {
        if (cp__fence_park(p->c, p, tag) != 0) {
            p->nretry--;
            return CP_ENOMEM;
        }
        cmd->flags |= CP__F_PARKED;
    }
    return 0;
}

/* Puts a command aside for the next retry round, or ends it when the budget is spent. A command
 * for one chosen node is never retried: its caller decides (the refresh asks the next node). */
void cp__send_retry_later(cp_pipeline *p, uint32_t tag, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    uint64_t now = cp__now_ns();
    if (now >= p->deadline || cmd->slot == CP__SLOT_NODE || (cmd->flags & CP__F_TX)) {
        cp__batch_give_up(p, tag, 0, err ? err : CP_ETIMEDOUT);
        return;
    }
    if (put_aside(p, tag) != 0) {
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
 * change data twice (read-only, or the caller flagged it idempotent). A unit's member ends with
 * its unit (cp__batch_give_up): its MULTI, answered before the loss and so not among the lost,
 * would otherwise wait for an outcome forever, and its batch with it. */
static void lost_in_flight(cp_pipeline *p, uint32_t tag, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    cmd->flags |= CP__F_WRITTEN;
    if (cmd->flags & CP__F_TX) {
        cp__batch_give_up(p, tag, 1, err);
    } else if ((cmd->flags & (CP__F_READONLY | CP__F_IDEMPOTENT)) && cmd->slot != CP__SLOT_NODE) {
        p->c->stats.io_retries++;
        cp__send_retry_later(p, tag, err);
    } else {
        cp__batch_finish(p, tag, CP_UNKNOWN, err);
    }
}

/* Starts the next retry round of p: re-route in order. After a broken connection or
 * CLUSTERDOWN the map may be stale (a replica promoted), so the round waits for a refresh
 * first; at the end of the budget it goes anyway, and what cannot be routed ends. A parked
 * command goes through its fence: once every command of its slot sent before it has gone. */
void cp__send_run_retries(cp_pipeline *p, uint64_t now) {
    cp__client *c = p->c;
    p->retry_at = 0;
    int need_map = c->cluster && p->node_failed; /* a replica may have taken over */
    p->node_failed = 0;
    if (need_map) {
        c->need_refresh = 1;
        cp__send_kick_refresh(c, now);
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
    size_t nparked = 0; /* moved to the front of list, in order */
    for (size_t i = 0; i < n; i++) {
        cp__cmd *cmd = cp__get(p, list[i]);
        if (cmd->flags & CP__F_PARKED) {
            cmd->flags &= (uint16_t)~CP__F_PARKED;
            list[nparked++] = list[i];
        } else {
            cp__send_route(p, list[i], now);
        }
    }
    if (nparked > 0)
        cp__fence_ready(c, p, list, nparked, cp__send_released, now);
    if (p->retry == NULL) {
        p->retry = list;
        p->capretry = cap;
    } else {
        cp__free(list);
    }
}

/* ---- routing and sending ------------------------------------------------------------------- */

/* Routes a command (a first send or a retry): to its node's queue; behind a fence on its slot;
 * or, when its slot has no known owner, aside until the map comes, within its budget. */
void cp__send_route(cp_pipeline *p, uint32_t tag, uint64_t now) {
    cp__client *c = p->c;
    cp__cmd *cmd = cp__get(p, tag);
    int held = c->nfences > 0 ? cp__fence_hold(c, p, tag, -1, 0) : 0;
    if (held != 0) {
        if (held < 0)
            cp__batch_give_up(p, tag, 0, CP_ENOMEM);
        return;
    }
    int n = node_of(p, cmd);
    if (n >= 0) {
        cp__send_enqueue(p, n, tag);
        return;
    }
    c->need_refresh = 1;
    cp__send_kick_refresh(c, now);
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
    if (put_aside(p, tag) != 0) {
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

void cp__send_redirect(cp_pipeline *p, int n, uint32_t tag) {
    int held = p->c->nfences > 0 ? cp__fence_hold(p->c, p, tag, n, 1) : 0;
    if (held < 0)
        cp__batch_give_up(p, tag, 0, CP_ENOMEM);
    else if (held == 0)
        cp__send_enqueue(p, n, tag);
}

void cp__send_released(cp_pipeline *p, uint32_t tag, int target, uint64_t now) {
    if (target >= 0)
        cp__send_enqueue(p, target, tag);
    else
        cp__send_route(p, tag, now);
}

/* The node of a batch's next first send: the one before's when it has the same slot and flags
 * (a batch of one hash tag's keys routes once), else what node_of says. */
typedef struct dispatch_memo {
    int32_t slot;
    uint16_t flags;
    int node;
} dispatch_memo;

/* A cacheable read's first send (cache.h): answered here when the cache holds it, no fence
 * holds its slot (the fence's commands were sent before it: a write among them may change what
 * it reads), and the slot's node was heard from lately (its entries are the only ones the slot
 * has: a silent node may be missing invalidations, and this read shows whether it still
 * answers). 1 when answered; else it goes, with its slot's generation noted. */
static int cache_answers(cp_pipeline *p, uint32_t tag, cp__cmd *cmd, uint64_t now) {
    cp__client *c = p->c;
    if (c->nfences > 0 && c->fence_of[cmd->slot] >= 0) {
        cmd->cache_gen = c->cache->gen[cmd->slot] - 1; /* never stored: it may see the writes */
        return 0;
    }
    int n = cp__slottab_lookup(&c->slottab, cmd->slot);
    if (n < 0 || !cp__client_tracked(c, n) ||
        now - cp__client_heard_ns(c, n) > c->cache->silence_ns) {
        cmd->cache_gen = c->cache->gen[cmd->slot];
        c->cache->stats.misses++;
        return 0;
    }
    redisReply *r = cp__cache_lookup(c->cache, p->arena.data + cmd->off, cmd->len, cmd->slot,
                                     &p->replies, &cmd->cache_gen);
    if (r == NULL)
        return 0;
    cmd->flags |= CP__F_HIT;
    cmd->sent_ns = now;
    cp__batch_answered(p, tag, r, now);
    return 1;
}

/* First send of a command: straight into its node's output buffer when the connection is ready
 * and nothing waits before it there (pump would move it there next, in this order). */
static inline void dispatch(cp_pipeline *p, uint32_t tag, uint64_t now, dispatch_memo *m) {
    cp__client *c = p->c;
    cp__cmd *cmd = cp__get(p, tag);
    cmd->seq = ++c->seq; /* its place in the send order: a fence keeps a slot's by it */
    if ((cmd->flags & CP__F_CACHE) && cache_answers(p, tag, cmd, now))
        return;
    int n;
    if (c->nfences > 0 || (cmd->flags & (CP__F_BLOCKING | CP__F_WAIT | CP__F_SCRIPT | CP__F_DROPS)))
        n = -1; /* by route: a fence may hold it, a blocking command goes to the pool, a
                 * WAIT's timeout is noted where pump writes it, a script holds its slot and a
                 * write drops cache entries (cp__send_enqueue) */
    else if (cmd->slot >= 0 && cmd->slot == m->slot && cmd->flags == m->flags)
        n = m->node;
    else
        *m = (dispatch_memo){cmd->slot, cmd->flags, n = node_of(p, cmd)};
    if (n >= 0) {
        cp__node *node = &c->nodes[n];
        cp__conn *conn = &node->conn;
        size_t inflight = conn->fcount;
        if (node->q.n == 0 && conn->state == CP__CONN_READY && !node->cautious &&
            conn->olen - conn->opos < CP__OBUF_SOFT_LIMIT &&
            cp__conn_push(conn, p->arena.data + cmd->off, cmd->len, tag, &p->replies) == 0) {
            cmd->sent_ns = now;         /* as pump would: latency counts from the first send */
            if (inflight == 0)          /* the I/O timeout counts from the first request, not the */
                conn->last_io_ns = now; /* last bytes an idle connection moved */
            return;
        }
    }
    cp__send_route(p, tag, now);
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

static int take_node(cp__client *c, int n, taken *t, int code, const char *why) {
    cp__conn *conn = &c->nodes[n].conn;
    t->nf = conn->fcount;
    t->fifo = t->nf ? cp__malloc(t->nf * sizeof(*t->fifo)) : NULL;
    t->written = t->nf ? cp__malloc(t->nf) : NULL;
    if (t->nf > 0 && (t->fifo == NULL || t->written == NULL)) {
        cp__free(t->fifo);
        cp__free(t->written);
        t->fifo = NULL;
        t->written = NULL;
        return CP_ENOMEM;
    }
    for (size_t i = 0; i < t->nf; i++) {
        t->fifo[i] = conn->fifo[(conn->fhead + i) & (conn->fcap - 1)];
        t->written[i] = (uint8_t)cp__conn_was_written(conn, i);
    }
    cp__lifecycle_closing(c, n, code, why);
    cp__client_close_node(c, n);
    t->q = c->nodes[n].q;
    memset(&c->nodes[n].q, 0, sizeof(t->q));
    return 0;
}

static void taken_free(taken *t) {
    cp__free(t->q.v);
    cp__free(t->fifo);
    cp__free(t->written);
}

/* Node n's connection is unusable: requests written on it end unknown (or are retried when
 * safe), requests not yet written go to the next retry round, and the map is re-read. */
void cp__send_fail_node(cp__client *c, int n, int code, const char *why) {
    uint64_t now = cp__now_ns();
    char msg[CP__HOSTLEN + CP_ERRSTR_LEN + 16], addr[CP__HOSTLEN + 8];
    snprintf(addr, sizeof(addr), "%s:%d", c->nodes[n].host, c->nodes[n].port);
    if (strstr(why, addr) != NULL) /* the connection's own message already names it */
        snprintf(msg, sizeof(msg), "%s", why);
    else
        snprintf(msg, sizeof(msg), "%s: %s", addr, why);
    cp__lifecycle_failed(c, n, code, msg);
    taken t;
    if (take_node(c, n, &t, code, msg) != 0) {
        cp__batch_cancel_all(c, CP_ENOMEM, "out of memory");
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
            cp__send_retry_later(p, t.fifo[i].tag, code);
    }
    while (t.q.n > 0) {
        cp__qent e = cp__queue_pop(&t.q);
        cp__pipeline_set_err(e.p, code, "%s", msg);
        e.p->node_failed = 1;
        cp__send_retry_later(e.p, e.tag, code);
    }
    taken_free(&t);
    cp__fence_node_failed(c, n, cp__send_released, now);
    /* A connection to a former master that failed reads nothing more, so recv.c's trim never
     * comes: a killed master's, reconnecting when the map that demoted it came, kept them. */
    cp__client_trim_demoted(c, n);
    cp__send_kick_refresh(c, now);
}

void cp__send_fail_pool(cp__client *c, cp__pconn *pc, int code, const char *why) {
    uint64_t now = cp__now_ns();
    int n = pc->node;
    char msg[CP__HOSTLEN + CP_ERRSTR_LEN + 16];
    snprintf(msg, sizeof(msg), "%s:%d (blocking command's connection): %s", c->nodes[n].host,
             c->nodes[n].port, why);
    cp_pipeline *p = pc->p;
    uint32_t tag = pc->tag;
    int written = pc->sent && pc->conn.fcount > 0 &&
                  cp__conn_was_written(&pc->conn, pc->conn.fcount - 1); /* after an ASKING */
    cp__pool_remove(c, pc);
    c->need_refresh = 1;
    if (p != NULL) {
        cp__pipeline_set_err(p, code, "%s", msg);
        p->node_failed = 1;
        if (written)
            lost_in_flight(p, tag, code);
        else
            cp__send_retry_later(p, tag, code);
    }
    /* What waited for the node's pool goes to the next round: the map may name a new master. */
    cp_pipeline *w;
    uint32_t wtag;
    while (cp__pool_take_waiting(c, n, &w, &wtag)) {
        cp__pipeline_set_err(w, code, "%s", msg);
        w->node_failed = 1;
        cp__send_retry_later(w, wtag, code);
    }
    cp__send_kick_refresh(c, now);
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
            cp__send_fail_node(c, n, c->nodes[n].conn.err, c->nodes[n].conn.errstr);
            return;
        }
        cp__lifecycle_check_up(c, n); /* a connect that completed at once, no handshake */
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
                cmd->flags &= (uint16_t)~CP__F_ASKING;
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
                continue;
            }
            if (idle)
                conn->last_io_ns = now;    /* the I/O timeout counts from the first request */
            if (cmd->flags & CP__F_WAIT) { /* no reply is due before its timeout */
                /* ... counted from the end of the WAITs before it: the server runs a
                 * connection's WAITs one after another. */
                uint64_t from = node->wait_until > now ? node->wait_until : now;
                uint64_t until = cmd->block_ms == CP__BLOCK_FOREVER || from == UINT64_MAX
                                     ? UINT64_MAX
                                     : from + (uint64_t)cmd->block_ms * 1000000ull;
                node->waits++;
                if (until > node->wait_until)
                    node->wait_until = until;
            }
            idle = 0;
        }
        int rc = cp__conn_flush(conn, now);
        if (rc < 0) {
            cp__send_fail_node(c, n, rc, conn->errstr);
            return;
        }
        if (rc == 1 || node->q.n == 0 || node->conn.state != CP__CONN_READY)
            return;
        now = cp__now_ns(); /* a long queue: its next part is sent later */
    }
}

void cp__send_pump(cp__client *c, int n) {
    pump_at(c, n, 0);
}

void cp__send_pump_all(cp__client *c, uint64_t now) {
    for (int n = 0; n < c->nnodes; n++)
        pump_at(c, n, now);
}

/* ---- the in-band slot-map refresh: refresh.c decides and builds, this starts ----------- */

static void cmdtab_answered(cp_client *pc, const cp_response *r, void *data) {
    (void)data;
    cp__cmdtab_took(cp__client_of(pc), r);
}

static void refresh_answered(cp_client *pc, const cp_response *r, void *data) {
    cp__client *c = cp__client_of(pc);
    uint64_t now = cp__now_ns();
    int node = -1, rc = cp__refresh_took(c, data, r, now, &node);
    if (rc == 0) {
        cp__send_refresh(c, now, 0);
    } else if (rc == 1 && node >= 0) {
        cp_pipeline *p = cp__cmdtab_ask(c, node, cmdtab_answered);
        if (p != NULL)
            cp__send_start(p, 0);
    }
}

void cp__send_refresh(cp__client *c, uint64_t now, int hedge) {
    cp_pipeline *p = cp__refresh_ask(c, now, hedge, refresh_answered);
    if (p != NULL)
        cp__send_start(p, 0);
}

void cp__send_kick_refresh(cp__client *c, uint64_t now) {
    if (cp__refresh_begin(c, now))
        cp__send_refresh(c, now, 0);
}

void cp__send_refresh_now(cp__client *c) {
    c->need_refresh = 1;
    c->refresh.not_before = 0;
    cp__send_kick_refresh(c, cp__now_ns());
}

/* ---- starting a batch ---------------------------------------------------------------------- */

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

void cp__send_start(cp_pipeline *p, int io_now) {
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
    if (c->slottab.stale) /* MOVED patched slots since: rebuild the runs */
        cp__slottab_rebuild(&c->slottab);
    uint64_t now = cp__now_ns();
    p->deadline = now + (uint64_t)c->retry_budget_ms * 1000000ull;
    cp__batch_link(p);
    cp__send_kick_refresh(c, now);
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
        cp__send_pump_all(c, now);
    c->sending--;
    if (p->running && cp__batch_finished(p))
        cp__batch_wake_at(c, 1); /* completed from the loop's next call */
}

void cp__send_add(cp_pipeline *p, uint32_t tag) {
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
