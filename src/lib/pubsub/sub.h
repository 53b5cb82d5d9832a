/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Subscriptions (cp_subscribe): pub/sub on connections of their own, so that no command
 * connection ever changes mode. The classic subscriptions (channels, patterns) share one
 * connection to one master, since a cluster delivers every PUBLISH to every node; a node's shard
 * channels share one connection to it, the master serving their slots. Each connection (a link)
 * writes SUBSCRIBE and UNSUBSCRIBE commands without reply matching (conn.push: the answers are
 * frames), keeps the ones not confirmed in order, turns the frames into the subscriptions'
 * events, and is watched: a PING when idle, failed when it goes unanswered for the I/O timeout.
 *
 * A subscription whose link fails, or that the server drops (a shard channel's slot migrated:
 * SUNSUBSCRIBE unasked), is sent again, after a backoff of 50 ms doubling to 2 s (at once when a
 * new slot map comes, but never within 250 ms of a link's failure: sub.c's SETTLE_NS), wherever
 * the map then says (a MOVED answer to SSUBSCRIBE names the node; the map is re-read), and its
 * callback hears CP_SUB_RESUBSCRIBED once the server confirms. At-most-once: what is published
 * in between is gone.
 *
 * Nothing here calls the core's upper layers: the loop's calls (events.c, exec.c) hand it
 * readiness and timer calls, and the callbacks run from them. One thread, the client's.
 */
#ifndef CLUSTERPIPE_SUB_H
#define CLUSTERPIPE_SUB_H

#include "lib/client/client.h"

/* A new subscription (name copied), sent from the loop's next call. 0, CP_EINVAL (a bad kind,
 * or already subscribed to that name and kind: errstr on the client) or CP_ENOMEM. */
int cp__sub_add(cp__client *c, int kind, const char *name, size_t len, cp_sub_callback *cb,
                void *data);

/* Ends one: its UNSUBSCRIBE goes out from the loop's next call. 0, or CP_EINVAL (none such, or
 * ending already). */
int cp__sub_remove(cp__client *c, int kind, const char *name, size_t len);

/* The link with this fd, or NULL. */
cp__slink *cp__sub_of_fd(cp__client *c, int fd);

/* Readiness on link l: its connect and handshake, frames read, output written. */
void cp__sub_ready(cp__client *c, cp__slink *l, int events);

/* What is due: connect timeouts, PINGs and their deadlines, subscriptions to (re)send, links
 * left without subscriptions closed. */
void cp__sub_timers(cp__client *c, uint64_t now);

/* CLOCK_MONOTONIC ns of the next of those, 0 when none. */
uint64_t cp__sub_next_wake(const cp__client *c);

/* Brings every link's registration with the loop in line; lets the loop go of them all (a
 * client moving to another loop). */
void cp__sub_sync_all(cp__client *c);
void cp__sub_unregister_all(cp__client *c);

/* Ends everything (cp_free): links closed, then every subscription's callback CP_SUB_ENDED
 * with code and why, and all freed. */
void cp__sub_end_all(cp__client *c, int code, const char *why);

#endif
