/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The bench engine's `bench` run (private to src/bench/, used by src/cli/ `bench` and `compare`
 * and by src/scenario/): T worker threads, each running its own epoll loop over its share of C
 * clients; every client is one cp_client (cluster: seeds; proxy: one endpoint, clients spread
 * round-robin over the endpoints) and one cp_pipeline driven with the library's event-driven
 * execution API, so all routing, MOVED/ASK and retries come from libclusterpipe. Per-request
 * latency (cp_timing) goes into per-second histograms merged on the calling thread; every GET
 * reply is verified against its key; CPU of every component (redis, proxy, client) is taken
 * over the measured interval only. This header declares engine.c's functions; the types are in
 * config.h, targets in target.h, load in load.h, the JSON and CSV of a run in report.h.
 *
 * Ownership: cp__bench_target and cp__bench_config are caller-allocated and only read by the
 * engine (strings they point to must outlive the call). cp__bench_result is caller-allocated,
 * filled by cp__bench_run, and owns heap memory (the timeline) that cp__bench_result_free
 * releases.
 *
 * Threads: cp__bench_run blocks the calling thread until the run ends; it starts and joins its
 * worker threads itself (run.h). Progress callbacks are called from the calling thread only
 * (about once per second, and at the end), never from a worker. The engine never prints and
 * never exits: errors come back as a negative CP_E* code plus a message in err.
 */
#ifndef CLUSTERPIPE_ENGINE_H
#define CLUSTERPIPE_ENGINE_H

#include <stddef.h>

#include "bench/config.h"

/* Defaults: 1 thread, 50 clients, pipeline 1, 100000 requests, ratio 0:1, 100000 keys, value
 * 64 bytes, uniform, verify on, no rate limit, seed 1. */
void cp__bench_config_init(cp__bench_config *cfg);

/* Checks the config for values the engine cannot run (threads < 1, clients < threads, pipeline
 * < 1, ratio 0:0, keys 0, value too small to verify, ...). Returns 0 or CP_EINVAL with the reason
 * (naming the CLI flag, e.g. "--clients must be >= --threads") in err. */
int cp__bench_config_check(const cp__bench_config *cfg, char *err, size_t errlen);

/* Runs a benchmark. Blocks for the duration of the run. Connect failures before the measured
 * interval are errors (CP_ECONNECT etc., message in err, out is still valid to free); failures
 * during the run are counted in out and the run goes on with what still answers. Returns 0 when
 * the run completed (which does not mean it had no errors or mismatches: the caller looks at
 * out->failed_ops, unknown_ops, verify_mismatches), or a negative CP_E* code. out is always
 * initialised on return and must be released with cp__bench_result_free. */
int cp__bench_run(const cp__bench_target *t, const cp__bench_config *cfg, cp__bench_result *out,
                  char *err, size_t errlen);

/* Frees what the result owns (the timeline, the commands); safe on a zeroed or already freed
 * result. */
void cp__bench_result_free(cp__bench_result *r);

/* 1 when the run should be reported as failed (exit code 1): failed or unknown ops, or
 * verification mismatches. */
int cp__bench_result_failed(const cp__bench_result *r);

#endif /* CLUSTERPIPE_ENGINE_H */
