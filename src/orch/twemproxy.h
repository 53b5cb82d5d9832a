/* SPDX-License-Identifier: BSD-3-Clause
 *
 * twemproxy (nutcracker) specifics of the orchestration layer: the per-role tables of its two
 * roles (the plain redis-server shards, and the proxies: their YAML config, command line and the
 * SET/GET probe that says a proxy serves), plus adding a shard and restarting the proxies
 * (cp_topo_add_shard, cp_topo_restart_proxies in orch.h). The tables are static and borrowed by
 * every twemproxy cp_topo. One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_TWEMPROXY_H
#define CLUSTERPIPE_ORCH_TWEMPROXY_H

#include "orch/topo.h"

/* How the process core handles shards (redis-server without cluster) and proxies (nutcracker,
 * whose config lists every shard of the topology in index order). */
extern const cp__role_ops cp__twemproxy_shard_ops;
extern const cp__role_ops cp__twemproxy_proxy_ops;

#endif /* CLUSTERPIPE_ORCH_TWEMPROXY_H */
