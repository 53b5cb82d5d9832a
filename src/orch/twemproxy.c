/* SPDX-License-Identifier: BSD-3-Clause
 *
 * twemproxy (nutcracker 0.5) support: the YAML config of each proxy, the SET/GET readiness probe,
 * adding a shard and restarting proxies (nutcracker cannot reload its config). The defaults are
 * those of the published twemproxy-vs-cluster experiment: hash fnv1a_64, distribution ketama,
 * auto_eject_hosts false, server_retry_timeout 2000, server_failure_limit 3, server_connections 1,
 * and no `timeout:` unless cp_up_opts.server_timeout_ms sets one.
 * The role tables are static; the probe's admin connection is closed before returning; the
 * process records belong to the caller's cp_topo. One thread per cp_topo.
 */
#include "orch/twemproxy.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/adm.h"
#include "orch/launch.h"
#include "orch/links.h"
#include "orch/redis.h"
#include "orch/state.h"
#include "util/errmsg.h"

#include <stdio.h>
#include <string.h>

static const char *const hashes[] = {"one_at_a_time", "md5",     "crc16",    "crc32",
                                     "crc32a",        "fnv1_64", "fnv1a_64", "fnv1_32",
                                     "fnv1a_32",      "hsieh",   "murmur",   "jenkins"};
static const char *const distributions[] = {"ketama", "modula", "random"};

int cp_orch_twemproxy_hash_valid(const char *hash) {
    for (size_t i = 0; hash != NULL && i < sizeof(hashes) / sizeof(hashes[0]); i++)
        if (strcmp(hash, hashes[i]) == 0)
            return 1;
    return 0;
}

int cp_orch_twemproxy_distribution_valid(const char *distribution) {
    for (size_t i = 0; distribution != NULL && i < sizeof(distributions) / sizeof(distributions[0]);
         i++)
        if (strcmp(distribution, distributions[i]) == 0)
            return 1;
    return 0;
}

/* nutcracker.yml of proxy i, listing every shard of t in index order, each at the port proxy i
 * reaches it at (the wire's, when their link crosses hosts: links.h). */
static int write_yaml(const cp_topo *t, size_t i, char *err, size_t errlen) {
    const cp_proc *p = &t->procs[i];
    char yml[32768], path[PATH_MAX + 32];
    snprintf(yml, sizeof(yml),
             "# Written by clusterpipe; stop with: clusterpipe down --dir %s\n"
             "clusterpipe:\n"
             "  listen: %s:%d\n"
             "  hash: %s\n"
             "  distribution: %s\n"
             "  auto_eject_hosts: %s\n"
             "  redis: true\n"
             "  server_retry_timeout: 2000\n"
             "  server_failure_limit: 3\n"
             "  server_connections: 1\n",
             t->dir, p->host, p->port, t->hash, t->distribution, t->auto_eject ? "true" : "false");
    if (t->server_timeout_ms > 0)
        cp__adderr(yml, sizeof(yml), "  timeout: %d\n", t->server_timeout_ms);
    if (t->password != NULL) {
        cp__adderr(yml, sizeof(yml), "  redis_auth: ");
        cp__topo_append_quoted(yml, sizeof(yml), t->password, '\'', '\''); /* YAML '' */
        cp__adderr(yml, sizeof(yml), "\n");
    }
    cp__adderr(yml, sizeof(yml), "  servers:\n");
    int ordinal = 0;
    for (size_t k = 0; k < t->nprocs; k++) {
        const cp_proc *s = &t->procs[k];
        if (s->role != CP_ROLE_SHARD)
            continue;
        /* Named servers: ketama hashes the name, so keys stay put if a shard changes port. */
        cp__adderr(yml, sizeof(yml), "   - %s:%d:1 shard%d\n", s->host,
                   cp__topo_link_port(t, (int)i, k), ordinal++);
    }
    if (ordinal == 0) {
        cp__seterr(err, errlen, "twemproxy: no shard to put behind the proxy");
        return CP_EINVAL;
    }
    cp__topo_proc_file(t, i, "nutcracker.yml", path, sizeof(path));
    return cp__topo_write_file(path, yml, err, errlen);
}

/* nutcracker -c CONF -s STATS_PORT -a 127.0.0.1 -o LOG. */
static int proxy_args(const cp_topo *t, size_t i, cp__argv *a) {
    char conf[PATH_MAX + 32], logf[PATH_MAX + 32];
    cp__topo_proc_file(t, i, "nutcracker.yml", conf, sizeof(conf));
    cp__topo_proc_file(t, i, "nutcracker.log", logf, sizeof(logf));
    int rc = cp__argv_add(a, "-c");
    if (rc == 0)
        rc = cp__argv_add(a, "%s", conf);
    if (rc == 0)
        rc = cp__argv_add(a, "-s");
    if (rc == 0)
        rc = cp__argv_add(a, "%d", t->procs[i].stats_port);
    if (rc == 0)
        rc = cp__argv_add(a, "-a");
    if (rc == 0)
        rc = cp__argv_add(a, "127.0.0.1");
    if (rc == 0)
        rc = cp__argv_add(a, "-o");
    if (rc == 0)
        rc = cp__argv_add(a, "%s", logf);
    return rc;
}

/* SET, GET and DEL of a probe key through proxy i: 0 when the value came back. */
static int probe(const cp_topo *t, size_t i, char *err, size_t errlen) {
    cp__adm *c = cp__topo_connect(t, i, 1000, err, errlen);
    if (c == NULL)
        return CP_ECONNECT;
    char key[64], val[64];
    snprintf(key, sizeof(key), "clusterpipe:probe:%d", t->procs[i].port);
    snprintf(val, sizeof(val), "ok-%ld", (long)t->procs[i].pid);
    int rc;
    redisReply *r = cp__adm_cmd(c, err, errlen, "SET %s %s", key, val);
    if (r == NULL) {
        rc = cp__adm_last(c);
    } else {
        cp_reply_free(r);
        r = cp__adm_cmd(c, err, errlen, "GET %s", key);
        rc = r == NULL ? cp__adm_last(c) : 0;
        if (r != NULL && (r->type != REDIS_REPLY_STRING || strcmp(r->str, val) != 0)) {
            cp__seterr(err, errlen, "GET %s through the proxy returned something else", key);
            rc = CP_EPROTO;
        }
        cp_reply_free(r);
    }
    if (rc == 0) {
        r = cp__adm_cmd(c, err, errlen, "DEL %s", key); /* leave no key behind */
        cp_reply_free(r);
    }
    cp__adm_free(c);
    return rc;
}

static const char *nutcracker_binary(const cp_topo *t) {
    return t->nutcracker_bin;
}

static int shard_config(const cp_topo *t, size_t i, char *err, size_t errlen) {
    return cp__redis_write_conf(t, i, 0, err, errlen);
}

const cp__role_ops cp__twemproxy_shard_ops = {
    "redis-server",     "redis",        "redis.log", 0, 0, 0, cp__redis_binary, shard_config,
    cp__redis_add_args, cp__redis_probe};

const cp__role_ops cp__twemproxy_proxy_ops = {
    "nutcracker",      "nutcracker", "nutcracker.log", 0,    1, 1,
    nutcracker_binary, write_yaml,   proxy_args,       probe};

int cp_topo_add_shard(cp_topo *t, size_t *index, char *err, size_t errlen) {
    if (t == NULL || t->kind != CP_TOPO_TWEMPROXY) {
        cp__seterr(err, errlen, "add_shard needs a twemproxy topology");
        return CP_EINVAL;
    }
    size_t i;
    int rc = cp__topo_add_new(t, CP_ROLE_SHARD, -1, &i, err, errlen);
    if (rc != 0)
        return rc;
    rc = cp__links_add_for(t, i, err, errlen);
    if (rc == 0)
        rc = cp__launch(t, &i, 1, 1, err, errlen);
    if (rc != 0) {
        cp__topo_stop(t, &i, 1);
        cp__links_drop_for(t, i);
        t->nprocs--; /* forget it: nothing refers to it yet */
        cp__state_save(t, NULL, 0);
        return rc;
    }
    for (size_t k = 0; k < t->nprocs && rc == 0; k++)
        if (t->procs[k].role == CP_ROLE_PROXY)
            rc = cp__topo_write_config(t, k, err, errlen);
    if (rc != 0)
        return rc;
    if (index != NULL)
        *index = i;
    return cp__state_save(t, err, errlen);
}

int cp_topo_restart_proxies(cp_topo *t, char *err, size_t errlen) {
    if (t == NULL || t->kind != CP_TOPO_TWEMPROXY) {
        cp__seterr(err, errlen, "restart_proxies needs a twemproxy topology");
        return CP_EINVAL;
    }
    for (size_t i = 0; i < t->nprocs; i++) {
        if (t->procs[i].role != CP_ROLE_PROXY)
            continue;
        char label[128];
        cp__topo_proc_label(t, i, label, sizeof(label));
        int rc = cp__launch_restart(t, i, err, errlen);
        if (rc != 0)
            return rc;
        cp__topo_log(t, "restarted %s", label);
    }
    return 0;
}
