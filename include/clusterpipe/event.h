/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What happens to the client and its nodes: lifecycle events and per-node stats; included by
 * clusterpipe/clusterpipe.h (which defines CP_API, cp_client and redisReply before it), not on its
 * own. docs/api.md, "Events and node stats", has the contract with examples.
 */
#ifndef CLUSTERPIPE_EVENT_PUBLIC_H
#define CLUSTERPIPE_EVENT_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

/* ---- lifecycle events ------------------------------------------------------------------------ */

/* What an event tells. Every event names the node it is about (node, host, port), or none
 * (node -1, host "", port 0). Events are about a node's command connection and the slot maps
 * the client applied; blocking commands' and subscribers' connections have none of their own. */
typedef enum cp_event_type {
    /* The node's command connection became ready (connected, TLS and AUTH done): the first
     * time, and again after each CP_EVENT_NODE_DISCONNECTED. */
    CP_EVENT_NODE_CONNECTED = 1,
    /* A connection that was ready (CP_EVENT_NODE_CONNECTED) closed. code says why (CP_ECLOSED:
     * the server closed it, CP_EIO, CP_ETIMEDOUT: no reply within the I/O timeout, CP_EPROTO,
     * CP_ENOMEM...; 0: the client closed it itself, an idle connection it no longer needs),
     * text the message (names the node). A connection attempt that fails before it was ready
     * tells nothing: cp_node_get_stats' last_err has it. For each node, CONNECTED and
     * DISCONNECTED alternate, CONNECTED first. */
    CP_EVENT_NODE_DISCONNECTED,
    /* A slot map read from the cluster was applied and differs from the one applied before it
     * (slot owners, the nodes named, or which node is whose replica). version is the map's
     * version: 1 for the first map, one more at each change; slots how many slots have another
     * owner than in the previous map (the first map: every slot it assigns). A MOVED re-routes
     * its slot at once without an event; the map read after it tells. */
    CP_EVENT_MAP_CHANGED,
    /* After a CP_EVENT_MAP_CHANGED: a node the new map names and the previous one did not (the
     * first map: each of its nodes, masters and replicas). version as in that event. */
    CP_EVENT_NODE_ADDED,
    /* After a CP_EVENT_MAP_CHANGED: a node the previous map named and the new one does not (its
     * index stays valid; cp_node_get gives CP_NODE_OTHER). version as in that event. */
    CP_EVENT_NODE_REMOVED,
    /* After a CP_EVENT_MAP_CHANGED (and its ADDED / REMOVED): node, a replica of old_node in
     * the previous map, is a master in the new one (a failover, automatic or CLUSTER
     * FAILOVER). slots: the slots it took over from old_node. version as in that event. */
    CP_EVENT_FAILOVER,
    /* A subscription (cp_subscribe) was confirmed again after it had been lost: its connection
     * broke, or its channel's slot moved or failed over. node is the node that confirmed it,
     * text / text_len its channel or pattern, sub_kind its cp_sub_kind. Its own callback gets
     * CP_SUB_RESUBSCRIBED as well. */
    CP_EVENT_RESUBSCRIBED,
    /* Once per client: a cluster client applied its first slot map (after that map's
     * MAP_CHANGED and NODE_ADDED events; version 1), or an endpoint client's connection was
     * first ready (after its CONNECTED; node 0). */
    CP_EVENT_READY
} cp_event_type;

/* An event; its strings live until the callback returns (copy what is kept). Fields an event's
 * type does not set are 0, -1 (node, old_node) or "" (host, text). */
typedef struct cp_event {
    cp_event_type type;
    int node;         /* the node it is about (cp_node_get), -1: none */
    const char *host; /* its address */
    int port;
    int code;         /* NODE_DISCONNECTED: why, a CP_E* code (0: closed by the client) */
    const char *text; /* NODE_DISCONNECTED: the message; RESUBSCRIBED: the channel or pattern */
    size_t text_len;  /* strlen(text), or the channel's length (not NUL-terminated then) */
    uint64_t version; /* the slot map's version (0 before the first map) */
    int slots;        /* MAP_CHANGED: slots with another owner; FAILOVER: slots taken over */
    int old_node;     /* FAILOVER: the master the node replaced, else -1 */
    int sub_kind;     /* RESUBSCRIBED: the subscription's cp_sub_kind */
    uint64_t at_ns;   /* CLOCK_MONOTONIC when the library saw it */
} cp_event;

/* The program's event callback. It runs inside the library, on the client's thread, while the
 * library handles what happened: from the loop's calls (cp_on_ready, cp_on_timer), a blocking
 * client's calls (cp_exec, cp_command...), or a send that found a connection broken. It may
 * read the client (cp_node_count, cp_node_get, cp_node_slots, cp_node_get_stats,
 * cp_get_stats, cp_pending) and record what it needs; it must not call anything else of the
 * client (no appends, no cp_exec, no async commands, no cp_subscribe, no cp_free): a program
 * that wants to act on an event does so after the call it came from returns. cp_free tells no
 * events. */
typedef void cp_event_fn(cp_client *c, const cp_event *ev, void *data);

/* Sets (fn NULL: clears) the client's event callback. Events from then on go to it; set it
 * before cp_attach to hear of the first map (cp_connect has applied it before it returns).
 * Never blocks. */
CP_API void cp_set_event_callback(cp_client *c, cp_event_fn *fn, void *data);

/* ---- per-node stats -------------------------------------------------------------------------- */

/* A node's command connection, counted since the client was made (over all its connections
 * to the node); blocking commands' and subscribers' connections are not in it. */
typedef struct cp_node_stats {
    size_t queued;       /* commands waiting for the connection (not in its buffer yet) */
    size_t in_flight;    /* requests in the connection: buffered or written, not answered */
    uint64_t bytes_out;  /* bytes written to its sockets (the handshake's included) */
    uint64_t bytes_in;   /* bytes read from them */
    uint64_t connects;   /* times its connection became ready */
    uint64_t reconnects; /* ... of those, after its connection had failed */
    uint64_t moved, ask; /* MOVED and ASK replies it sent (redirects away from it) */
    int last_err;        /* why its connection last failed (a CP_E* code), 0: never */
    char last_errstr[CP_ERRSTR_LEN]; /* ... the message, "" when never */
} cp_node_stats;

/* Node i's stats into out. 0, or CP_EINVAL for no such node. Reads plain counters: never
 * blocks, allocates nothing; may be called from any of the client's callbacks. */
CP_API int cp_node_get_stats(const cp_client *c, int i, cp_node_stats *out);

#endif
