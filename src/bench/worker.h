/* SPDX-License-Identifier: BSD-3-Clause
 *
 * One worker thread of the bench engine (private to src/bench/): an epoll loop driving its
 * share of the clients through the library's event-driven execution API. run.c creates the
 * workers (cp__worker_init), runs cp__worker_main on a thread of each, and reads their results
 * after joining them; engine.c and load.c then read the results and free the workers.
 *
 * Threads and sharing: the spec and the key/value formats are read-only and shared by every
 * worker. Each cp__worker is written by its own thread only, except for the atomics, which are
 * the whole cross-thread interface while the run is going: the gate, the live counters
 * (acct.live_*) and the per-second ring (ring.closed, ring.consumed, ring.done). Non-atomic
 * results are read by the main thread only after pthread_join.
 *
 * The struct cp__worker is in wctx.h, with the worker thread's own context.
 *
 * Ownership: the caller allocates the cp__worker structs; cp__worker_init allocates a worker's
 * lanes and clients' streams, cp__worker_main connects the clients, and cp__worker_free releases
 * all of it.
 */
#ifndef CLUSTERPIPE_WORKER_H
#define CLUSTERPIPE_WORKER_H

#include "bench/wctx.h"

/* Fills worker w (zeroed by the caller) for thread `index`, its nclients clients starting at
 * global index first_client, and allocates its lanes. On failure sets w->setup_err (CP_ENOMEM)
 * and w->setup_errstr; cp__worker_main then only reports it at the gate. */
void cp__worker_init(cp__worker *w, const cp__run_spec *spec, cp__gate *gate, int index,
                     int first_client, int nclients);

/* The thread function (arg: the cp__worker): connects and warms up its clients, arrives at the
 * gate, runs the measured interval unless aborted, sums the library counters, and ends its ring
 * (ring.done) as its last act. Returns NULL. */
void *cp__worker_main(void *arg);

/* Frees what cp__worker_init and cp__worker_main allocated (clients, pipelines, streams); safe
 * on a zeroed worker. Only after the thread was joined. */
void cp__worker_free(cp__worker *w);

#endif /* CLUSTERPIPE_WORKER_H */
