/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Targets of the bench engine (private to src/bench/): building a cp__bench_target from a
 * topology or from an external endpoint list, the client options every connection to it takes,
 * and resolving it before a run (slot map, endpoints, which processes to measure or count, key
 * and value formats) into a cp__target_ctx and the target part of a cp__run_spec.
 *
 * Ownership: a cp__bench_target is caller-allocated and borrows its strings and topology. A
 * cp__target_ctx owns its map, endpoint and server arrays and its value template, freed by
 * cp__target_ctx_free. Clients from cp__target_node_connect belong to the caller. Threads:
 * calling thread only; cp__target_prepare and cp__target_node_connect block on the network.
 */
#ifndef CLUSTERPIPE_TARGET_H
#define CLUSTERPIPE_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/config.h"
#include "bench/cpu.h"
#include "bench/keyspace.h"
#include "bench/nodes.h"
#include "bench/plan.h"
#include "clusterpipe/clusterpipe.h"

/* From a running topology: mode from its kind (cluster / twemproxy), endpoints = its masters or
 * proxies, password from it (unless `password` is not NULL), topo = t. Returns 0 or CP_EINVAL
 * (endpoint list does not fit). Nothing is copied except the endpoints. */
int cp__bench_target_from_topo(cp__bench_target *out, const cp_topo *t, const char *password,
                               const char *user);

/* An external deployment: mode, endpoints (copied), password and user (borrowed). Returns 0 or
 * CP_EINVAL (empty or too long endpoint list, or an entry that is not HOST:PORT). */
int cp__bench_target_external(cp__bench_target *out, cp__target_mode mode, const char *endpoints,
                              const char *password, const char *user);

/* Sets the connection fields of *opt every client of the target needs: password, ACL user and
 * TLS. Leaves seeds/endpoint and timeouts alone. The one place that turns a target into client
 * options, so every connection (workers, load, CPU and DBSIZE probes) authenticates alike. */
void cp__bench_target_options(const cp__bench_target *t, cp_options *opt);

/* "cluster", "twemproxy" or "external" (the JSON "topology" field). */
const char *cp__bench_target_topology(const cp__bench_target *t);

/* A single-endpoint client to host:port (a server of the target) with the target's password,
 * user and TLS (cp__node_connect). Returns the client (caller cp_free()s) or NULL with err set;
 * blocks up to the connect timeout. */
cp_client *cp__target_node_connect(const cp__bench_target *t, const char *host, int port, char *err,
                                   size_t errlen);

/* A server process the engine measures (CPU) or counts (DBSIZE). */
typedef struct cp__server {
    cp__node_addr addr;
    pid_t pid;         /* > 0: local process of a topology (CPU from /proc); 0: remote */
    cp__cpu_comp comp; /* CP__CPU_REDIS, CP__CPU_PROXY, or CP__CPU_WIRE (holds no keys) */
    bool holds_keys;   /* counted by load's DBSIZE check (masters, twemproxy shards) */
    bool replica;      /* a cluster replica of the topology: its CPU is also cpu_replicas */
    int stats_port;    /* nutcracker: stats port, else 0 */
} cp__server;

/* What a run needs to know about its target, resolved once on the calling thread. Owns its
 * allocations (cp__target_ctx_free). */
typedef struct cp__target_ctx {
    cp__nodemap *map;    /* cluster: heap; NULL in proxy mode */
    cp_client *commands; /* cluster: the client that read the map, kept for its COMMAND table */
    cp__node_addr *endpoints;
    int nendpoints;
    cp__server *servers;
    int nservers;
    int masters; /* cluster: masters; proxy: endpoints */
    cp__keyfmt kf;
    cp__valuefmt vf;
} cp__target_ctx;

/* Resolves the target (cluster: reads the slot map through a fresh client; proxy: parses the
 * endpoints), the servers to measure (topology processes, or the cluster's masters when
 * external), and prepares key and value formats. Fills the target part of spec (mode, seeds,
 * endpoints, password, map, kf, vf, probe keys). Blocks. Returns 0 or a negative CP_E* code with
 * err set; on error ctx is still safe to free. */
int cp__target_prepare(const cp__bench_target *t, const char *key_prefix, cp__key_layout layout,
                       uint64_t keys, const cp__value_sizes *value_size, bool verifiable,
                       cp__run_spec *spec, cp__target_ctx *ctx, char *err, size_t errlen);
void cp__target_ctx_free(cp__target_ctx *ctx);

#endif /* CLUSTERPIPE_TARGET_H */
