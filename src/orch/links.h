/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Hosts and links of a topology with a wire (cp_up_opts.rtt_ns > 0): which process talks to
 * which, which of those links cross hosts, and the one `clusterpipe wire` process that stands in
 * every crossing link (role CP_ROLE_WIRE, its table here). Every redis-server is a host of its
 * own and the client is one more; twemproxy's proxies sit by t->placement: with the servers
 * (proxy k on the host of shard k mod shards), with the client, or on hosts of their own (tier).
 * A crossing link gets a port of the wire, which forwards it to the target's own port; the
 * configs then name that port (cluster-announce-port, nutcracker's server list), and clients
 * reach the endpoints at it (cp_topo_client_port). Links live in the caller's cp_topo and its
 * state.json; nothing here keeps state. One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_LINKS_H
#define CLUSTERPIPE_ORCH_LINKS_H

#include "orch/topo.h"

extern const cp__role_ops cp__wire_ops;

/* t->wire_control from t->dir. CP_EINVAL with err when that path is too long for a Unix socket;
 * nothing is set then. */
int cp__links_paths(cp_topo *t, char *err, size_t errlen);

/* After the servers and proxies are recorded (not started): records the wire process and every
 * link, each crossing one with a port of the wire. Returns 0, or a CP_E* code with err (no free
 * port, more than CP__MAX_LINKS links, out of memory). */
int cp__links_plan(cp_topo *t, char *err, size_t errlen);

/* A process i added while the topology runs (a cluster node, a twemproxy shard), not started
 * yet: records its links, and tells the running wire of each crossing one ("link NAME PORT
 * HOST:PORT" on its control socket) so that its config can name the wire's port. Nothing to do
 * without a wire; a wire that is not running, with a link of i to cross, is CP_ECONNECT. Returns
 * 0, or a CP_E* code with err. */
int cp__links_add_for(cp_topo *t, size_t i, char *err, size_t errlen);

/* Forgets the links of the last process, i, which is being forgotten too (it failed to start;
 * nothing refers to it). Their ports stay reserved; the wire keeps listening on them, to no
 * one. */
void cp__links_drop_for(cp_topo *t, size_t i);

#endif /* CLUSTERPIPE_ORCH_LINKS_H */
