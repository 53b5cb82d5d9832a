/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Client: options, seeds, the node set and its connections, registration with the loop. No
 * I/O but starting a non-blocking connect; the slot map is read by refresh.c and exec.c. One
 * thread at a time.
 */
#include "lib/base/alloc.h"
#include "lib/client/client.h"

#include "lib/cache/cache.h"
#include "lib/cmd/cmdtable.h"
#include "lib/cmd/keyspec.h"

#include "lib/proto/resp.h"
#include "lib/net/tls.h"

#include <stdarg.h>
#include <stdint.h>
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
    return s ? cp__strdup(s) : NULL;
}

int cp__client_node(cp__client *c, const char *host, int port) {
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].port == port && strcmp(c->nodes[i].host, host) == 0)
            return i;
    if (strlen(host) >= CP__HOSTLEN)
        return CP_EINVAL;
    if (c->nnodes == c->capnodes) {
        int ncap = c->capnodes ? c->capnodes * 2 : 8;
        cp__node *n = cp__realloc(c->nodes, (size_t)ncap * sizeof(*n));
        if (n == NULL)
            return CP_ENOMEM;
        c->nodes = n;
        c->capnodes = ncap;
    }
    cp__node *n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof(*n));
    snprintf(n->host, sizeof(n->host), "%s", host);
    n->port = port;
    n->master = -1;
    n->reader = -1;
    cp__conn_init(&n->conn);
    return c->nnodes++;
}

int cp__queue_push(cp__queue *q, struct cp_pipeline *p, uint32_t tag) {
    if (q->n == q->cap) {
        uint32_t ncap = q->cap ? q->cap * 2 : 64;
        cp__qent *v = cp__malloc((size_t)ncap * sizeof(*v));
        if (v == NULL)
            return CP_ENOMEM;
        for (uint32_t i = 0; i < q->n; i++)
            v[i] = *cp__queue_at(q, i);
        cp__free(q->v);
        q->v = v;
        q->head = 0;
        q->cap = ncap;
    }
    q->v[(q->head + q->n) & (q->cap - 1)] = (cp__qent){p, tag};
    q->n++;
    return 0;
}

void cp__queue_trim(cp__queue *q) {
    if (q->n > 0)
        return;
    cp__free(q->v);
    q->v = NULL;
    q->head = q->cap = 0;
}

void cp__client_trim_demoted(cp__client *c, int n) {
    cp__node *node = &c->nodes[n];
    if (c->cluster && !node->is_master && c->read_from == CP_READ_MASTER) {
        cp__conn_trim(&node->conn);
        cp__queue_trim(&node->q);
    }
}

int cp__client_connect_node(cp__client *c, int n) {
    cp__node *node = &c->nodes[n];
    if (node->conn.state != CP__CONN_CLOSED)
        return 0;
    int rc = cp__conn_start(&node->conn, node->host, node->port, &c->copts);
    cp__client_sync_node(c, n);
    return rc;
}

/* The loop told of a change in what one fd wants: sync_fd's slow path, out of line so that the
 * common "nothing changed" test saves no registers (it runs for every node after every batch:
 * 12 instructions per GET at depth 10, callgrind, bench/callgrind-get.sh). */
__attribute__((noinline)) static void change_fd(cp__client *c, int fd, uint8_t *ev, void **ev_data,
                                                int want) {
    int add = want & ~*ev, del = *ev & ~want;
    if (add & CP__EV_READ)
        c->ops->add_read(c->loop, &c->pub, fd, ev_data);
    if (add & CP__EV_WRITE)
        c->ops->add_write(c->loop, &c->pub, fd, ev_data);
    if (del & CP__EV_READ)
        c->ops->del_read(c->loop, &c->pub, fd, ev_data);
    if (del & CP__EV_WRITE)
        c->ops->del_write(c->loop, &c->pub, fd, ev_data);
    *ev = (uint8_t)want;
}

/* One fd's registration with the loop brought to `want`; *ev is what the loop has now. */
static inline void sync_fd(cp__client *c, int fd, uint8_t *ev, void **ev_data, int want) {
    if (want != *ev && c->ops != NULL)
        change_fd(c, fd, ev, ev_data, want);
}

/* The loop lets go of an fd (cleanup), before it is closed or the client leaves the loop. */
static void unregister_fd(cp__client *c, int fd, uint8_t *ev, void **ev_data) {
    if (fd >= 0 && c->ops != NULL && (*ev != 0 || *ev_data != NULL))
        c->ops->cleanup(c->loop, &c->pub, fd, ev_data);
    *ev = 0;
    *ev_data = NULL;
}

void cp__client_sync_conn(cp__client *c, cp__conn *conn, int want) {
    sync_fd(c, conn->fd, &conn->ev, &conn->ev_data, want);
}

void cp__client_sync_node(cp__client *c, int n) {
    cp__conn *conn = &c->nodes[n].conn;
    int want = cp__conn_interest(conn);
    if (conn->state == CP__CONN_READY && c->nodes[n].q.n > 0)
        want |= CP__EV_WRITE;
    cp__client_sync_conn(c, conn, want);
}

void cp__client_unregister_conn(cp__client *c, cp__conn *conn) {
    unregister_fd(c, conn->fd, &conn->ev, &conn->ev_data);
}

/* The resolver's hook: told from inside c-ares, before a socket of its is closed too. */
static void dns_sock(void *owner, cp__rsock *s, int closing) {
    cp__client *c = owner;
    if (closing)
        unregister_fd(c, s->fd, &s->ev, &s->ev_data);
    else
        sync_fd(c, s->fd, &s->ev, &s->ev_data, s->want);
}

void cp__client_sync_dns(cp__client *c) {
    for (int i = 0; i < c->resolver.nsocks; i++)
        dns_sock(c, &c->resolver.socks[i], 0);
}

void cp__client_unregister_dns(cp__client *c) {
    for (int i = 0; i < c->resolver.nsocks; i++) {
        cp__rsock *s = &c->resolver.socks[i];
        unregister_fd(c, s->fd, &s->ev, &s->ev_data);
    }
}

int cp__client_conn_progress(cp__client *c, cp__conn *conn, int events) {
    int rc = cp__conn_progress(conn, events);
    if (rc == CP__CONN_NEXT) {
        cp__client_unregister_conn(c, conn);
        rc = cp__conn_next(conn);
    }
    return rc;
}

void cp__client_unregister_node(cp__client *c, int n) {
    cp__client_unregister_conn(c, &c->nodes[n].conn);
}

void cp__client_free_tlink(cp__client *c, int n) {
    cp__node *node = &c->nodes[n];
    if (node->tlink != NULL) {
        cp__client_unregister_conn(c, &node->tlink->conn);
        cp__conn_free(&node->tlink->conn);
        cp__free(node->tlink);
        node->tlink = NULL;
    }
    node->track_id = 0;
    if (node->track == CP__TRACK_ON)
        node->track = CP__TRACK_OFF;
}

void cp__client_close_node(cp__client *c, int n) {
    if (c->cache != NULL && c->nodes[n].conn.state != CP__CONN_CLOSED)
        cp__cache_node_closed(c->cache, n); /* its tracking ends with it */
    cp__client_free_tlink(c, n);       /* RESP2's: a new connection is tracked through a new link */
    c->nodes[n].track = CP__TRACK_OFF; /* a REDIRECT under way went with the connection */
    cp__client_unregister_node(c, n);
    cp__conn_close(&c->nodes[n].conn);
    c->nodes[n].waits = 0; /* its WAITs went with it, answered or not */
    c->nodes[n].wait_until = 0;
}

int cp__client_any_node(cp__client *c) {
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].is_master && c->nodes[i].conn.state == CP__CONN_READY)
            return i;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i].is_master)
            return i;
    return c->nnodes > 0 ? 0 : -1;
}

uint32_t cp__client_rand(cp__client *c, uint32_t n) {
    uint64_t x = c->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->rng = x;
    return n ? (uint32_t)(x % n) : 0;
}

/* Splits "h:p,h:p" into the seed arrays. */
static int parse_seeds(cp__client *c, const char *list) {
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    c->seed_host = cp__calloc(n, sizeof(*c->seed_host));
    c->seed_port = cp__calloc(n, sizeof(int));
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

cp__client *cp__client_create(const cp_options *opt) {
    cp__client *c = cp__calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    cp_options def = CP_OPTIONS_INIT;
    if (opt == NULL)
        opt = &def;
    cp__slottab_init(&c->slottab);
    c->rng = (uint64_t)cp__now_ns() | 1u;
    /* 0 is each field's default; negative is "none" where the field has one (clusterpipe.h). */
    c->copts.connect_timeout_ms = opt->connect_timeout_ms > 0    ? opt->connect_timeout_ms
                                  : opt->connect_timeout_ms == 0 ? CP_DEFAULT_CONNECT_TIMEOUT_MS
                                                                 : CP__TIMEOUT_NONE_MS;
    c->copts.io_timeout_ms = opt->io_timeout_ms > 0    ? opt->io_timeout_ms
                             : opt->io_timeout_ms == 0 ? CP_DEFAULT_IO_TIMEOUT_MS
                                                       : CP__TIMEOUT_NONE_MS;
    c->max_redirects = opt->max_redirects > 0 ? opt->max_redirects /* <= 255: checked below */
                                              : CP_DEFAULT_MAX_REDIRECTS;
    c->retry_budget_ms = opt->retry_budget_ms > 0    ? opt->retry_budget_ms
                         : opt->retry_budget_ms == 0 ? CP_DEFAULT_RETRY_BUDGET_MS
                                                     : 0; /* CP_RETRY_NONE */
    c->flags = opt->flags;
    c->max_pending = opt->max_pending > 0    ? (size_t)opt->max_pending
                     : opt->max_pending == 0 ? CP_DEFAULT_MAX_PENDING
                                             : SIZE_MAX; /* CP_PENDING_UNLIMITED */
    if (opt->commands_from != NULL) { /* an idle client's table, immutable: shared, not read */
        c->cmdtab = cp__cmdtable_ref(cp__client_of((cp_client *)opt->commands_from)->cmdtab);
        if (c->cmdtab != NULL)
            c->cmdtab_state = 2;
    }
    c->username = dup_or_null(opt->username);
    c->password = dup_or_null(opt->password);
    c->tls_server_name = dup_or_null(opt->tls_server_name);
    c->dns_servers = dup_or_null(opt->dns_servers);
    c->copts.username = c->username;
    c->copts.password = c->password;
    c->copts.tls_server_name = c->tls_server_name;
    c->copts.prefer_ip = opt->prefer_ip;
    c->copts.resolver = &c->resolver;
    c->resolver.servers = c->dns_servers;
    c->resolver.hook = dns_sock;
    c->resolver.owner = c;
    /* One try of a query: a quarter of the connect timeout (50 ms to 2 s), three tries; the
     * connect timeout bounds the resolution whatever c-ares would still try. */
    int try_ms = c->copts.connect_timeout_ms / 4;
    c->resolver.try_ms = try_ms < 50 ? 50 : try_ms > 2000 ? 2000 : try_ms;
    if ((opt->username && !c->username) || (opt->password && !c->password) ||
        (opt->tls_server_name && !c->tls_server_name) || (opt->dns_servers && !c->dns_servers)) {
        cp__client_err(c, CP_ENOMEM, "out of memory");
        return c;
    }
    if (opt->max_redirects > CP_MAX_REDIRECTS) {
        cp__client_err(c, CP_EINVAL, "max_redirects must be at most %d", CP_MAX_REDIRECTS);
        return c;
    }
    if (opt->max_redirects < 0) { /* no "none": the first hop is always followed */
        cp__client_err(c, CP_EINVAL, "max_redirects must not be negative (0: the default, %d)",
                       CP_DEFAULT_MAX_REDIRECTS);
        return c;
    }
    if (opt->blocking_conns < 0) { /* no "none": a blocking command needs a connection */
        cp__client_err(c, CP_EINVAL, "blocking_conns must not be negative (0: the default, %d)",
                       CP_DEFAULT_BLOCKING_CONNS);
        return c;
    }
    if ((opt->seeds == NULL) == (opt->endpoint == NULL)) {
        cp__client_err(c, CP_EINVAL, "set exactly one of seeds (cluster) or endpoint");
        return c;
    }
    if (opt->username && !opt->password) {
        cp__client_err(c, CP_EINVAL, "a username needs a password");
        return c;
    }
    if (opt->tls) {
        cp__tlsopts t = {opt->tls_ca_file, opt->tls_cert_file, opt->tls_key_file,
                         opt->tls_insecure};
        char why[CP_ERRSTR_LEN];
        if ((c->copts.tls = cp__tls_ctx_new(&t, why, sizeof(why))) == NULL) {
            cp__client_err(c, CP_EINVAL, "%s", why);
            return c;
        }
    }
    if (opt->prefer_ip < CP_PREFER_IP_ANY || opt->prefer_ip > CP_PREFER_IPV6) {
        cp__client_err(c, CP_EINVAL, "prefer_ip must be one of CP_PREFER_IP_*");
        return c;
    }
    if (opt->read_from < CP_READ_MASTER || opt->read_from > CP_READ_REPLICA_PREFERRED) {
        cp__client_err(c, CP_EINVAL, "read_from must be one of CP_READ_*");
        return c;
    }
    if (opt->protocol != 0 && opt->protocol != 2 && opt->protocol != 3) {
        cp__client_err(c, CP_EINVAL, "protocol must be 2 or 3 (0: the default, 2)");
        return c;
    }
    c->copts.resp3 = opt->protocol == 3;
    c->pool_per_node = opt->blocking_conns > 0 ? opt->blocking_conns : CP_DEFAULT_BLOCKING_CONNS;
    c->cluster = opt->seeds != NULL;
    c->read_from = c->cluster ? opt->read_from : CP_READ_MASTER;
    c->copts.readonly = c->read_from != CP_READ_MASTER;
    if (opt->client_cache != NULL && !c->cluster) {
        cp__client_err(c, CP_EINVAL,
                       "client_cache needs cluster mode (seeds): behind a single endpoint "
                       "(twemproxy) no connection reaches the node that tracks a key");
        return c;
    }
    if (opt->client_cache != NULL && (c->cache = cp__cache_new(opt->client_cache)) == NULL) {
        cp__client_err(c, CP_ENOMEM, "out of memory");
        return c;
    }
    c->pool_opts = c->copts; /* without tracking: what a blocking command reads is not cached */
    c->pool_opts.readonly = 0;
    c->copts.tracking = c->cache != NULL; /* RESP2 turns it on later: tracklink.h */
    if (parse_seeds(c, c->cluster ? opt->seeds : opt->endpoint) != 0)
        return c;
    if (!c->cluster) {
        if (c->nseeds != 1) {
            cp__client_err(c, CP_EINVAL, "endpoint mode takes one host:port");
            return c;
        }
        int n = cp__client_node(c, c->seed_host[0], c->seed_port[0]);
        if (n < 0) {
            cp__client_err(c, n, "out of memory");
            return c;
        }
        c->nodes[n].is_master = 1;
        for (int s = 0; s < CP_SLOTS; s++) /* one node serves everything */
            c->slottab.node[s] = (int16_t)n;
        cp__slottab_rebuild(&c->slottab);
        return c;
    }
    c->need_refresh = 1; /* the first map is read once the client is on a loop */
    return c;
}

cp_client *cp_client_new(const cp_options *opt) {
    return (cp_client *)cp__client_create(opt);
}

void cp__client_destroy(cp__client *c) {
    cp__cmdtable_free(c->cmdtab);
    for (int i = 0; i < c->nnodes; i++) {
        cp__client_close_node(c, i);
        cp__conn_free(&c->nodes[i].conn);
        cp__free(c->nodes[i].q.v);
    }
    for (int i = 0; i < c->nfences; i++) {
        cp__free(c->fences[i].held);
        cp__free(c->fences[i].old);
    }
    cp__free(c->fences);
    cp__free(c->fence_of);
    for (int i = 0; i < c->npool; i++) {
        cp__client_unregister_conn(c, &c->pool[i]->conn);
        cp__conn_free(&c->pool[i]->conn);
        cp__free(c->pool[i]);
    }
    cp__free(c->pool);
    cp__free(c->pool_wait);
    for (int i = 0; i < c->nlinks; i++) { /* a client never on a loop may still have them */
        cp__client_unregister_conn(c, &c->links[i]->conn);
        cp__conn_free(&c->links[i]->conn);
        cp__free(c->links[i]->ops);
        cp__free(c->links[i]);
    }
    cp__free(c->links);
    for (int i = 0; i < c->nsubs; i++) {
        cp__free(c->subs[i]->name);
        cp__free(c->subs[i]);
    }
    cp__free(c->subs);
    cp__free(c->refresh.cand);
    cp__free(c->nodes);
    cp__free(c->seed_host);
    cp__free(c->seed_port);
    cp__resolve_free(&c->resolver); /* every connection is closed: its queries were dropped */
    cp__free(c->username);
    cp__free(c->password);
    cp__free(c->tls_server_name);
    cp__free(c->dns_servers);
    cp__tls_ctx_free(c->copts.tls);
    cp__cache_free(c->cache);
    cp__free(c);
}

int cp_is_cluster(const cp_client *c) {
    return ((const cp__client *)c)->cluster;
}

int cp_command_keys(const cp_client *c, int argc, const char **argv, const size_t *argvlen, int *at,
                    int max) {
    if (argc < 1 || argv == NULL || argvlen == NULL)
        return CP_EINVAL;
    cp__keys k;
    const cp__cmdtable *t = c != NULL ? ((const cp__client *)c)->cmdtab : NULL;
    cp__keys_find(t, argc, (const char *const *)argv, argvlen, 0, &k);
    for (int i = 0; i < k.n && i < max; i++)
        at[i] = cp__keys_at(&k, i);
    return k.n;
}

size_t cp_pending(const cp_client *c) {
    return ((const cp__client *)c)->pending;
}

void cp_get_stats(const cp_client *c, cp_stats *out) {
    *out = ((const cp__client *)c)->stats;
    out->resolved = ((const cp__client *)c)->resolver.resolved;
}

void cp_cache_get_stats(const cp_client *pc, cp_cache_stats *out) {
    const cp__cache *k = ((const cp__client *)pc)->cache;
    memset(out, 0, sizeof(*out));
    if (k == NULL)
        return;
    *out = k->stats;
    const cp__client *c = (const cp__client *)pc;
    for (int n = 0; n < c->nnodes; n++)
        out->tracked_nodes += (size_t)cp__client_tracked(c, n);
    out->evictions = k->store.evictions;
    out->entries = k->store.nentries;
    out->bytes = k->store.bytes;
}

void cp_cache_clear(cp_client *pc) {
    cp__cache *k = cp__client_of(pc)->cache;
    if (k != NULL)
        cp__cache_wrote(k, -1);
}

/* ---- node iteration (public, read-only) ---------------------------------------------------- */

int cp_node_count(const cp_client *pc) {
    return cp__client_of((cp_client *)pc)->nnodes;
}

int cp_node_get(const cp_client *pc, int i, cp_node_info *out) {
    const cp__client *c = cp__client_of((cp_client *)pc);
    if (i < 0 || i >= c->nnodes)
        return CP_EINVAL;
    const cp__node *n = &c->nodes[i];
    snprintf(out->host, sizeof(out->host), "%s", n->host);
    out->port = n->port;
    out->role = n->is_master ? CP_NODE_MASTER : n->master >= 0 ? CP_NODE_REPLICA : CP_NODE_OTHER;
    out->master = n->master;
    out->nslots = 0;
    for (int s = 0; s < CP_SLOTS; s++)
        out->nslots += c->slottab.node[s] == i;
    return 0;
}

int cp_node_slots(const cp_client *pc, int i, int (*ranges)[2], int max) {
    const cp__client *c = cp__client_of((cp_client *)pc);
    if (i < 0 || i >= c->nnodes)
        return CP_EINVAL;
    int n = 0;
    for (int s = 0; s < CP_SLOTS; s++) {
        if (c->slottab.node[s] != i)
            continue;
        if (s > 0 && c->slottab.node[s - 1] == i) { /* the run goes on */
            if (n - 1 < max)
                ranges[n - 1][1] = s;
            continue;
        }
        if (n < max)
            ranges[n][0] = ranges[n][1] = s;
        n++;
    }
    return n;
}
