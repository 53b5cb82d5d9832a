/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Accounting of a worker's finished commands (private to src/bench/): its totals (counts,
 * mismatch samples, the first error, when failures happened; for --command runs also each
 * template's part), the live counters the main thread reads for progress, and the per-batch
 * tally that is added to the totals and to the current second's slot once per batch.
 *
 * Ownership: a cp__acct is a plain struct embedded in its cp__worker; nothing here allocates.
 * Threads: everything is written by the worker thread only; the live_* atomics are read by the
 * main thread while the run goes (relaxed), the rest after pthread_join.
 */
#ifndef CLUSTERPIPE_ACCOUNT_H
#define CLUSTERPIPE_ACCOUNT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/config.h"
#include "bench/nodes.h"
#include "bench/seconds.h"
#include "clusterpipe/clusterpipe.h"

typedef struct cp__acct {
    /* live, for progress (relaxed) */
    _Atomic uint64_t live_ops, live_errors, live_mismatches;
    /* totals, read after join */
    uint64_t ops, gets, sets, misses, failed, error_replies, unknown;
    uint64_t shed; /* of failed: open loop, never sent (flight.c) */
    uint64_t checked, mismatches, stale, stale_cached;
    cp__bench_mismatch mismatch[CP__BENCH_MISMATCH_SAMPLES];
    size_t nmismatch;
    char first_error[256];
    uint64_t first_fail_ns, last_fail_ns; /* batch end times of failures; 0: none */
    /* --command runs: each template's part, spec->cmds->n entries (owned by the worker that
     * holds this cp__acct); NULL otherwise */
    cp__bench_cmd_result *cmd;
    /* client-side cache runs: the reads' latencies split by who answered (cp_reply_cached);
     * initialised by cp__worker_init, filled only when the spec has a cache */
    cp__hist cache_hit, cache_miss;
} cp__acct;

/* Counters of one batch, added to the worker and the second once at its end: kept local, the
 * loop holds them in registers instead of storing through pointers every library call may
 * alias. */
typedef struct cp__tally {
    uint64_t ops, errors, sets, gets, misses, checked, stale;
    uint64_t stale_cached; /* of stale: answered by the client-side cache */
} cp__tally;

/* Keeps the first error of the run: fmt with one %s, msg. */
void cp__acct_note_error(cp__acct *a, const char *fmt, const char *msg);

/* A command (of `keys` keys: an MSET may carry several) that did not end with a reply, or ended
 * with an error reply r (outcome oc, of pipeline p). */
void cp__acct_failure(cp__acct *a, cp_pipeline *p, cp_outcome oc, const redisReply *r,
                      uint64_t keys);

/* The same for command k of a --command run, in its own part (after cp__acct_failure). */
void cp__acct_cmd_failure(cp__acct *a, unsigned k, cp_outcome oc, const redisReply *r);

/* A reply that does not belong to its key: counted in a and the second sl, and sampled (up to
 * CP__BENCH_MISMATCH_SAMPLES) with the node that owns its slot in map, or endpoint ep when map
 * is NULL (proxy). what: the reason, copied; command: the --command's name (NULL for a GET);
 * keylen is cut to CP__KEY_MAX_LEN. */
void cp__acct_mismatch(cp__acct *a, cp__sec_slot *sl, const cp__nodemap *map,
                       const cp__node_addr *ep, const char *key, size_t keylen, const char *what,
                       const char *command);

/* Adds a batch's counters to the totals, the second sl, and the live counters. */
void cp__acct_add(cp__acct *a, cp__sec_slot *sl, const cp__tally *t);

#endif /* CLUSTERPIPE_ACCOUNT_H */
