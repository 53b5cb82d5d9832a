/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The core's entry points for the layers above it (events.c, async.c, blocking.c): start a
 * batch, react to readiness and timers, know when to wake, end everything. exec.c runs every
 * batch of a client the same way: the caller's pipelines, the async layer's batches and the
 * in-band refresh. One thread, the client's.
 */
#ifndef CLUSTERPIPE_EXEC_H
#define CLUSTERPIPE_EXEC_H

#include "lib/pipeline.h"

/* Starts batch p (not running, commands appended): links it, routes every command into its
 * node's output buffer or queue. With io_now, writes and connects at once; else leaves that to
 * the loop (write interest, a timer). Either way no callback runs and no batch completes inside
 * the call (c->sending): those wait for the end of the loop's call, or its next one. */
void cp__exec_start(cp_pipeline *p, int io_now);

/* Routes one more command (tag) of a running async batch; no I/O. */
void cp__exec_add(cp_pipeline *p, uint32_t tag);

/* Readiness on node n's connection (CP__EV_* bits). */
void cp__exec_ready(cp__client *c, int n, int events);

/* Runs what is due: timeouts, retry rounds, finished batches, the refresh, connects. */
void cp__exec_timers(cp__client *c);

/* Starts connects of nodes with queued commands and writes what waits, after an entry. */
void cp__exec_pump_all(cp__client *c);

/* CLOCK_MONOTONIC ns of the next timer work, 0 when none. */
uint64_t cp__exec_next_wake(const cp__client *c);

/* Asks for a slot-map refresh now (explicit cp_refresh: no spacing). */
void cp__exec_refresh_now(cp__client *c);

/* Ends every command of every batch now (code why), closing connections with requests on them:
 * written ones end unknown, the rest not executed. For cp_free and a loop that cannot go on. */
void cp__exec_cancel_all(cp__client *c, int code, const char *why);

#endif
