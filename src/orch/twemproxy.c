/* SPDX-License-Identifier: BSD-3-Clause
 *
 * twemproxy (nutcracker 0.5) support: the YAML config of each proxy, the SET/GET readiness probe,
 * adding a shard and restarting proxies (nutcracker cannot reload its config). The defaults are
 * those of the published twemproxy-vs-cluster experiment: hash fnv1a_64, distribution ketama,
 * auto_eject_hosts false, server_retry_timeout 2000, server_failure_limit 3, server_connections 1.
 * One thread per cp_topo.
 */
#include "orch/twemproxy.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/adm.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

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

/* Appends s as a YAML single-quoted scalar ('' escapes a quote). */
static void yaml_quoted(char *buf, size_t len, const char *s) {
    size_t n = strlen(buf);
    if (n + 2 >= len)
        return;
    buf[n++] = '\'';
    for (; *s && n + 3 < len; s++) {
        if (*s == '\'')
            buf[n++] = '\'';
        buf[n++] = *s;
    }
    buf[n++] = '\'';
    buf[n] = '\0';
}

int cp__twemproxy_write_yaml(const cp_topo *t, size_t i, char *err, size_t errlen) {
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
    if (t->password != NULL) {
        cp__adderr(yml, sizeof(yml), "  redis_auth: ");
        yaml_quoted(yml, sizeof(yml), t->password);
        cp__adderr(yml, sizeof(yml), "\n");
    }
    cp__adderr(yml, sizeof(yml), "  servers:\n");
    int ordinal = 0;
    for (size_t k = 0; k < t->nprocs; k++) {
        const cp_proc *s = &t->procs[k];
        if (s->role != CP_ROLE_SHARD)
            continue;
        /* Named servers: ketama hashes the name, so keys stay put if a shard changes port. */
        cp__adderr(yml, sizeof(yml), "   - %s:%d:1 shard%d\n", s->host, s->port, ordinal++);
    }
    if (ordinal == 0) {
        cp__seterr(err, errlen, "twemproxy: no shard to put behind the proxy");
        return -1;
    }
    char pdir[PATH_MAX];
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    snprintf(path, sizeof(path), "%s/nutcracker.yml", pdir);
    int rc = cp__write_file(path, yml, strlen(yml), 0600);
    if (rc != 0) {
        cp__seterr(err, errlen, "%s: %s", path, strerror(-rc));
        return -1;
    }
    return 0;
}

int cp__twemproxy_probe(const cp_topo *t, size_t i, char *err, size_t errlen) {
    cp__adm *c = cp__topo_connect(t, i, 1000, err, errlen);
    if (c == NULL)
        return -1;
    char key[64], val[64];
    snprintf(key, sizeof(key), "clusterpipe:probe:%d", t->procs[i].port);
    snprintf(val, sizeof(val), "ok-%ld", (long)t->procs[i].pid);
    int rc = -1;
    redisReply *r = cp__adm_cmd(c, err, errlen, "SET %s %s", key, val);
    if (r != NULL) {
        freeReplyObject(r);
        r = cp__adm_cmd(c, err, errlen, "GET %s", key);
        if (r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, val) == 0)
            rc = 0;
        else if (r != NULL)
            cp__seterr(err, errlen, "GET %s through the proxy returned something else", key);
        freeReplyObject(r);
    }
    if (rc == 0) {
        r = cp__adm_cmd(c, err, errlen, "DEL %s", key); /* leave no key behind */
        freeReplyObject(r);
    }
    cp__adm_free(c);
    return rc;
}

int cp_topo_add_shard(cp_topo *t, size_t *index, char *err, size_t errlen) {
    if (t == NULL || t->kind != CP_TOPO_TWEMPROXY) {
        cp__seterr(err, errlen, "add_shard needs a twemproxy topology");
        return CP_EINVAL;
    }
    int port;
    if (cp__ports_take(&t->ports, 0, &port, err, errlen) != 0)
        return CP_EIO;
    int idx = cp__topo_add_proc(t, CP_ROLE_SHARD, port, -1);
    if (idx < 0) {
        cp__seterr(err, errlen, "too many processes");
        return CP_ENOMEM;
    }
    size_t i = (size_t)idx;
    int rc = cp__topo_spawn(t, i, err, errlen);
    if (rc == 0)
        rc = cp__topo_wait_serving(t, &i, 1, 1, err, errlen);
    if (rc != 0) {
        cp__topo_stop(t, &i, 1);
        t->nprocs--; /* forget it: nothing refers to it yet */
        cp__state_save(t, NULL, 0);
        return rc;
    }
    for (size_t k = 0; k < t->nprocs; k++)
        if (t->procs[k].role == CP_ROLE_PROXY && cp__topo_write_config(t, k, err, errlen) != 0)
            return CP_EIO;
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
        if (cp__topo_stop(t, &i, 1) != 0) {
            cp__seterr(err, errlen, "%s could not be stopped", label);
            return CP_EIO;
        }
        int rc = cp__topo_spawn(t, i, err, errlen);
        if (rc == 0)
            rc = cp__topo_wait_serving(t, &i, 1, 0, err, errlen);
        if (rc != 0)
            return rc;
        cp__topo_log(t, "restarted %s", label);
    }
    return 0;
}
