/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Where a read goes under the client's read_from policy (cp_read_from in clusterpipe.h). Each
 * master has at most one replica serving this client's reads of its slots, its "reader": chosen
 * whenever a slot map is applied, among the master's replicas that the map does not call failed
 * (its "loading" is left alone: other nodes say it of a replica whose offset has not reached them
 * by gossip yet, and a replica that really loads answers LOADING, which counts as a failure
 * here) and that have not failed on this client within the last second, at random per client, so
 * the clients of a fleet spread over a shard's replicas while one client keeps reading a slot from
 * one place. A reader whose connection fails is replaced at once by another replica of the shard,
 * or by none; then replica-preferred reads go to the master and strict replica reads are
 * refused, and the map is re-read once the second is over, which brings a recovered replica
 * back. No I/O. One thread, the client's.
 */
#ifndef CLUSTERPIPE_READFROM_H
#define CLUSTERPIPE_READFROM_H

#include "lib/client/client.h"

/* A read for a shard without a usable replica, under CP_READ_REPLICA: refused, not sent. */
#define CP__READ_NONE (-2)

/* A replica that failed gets no reads for this long. */
#define CP__READ_DOWN_NS 1000000000ull

/* Chooses every master's reader from the nodes' roles and health (after a map was applied). */
void cp__readfrom_pick(cp__client *c, uint64_t now);

/* Node n's connection failed: a master it was reading for gets another replica, or none. */
void cp__readfrom_failed(cp__client *c, int n, uint64_t now);

/* The shard has no reader: the master (replica-preferred) or CP__READ_NONE (replica), and the
 * map is asked for again once a failed replica's time is over. */
int cp__readfrom_fallback(cp__client *c, int master);

/* The node for a read-only command of a slot that `master` serves. */
static inline int cp__readfrom_node(cp__client *c, int master) {
    int r = c->nodes[master].reader;
    return r >= 0 ? r : cp__readfrom_fallback(c, master);
}

#endif
