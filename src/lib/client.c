/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Client: connect from seeds or one endpoint, keep the node set and slot table, refresh the
 * topology. The client owns every node connection and the pipeline cached for cp_command (made
 * and used by single.c, freed here through the public API). One thread at a time.
 */
#include "lib/client.h"

#include "lib/resp.h"
#include "lib/tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cp__client_err(cp__client *c, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    c->pub.err = code;
    vsnprintf(c->pub.errstr, sizeof(c->pub.errstr), fmt, ap);
    va_end(ap);
    return code;
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

int cp__client_node(cp__client *c, const char *host, int port) {
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].port == port && strcmp(c->nodes[i].host, host) == 0)
            return i;
    if (strlen(host) >= CP__HOSTLEN)
        return CP_EINVAL;
    if (c->nnodes == c->capnodes) {
        int ncap = c->capnodes ? c->capnodes * 2 : 8;
        cp__node *n = realloc(c->nodes, (size_t)ncap * sizeof(*n));
        if (n == NULL)
            return CP_ENOMEM;
        c->nodes = n;
        c->capnodes = ncap;
    }
    cp__node *n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof(*n));
    snprintf(n->host, sizeof(n->host), "%s", host);
    n->port = port;
    cp__conn_init(&n->conn);
    n->conn.fd_gen = &c->fd_gen;
    n->conn.replies = &c->replies;
    n->qhead = n->qtail = CP__NIL;
    return c->nnodes++;
}

int cp__client_connect_node(cp__client *c, int n) {
    cp__node *node = &c->nodes[n];
    if (node->conn.fd >= 0)
        return 0;
    int rc = cp__conn_open(&node->conn, node->host, node->port, &c->copts);
    if (rc != 0)
        node->failed_ns = cp__now_ns();
    return rc;
}

int cp__client_any_node(cp__client *c) {
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].is_master && c->nodes[i].conn.fd >= 0)
            return i;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].is_master)
            return i;
    return 0;
}

uint32_t cp__client_rand(cp__client *c, uint32_t n) {
    uint64_t x = c->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->rng = x;
    return n ? (uint32_t)(x % n) : 0;
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
    for (int i = 0; i < c->nnodes; i++)
        c->nodes[i].is_master = 0;
    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].master < 0)
            c->nodes[map[i]].is_master = 1;
    for (int s = 0; s < CP_SLOTS; s++)
        c->routes.node[s] = m->owner[s] < 0 ? -1 : (int16_t)map[m->owner[s]];
    cp__routes_rebuild(&c->routes);
    if (map != idx)
        free(map);
    return 0;
}

/* Asks one address for its slot map over conn (opened here when closed). CLUSTER SHARDS first;
 * a server without it (Redis < 7) is asked CLUSTER SLOTS from then on. */
static int fetch_map(cp__client *c, cp__conn *conn, const char *host, int port, cp__slotmap *m) {
    static const char shards[] = "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
    static const char slots[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    if (conn->fd < 0) {
        int rc = cp__conn_open(conn, host, port, &c->copts);
        if (rc != 0)
            return cp__client_err(c, rc, "%s", conn->errstr);
    }
    for (;;) {
        int use_slots = c->no_shards;
        redisReply *r =
            use_slots
                ? cp__conn_roundtrip(conn, slots, sizeof(slots) - 1, c->copts.io_timeout_ms)
                : cp__conn_roundtrip(conn, shards, sizeof(shards) - 1, c->copts.io_timeout_ms);
        if (r == NULL) {
            int rc = conn->err;
            cp__client_err(c, rc, "%s:%d: %s", host, port, conn->errstr);
            cp__conn_close(conn);
            return rc;
        }
        if (r->type == REDIS_REPLY_ERROR && !use_slots &&
            (strstr(r->str, "unknown subcommand") || strstr(r->str, "Unknown subcommand"))) {
            freeReplyObject(r);
            c->no_shards = 1;
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            int rc =
                strstr(r->str, "NOAUTH") || strstr(r->str, "WRONGPASS") ? CP_EAUTH : CP_ETOPOLOGY;
            cp__client_err(c, rc, "%s:%d: %.80s", host, port, r->str);
            freeReplyObject(r);
            return rc;
        }
        char err[CP_ERRSTR_LEN];
        int rc = use_slots
                     ? cp__topo_parse_slots(r, host, m, err, sizeof(err))
                     : cp__topo_parse_shards(r, host, c->copts.tls != NULL, m, err, sizeof(err));
        freeReplyObject(r);
        if (rc != 0)
            return cp__client_err(c, rc, "%s:%d: %s", host, port, err);
        if (cp__slotmap_covered(m) == 0) {
            cp__slotmap_free(m);
            return cp__client_err(c, CP_ETOPOLOGY, "%s:%d: no slot is assigned", host, port);
        }
        return 0;
    }
}

/* One attempt against one address. Uses the node's own connection when it is idle (nothing in
 * flight), else a temporary one, so a refresh never interleaves with pipelined traffic. */
static int refresh_from(cp__client *c, const char *host, int port) {
    int n = -1;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].port == port && strcmp(c->nodes[i].host, host) == 0)
            n = i;
    cp__conn tmp;
    cp__conn_init(&tmp);
    cp__conn *conn = &tmp;
    if (n >= 0 && c->nodes[n].conn.fcount == 0 && c->nodes[n].conn.olen == 0)
        conn = &c->nodes[n].conn;
    cp__slotmap m;
    int rc = fetch_map(c, conn, host, port, &m);
    cp__conn_free(&tmp);
    if (rc != 0)
        return rc;
    rc = apply_map(c, &m);
    cp__slotmap_free(&m);
    return rc;
}

int cp__client_refresh(cp__client *c) {
    c->last_refresh_ns = cp__now_ns();
    c->stats.refreshes++;
    int first_err = 0;
    char first_msg[CP_ERRSTR_LEN] = "";
    /* Known masters first, then other known nodes, then the seeds. */
    for (int pass = 0; pass < 3; pass++) {
        int count = pass < 2 ? c->nnodes : c->nseeds;
        for (int i = 0; i < count; i++) {
            if (pass < 2 && c->nodes[i].is_master != (pass == 0))
                continue;
            const char *host = pass < 2 ? c->nodes[i].host : c->seed_host[i];
            int port = pass < 2 ? c->nodes[i].port : c->seed_port[i];
            int rc = refresh_from(c, host, port);
            if (rc == 0) {
                c->need_refresh = 0;
                c->pub.err = 0;
                c->pub.errstr[0] = '\0';
                return 0;
            }
            if (rc == CP_ENOMEM)
                return rc;
            /* An authentication failure is the most useful thing to report. */
            if (first_err == 0 || (rc == CP_EAUTH && first_err != CP_EAUTH)) {
                first_err = rc;
                memcpy(first_msg, c->pub.errstr, sizeof(first_msg));
            }
        }
    }
    if (first_err == 0)
        first_err = CP_ETOPOLOGY;
    return cp__client_err(c, first_err, "no node gave a slot map: %s", first_msg);
}

/* Splits "h:p,h:p" into the seed arrays. */
static int parse_seeds(cp__client *c, const char *list) {
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    c->seed_host = calloc(n, sizeof(*c->seed_host));
    c->seed_port = calloc(n, sizeof(int));
    if (c->seed_host == NULL || c->seed_port == NULL)
        return cp__client_err(c, CP_ENOMEM, "out of memory");
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0) {
            if (cp__parse_addr(p, len, c->seed_host[c->nseeds], CP__HOSTLEN,
                               &c->seed_port[c->nseeds]) != 0)
                return cp__client_err(c, CP_EINVAL, "bad address '%.*s' (want host:port)",
                                      (int)(len > 64 ? 64 : len), p);
            c->nseeds++;
        }
        p += len + (end != NULL);
    }
    if (c->nseeds == 0)
        return cp__client_err(c, CP_EINVAL, "no address given");
    return 0;
}

cp_client *cp_connect(const cp_options *opt) {
    cp__client *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    cp_options def = CP_OPTIONS_INIT;
    if (opt == NULL)
        opt = &def;
    cp__routes_init(&c->routes);
    c->rng = (uint64_t)cp__now_ns() | 1u;
    c->copts.connect_timeout_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 2000;
    c->copts.io_timeout_ms = opt->io_timeout_ms > 0 ? opt->io_timeout_ms : 5000;
    c->max_redirects = opt->max_redirects > 0 ? opt->max_redirects : 16; /* <= 255: checked below */
    c->retry_budget_ms = opt->retry_budget_ms >= 0 ? opt->retry_budget_ms : 0;
    c->flags = opt->flags;
    c->username = dup_or_null(opt->username);
    c->password = dup_or_null(opt->password);
    c->copts.username = c->username;
    c->copts.password = c->password;
    if ((opt->username && !c->username) || (opt->password && !c->password)) {
        cp__client_err(c, CP_ENOMEM, "out of memory");
        return &c->pub;
    }
    if (opt->max_redirects > CP_MAX_REDIRECTS) {
        cp__client_err(c, CP_EINVAL, "max_redirects must be at most %d", CP_MAX_REDIRECTS);
        return &c->pub;
    }
    if ((opt->seeds == NULL) == (opt->endpoint == NULL)) {
        cp__client_err(c, CP_EINVAL, "set exactly one of seeds (cluster) or endpoint");
        return &c->pub;
    }
    if (opt->username && !opt->password) {
        cp__client_err(c, CP_EINVAL, "a username needs a password");
        return &c->pub;
    }
    if (opt->tls) {
        cp__tlsopts t = {opt->tls_ca_file, opt->tls_cert_file, opt->tls_key_file, NULL,
                         opt->tls_insecure};
        char why[CP_ERRSTR_LEN];
        if ((c->copts.tls = cp__tls_ctx_new(&t, why, sizeof(why))) == NULL) {
            cp__client_err(c, CP_EINVAL, "%s", why);
            return &c->pub;
        }
    }
    c->cluster = opt->seeds != NULL;
    if (parse_seeds(c, c->cluster ? opt->seeds : opt->endpoint) != 0)
        return &c->pub;
    if (!c->cluster) {
        if (c->nseeds != 1) {
            cp__client_err(c, CP_EINVAL, "endpoint mode takes one host:port");
            return &c->pub;
        }
        int n = cp__client_node(c, c->seed_host[0], c->seed_port[0]);
        if (n < 0) {
            cp__client_err(c, n, "out of memory");
            return &c->pub;
        }
        c->nodes[n].is_master = 1;
        /* Connect now so an unreachable endpoint or a wrong password is reported here. */
        if (cp__client_connect_node(c, n) != 0)
            cp__client_err(c, c->nodes[n].conn.err, "%s", c->nodes[n].conn.errstr);
        return &c->pub;
    }
    cp__client_refresh(c);
    return &c->pub;
}

void cp_free(cp_client *pc) {
    if (pc == NULL)
        return;
    cp__client *c = cp__client_of(pc);
    if (c->single != NULL)
        cp_pipeline_free(c->single);
    for (int i = 0; i < c->nnodes; i++)
        cp__conn_free(&c->nodes[i].conn);
    free(c->nodes);
    free(c->seed_host);
    free(c->seed_port);
    free(c->username);
    free(c->password);
    cp__tls_ctx_free(c->copts.tls);
    free(c);
}

int cp_is_cluster(const cp_client *c) {
    return ((const cp__client *)c)->cluster;
}

int cp_refresh(cp_client *pc) {
    cp__client *c = cp__client_of(pc);
    if (!c->cluster)
        return 0;
    return cp__client_refresh(c);
}

unsigned cp_client_fd_generation(const cp_client *c) {
    return ((const cp__client *)c)->fd_gen;
}

void cp_get_stats(const cp_client *c, cp_stats *out) {
    *out = ((const cp__client *)c)->stats;
}
