/* SPDX-License-Identifier: BSD-3-Clause
 *
 * redis-server's config, command line and readiness probe (see redis.h). Writes files in the
 * process's directory; opens and closes one admin connection per probe. No state; one thread per
 * cp_topo.
 */
#include "orch/redis.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/adm.h"
#include "util/errmsg.h"

#include <stdio.h>
#include <string.h>

const char *cp__redis_binary(const cp_topo *t) {
    return t->redis_bin;
}

/* Appends s to buf as a redis.conf double-quoted string (redis's sdssplitargs unescapes it). */
static void conf_quoted(char *buf, size_t len, const char *s) {
    cp__topo_append_quoted(buf, len, s, '"', '\\');
}

/* The redis.conf of one node: loopback only (127.0.0.1, or ::1) with protected mode, its own
 * directory for logs and nodes.conf, no persistence unless asked (the comparison measures memory,
 * not disks), no diskless-sync delay so replicas link in milliseconds. With TLS the plain port is
 * closed (port 0) and the node serves, gossips (tls-cluster) and replicates (tls-replication) over
 * TLS only; the cluster bus is then tls-port + 10000. */
int cp__redis_write_conf(const cp_topo *t, size_t i, int cluster, char *err, size_t errlen) {
    const cp_proc *p = &t->procs[i];
    char conf[8192], pdir[PATH_MAX], path[PATH_MAX + 32];
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    snprintf(conf, sizeof(conf),
             "# Written by clusterpipe; stop with: clusterpipe down --dir %s\n"
             "bind %s\nprotected-mode yes\nport %d\ndaemonize no\nloglevel notice\n"
             "repl-diskless-sync-delay 0\ndir ",
             t->dir, t->host, t->tls ? 0 : p->port);
    conf_quoted(conf, sizeof(conf), pdir);
    snprintf(path, sizeof(path), "%s/redis.log", pdir);
    cp__adderr(conf, sizeof(conf), "\nlogfile ");
    conf_quoted(conf, sizeof(conf), path);
    cp__adderr(conf, sizeof(conf), "\n");
    if (t->persistence)
        cp__adderr(conf, sizeof(conf),
                   "save 3600 1 300 100 60 10000\nappendonly yes\nappendfsync everysec\n");
    else
        cp__adderr(conf, sizeof(conf), "save \"\"\nappendonly no\n");
    if (cluster)
        cp__adderr(conf, sizeof(conf),
                   "cluster-enabled yes\ncluster-config-file nodes.conf\n"
                   "cluster-node-timeout 2000\n"
                   /* A dead master stops its own slots, not the whole cluster: the other
                    * masters go on answering while its replica takes over, as a deployment
                    * that wants availability runs it (twemproxy's auto-eject is its analogue). */
                   "cluster-require-full-coverage no\n");
    /* Behind the wire (links.h): the node tells clients, and the slot map, MOVED and ASK it
     * sends them, the wire's port; its bus stays direct, so gossip and failure detection keep
     * their loopback timing and a slow or blocked link never fails a node by itself. */
    int announced = cp__topo_link_port(t, CP_LINK_CLIENT, i);
    if (cluster && announced != p->port)
        cp__adderr(conf, sizeof(conf), "cluster-announce-port %d\ncluster-announce-bus-port %d\n",
                   announced, p->port + CP__BUS_OFFSET);
    if (t->tls) {
        cp__adderr(conf, sizeof(conf), "tls-port %d\ntls-cert-file ", p->port);
        conf_quoted(conf, sizeof(conf), t->tls_cert);
        cp__adderr(conf, sizeof(conf), "\ntls-key-file ");
        conf_quoted(conf, sizeof(conf), t->tls_key);
        cp__adderr(conf, sizeof(conf), "\ntls-ca-cert-file ");
        conf_quoted(conf, sizeof(conf), t->tls_ca);
        cp__adderr(conf, sizeof(conf), "\ntls-auth-clients %s\ntls-replication yes\n%s",
                   t->tls_auth_clients ? "yes" : "no", cluster ? "tls-cluster yes\n" : "");
    }
    if (t->password != NULL) {
        cp__adderr(conf, sizeof(conf), "requirepass ");
        conf_quoted(conf, sizeof(conf), t->password);
        cp__adderr(conf, sizeof(conf), "\nmasterauth ");
        conf_quoted(conf, sizeof(conf), t->password);
        cp__adderr(conf, sizeof(conf), "\n");
    }
    snprintf(path, sizeof(path), "%s/redis.conf", pdir);
    return cp__topo_write_file(path, conf, err, errlen);
}

int cp__redis_add_args(const cp_topo *t, size_t i, cp__argv *a) {
    char conf[PATH_MAX + 32];
    cp__topo_proc_file(t, i, "redis.conf", conf, sizeof(conf));
    return cp__argv_add(a, "%s", conf);
}

/* LOADING and refused connections are "not yet": the caller polls. */
int cp__redis_probe(const cp_topo *t, size_t i, char *err, size_t errlen) {
    cp__adm *c = cp__topo_connect(t, i, 500, err, errlen);
    if (c == NULL)
        return CP_ECONNECT;
    redisReply *r = cp__adm_cmd(c, err, errlen, "PING");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r != NULL && !ok)
        cp__seterr(err, errlen, "PING answered %s", r->str ? r->str : "?");
    cp_reply_free(r);
    cp__adm_free(c);
    return ok ? 0 : CP_ESERVER;
}
