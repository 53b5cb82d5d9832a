/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Checking cp_topo_up's options and laying out its processes and ports (see plan.h). The records
 * go into the caller's cp_topo; ports are probed by binding them for a moment. No state; one
 * thread per cp_topo.
 */
#include "orch/plan.h"

#include "orch/links.h"

#include "clusterpipe/clusterpipe.h"
#include "util/errmsg.h"

int cp__plan_check(const cp_up_opts *o, char *err, size_t errlen) {
    if (o->kind != CP_TOPO_CLUSTER && o->kind != CP_TOPO_TWEMPROXY) {
        cp__seterr(err, errlen, "unknown topology kind %d", (int)o->kind);
        return CP_EINVAL;
    }
    if (o->shards < 1 || o->replicas < 0 || (o->kind == CP_TOPO_TWEMPROXY && o->proxies < 1)) {
        cp__seterr(err, errlen, "need at least 1 shard%s and no negative replica count",
                   o->kind == CP_TOPO_TWEMPROXY ? " and 1 proxy" : "");
        return CP_EINVAL;
    }
    /* In long long: 1 + replicas must not overflow an int (replicas = INT_MAX passed before). */
    long long total = o->kind == CP_TOPO_CLUSTER ? (long long)o->shards * (1LL + o->replicas)
                                                 : (long long)o->shards + 2LL * o->proxies;
    if (total > CP__MAX_PROCS) {
        cp__seterr(err, errlen, "%lld processes requested; at most %d", total, CP__MAX_PROCS);
        return CP_EINVAL;
    }
    if (o->base_port < 0 || o->base_port > 65535) {
        cp__seterr(err, errlen, "base port %d is out of range", o->base_port);
        return CP_EINVAL;
    }
    if (o->kind == CP_TOPO_TWEMPROXY && o->hash && !cp_orch_twemproxy_hash_valid(o->hash)) {
        cp__seterr(err, errlen, "unknown twemproxy hash '%s'", o->hash);
        return CP_EINVAL;
    }
    if (o->kind == CP_TOPO_TWEMPROXY && o->distribution &&
        !cp_orch_twemproxy_distribution_valid(o->distribution)) {
        cp__seterr(err, errlen, "unknown twemproxy distribution '%s'", o->distribution);
        return CP_EINVAL;
    }
    if (o->password != NULL && o->no_password) {
        cp__seterr(err, errlen, "a password and no_password together");
        return CP_EINVAL;
    }
    if (o->kind == CP_TOPO_TWEMPROXY && (o->tls || o->tls_auth_clients)) {
        cp__seterr(err, errlen,
                   "twemproxy (nutcracker) has no TLS support: it cannot serve TLS to clients "
                   "nor speak it to its shards; use a Redis Cluster for TLS");
        return CP_EINVAL;
    }
    if (o->rtt_ns > 0 && o->tls) {
        cp__seterr(err, errlen, "a wire (rtt) and TLS together are not supported");
        return CP_EINVAL;
    }
    if (o->jitter_ns > o->rtt_ns && o->rtt_ns > 0) {
        cp__seterr(err, errlen, "a jitter larger than the round trip");
        return CP_EINVAL;
    }
    if (o->proxy_placement != CP_PROXIES_WITH_SERVERS &&
        o->proxy_placement != CP_PROXIES_WITH_CLIENTS && o->proxy_placement != CP_PROXIES_TIER) {
        cp__seterr(err, errlen, "unknown proxy placement %d", (int)o->proxy_placement);
        return CP_EINVAL;
    }
    if (o->tls_auth_clients && !o->tls) {
        cp__seterr(err, errlen, "tls_auth_clients needs tls");
        return CP_EINVAL;
    }
    if (o->password != NULL) {
        for (const char *s = o->password; *s; s++)
            if ((unsigned char)*s < 0x20 || *s == 0x7f) {
                cp__seterr(err, errlen, "the password must not contain control characters");
                return CP_EINVAL;
            }
    }
    return 0;
}

int cp__plan_make(cp_topo *t, const cp_up_opts *o, char *err, size_t errlen) {
    size_t i;
    int rc = 0;
    if (o->kind == CP_TOPO_CLUSTER) {
        for (int m = 0; m < o->shards && rc == 0; m++)
            rc = cp__topo_add_new(t, CP_ROLE_MASTER, -1, &i, err, errlen);
        for (int m = 0; m < o->shards && rc == 0; m++)
            for (int r = 0; r < o->replicas && rc == 0; r++)
                rc = cp__topo_add_new(t, CP_ROLE_REPLICA, m, &i, err, errlen);
        if (rc == 0 && t->rtt_ns > 0)
            rc = cp__links_plan(t, err, errlen);
        return rc;
    }
    for (int s = 0; s < o->shards && rc == 0; s++)
        rc = cp__topo_add_new(t, CP_ROLE_SHARD, -1, &i, err, errlen);
    size_t first_proxy = t->nprocs;
    for (int p = 0; p < o->proxies && rc == 0; p++)
        rc = cp__topo_add_new(t, CP_ROLE_PROXY, -1, &i, err, errlen);
    /* Every proxy is recorded (rc == 0), so these indexes are inside the array. */
    for (size_t k = first_proxy; k < t->nprocs && rc == 0; k++)
        rc = cp__ports_take(&t->ports, 0, &t->procs[k].stats_port, err, errlen);
    if (rc == 0 && t->rtt_ns > 0)
        rc = cp__links_plan(t, err, errlen);
    return rc;
}
