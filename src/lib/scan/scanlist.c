/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Phase 2 of a cluster SCAN (scanlist.h; scan.c says what the phases guarantee): every slot
 * phase 1 did not certify is listed at the master that serves it now, CLUSTER COUNTKEYSINSLOT
 * then MULTI, CLUSTER NODES, CLUSTER GETKEYSINSLOT, EXEC, in chunks of slots of one node; the
 * node's view certifies the listing or says where to list it next, with a growing pause while
 * nothing is certified; half-migrated slots are certified by their two nodes together (pairs);
 * MATCH is applied here (glob.h) and TYPE by a TYPE per key (the scan's second pipeline). The
 * slot tables and groups are the scan's (cp_scan_new, cp_scan_free). One thread, the client's.
 */
#include "lib/scan/scanlist.h"

#include "lib/proto/glob.h"
#include "lib/scan/scanstep.h"
#include "util/clock.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

#define PAUSE_MAX_MS 64 /* longest pause between phase-2 listings that certified nothing */
#define TYPE_CHUNK 1024 /* TYPEs per round trip: an async scan stays well under max_pending */
#define PAIR_AFTER 3    /* such listings in a row before half-migrated slots are tried in pairs */

int cp__scan_reread_start(cp_scan *s) {
    cp__client *c = s->c;
    if (s->sub == CP__SCAN_S_BEGIN) {
        int left = 0;
        for (int slot = 0; slot < CP_SLOTS; slot++)
            left += !s->done[slot];
        if (left == 0) {
            s->phase = CP__SCAN_PH_DONE;
            return CP__SCAN_STEP_ON;
        }
        s->sub = CP__SCAN_S_REFRESHED;
        return CP__SCAN_ASK_REFRESH;
    }
    s->sub = CP__SCAN_S_BEGIN;
    int any = cp__client_any_node(c);
    for (int slot = 0; slot < CP_SLOTS; slot++) {
        int owner = c->slottab.node[slot];
        s->from[slot] = (int16_t)(owner >= 0 ? owner : any);
        s->pair_to[slot] = -1;
    }
    s->stalls = 0;
    s->next_slot = 0;
    s->progress_ns = cp__now_ns();
    s->phase = CP__SCAN_PH_REREAD;
    return CP__SCAN_STEP_ON;
}

/* GETKEYSINSLOT's room for a slot whose COUNTKEYSINSLOT said n: twice that (a listing that
 * fills it may be incomplete and certifies nothing). Redis before 7 allocates it up front. */
static long long listing_room(long long n) {
    return n < 0 ? 16 : n > LLONG_MAX / 4 ? LLONG_MAX / 2 : n * 2 + 16;
}

/* The groups of the listing under way: the pairs' (with their nodes' MIGRATE counts), or the
 * chunk's one. */
static int listed_groups(const cp_scan *s) {
    return s->pairs ? s->ng : 1;
}

/* Round trip `pass` of listing the groups' slots at their nodes: [INFO commandstats,]
 * COUNTKEYSINSLOT per slot (0); MULTI, CLUSTER NODES, GETKEYSINSLOT per slot, EXEC
 * [, INFO commandstats] (1). The EXEC replies stay in s->p (g->exec_at). */
static int list_pass(cp_scan *s, int pass) {
    cp_pipeline *p = s->p;
    cp__scan_group *g = s->groups;
    int ng = listed_groups(s), with_calls = s->pairs, rc = 0;
    cp_pipeline_reset(p);
    for (int j = 0; j < ng && rc == 0; j++) {
        if (with_calls && pass == 0)
            rc = cp__scan_append_node_fmt(p, g[j].node, "INFO commandstats");
        if (rc == 0 && pass == 1)
            rc = cp__scan_append_node_fmt(p, g[j].node, "MULTI");
        if (rc == 0 && pass == 1)
            rc = cp__scan_append_node_fmt(p, g[j].node, "CLUSTER NODES");
        g[j].exec_at = cp_count(p);
        for (int i = 0; i < g[j].k && rc == 0; i++)
            rc = pass == 0 ? cp__scan_append_node_fmt(p, g[j].node, "CLUSTER COUNTKEYSINSLOT %d",
                                                      g[j].slots[i])
                           : cp__scan_append_node_fmt(p, g[j].node, "CLUSTER GETKEYSINSLOT %d %lld",
                                                      g[j].slots[i], g[j].max[i]);
        if (rc == 0 && pass == 1) {
            g[j].exec_at = cp_count(p);
            rc = cp__scan_append_node_fmt(p, g[j].node, "EXEC");
        }
        if (rc == 0 && with_calls && pass == 1)
            rc = cp__scan_append_node_fmt(p, g[j].node, "INFO commandstats");
    }
    if (rc != 0)
        return cp__scan_err(s, rc, "cannot queue: %s", cp_strerror(rc));
    s->run = p;
    s->sub = pass == 0 ? CP__SCAN_S_COUNTED : CP__SCAN_S_LISTED;
    return CP__SCAN_ASK_RUN;
}

/* What round trip `pass` answered: the nodes' MIGRATE counts, and each slot's room (0). */
static int list_take(cp_scan *s, int pass) {
    cp_pipeline *p = s->p;
    cp__scan_group *g = s->groups;
    int ng = listed_groups(s), with_calls = s->pairs;
    for (int j = 0; j < ng; j++) {
        if (with_calls)
            *(pass == 0 ? &g[j].calls0 : &g[j].calls1) = cp__scan_migrate_calls(
                cp_reply(p, pass == 0 ? g[j].exec_at - 1 : g[j].exec_at + 1));
        for (int i = 0; i < g[j].k && pass == 0; i++) {
            const redisReply *r = cp__scan_reply(s, p, g[j].exec_at + (size_t)i, g[j].node);
            if (r == NULL)
                return s->c->pub.err;
            g[j].max[i] = listing_room(r->type == REDIS_REPLY_INTEGER ? r->integer : -1);
        }
    }
    return 0;
}

/* Group g's EXEC reply: [view, keys of its slot 0, ...]; NULL with the error set when it is
 * not that (EXECABORT, a command refused). */
static const redisReply *listing(cp_scan *s, const cp__scan_group *g) {
    char name[CP__HOSTLEN + 8];
    const redisReply *r = cp__scan_reply(s, s->p, g->exec_at, g->node);
    if (r == NULL)
        return NULL;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)g->k + 1;
    for (int i = 0; ok && i < g->k; i++)
        ok = r->element[i + 1]->type == REDIS_REPLY_ARRAY;
    if (ok)
        return r;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR) {
            r = r->element[i];
            break;
        }
    cp__scan_err(s, CP_ESERVER, "%s: listing slots: %.160s",
                 cp__scan_node_name(s->c, g->node, name, sizeof(name)),
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer");
    return NULL;
}

/* 1 when listing i of group g fits its room (so it holds every key of the slot). */
static int whole(const cp__scan_group *g, const redisReply *r, int i) {
    return (long long)r->element[i + 1]->elements < g->max[i];
}

/* Adds the keys of a certified listing that pass MATCH (TYPE comes after). */
static int add_listed(cp_scan *s, const redisReply *keys) {
    for (size_t j = 0; j < keys->elements; j++) {
        const redisReply *k = keys->element[j];
        if (k->type == REDIS_REPLY_STRING && s->match != NULL &&
            !cp__glob_match(s->match, s->matchlen, k->str, (size_t)k->len))
            continue;
        if (cp__scan_add_key(s, k) != 0)
            return s->c->pub.err;
    }
    return 0;
}

/* A slot listed at n without a certificate: the node to list it next, per n's view v (NULL: the
 * client's map). A slot n migrates becomes a candidate for the pair certificate. */
static int next_lister(cp_scan *s, int n, const cp__nodesview *v, int slot) {
    cp__client *c = s->c;
    int to = -1;
    if (v != NULL && v->moving[slot] != 0 && v->peer[slot] >= 0)
        to = v->peer[slot]; /* the target of its migration, or the source of its import */
    else if (v != NULL && v->map.owner[slot] >= 0 && v->map.owner[slot] != v->myself)
        to = v->map.owner[slot];
    if (to >= 0 && (to = cp__scan_client_node(s, v, to)) < 0)
        return cp__scan_err(s, to, "cannot add a node: %s", cp_strerror(to));
    s->pair_to[slot] = -1;
    if (to >= 0 && v->moving[slot] == CP__SLOT_MIGRATING && v->map.owner[slot] == v->myself) {
        s->pair_from[slot] = (int16_t)n;
        s->pair_to[slot] = (int16_t)to;
    }
    if (to < 0)
        to = c->slottab.node[slot] >= 0 ? c->slottab.node[slot] : cp__client_any_node(c);
    s->from[slot] = (int16_t)to;
    return 0;
}

/* Slot `slot` certified by the step. */
static void certify(cp_scan *s, int slot) {
    s->done[slot] = 1;
    s->st.slots_reread++;
    s->stalls = -1; /* the step's end makes it 0 */
    s->progress_ns = cp__now_ns();
}

/* The next chunk: up to CHUNK slots without a certificate that are listed at one node, from
 * s->next_slot on (so slots that wait do not hold up the others). g->k == 0: none is left. */
static void next_chunk(cp_scan *s, cp__scan_group *g) {
    g->k = 0;
    for (int i = 0; i < CP_SLOTS && g->k < CP__SCAN_CHUNK; i++) {
        int slot = (s->next_slot + i) % CP_SLOTS;
        if (s->done[slot] || (g->k > 0 && s->from[slot] != g->node))
            continue;
        g->node = s->from[slot];
        g->slots[g->k++] = slot;
    }
    if (g->k > 0)
        s->next_slot = (g->slots[g->k - 1] + 1) % CP_SLOTS;
}

/* The group of node n among g[0..*ng), added when missing. */
static cp__scan_group *group_of(cp__scan_group *g, int *ng, int n) {
    for (int j = 0; j < *ng; j++)
        if (g[j].node == n)
            return &g[j];
    g[*ng] = (cp__scan_group){.node = n};
    return &g[(*ng)++];
}

static int typed(cp_scan *s);

/* The TYPE filter's next round trip: the next TYPE_CHUNK keys gathered (routed: a key that
 * moved is found). Without a filter, or keys left to check, straight on to typed(). */
static int type_more(cp_scan *s) {
    s->sub = CP__SCAN_S_TYPED;
    s->typing = 0;
    if (s->type == NULL || s->typed_at == s->nkeys)
        return typed(s);
    cp_pipeline *tp = s->tp;
    cp_pipeline_reset(tp);
    size_t end = s->nkeys - s->typed_at > TYPE_CHUNK ? s->typed_at + TYPE_CHUNK : s->nkeys;
    for (size_t i = s->typed_at; i < end; i++) {
        int rc = cp_append(tp, "TYPE %b", s->keys[i]->str, (size_t)s->keys[i]->len);
        if (rc != 0)
            return cp__scan_err(s, rc, "cannot queue TYPE: %s", cp_strerror(rc));
    }
    s->typing = end - s->typed_at;
    s->run = tp;
    return CP__SCAN_ASK_RUN;
}

/* The TYPE filter for the keys gathered, chunk by chunk. */
static int type_ask(cp_scan *s) {
    s->typed_at = s->typed_kept = 0;
    return type_more(s);
}

/* Keeps the keys of the chunk just asked about whose TYPE is the filter's (moved to the front,
 * in order); once every chunk is in, those are the batch's keys. */
static int type_take(cp_scan *s) {
    if (s->type == NULL)
        return 0;
    for (size_t i = 0; i < s->typing; i++) {
        const redisReply *t = cp_reply(s->tp, i);
        if (t->type == REDIS_REPLY_ERROR)
            return cp__scan_err(s, CP_ESERVER, "TYPE: %.160s", t->str);
        if (t->str != NULL && strcasecmp(t->str, s->type) == 0)
            s->keys[s->typed_kept++] = s->keys[s->typed_at + i];
    }
    s->typed_at += s->typing;
    s->typing = 0;
    if (s->typed_at == s->nkeys)
        s->nkeys = s->typed_kept;
    return 0;
}

static int chunk_ask(cp_scan *s) {
    s->pairs = 0;
    return list_pass(s, 0);
}

/* Half-migrated slots certified in pairs: slot i migrates from A to B; both are listed (counts
 * first on both, then both listings, each followed by the node's count again). The slot's keys
 * are A's and B's when neither ran a MIGRATE between its two counts, A's view says MIGRATING
 * to B and B's IMPORTING from A. Each candidate gets one try per time a listing flags it. */
static int pairs_ask(cp_scan *s) {
    int k = 0, ng = 0;
    for (int slot = 0; slot < CP_SLOTS && k < CP__SCAN_PAIRS; slot++)
        if (!s->done[slot] && s->pair_to[slot] >= 0) {
            s->pslot[k] = slot;
            s->pa[k] = s->pair_from[slot];
            s->pb[k++] = s->pair_to[slot];
            s->pair_to[slot] = -1;
        }
    s->npairs = k;
    if (k == 0) {
        next_chunk(s, &s->groups[0]);
        return chunk_ask(s);
    }
    cp__scan_group *g = s->groups;
    for (int i = 0; i < k; i++)
        for (int e = 0; e < 2; e++) {
            cp__scan_group *x = group_of(g, &ng, e == 0 ? s->pa[i] : s->pb[i]);
            x->slots[x->k++] = s->pslot[i];
        }
    s->ng = ng;
    s->pairs = 1;
    return list_pass(s, 0);
}

/* The pairs' listings: per candidate the sides that hold, and the keys of those held by both. */
static int pairs_listed(cp_scan *s) {
    cp__scan_group *g = s->groups;
    int rc = 0;
    memset(s->held, 0, sizeof(s->held));
    for (int j = 0; j < s->ng; j++) {
        const redisReply *r = listing(s, &g[j]);
        if (r == NULL)
            return s->c->pub.err;
        if (g[j].calls0 < 0 || g[j].calls1 != g[j].calls0 ||
            cp__scan_read_view(s, r->element[0], g[j].node) != 0)
            continue;
        const cp__nodesview *v = s->view;
        for (int pos = 0; pos < g[j].k; pos++) {
            int i = 0, slot = g[j].slots[pos], peer = v->peer[slot];
            while (s->pslot[i] != slot)
                i++;
            int is_a = g[j].node == s->pa[i], other = is_a ? s->pb[i] : s->pa[i];
            if (!whole(&g[j], r, pos) || peer < 0 || cp__scan_client_node(s, v, peer) != other)
                continue;
            if (is_a && v->moving[slot] == CP__SLOT_MIGRATING && v->map.owner[slot] == v->myself)
                s->held[i] |= 1;
            if (!is_a && v->moving[slot] == CP__SLOT_IMPORTING)
                s->held[i] |= 2;
        }
        cp__slotmap_free(&s->view->map);
    }
    for (int j = 0; j < s->ng && rc == 0; j++) {
        const redisReply *r = cp_reply(s->p, g[j].exec_at);
        for (int pos = 0; pos < g[j].k && rc == 0; pos++) {
            int i = 0;
            while (s->pslot[i] != g[j].slots[pos])
                i++;
            if (s->held[i] == 3)
                rc = add_listed(s, r->element[pos + 1]);
        }
    }
    return rc != 0 ? rc : type_ask(s);
}

/* The pairs' certificates; when none came, the chunk is listed in the same step. */
static int pairs_done(cp_scan *s) {
    for (int i = 0; i < s->npairs; i++)
        if (s->held[i] == 3)
            certify(s, s->pslot[i]);
    if (s->stalls < 0) { /* it certified some */
        s->stalls = 0;
        s->sub = CP__SCAN_S_BEGIN;
        return CP__SCAN_STEP_ON;
    }
    next_chunk(s, &s->groups[0]); /* the pairs used the groups */
    return chunk_ask(s);
}

/* The chunk listed at its node: certified where the node's view serves the slot unmarked (or
 * nobody serves it, in that view and in the client's map); their keys go in the batch. */
static int chunk_listed(cp_scan *s) {
    cp__scan_group *g = &s->groups[0];
    const redisReply *r = listing(s, g);
    if (r == NULL)
        return s->c->pub.err;
    cp__nodesview *v = cp__scan_read_view(s, r->element[0], g->node) == 0 ? s->view : NULL;
    s->chunk_view = v != NULL;
    int rc = 0;
    for (int i = 0; i < g->k && rc == 0; i++) {
        int slot = g->slots[i];
        s->ok[i] = v != NULL && whole(g, r, i) &&
                   (cp__scan_serves(v, slot) || (v->map.owner[slot] < 0 && v->moving[slot] == 0 &&
                                                 s->c->slottab.node[slot] < 0));
        if (s->ok[i])
            rc = add_listed(s, r->element[i + 1]);
    }
    return rc != 0 ? rc : type_ask(s);
}

/* The chunk's certificates, and where its other slots are listed next (per the view). */
static int chunk_done(cp_scan *s) {
    cp__scan_group *g = &s->groups[0];
    cp__nodesview *v = s->chunk_view ? s->view : NULL;
    int rc = 0;
    for (int i = 0; i < g->k && rc == 0; i++)
        rc = s->ok[i] ? (certify(s, g->slots[i]), 0) : next_lister(s, g->node, v, g->slots[i]);
    if (v != NULL)
        cp__slotmap_free(&v->map);
    s->chunk_view = 0;
    if (rc != 0)
        return rc;
    s->stalls++;
    s->sub = CP__SCAN_S_BEGIN;
    return CP__SCAN_STEP_ON;
}

/* A listing's batch (TYPE filtered, copied out; on failure nothing of it is kept), then its
 * certificates. */
static int typed(cp_scan *s) {
    int rc = type_take(s);
    if (rc == 0 && s->type != NULL && s->typed_at < s->nkeys)
        return type_more(s);
    if (rc == 0)
        rc = cp__scan_emit(s);
    s->nkeys = 0;
    if (rc != 0)
        return rc;
    return s->pairs ? pairs_done(s) : chunk_done(s);
}

/* A step of phase 2: the next chunk, after a pause while listings certify nothing, and after
 * the half-migrated slots' pairs once that lasts. */
static int reread_begin(cp_scan *s) {
    cp__scan_group *g = &s->groups[0];
    next_chunk(s, g);
    if (g->k == 0) {
        s->phase = CP__SCAN_PH_DONE;
        return CP__SCAN_STEP_ON;
    }
    if (s->stalls > 0) {
        uint64_t now = cp__now_ns(), waited_ms = (now - s->progress_ns) / 1000000u;
        if (waited_ms > (uint64_t)s->c->retry_budget_ms) {
            s->progress_ns = now; /* the next call lists again, with a budget of its own */
            return cp__scan_err(
                s, CP_ETIMEDOUT,
                "slot %d could not be listed whole at the node serving it for %d ms "
                "(it stays MIGRATING/IMPORTING, or the nodes disagree who serves it)",
                g->slots[0], s->c->retry_budget_ms);
        }
        s->pause_ms = s->stalls >= 7 ? PAUSE_MAX_MS : 1L << (s->stalls - 1);
        s->sub = CP__SCAN_S_PAUSED;
        return CP__SCAN_ASK_PAUSE;
    }
    return s->stalls >= PAIR_AFTER ? pairs_ask(s) : chunk_ask(s);
}

int cp__scan_reread_step(cp_scan *s) {
    int rc;
    switch (s->sub) {
    case CP__SCAN_S_BEGIN:
        return reread_begin(s);
    case CP__SCAN_S_PAUSED:
        return s->stalls >= PAIR_AFTER ? pairs_ask(s) : chunk_ask(s);
    case CP__SCAN_S_COUNTED:
        return (rc = list_take(s, 0)) != 0 ? rc : list_pass(s, 1);
    case CP__SCAN_S_LISTED:
        if ((rc = list_take(s, 1)) != 0)
            return rc;
        return s->pairs ? pairs_listed(s) : chunk_listed(s);
    default: /* S_TYPED */
        return typed(s);
    }
}
