/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Building the run list of a routing table (routes.h).
 */
#include "lib/routes.h"

void cp__routes_init(cp__routes *r) {
    for (int s = 0; s < CP_SLOTS; s++)
        r->node[s] = -1;
    cp__routes_rebuild(r);
}

void cp__routes_rebuild(cp__routes *r) {
    int n = 0;
    r->stale = 0;
    for (int s = 0; s < CP_SLOTS; s++) {
        if (s > 0 && r->node[s] == r->node[s - 1])
            continue;
        if (n == CP__ROUTE_RUNS) { /* fragmented (mid-migration): the table answers */
            r->nruns = 0;
            return;
        }
        r->first[n] = (uint16_t)s;
        r->owner[n] = r->node[s];
        n++;
    }
    r->nruns = n;
}
