/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Parsing of CLUSTER SHARDS and CLUSTER SLOTS replies into a cp__slotmap. The parser trusts
 * nothing: every element's type and range is checked, since the reply may come from a buggy or
 * hostile peer. Pure functions; any thread.
 */
#include "lib/base/alloc.h"
#include "lib/map/topology.h"

#include "lib/proto/reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *why) {
    snprintf(err, errlen, "malformed topology reply: %s", why);
    return CP_EPROTO;
}

static int is_str(const redisReply *r) {
    return cp__reply_is_text(r);
}

static int str_eq(const redisReply *r, const char *s) {
    return is_str(r) && (size_t)r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

/* Appends node host:port (checked: a port in range, a host that fits); its index or a negative
 * CP_E* code. */
static int new_node(cp__slotmap *m, const char *host, size_t hostlen, long long port, int *cap) {
    if (port <= 0 || port > 65535 || hostlen >= CP__HOSTLEN)
        return CP_EPROTO;
    if (m->nnodes == *cap) {
        int ncap = *cap ? *cap * 2 : 8;
        cp__topo_node *n = cp__realloc(m->nodes, (size_t)ncap * sizeof(*n));
        if (n == NULL)
            return CP_ENOMEM;
        m->nodes = n;
        *cap = ncap;
    }
    cp__topo_node *n = &m->nodes[m->nnodes];
    memset(n, 0, sizeof(*n));
    memcpy(n->host, host, hostlen);
    n->port = (int)port;
    n->master = -1;
    n->healthy = 1;
    return m->nnodes++;
}

/* Finds or adds node host:port; returns its index or a negative CP_E* code. */
static int add_node(cp__slotmap *m, const char *host, size_t hostlen, const char *asked,
                    long long port, int *cap) {
    /* An empty or "?" address means the node does not know its own: use the host we asked. */
    if (hostlen == 0 || (hostlen == 1 && host[0] == '?')) {
        host = asked;
        hostlen = strlen(asked);
    }
    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].port == port && strlen(m->nodes[i].host) == hostlen &&
            memcmp(m->nodes[i].host, host, hostlen) == 0)
            return i;
    return new_node(m, host, hostlen, port, cap);
}

static void set_id(cp__topo_node *n, const redisReply *id) {
    if (is_str(id) && (size_t)id->len < CP__IDLEN) {
        memcpy(n->id, id->str, id->len);
        n->id[id->len] = '\0';
    }
}

static int assign(cp__slotmap *m, long long start, long long end, int node) {
    if (start < 0 || end >= CP_SLOTS || start > end)
        return CP_EPROTO;
    for (long long s = start; s <= end; s++)
        m->owner[s] = (int16_t)node;
    return 0;
}

static void map_init(cp__slotmap *m) {
    m->nodes = NULL;
    m->nnodes = 0;
    for (int s = 0; s < CP_SLOTS; s++)
        m->owner[s] = -1;
}

/* Looks up key `k` in a flat key/value array; NULL when absent. */
static const redisReply *kv_get(const redisReply *a, const char *k) {
    for (size_t i = 0; i + 1 < a->elements; i += 2)
        if (str_eq(a->element[i], k))
            return a->element[i + 1];
    return NULL;
}

/* One node of a shard: a flat array id, port, ip, endpoint, hostname, role, ... Returns its
 * index, and whether it is the shard's master in *is_master. */
static int shard_node(cp__slotmap *m, const redisReply *n, const char *asked, int tls, int *cap,
                      int *is_master) {
    if (!cp__reply_is_list(n) || n->elements % 2 != 0)
        return CP_EPROTO;
    const redisReply *port = kv_get(n, "port");
    if (tls && kv_get(n, "tls-port") != NULL)
        port = kv_get(n, "tls-port");
    const redisReply *ep = kv_get(n, "endpoint");
    const redisReply *ip = kv_get(n, "ip");
    const redisReply *role = kv_get(n, "role");
    const redisReply *health = kv_get(n, "health");
    if (port == NULL || port->type != REDIS_REPLY_INTEGER || !is_str(role))
        return CP_EPROTO;
    /* The preferred endpoint first; it is "" or "?" when unknown, then the ip. */
    const redisReply *addr = ep;
    if (!is_str(addr) || addr->len == 0 || (addr->len == 1 && addr->str[0] == '?'))
        addr = ip;
    const char *h = is_str(addr) ? addr->str : "";
    size_t hl = is_str(addr) ? (size_t)addr->len : 0;
    int idx = add_node(m, h, hl, asked, port->integer, cap);
    if (idx < 0)
        return idx;
    set_id(&m->nodes[idx], kv_get(n, "id"));
    m->nodes[idx].healthy = !str_eq(health, "fail") && !str_eq(health, "failed");
    *is_master = str_eq(role, "master");
    return idx;
}

int cp__topo_parse_shards(const redisReply *r, const char *asked, int tls, cp__slotmap *out,
                          char *err, size_t errlen) {
    int cap = 0, rc = CP_EPROTO;
    const char *why = "not an array";
    map_init(out);
    if (!cp__reply_is_list(r))
        goto bad;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *sh = r->element[i];
        why = "shard is not a key/value array";
        if (!cp__reply_is_list(sh) || sh->elements % 2 != 0)
            goto bad;
        const redisReply *slots = kv_get(sh, "slots");
        const redisReply *nodes = kv_get(sh, "nodes");
        why = "shard without slots or nodes";
        if (slots == NULL || nodes == NULL || !cp__reply_is_list(slots) ||
            !cp__reply_is_list(nodes) || slots->elements % 2 != 0)
            goto bad;
        int master = -1, first = out->nnodes;
        for (size_t j = 0; j < nodes->elements; j++) {
            int is_master = 0;
            int idx = shard_node(out, nodes->element[j], asked, tls, &cap, &is_master);
            why = "bad node entry";
            if (idx < 0) {
                rc = idx;
                goto bad;
            }
            if (is_master)
                master = idx;
        }
        /* Replicas point at their shard's master. */
        for (int j = first; j < out->nnodes; j++)
            if (j != master)
                out->nodes[j].master = master;
        if (slots->elements > 0 && master < 0) {
            why = "shard has slots but no master";
            goto bad;
        }
        for (size_t j = 0; j < slots->elements; j += 2) {
            const redisReply *a = slots->element[j], *b = slots->element[j + 1];
            why = "bad slot range";
            if (a->type != REDIS_REPLY_INTEGER || b->type != REDIS_REPLY_INTEGER ||
                assign(out, a->integer, b->integer, master) != 0)
                goto bad;
        }
    }
    return 0;
bad:
    cp__slotmap_free(out);
    if (rc == CP_ENOMEM) {
        snprintf(err, errlen, "out of memory parsing topology");
        return rc;
    }
    return fail(err, errlen, why);
}

int cp__topo_parse_slots(const redisReply *r, const char *asked, cp__slotmap *out, char *err,
                         size_t errlen) {
    int cap = 0, rc = CP_EPROTO;
    const char *why = "not an array";
    map_init(out);
    if (!cp__reply_is_list(r))
        goto bad;
    for (size_t i = 0; i < r->elements; i++) {
        /* [start, end, [host, port, id, ...] master, [host, port, id, ...] replica ...] */
        const redisReply *e = r->element[i];
        why = "bad slot range entry";
        if (!cp__reply_is_list(e) || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER)
            goto bad;
        int master = -1;
        for (size_t j = 2; j < e->elements; j++) {
            const redisReply *n = e->element[j];
            why = "bad node entry";
            /* A nil host: the node announces no endpoint (cluster-preferred-endpoint-type
             * unknown-endpoint), and it is reached where it was asked, as "?" and "" are. */
            if (!cp__reply_is_list(n) || n->elements < 2 ||
                !(is_str(n->element[0]) || n->element[0]->type == REDIS_REPLY_NIL) ||
                n->element[1]->type != REDIS_REPLY_INTEGER)
                goto bad;
            int nil = n->element[0]->type == REDIS_REPLY_NIL;
            int idx =
                add_node(out, nil ? "" : n->element[0]->str, nil ? 0 : (size_t)n->element[0]->len,
                         asked, n->element[1]->integer, &cap);
            if (idx < 0) {
                rc = idx;
                goto bad;
            }
            if (n->elements >= 3)
                set_id(&out->nodes[idx], n->element[2]);
            if (j == 2)
                master = idx;
            else
                out->nodes[idx].master = master;
        }
        why = "bad slot range";
        if (assign(out, e->element[0]->integer, e->element[1]->integer, master) != 0)
            goto bad;
    }
    return 0;
bad:
    cp__slotmap_free(out);
    if (rc == CP_ENOMEM) {
        snprintf(err, errlen, "out of memory parsing topology");
        return rc;
    }
    return fail(err, errlen, why);
}

/* ---- CLUSTER NODES ---- */

/* A run of bytes of the text. */
typedef struct span {
    const char *p;
    size_t n;
} span;

static int span_eq(span a, const char *s) {
    return a.n == strlen(s) && memcmp(a.p, s, a.n) == 0;
}

/* The next space-separated field of *line (which shrinks past it); n == 0 at its end. */
static span next_field(span *line) {
    while (line->n > 0 && line->p[0] == ' ') {
        line->p++;
        line->n--;
    }
    span f = {line->p, 0};
    while (f.n < line->n && f.p[f.n] != ' ')
        f.n++;
    line->p += f.n;
    line->n -= f.n;
    return f;
}

/* 1 when the comma-separated flags contain `flag`. */
static int has_flag(span flags, const char *flag) {
    size_t at = 0;
    while (at < flags.n) {
        size_t end = at;
        while (end < flags.n && flags.p[end] != ',')
            end++;
        if (span_eq((span){flags.p + at, end - at}, flag))
            return 1;
        at = end + 1;
    }
    return 0;
}

/* Decimal digits only (at most 9 of them), into *v. 0 or -1. */
static int span_uint(span s, long *v) {
    if (s.n == 0 || s.n > 9)
        return -1;
    long x = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -1;
        x = x * 10 + (s.p[i] - '0');
    }
    *v = x;
    return 0;
}

/* The next non-empty line of *rest (which shrinks past it), without its CR: 1, or 0 at the end. */
static int next_line(span *rest, span *line) {
    while (rest->n > 0) {
        size_t n = 0;
        while (n < rest->n && rest->p[n] != '\n')
            n++;
        *line = (span){rest->p, n};
        rest->p += n < rest->n ? n + 1 : n;
        rest->n -= n < rest->n ? n + 1 : n;
        if (line->n > 0 && line->p[line->n - 1] == '\r')
            line->n--;
        if (line->n > 0)
            return 1;
    }
    return 0;
}

/* A node's fixed fields: id, address, flags, master, ping-sent, pong-recv, epoch, link. */
typedef struct nodes_line {
    span id, addr, flags, master, slots; /* slots: the rest of the line */
} nodes_line;

static const char *split_line(span line, nodes_line *l) {
    span f[8];
    for (int i = 0; i < 8; i++)
        if ((f[i] = next_field(&line)).n == 0)
            return "a CLUSTER NODES line has fewer than 8 fields";
    l->id = f[0];
    l->addr = f[1];
    l->flags = f[2];
    l->master = f[3];
    l->slots = line;
    return l->id.n < CP__IDLEN ? NULL : "node id too long";
}

/* Index of the node with this id, or -1. */
static int find_id(const cp__slotmap *m, span id) {
    for (int i = 0; i < m->nnodes; i++)
        if (span_eq(id, m->nodes[i].id))
            return i;
    return -1;
}

/* Adds the line's node unless it has no address (noaddr, a handshake, port 0): its index, -1
 * when left out, or a CP_E* code. */
static int nodes_add(cp__slotmap *m, const nodes_line *l, const char *asked, int *cap,
                     const char **why) {
    *why = "bad node address";
    if (has_flag(l->flags, "noaddr") || has_flag(l->flags, "handshake"))
        return -1;
    size_t end = 0; /* ip:port@cport[,hostname]: the address ends at '@' (or ',') */
    while (end < l->addr.n && l->addr.p[end] != '@' && l->addr.p[end] != ',')
        end++;
    size_t colon = end;
    while (colon > 0 && l->addr.p[colon - 1] != ':')
        colon--;
    long port;
    if (colon == 0 || span_uint((span){l->addr.p + colon, end - colon}, &port) != 0)
        return CP_EPROTO;
    if (port == 0)
        return -1;
    if (find_id(m, l->id) >= 0) {
        *why = "a node id listed twice";
        return CP_EPROTO;
    }
    const char *host = l->addr.p;
    size_t hostlen = colon - 1;
    if (hostlen == 0) {
        host = asked;
        hostlen = strlen(asked);
    }
    int idx = new_node(m, host, hostlen, port, cap);
    if (idx >= 0) {
        memcpy(m->nodes[idx].id, l->id.p, l->id.n);
        m->nodes[idx].healthy = !has_flag(l->flags, "fail");
    }
    return idx;
}

/* One slot field: "S", "S-E", "[S->-id]" or "[S-<-id]". The marks count for myself only. */
static const char *nodes_slots(cp__nodesview *v, span f, int node, int is_myself) {
    long a, b;
    if (f.p[0] == '[') {
        size_t i = 1;
        while (i < f.n && f.p[i] >= '0' && f.p[i] <= '9')
            i++;
        span rest = {f.p + i, f.n - i};
        if (span_uint((span){f.p + 1, i - 1}, &a) != 0 || a >= CP_SLOTS || rest.n < 5 ||
            rest.p[rest.n - 1] != ']' ||
            (memcmp(rest.p, "->-", 3) != 0 && memcmp(rest.p, "-<-", 3) != 0))
            return "bad slot migration mark";
        if (is_myself) {
            v->moving[a] = rest.p[1] == '>' ? CP__SLOT_MIGRATING : CP__SLOT_IMPORTING;
            v->peer[a] = (int16_t)find_id(&v->map, (span){rest.p + 3, rest.n - 4});
        }
        return NULL;
    }
    size_t dash = 0;
    while (dash < f.n && f.p[dash] != '-')
        dash++;
    if (span_uint((span){f.p, dash}, &a) != 0)
        return "bad slot range";
    b = a;
    if (dash < f.n && span_uint((span){f.p + dash + 1, f.n - dash - 1}, &b) != 0)
        return "bad slot range";
    if (a > b || b >= CP_SLOTS)
        return "bad slot range";
    if (node >= 0)
        for (long s = a; s <= b; s++)
            v->map.owner[s] = (int16_t)node;
    return NULL;
}

int cp__topo_parse_nodes(const char *text, size_t len, const char *asked, cp__nodesview *out,
                         char *err, size_t errlen) {
    int cap = 0, rc = CP_EPROTO;
    const char *why = NULL; /* set by every failure below */
    map_init(&out->map);
    out->myself = -1;
    memset(out->moving, 0, sizeof(out->moving));
    for (int s = 0; s < CP_SLOTS; s++)
        out->peer[s] = -1;
    /* Nodes first, so that masters and migration peers named by id resolve in any order. */
    span rest = {text, len}, line;
    nodes_line l;
    while (next_line(&rest, &line)) {
        if ((why = split_line(line, &l)) != NULL)
            goto bad;
        int idx = nodes_add(&out->map, &l, asked, &cap, &why);
        if (idx < -1) {
            rc = idx;
            goto bad;
        }
        if (idx >= 0 && has_flag(l.flags, "myself"))
            out->myself = idx;
    }
    rest = (span){text, len};
    while (next_line(&rest, &line)) {
        split_line(line, &l);
        int idx = find_id(&out->map, l.id);
        if (idx >= 0 && has_flag(l.flags, "slave"))
            out->map.nodes[idx].master = find_id(&out->map, l.master);
        int serves = idx >= 0 && has_flag(l.flags, "master") ? idx : -1;
        for (span f = next_field(&l.slots); f.n > 0; f = next_field(&l.slots))
            if ((why = nodes_slots(out, f, serves, idx >= 0 && idx == out->myself)) != NULL)
                goto bad;
    }
    return 0;
bad:
    cp__slotmap_free(&out->map);
    if (rc == CP_ENOMEM) {
        snprintf(err, errlen, "out of memory parsing topology");
        return rc;
    }
    return fail(err, errlen, why);
}

int cp__slotmap_covered(const cp__slotmap *m) {
    int n = 0;
    for (int s = 0; s < CP_SLOTS; s++)
        n += m->owner[s] >= 0;
    return n;
}

void cp__slotmap_free(cp__slotmap *m) {
    cp__free(m->nodes);
    m->nodes = NULL;
    m->nnodes = 0;
}
