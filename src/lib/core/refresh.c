/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The in-band slot-map refresh (refresh.h): its rounds, where the map is asked for, what its
 * answer does, and the command table read beside the first map. No I/O: the requests are
 * one-command batches that exec.c sends.
 */
#include "lib/base/alloc.h"
#include "lib/core/refresh.h"

#include "lib/core/batch.h"
#include "lib/cache/cache.h"
#include "lib/cmd/cmdtable.h"
#include "lib/client/fence.h"
#include "lib/client/lifecycle.h"
#include "lib/client/readfrom.h"
#include "util/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REFRESH_SPACING_NS 50000000ull /* between refreshes that MOVED or failures ask for */
#define REFRESH_RETRY_NS 100000000ull  /* after a refresh no node answered */
#define REFRESH_HEDGE_NS 200000000ull  /* no answer this long: ask the next candidate too */
#define REFRESH_MAX_OUT 3              /* refresh requests out at once, hedges included */
#define REFRESH_ROLE_RECHECKS 3        /* maps in a row asked of a node whose role is unsure */

/* ---- where the map is asked for, and what its answer does ---------------------------------- */

static int add_cand(cp__client *c, int n) {
    for (int i = 0; i < c->refresh.ncand; i++)
        if (c->refresh.cand[i] == n)
            return 0;
    if (c->refresh.ncand == c->refresh.capcand) {
        int ncap = c->refresh.capcand ? c->refresh.capcand * 2 : 16;
        int *v = cp__realloc(c->refresh.cand, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return CP_ENOMEM;
        c->refresh.cand = v;
        c->refresh.capcand = ncap;
    }
    c->refresh.cand[c->refresh.ncand++] = n;
    return 0;
}

/* Fills the candidate list for a new round (seeds become nodes here). 0 or CP_ENOMEM. */
static int plan(cp__client *c) {
    c->refresh.ncand = c->refresh.next = 0;
    c->refresh.err = 0;
    c->refresh.errstr[0] = '\0';
    /* A node whose role the last map left unsure knows its own best (apply_map). Then an idle
     * ready master answers soonest (nothing queued before the request, and it is not the
     * stalled one whose requests pile up), then other ready masters, other masters, the rest. */
    for (int pass = 0; pass < 5; pass++)
        for (int i = 0; i < c->nnodes; i++) {
            const cp__conn *conn = &c->nodes[i].conn;
            int ready = conn->state == CP__CONN_READY;
            int idle = ready && conn->fcount == 0 && c->nodes[i].q.n == 0;
            int want = pass == 0   ? c->nodes[i].role_unsure > 0
                       : pass == 1 ? c->nodes[i].is_master && idle
                       : pass == 2 ? c->nodes[i].is_master && ready
                       : pass == 3 ? c->nodes[i].is_master
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

/* The next node to ask, or -1 when every candidate has been tried. */
static int next(cp__client *c) {
    return c->refresh.next < c->refresh.ncand ? c->refresh.cand[c->refresh.next++] : -1;
}

/* The next candidate whose connection is ready (a hedge opens no new connection), or -1. */
static int next_ready(cp__client *c) {
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

/* The request for the map (CLUSTER SHARDS, or CLUSTER SLOTS for servers without it). */
static const char *request(const cp__client *c, size_t *len) {
    static const char shards[] = "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
    static const char slots[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    *len = c->no_shards ? sizeof(slots) - 1 : sizeof(shards) - 1;
    return c->no_shards ? slots : shards;
}

/* After a failover, a node that has heard from the new master but not yet from the old one sees
 * both as masters, the old one healthy and with no slot. A client whose map came from it would
 * keep a replica as a master for as long as no redirect asks for another map (never, once its
 * routes are right): its fan-outs (DBSIZE, KEYS) and SCANs would count the replica's copy of the
 * keys, and its buffers would be kept. So the map is asked for again, of that node first: its
 * own word on its role is the latest. role_unsure marks such a node: one map m (answered by node
 * `from`, its nodes at the client's indexes map[]) calls a healthy master with no slot while the
 * client's table gave it slots, or it was marked and the map still says so and did not come from
 * it (the recheck was answered by another node, as stale). At most REFRESH_ROLE_RECHECKS maps in a
 * row: a master emptied by resharding costs one map more (its own answer clears the mark), one
 * that does not answer a few. A failed master is not marked: its word cannot be had. Out of
 * memory, nothing is marked. */
static void mark_role_unsure(cp__client *c, const cp__slotmap *m, const int *map, int from) {
    uint8_t *had = cp__calloc((size_t)c->nnodes, 2);
    if (had == NULL) {
        for (int i = 0; i < c->nnodes; i++)
            c->nodes[i].role_unsure = 0;
        return;
    }
    uint8_t *has = had + c->nnodes;
    for (int s = 0; s < CP_SLOTS; s++) {
        if (c->slottab.node[s] >= 0)
            had[c->slottab.node[s]] = 1;
        if (m->owner[s] >= 0)
            has[map[m->owner[s]]] = 1;
    }
    for (int i = 0; i < c->nnodes; i++) {
        cp__node *node = &c->nodes[i];
        int unsure = node->is_master && node->healthy && !has[i] && i != from &&
                     (had[i] || node->role_unsure > 0) && node->role_unsure < REFRESH_ROLE_RECHECKS;
        node->role_unsure = unsure ? node->role_unsure + 1 : 0;
        c->refresh.recheck |= unsure;
    }
    cp__free(had);
}

/* Applies a parsed map, answered by node `from`: every node it names gets (or keeps) a stable
 * index here. */
static int apply_map(cp__client *c, const cp__slotmap *m, int from) {
    int idx[512];
    int *map = m->nnodes <= 512 ? idx : cp__malloc((size_t)m->nnodes * sizeof(int));
    if (map == NULL)
        return CP_ENOMEM;
    for (int i = 0; i < m->nnodes; i++) {
        map[i] = cp__client_node(c, m->nodes[i].host, m->nodes[i].port);
        if (map[i] < 0) {
            int rc = map[i];
            if (map != idx)
                cp__free(map);
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
    /* A node no longer a master keeps its connection (a read or a refresh may use it) but not
     * its buffers and its queue's ring while idle: they would otherwise pile up, one set per
     * node a failover ever made a master, in every client. */
    for (int i = 0; i < c->nnodes; i++)
        if (!c->nodes[i].is_master) {
            cp__conn_trim(&c->nodes[i].conn);
            cp__queue_trim(&c->nodes[i].q);
        }
    /* Commands still on a node that loses their slot would be overtaken by the slot's next
     * ones, routed to its new owner: the slot is fenced until that node answered them (out of
     * memory, it is not, and order across this change is not kept). */
    int16_t *before = NULL;
    for (int i = 0; i < c->nnodes && before == NULL; i++)
        if ((c->nodes[i].conn.fcount > 0 || c->nodes[i].q.n > 0) &&
            (before = cp__malloc(sizeof(c->slottab.node))) != NULL)
            memcpy(before, c->slottab.node, sizeof(c->slottab.node));
    mark_role_unsure(c, m, map, from);
    for (int s = 0; s < CP_SLOTS; s++) {
        int16_t owner = m->owner[s] < 0 ? -1 : (int16_t)map[m->owner[s]];
        /* Its entries' node lost it. (A slot no node served has no entries, and a read sent
         * for it went to no node: it waits for this map.) */
        if (c->cache != NULL && c->slottab.node[s] >= 0 && c->slottab.node[s] != owner)
            cp__cache_slot_moved(c->cache, s);
        c->slottab.node[s] = owner;
    }
    cp__slottab_rebuild(&c->slottab);
    if (before != NULL) {
        cp__fence_map_changed(c, before);
        cp__free(before);
    }
    cp__readfrom_pick(c, cp__now_ns());
    if (map != idx)
        cp__free(map);
    cp__lifecycle_map_applied(c); /* last: the events see the client as the map left it */
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

/* Node n answered r (NULL when the request got no answer: errstr says why). 0 when the map was
 * applied, 1 when the same node should be asked again (it lacks CLUSTER SHARDS: SLOTS from now
 * on), or a CP_E* code with the reason kept in c->refresh.errstr for the next candidate to
 * improve on. */
static int apply_reply(cp__client *c, int n, const redisReply *r, int err, const char *errstr) {
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
    rc = apply_map(c, &m, n);
    cp__slotmap_free(&m);
    if (rc != 0)
        return fail(c, rc, "out of memory");
    c->refresh.err = 0;
    c->refresh.errstr[0] = '\0';
    return 0;
}

/* ---- the rounds ------------------------------------------------------------------------------ */

/* The round is over (a map, or every candidate failed): commands waiting for it go on. */
static void round_end(cp__client *c, int ok, uint64_t now) {
    c->refresh.running = 0;
    c->refresh.hedge_at = 0;
    c->refresh.round++; /* answers still out belong to a round that is over */
    c->refresh.generation++;
    c->last_refresh_ns = now;
    c->refresh.not_before = now + (ok ? REFRESH_SPACING_NS : REFRESH_RETRY_NS);
    if (ok) {
        c->need_refresh = c->refresh.recheck; /* after the spacing: mark_role_unsure says why */
        c->refresh.recheck = 0;
    } else {
        cp__client_err(c, c->refresh.err ? c->refresh.err : CP_ETOPOLOGY,
                       "no node gave a slot map: %s", c->refresh.errstr);
    }
    for (cp_pipeline *p = c->running; p != NULL; p = p->next_run)
        if (p->wait_map) {
            p->wait_map = 0;
            p->retry_at = now; /* due: the next cp__exec_timers routes them */
            cp__batch_wake_at(c, now);
        }
}

int cp__refresh_begin(cp__client *c, uint64_t now) {
    if (!c->cluster || c->refresh.running || !c->need_refresh || now < c->refresh.not_before ||
        c->closing)
        return 0;
    if (plan(c) != 0) {
        c->refresh.err = CP_ENOMEM;
        return 0;
    }
    c->refresh.running = 1;
    c->refresh.out = 0;
    return 1;
}

/* A one-command batch of the library's own, to node n, its reply going to answered(data). */
static cp_pipeline *node_batch(cp__client *c, int n, const char *req, size_t len,
                               cp_callback *answered, void *data) {
    cp_pipeline *p = cp_pipeline_new(&c->pub);
    if (p != NULL && (p->cbs = cp__malloc(sizeof(*p->cbs))) != NULL)
        p->capcbs = 1; /* first: the free below frees it only then */
    if (p == NULL || p->cbs == NULL || cp_append_formatted(p, req, len) != 0) {
        cp_pipeline_free(p);
        return NULL;
    }
    p->kind = CP__BATCH_REFRESH;
    p->cbs[0] = (cp__cb){answered, data};
    p->cmds.v[0].slot = CP__SLOT_NODE;
    p->cmds.v[0].node = n;
    p->cmds.v[0].flags |= CP__F_READONLY;
    return p;
}

cp_pipeline *cp__refresh_ask(cp__client *c, uint64_t now, int hedge, cp_callback *answered) {
    if (c->closing || !c->refresh.running)
        return NULL;
    int n = c->refresh.out >= REFRESH_MAX_OUT ? -2 : hedge ? next_ready(c) : next(c);
    if (n < 0) {
        if (!hedge && n == -1 && c->refresh.out == 0)
            round_end(c, 0, now);
        c->refresh.hedge_at = 0;
        return NULL;
    }
    size_t len;
    const char *req = request(c, &len);
    uint64_t id = ((uint64_t)(c->refresh.round & 0xffffffffu) << 32) | (uint32_t)n;
    cp_pipeline *p = node_batch(c, n, req, len, answered, (void *)(uintptr_t)id);
    if (p == NULL) {
        c->refresh.err = CP_ENOMEM;
        if (c->refresh.out == 0)
            round_end(c, 0, now);
        return NULL;
    }
    c->stats.refreshes++;
    c->refresh.out++;
    c->refresh.hedge_at = now + REFRESH_HEDGE_NS;
    return p;
}

int cp__refresh_took(cp__client *c, void *data, const cp_response *r, uint64_t now, int *node) {
    uint64_t id = (uint64_t)(uintptr_t)data;
    int n = (int)(id & 0xffffffffu);
    *node = -1;
    if (!c->refresh.running || (unsigned)(id >> 32) != (c->refresh.round & 0xffffffffu) ||
        c->closing)
        return -1;
    c->refresh.out--;
    int rc = apply_reply(c, n, r->outcome == CP_DONE ? r->reply : NULL, r->err, r->errstr);
    if (rc == 0) {
        round_end(c, 1, now);
        *node = n;
        return 1;
    }
    if (rc == 1)
        c->refresh.next--; /* the same node again, with CLUSTER SLOTS */
    if (rc == CP_ENOMEM)
        c->refresh.next = c->refresh.ncand;
    return 0;
}

/* ---- the server's command table -------------------------------------------------------------- */

cp_pipeline *cp__cmdtab_ask(cp__client *c, int n, cp_callback *answered) {
    static const char req[] = "*1\r\n$7\r\nCOMMAND\r\n";
    if (c->cmdtab_state != 0 || c->closing)
        return NULL;
    cp_pipeline *p = node_batch(c, n, req, sizeof(req) - 1, answered, NULL);
    if (p != NULL)
        c->cmdtab_state = 1;
    return p;
}

void cp__cmdtab_took(cp__client *c, const cp_response *r) {
    if (c->closing)
        return;
    if (r->outcome != CP_DONE) {
        c->cmdtab_state = 0; /* asked again after the next map */
        return;
    }
    char err[CP_ERRSTR_LEN];
    cp__cmdtable *t = NULL;
    int rc = cp__cmdtable_parse(r->reply, &t, err, sizeof(err));
    if (rc == 0) {
        c->cmdtab = t;
        c->cmdtab_state = 2;
        c->stats.command_tables++;
    } else {
        c->cmdtab_state = rc == CP_ENOMEM ? 0 : 3;
    }
}
