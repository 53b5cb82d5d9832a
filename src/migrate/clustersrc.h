/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A cluster named as a source: "every master is a source". The addresses given are asked INFO
 * cluster (srcconn.h); when they are cluster nodes, the sources are the masters serving slots in
 * the slot map libclusterpipe reads from them (cp_node_get), each read on its own as a standalone
 * source is. Addresses of standalone servers stay as they are; a list mixing both is refused.
 * The map is read once: the source cluster must not reshard or fail over during a move (a key
 * moving between two of its masters would reach the target as a DEL and a RESTORE from two
 * streams, in an order not known).
 */
#ifndef CLUSTERPIPE_MIGRATE_CLUSTERSRC_H
#define CLUSTERPIPE_MIGRATE_CLUSTERSRC_H

#include <stddef.h>

#include "migrate/migrate.h"

typedef struct cp__sources {
    int n;
    char host[CP__MIGRATE_MAX_SOURCES][256];
    int port[CP__MIGRATE_MAX_SOURCES];
    int cluster; /* 1: the addresses were a cluster's nodes, the sources its masters */
} cp__sources;

/* The sources for the n addresses given (user, password, tls: theirs; user NULL: AUTH password
 * alone; tls NULL: plain TCP). 0, or -1 with err (an address unreachable or refusing, a mix of
 * cluster and standalone nodes, a cluster whose map cannot be read or has more than
 * CP__MIGRATE_MAX_SOURCES masters). */
int cp__sources_resolve(const char *const *hosts, const int *ports, int n, const char *user,
                        const char *password, const cp_options *tls, int timeout_ms,
                        cp__sources *out, char *err, size_t errlen);

#endif
