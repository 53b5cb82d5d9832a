/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The batches in flight of a worker's lanes (flight.c): which lane sends its next batch when,
 * and what a batch's end sets off. One thread, the worker's.
 */
#ifndef CLUSTERPIPE_FLIGHT_H
#define CLUSTERPIPE_FLIGHT_H

#include "bench/wctx.h"

/* The schedule (x->sched): closed or open loop, the list of batches that end in a wake-up.
 * Before the lanes' first flights. 0 or CP_ENOMEM. */
int cp__flights_init(cp__wctx *x);
void cp__flights_destroy(cp__wctx *x);

/* Lane cs's first flight (part of the lane; closed loop its only one): its pipeline on the
 * lane's connected client and, as the run needs, its MSET key counts and its own copy of a
 * batch. 0 or CP_ENOMEM (the lane's flights are freed by cp__flights_free). */
int cp__flights_first(cp__wctx *x, cp__client_state *cs);

/* The measured interval begins: every idle lane starts its first batches. */
void cp__flights_start(cp__wctx *x, uint64_t now);

/* Accounts the batches that ended in this wake-up (their callbacks only listed them, so the
 * next batches go out together); closed loop: starts each lane's next one. A draining lane is
 * done with its last. */
void cp__flights_finished(cp__wctx *x, uint64_t now);

/* The sweep's part: the batches that ended, lanes whose --rate slot came (round the lanes of
 * each client), and lanes waiting for keys once the run must stop (stop). */
void cp__flights_sweep(cp__wctx *x, uint64_t now, int stop);

/* After the run, once the lanes' clients were freed (which ends what was in flight): the
 * batches that ended meanwhile go back unaccounted. */
void cp__flights_drop(cp__wctx *x);

/* Frees lane cs's flights (all done); the first is part of the lane. */
void cp__flights_free(cp__client_state *cs);

#endif /* CLUSTERPIPE_FLIGHT_H */
