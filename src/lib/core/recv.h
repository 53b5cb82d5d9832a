/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The receiving side of the core (recv.c): what a node has sent, read and acted on. An answer
 * ends its command; MOVED and ASK queue it at the node named (a MOVED patches the slot and
 * fences it); TRYAGAIN, CLUSTERDOWN and LOADING put it aside for a retry round; a transaction's
 * members wait for its last answer and are re-sent once, whole, after a redirect. Calls only
 * down, into send.c and batch.c. One thread, the client's.
 */
#ifndef CLUSTERPIPE_RECV_H
#define CLUSTERPIPE_RECV_H

#include "lib/client/pipeline.h"

/* Reads what node n has sent and acts on every complete reply. Replies that arrived before an
 * EOF or error are still delivered; only then is the connection failed. */
void cp__recv_node(cp__client *c, int n);

/* The same for a pool connection's reply (a blocking command's answer, pool.h): the connection
 * is idle again first (it takes the next blocking command waiting for its node). 1 when the
 * connection failed (pc is gone), else 0. */
int cp__recv_pool(cp__client *c, cp__pconn *pc);

#endif
