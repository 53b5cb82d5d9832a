/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Read-back of a whole key space (private to src/bench/; used by `clusterpipe scenario`): every
 * key [0, keys) is read once with pipelined GETs and compared with the version the bench engine
 * recorded as last acknowledged for it (cp__bench_config.acked_versions): how many keys hold
 * exactly that version, how many lost it (nil, or an older version), how many hold a newer one
 * (a SET whose outcome was failed or unknown did run), and how many replies are not even ours.
 * With a snapshot of the versions taken at some instant (an event), keys whose acknowledged
 * version did not change since are counted apart: their misses say how many keys a topology
 * change made unreachable, undisturbed by keys written afterwards.
 *
 * Ownership: the caller owns the target, the config, the version arrays and the result; nothing
 * is kept after the call. Threads: cp__readback_run blocks the calling thread and runs its own
 * worker threads (one client each, joined before it returns); the version arrays are only read
 * (relaxed atomics), so a bench run may still be updating them. Never prints.
 */
#ifndef CLUSTERPIPE_READBACK_H
#define CLUSTERPIPE_READBACK_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/config.h"

typedef struct cp__readback_config {
    uint64_t keys;              /* key space [0, keys), as loaded */
    cp__value_sizes value_size; /* as loaded / benchmarked */
    const char *key_prefix;     /* NULL: "key:" */
    int threads;                /* reader threads, >= 1 (each one client, one key range) */
    int pipeline;               /* GETs per batch (cluster: split by node by the library) */
    int retry_budget_ms;        /* < 0: library default, 0: none (CP_RETRY_NONE) */
    int read_from;              /* cluster: cp_options.read_from of the readers (0: masters) */
    const volatile sig_atomic_t *cancel;
} cp__readback_config;

/* threads 2, pipeline 256, value 64 bytes, keys 0 (must be set). */
void cp__readback_config_init(cp__readback_config *cfg);

typedef struct cp__readback_result {
    uint64_t keys;       /* keys read (answered or not) */
    uint64_t ok;         /* exactly the last acknowledged version (nil when none was: 0) */
    uint64_t missing;    /* nil although a version >= 1 was acknowledged */
    uint64_t stale;      /* a version older than the last acknowledged one */
    uint64_t newer;      /* a version newer than acknowledged: an unacknowledged SET ran */
    uint64_t mismatched; /* not a value of this key (wrong key, bad format, not a string) */
    uint64_t failed;     /* no reply: not executed, unknown, or an error reply */
    uint64_t lost_run;   /* of missing + stale: keys last acknowledged by the run (version >= 2) */
    uint64_t untouched;  /* with a snapshot: keys whose acknowledged version did not change */
    uint64_t untouched_missing; /* of those: nil */
    double seconds;
    char first_error[256];
} cp__readback_result;

/* Reads every key through the target (cluster: seeds; proxy: the endpoints, one per reader
 * thread round-robin) and classifies it against acked[k] (NULL: every key expected at version 1,
 * the load's). snapshot (NULL: none) is a copy of acked taken earlier, `keys` entries. Blocks.
 * Returns 0 when every key was read (some may have failed: see out->failed), CP_EINVAL for a
 * bad config, or the connect error of a reader (nothing read then) with err set. */
int cp__readback_run(const cp__bench_target *t, const cp__readback_config *cfg,
                     _Atomic uint32_t *acked, const uint32_t *snapshot, cp__readback_result *out,
                     char *err, size_t errlen);

#endif /* CLUSTERPIPE_READBACK_H */
