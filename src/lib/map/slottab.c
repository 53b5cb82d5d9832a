/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Building the run list of a slot table (slottab.h).
 */
#include "lib/map/slottab.h"

void cp__slottab_init(cp__slottab *r) {
    for (int s = 0; s < CP_SLOTS; s++)
        r->node[s] = -1;
    cp__slottab_rebuild(r);
}

void cp__slottab_rebuild(cp__slottab *r) {
    int n = 0;
    r->stale = 0;
    for (int s = 0; s < CP_SLOTS; s++) {
        if (s > 0 && r->node[s] == r->node[s - 1])
            continue;
        if (n == CP__SLOTTAB_RUNS) { /* fragmented (mid-migration): the table answers */
            r->nruns = 0;
            return;
        }
        r->first[n] = (uint16_t)s;
        r->owner[n] = r->node[s];
        n++;
    }
    r->nruns = n;
}
