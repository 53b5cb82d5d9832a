/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The slot-map refresh's sources and answers (refresh.h). No I/O.
 */
#include "lib/refresh.h"

#include "lib/readfrom.h"
#include "util/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_cand(cp__client *c, int n) {
    for (int i = 0; i < c->refresh.ncand; i++)
        if (c->refresh.cand[i] == n)
            return 0;
    if (c->refresh.ncand == c->refresh.capcand) {
        int ncap = c->refresh.capcand ? c->refresh.capcand * 2 : 16;
        int *v = realloc(c->refresh.cand, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return CP_ENOMEM;
        c->refresh.cand = v;
        c->refresh.capcand = ncap;
    }
    c->refresh.cand[c->refresh.ncand++] = n;
    return 0;
}

int cp__refresh_plan(cp__client *c) {
    c->refresh.ncand = c->refresh.next = 0;
    c->refresh.err = 0;
    c->refresh.errstr[0] = '\0';
    /* An idle ready master answers soonest (nothing queued before the request, and it is not
     * the stalled one whose requests pile up), then other ready masters, other masters, the
     * rest. */
    for (int pass = 0; pass < 4; pass++)
        for (int i = 0; i < c->nnodes; i++) {
            const cp__conn *conn = &c->nodes[i].conn;
            int ready = conn->state == CP__CONN_READY;
            int idle = ready && conn->fcount == 0 && c->nodes[i].q.n == 0;
            int want = pass == 0   ? c->nodes[i].is_master && idle
                       : pass == 1 ? c->nodes[i].is_master && ready
                       : pass == 2 ? c->nodes[i].is_master
                                   : 1;
            if (want && add_cand(c, i) != 0)
                return CP_ENOMEM;
        }
    for (int i = 0; i < c->nseeds; i++) {
        int n = cp__client_node(c, c->seed_host[i], c->seed_port[i]);
        if (n < 0 || add_cand(c, n) != 0)
            return CP_ENOMEM;
    }
    return 0;
}

int cp__refresh_next(cp__client *c) {
    return c->refresh.next < c->refresh.ncand ? c->refresh.cand[c->refresh.next++] : -1;
}

int cp__refresh_next_ready(cp__client *c) {
    for (int i = c->refresh.next; i < c->refresh.ncand; i++) {
        int n = c->refresh.cand[i];
        if (c->nodes[n].conn.state == CP__CONN_READY) {
            c->refresh.cand[i] = c->refresh.cand[c->refresh.next]; /* asked now: out of order */
            c->refresh.cand[c->refresh.next++] = n;
            return n;
        }
    }
    return -1;
}

const char *cp__refresh_request(const cp__client *c, size_t *len) {
    static const char shards[] = "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
    static const char slots[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    *len = c->no_shards ? sizeof(slots) - 1 : sizeof(shards) - 1;
    return c->no_shards ? slots : shards;
}

/* Applies a parsed map: every node it names gets (or keeps) a stable index here. */
static int apply_map(cp__client *c, const cp__slotmap *m) {
    int idx[512];
    int *map = m->nnodes <= 512 ? idx : malloc((size_t)m->nnodes * sizeof(int));
    if (map == NULL)
        return CP_ENOMEM;
    for (int i = 0; i < m->nnodes; i++) {
        map[i] = cp__client_node(c, m->nodes[i].host, m->nodes[i].port);
        if (map[i] < 0) {
            int rc = map[i];
            if (map != idx)
                free(map);
            return rc;
        }
    }
    for (int i = 0; i < c->nnodes; i++) {
        c->nodes[i].is_master = 0;
        c->nodes[i].master = -1;
        c->nodes[i].healthy = 0;
    }
    for (int i = 0; i < m->nnodes; i++) {
        c->nodes[map[i]].healthy = m->nodes[i].healthy;
        if (m->nodes[i].master < 0)
            c->nodes[map[i]].is_master = 1;
        else
            c->nodes[map[i]].master = map[m->nodes[i].master];
    }
    for (int s = 0; s < CP_SLOTS; s++)
        c->routes.node[s] = m->owner[s] < 0 ? -1 : (int16_t)map[m->owner[s]];
    cp__routes_rebuild(&c->routes);
    cp__readfrom_pick(c, cp__now_ns());
    if (map != idx)
        free(map);
    return 0;
}

/* Keeps the most useful reason of a refresh's attempts: the first, unless a later one is an
 * authentication failure (what the user must fix). */
static int fail(cp__client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(cp__client *c, int code, const char *fmt, ...) {
    if (c->refresh.err == 0 || (code == CP_EAUTH && c->refresh.err != CP_EAUTH)) {
        va_list ap;
        va_start(ap, fmt);
        c->refresh.err = code;
        vsnprintf(c->refresh.errstr, sizeof(c->refresh.errstr), fmt, ap);
        va_end(ap);
    }
    return code;
}

int cp__refresh_answer(cp__client *c, int n, const redisReply *r, int err, const char *errstr) {
    const char *host = c->nodes[n].host;
    int port = c->nodes[n].port;
    if (r == NULL)
        return fail(c, err ? err : CP_ETOPOLOGY, "%s", errstr); /* it names the node */
    if (r->type == REDIS_REPLY_ERROR && !c->no_shards &&
        (strstr(r->str, "unknown subcommand") || strstr(r->str, "Unknown subcommand"))) {
        c->no_shards = 1;
        return 1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        int rc = strstr(r->str, "NOAUTH") || strstr(r->str, "WRONGPASS") ? CP_EAUTH : CP_ETOPOLOGY;
        return fail(c, rc, "%s:%d: %.80s", host, port, r->str);
    }
    cp__slotmap m;
    memset(&m, 0, sizeof(m));
    char why[CP_ERRSTR_LEN];
    int rc = c->no_shards
                 ? cp__topo_parse_slots(r, host, &m, why, sizeof(why))
                 : cp__topo_parse_shards(r, host, c->copts.tls != NULL, &m, why, sizeof(why));
    if (rc != 0)
        return fail(c, rc, "%s:%d: %s", host, port, why);
    if (cp__slotmap_covered(&m) == 0) {
        cp__slotmap_free(&m);
        return fail(c, CP_ETOPOLOGY, "%s:%d: no slot is assigned", host, port);
    }
    rc = apply_map(c, &m);
    cp__slotmap_free(&m);
    if (rc != 0)
        return fail(c, rc, "out of memory");
    c->refresh.err = 0;
    c->refresh.errstr[0] = '\0';
    return 0;
}
