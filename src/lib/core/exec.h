/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The core's entry points for the loop's calls (events.c, blocking.c): readiness, timers, the
 * next wake-up. Starting batches and sending commands is send.h's; ending everything is
 * batch.h's. One thread, the client's.
 */
#ifndef CLUSTERPIPE_EXEC_H
#define CLUSTERPIPE_EXEC_H

#include "lib/client/pipeline.h"

/* Readiness on node n's connection (CP__EV_* bits). */
void cp__exec_ready(cp__client *c, int n, int events);

/* Readiness on a pool connection (pool.h): its connect, its handshake, its command's answer. */
void cp__exec_pool_ready(cp__client *c, cp__pconn *pc, int events);

/* Runs what is due: timeouts, retry rounds, finished batches, the refresh, connects. */
void cp__exec_timers(cp__client *c);

/* CLOCK_MONOTONIC ns of the next timer work, 0 when none. */
uint64_t cp__exec_next_wake(const cp__client *c);

#endif
