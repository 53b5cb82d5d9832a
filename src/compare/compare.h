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

#include "compare/options.h"

/* Runs the experiment. Returns 0 when every run succeeded and *doc holds the document
 * ("failed": false); CP_EPARTIAL when *doc is complete but something failed (a run, a setup that
 * did not start, cancelled; "failed": true, err names the first problem);
 * CP_EINVAL (options refused, err says why), CP_EIO (the connections asked for need more file
 * descriptors than the hard limit allows: err says how many) or CP_ENOMEM with *doc NULL. The
 * soft RLIMIT_NOFILE is raised to what the largest point needs. Blocks throughout. */
int cp__compare_run(const cp__compare_opts *o, json_t **doc, char *err, size_t errlen);

#endif /* CLUSTERPIPE_COMPARE_H */
