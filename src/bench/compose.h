/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Composing a lane's batch (compose.c). One thread, the worker's.
 */
#ifndef CLUSTERPIPE_COMPOSE_H
#define CLUSTERPIPE_COMPOSE_H

#include "bench/wctx.h"

/* The composer's scratch (x->comp), sized for the run's largest command; after the lanes'
 * init (it needs their key stride). 0 or CP_ENOMEM (what was allocated is freed by
 * cp__compose_destroy). */
int cp__compose_init(cp__wctx *x);
void cp__compose_destroy(cp__wctx *x);

/* Takes lane cs's next batch from its queue (a copy of it for an open-loop flight, whose batch
 * outlives the lane's next take) and appends its commands to flight fl's pipeline: GET/SET,
 * MSETs (load), or the requests' templates expanded. Returns the commands' requests appended:
 * fewer than the batch when out of memory (noted; fl->batch.n is cut to match). */
size_t cp__compose_batch(cp__wctx *x, cp__client_state *cs, cp__flight *fl);

#endif /* CLUSTERPIPE_COMPOSE_H */
