/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The bounds of the bench's workload knobs, in one place: the engine checks a configuration
 * against them and the CLI's flag tables parse and document the flags with them, so the two can
 * never disagree. Constants only.
 */
#ifndef CLUSTERPIPE_BENCH_LIMITS_H
#define CLUSTERPIPE_BENCH_LIMITS_H

#define CP__THREADS_MIN 1
#define CP__THREADS_MAX 1024
#define CP__CLIENTS_MIN 1
#define CP__CLIENTS_MAX 100000
#define CP__PIPELINE_MIN 1
#define CP__PIPELINE_MAX 100000
/* Open loop (--rate): requests a lane may have in flight before its next batches are shed
 * (--max-inflight). The default is the bound's old 4,096 batches at scenario's depth 4: a
 * failover there holds a few thousand per lane for its 3 s retry budget, and none is shed. */
#define CP__MAX_INFLIGHT_DEFAULT 16384
#define CP__MAX_INFLIGHT_MAX 16777216

#endif /* CLUSTERPIPE_BENCH_LIMITS_H */
