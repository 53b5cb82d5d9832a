/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Lifecycle events and per-node stats (lifecycle.h, clusterpipe/event.h). The program's event
 * callback is called from here only, with an event on the stack: nothing is allocated or
 * kept. The counters are plain fields of each node (cp__node_life), touched off the hot path;
 * the bytes are the connection's own (conn.c counts them with its reads and writes). One
 * thread, the client's.
 */
#include "lib/client/lifecycle.h"

#include "util/clock.h"

#include <stdio.h>
#include <string.h>

/* An event about node n (-1: none), every other field unset. */
static cp_event event_of(const cp__client *c, cp_event_type type, int n) {
    cp_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.node = n;
    ev.host = n >= 0 ? c->nodes[n].host : "";
    ev.port = n >= 0 ? c->nodes[n].port : 0;
    ev.text = "";
    ev.version = c->map_version;
    ev.old_node = -1;
    ev.at_ns = cp__now_ns();
    return ev;
}

static void tell(cp__client *c, const cp_event *ev) {
    if (c->event_cb != NULL)
        c->event_cb(&c->pub, ev, c->event_data);
}

/* A bare event, about node n or none. */
static void tell_simple(cp__client *c, cp_event_type type, int n) {
    if (c->event_cb == NULL)
        return;
    cp_event ev = event_of(c, type, n);
    tell(c, &ev);
}

void cp_set_event_callback(cp_client *pc, cp_event_fn *fn, void *data) {
    cp__client *c = cp__client_of(pc);
    c->event_cb = fn;
    c->event_data = fn != NULL ? data : NULL;
}

void cp__lifecycle_check_up(cp__client *c, int n) {
    cp__node_life *l = &c->nodes[n].life;
    if (l->up || c->nodes[n].conn.state != CP__CONN_READY)
        return;
    l->up = 1;
    l->connects++;
    if (l->broken) {
        l->reconnects++;
        l->broken = 0;
    }
    tell_simple(c, CP_EVENT_NODE_CONNECTED, n);
    if (!c->cluster && !c->ready_told) {
        c->ready_told = 1;
        tell_simple(c, CP_EVENT_READY, n);
    }
}

void cp__lifecycle_closing(cp__client *c, int n, int code, const char *why) {
    cp__node_life *l = &c->nodes[n].life;
    if (!l->up)
        return;
    l->up = 0;
    if (c->event_cb == NULL)
        return;
    cp_event ev = event_of(c, CP_EVENT_NODE_DISCONNECTED, n);
    ev.code = code;
    ev.text = why != NULL ? why : "";
    ev.text_len = strlen(ev.text);
    tell(c, &ev);
}

void cp__lifecycle_failed(cp__client *c, int n, int code, const char *why) {
    cp__node_life *l = &c->nodes[n].life;
    l->broken = 1;
    l->last_err = code;
    snprintf(l->last_errstr, sizeof(l->last_errstr), "%s", why);
}

/* Node i in the map just applied: -1 not named, 0 a master, 1 a replica. */
static int role_now(const cp__node *node) {
    return node->is_master ? 0 : node->master >= 0 ? 1 : -1;
}

/* The slots of node to that the previous map gave to node from (-1: no owner). */
static int slots_taken(const cp__client *c, int to, int from) {
    int n = 0;
    for (int s = 0; s < CP_SLOTS; s++)
        n += c->slottab.node[s] == to && (c->map_version == 0 ? -1 : c->applied[s]) == from;
    return n;
}

void cp__lifecycle_map_applied(cp__client *c) {
    int first = c->map_version == 0, moved = 0, changed = 0;
    for (int s = 0; s < CP_SLOTS; s++)
        moved += c->slottab.node[s] != (first ? -1 : c->applied[s]);
    for (int i = 0; i < c->nnodes && !changed; i++) {
        const cp__node *node = &c->nodes[i];
        int role = role_now(node);
        changed = (role >= 0) != node->life.in_map ||
                  (role >= 0 && (role == 0 ? -1 : node->master) != node->life.map_master);
    }
    if (moved == 0 && !changed)
        return; /* the same map again: nothing to tell, the version stays */
    c->map_version++;
    if (c->event_cb != NULL) {
        cp_event ev = event_of(c, CP_EVENT_MAP_CHANGED, -1);
        ev.slots = moved;
        tell(c, &ev);
    }
    /* The events below read the previous map from c->applied and life: updated after them.
     * nnodes is read each time: a callback cannot add nodes, but nothing here depends on it. */
    for (int pass = 0; pass < 3 && c->event_cb != NULL; pass++)
        for (int i = 0; i < c->nnodes; i++) {
            const cp__node *node = &c->nodes[i];
            int role = role_now(node);
            if (pass == 0 && role >= 0 && !node->life.in_map)
                tell_simple(c, CP_EVENT_NODE_ADDED, i);
            else if (pass == 1 && role < 0 && node->life.in_map)
                tell_simple(c, CP_EVENT_NODE_REMOVED, i);
            else if (pass == 2 && role == 0 && node->life.in_map && node->life.map_master >= 0) {
                cp_event ev = event_of(c, CP_EVENT_FAILOVER, i);
                ev.old_node = node->life.map_master;
                ev.slots = slots_taken(c, i, ev.old_node);
                tell(c, &ev);
            }
        }
    for (int i = 0; i < c->nnodes; i++) {
        cp__node *node = &c->nodes[i];
        int role = role_now(node);
        node->life.in_map = role >= 0;
        node->life.map_master = role == 1 ? node->master : -1;
    }
    memcpy(c->applied, c->slottab.node, sizeof(c->applied));
    if (!c->ready_told) {
        c->ready_told = 1;
        tell_simple(c, CP_EVENT_READY, -1);
    }
}

void cp__lifecycle_resubscribed(cp__client *c, int n, int kind, const char *name, size_t len) {
    if (c->event_cb == NULL)
        return;
    cp_event ev = event_of(c, CP_EVENT_RESUBSCRIBED, n);
    ev.text = name;
    ev.text_len = len;
    ev.sub_kind = kind;
    tell(c, &ev);
}

int cp_node_get_stats(const cp_client *pc, int i, cp_node_stats *out) {
    const cp__client *c = cp__client_of((cp_client *)pc);
    if (i < 0 || i >= c->nnodes)
        return CP_EINVAL;
    const cp__node *node = &c->nodes[i];
    memset(out, 0, sizeof(*out));
    out->queued = node->q.n;
    out->in_flight = node->conn.fcount;
    out->bytes_out = node->conn.bytes_out;
    out->bytes_in = node->conn.bytes_in;
    out->connects = node->life.connects;
    out->reconnects = node->life.reconnects;
    out->moved = node->life.moved;
    out->ask = node->life.ask;
    out->last_err = node->life.last_err;
    snprintf(out->last_errstr, sizeof(out->last_errstr), "%s", node->life.last_errstr);
    return 0;
}
