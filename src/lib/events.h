/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The library's side of the event loop (events.c): what every call from the loop does before
 * and after the core runs, and the bookkeeping a call from the program (an async command, a
 * pipeline started) does so the loop learns what it must watch. One thread, the client's.
 */
#ifndef CLUSTERPIPE_EVENTS_H
#define CLUSTERPIPE_EVENTS_H

#include "lib/exec.h"

/* 1 when the client is on a loop of the caller's (async calls allowed), 0 when it has none or
 * is a blocking client on its own loop. */
int cp__events_async_ok(const cp__client *c);

/* After a call from the program (not from the loop): tells the loop the new interest and the
 * next timer. */
void cp__events_after_call(cp__client *c);

#endif
