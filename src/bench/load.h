/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `load` (private to src/bench/, used by src/cli/ `load` and `compare` and by src/scenario/):
 * writes keys [0, N) once each with verifiable values through the bench's worker threads, then
 * checks the servers' key count. This header declares load.c's functions and its own types.
 *
 * Ownership: cp__load_config and cp__load_result are caller-allocated; the config's strings are
 * borrowed. Threads: cp__load_run blocks the calling thread and starts and joins its workers;
 * the progress callback runs on the calling thread only. Never prints, never exits.
 */
#ifndef CLUSTERPIPE_LOAD_H
#define CLUSTERPIPE_LOAD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/config.h"
#include "bench/keyspace.h"

typedef struct cp__load_progress {
    uint64_t done;   /* keys written (CP_DONE, non-error) so far */
    uint64_t total;  /* keys to write */
    uint64_t failed; /* keys not written so far */
    double elapsed;  /* seconds */
    double rate;     /* keys/s over the whole run so far */
} cp__load_progress;

typedef struct cp__load_config {
    uint64_t keys;              /* keys 0 .. keys-1, each SET once */
    cp__value_sizes value_size; /* verifiable values (each size >= cp__value_min_size) */
    int pipeline;               /* keys in flight per connection; 0: by target (below) */
    int mset;                   /* keys per MSET (same slot, adjacent in slot order); 0: by target
                                   (below); 1: one SET per key */
    int threads;                /* worker threads, each with its own event loop */
    int clients;               /* total clients (each connected to every master); 0: 4 per thread */
    const char *key_prefix;    /* NULL: "key:" */
    cp__key_layout key_layout; /* spread (default), or per-master: a cluster only */
    uint32_t version;          /* version embedded in values; default 1 */
    bool check_dbsize;         /* default true: end by checking the servers hold exactly keys */
    void (*progress)(void *ud, const cp__load_progress *p); /* calling thread, ~every 0.25 s */
    void *progress_ud;
    const volatile sig_atomic_t *cancel;
    const cpu_set_t *cpus; /* placement of the load's threads (borrowed); NULL: inherit */
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

/* 0 when MSETs of `mset` keys of the largest value size fit CP__LOAD_MSET_MAX_BYTES (or mset <= 1);
 * else CP_EINVAL with the reason, naming the flags, in err. */
int cp__load_mset_check(int mset, const cp__value_sizes *value_size, char *err, size_t errlen);

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

#endif /* CLUSTERPIPE_LOAD_H */
