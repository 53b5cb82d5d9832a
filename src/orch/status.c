/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Read-only inspection of a topology for `clusterpipe status` and for tests: per-process
 * liveness, memory and key counts, and an overall health check. Opens short-lived admin
 * connections and closes them before returning; never writes to the servers. One thread per
 * cp_topo.
 */
#include "clusterpipe/clusterpipe.h"
#include "orch/adm.h"
#include "orch/cluster.h"
#include "orch/topo.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <stdlib.h>
#include <string.h>

int cp_topo_proc_stats(const cp_topo *t, size_t i, cp_proc_stats *st) {
    if (t == NULL || st == NULL || i >= t->nprocs)
        return CP_EINVAL;
    memset(st, 0, sizeof(*st));
    st->used_memory = st->rss = st->keys = st->connected_clients = st->clients_memory = -1;
    st->alive = cp_topo_alive(t, i);
    if (!st->alive)
        return 0;
    st->rss = cp__proc_rss(t->procs[i].pid);
    char e[256], val[64];
    if (t->procs[i].role == CP_ROLE_WIRE) { /* no RESP: it answers on its control socket */
        st->reachable = cp__topo_ops(t, i)->probe(t, i, e, sizeof(e)) == 0;
        return 0;
    }
    cp__adm *c = cp__topo_connect(t, i, 1000, e, sizeof(e));
    if (c == NULL)
        return 0;
    redisReply *r = cp__adm_cmd(c, e, sizeof(e), "PING");
    st->reachable = r != NULL;
    cp_reply_free(r);
    if (st->reachable && t->procs[i].role != CP_ROLE_PROXY) {
        if (cp__adm_info(c, "memory", "used_memory", val, sizeof(val), e, sizeof(e)) == 0)
            st->used_memory = strtoll(val, NULL, 10);
        if (cp__adm_info(c, "memory", "mem_clients_normal", val, sizeof(val), e, sizeof(e)) == 0)
            st->clients_memory = strtoll(val, NULL, 10);
        if (cp__adm_info(c, "clients", "connected_clients", val, sizeof(val), e, sizeof(e)) == 0)
            st->connected_clients = strtoll(val, NULL, 10);
        if (cp__adm_info(c, "replication", "role", val, sizeof(val), e, sizeof(e)) == 0)
            snprintf(st->reported_role, sizeof(st->reported_role), "%.15s", val);
        r = cp__adm_cmd(c, e, sizeof(e), "DBSIZE");
        if (r != NULL && r->type == REDIS_REPLY_INTEGER)
            st->keys = r->integer;
        cp_reply_free(r);
    }
    cp__adm_free(c);
    return 0;
}

int cp_topo_check(const cp_topo *t, char *err, size_t errlen) {
    if (t == NULL) {
        cp__seterr(err, errlen, "cp_topo_check: NULL topology");
        return CP_EINVAL;
    }
    for (size_t i = 0; i < t->nprocs; i++) {
        char label[128];
        cp__topo_proc_label(t, i, label, sizeof(label));
        if (!cp_topo_alive(t, i)) {
            cp__seterr(err, errlen, "%s (pid %ld) is not running", label, (long)t->procs[i].pid);
            return CP_ECONNECT;
        }
        char e[256];
        if (t->procs[i].role == CP_ROLE_WIRE) {
            if (cp__topo_ops(t, i)->probe(t, i, e, sizeof(e)) != 0) {
                cp__seterr(err, errlen, "%s does not answer: %s", label, e);
                return CP_ECONNECT;
            }
            continue;
        }
        if (t->kind == CP_TOPO_CLUSTER)
            continue; /* cp__cluster_check talks to every node */
        cp__adm *c = cp__topo_connect(t, i, 1000, e, sizeof(e));
        redisReply *r = c ? cp__adm_cmd(c, e, sizeof(e), "PING") : NULL;
        int ok = r != NULL;
        cp_reply_free(r);
        if (c != NULL)
            cp__adm_free(c);
        if (!ok) {
            cp__seterr(err, errlen, "%s does not answer PING: %s", label, e);
            return CP_ECONNECT;
        }
    }
    if (t->kind == CP_TOPO_CLUSTER && cp__cluster_check(t, 0, err, errlen) != 0)
        return CP_ETOPOLOGY;
    return 0;
}
