/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis Cluster formation and inspection for the orchestration layer: create a cluster from
 * started, empty nodes (ADDSLOTSRANGE, SET-CONFIG-EPOCH, MEET, REPLICATE), read a node's view
 * (CLUSTER NODES), wait until every node agrees, and copy the agreed roles back into the
 * topology. Also the per-role tables of cluster nodes (masters and replicas: redis-server with
 * cluster-enabled, PING as the readiness probe) that the process core starts them through.
 * Views are plain values owned by the caller (~70 KiB: allocate them). One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_CLUSTER_H
#define CLUSTERPIPE_ORCH_CLUSTER_H

#include "orch/topo.h"

/* One line of CLUSTER NODES. */
typedef struct cp__cnode {
    char id[48];
    int port;
    int master;               /* 1 master, 0 replica */
    int myself;               /* the node we asked */
    int bad;                  /* fail, fail?, handshake, noaddr, or link disconnected */
    char master_id[48];       /* replicas: their master's id, else "" */
    unsigned long long epoch; /* its config epoch, as the node asked knows it */
    int nslots;
} cp__cnode;

/* One node's view of the cluster. owner[s] is the index in node[] of the owner of slot s, or -1;
 * slots being migrated count for their current owner. */
typedef struct cp__cview {
    size_t n;
    cp__cnode node[CP__MAX_PROCS];
    short owner[16384];
} cp__cview;

/* How the process core handles masters and replicas (they differ only in being endpoints). */
extern const cp__role_ops cp__cluster_master_ops;
extern const cp__role_ops cp__cluster_replica_ops;

/* Parses CLUSTER NODES text. Returns 0 or CP_EPROTO (malformed, too many nodes). */
int cp__cluster_parse_nodes(const char *text, cp__cview *v);

/* CLUSTER NODES of process i parsed into *v. 0, or a CP_E* code with err (CP_ECONNECT when it
 * cannot be reached, CP_EPROTO for an unparsable answer, or the command's code). */
int cp__cluster_view(const cp_topo *t, size_t i, cp__cview *v, char *err, size_t errlen);

/* Index in v->node of id, or -1. */
int cp__cview_find(const cp__cview *v, const char *id);

/* Readies each of t's started nodes on its own: its id (saved in the state), a distinct config
 * epoch, and a master's equal range of slots. Done when the nodes start (cp_topo_start), because
 * a master that serves no slot counts itself in a minority, and Redis keeps a master from
 * reporting cluster_state:ok for the node timeout after its last minority moment: slots taken at
 * the start let that time pass before the cluster is formed. Returns 0 or a CP_E* code with err. */
int cp__cluster_prepare(cp_topo *t, char *err, size_t errlen);

/* Forms the cluster out of t's prepared nodes (every pair MEETs, replicas follow their
 * recorded master), then waits for agreement (strict roles) while watching for deaths. Returns 0
 * or a CP_E* code with err. */
int cp__cluster_create(cp_topo *t, char *err, size_t errlen);

/* One pass of the agreement check over every alive node of t: each answers CLUSTER INFO with
 * cluster_state:ok, knows every node of t with no bad flags on alive ones, and has the same slot
 * owners and roles as the others; replicas report master_link_status:up. strict: every role and
 * master must also match t's record. Returns 0 when all hold, else a CP_E* code with the first
 * problem: CP_ETOPOLOGY (not formed or not agreed yet), CP_ECONNECT (a node cannot be reached),
 * CP_ENOMEM, or the failing command's code. */
int cp__cluster_check(const cp_topo *t, int strict, char *err, size_t errlen);

/* Repeats cp__cluster_check until it holds, a process dies, the caller cancels, or timeout_ms
 * passes. Returns 0 or a CP_E* code with err. */
int cp__cluster_wait(cp_topo *t, int strict, int timeout_ms, char *err, size_t errlen);

/* Copies roles and masters from an alive node's view into t->procs (after failover or restart)
 * and saves the state. Returns 0 or a CP_E* code. */
int cp__cluster_sync_roles(cp_topo *t, char *err, size_t errlen);

/* Index of the first alive master of t other than `not`, or -1. */
int cp__cluster_any_master(const cp_topo *t, int not_index);

#endif /* CLUSTERPIPE_ORCH_CLUSTER_H */
