/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Replies read and acted on (recv.h): the answer a caller sees, or a redirect or retry it never
 * sees, and a transaction's answers ended as one. One thread, the client's.
 */
#include "lib/core/recv.h"

#include "lib/core/batch.h"
#include "lib/cache/cache.h"
#include "lib/client/fence.h"
#include "lib/client/lifecycle.h"
#include "lib/client/pool.h"
#include "lib/pubsub/push.h"
#include "lib/client/readfrom.h"
#include "lib/client/script.h"
#include "lib/core/send.h"
#include "lib/pubsub/tracklink.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* A MOVED names slot's owner m: the slot table is patched, and what the client-side cache kept
 * of the slot goes when it changed hands (its invalidations come from the old owner). */
static void moved_to(cp__client *c, int slot, int m) {
    int was = cp__slottab_lookup(&c->slottab, slot);
    if (c->cache != NULL && was >= 0 && was != m)
        cp__cache_slot_moved(c->cache, slot);
    cp__slottab_patch(&c->slottab, slot, m);
}

/* A cacheable read's answer from node n: kept when n serves its slot per the map, it was never
 * redirected, and nothing changed its slot since it was sent (cache.h). */
static void cache_took(cp__client *c, int n, cp_pipeline *p, const cp__cmd *cmd,
                       const redisReply *r) {
    int owner = cmd->redirects == 0 && cp__slottab_lookup(&c->slottab, cmd->slot) == n &&
                cp__client_tracked(c, n); /* RESP2: sent behind the confirmed REDIRECT */
    cp__cache_took(c->cache, p->arena.data + cmd->off, cmd->len, cmd->slot, cmd->cache_gen, n,
                   owner, r);
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
        cmd->flags &= (uint16_t) ~(CP__F_ASKING | CP__F_WRITTEN);
        if (i == t->first && t->ask)
            cmd->flags |= CP__F_ASKING;
        cp__send_redirect(p, m, i);
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
        cp__lifecycle_redirect(c, n, kind == CP__ERR_ASK);
        if (host[0] == '\0')
            snprintf(host, sizeof(host), "%s", c->nodes[n].host);
        int m = cp__client_node(c, host, port);
        if (m >= 0 && t->target < 0) {
            t->target = m;
            t->ask = kind == CP__ERR_ASK;
        }
        if (m >= 0 && kind == CP__ERR_MOVED) {
            cp__fence_moved(c, n, slot); /* later commands for the slot wait for the unit */
            moved_to(c, slot, m);
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

/* A script's EVALSHA answered NOSCRIPT by node n: the server ran nothing, so the same command
 * goes again as EVAL, with the body, to n, once (the flag that brought it here is gone after the
 * swap). It goes before the slot's later commands: they wait behind the EVALSHA's answer
 * (send.c), and a re-send passes the fence unless something sent before it waits there. At a
 * node the map does not name for the slot, the EVALSHA came by an ASK: ASKING again. */
static void script_noscript(cp__client *c, int n, cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = cp__get(p, tag);
    if (c->cluster && cmd->slot >= 0 && cp__slottab_lookup(&c->slottab, cmd->slot) != n)
        cmd->flags |= CP__F_ASKING;
    c->script_stats.noscript++;
    cp__send_redirect(p, n, tag);
}

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
    if ((cmd->flags & CP__F_SCRIPT) && cp__is_noscript(r) && cp__script_use_eval(p, tag) == 0) {
        script_noscript(c, n, p, tag);
        return;
    }
    if (!c->cluster) { /* a script's other answers at a single endpoint */
        cp__batch_answered(p, tag, r, now);
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
        cp__lifecycle_redirect(c, n, kind == CP__ERR_ASK);
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
            moved_to(c, slot, m);
            c->nodes[m].is_master = 1;
            c->need_refresh = 1; /* the rest of the map is read in-band, spaced */
        } else {
            cmd->flags |= CP__F_ASKING;
        }
        cp__send_redirect(p, m, tag);
        return;
    case CP__ERR_TRYAGAIN:
    case CP__ERR_CLUSTERDOWN:
    case CP__ERR_LOADING:
    case CP__ERR_UNBLOCKED:
        /* Its state is changing: one command of a slot at a time to it for a while. */
        c->nodes[n].cautious = 1;
        c->nodes[n].cautious_until = now + CP__CAUTIOUS_NS;
        if (kind == CP__ERR_TRYAGAIN)
            c->stats.tryagain++;
        else if (kind == CP__ERR_CLUSTERDOWN || kind == CP__ERR_UNBLOCKED) {
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
        cp__send_retry_later(p, tag, CP_ESERVER);
        return;
    default:
        cp__batch_answered(p, tag, r, now);
    }
}

#ifndef NDEBUG
/* A connection's FIFO entry names a command of its batch that is still waiting for its answer
 * (or an ASKING before one), in a batch that runs. */
static int entry_matches(cp_pipeline *p, uint32_t tag) {
    if (tag >= CP__TAG_INTERNAL)
        return tag == CP__ASKING_TAG;
    size_t i = tag & ~CP__PART_TAG, n = (tag & CP__PART_TAG) ? p->parts.n : p->cmds.n;
    return p->running && i < n && cp__get(p, tag)->outcome == CP_PENDING;
}
#endif

void cp__recv_node(cp__client *c, int n) {
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
            cp__send_fail_node(c, n, got, c->nodes[n].conn.errstr);
            return;
        }
        if (arena == NULL) { /* the handshake answered (commands may go in now), a push, or a
                                dropped reply */
            if (cp__conn_is_handshake(tag)) {
                cp__lifecycle_check_up(c, n); /* its last answer made it ready */
                cp__send_pump(c, n);
            } else if (tag == CP__TAG_PUSH) {
                if (c->cache != NULL) /* an invalidation evicts before the push is told */
                    cp__cache_push(c->cache, n, r);
                cp__push_deliver(c, n, r);
            } else if (tag == CP__TAG_REDIRECT) {
                char why[CP_ERRSTR_LEN];
                int bad = cp__tlink_answered(c, n, r, why, sizeof(why));
                if (bad != 0) {
                    cp__send_fail_node(c, n, bad, why);
                    return;
                }
            }
            continue;
        }
        cp_pipeline *p = cp__pipeline_of_arena(arena);
        assert(entry_matches(p, tag));
        /* A fence is lifted after its last command's reply was acted on: a redirect of that
         * command goes before the commands the fence held. (Read first: acting may free p.)
         * A blocking command's fence (cp__fence_behind) counts these replies the same way. */
        int fenced = c->nfences > 0 && tag < CP__TAG_INTERNAL;
        int slot = fenced ? cp__fence_slot(c, cp__get(p, tag)) : 0;
        fenced = fenced && cp__fence_counts(c, n, slot);
        if (tag < CP__TAG_INTERNAL && (cp__get(p, tag)->flags & CP__F_WAIT) &&
            --c->nodes[n].waits == 0)
            c->nodes[n].wait_until = 0; /* the I/O timeout is its own again */
        if (tag < CP__TAG_INTERNAL && (r->type != REDIS_REPLY_ERROR ||
                                       (!c->cluster && !(cp__get(p, tag)->flags & CP__F_SCRIPT)))) {
            cp__cmd *cmd = cp__get(p, tag);
            if (!(cmd->flags & (CP__F_TX | CP__F_WATCH | CP__F_CACHE))) {
                cp__batch_answered(p, tag, r, now); /* nearly every reply: no call into on_reply */
            } else if (cmd->flags & CP__F_CACHE) {  /* never in a unit */
                cache_took(c, n, p, cmd, r);
                cp__batch_answered(p, tag, r, now);
            } else {
                txn_reply(c, n, p, tag, r, now);
            }
        } else {
            on_reply(c, n, p, tag, r, now);
        }
        if (fenced)
            cp__fence_reply(c, n, slot, cp__send_released, now);
    }
    if (rc < 0 && c->nodes[n].conn.state != CP__CONN_CLOSED)
        cp__send_fail_node(c, n, rc, c->nodes[n].conn.errstr);
    /* A node no longer a master gives its buffers back once its last commands are answered:
     * the map that demoted it trimmed it only if it was idle then (refresh.c), and a client's
     * next map may be long in coming. */
    cp__client_trim_demoted(c, n);
}

int cp__recv_pool(cp__client *c, cp__pconn *pc) {
    int rc = cp__conn_fill(&pc->conn);
    uint64_t now = pc->conn.last_io_ns;
    for (;;) {
        redisReply *r = NULL;
        uint32_t tag;
        cp__reply_arena *arena;
        int got = cp__conn_reply(&pc->conn, &r, &tag, &arena);
        if (got == 0)
            break;
        if (got < 0) {
            cp__send_fail_pool(c, pc, got, pc->conn.errstr);
            return 1;
        }
        if (arena == NULL) { /* the handshake answered (the command goes in), or a push */
            if (cp__conn_is_handshake(tag))
                cp__pool_send(c, pc, now);
            else if (tag == CP__TAG_PUSH)
                cp__push_deliver(c, pc->node, r);
            continue;
        }
        if (tag == CP__ASKING_TAG)
            continue; /* its command's own reply tells what happened */
        cp_pipeline *p = cp__pipeline_of_arena(arena);
        assert(entry_matches(p, tag) && p == pc->p && tag == pc->tag);
        cp__pool_idle(c, pc, now); /* first: acting on the reply may send it a new command */
        if (r->type != REDIS_REPLY_ERROR || !c->cluster)
            cp__batch_answered(p, tag, r, now);
        else
            on_reply(c, pc->node, p, tag, r, now);
    }
    if (rc < 0) {
        cp__send_fail_pool(c, pc, rc, pc->conn.errstr);
        return 1;
    }
    return 0;
}
