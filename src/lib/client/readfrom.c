/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The read_from policy's choice of replicas (readfrom.h). No I/O.
 */
#include "lib/client/readfrom.h"

#include "util/clock.h"

/* A replica of master m that may serve reads now, other than `not`, chosen at random among
 * those; -1 when there is none. */
static int choose(cp__client *c, int m, int not, uint64_t now) {
    int count = 0;
    for (int i = 0; i < c->nnodes; i++) {
        const cp__node *r = &c->nodes[i];
        count += i != not &&r->master == m && r->healthy && r->read_down_until <= now;
    }
    if (count == 0)
        return -1;
    uint32_t k = cp__client_rand(c, (uint32_t)count);
    for (int i = 0; i < c->nnodes; i++) {
        const cp__node *r = &c->nodes[i];
        if (i != not &&r->master == m && r->healthy && r->read_down_until <= now && k-- == 0)
            return i;
    }
    return -1; /* not reached */
}

/* The earliest time a replica left out of the reads may serve them again, for a master that
 * has no reader now (0: no such replica): then the map is read again. */
static uint64_t recheck_at(const cp__client *c, uint64_t now) {
    uint64_t at = 0;
    for (int i = 0; i < c->nnodes; i++) {
        const cp__node *r = &c->nodes[i];
        if (r->master >= 0 && r->read_down_until > now && c->nodes[r->master].reader < 0 &&
            (at == 0 || r->read_down_until < at))
            at = r->read_down_until;
    }
    return at;
}

void cp__readfrom_pick(cp__client *c, uint64_t now) {
    for (int m = 0; m < c->nnodes; m++) {
        int keep = c->nodes[m].reader; /* the same replica while it is still one, and usable */
        if (!c->nodes[m].is_master || c->read_from == CP_READ_MASTER) {
            c->nodes[m].reader = -1;
        } else if (keep < 0 || c->nodes[keep].master != m || !c->nodes[keep].healthy ||
                   c->nodes[keep].read_down_until > now) {
            c->nodes[m].reader = choose(c, m, -1, now);
        }
    }
    c->read_recheck_at = c->read_from == CP_READ_MASTER ? 0 : recheck_at(c, now);
}

void cp__readfrom_failed(cp__client *c, int n, uint64_t now) {
    if (c->read_from == CP_READ_MASTER || c->nodes[n].master < 0)
        return;
    c->nodes[n].read_down_until = now + CP__READ_DOWN_NS;
    int m = c->nodes[n].master;
    if (c->nodes[m].reader == n)
        c->nodes[m].reader = choose(c, m, n, now);
    c->read_recheck_at = recheck_at(c, now);
}

int cp__readfrom_fallback(cp__client *c, int master) {
    if (c->read_recheck_at != 0 && cp__now_ns() >= c->read_recheck_at) {
        c->read_recheck_at = 0;
        c->need_refresh = 1; /* the next batch re-reads the map: the replica may be back */
    }
    return c->read_from == CP_READ_REPLICA ? CP__READ_NONE : master;
}
