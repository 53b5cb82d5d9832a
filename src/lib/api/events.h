/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The library's side of the event loop (events.c): what every call from the loop does before
 * and after the core runs, and the bookkeeping a call from the program (an async command, a
 * pipeline started) does so the loop learns what it must watch. One thread, the client's.
 */
#ifndef CLUSTERPIPE_EVENTS_H
#define CLUSTERPIPE_EVENTS_H

#include "lib/core/batch.h"
#include "lib/core/exec.h"
#include "lib/core/send.h"

/* 1 when the client is on a loop of the caller's (async calls allowed), 0 when it has none or
 * is a blocking client on its own loop. */
int cp__events_async_ok(const cp__client *c);

/* After a call from the program (not from the loop): tells the loop the new interest and the
 * next timer. */
void cp__events_after_call(cp__client *c);

/* Library code woken by the client's timer, the one mechanism for it (a cluster SCAN's pause,
 * its wait for a map, a result it puts off): w->fn(w->data, 0) is called from cp_on_timer once
 * w is due, after the core's own timer work, and w is disarmed first (fn may arm it again: it
 * then runs from a later call, never twice in one). cp_free calls it with CP_ECANCELED when it
 * is still armed, after every batch has ended, and sends refuse from then on. The owner sets
 * fn and data, and cancels w before it frees it. */

/* Arms w (again: the new time replaces the old) for `at` (CLOCK_MONOTONIC ns; 1: as soon as
 * the loop calls). No I/O; the loop hears of it as its call returns (cp__events_after_call). */
void cp__events_wake_at(cp__client *c, cp__wake *w, uint64_t at);

/* Arms w for the end of the slot-map refresh under way (a map, or every node failed), at once
 * when none is; c->refresh.err then says how it went. */
void cp__events_wake_after_refresh(cp__client *c, cp__wake *w);

/* Disarms w (one that is not armed is fine). */
void cp__events_wake_cancel(cp__client *c, cp__wake *w);

#endif
