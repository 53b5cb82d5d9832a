/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Lifecycle events and per-node stats (clusterpipe/event.h): what the program is told when a
 * node's command connection becomes ready or closes, when an applied slot map changed (its
 * version, the slots that changed owner, nodes added and removed, failovers), when a
 * subscription is re-established and when the client is first ready; and the counters
 * cp_node_get_stats reads. The modules that see these things call in here; this module calls
 * no other module of the library, so every call into it goes one way. Nothing here allocates:
 * an event is built on the stack, its strings the caller's. One thread, the client's.
 */
#ifndef CLUSTERPIPE_LIFECYCLE_H
#define CLUSTERPIPE_LIFECYCLE_H

#include "lib/client/client.h"

/* Node n's command connection may have become ready (after a connect moved on, its handshake
 * answered, or a connect that completed at once): CP_EVENT_NODE_CONNECTED the first time it is
 * seen ready since it was last closed (and, for an endpoint client, CP_EVENT_READY once). */
void cp__lifecycle_check_up(cp__client *c, int n);

/* Node n's command connection is being closed: CP_EVENT_NODE_DISCONNECTED with code/why when
 * it had been connected (code 0: the client closed it itself). */
void cp__lifecycle_closing(cp__client *c, int n, int code, const char *why);

/* Node n's connection failed (why: its message): kept as its last error; its next ready
 * connection counts as a reconnect. */
void cp__lifecycle_failed(cp__client *c, int n, int code, const char *why);

/* A MOVED (ask 0) or ASK (ask 1) reply came from node n. */
static inline void cp__lifecycle_redirect(cp__client *c, int n, int ask) {
    if (ask)
        c->nodes[n].life.ask++;
    else
        c->nodes[n].life.moved++;
}

/* A slot map was just applied: c->slottab.node holds its owners and each node's is_master and
 * master its roles (a node it does not name has neither). Compares it with the map applied
 * before (c->applied and each node's life), tells CP_EVENT_MAP_CHANGED, NODE_ADDED,
 * NODE_REMOVED, FAILOVER in that order when it differs, and CP_EVENT_READY after the first. */
void cp__lifecycle_map_applied(cp__client *c);

/* A subscription of kind `kind`, channel or pattern name (len bytes), was confirmed again by
 * node n: CP_EVENT_RESUBSCRIBED. */
void cp__lifecycle_resubscribed(cp__client *c, int n, int kind, const char *name, size_t len);

#endif
