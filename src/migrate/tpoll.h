/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The target client on migrate's one poll(2): its fds and its timer, as the library's
 * cp_event_ops ask for them, polled beside the sources' sockets. migrate waits in one place, for
 * whichever comes first: a source's bytes or the target's answers. One client, one thread.
 */
#ifndef CLUSTERPIPE_MIGRATE_TPOLL_H
#define CLUSTERPIPE_MIGRATE_TPOLL_H

#include <poll.h>

#include "clusterpipe/clusterpipe.h"

typedef struct cp__tpoll cp__tpoll;

cp__tpoll *cp__tpoll_new(void); /* NULL: out of memory */

/* After the client was freed (its fds are then gone). NULL is fine. */
void cp__tpoll_free(cp__tpoll *t);

/* cp_attach with these hooks. 0, or cp_attach's error. */
int cp__tpoll_attach(cp__tpoll *t, cp_client *c);

/* Room for this many more pollfds is needed by cp__tpoll_fill. */
int cp__tpoll_count(const cp__tpoll *t);

/* Writes the client's fds into pf (room for cp__tpoll_count) and lowers *timeout_ms (-1: none
 * yet) to the client's timer. Returns how many were written. */
int cp__tpoll_fill(cp__tpoll *t, struct pollfd *pf, int *timeout_ms);

/* After poll(2): hands each result of pf (as cp__tpoll_fill wrote it, n entries) to the client,
 * then fires its timer if due. A result for an fd that a callback of this turn closed is
 * dropped, also when a new connection got the same number. */
void cp__tpoll_dispatch(cp__tpoll *t, const struct pollfd *pf, int n);

#endif
