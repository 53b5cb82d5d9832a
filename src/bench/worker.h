/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Worker threads of the bench engine (private to src/bench/): one epoll loop per thread driving
 * its share of the clients through the library's event-driven execution API. engine.c (bench)
 * and load.c (load) describe a run in a cp__run_spec, start the workers with cp__workers_run and
 * read their results.
 *
 * Threads and sharing: the spec and the key/value formats are read-only and shared by every
 * worker. Each cp__worker is written by its own thread only, except for the atomics, which are
 * the whole cross-thread interface while the run is going: live counters and the per-second ring
 * (worker publishes `closed`, the main thread publishes `consumed`). Non-atomic results are read
 * by the main thread only after pthread_join.
 *
 * Ownership: cp__workers_run allocates the worker array and the clients; cp__workers_free
 * releases them after the caller has read the results.
 */
#ifndef CLUSTERPIPE_WORKER_H
#define CLUSTERPIPE_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/cpu.h"
#include "bench/engine.h"
#include "bench/hist.h"
#include "bench/keyspace.h"
#include "bench/nodes.h"

/* What every worker runs; filled by engine.c or load.c, read-only during the run. */
typedef struct cp__run_spec {
    cp__target_mode mode;
    const char *seeds;              /* cluster: the seeds */
    const cp__node_addr *endpoints; /* proxy: clients go round-robin over these */
    int nendpoints;
    const cp__bench_target *target; /* password, user, TLS (cp__bench_target_options) */
    int io_timeout_ms;              /* 0: library default */
    int retry_budget_ms;            /* < 0: library default */
    const cp__nodemap *map;         /* cluster: masters and slot owners; NULL in proxy mode */

    int threads, clients;
    int lanes;    /* per client: masters (cluster), 1 (proxy); see worker.c */
    size_t batch; /* commands per batch per lane: the pipeline depth */

    uint64_t requests;    /* total over all clients; 0: duration */
    uint64_t duration_ns; /* used when requests == 0 */
    bool exact_cover;     /* load: each client writes its sequential share of keys once */
    int mset_keys; /* load: adjacent keys of one slot go out as one MSET of up to this many keys
                      (load writes a cluster in slot order); <= 1: one SET per key */
    unsigned ratio_set, ratio_get;
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
} cp__run_spec;

#define CP__RING 4

/* One second of one worker: latencies of the requests completed in it (recorded once; the main
 * thread merges the seconds into the run's total), and counts. */
typedef struct cp__sec_slot {
    cp__hist hist;
    uint64_t ops, errors, mismatches;
    uint64_t gets, misses, stale, moved, ask;
} cp__sec_slot;

typedef struct cp__client_state cp__client_state;
typedef struct cp__group cp__group;

typedef struct cp__worker {
    const cp__run_spec *spec;
    struct cp__run_sync *sync;
    int index;
    int first_client, nclients; /* global client indexes [first, first + n) */
    pthread_t tid;
    bool started;

    /* live, for progress (relaxed) */
    _Atomic uint64_t live_ops, live_errors, live_mismatches;
    /* per-second ring: seconds [0, closed) are final (worker, release); [0, consumed) have been
     * merged by the main thread (release) and their slots may be reused */
    _Atomic uint64_t closed, consumed;
    _Atomic int done;
    cp__sec_slot ring[CP__RING];

    /* results, read after join */
    int setup_err; /* CP_E* when connecting / warming up failed */
    char setup_errstr[256];
    uint64_t ops, gets, sets, misses, failed, error_replies, unknown;
    uint64_t checked, mismatches, stale;
    cp__bench_mismatch mismatch[CP__BENCH_MISMATCH_SAMPLES];
    size_t nmismatch;
    char first_error[256];
    cp_stats stats;
    uint64_t finish_ns;
    uint64_t first_fail_ns, last_fail_ns; /* batch end times of failures; 0: none */
    uint64_t redirects_seen[2];           /* moved, ask summed over clients at the last second */
    uint32_t next_version;                /* acked tracking: next SET version of this worker */

    cp__group *groups;    /* nclients entries: each client's key stream */
    cp__client_state *cs; /* ncs = nclients x lanes entries: the lanes, client by client */
    int ncs;
} cp__worker;

/* Shared start/stop state. A mutex + condition gate rather than barriers, so a thread that
 * could not be created does not leave the others waiting forever. */
typedef struct cp__run_sync {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started;       /* threads created (main, before any wait) */
    int arrived;       /* workers connected and warmed up (mu) */
    int go;            /* main: start_ns set, or abort (mu) */
    int abort;         /* main: workers must quit without running (mu) */
    uint64_t start_ns; /* main: start of the measured interval (mu) */
    _Atomic int stop;  /* main asks workers to stop starting batches */
} cp__run_sync;

/* What the main thread does while a run goes (all called from the thread of cp__run_execute). */
typedef struct cp__run_hooks {
    /* After every worker has connected and warmed up, right before the measured interval starts
     * (CPU "before" samples go here). NULL: none. */
    void (*before_go)(void *ud);
    /* Each second that every worker has closed, in order: the merged latencies of the requests
     * completed in it, and its counts (summed over workers). NULL: none. */
    void (*on_second)(void *ud, uint64_t sec, const cp__sec_slot *sum);
    /* About every tick_ns while running: live totals so far. NULL: none. */
    void (*tick)(void *ud, uint64_t elapsed_ns, uint64_t ops, uint64_t errors, uint64_t mismatches);
    uint64_t tick_ns;
    const volatile sig_atomic_t *cancel; /* non-zero: workers stop starting batches */
    void *ud;
} cp__run_hooks;

/* Runs the workers from start to end on the calling thread's behalf: spawns spec->threads
 * threads that connect and warm up their clients, calls before_go, starts the measured interval
 * (*start_ns), calls on_second / tick while they run, joins them and merges the last seconds.
 * *out receives the joined workers (results readable; free with cp__workers_free) even on error.
 * Returns 0, or the first setup error (connect, warm-up: negative CP_E* code, message in err), in
 * which case the interval never started. Blocks for the whole run. */
int cp__run_execute(const cp__run_spec *spec, const cp__run_hooks *hooks, cp__worker **out,
                    uint64_t *start_ns, char *err, size_t errlen);
void cp__workers_free(cp__worker *w, int n);

/* ---- target preparation (shared by bench and load) ---------------------------------------- */

/* A server process the engine measures (CPU) or counts (DBSIZE). */
typedef struct cp__server {
    cp__node_addr addr;
    pid_t pid;         /* > 0: local process of a topology (CPU from /proc); 0: remote */
    cp__cpu_comp comp; /* CP__CPU_REDIS or CP__CPU_PROXY */
    bool holds_keys;   /* counted by load's DBSIZE check (masters, twemproxy shards) */
    int stats_port;    /* nutcracker: stats port, else 0 */
} cp__server;

/* What a run needs to know about its target, resolved once on the calling thread. Owns its
 * allocations (cp__target_ctx_free). */
typedef struct cp__target_ctx {
    cp__nodemap *map; /* cluster: heap; NULL in proxy mode */
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
                       uint64_t keys, size_t value_size, bool verifiable, cp__run_spec *spec,
                       cp__target_ctx *ctx, char *err, size_t errlen);
void cp__target_ctx_free(cp__target_ctx *ctx);

/* Global client index -> requests that client makes (total split evenly). */
uint64_t cp__client_quota(uint64_t total, int clients, int client);

#endif /* CLUSTERPIPE_WORKER_H */
