/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The runs of a compare setup (runs.c): each point's cases, repeated, against a target that is
 * up, and the failed runs of a setup that could not run them. The calling thread.
 */
#ifndef CLUSTERPIPE_COMPARE_RUNS_H
#define CLUSTERPIPE_COMPARE_RUNS_H

#include "bench/target.h"
#include "compare/context.h"

/* Points [from, to) against one target that is up: the dataset loaded again whenever a point's
 * value size differs from what the servers hold (dataset.c), then each point's cases `repeat`
 * times, each run's object appended to the document. Blocks for all of it. */
void cp__cmp_run_points(cp__cmp *r, const char *setup, const cp__bench_target *t,
                        const char *target_flags, int from, int to);

/* Every case of every repeat of points [from, to) of a setup that could not run them, as failed
 * runs with the reason why. */
void cp__cmp_fail_points(cp__cmp *r, const char *setup, int from, int to, const char *why);

#endif /* CLUSTERPIPE_COMPARE_RUNS_H */
