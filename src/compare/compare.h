/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The compare experiment (private to src/compare/; used by `clusterpipe compare`): twemproxy or
 * Redis Cluster, measured on this machine. Locally it brings up twemproxy (4 redis-server + 4
 * nutcracker), loads the dataset, runs GET and pipelined GET (`repeat` times each), tears it down,
 * then does the same with a 4-master cluster (and, with replica_reads, with that cluster plus a
 * replica per master, read on the replicas), so the setups never share the CPU; with
 * external endpoints (cluster_eps / proxy_eps) it starts nothing and runs against them. The
 * result is one "clusterpipe.compare/1" document: settings, environment, the topologies and
 * their PIDs, the commands that reproduce each step, the loads and one object per run (the bench
 * engine's, or an "error" when the run could not happen).
 *
 * Processes: every server is started ephemeral (it dies with the calling thread), tracked by PID
 * by the orchestration layer and stopped by PID after its setup's runs, on failure and when
 * *cancel becomes non-zero; each spawn is also handed to the on_spawn hook, so that the caller
 * can check afterwards that none is left running.
 *
 * Ownership: cp__compare_run hands the caller a new jansson reference (json_decref); options
 * strings are borrowed for the call. Threads: cp__compare_run blocks for the whole experiment and
 * must be called from the thread that will live longest (the main thread); every hook is called
 * from that thread. Never prints: progress and problems go to the log hooks.
 */
#ifndef CLUSTERPIPE_COMPARE_H
#define CLUSTERPIPE_COMPARE_H

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
    /* External setups (borrowed); both NULL: start the local ones. */
    const char *cluster_eps, *proxy_eps, *password;
    /* Where each component runs (borrowed, resolved by cp__placement_resolve); NULL: nowhere in
     * particular. The servers' sets need local setups. */
    const cp__placement *placement;
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

/* Runs the experiment. Returns 0 when every run succeeded and *doc holds the document
 * ("failed": false); CP_EPARTIAL when *doc is complete but something failed (a run, a setup that
 * did not start, cancelled; "failed": true, err names the first problem);
 * CP_EINVAL (options refused, err says why), CP_EIO (the connections asked for need more file
 * descriptors than the hard limit allows: err says how many) or CP_ENOMEM with *doc NULL. The
 * soft RLIMIT_NOFILE is raised to what the largest point needs. Blocks throughout. */
int cp__compare_run(const cp__compare_opts *o, json_t **doc, char *err, size_t errlen);

#endif /* CLUSTERPIPE_COMPARE_H */
