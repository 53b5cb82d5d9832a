/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Topology: turns a CLUSTER SHARDS (Redis 7) or CLUSTER SLOTS reply into a slot map: for each of
 * the 16384 slots the index of the master serving it (or -1), plus the node list with masters and
 * replicas. CLUSTER NODES text gives the same map as one node sees it, with that node's own
 * MIGRATING / IMPORTING slots (the cluster SCAN reads it, scan.c). Parsing only, no I/O; the
 * client decides when to ask for a map (client.c). A cp__slotmap owns its node array; free with
 * cp__slotmap_free (a cp__nodesview: its map).
 */
#ifndef CLUSTERPIPE_TOPOLOGY_H
#define CLUSTERPIPE_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"

#define CP__HOSTLEN 256
#define CP__IDLEN 41

typedef struct cp__topo_node {
    char host[CP__HOSTLEN];
    int port;
    char id[CP__IDLEN]; /* "" when the reply gave none */
    int master;         /* -1 for a master, else the index of its master in nodes[] */
    int healthy;        /* 0 when the reply says the node failed */
} cp__topo_node;

typedef struct cp__slotmap {
    int16_t owner[CP_SLOTS]; /* index into nodes[] of the master serving the slot, or -1 */
    cp__topo_node *nodes;
    int nnodes;
} cp__slotmap;

/* Parse a CLUSTER SHARDS / CLUSTER SLOTS reply. `asked_host` replaces an empty or "?" address
 * (a node that does not know its own address). With `tls`, a node's "tls-port" is used when the
 * reply has one (CLUSTER SLOTS and redirects already give TLS connections the TLS port).
 * Returns 0, or CP_EPROTO with a reason in err when the reply does not have the documented shape,
 * or CP_ENOMEM. On success *out (caller-zeroed or freed before) owns a new node array. */
int cp__topo_parse_shards(const redisReply *r, const char *asked_host, int tls, cp__slotmap *out,
                          char *err, size_t errlen);
int cp__topo_parse_slots(const redisReply *r, const char *asked_host, cp__slotmap *out, char *err,
                         size_t errlen);

/* What CLUSTER NODES says, as the node that answered sees the cluster. Only that node's own
 * line carries slot migration marks ([slot->-id] MIGRATING, [slot-<-id] IMPORTING). */
#define CP__SLOT_MIGRATING 1
#define CP__SLOT_IMPORTING 2

typedef struct cp__nodesview {
    cp__slotmap map;          /* owners and nodes; a node without an address (noaddr) is left
                                 out, and so are the slots it serves (owner -1) */
    int myself;               /* the answering node's index in map.nodes, -1 if no line says so */
    uint8_t moving[CP_SLOTS]; /* myself's marks: CP__SLOT_MIGRATING / CP__SLOT_IMPORTING, or 0 */
    int16_t peer[CP_SLOTS];   /* for a marked slot: the node it goes to / comes from, -1 when
                                 that node is not in map.nodes */
} cp__nodesview;

/* Parses CLUSTER NODES text (len bytes). `asked_host` replaces an empty address, as above.
 * Returns 0, or CP_EPROTO with a reason in err for a line that does not have the documented
 * fields (id, ip:port@cport[,hostname], flags, master, ping, pong, epoch, link, slots...), a slot
 * out of range, or a node listed twice; CP_ENOMEM. On success *out (caller-zeroed or freed
 * before) owns a new node array. */
int cp__topo_parse_nodes(const char *text, size_t len, const char *asked_host, cp__nodesview *out,
                         char *err, size_t errlen);

/* Number of slots with an owner. */
int cp__slotmap_covered(const cp__slotmap *m);

void cp__slotmap_free(cp__slotmap *m);

#endif
