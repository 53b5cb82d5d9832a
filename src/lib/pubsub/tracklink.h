/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache under RESP2 (cache.h). A RESP2 connection cannot carry invalidations
 * beside its replies, so each node's command connection is tracked with CLIENT TRACKING ON
 * REDIRECT <id>: the id of a connection of its own to that node, the node's tracking link,
 * subscribed to __redis__:invalidate, where the server publishes the invalidations of the keys
 * read on the command connection.
 *
 * A link opens (AUTH, as a subscriber's connection) once its node's command connection does,
 * asks its CLIENT ID and subscribes. Once both are answered it is up, and the command connection
 * is sent the REDIRECT in its stream: the reads behind it are tracked (the server answers in
 * order), the ones before never go into the cache. The subscription is confirmed first because
 * the server drops an invalidation meant for a RESP2 connection that is not subscribed. The node
 * is tracked (cp__client_tracked) from the REDIRECT's answer until its command connection closes
 * or its link fails; only then are its replies stored and its entries answered.
 *
 * A link that fails (closed, refused, its PING unanswered for the I/O timeout) loses
 * invalidations, and RESP2 says nothing of a broken redirect: the node's entries go at once, it
 * is untracked, and a new link opens after a backoff (50 ms doubling to 2 s), whose REDIRECT
 * moves the tracking to it. A quiet link is sent a PING every half max_silence_ms, and the
 * node's entries answer only while the link was heard from within max_silence_ms (the lease of
 * cache.h, on the connection the invalidations come on). The link closes with its node's
 * command connection (cp__client_close_node).
 *
 * Called from the loop's side (events.c, exec.c) and recv.c; calls the client, conn and the
 * cache only. Nothing happens under RESP3 or without a cache. One thread, the client's.
 */
#ifndef CLUSTERPIPE_TRACKLINK_H
#define CLUSTERPIPE_TRACKLINK_H

#include "lib/client/client.h"

/* The tracking link with this fd, or NULL. */
cp__tlink *cp__tlink_of_fd(cp__client *c, int fd);

/* Readiness on link l: its connect and handshake, its answers and messages read, output
 * written. */
void cp__tlink_ready(cp__client *c, cp__tlink *l, int events);

/* What is due: links opened for the nodes whose command connections are open, connect timeouts,
 * PINGs and their deadlines, REDIRECTs sent to command connections that can take one. */
void cp__tlink_timers(cp__client *c, uint64_t now);

/* CLOCK_MONOTONIC ns of the next of those, 0 when none. */
uint64_t cp__tlink_next_wake(const cp__client *c);

/* The answer r to node n's REDIRECT (CP__TAG_REDIRECT): the node is tracked when it is +OK for
 * the link that is up now. 0, or CP_EPROTO with why set when the server refused tracking (not
 * for a link that went meanwhile: a new one will be named); then the owner fails the node. */
int cp__tlink_answered(cp__client *c, int n, const redisReply *r, char *why, size_t whylen);

/* Every link's registration with the loop brought in line; the loop let go of them all (a
 * client moving to another loop). */
void cp__tlink_sync_all(cp__client *c);
void cp__tlink_unregister_all(cp__client *c);

#endif
