/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The sending side of the core (send.c): a batch started (its commands counted, refused or
 * routed), each command routed to the node serving its slot, held behind a fence, or put aside
 * for a retry round or the slot map; node queues moved into their connections; retry rounds with
 * backoff inside the batch's budget; what a failed node's commands become; and the in-band
 * refresh's requests started. recv.c (replies) and exec.c (the loop's calls) call down into it;
 * it calls nothing above it. One thread, the client's.
 */
#ifndef CLUSTERPIPE_SEND_H
#define CLUSTERPIPE_SEND_H

#include "lib/client/pipeline.h"

/* Starts batch p (not running, commands appended): links it, routes every command into its
 * node's output buffer or queue. With io_now, writes and connects at once; else leaves that to
 * the loop (write interest, a timer). Either way no callback runs and no batch completes inside
 * the call (c->sending): those wait for the end of the loop's call, or its next one. */
void cp__send_start(cp_pipeline *p, int io_now);

/* Routes one more command (tag) of a running async batch; no I/O. */
void cp__send_add(cp_pipeline *p, uint32_t tag);

/* Queues command tag of p on node n, behind what waits there (a redirect's target). */
void cp__send_enqueue(cp_pipeline *p, int n, uint32_t tag);

/* Routes a command (a first send or a retry): to its node's queue; behind a fence on its slot;
 * or, when its slot has no known owner, aside until the map comes, within its budget. */
void cp__send_route(cp_pipeline *p, uint32_t tag, uint64_t now);

/* A command redirected (MOVED, ASK, a transaction re-sent) to node n: queued there, or held in
 * its slot's fence behind an earlier command of the slot that waits. */
void cp__send_redirect(cp_pipeline *p, int n, uint32_t tag);

/* A command a fence lets through (cp__fence_send): queued on target, or routed by the map. */
void cp__send_released(cp_pipeline *p, uint32_t tag, int target, uint64_t now);

/* Puts a command aside for p's next retry round (err: the reason, should the budget run out),
 * or ends it when the budget is spent or it may not be retried. */
void cp__send_retry_later(cp_pipeline *p, uint32_t tag, int err);

/* p's retry round is due: routes its commands again, in order (after a failure or CLUSTERDOWN,
 * once the map has been re-read). */
void cp__send_run_retries(cp_pipeline *p, uint64_t now);

/* Node n's connection is unusable (code, why): its written requests end unknown (or are
 * retried when that is safe), the rest go to the next retry round, and the map is re-read. */
void cp__send_fail_node(cp__client *c, int n, int code, const char *why);

/* Pool connection pc is unusable (pool.h): it is closed; its blocking command ends unknown when
 * it was written (or is retried when that is safe), else goes to the next retry round, as do
 * the commands waiting for its node's pool; the map is re-read. */
void cp__send_fail_pool(cp__client *c, cp__pconn *pc, int code, const char *why);

/* Moves node n's queue into its connection and writes what the socket takes (connecting a
 * closed node that has commands); for every node with cp__send_pump_all (now: the caller's
 * clock, or 0). */
void cp__send_pump(cp__client *c, int n);
void cp__send_pump_all(cp__client *c, uint64_t now);

/* The in-band refresh: a round begun when one is wanted (kick), the round's next request or a
 * hedge, and a refresh asked for now without spacing (cp_refresh). */
void cp__send_kick_refresh(cp__client *c, uint64_t now);
void cp__send_refresh(cp__client *c, uint64_t now, int hedge);
void cp__send_refresh_now(cp__client *c);

#endif
