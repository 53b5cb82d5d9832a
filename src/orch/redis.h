/* SPDX-License-Identifier: BSD-3-Clause
 *
 * redis-server as a process of a topology, shared by the two roles that run it (cluster.c:
 * masters and replicas; twemproxy.c: the shards behind the proxies): its redis.conf, its command
 * line and its readiness probe (PING). These are the building blocks of those roles' cp__role_ops
 * tables; nothing here keeps state. The admin connection of a probe is closed before returning.
 * One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_REDIS_H
#define CLUSTERPIPE_ORCH_REDIS_H

#include "orch/topo.h"

/* t->redis_bin. */
const char *cp__redis_binary(const cp_topo *t);

/* Writes DIR/redis-PORT/redis.conf for process i: loopback only, its own log, persistence as
 * recorded, TLS and AUTH as the topology has them; with cluster, cluster-enabled (and with TLS
 * tls-cluster). Returns 0 or CP_EIO with err. */
int cp__redis_write_conf(const cp_topo *t, size_t i, int cluster, char *err, size_t errlen);

/* Appends the path of process i's redis.conf. 0 or CP_EINVAL (a full). */
int cp__redis_add_args(const cp_topo *t, size_t i, cp__argv *a);

/* 0 when process i answers PING with PONG; otherwise a CP_E* code (CP_ECONNECT and friends from
 * the connection, CP_ESERVER for LOADING and other answers) with why in err. Blocks up to 0.5 s. */
int cp__redis_probe(const cp_topo *t, size_t i, char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_REDIS_H */
