/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The bench engine (private to src/bench/, used by src/cli/ `load`, `bench` and `compare`):
 * T worker threads, each running its own epoll loop over its share of C clients; every client is
 * one cp_client (cluster: seeds; proxy: one endpoint, clients spread round-robin over the
 * endpoints) and one cp_pipeline driven with the library's event-driven execution API, so all
 * routing, MOVED/ASK and retries come from libclusterpipe. Per-request latency (cp_timing) goes
 * into a per-thread cp__hist merged after join; every GET reply is verified against its key; CPU
 * of every component (redis, proxy, client) is taken over the measured interval only.
 *
 * Ownership: cp__bench_target, cp__bench_config, cp__load_config are caller-allocated and only
 * read by the engine (strings they point to must outlive the call). cp__bench_result and
 * cp__load_result are caller-allocated, filled by the run functions, and own heap memory (the
 * timeline) that cp__bench_result_free releases. cp__bench_json returns a new jansson reference
 * the caller json_decref()s.
 *
 * Threads: cp__bench_run / cp__load_run block the calling thread until the run ends; they start
 * and join their worker threads themselves. Progress callbacks are called from the calling
 * thread only (about once per second, and at the end), never from a worker. The engine never
 * prints and never exits: errors come back as a negative CP_E* code plus a message in err.
 */
#ifndef CLUSTERPIPE_ENGINE_H
#define CLUSTERPIPE_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/hist.h"
#include "bench/keyspace.h"
#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"

#define CP__BENCH_SCHEMA "clusterpipe.bench/1"

/* ---- target ------------------------------------------------------------------------------------
 */

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
    /* A topology started by `up` / cp_topo_up (borrowed, not freed by the engine): its processes
     * are measured for CPU through /proc and its servers are counted by `load`'s DBSIZE check.
     * NULL: an external deployment ("topology": "external"); redis CPU is then read with
     * INFO CPU from every master, proxy CPU is reported as not measurable (JSON null). */
    const cp_topo *topo;
} cp__bench_target;

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
    int threads;        /* worker threads, >= 1 */
    int clients;        /* total clients (spread over threads), >= threads */
    int pipeline;       /* requests in flight per connection, >= 1 */
    uint64_t requests;  /* total requests; 0: run for duration_s */
    double duration_s;  /* used when requests == 0 */
    unsigned ratio_set; /* SET:GET mix, e.g. 1:10; not both 0 */
    unsigned ratio_get;
    uint64_t keys;             /* key space [0, keys) */
    size_t value_size;         /* SET value bytes */
    cp__dist dist;             /* key distribution */
    bool verify;               /* check every GET reply (default true) */
    double rate;               /* total ops/s target, paced per client; 0: as fast as possible */
    uint64_t seed;             /* key generator seed; a run is reproducible from it */
    const char *key_prefix;    /* NULL: "key:" (same default as load) */
    cp__key_layout key_layout; /* spread (default), or per-master: a cluster only */
    int io_timeout_ms;         /* per connection; 0: library default */
    int retry_budget_ms;       /* per batch, for retries after errors; < 0: library default */
    const char *command_line;  /* for the report (borrowed), NULL: none */
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
} cp__bench_config;

/* Defaults: 1 thread, 50 clients, pipeline 1, 100000 requests, ratio 0:1, 100000 keys, value
 * 64 bytes, uniform, verify on, no rate limit, seed 1. */
void cp__bench_config_init(cp__bench_config *cfg);

/* Checks the config for values the engine cannot run (threads < 1, clients < threads, pipeline
 * < 1, ratio 0:0, keys 0, value too small to verify, ...). Returns 0 or CP_EINVAL with the reason
 * (naming the CLI flag, e.g. "--clients must be >= --threads") in err. */
int cp__bench_config_check(const cp__bench_config *cfg, char *err, size_t errlen);

/* One second of the per-second timeline (for charts). */
typedef struct cp__bench_second {
    double t;            /* end of the second, seconds since the start of the measured interval */
    uint64_t ops;        /* requests completed in that second */
    uint64_t errors;     /* failed + unknown + error replies in that second */
    double p99_us;       /* of the requests completed in that second; 0 when none */
    uint64_t gets;       /* of ops: GETs answered */
    uint64_t misses;     /* of gets: nil replies */
    uint64_t stale;      /* of gets: older than the last acknowledged SET (acked_versions only) */
    uint64_t moved, ask; /* redirects the clients followed in that second */
} cp__bench_second;

/* First few verification mismatches, for the CLI to print. */
#define CP__BENCH_MISMATCH_SAMPLES 8
typedef struct cp__bench_mismatch {
    char key[CP__KEY_MAX_LEN + 1];
    unsigned slot; /* cp_keyslot(key) */
    char node[80]; /* "host:port" that owns the slot (cluster), the proxy endpoint (proxy) */
    char what[32]; /* cp__verify_result_str(...) or "not a string" */
} cp__bench_mismatch;

typedef struct cp__bench_result {
    /* counts */
    uint64_t ops;           /* requests that ended CP_DONE with a non-error reply */
    uint64_t gets, sets;    /* of which GET, SET */
    uint64_t misses;        /* GET replies nil (not a mismatch) */
    uint64_t failed_ops;    /* not executed, or answered with an error reply */
    uint64_t error_replies; /* of failed_ops: error replies */
    uint64_t unknown_ops;   /* written, connection broke before the answer */
    uint64_t verify_checked, verify_mismatches;
    uint64_t stale_reads; /* GETs older than the last acknowledged SET (acked_versions only) */
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

    /* timeline: ntimeline entries, heap-owned (cp__bench_result_free) */
    cp__bench_second *timeline;
    size_t ntimeline;

    /* environment, for reproducibility */
    int masters;            /* cluster masters seen (cluster mode), proxies (proxy mode) */
    char redis_version[64]; /* "" when unknown */
    char nutcracker_version[64];
    int cores;
    char cpu_model[128];
} cp__bench_result;

/* Runs a benchmark. Blocks for the duration of the run. Connect failures before the measured
 * interval are errors (CP_ECONNECT etc., message in err, out is still valid to free); failures
 * during the run are counted in out and the run goes on with what still answers. Returns 0 when
 * the run completed (which does not mean it had no errors or mismatches: the caller looks at
 * out->failed_ops, unknown_ops, verify_mismatches), or a negative CP_E* code. out is always
 * initialised on return and must be released with cp__bench_result_free. */
int cp__bench_run(const cp__bench_target *t, const cp__bench_config *cfg, cp__bench_result *out,
                  char *err, size_t errlen);

/* Frees what the result owns (the timeline); safe on a zeroed or already freed result. */
void cp__bench_result_free(cp__bench_result *r);

/* 1 when the run should be reported as failed (exit code 1): failed or unknown ops, or
 * verification mismatches. */
int cp__bench_result_failed(const cp__bench_result *r);

/* The "clusterpipe.bench/1" object (design.md): schema, topology, workload, ops, seconds,
 * ops_per_sec, latency_us, cpu_seconds, cpu_us_per_op, redirects, retries, failed_ops,
 * unknown_ops, verify, misses, timeline, latency_curve, versions, machine, command_line. Returns a
 * new reference (caller json_decref()s) or NULL when out of memory. */
json_t *cp__bench_json(const cp__bench_target *t, const cp__bench_config *cfg,
                       const cp__bench_result *r);

/* Writes one header line and one row of the main numbers (and, after an empty line, the
 * timeline) as CSV to path atomically. Returns 0 or CP_EIO with err set. */
int cp__bench_write_csv(const char *path, const cp__bench_target *t, const cp__bench_config *cfg,
                        const cp__bench_result *r, char *err, size_t errlen);

/* ---- load ---------------------------------------------------------------------------------- */

typedef struct cp__load_progress {
    uint64_t done;   /* keys written (CP_DONE, non-error) so far */
    uint64_t total;  /* keys to write */
    uint64_t failed; /* keys not written so far */
    double elapsed;  /* seconds */
    double rate;     /* keys/s over the whole run so far */
} cp__load_progress;

typedef struct cp__load_config {
    uint64_t keys;             /* keys 0 .. keys-1, each SET once */
    size_t value_size;         /* verifiable values (>= cp__value_min_size) */
    int pipeline;              /* keys in flight per connection; 0: by target (below) */
    int mset;                  /* keys per MSET (same slot, adjacent in slot order); 0: by target
                                  (below); 1: one SET per key */
    int threads;               /* worker threads, each with its own event loop */
    int clients;               /* total clients (each connected to every master); 0: 4 per thread */
    const char *key_prefix;    /* NULL: "key:" */
    cp__key_layout key_layout; /* spread (default), or per-master: a cluster only */
    uint32_t version;          /* version embedded in values; default 1 */
    bool check_dbsize;         /* default true: end by checking the servers hold exactly keys */
    void (*progress)(void *ud, const cp__load_progress *p); /* calling thread, ~every 0.25 s */
    void *progress_ud;
    const volatile sig_atomic_t *cancel;
} cp__load_config;

/* load's keys in flight per connection unless set (pipeline 0). A cluster takes a bulk load
 * fastest with deep pipelines (fewer sends and server wake-ups per key); nutcracker slows down
 * past 64 (measured through one proxy: 190k keys/s at 64, 142k at 256, 111k at 512). */
#define CP__LOAD_PIPELINE_CLUSTER 512
#define CP__LOAD_PIPELINE_PROXY 64
/* Keys per MSET unless set (mset 0). A cluster is written in slot order, so neighbouring keys
 * share a slot and one MSET carries them (the server parses, routes, times and answers one
 * command per group); through a proxy one SET per key (nutcracker splits an MSET by server). */
#define CP__LOAD_MSET_CLUSTER 16
#define CP__LOAD_MSET_PROXY 1
/* An MSET's values may not add up to more than this (mset x value size). */
#define CP__LOAD_MSET_MAX_BYTES (64u << 20)

/* 0 when MSETs of `mset` keys of value_size bytes fit CP__LOAD_MSET_MAX_BYTES (or mset <= 1);
 * else CP_EINVAL with the reason, naming the flags, in err. */
int cp__load_mset_check(int mset, size_t value_size, char *err, size_t errlen);

/* Defaults: 100000 keys, value 64 bytes, pipeline and mset 0 (by target, above), 2 threads, 4
 * clients per thread, version 1, DBSIZE check on. */
void cp__load_config_init(cp__load_config *cfg);

typedef struct cp__load_result {
    uint64_t written; /* SETs that ended CP_DONE with +OK */
    uint64_t failed;  /* not executed or error reply */
    uint64_t unknown; /* outcome unknown */
    double seconds;
    double keys_per_sec;
    int pipeline; /* keys in flight per connection it used */
    int mset;     /* keys per MSET at most it used (1: SET) */
    /* DBSIZE check: dbsize_checked = 1 when the servers were counted; dbsize = their sum.
     * When it could not be done (external twemproxy: shards unknown), note says why. */
    int dbsize_checked;
    long long dbsize;
    char note[256];
} cp__load_result;

/* Loads keys [0, cfg->keys) with verifiable values, pipelined over every node, then (when asked)
 * checks that DBSIZE summed over the servers equals cfg->keys: the cluster's masters, or for a
 * twemproxy topology the shard servers from cfg's topology; skipped with a note for an external
 * proxy. Blocks. Returns 0 when every key was written and the count matched (or was skipped),
 * CP_EPARTIAL when some SETs failed or the count differs (details in out and err), or another
 * negative CP_E* code when the target could not be used at all. */
int cp__load_run(const cp__bench_target *t, const cp__load_config *cfg, cp__load_result *out,
                 char *err, size_t errlen);

/* ---- pure helpers (unit-tested) ------------------------------------------------------------ */

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

#endif /* CLUSTERPIPE_ENGINE_H */
