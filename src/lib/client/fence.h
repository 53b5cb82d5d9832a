/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fences keep one slot's commands in the order they were sent, through every wait. A slot gets a
 * fence when one of its commands cannot go on yet, and the slot's later commands then wait
 * behind it, in order:
 *
 *   - a command put aside for a retry round (TRYAGAIN, CLUSTERDOWN, LOADING, a broken or refused
 *     connection) or for the slot map (its slot has no known owner): it is *parked* in the fence
 *     until its batch's round lets it go (cp__fence_ready);
 *   - commands of the slot still in flight or queued on a node that no longer serves it (it
 *     answered MOVED, or a new map names another owner): the node is an *old owner* of the fence
 *     until it has answered every one of them (they come back redirected, in order) or failed.
 *
 * Every command has a place in its client's send order (cmd.seq, given at its first send). A
 * fence keeps what it holds sorted by it, and lets commands go from the front only: the front
 * when it is ready (held behind others, or its round came), none while an old owner is left.
 * A command routed while its slot has a fence waits in it when the fence holds anything sent
 * before it, or has an old owner (a redirect coming back from an old owner is one of the
 * commands waited for, and passes). So no command of a slot overtakes an earlier one that is
 * waiting anywhere in the client.
 *
 * At a single endpoint (twemproxy, one redis) every command shares one connection, so the
 * endpoint's whole stream keeps its order this way, as one slot would.
 *
 * Bookkeeping only, no I/O: the commands let go are handed to the caller's function (send.c's),
 * and the fences live on the client and go with it. One thread, the client's.
 */
#ifndef CLUSTERPIPE_FENCE_H
#define CLUSTERPIPE_FENCE_H

#include "lib/client/pipeline.h"

/* The slot whose order a command keeps: its own in a cluster (none for a keyless command or one
 * for a chosen node), and one for everything at a single endpoint, whose commands all share a
 * connection. */
static inline int cp__fence_slot(const cp__client *c, const cp__cmd *cmd) {
    return c->cluster ? cmd->slot : 0;
}

/* Where a command let through goes: queued on `target` (a redirect's node), or routed by the
 * map when target is -1 (now: the time of the call). */
typedef void cp__fence_send(cp_pipeline *p, uint32_t tag, int target, uint64_t now);

/* A command of p (tag) is about to be queued, first sent or redirected (redirect: it comes back
 * from a node, MOVED or ASK, with target its new node): held in its slot's fence, in order, when
 * the fence holds a command sent before it or (not for a redirect) has an old owner. 1 when
 * held, 0 when it may go, CP_ENOMEM (not held). */
int cp__fence_hold(cp__client *c, cp_pipeline *p, uint32_t tag, int target, int redirect);

/* Parks a command put aside for a retry round or the map in its slot's fence (made when there
 * is none), in order: the slot's later commands wait for it. 0, or CP_ENOMEM (not parked; also
 * for a command without a slot, which keeps no order). */
int cp__fence_park(cp__client *c, cp_pipeline *p, uint32_t tag);

/* The round of parked commands tags[0..n) of p came: each goes when every command of its slot
 * sent before it has; send gets them and whatever may follow them now, in the order they were
 * sent, across their slots too. */
void cp__fence_ready(cp__client *c, cp_pipeline *p, const uint32_t *tags, size_t n,
                     cp__fence_send *send, uint64_t now);

/* A blocking command of p (tag) is about to go to node n's pool: it sees what the slot's earlier
 * commands did, so while n's command connection still has some of them, n becomes an old owner
 * of the slot's fence and the command is held in it (target n) until they are answered. 1 when
 * held, 0 when none are left there, CP_ENOMEM (not held). */
int cp__fence_behind(cp__client *c, int n, cp_pipeline *p, uint32_t tag);

/* A command that may have to go to node n again before the slot's later commands (an EVALSHA,
 * which a NOSCRIPT answer sends again as EVAL) was just queued on n: n holds the slot's later
 * commands back as an old owner does, until it has answered every command of `slot` it has now,
 * that one the last. 0, or CP_ENOMEM (nothing held: the caller must not rely on the order). A
 * command without a slot (keyless) keeps no order: 0. */
int cp__fence_until_answered(cp__client *c, int n, int slot);

/* Node n answered MOVED for `slot`: it becomes an old owner of the slot's fence when it still
 * has more of the slot's commands. Out of memory, it does not (order across this redirect is
 * then not kept). */
void cp__fence_moved(cp__client *c, int n, int slot);

/* A new map is in the slot table; old_owner[s] was each slot's node before it (-1: none). Every
 * node that lost a slot while it still had commands of it becomes an old owner of the slot's
 * fence. Out of memory, order across this change is not kept for the slots not fenced. */
void cp__fence_map_changed(cp__client *c, const int16_t *old_owner);

/* Whether node n's replies for `slot` count down a fence now. A reply's command is counted only
 * by a fence that existed before the reply was acted on (acting on a MOVED may make one). */
int cp__fence_counts(const cp__client *c, int n, int slot);

/* A reply (of any kind) came from node n for a command of `slot`. When that was the last
 * command n had there, n is no old owner any more, and what may go goes to send, in order. */
void cp__fence_reply(cp__client *c, int n, int slot, cp__fence_send *send, uint64_t now);

/* Node n failed (its commands already parked or ended): it is no old owner of any slot. */
void cp__fence_node_failed(cp__client *c, int n, cp__fence_send *send, uint64_t now);

/* Drops every fence; each command one holds goes to drop(p, tag, data), in order (cp_free). */
typedef void cp__fence_drop(cp_pipeline *p, uint32_t tag, void *data);
void cp__fence_drop_all(cp__client *c, cp__fence_drop *drop, void *data);

#endif
