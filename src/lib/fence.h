/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fences keep one key's commands in order across MOVED. When node n answers MOVED for a slot
 * while more of the slot's commands are still in flight or queued on n, those will be
 * redirected one by one as their MOVED come back; a later command for the slot routed straight
 * to the new owner could overtake them. So the slot gets a fence: later commands for it are
 * held, in order, until n has answered every command it had for the slot (or failed), then
 * handed in order to the caller's route function (exec.c's). Bookkeeping only, no I/O; the
 * fences live on the client and go with it. One thread, the client's.
 */
#ifndef CLUSTERPIPE_FENCE_H
#define CLUSTERPIPE_FENCE_H

#include "lib/pipeline.h"

/* Where released commands go: the caller routes them as retries (now: the time of the reply). */
typedef void cp__fence_route(cp_pipeline *p, uint32_t tag, uint64_t now);

/* Holds command tag of p behind a fence on `slot`, if there is one: 1 when held, 0 when the
 * slot is not fenced, CP_ENOMEM (not held). */
int cp__fence_hold(cp__client *c, int slot, cp_pipeline *p, uint32_t tag);

/* Node n answered MOVED for `slot`: fences the slot when n still has more of its commands. Out
 * of memory, the slot is not fenced (order across this redirect is then not kept). */
void cp__fence_moved(cp__client *c, int n, int slot);

/* Whether node n's replies for `slot` count down a fence now. A reply's command is counted only
 * by a fence that existed before the reply was acted on (acting on a MOVED may make one). */
int cp__fence_counts(cp__client *c, int n, int slot);

/* A reply (of any kind) came from node n for a command of `slot`. When that was the fence's
 * last command, the fence goes and its held commands go to route, in order. */
void cp__fence_reply(cp__client *c, int n, int slot, cp__fence_route *route, uint64_t now);

/* Node n failed: every fence it held goes, their commands to route. */
void cp__fence_node_failed(cp__client *c, int n, cp__fence_route *route, uint64_t now);

/* Drops every fence; each command one held goes to drop(p, tag, data), in order (cp_free). */
typedef void cp__fence_drop(cp_pipeline *p, uint32_t tag, void *data);
void cp__fence_drop_all(cp__client *c, cp__fence_drop *drop, void *data);

#endif
