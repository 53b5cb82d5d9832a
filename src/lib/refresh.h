/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Where the slot map comes from and what its answer does, without any I/O: the order in which
 * nodes are asked (masters with an idle ready connection first, then other ready masters, other
 * masters, replicas and other nodes, then the seeds), the request to send, and applying a CLUSTER
 * SHARDS / SLOTS reply to the client's node set and routes. exec.c sends the request in-band, like
 * any other command, and calls back here with what came. One thread, the client's.
 */
#ifndef CLUSTERPIPE_REFRESH_H
#define CLUSTERPIPE_REFRESH_H

#include "lib/client.h"

/* Fills the candidate list for a new refresh (seeds become nodes here). 0 or CP_ENOMEM. */
int cp__refresh_plan(cp__client *c);

/* The next node to ask, or -1 when every candidate has been tried. */
int cp__refresh_next(cp__client *c);

/* The next candidate whose connection is ready (a hedge opens no new connection), or -1. */
int cp__refresh_next_ready(cp__client *c);

/* The request for the map, as RESP bytes (CLUSTER SHARDS, or CLUSTER SLOTS for servers
 * without it). */
const char *cp__refresh_request(const cp__client *c, size_t *len);

/* Node n answered r (NULL when the request got no answer: errstr says why). Returns 0 when the
 * map was applied, 1 when the same node should be asked again (it lacks CLUSTER SHARDS: SLOTS
 * from now on), or a CP_E* code with the reason kept in c->refresh.errstr for the next
 * candidate to improve on. */
int cp__refresh_answer(cp__client *c, int n, const redisReply *r, int err, const char *errstr);

#endif
