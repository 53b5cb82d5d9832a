/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The slot table of a client: slot -> index into its nodes[], built from the last slot map (a
 * cp__slotmap, topology.h, which indexes its own node list) and patched by MOVED. The full
 * 16384-entry table is authoritative; while it has few runs of slots with one owner (a healthy
 * cluster has one run per master), a copy of it as a sorted run list answers lookups instead.
 * Routing does one lookup per command at a random slot, and with many clients per process (and
 * the servers on the same cores) the 32 KiB table is cold: every lookup missed the cache. The run
 * list fits in two cache lines.
 *
 * A MOVED patches one slot and drops to table lookups until the next rebuild (before the next
 * batch, when the map is re-read anyway). One thread, owned by its client.
 */
#ifndef CLUSTERPIPE_SLOTTAB_H
#define CLUSTERPIPE_SLOTTAB_H

#include <stdint.h>

#include "clusterpipe/clusterpipe.h"

#define CP__SLOTTAB_RUNS 32

typedef struct cp__slottab {
    int nruns;                        /* runs in first/owner; 0: use node[] */
    int stale;                        /* node[] changed since the runs were built */
    uint16_t first[CP__SLOTTAB_RUNS]; /* first slot of each run, ascending; first[0] == 0 */
    int16_t owner[CP__SLOTTAB_RUNS];
    int16_t node[CP_SLOTS]; /* node index per slot, -1 when unknown */
} cp__slottab;

/* Every slot unknown. */
void cp__slottab_init(cp__slottab *r);

/* Rebuilds the run list from node[] (after node[] was filled, or when stale). */
void cp__slottab_rebuild(cp__slottab *r);

/* One slot changed owner (MOVED): table lookups until the next rebuild. */
static inline void cp__slottab_patch(cp__slottab *r, int slot, int node) {
    r->node[slot] = (int16_t)node;
    r->nruns = 0;
    r->stale = 1;
}

/* Node index serving slot, or -1. */
static inline int cp__slottab_lookup(const cp__slottab *r, int slot) {
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
