/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Phase 1 of a cluster SCAN (scanwalk.h; scan.c says what the phases guarantee): the masters of
 * the map read at the first call, each walked with SCAN cursor [MATCH] [COUNT] [TYPE] until the
 * cursor comes back 0, its MIGRATE count and CLUSTER NODES view asked in the round trip of its
 * first SCAN and in one after its last; a slot it served unmarked in both views, while the
 * count did not move, is certified. Each step appends to the scan's pipeline and asks its
 * driver to run it; the keys of each SCAN are the caller's batch. One thread, the client's.
 */
#include "lib/base/alloc.h"
#include "lib/scan/scanwalk.h"

#include "lib/scan/scanstep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp__scan_start(cp_scan *s) {
    cp__client *c = s->c;
    if (s->sub == CP__SCAN_S_BEGIN && c->cluster) {
        s->sub = CP__SCAN_S_REFRESHED;
        return CP__SCAN_ASK_REFRESH;
    }
    s->sub = CP__SCAN_S_BEGIN;
    int *m = cp__malloc(sizeof(int) * (size_t)(c->nnodes > 0 ? c->nnodes : 1));
    if (m == NULL)
        return cp__scan_err(s, CP_ENOMEM, "out of memory");
    s->nmasters = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].is_master && !c->nodes[i].role_unsure) /* a replica, likely: refresh.c */
            m[s->nmasters++] = i;
    if (!c->cluster) { /* node 0, the endpoint */
        m[0] = 0;
        s->nmasters = 1;
    }
    s->masters = m;
    s->phase = CP__SCAN_PH_MASTERS;
    return CP__SCAN_STEP_ON;
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
    return cp__scan_append_node(s->p, n, argc, argv, len);
}

/* A SCAN reply [cursor, [key...]]: its keys into the batch, its cursor into next. */
static int take_scan(cp_scan *s, const redisReply *r, int n, char *next) {
    char name[CP__HOSTLEN + 8];
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len == 0 ||
        (size_t)r->element[0]->len >= sizeof(s->cursor) || r->element[1]->type != REDIS_REPLY_ARRAY)
        return cp__scan_err(s, CP_EPROTO, "%s: SCAN answered something else than [cursor, keys]",
                            cp__scan_node_name(s->c, n, name, sizeof(name)));
    for (size_t i = 0; i < r->element[1]->elements; i++)
        if (cp__scan_add_key(s, r->element[1]->element[i]) != 0) {
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
    if (cp__scan_read_view(s, r, n) != 0)
        return;
    for (int slot = 0; slot < CP_SLOTS; slot++) {
        int ok = cp__scan_serves(s->view, slot);
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
    return s->c->cluster && s->step != CP__SCAN_M_SCAN;
}

int cp__scan_walk_ask(cp_scan *s) {
    if (s->at == s->nmasters) {
        s->phase = s->c->cluster ? CP__SCAN_PH_REREAD_START : CP__SCAN_PH_DONE;
        return CP__SCAN_STEP_ON;
    }
    int n = s->masters[s->at], rc = 0;
    cp_pipeline *p = s->p;
    cp_pipeline_reset(p);
    if (checkpoint(s) && (rc = cp__scan_append_node_fmt(p, n, "INFO commandstats")) == 0)
        rc = cp__scan_append_node_fmt(p, n, "CLUSTER NODES");
    if (rc == 0 && s->step != CP__SCAN_M_END)
        rc = append_scan(s, n);
    if (rc != 0)
        return cp__scan_err(s, rc, "cannot queue: %s", cp_strerror(rc));
    s->run = p;
    s->sub = CP__SCAN_S_SCANNED;
    return CP__SCAN_ASK_RUN;
}

int cp__scan_walk_take(cp_scan *s) {
    cp__client *c = s->c;
    cp_pipeline *p = s->p;
    int n = s->masters[s->at], rc = 0, with_view = checkpoint(s);
    s->sub = CP__SCAN_S_BEGIN;
    if (s->step == CP__SCAN_M_END) {
        if (s->calls0 >= 0 && cp__scan_migrate_calls(cp_reply(p, 0)) == s->calls0)
            walk_view(s, cp_reply(p, 1), n, 1);
        s->at++;
        s->step = CP__SCAN_M_START;
        return CP__SCAN_STEP_ON;
    }
    char next[sizeof(s->cursor)];
    const redisReply *r = cp__scan_reply(s, p, with_view ? 2 : 0, n);
    if (r == NULL || (rc = take_scan(s, r, n, next)) != 0 || (rc = cp__scan_emit(s)) != 0)
        return r == NULL ? c->pub.err : rc;
    s->st.scan_calls++;
    if (s->step == CP__SCAN_M_START && with_view) {
        s->calls0 = cp__scan_migrate_calls(cp_reply(p, 0));
        walk_view(s, cp_reply(p, 1), n, 0);
    }
    int last = strcmp(next, "0") == 0;
    strcpy(s->cursor, next);
    s->step = !last ? CP__SCAN_M_SCAN : c->cluster ? CP__SCAN_M_END : CP__SCAN_M_START;
    if (last && !c->cluster)
        s->at++;
    return CP__SCAN_STEP_ON;
}
