/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The tally of a finished batch's replies (tally.c): outcomes, latencies, verification. One
 * thread, the worker's.
 */
#ifndef CLUSTERPIPE_TALLY_H
#define CLUSTERPIPE_TALLY_H

#include "bench/wctx.h"

/* The tally's table (x->tally): for a --command run with a counter template. 0 or CP_ENOMEM. */
int cp__tally_init(cp__wctx *x);
void cp__tally_destroy(cp__wctx *x);

/* Accounts every command of the finished batch fl (into the worker's counts and the second
 * being filled) and resets its pipeline for the next one. Open loop: a command's latency counts
 * from when the schedule sent its batch, so waiting for a stalled node shows in the percentiles
 * instead of delaying the next sends (coordinated omission). */
void cp__tally_batch(cp__wctx *x, cp__flight *fl);

#endif /* CLUSTERPIPE_TALLY_H */
