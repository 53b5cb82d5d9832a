/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A worker's epoll and the library attached to it (poller.c): the worker is an event-loop
 * adapter of its own (cp_event_ops), and the one place that waits. One thread, the worker's.
 */
#ifndef CLUSTERPIPE_POLLER_H
#define CLUSTERPIPE_POLLER_H

#include "bench/wctx.h"

/* Creates the worker's epoll (x->poll). 0, or -1 with errno. */
int cp__poller_open(cp__wctx *x);

/* Closes it (an epfd < 0: none was opened). After every client was freed. */
void cp__poller_close(cp__wctx *x);

/* Hands lane cs's client to this worker's epoll (cp_attach with the worker's hooks; the loop
 * pointer is the lane). From then on the client never blocks. 0, or cp_attach's error. */
int cp__poller_attach(cp__client_state *cs);

/* Waits up to timeout_ms for the lanes' sockets, sets *now to the clock as the wait ends, then
 * hands each event to its client (cp_on_ready): the replies read call the batches' callbacks.
 * 0, or -1 when epoll_wait failed (noted in the worker's errors; an interrupted wait is 0). */
int cp__poller_wait(cp__wctx *x, int timeout_ms, uint64_t *now);

/* Runs the library timers (I/O timeouts, retry rounds) that are due at now, and finds the
 * soonest one left (x->poll.soonest). */
void cp__poller_timers(cp__wctx *x, uint64_t now);

#endif /* CLUSTERPIPE_POLLER_H */
