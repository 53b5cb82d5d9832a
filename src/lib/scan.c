/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The cluster SCAN (cp_scan_*): every key of every master, with Redis's SCAN guarantee for the
 * whole cluster (a key present from the first call to the last is returned at least once) while
 * slots migrate. A blocking client (cp_scan_next) or an event-loop one (cp_scan_next_async).
 * The iterator owns two pipelines on the client (freed with it, before the client), its slot
 * tables and the batch it builds; each batch handed out is the caller's. One thread at a time,
 * the client's.
 *
 * Two phases. A key is certain to be returned when its slot gets a certificate, and the scan
 * ends only when all 16384 slots have one (docs/commands.md, "Cluster SCAN", says what holds).
 *
 * 1. Every master of the map read at the first call is walked with SCAN cursor [MATCH] [COUNT]
 *    [TYPE] until the cursor comes back 0. In the same pipeline as its first SCAN the master is
 *    asked, in this order, for its MIGRATE count (INFO commandstats: keys leave a node only by
 *    MIGRATE) and its own view (CLUSTER NODES); after its last SCAN for both again. A slot the
 *    master served in both views without a MIGRATING/IMPORTING mark, while its MIGRATE count did
 *    not move, is certified: when the walk started every key of the slot was on that master
 *    (resharding moves keys only out of a MIGRATING slot, and sets the new owner only once they
 *    all arrived), none left it during the walk, and SCAN returns every key that stays on the
 *    node from its first call to its last.
 * 2. Every other slot is listed at the master that serves it now: CLUSTER COUNTKEYSINSLOT, then
 *    MULTI, CLUSTER NODES, CLUSTER GETKEYSINSLOT (room for twice the count), EXEC. The node's
 *    view and its keys of the slot come from one instant: when the view says it serves the slot
 *    without a mark, those are all the slot's keys then (certified). Otherwise the view names
 *    where to look next (the owner, the node the slot migrates to or is imported from), and the
 *    slot is listed again there, with a growing pause while nothing gets certified. A slot
 *    stuck half-migrated (an interrupted resharding) is certified by its two nodes together when
 *    neither runs a MIGRATE meanwhile: their counts, then both listings (the source's view says
 *    MIGRATING to the target, the target's IMPORTING from the source), then their counts again.
 *    MATCH is applied here by the client (glob.h, as the server matches), TYPE by a TYPE per key.
 *    No certificate for the retry budget (cp_options.retry_budget_ms) ends the scan CP_ETIMEDOUT.
 *
 * One engine, two drivers. The steps are written once (advance): each runs until it needs what
 * only its driver can do, asks for it (a pipeline run, a pause, a re-read of the slot map) and
 * goes on from where it stopped (s->sub) with the answer. cp_scan_next drives it with cp_exec,
 * a sleep and cp_refresh; cp_scan_next_async with cp_exec_async, a wake of the client's timer
 * (events.h) and the in-band refresh, whose end wakes it too: nothing there blocks.
 *
 * A step that fails (a node unreachable, an error reply) returns its CP_E* code with the
 * client's errstr and starts over at the next call: it tries the same step again.
 */
#include "lib/events.h"
#include "lib/glob.h"
#include "lib/topology.h"
#include "util/clock.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHUNK 64        /* slots listed per MULTI in phase 2 */
#define PAIRS 16        /* half-migrated slots tried per pair certificate */
#define PAUSE_MAX_MS 64 /* longest pause between phase-2 listings that certified nothing */
#define TYPE_CHUNK 1024 /* TYPEs per round trip: an async scan stays well under max_pending */
#define PAIR_AFTER 3    /* such listings in a row before half-migrated slots are tried in pairs */

enum { PH_START, PH_MASTERS, PH_REREAD_START, PH_REREAD, PH_DONE };
enum { M_START, M_SCAN, M_END }; /* one master's walk */

/* What a step asks of its driver, or how the call ends (advance); a negative CP_E* is a step
 * that failed. */
enum {
    STEP_ON = 0, /* inside advance: the step moved on by itself */
    ASK_RUN,     /* run s->run, its result into s->io */
    ASK_PAUSE,   /* wait s->pause_ms */
    ASK_REFRESH, /* re-read the slot map, the result into s->io */
    GOT_BATCH,   /* s->out is the caller's */
    GOT_END      /* the scan is complete */
};

/* Where a step goes on once its driver did what it asked (s->sub). */
enum {
    S_BEGIN,     /* a new step */
    S_REFRESHED, /* start, reread_start: the map was re-read */
    S_SCANNED,   /* a master's round trip ran */
    S_PAUSED,    /* phase 2: the pause is over */
    S_COUNTED,   /* a listing's COUNTKEYSINSLOT round trip ran */
    S_LISTED,    /* ... its MULTI ... EXEC */
    S_TYPED      /* ... the TYPE of its keys */
};

/* What the async driver's wake is for. */
enum { W_PAUSE, W_REFRESH, W_RESULT };

/* Slots listed at one node in one step (phase 2). */
typedef struct group {
    int node, k;
    int slots[CHUNK];
    long long max[CHUNK];     /* GETKEYSINSLOT's room per slot */
    long long calls0, calls1; /* the node's MIGRATE count before and after (pairs only) */
    size_t exec_at;           /* its EXEC in the step's pipeline */
} group;

struct cp_scan {
    cp__client *c;
    cp_pipeline *p;  /* the step's commands; the batch points into its replies until reset */
    cp_pipeline *tp; /* TYPE of each listed key (phase 2 with a TYPE filter) */
    char *match, *type;
    size_t matchlen;
    long count;
    int phase;
    /* The step under way. */
    int sub;          /* S_*: where it goes on */
    int io;           /* what the driver's run or refresh ended with: 0 or CP_E* (errstr set) */
    cp_pipeline *run; /* ASK_RUN: p or tp */
    long pause_ms;    /* ASK_PAUSE */
    /* Phase 1. */
    int *masters; /* node indexes, from the map at the first call */
    int nmasters, at, step;
    char cursor[32];
    long long calls0; /* the master's MIGRATE count when its walk began, -1: unknown */
    uint8_t *mine;    /* [CP_SLOTS] it served them, unmarked, when its walk began */
    /* Both phases. */
    uint8_t *done;       /* [CP_SLOTS] certified */
    cp__nodesview *view; /* scratch */
    /* Phase 2. */
    int16_t *from;        /* [CP_SLOTS] the node to list the slot at next */
    int16_t *pair_from;   /* [CP_SLOTS] a listing there said MIGRATING to pair_to ... */
    int16_t *pair_to;     /* [CP_SLOTS] ... (-1: not a candidate for the pair certificate) */
    group *groups;        /* [2 * PAIRS] */
    int next_slot;        /* where the next chunk starts looking */
    int stalls;           /* listings in a row that certified nothing */
    uint64_t progress_ns; /* the last certificate */
    /* Phase 2, kept across the round trips of a step. */
    int pairs;  /* the listing under way is the pairs' (else the chunk's) */
    int ng;     /* groups the pairs are listed in */
    int npairs; /* pair candidates tried: */
    int pslot[PAIRS], pa[PAIRS], pb[PAIRS]; /* slot, source A, target B */
    uint8_t held[PAIRS];                    /* per candidate: bit 0 A's side holds, bit 1 B's */
    uint8_t ok[CHUNK];                      /* the chunk's slots its listing certifies */
    int chunk_view;                         /* view holds the chunk's node's view */
    /* The batch. */
    const redisReply **keys; /* being built: replies in p */
    size_t nkeys, capkeys;
    size_t typed_at, typed_kept, typing; /* TYPE filter: keys checked, kept, being checked */
    redisReply *out;                     /* built, for the caller */
    cp_scan_stats st;
    /* The async driver: the call under way (cb NULL: none). */
    cp_scan_callback *cb;
    void *cb_data;
    cp__wake wake; /* its pause, its wait for the map, or its result put off */
    int wait;      /* W_*: which */
    int result;    /* W_RESULT: what the callback gets, errstr its error's description */
    char errstr[CP_ERRSTR_LEN];
    int in_call; /* inside cp_scan_next_async: the callback may not run now */
};

static int scan_err(cp_scan *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int scan_err(cp_scan *s, int code, const char *fmt, ...) {
    char msg[CP_ERRSTR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return cp__client_err(s->c, code, "cp_scan: %s", msg);
}

static const char *node_name(const cp__client *c, int n, char *buf, size_t len) {
    snprintf(buf, len, "%s:%d", c->nodes[n].host, c->nodes[n].port);
    return buf;
}

/* ---- the pipeline of a step ---- */

/* Appends argv for node n: no redirect, no retry. */
static int append_node(cp_pipeline *p, int n, int argc, const char **argv, const size_t *len) {
    p->next_node = n;
    int rc = cp__pipeline_append_argv(p, argc, argv, len, -1);
    p->next_node = CP__TO_KEYS;
    return rc;
}

static int append_node_fmt(cp_pipeline *p, int n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_append_to(p, n, fmt, ap);
    va_end(ap);
    return rc;
}

/* Reply i of p when it is not an error reply; else NULL with the client's error set. */
static const redisReply *answer(cp_scan *s, cp_pipeline *p, size_t i, int n) {
    const redisReply *r = cp_reply(p, i);
    char name[CP__HOSTLEN + 8];
    if (r != NULL && r->type != REDIS_REPLY_ERROR)
        return r;
    scan_err(s, CP_ESERVER, "%s: %.160s", node_name(s->c, n, name, sizeof(name)),
             r != NULL ? r->str : "no reply");
    return NULL;
}

/* ---- what a node says ---- */

/* The MIGRATE count in INFO commandstats text (0 when MIGRATE never ran), -1 when r is not
 * that text (refused, say). */
static long long migrate_calls(const redisReply *r) {
    static const char tag[] = "cmdstat_migrate:calls=";
    if (r == NULL || r->type != REDIS_REPLY_STRING)
        return -1;
    for (const char *at = r->str; (at = strstr(at, tag)) != NULL; at++)
        if (at == r->str || at[-1] == '\n')
            return strtoll(at + sizeof(tag) - 1, NULL, 10);
    return 0;
}

/* Parses a CLUSTER NODES reply into s->view. 0, or -1 (view unusable: myself unknown). */
static int read_view(cp_scan *s, const redisReply *r, int n) {
    char err[CP_ERRSTR_LEN];
    if (r == NULL || r->type != REDIS_REPLY_STRING)
        return -1;
    if (cp__topo_parse_nodes(r->str, r->len, s->c->nodes[n].host, s->view, err, sizeof(err)))
        return -1;
    if (s->view->myself < 0) {
        cp__slotmap_free(&s->view->map);
        return -1;
    }
    return 0;
}

/* 1 when the view's node is a master that serves the slot without a migration mark. */
static int serves(const cp__nodesview *v, int slot) {
    return v->myself >= 0 && v->map.nodes[v->myself].master < 0 &&
           v->map.owner[slot] == v->myself && v->moving[slot] == 0;
}

/* The client's index of the view's node i (added when new), or a negative CP_E*. */
static int client_node(cp_scan *s, const cp__nodesview *v, int i) {
    return cp__client_node(s->c, v->map.nodes[i].host, v->map.nodes[i].port);
}

/* ---- the batch ---- */

static int add_key(cp_scan *s, const redisReply *k) {
    if (k->type != REDIS_REPLY_STRING)
        return scan_err(s, CP_EPROTO, "a key that is not a string (type %d)", k->type);
    if (s->nkeys == s->capkeys) {
        size_t ncap = s->capkeys ? s->capkeys * 2 : 256;
        const redisReply **v = realloc(s->keys, ncap * sizeof(*v));
        if (v == NULL)
            return scan_err(s, CP_ENOMEM, "out of memory");
        s->keys = v;
        s->capkeys = ncap;
    }
    s->keys[s->nkeys++] = k;
    return 0;
}

/* The keys gathered, copied out for the caller (before the step's state moves on, so that
 * running out of memory loses nothing: the step runs again). */
static int emit(cp_scan *s) {
    if (s->nkeys == 0)
        return 0;
    redisReply batch;
    memset(&batch, 0, sizeof(batch));
    batch.type = REDIS_REPLY_ARRAY;
    batch.elements = s->nkeys;
    batch.element = (redisReply **)(void *)s->keys;
    s->out = cp__reply_dup(&batch);
    s->nkeys = 0;
    if (s->out == NULL)
        return scan_err(s, CP_ENOMEM, "out of memory");
    s->st.keys += s->out->elements;
    if (s->phase == PH_REREAD)
        s->st.keys_reread += s->out->elements;
    return 0;
}

/* ---- phase 1: SCAN every master ---- */

/* The map is re-read first (its masters are walked). */
static int start(cp_scan *s) {
    cp__client *c = s->c;
    if (s->sub == S_BEGIN && c->cluster) {
        s->sub = S_REFRESHED;
        return ASK_REFRESH;
    }
    s->sub = S_BEGIN;
    int *m = malloc(sizeof(int) * (size_t)(c->nnodes > 0 ? c->nnodes : 1));
    if (m == NULL)
        return scan_err(s, CP_ENOMEM, "out of memory");
    s->nmasters = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].is_master)
            m[s->nmasters++] = i;
    if (!c->cluster) { /* node 0, the endpoint */
        m[0] = 0;
        s->nmasters = 1;
    }
    s->masters = m;
    s->phase = PH_MASTERS;
    return STEP_ON;
}

static int append_scan(cp_scan *s, int n) {
    const char *argv[8] = {"SCAN", s->cursor};
    size_t len[8] = {4, strlen(s->cursor)};
    char count[24];
    int argc = 2;
    if (s->match != NULL) {
        argv[argc] = "MATCH", len[argc++] = 5;
        argv[argc] = s->match, len[argc++] = s->matchlen;
    }
    if (s->count > 0) {
        snprintf(count, sizeof(count), "%ld", s->count);
        argv[argc] = "COUNT", len[argc++] = 5;
        argv[argc] = count, len[argc++] = strlen(count);
    }
    if (s->type != NULL) {
        argv[argc] = "TYPE", len[argc++] = 4;
        argv[argc] = s->type, len[argc++] = strlen(s->type);
    }
    return append_node(s->p, n, argc, argv, len);
}

/* A SCAN reply [cursor, [key...]]: its keys into the batch, its cursor into next. */
static int take_scan(cp_scan *s, const redisReply *r, int n, char *next) {
    char name[CP__HOSTLEN + 8];
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len == 0 ||
        (size_t)r->element[0]->len >= sizeof(s->cursor) || r->element[1]->type != REDIS_REPLY_ARRAY)
        return scan_err(s, CP_EPROTO, "%s: SCAN answered something else than [cursor, keys]",
                        node_name(s->c, n, name, sizeof(name)));
    for (size_t i = 0; i < r->element[1]->elements; i++)
        if (add_key(s, r->element[1]->element[i]) != 0) {
            s->nkeys = 0;
            return s->c->pub.err;
        }
    memcpy(next, r->element[0]->str, (size_t)r->element[0]->len + 1);
    return 0;
}

/* The slots the view's node serves without a mark: into mine[] (start of a walk), or certified
 * when they were in mine[] too (end of it). */
static void walk_view(cp_scan *s, const redisReply *r, int n, int at_end) {
    if (!at_end)
        memset(s->mine, 0, CP_SLOTS);
    if (read_view(s, r, n) != 0)
        return;
    for (int slot = 0; slot < CP_SLOTS; slot++) {
        int ok = serves(s->view, slot);
        if (!at_end)
            s->mine[slot] = (uint8_t)ok;
        else if (ok && s->mine[slot])
            s->done[slot] = 1;
    }
    cp__slotmap_free(&s->view->map);
}

/* The round trip of a master's walk that comes with its MIGRATE count and view: its first SCAN
 * and the one after its last (a cluster's master only). */
static int checkpoint(const cp_scan *s) {
    return s->c->cluster && s->step != M_SCAN;
}

/* One round trip of master `at`'s walk: its MIGRATE count, view and first SCAN; a SCAN; or the
 * count and view after its last SCAN. */
static int master_ask(cp_scan *s) {
    if (s->at == s->nmasters) {
        s->phase = s->c->cluster ? PH_REREAD_START : PH_DONE;
        return STEP_ON;
    }
    int n = s->masters[s->at], rc = 0;
    cp_pipeline *p = s->p;
    cp_pipeline_reset(p);
    if (checkpoint(s) && (rc = append_node_fmt(p, n, "INFO commandstats")) == 0)
        rc = append_node_fmt(p, n, "CLUSTER NODES");
    if (rc == 0 && s->step != M_END)
        rc = append_scan(s, n);
    if (rc != 0)
        return scan_err(s, rc, "cannot queue: %s", cp_strerror(rc));
    s->run = p;
    s->sub = S_SCANNED;
    return ASK_RUN;
}

/* What the round trip answered: the keys, the next cursor, the certificates of a walk's end. */
static int master_take(cp_scan *s) {
    cp__client *c = s->c;
    cp_pipeline *p = s->p;
    int n = s->masters[s->at], rc = 0, with_view = checkpoint(s);
    s->sub = S_BEGIN;
    if (s->step == M_END) {
        if (s->calls0 >= 0 && migrate_calls(cp_reply(p, 0)) == s->calls0)
            walk_view(s, cp_reply(p, 1), n, 1);
        s->at++;
        s->step = M_START;
        return STEP_ON;
    }
    char next[sizeof(s->cursor)];
    const redisReply *r = answer(s, p, with_view ? 2 : 0, n);
    if (r == NULL || (rc = take_scan(s, r, n, next)) != 0 || (rc = emit(s)) != 0)
        return r == NULL ? c->pub.err : rc;
    s->st.scan_calls++;
    if (s->step == M_START && with_view) {
        s->calls0 = migrate_calls(cp_reply(p, 0));
        walk_view(s, cp_reply(p, 1), n, 0);
    }
    int last = strcmp(next, "0") == 0;
    strcpy(s->cursor, next);
    s->step = !last ? M_SCAN : c->cluster ? M_END : M_START;
    if (last && !c->cluster)
        s->at++;
    return STEP_ON;
}

/* ---- phase 2: list the slots without a certificate ---- */

/* With every slot certified the scan is complete; else the map is re-read and each slot is
 * first listed at its owner there. */
static int reread_start(cp_scan *s) {
    cp__client *c = s->c;
    if (s->sub == S_BEGIN) {
        int left = 0;
        for (int slot = 0; slot < CP_SLOTS; slot++)
            left += !s->done[slot];
        if (left == 0) {
            s->phase = PH_DONE;
            return STEP_ON;
        }
        s->sub = S_REFRESHED;
        return ASK_REFRESH;
    }
    s->sub = S_BEGIN;
    int any = cp__client_any_node(c);
    for (int slot = 0; slot < CP_SLOTS; slot++) {
        int owner = c->routes.node[slot];
        s->from[slot] = (int16_t)(owner >= 0 ? owner : any);
        s->pair_to[slot] = -1;
    }
    s->stalls = 0;
    s->next_slot = 0;
    s->progress_ns = cp__now_ns();
    s->phase = PH_REREAD;
    return STEP_ON;
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
    group *g = s->groups;
    int ng = listed_groups(s), with_calls = s->pairs, rc = 0;
    cp_pipeline_reset(p);
    for (int j = 0; j < ng && rc == 0; j++) {
        if (with_calls && pass == 0)
            rc = append_node_fmt(p, g[j].node, "INFO commandstats");
        if (rc == 0 && pass == 1)
            rc = append_node_fmt(p, g[j].node, "MULTI");
        if (rc == 0 && pass == 1)
            rc = append_node_fmt(p, g[j].node, "CLUSTER NODES");
        g[j].exec_at = cp_count(p);
        for (int i = 0; i < g[j].k && rc == 0; i++)
            rc = pass == 0
                     ? append_node_fmt(p, g[j].node, "CLUSTER COUNTKEYSINSLOT %d", g[j].slots[i])
                     : append_node_fmt(p, g[j].node, "CLUSTER GETKEYSINSLOT %d %lld", g[j].slots[i],
                                       g[j].max[i]);
        if (rc == 0 && pass == 1) {
            g[j].exec_at = cp_count(p);
            rc = append_node_fmt(p, g[j].node, "EXEC");
        }
        if (rc == 0 && with_calls && pass == 1)
            rc = append_node_fmt(p, g[j].node, "INFO commandstats");
    }
    if (rc != 0)
        return scan_err(s, rc, "cannot queue: %s", cp_strerror(rc));
    s->run = p;
    s->sub = pass == 0 ? S_COUNTED : S_LISTED;
    return ASK_RUN;
}

/* What round trip `pass` answered: the nodes' MIGRATE counts, and each slot's room (0). */
static int list_take(cp_scan *s, int pass) {
    cp_pipeline *p = s->p;
    group *g = s->groups;
    int ng = listed_groups(s), with_calls = s->pairs;
    for (int j = 0; j < ng; j++) {
        if (with_calls)
            *(pass == 0 ? &g[j].calls0 : &g[j].calls1) =
                migrate_calls(cp_reply(p, pass == 0 ? g[j].exec_at - 1 : g[j].exec_at + 1));
        for (int i = 0; i < g[j].k && pass == 0; i++) {
            const redisReply *r = answer(s, p, g[j].exec_at + (size_t)i, g[j].node);
            if (r == NULL)
                return s->c->pub.err;
            g[j].max[i] = listing_room(r->type == REDIS_REPLY_INTEGER ? r->integer : -1);
        }
    }
    return 0;
}

/* Group g's EXEC reply: [view, keys of its slot 0, ...]; NULL with the error set when it is
 * not that (EXECABORT, a command refused). */
static const redisReply *listing(cp_scan *s, const group *g) {
    char name[CP__HOSTLEN + 8];
    const redisReply *r = answer(s, s->p, g->exec_at, g->node);
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
    scan_err(s, CP_ESERVER, "%s: listing slots: %.160s",
             node_name(s->c, g->node, name, sizeof(name)),
             r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer");
    return NULL;
}

/* 1 when listing i of group g fits its room (so it holds every key of the slot). */
static int whole(const group *g, const redisReply *r, int i) {
    return (long long)r->element[i + 1]->elements < g->max[i];
}

/* Adds the keys of a certified listing that pass MATCH (TYPE comes after). */
static int add_listed(cp_scan *s, const redisReply *keys) {
    for (size_t j = 0; j < keys->elements; j++) {
        const redisReply *k = keys->element[j];
        if (k->type == REDIS_REPLY_STRING && s->match != NULL &&
            !cp__glob_match(s->match, s->matchlen, k->str, (size_t)k->len))
            continue;
        if (add_key(s, k) != 0)
            return s->c->pub.err;
    }
    return 0;
}

/* A slot listed at n without a certificate: where to list it next, per n's view v (NULL: the
 * client's map). A slot n migrates becomes a candidate for the pair certificate. */
static int route(cp_scan *s, int n, const cp__nodesview *v, int slot) {
    cp__client *c = s->c;
    int to = -1;
    if (v != NULL && v->moving[slot] != 0 && v->peer[slot] >= 0)
        to = v->peer[slot]; /* the target of its migration, or the source of its import */
    else if (v != NULL && v->map.owner[slot] >= 0 && v->map.owner[slot] != v->myself)
        to = v->map.owner[slot];
    if (to >= 0 && (to = client_node(s, v, to)) < 0)
        return scan_err(s, to, "cannot add a node: %s", cp_strerror(to));
    s->pair_to[slot] = -1;
    if (to >= 0 && v->moving[slot] == CP__SLOT_MIGRATING && v->map.owner[slot] == v->myself) {
        s->pair_from[slot] = (int16_t)n;
        s->pair_to[slot] = (int16_t)to;
    }
    if (to < 0)
        to = c->routes.node[slot] >= 0 ? c->routes.node[slot] : cp__client_any_node(c);
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
static void next_chunk(cp_scan *s, group *g) {
    g->k = 0;
    for (int i = 0; i < CP_SLOTS && g->k < CHUNK; i++) {
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
static group *group_of(group *g, int *ng, int n) {
    for (int j = 0; j < *ng; j++)
        if (g[j].node == n)
            return &g[j];
    g[*ng] = (group){.node = n};
    return &g[(*ng)++];
}

static int typed(cp_scan *s);

/* The TYPE filter's next round trip: the next TYPE_CHUNK keys gathered (routed: a key that
 * moved is found). Without a filter, or keys left to check, straight on to typed(). */
static int type_more(cp_scan *s) {
    s->sub = S_TYPED;
    s->typing = 0;
    if (s->type == NULL || s->typed_at == s->nkeys)
        return typed(s);
    cp_pipeline *tp = s->tp;
    cp_pipeline_reset(tp);
    size_t end = s->nkeys - s->typed_at > TYPE_CHUNK ? s->typed_at + TYPE_CHUNK : s->nkeys;
    for (size_t i = s->typed_at; i < end; i++) {
        int rc = cp_append(tp, "TYPE %b", s->keys[i]->str, (size_t)s->keys[i]->len);
        if (rc != 0)
            return scan_err(s, rc, "cannot queue TYPE: %s", cp_strerror(rc));
    }
    s->typing = end - s->typed_at;
    s->run = tp;
    return ASK_RUN;
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
            return scan_err(s, CP_ESERVER, "TYPE: %.160s", t->str);
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
    for (int slot = 0; slot < CP_SLOTS && k < PAIRS; slot++)
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
    group *g = s->groups;
    for (int i = 0; i < k; i++)
        for (int e = 0; e < 2; e++) {
            group *x = group_of(g, &ng, e == 0 ? s->pa[i] : s->pb[i]);
            x->slots[x->k++] = s->pslot[i];
        }
    s->ng = ng;
    s->pairs = 1;
    return list_pass(s, 0);
}

/* The pairs' listings: per candidate the sides that hold, and the keys of those held by both. */
static int pairs_listed(cp_scan *s) {
    group *g = s->groups;
    int rc = 0;
    memset(s->held, 0, sizeof(s->held));
    for (int j = 0; j < s->ng; j++) {
        const redisReply *r = listing(s, &g[j]);
        if (r == NULL)
            return s->c->pub.err;
        if (g[j].calls0 < 0 || g[j].calls1 != g[j].calls0 ||
            read_view(s, r->element[0], g[j].node) != 0)
            continue;
        const cp__nodesview *v = s->view;
        for (int pos = 0; pos < g[j].k; pos++) {
            int i = 0, slot = g[j].slots[pos], peer = v->peer[slot];
            while (s->pslot[i] != slot)
                i++;
            int is_a = g[j].node == s->pa[i], other = is_a ? s->pb[i] : s->pa[i];
            if (!whole(&g[j], r, pos) || peer < 0 || client_node(s, v, peer) != other)
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
        s->sub = S_BEGIN;
        return STEP_ON;
    }
    next_chunk(s, &s->groups[0]); /* the pairs used the groups */
    return chunk_ask(s);
}

/* The chunk listed at its node: certified where the node's view serves the slot unmarked (or
 * nobody serves it, in that view and in the client's map); their keys go in the batch. */
static int chunk_listed(cp_scan *s) {
    group *g = &s->groups[0];
    const redisReply *r = listing(s, g);
    if (r == NULL)
        return s->c->pub.err;
    cp__nodesview *v = read_view(s, r->element[0], g->node) == 0 ? s->view : NULL;
    s->chunk_view = v != NULL;
    int rc = 0;
    for (int i = 0; i < g->k && rc == 0; i++) {
        int slot = g->slots[i];
        s->ok[i] = v != NULL && whole(g, r, i) &&
                   (serves(v, slot) || (v->map.owner[slot] < 0 && v->moving[slot] == 0 &&
                                        s->c->routes.node[slot] < 0));
        if (s->ok[i])
            rc = add_listed(s, r->element[i + 1]);
    }
    return rc != 0 ? rc : type_ask(s);
}

/* The chunk's certificates, and where its other slots are listed next (per the view). */
static int chunk_done(cp_scan *s) {
    group *g = &s->groups[0];
    cp__nodesview *v = s->chunk_view ? s->view : NULL;
    int rc = 0;
    for (int i = 0; i < g->k && rc == 0; i++)
        rc = s->ok[i] ? (certify(s, g->slots[i]), 0) : route(s, g->node, v, g->slots[i]);
    if (v != NULL)
        cp__slotmap_free(&v->map);
    s->chunk_view = 0;
    if (rc != 0)
        return rc;
    s->stalls++;
    s->sub = S_BEGIN;
    return STEP_ON;
}

/* A listing's batch (TYPE filtered, copied out; on failure nothing of it is kept), then its
 * certificates. */
static int typed(cp_scan *s) {
    int rc = type_take(s);
    if (rc == 0 && s->type != NULL && s->typed_at < s->nkeys)
        return type_more(s);
    if (rc == 0)
        rc = emit(s);
    s->nkeys = 0;
    if (rc != 0)
        return rc;
    return s->pairs ? pairs_done(s) : chunk_done(s);
}

/* A step of phase 2: the next chunk, after a pause while listings certify nothing, and after
 * the half-migrated slots' pairs once that lasts. */
static int reread_begin(cp_scan *s) {
    group *g = &s->groups[0];
    next_chunk(s, g);
    if (g->k == 0) {
        s->phase = PH_DONE;
        return STEP_ON;
    }
    if (s->stalls > 0) {
        uint64_t now = cp__now_ns(), waited_ms = (now - s->progress_ns) / 1000000u;
        if (waited_ms > (uint64_t)s->c->retry_budget_ms) {
            s->progress_ns = now; /* the next call lists again, with a budget of its own */
            return scan_err(s, CP_ETIMEDOUT,
                            "slot %d could not be listed whole at the node serving it for %d ms "
                            "(it stays MIGRATING/IMPORTING, or the nodes disagree who serves it)",
                            g->slots[0], s->c->retry_budget_ms);
        }
        s->pause_ms = s->stalls >= 7 ? PAUSE_MAX_MS : 1L << (s->stalls - 1);
        s->sub = S_PAUSED;
        return ASK_PAUSE;
    }
    return s->stalls >= PAIR_AFTER ? pairs_ask(s) : chunk_ask(s);
}

static int reread_step(cp_scan *s) {
    int rc;
    switch (s->sub) {
    case S_BEGIN:
        return reread_begin(s);
    case S_PAUSED:
        return s->stalls >= PAIR_AFTER ? pairs_ask(s) : chunk_ask(s);
    case S_COUNTED:
        return (rc = list_take(s, 0)) != 0 ? rc : list_pass(s, 1);
    case S_LISTED:
        if ((rc = list_take(s, 1)) != 0)
            return rc;
        return s->pairs ? pairs_listed(s) : chunk_listed(s);
    default: /* S_TYPED */
        return typed(s);
    }
}

/* ---- the engine ---- */

/* The step failed: it starts over at the next call, and nothing of it is kept. */
static int failed(cp_scan *s, int rc) {
    s->sub = S_BEGIN;
    s->nkeys = 0;
    if (s->chunk_view) {
        cp__slotmap_free(&s->view->map);
        s->chunk_view = 0;
    }
    return rc;
}

/* Runs the scan until it needs its driver (ASK_*) or has a batch or its end for the caller
 * (GOT_*), or a step failed (a CP_E*, the client's errstr set). The driver does what was
 * asked, puts its result in s->io, and calls again. */
static int advance(cp_scan *s) {
    while (s->out == NULL) {
        /* Back from the driver with a failed run or refresh: the step ends with it. */
        int rc = s->sub != S_BEGIN && s->sub != S_PAUSED ? s->io : 0;
        if (rc == 0) {
            switch (s->phase) {
            case PH_START:
                rc = start(s);
                break;
            case PH_MASTERS:
                rc = s->sub == S_BEGIN ? master_ask(s) : master_take(s);
                break;
            case PH_REREAD_START:
                rc = reread_start(s);
                break;
            case PH_REREAD:
                rc = reread_step(s);
                break;
            default:
                return GOT_END;
            }
        }
        if (rc < 0)
            return failed(s, rc);
        if (rc != STEP_ON)
            return rc;
    }
    return GOT_BATCH;
}

/* ---- the blocking driver ---- */

/* Runs p: 0 when every command got an answer, else the first failure as the client's error. */
static int run(cp_scan *s, cp_pipeline *p) {
    if (cp_exec(p) == 0)
        return 0;
    int code = cp_pipeline_err(p);
    return scan_err(s, code ? code : CP_EPARTIAL, "%s", cp_pipeline_errstr(p));
}

int cp_scan_next(cp_scan *s, redisReply **keys) {
    if (s == NULL || keys == NULL) {
        if (s != NULL)
            scan_err(s, CP_EINVAL, "cp_scan_next: keys is NULL");
        return CP_EINVAL;
    }
    *keys = NULL;
    if (!cp__client_blocking(s->c))
        return scan_err(s, CP_EINVAL,
                        "cp_scan_next: not a blocking client (cp_scan_next_async on a loop)");
    for (;;) {
        int rc = advance(s);
        switch (rc) {
        case ASK_RUN:
            s->io = run(s, s->run);
            break;
        case ASK_PAUSE:
            cp__sleep_ms(s->pause_ms);
            break;
        case ASK_REFRESH:
            s->io = cp_refresh(&s->c->pub);
            break;
        case GOT_BATCH:
            *keys = s->out;
            s->out = NULL;
            s->c->pub.err = 0;
            s->c->pub.errstr[0] = '\0';
            return 1;
        case GOT_END:
            return 0;
        default:
            return rc;
        }
    }
}

/* ---- the async driver ---- */

/* 0 when every command of p got an answer, else the first failure as the client's error (as
 * run() for cp_exec). */
static int ran_ok(cp_scan *s, const cp_pipeline *p) {
    for (size_t i = 0; i < cp_count(p); i++)
        if (cp_get_outcome(p, i) != CP_DONE) {
            int code = cp_pipeline_err(p);
            return scan_err(s, code ? code : CP_EPARTIAL, "%s",
                            code ? cp_pipeline_errstr(p) : "a command did not complete");
        }
    return 0;
}

/* How the refresh the step waited for went, as cp_refresh tells it. */
static int refresh_result(cp_scan *s) {
    cp__client *c = s->c;
    if (c->refresh.err == 0)
        return 0;
    return cp__client_err(c, c->refresh.err, "no node gave a slot map: %s",
                          c->refresh.errstr[0] ? c->refresh.errstr : cp_strerror(c->refresh.err));
}

/* The call's end: the step under way is over, its callback is called, last (it may free the
 * scan, or start the next call). */
static void deliver(cp_scan *s, int rc) {
    cp__client *c = s->c;
    redisReply *keys = NULL;
    if (c->closing && rc != CP_ECANCELED) /* cp_free: the scan is over (a batch stays in it) */
        rc = scan_err(s, CP_ECANCELED, "the client was freed");
    if (rc == GOT_BATCH) {
        keys = s->out;
        s->out = NULL;
        c->pub.err = 0;
        c->pub.errstr[0] = '\0';
        rc = 1;
    } else if (rc == GOT_END) {
        rc = 0;
    }
    cp_scan_callback *cb = s->cb;
    void *data = s->cb_data;
    s->cb = NULL;
    c->pending--;
    cb(s, rc, keys, data);
}

/* The call ends with rc: now from the loop, or from its next call when this is still inside
 * cp_scan_next_async (a callback never runs inside the call that asked for it). */
static void finish(cp_scan *s, int rc) {
    if (!s->in_call) {
        deliver(s, rc);
        return;
    }
    s->result = rc;
    if (rc < 0)
        snprintf(s->errstr, sizeof(s->errstr), "%s", s->c->pub.errstr);
    s->wait = W_RESULT;
    cp__events_wake_at(s->c, &s->wake, 1);
}

static void ran(cp_pipeline *p, void *data);

/* Runs the steps until one waits for the loop (a pipeline, the timer, the map) or the call
 * ends. Nothing here waits. */
static void drive(cp_scan *s) {
    cp__client *c = s->c;
    for (;;) {
        int rc = advance(s);
        if (rc < 0 || rc == GOT_BATCH || rc == GOT_END) {
            finish(s, rc);
            return;
        }
        if (c->closing) { /* cp_free is ending everything: the step cannot go on */
            finish(s, failed(s, scan_err(s, CP_ECANCELED, "the client was freed")));
            return;
        }
        switch (rc) {
        case ASK_RUN: /* on in ran(), once every command has its outcome */
            if (cp_exec_async(s->run, ran, s) == 0)
                return;
            s->io = scan_err(s, cp_pipeline_err(s->run), "%s", cp_pipeline_errstr(s->run));
            break;
        case ASK_PAUSE: /* on in woken() */
            s->wait = W_PAUSE;
            cp__events_wake_at(c, &s->wake, cp__now_ns() + (uint64_t)s->pause_ms * 1000000u);
            return;
        default: /* ASK_REFRESH: the in-band refresh, every node then the seeds as cp_refresh */
            cp__send_refresh_now(c);
            if (c->refresh.running) { /* on in woken() when it has ended */
                s->wait = W_REFRESH;
                cp__events_wake_after_refresh(c, &s->wake);
                return;
            }
            s->io = refresh_result(s); /* it could not start */
        }
    }
}

static void ran(cp_pipeline *p, void *data) {
    cp_scan *s = data;
    s->io = ran_ok(s, p);
    drive(s);
}

static void woken(void *data, int err) {
    cp_scan *s = data;
    if (err != 0) { /* cp_free: the step cannot go on */
        failed(s, 0);
        deliver(s, scan_err(s, err, "the client was freed"));
        return;
    }
    switch (s->wait) {
    case W_RESULT:
        if (s->result < 0)
            cp__client_err(s->c, s->result, "%s", s->errstr);
        deliver(s, s->result);
        return;
    case W_REFRESH:
        s->io = refresh_result(s);
        break;
    default:
        break;
    }
    drive(s);
}

int cp_scan_next_async(cp_scan *s, cp_scan_callback *cb, void *privdata) {
    if (s == NULL)
        return CP_EINVAL;
    cp__client *c = s->c;
    const char *why = cb == NULL                ? "no callback"
                      : s->cb != NULL           ? "a call of this scan is under way"
                      : c->closing              ? "the client is being freed"
                      : !cp__events_async_ok(c) ? "not an event-loop client on a loop (cp_attach; "
                                                  "cp_scan_next on a blocking one)"
                                                : NULL;
    if (why != NULL)
        return scan_err(s, CP_EINVAL, "cp_scan_next_async: %s", why);
    s->cb = cb;
    s->cb_data = privdata;
    c->pending++; /* the call is pending until its callback (cp_loop_run waits for it) */
    s->in_call = 1;
    drive(s);
    s->in_call = 0;
    cp__events_after_call(c); /* the loop hears of what the step started */
    return 0;
}

/* ---- the API ---- */

cp_scan *cp_scan_new(cp_client *pc, const char *match, long count, const char *type) {
    if (pc == NULL)
        return NULL;
    cp__client *c = cp__client_of(pc);
    cp_scan *s = calloc(1, sizeof(*s));
    if (s == NULL)
        goto oom;
    s->c = c;
    s->count = count;
    s->calls0 = -1;
    s->wake.fn = woken;
    s->wake.data = s;
    strcpy(s->cursor, "0");
    if (match != NULL && strcmp(match, "*") != 0) { /* "*" alone: no filter, as SCAN has it */
        s->matchlen = strlen(match);
        if ((s->match = strdup(match)) == NULL)
            goto oom;
    }
    if (type != NULL && (s->type = strdup(type)) == NULL)
        goto oom;
    s->p = cp_pipeline_new(pc);
    s->tp = cp_pipeline_new(pc);
    s->mine = calloc(1, CP_SLOTS);
    s->done = calloc(1, CP_SLOTS);
    s->view = malloc(sizeof(*s->view));
    s->from = malloc(sizeof(int16_t) * CP_SLOTS);
    s->pair_from = malloc(sizeof(int16_t) * CP_SLOTS);
    s->pair_to = malloc(sizeof(int16_t) * CP_SLOTS);
    s->groups = malloc(sizeof(group) * 2 * PAIRS);
    if (s->p == NULL || s->tp == NULL || s->mine == NULL || s->done == NULL || s->view == NULL ||
        s->from == NULL || s->pair_from == NULL || s->pair_to == NULL || s->groups == NULL)
        goto oom;
    return s;
oom:
    cp_scan_free(s);
    cp__client_err(c, CP_ENOMEM, "out of memory");
    return NULL;
}

void cp_scan_get_stats(const cp_scan *s, cp_scan_stats *out) {
    if (out != NULL)
        *out = s != NULL ? s->st : (cp_scan_stats){0};
}

void cp_scan_free(cp_scan *s) {
    if (s == NULL)
        return;
    if (s->cb != NULL) { /* an async call under way ends without its callback */
        cp__events_wake_cancel(s->c, &s->wake);
        s->c->pending--;
    }
    if (s->chunk_view)
        cp__slotmap_free(&s->view->map);
    cp_pipeline_free(s->p); /* a running one is detached: it finishes on its own */
    cp_pipeline_free(s->tp);
    freeReplyObject(s->out);
    free(s->match);
    free(s->type);
    free(s->masters);
    free(s->mine);
    free(s->done);
    free(s->view);
    free(s->from);
    free(s->pair_from);
    free(s->pair_to);
    free(s->groups);
    free(s->keys);
    free(s);
}
