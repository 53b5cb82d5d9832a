/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The plan of a run (private to src/bench/): cp__run_spec, what every worker thread runs, and
 * the pure helpers that turn a configuration into it (the SET:GET ratio, clients per thread,
 * requests per client, lanes per client). engine.c (bench) and load.c (load) fill a spec,
 * target.c fills its target part; the workers only read it.
 *
 * Ownership: a cp__run_spec is caller-allocated (about 5 KiB: allocate it on the heap); the
 * target, slot map and key/value formats it points to are borrowed from the cp__target_ctx and
 * the config, which must outlive the run. Threads: read-only and shared by every worker while a
 * run goes; the helpers are pure and callable from any thread.
 */
#ifndef CLUSTERPIPE_PLAN_H
#define CLUSTERPIPE_PLAN_H

#include <stdatomic.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/config.h"
#include "bench/keyspace.h"
#include "bench/nodes.h"

/* What every worker runs; filled by engine.c or load.c (target part: cp__target_prepare),
 * read-only during the run. */
typedef struct cp__run_spec {
    cp__target_mode mode;
    const char *seeds;              /* cluster: the seeds */
    const cp__node_addr *endpoints; /* proxy: clients go round-robin over these */
    int nendpoints;
    const cp__bench_target *target;       /* password, user, TLS (cp__bench_target_options) */
    int io_timeout_ms;                    /* 0: library default */
    int retry_budget_ms;                  /* < 0: library default, 0: none (CP_RETRY_NONE) */
    int read_from;                        /* cluster: cp_options.read_from */
    const cp_cache_options *client_cache; /* cluster: cp_options.client_cache (NULL: none) */
    const cp__nodemap *map;               /* cluster: masters and slot owners; NULL in proxy mode */
    const cp_client *commands; /* cluster: an idle client whose COMMAND table the workers'
                                  clients share (cp_options.commands_from), or NULL */

    int threads, clients;
    int lanes;           /* per client: masters (cluster), 1 (proxy); see worker.c */
    size_t batch;        /* commands per batch per lane: the pipeline depth */
    size_t max_inflight; /* open loop: requests a lane may have in flight (>= batch) */

    uint64_t requests;    /* total over all clients; 0: duration */
    uint64_t duration_ns; /* used when requests == 0 */
    bool exact_cover;     /* load: each client writes its sequential share of keys once */
    int mset_keys; /* load: adjacent keys of one slot go out as one MSET of up to this many keys
                      (load writes a cluster in slot order); <= 1: one SET per key */
    unsigned ratio_set, ratio_get;
    const cp__cmdset *cmds; /* --command: the templates instead of GET/SET; NULL: GET/SET */
    uint64_t keys;
    cp__dist dist;
    uint64_t seed;
    bool verify;
    double rate; /* total ops/s, 0 = unlimited */
    uint32_t version;
    _Atomic uint32_t *acked; /* cp__bench_config.acked_versions; NULL: no version tracking */
    const cp__keyfmt *kf;
    const cp__valuefmt *vf;
    uint64_t probe_keys[CP__NODES_MAX]; /* cluster: a key index per master for the warm-up */
    const cpu_set_t *cpus; /* every worker thread starts pinned to these; NULL: inherit */
} cp__run_spec;

/* Parses a --ratio value "SET:GET" (two decimals, not both 0, each <= 1000000). Returns 0 or
 * CP_EINVAL. */
int cp__ratio_parse(const char *s, unsigned *set, unsigned *get);

/* Decides whether request number n of a client's stream is a SET: spreads ratio_set SETs evenly
 * over every ratio_set + ratio_get requests (deterministic, so a 1:10 run does exactly 1/11
 * SETs). */
bool cp__ratio_is_set(uint64_t n, unsigned ratio_set, unsigned ratio_get);

/* Lanes per client (worker.c): one per master in cluster mode, so that each connection has
 * --pipeline requests in flight; 1 in proxy mode. */
int cp__lane_count(cp__target_mode mode, int masters);

/* Clients of thread `thread` out of `clients` spread over `threads` (the first clients % threads
 * threads get one more). */
int cp__clients_of_thread(int clients, int threads, int thread);

/* Global client index -> requests that client makes (total split evenly). */
uint64_t cp__client_quota(uint64_t total, int clients, int client);

#endif /* CLUSTERPIPE_PLAN_H */
