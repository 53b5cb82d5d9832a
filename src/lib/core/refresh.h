/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The in-band slot-map refresh, without any I/O: a round asks node after node (a node whose role
 * the last map left unsure first, then masters with an idle ready connection, other ready
 * masters, other masters, replicas and other nodes, then the seeds), hedging a request not answered
 * in 200 ms, until one answers with a map; the reply (CLUSTER SHARDS, or SLOTS) is applied to the
 * client's node set and slot table, and commands waiting for it go on. Here the round decides and
 * builds each request as a batch of its own; exec.c sends it in-band, like any other command, and
 * hands its answer back. One thread, the client's.
 */
#ifndef CLUSTERPIPE_REFRESH_H
#define CLUSTERPIPE_REFRESH_H

#include "lib/client/pipeline.h"

/* Begins a round when a refresh is wanted, none is under way, and the spacing allows (its
 * candidates planned): 1, and the caller sends cp__refresh_ask's first request; else 0. */
int cp__refresh_begin(cp__client *c, uint64_t now);

/* The round's next request, to the next candidate (hedge: the next one with a ready
 * connection; a hedge opens no new connection), as a one-command batch whose reply goes to
 * `answered` (give it to cp__refresh_took); the caller starts it. NULL when nothing is to be
 * sent: the round is not running, 3 requests are out (hedges included), or no candidate is
 * left (the round then ends, failed, once none is out). A request that gets no answer within
 * 200 ms is hedged: hedge_at says when. */
cp_pipeline *cp__refresh_ask(cp__client *c, uint64_t now, int hedge, cp_callback *answered);

/* A request's answer (data: its callback's privdata). 1 when it ended the round with a map
 * (*node: the node that gave it, for cp__cmdtab_ask), 0 when the next candidate is to be asked
 * (cp__refresh_ask), -1 when it belongs to a round that is over. */
int cp__refresh_took(cp__client *c, void *data, const cp_response *r, uint64_t now, int *node);

/* The server's command table (its key specs route every command), read once per client beside
 * the first map, in-band from the node that gave it; until it comes, and from an endpoint that
 * refuses COMMAND, routing uses the built-in table. The request as a batch for node n (NULL
 * when the table is read, being read, or refused), and what its answer does. */
cp_pipeline *cp__cmdtab_ask(cp__client *c, int n, cp_callback *answered);
void cp__cmdtab_took(cp__client *c, const cp_response *r);

#endif
