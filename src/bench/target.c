/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Targets of the bench engine: building a cp__bench_target from a topology or from an external
 * endpoint list, the client options every connection to it takes, and resolving it before a run
 * (slot map, endpoints, which processes to measure or count, key and value formats). See
 * target.h.
 *
 * A cp__target_ctx owns its map, endpoint and server arrays and its value template, freed by
 * cp__target_ctx_free. Calling thread only; blocks on the slot-map round trip.
 */
#include "bench/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp__bench_target_from_topo(cp__bench_target *out, const cp_topo *t, const char *password,
                               const char *user) {
    memset(out, 0, sizeof(*out));
    out->mode = cp_topo_get_kind(t) == CP_TOPO_TWEMPROXY ? CP__TARGET_PROXY : CP__TARGET_CLUSTER;
    if (cp_topo_endpoints(t, out->endpoints, sizeof(out->endpoints)) != 0)
        return CP_EINVAL;
    cp_options o = CP_OPTIONS_INIT;
    cp_topo_client_options(t, &o);
    out->password = password != NULL ? password : o.password;
    out->user = user;
    out->tls = o.tls;
    out->tls_insecure = o.tls_insecure;
    out->tls_ca = o.tls_ca_file;
    out->tls_cert = o.tls_cert_file;
    out->tls_key = o.tls_key_file;
    out->topo = t;
    return 0;
}

void cp__bench_target_options(const cp__bench_target *t, cp_options *opt) {
    opt->password = t->password;
    opt->username = t->password ? t->user : NULL;
    opt->tls = t->tls;
    opt->tls_insecure = t->tls_insecure;
    opt->tls_ca_file = t->tls_ca;
    opt->tls_cert_file = t->tls_cert;
    opt->tls_key_file = t->tls_key;
    opt->protocol = t->protocol;
}

cp_client *cp__target_node_connect(const cp__bench_target *t, const char *host, int port, char *err,
                                   size_t errlen) {
    cp_options auth = CP_OPTIONS_INIT;
    cp__bench_target_options(t, &auth);
    return cp__node_connect(host, port, &auth, err, errlen);
}

int cp__bench_target_external(cp__bench_target *out, cp__target_mode mode, const char *endpoints,
                              const char *password, const char *user) {
    memset(out, 0, sizeof(*out));
    cp__node_addr *tmp = malloc(CP__NODES_MAX * sizeof(*tmp));
    int ok = tmp != NULL && endpoints != NULL && strlen(endpoints) < sizeof(out->endpoints) &&
             cp__addr_list_parse(endpoints, tmp, CP__NODES_MAX) > 0 &&
             (mode == CP__TARGET_CLUSTER || mode == CP__TARGET_PROXY);
    free(tmp);
    if (!ok)
        return CP_EINVAL;
    out->mode = mode;
    snprintf(out->endpoints, sizeof(out->endpoints), "%s", endpoints);
    out->password = password;
    out->user = user;
    return 0;
}

const char *cp__bench_target_topology(const cp__bench_target *t) {
    if (t->topo == NULL)
        return "external";
    return cp_topo_get_kind(t->topo) == CP_TOPO_TWEMPROXY ? "twemproxy" : "cluster";
}

void cp__target_ctx_free(cp__target_ctx *ctx) {
    cp_free(ctx->commands);
    free(ctx->map);
    free(ctx->endpoints);
    free(ctx->servers);
    cp__valuefmt_free(&ctx->vf);
    memset(ctx, 0, sizeof(*ctx));
}

static cp__server *add_server(cp__target_ctx *ctx) {
    cp__server *s = &ctx->servers[ctx->nservers++];
    memset(s, 0, sizeof(*s));
    return s;
}

/* Which processes to measure and count: a topology's own processes (CPU from /proc), else the
 * external cluster's masters (INFO CPU); an external proxy's backends are unknown. */
static int collect_servers(const cp__bench_target *t, cp__target_ctx *ctx) {
    size_t cap = t->topo ? cp_topo_nprocs(t->topo) : (ctx->map ? (size_t)ctx->map->nmasters : 0);
    ctx->servers = calloc(cap ? cap : 1, sizeof(*ctx->servers));
    if (ctx->servers == NULL)
        return CP_ENOMEM;
    if (t->topo != NULL) {
        for (size_t i = 0; i < cap; i++) {
            const cp_proc *p = cp_topo_proc(t->topo, i);
            cp__server *s = add_server(ctx);
            snprintf(s->addr.host, sizeof(s->addr.host), "%s", p->host);
            s->addr.port = p->port;
            s->pid = p->pid;
            /* The wire is the network, not a server: a component of its own. */
            s->comp = p->role == CP_ROLE_PROXY  ? CP__CPU_PROXY
                      : p->role == CP_ROLE_WIRE ? CP__CPU_WIRE
                                                : CP__CPU_REDIS;
            s->holds_keys = p->role == CP_ROLE_MASTER || p->role == CP_ROLE_SHARD;
            s->replica = p->role == CP_ROLE_REPLICA;
            s->stats_port = p->stats_port;
        }
        return 0;
    }
    for (size_t i = 0; i < cap; i++) {
        cp__server *s = add_server(ctx);
        s->addr = ctx->map->masters[i];
        s->comp = CP__CPU_REDIS;
        s->holds_keys = true;
    }
    return 0;
}

/* Per-master layout: one tag per master, for the first slot it serves (redis-benchmark's). */
static int set_master_tags(cp__target_ctx *ctx, char *err, size_t errlen) {
    uint16_t first[CP__NODES_MAX];
    int seen = 0;
    for (int i = 0; i < ctx->map->nmasters; i++)
        first[i] = UINT16_MAX;
    for (unsigned s = 0; s < CP_SLOTS; s++) {
        int o = ctx->map->owner[s];
        if (o >= 0 && first[o] == UINT16_MAX) {
            first[o] = (uint16_t)s;
            seen++;
        }
    }
    /* A master without slots has no keys to give (cp__nodemap_read lists none such). */
    if (seen != ctx->map->nmasters ||
        cp__keyfmt_set_tags(&ctx->kf, first, (unsigned)ctx->map->nmasters) != 0) {
        snprintf(err, errlen, "--key-layout per-master: a master without slots");
        return CP_ETOPOLOGY;
    }
    return 0;
}

int cp__target_prepare(const cp__bench_target *t, const char *key_prefix, cp__key_layout layout,
                       uint64_t keys, const cp__value_sizes *value_size, bool verifiable,
                       cp__run_spec *spec, cp__target_ctx *ctx, char *err, size_t errlen) {
    memset(ctx, 0, sizeof(*ctx));
    int rc = cp__keyfmt_init(&ctx->kf, key_prefix, 0);
    if (rc != 0) {
        snprintf(err, errlen, "bad key prefix");
        return CP_EINVAL;
    }
    if (layout == CP__KEYS_PER_MASTER && t->mode != CP__TARGET_CLUSTER) {
        snprintf(err, errlen, "--key-layout per-master needs a cluster (its tags name masters)");
        return CP_EINVAL;
    }
    if (layout == CP__KEYS_PER_MASTER && strchr(ctx->kf.prefix, '{') != NULL) {
        snprintf(err, errlen, "--key-layout per-master: a '{' in the key prefix breaks its tags");
        return CP_EINVAL;
    }
    ctx->endpoints = calloc(CP__NODES_MAX, sizeof(*ctx->endpoints));
    if (ctx->endpoints == NULL)
        return CP_ENOMEM;
    ctx->nendpoints = cp__addr_list_parse(t->endpoints, ctx->endpoints, CP__NODES_MAX);
    if (ctx->nendpoints <= 0) {
        snprintf(err, errlen, "bad endpoint list '%.200s' (want HOST:PORT[,HOST:PORT...])",
                 t->endpoints);
        return CP_EINVAL;
    }
    spec->mode = t->mode;
    spec->target = t;
    spec->kf = &ctx->kf;
    spec->vf = &ctx->vf;
    if (t->mode == CP__TARGET_CLUSTER) {
        cp_options opt = CP_OPTIONS_INIT;
        opt.seeds = t->endpoints;
        cp__bench_target_options(t, &opt);
        cp_client *c = cp_connect(&opt);
        if (c == NULL)
            return CP_ENOMEM;
        if (c->err != 0) {
            snprintf(err, errlen, "cannot reach the cluster at %.200s: %s", t->endpoints,
                     c->errstr);
            rc = c->err;
            cp_free(c);
            return rc;
        }
        ctx->map = malloc(sizeof(*ctx->map));
        if (ctx->map == NULL) {
            cp_free(c);
            return CP_ENOMEM;
        }
        rc = cp__nodemap_read(c, ctx->map, err, errlen);
        /* Kept for its COMMAND table, which the workers' clients share: a client of its own
         * (c's is shared, not read again), whose connections closed after its map, so that no
         * master counts one more connection during the run. */
        opt.commands_from = c;
        ctx->commands = rc == 0 ? cp_connect(&opt) : NULL;
        cp_free(c);
        if (rc != 0)
            return rc;
        if (layout == CP__KEYS_PER_MASTER && (rc = set_master_tags(ctx, err, errlen)) != 0)
            return rc;
        ctx->masters = ctx->map->nmasters;
        spec->seeds = t->endpoints;
        spec->map = ctx->map;
        spec->commands = ctx->commands;
        cp__nodemap_probe_keys(ctx->map, &ctx->kf, keys > 100000 ? keys : 100000, spec->probe_keys);
    } else {
        ctx->masters = ctx->nendpoints;
        spec->endpoints = ctx->endpoints;
        spec->nendpoints = ctx->nendpoints;
    }
    /* After the map: per-master keys are as long as their tags make them. */
    size_t maxkey = cp__key_max_len(&ctx->kf, keys);
    rc = cp__valuefmt_init_sizes(&ctx->vf, value_size, maxkey, verifiable);
    if (rc != 0) {
        char vs[256];
        cp__value_sizes_format(value_size, vs, sizeof(vs));
        if (rc == CP__KS_ETOOSMALL)
            snprintf(err, errlen,
                     "--value-size %.200s cannot hold a verifiable value for keys of %zu bytes "
                     "(minimum %zu; or use --no-verify)",
                     vs, maxkey, cp__value_min_size(maxkey));
        else
            snprintf(err, errlen, "--value-size %.200s is not usable", vs);
        return rc == CP__KS_ENOMEM ? CP_ENOMEM : CP_EINVAL;
    }
    if (collect_servers(t, ctx) != 0)
        return CP_ENOMEM;
    return 0;
}
