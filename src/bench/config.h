/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The bench's shared types (private to src/bench/, seen by src/cli/ and src/scenario/ through
 * engine.h): what to benchmark (cp__bench_target), how (cp__bench_config), and what came out
 * (cp__bench_result with its per-second timeline, mismatch samples and, for --command runs, a
 * part per command). Types and constants only: the functions that fill and read them live in
 * target.c, engine.c and report.c. This header includes nothing of src/bench/ above hist.h,
 * keyspace.h and template.h, so every module may use it.
 *
 * Ownership: all of these are caller-allocated plain structs; strings they point to are
 * borrowed and must outlive the run. A cp__bench_result owns its timeline and its commands (heap),
 * released by cp__bench_result_free (engine.h). No threads here.
 */
#ifndef CLUSTERPIPE_BENCH_CONFIG_H
#define CLUSTERPIPE_BENCH_CONFIG_H

#include <signal.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/hist.h"
#include "bench/keyspace.h"
#include "bench/template.h"
#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"

/* ---- target -------------------------------------------------------------------------------- */

typedef enum cp__target_mode {
    CP__TARGET_CLUSTER = 1, /* Redis Cluster: endpoints are seeds, one connection per master */
    CP__TARGET_PROXY = 2,   /* single endpoints (twemproxy, or plain redis): round-robin */
} cp__target_mode;

#define CP__ENDPOINTS_MAX 4096

/* What to benchmark. Fill with one of the cp__bench_target_* helpers below (or by hand). */
typedef struct cp__bench_target {
    cp__target_mode mode;
    char endpoints[CP__ENDPOINTS_MAX]; /* "host:port[,host:port...]" */
    const char *password;              /* NULL: no AUTH (borrowed) */
    const char *user;                  /* ACL user, NULL: none (borrowed) */
    /* TLS (cluster targets): as cp_options.tls*, strings borrowed. From a topology they are its
     * own (cp_topo_client_options). */
    int tls, tls_insecure;
    const char *tls_ca, *tls_cert, *tls_key;
    int protocol; /* cp_options.protocol of every client (0: the library's default, RESP2) */
    /* A topology started by `up` / cp_topo_up (borrowed, not freed by the engine): its processes
     * are measured for CPU through /proc and its servers are counted by `load`'s DBSIZE check.
     * NULL: an external deployment ("topology": "external"); redis CPU is then read with
     * INFO CPU from every master, proxy CPU is reported as not measurable (JSON null). */
    const cp_topo *topo;
} cp__bench_target;

/* ---- bench --------------------------------------------------------------------------------- */

/* Progress sample, about once per second from the calling thread. */
typedef struct cp__bench_progress {
    double elapsed;      /* seconds since the measured interval started */
    uint64_t ops;        /* completed requests so far */
    uint64_t errors;     /* failed + unknown + error replies so far */
    double ops_per_sec;  /* over the last second */
    double p99_us;       /* over the last second (0 when none) */
    uint64_t mismatches; /* verification mismatches so far */
    double fraction;     /* done share in [0, 1] (requests or duration) */
} cp__bench_progress;

typedef struct cp__bench_config {
    int threads;  /* worker threads, >= 1 */
    int clients;  /* total clients (spread over threads), >= threads */
    int pipeline; /* requests in flight per connection, >= 1 */
    /* Open loop (rate > 0): requests a lane may have in flight (>= pipeline); past it its next
     * batches are shed, not sent, and counted (shed_ops). 0: CP__MAX_INFLIGHT_DEFAULT. */
    int max_inflight;
    uint64_t requests;  /* total requests; 0: run for duration_s */
    double duration_s;  /* used when requests == 0 */
    unsigned ratio_set; /* SET:GET mix, e.g. 1:10; not both 0 */
    unsigned ratio_get;
    /* --command: the templates the run sends instead of GETs and SETs, with their weights
     * (bench/template.h; borrowed, must outlive the run). NULL (the default): GET and SET by
     * ratio_set:ratio_get. */
    const cp__cmdset *commands;
    uint64_t keys;              /* key space [0, keys) */
    cp__value_sizes value_size; /* SET value bytes: one size, or a key's (keyspace.h) */
    cp__dist dist;              /* key distribution */
    bool verify;                /* check every GET reply (default true) */
    double rate;                /* total ops/s target, paced per client; 0: as fast as possible */
    uint64_t seed;              /* key generator seed; a run is reproducible from it */
    const char *key_prefix;     /* NULL: "key:" (same default as load) */
    cp__key_layout key_layout;  /* spread (default), or per-master: a cluster only */
    int io_timeout_ms;          /* per connection; 0: library default */
    int retry_budget_ms;        /* per batch, for retries after errors; < 0: library default,
                                   0: none (CP_RETRY_NONE) */
    int read_from;              /* cluster: cp_read_from of every client (0: master) */
    /* The client-side cache of every client (cp_options.client_cache, borrowed; NULL, the
     * default: none). Needs a cluster target speaking RESP3 (cp__bench_run refuses anything
     * else with CP_EINVAL). */
    const cp_cache_options *client_cache;
    const char *command_line; /* for the report (borrowed), NULL: none */
    /* NULL: no progress. Called from the calling thread only. */
    void (*progress)(void *ud, const cp__bench_progress *p);
    void *progress_ud;
    /* When non-NULL and *cancel becomes non-zero, the run stops early (results still valid). */
    const volatile sig_atomic_t *cancel;
    /* Per-key "last acknowledged SET version" (scenarios). NULL (the default): off, and `bench`
     * memory does not grow with --keys. Else `keys` entries, allocated and initialised by the
     * caller (e.g. to 1, the version `load` writes), which must outlive the run. While the run
     * goes, every SET carries a fresh version (increasing from 2 per worker thread) and, when it is
     * acknowledged (+OK), the workers store that version for its key (relaxed atomics: the caller
     * may read entries while the run goes, e.g. to take a snapshot). So that "last acknowledged"
     * is well defined, each key is then SET by one client only (key index modulo clients: a SET
     * drawn for another client's key goes to this client's nearest own key); GETs read any key,
     * and a GET whose value is older than the version acknowledged for its key before the GET was
     * sent counts as a stale read. Needs verify and keys >= clients. */
    _Atomic uint32_t *acked_versions;
    /* Placement: every worker thread starts pinned to these CPUs (borrowed; NULL, the default:
     * inherit the caller's). The result records the set the threads actually had. */
    const cpu_set_t *cpus;
    /* Called once every client has connected and warmed up, right before the measured interval
     * (from the calling thread; the workers wait meanwhile): the moment to look at the servers'
     * connections. NULL: none. */
    void (*on_ready)(void *ud);
    void *on_ready_ud;
} cp__bench_config;

/* One second of the per-second timeline (for charts). */
/* A lifecycle event of the library (clusterpipe/event.h) seen during the measured run: t
 * seconds after its start, its type (cp_event_type), the node's address ("" for none), and how
 * many of the run's clients saw it (the same event of every client within a second is one). */
#define CP__BENCH_EVENTS 64
typedef struct cp__bench_event {
    double t;
    uint64_t at_ns; /* CLOCK_MONOTONIC: what the workers record, t computed from it */
    int type;
    char addr[64];
    int clients;
} cp__bench_event;

typedef struct cp__bench_second {
    double t;            /* end of the second, seconds since the start of the measured interval */
    uint64_t ops;        /* requests completed in that second */
    uint64_t errors;     /* failed + unknown + error replies in that second */
    double p50_us;       /* of the requests completed in that second; 0 when none */
    double p99_us;       /* the same */
    double p999_us;      /* the same, p99.9 */
    uint64_t gets;       /* of ops: GETs answered */
    uint64_t misses;     /* of gets: nil replies */
    uint64_t stale;      /* of gets: older than the last acknowledged SET (acked_versions only) */
    uint64_t moved, ask; /* redirects the clients followed in that second */
} cp__bench_second;

/* First few verification mismatches, for the CLI to print. */
#define CP__BENCH_MISMATCH_SAMPLES 8
typedef struct cp__bench_mismatch {
    char key[CP__KEY_MAX_LEN + 1];
    unsigned slot;                  /* cp_keyslot(key) */
    char node[CP_NODE_HOSTLEN + 8]; /* "host:port" owning the slot (cluster), the proxy (proxy) */
    char what[32];                  /* cp__verify_result_str(...) or "not a string" */
    char command[CP__COMMAND_NAME_MAX + 1]; /* --command runs: its name ("HGET"); else "" */
} cp__bench_mismatch;

/* One --command's part of a run. */
typedef struct cp__bench_cmd_result {
    uint64_t ops;                       /* ended CP_DONE with a non-error reply */
    uint64_t failed_ops, error_replies; /* as the run's */
    uint64_t unknown_ops;
    uint64_t reads, misses; /* read templates: replies; of them nil or empty */
    uint64_t verify_checked, verify_mismatches;
    cp__hist latency; /* per request */
} cp__bench_cmd_result;

/* The client-side cache's part of a run (cp__bench_config.client_cache set). */
typedef struct cp__bench_cache_result {
    bool on;
    /* The library's cp_cache_stats summed over every client: its counters over the measured
     * interval (the warm-up's reads left out), entries and bytes as the run ended. */
    cp_cache_stats stats;
    /* Latencies of the GETs (--command: of the reads) the cache answered and of those sent to
     * a server (cp_reply_cached), per request; together the run's reads. */
    cp__hist hit_latency, miss_latency;
} cp__bench_cache_result;

typedef struct cp__bench_result {
    /* Placement as it happened: the union of the CPUs the worker threads were allowed, read
     * from /proc/self/task while they ran ("" when it could not be read). */
    char client_threads_cpus[256];
    /* counts */
    uint64_t ops;           /* requests that ended CP_DONE with a non-error reply */
    uint64_t gets, sets;    /* of which GET, SET (--command runs: reads, and no SETs) */
    uint64_t misses;        /* GET replies nil (not a mismatch); --command: reads nil or empty */
    uint64_t failed_ops;    /* not executed, or answered with an error reply */
    uint64_t error_replies; /* of failed_ops: error replies */
    uint64_t shed_ops;      /* of failed_ops: open loop, never sent (a lane at max_inflight) */
    uint64_t unknown_ops;   /* written, connection broke before the answer */
    uint64_t verify_checked, verify_mismatches;
    uint64_t stale_reads;  /* GETs older than the last acknowledged SET (acked_versions only) */
    uint64_t stale_cached; /* of those: answered by the client-side cache, whose invalidation of
                              that SET had not arrived yet (a server's answer never may be) */
    cp__bench_mismatch mismatch[CP__BENCH_MISMATCH_SAMPLES];
    size_t nmismatch;      /* samples filled */
    char first_error[256]; /* first failure seen (empty when none) */

    /* time and latency */
    double seconds; /* measured interval */
    double ops_per_sec;
    uint64_t start_ns; /* CLOCK_MONOTONIC when the measured interval began (to place events) */
    /* When the first and the last failed or unknown request ended, seconds since start_ns
     * (batch completion time: exact to a batch); both -1 when there was none. */
    double first_failure_s, last_failure_s;
    cp__hist latency; /* per request, merged over threads */

    /* library counters, summed over clients */
    cp_stats stats;

    /* CPU seconds over the measured interval; has_* false = not measurable (JSON null) */
    double cpu_redis, cpu_proxy, cpu_client;
    bool has_cpu_redis, has_cpu_proxy, has_cpu_client;
    /* The part of cpu_redis spent by the topology's replicas (JSON cpu_seconds.replicas);
     * has_cpu_replicas false (null) when it has none, it is external, or one was unreadable. */
    double cpu_replicas;
    bool has_cpu_replicas;
    /* The wire's CPU (a topology started with --rtt), apart from every component above and from
     * their total; has_cpu_wire false (null) without a wire. */
    double cpu_wire;
    bool has_cpu_wire;
#define CP__WIRE_BUSY_CORES                                                                        \
    0.5 /* a wire busier than this gets a warning: its numbers are partly                          \
           the wire's */

    /* timeline: ntimeline entries, heap-owned (cp__bench_result_free) */
    cp__bench_second *timeline;
    cp__bench_event events[CP__BENCH_EVENTS]; /* in time order */
    size_t nevents;
    uint64_t events_lost; /* events past CP__BENCH_EVENTS (a worker's or the run's) */
    size_t ntimeline;

    /* --command runs: one entry per template, in --command order, heap-owned
     * (cp__bench_result_free); NULL and 0 otherwise. Their sums are the run's counts above. */
    cp__bench_cmd_result *commands;
    size_t ncommands;

    /* client-side cache: on, its counters and the split of the reads' latencies */
    cp__bench_cache_result cache;

    /* environment, for reproducibility */
    int masters;            /* cluster masters seen (cluster mode), proxies (proxy mode) */
    char redis_version[64]; /* "" when unknown */
    char nutcracker_version[64];
    int cores;
    char cpu_model[128];
} cp__bench_result;

#endif /* CLUSTERPIPE_BENCH_CONFIG_H */
