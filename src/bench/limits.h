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

#endif /* CLUSTERPIPE_BENCH_LIMITS_H */
