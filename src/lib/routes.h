/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slot -> node routing table of a client. The full 16384-entry table is authoritative; while the
 * map has few runs of slots with one owner (a healthy cluster has one run per master), a copy of
 * it as a sorted run list answers lookups instead. Routing does one lookup per command at a
 * random slot, and with many clients per process (and the servers on the same cores) the 32 KiB
 * table is cold: every lookup missed the cache. The run list fits in two cache lines.
 *
 * A MOVED patches one slot and drops to table lookups until the next rebuild (before the next
 * batch, when the map is re-read anyway). One thread, owned by its client.
 */
#ifndef CLUSTERPIPE_ROUTES_H
#define CLUSTERPIPE_ROUTES_H

#include <stdint.h>

#include "clusterpipe/clusterpipe.h"

#define CP__ROUTE_RUNS 32

typedef struct cp__routes {
    int nruns;                      /* runs in first/owner; 0: use node[] */
    int stale;                      /* node[] changed since the runs were built */
    uint16_t first[CP__ROUTE_RUNS]; /* first slot of each run, ascending; first[0] == 0 */
    int16_t owner[CP__ROUTE_RUNS];
    int16_t node[CP_SLOTS]; /* node index per slot, -1 when unknown */
} cp__routes;

/* Every slot unknown. */
void cp__routes_init(cp__routes *r);

/* Rebuilds the run list from node[] (after node[] was filled, or when stale). */
void cp__routes_rebuild(cp__routes *r);

/* One slot changed owner (MOVED): table lookups until the next rebuild. */
static inline void cp__routes_patch(cp__routes *r, int slot, int node) {
    r->node[slot] = (int16_t)node;
    r->nruns = 0;
    r->stale = 1;
}

/* Node index serving slot, or -1. */
static inline int cp__routes_lookup(const cp__routes *r, int slot) {
    int n = r->nruns;
    if (n == 0)
        return r->node[slot];
    int lo = 0; /* invariant: first[lo] <= slot, answer in [lo, lo + n) */
    while (n > 1) {
        int half = n / 2;
        if (r->first[lo + half] <= slot)
            lo += half;
        n -= half;
    }
    return r->owner[lo];
}

#endif
