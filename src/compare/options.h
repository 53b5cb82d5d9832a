/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The compare experiment's options (options.c): presets, defaults and checks, and what they
 * make: the points of the experiment (the options with a swept value applied) and each
 * point's cases with their engine configurations. compare.h includes it (its users set the
 * options); the experiment's own modules use the rest. Pure functions over caller-owned
 * structs; any thread.
 */
#ifndef CLUSTERPIPE_COMPARE_OPTIONS_H
#define CLUSTERPIPE_COMPARE_OPTIONS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/engine.h"
#include "bench/load.h"
#include "compare/placement.h"
#include "compare/sweep.h"
#include "util/log.h"

#define CP__COMPARE_SHARDS 4  /* the published experiment: 4 redis servers / 4 cluster masters */
#define CP__COMPARE_PROXIES 4 /* and 4 nutcracker processes */
#define CP__COMPARE_SHARDS_MAX 64 /* a shards sweep: ports and processes stay reasonable */
#define CP__COMPARE_REPEAT_MAX 100
/* A dataset larger than this is probed first: this many keys loaded, their memory per key
 * projected to the whole, the setup refused when it would take more than CP__COMPARE_FIT_SHARE
 * of the machine's available memory. */
#define CP__COMPARE_FIT_PROBE_KEYS 100000
#define CP__COMPARE_FIT_SHARE 0.8
/* Keys read back (and checked) after every load: the first ones, at most this many. */
#define CP__COMPARE_READBACK_SAMPLE 100000
/* --replica-reads: the longest wait for the replicas to acknowledge the whole load, seconds. */
#define CP__COMPARE_SYNC_TIMEOUT_S 60

/* The setups an experiment may run, in the order they run. cluster-cached: the cluster with the
 * client-side cache on in every case's clients (RESP3, CLIENT TRACKING). */
#define CP__CMP_SETUP_TWEMPROXY 1u
#define CP__CMP_SETUP_CLUSTER 2u
#define CP__CMP_SETUP_REPLICAS 4u
#define CP__CMP_SETUP_CACHED 8u
#define CP__CMP_SETUP_NAMES "twemproxy, cluster, cluster-replicas, cluster-cached"

/* A --setups list ("cluster,cluster-cached") into bits. 0, or CP_EINVAL (an unknown or repeated
 * name, an empty list) with the reason in err. */
int cp__cmp_setups_parse(const char *list, unsigned *out, char *err, size_t errlen);

/* A named scale of the experiment. */
typedef struct cp__compare_preset {
    const char *name; /* "quick", "full", "large" */
    int threads, clients, pipeline;
    uint64_t requests, keys;
    size_t value_size;
    int repeat;
} cp__compare_preset;

/* The preset called name, NULL when there is none. Static data. */
const cp__compare_preset *cp__compare_preset_find(const char *name);

typedef struct cp__compare_opts {
    const char *preset; /* its name, for the document */
    int threads, clients, pipeline, repeat;
    uint64_t requests, keys;
    cp__value_sizes value_size; /* --value-size: one size, or a key's (bench/keyspace.h) */
    cp__dist dist;
    bool verify;
    /* --command: the templates every case runs instead of GETs (borrowed); NULL: GETs. The
     * call types are then named after them ("HGET", "pipelined HGET"; several: "HSET/HGET"). */
    const cp__cmdset *commands;
    /* --replica-reads: a third local setup after the cluster, "cluster-replicas": the same
     * cluster with one replica per master, its dataset on the replicas too before it is read
     * back, every case reading from the replicas (bench read_from CP_READ_REPLICA). Local
     * setups only (cp__compare_opts_check refuses it with --cluster/--proxy). */
    bool replica_reads;
    /* --setups: the setups that run (CP__CMP_SETUP_* bits, in the order of those bits); 0:
     * twemproxy and cluster, and cluster-replicas with replica_reads (cp__cmp_setups). */
    unsigned setups;
    /* --ratio: the SET:GET mix of every case, SET's first (adjacent: the shared --ratio flag
     * fills both); 0:1 (the default): GETs only, the published experiment. */
    unsigned ratio_set, ratio_get;
    /* --protocol: the RESP version of the cluster setups' clients (0 or 2: RESP2; 3: RESP3, so
     * that cluster and cluster-cached differ by the cache alone). cluster-cached always speaks
     * 3, twemproxy always 2 (nutcracker has no HELLO). */
    int protocol;
    /* External setups (borrowed); both NULL: start the local ones. */
    const char *cluster_eps, *proxy_eps, *password;
    /* Where each component runs (borrowed, resolved by cp__placement_resolve); NULL: nowhere in
     * particular. The servers' sets need local setups. */
    const cp__placement *placement;
    /* --rtt: the round trip (and its jitter) of every link that crosses hosts, through the wire
     * the local setups start (orch.h cp_up_opts.rtt_ns); 0: none, loopback as it is. The proxies'
     * hosts follow placement's side (servers unless --proxy-placement clients). clusterpipe: the
     * binary that runs the wire (NULL: $PATH). Local setups only. */
    uint64_t rtt_ns, jitter_ns;
    const char *clusterpipe;
    /* One parameter swept over values (borrowed); NULL or CP__SWEEP_NONE: the published pair
     * of cases (GET, pipelined GET) at the options' settings. Under a sweep every point runs
     * one case, GETs at the point's pipeline depth, on both architectures. */
    const cp__sweep *sweep;
    /* Memory the fit check may count on, bytes; 0: /proc/meminfo's MemAvailable (a test sets
     * it to see a dataset refused without needing one that big). */
    long long mem_available;
    const char *command_line; /* for the document (borrowed) */
    const char *version;      /* clusterpipe's version, for the document (borrowed) */
    /* A directory (existing, borrowed) that gets every run's latency distribution as a .hgrm
     * file (bench --hdr-file's), named in the run's "hgrm"; NULL: none. */
    const char *hgrm_dir;
    /* Progress lines (no newline); NULL: none. */
    cp__log_fn log;
    /* A setup or run that failed, a process left running: lines worth showing even when log is
     * NULL. NULL: none (the document records every failure anyway). */
    cp__log_fn warn;
    /* The engine's live progress of each bench run and load; NULL: none. */
    void (*bench_progress)(void *ud, const cp__bench_progress *p);
    void (*load_progress)(void *ud, const cp__load_progress *p);
    /* Every process spawned (PID + start time); NULL: none. */
    void (*on_spawn)(void *ud, const cp_proc *p);
    void *ud;                            /* every hook's first argument */
    const volatile sig_atomic_t *cancel; /* non-zero: stop the runs, stop the servers */
} cp__compare_opts;

/* The preset's scale (p NULL: "quick"), clients one per thread, uniform keys, verify on, local
 * setups, no hooks. */
void cp__compare_opts_init(cp__compare_opts *o, const cp__compare_preset *p);

/* What the bench engine or the endpoint parser would refuse, found before anything starts.
 * Returns 0 or CP_EINVAL with the reason, naming the CLI flag, in err. */
int cp__compare_opts_check(const cp__compare_opts *o, char *err, size_t errlen);

/* ---- points: one measured workload each (the experiment's modules) ---- */

/* The settings of one point of the experiment: the options with the swept parameter applied.
 * Without a sweep there is one point, the options themselves. */
typedef struct cp__cmp_point {
    int shards, threads, clients;
    int pipeline; /* of the pipelined case (a sweep's only case) */
    cp__value_sizes value_size;
    char sizes[256]; /* value_size as --value-size spells it */
    uint64_t rtt_ns; /* the round trip of the links between hosts: --rtt, or the swept one */
    uint64_t value;  /* the swept value; 0 without a sweep */
    char label[48];  /* "pipeline=5", "rtt=100us" (run names and call type); "" without one */
} cp__cmp_point;

/* A case of a point: what its runs are called and their pipeline depth. */
typedef struct cp__cmp_case {
    char call[48]; /* as a point's label (the report keeps 31 bytes of it) */
    int pipeline;
} cp__cmp_case;

/* The client's CPU set (its load and bench threads), NULL when it is not pinned. */
const cpu_set_t *cp__cmp_client_cpus(const cp__compare_opts *o);

/* The JSON's value_size: the one size, or the mean of several (value_sizes spells them). */
json_int_t cp__cmp_size_number(const cp__value_sizes *z);

/* The setups the options run (CP__CMP_SETUP_* bits): o->setups, or its default. */
unsigned cp__cmp_setups(const cp__compare_opts *o);

/* 1 when the options sweep a parameter. */
int cp__cmp_sweeping(const cp__compare_opts *o);

/* 1 when every point needs setups of its own: the sweep changes the servers (shards) or the
 * links between them (rtt), so one setup cannot serve two points. */
int cp__cmp_setup_per_point(const cp__compare_opts *o);

/* The experiment's points: the sweep's values, or 1. */
int cp__cmp_npoints(const cp__compare_opts *o);

/* Point k (0-based, < cp__cmp_npoints) into pt. */
void cp__cmp_point_at(const cp__compare_opts *o, int k, cp__cmp_point *pt);

/* The cases of a point: GET and pipelined GET (the published pair), or under a sweep the one
 * case at the point's pipeline depth, named after the point. Returns how many. */
int cp__cmp_cases_of(const cp__compare_opts *o, const cp__cmp_point *pt, cp__cmp_case out[2]);

/* The engine configuration of one case: GETs only, the same key sequence for both setups in
 * repeat `seed`. */
void cp__cmp_bench_config(const cp__compare_opts *o, const cp__cmp_point *pt, int pipeline,
                          uint64_t seed, cp__bench_config *cfg);

/* File descriptors the client needs at the largest point. */
uint64_t cp__cmp_fds_needed(const cp__compare_opts *o);

#endif /* CLUSTERPIPE_COMPARE_OPTIONS_H */
