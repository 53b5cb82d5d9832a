/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis Cluster formation and agreement checks (see cluster.h). Works on a cp_topo whose nodes
 * are started; every wait polls, watches for dead processes and honours the caller's cancel flag.
 * Views (cp__cview, ~70 KiB) are heap-allocated here and freed before returning. Admin
 * connections (adm.h) go over TLS when the topology has it. The role tables at the top are
 * static and borrowed by every cluster cp_topo. One thread per cp_topo.
 */
#include "orch/cluster.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/adm.h"
#include "orch/redis.h"
#include "orch/state.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the role tables ------------------------------------------------------------------------ */

static int node_config(const cp_topo *t, size_t i, char *err, size_t errlen) {
    return cp__redis_write_conf(t, i, 1, err, errlen);
}

#define NODE_OPS(endpoint)                                                                         \
    {                                                                                              \
        "redis-server", "redis", "redis.log", 1, 0, (endpoint), cp__redis_binary, node_config,     \
            cp__redis_add_args, cp__redis_probe                                                    \
    }

const cp__role_ops cp__cluster_master_ops = NODE_OPS(1);
const cp__role_ops cp__cluster_replica_ops = NODE_OPS(0);

/* ---- parsing CLUSTER NODES ------------------------------------------------------------------- */

/* Marks the slots of one slot token ("5", "0-5460"); migration markers "[..]" are skipped: the
 * slot still belongs to its current owner until SETSLOT NODE. */
static void parse_slots(const char *tok, cp__cview *v, short idx) {
    if (tok[0] == '[')
        return;
    char *end;
    long lo = strtol(tok, &end, 10), hi = lo;
    if (*end == '-')
        hi = strtol(end + 1, &end, 10);
    if (lo < 0 || hi >= CP_SLOTS || lo > hi)
        return;
    for (long s = lo; s <= hi; s++)
        v->owner[s] = idx;
    v->node[idx].nslots += (int)(hi - lo + 1);
}

int cp__cluster_parse_nodes(const char *text, cp__cview *v) {
    v->n = 0;
    for (int s = 0; s < CP_SLOTS; s++)
        v->owner[s] = -1;
    char line[65536];
    const char *p = text;
    while (p != NULL && *p) {
        size_t len = strcspn(p, "\r\n");
        if (len >= sizeof(line))
            return CP_EPROTO;
        memcpy(line, p, len);
        line[len] = '\0';
        p += len;
        p += strspn(p, "\r\n");
        if (len == 0)
            continue;
        if (v->n >= CP__MAX_PROCS)
            return CP_EPROTO;
        cp__cnode *n = &v->node[v->n];
        memset(n, 0, sizeof(*n));
        char *save = NULL, *tok;
        int field = 0;
        for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
            switch (field) {
            case 0:
                snprintf(n->id, sizeof(n->id), "%s", tok);
                break;
            case 1: {
                char *at = strchr(tok, '@');
                if (at)
                    *at = '\0';
                char *colon = strrchr(tok, ':');
                n->port = colon ? atoi(colon + 1) : 0;
                break;
            }
            case 2:
                n->myself = strstr(tok, "myself") != NULL;
                n->master = strstr(tok, "master") != NULL;
                if (strstr(tok, "fail") || strstr(tok, "handshake") || strstr(tok, "noaddr"))
                    n->bad = 1;
                break;
            case 3:
                snprintf(n->master_id, sizeof(n->master_id), "%s", strcmp(tok, "-") ? tok : "");
                break;
            case 6:
                n->epoch = strtoull(tok, NULL, 10);
                break;
            case 7:
                if (strcmp(tok, "connected") != 0)
                    n->bad = 1;
                break;
            default:
                if (field >= 8)
                    parse_slots(tok, v, (short)v->n);
            }
        }
        if (field < 8)
            return CP_EPROTO;
        v->n++;
    }
    return 0;
}

int cp__cview_find(const cp__cview *v, const char *id) {
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->node[i].id, id) == 0)
            return (int)i;
    return -1;
}

/* CLUSTER NODES on an open connection, parsed. */
static int view_of(cp__adm *c, cp__cview *v, char *err, size_t errlen) {
    redisReply *r = cp__adm_cmd(c, err, errlen, "CLUSTER NODES");
    if (r == NULL)
        return cp__adm_last(c);
    int rc = CP_EPROTO;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        rc = cp__cluster_parse_nodes(r->str, v);
    if (rc != 0)
        cp__seterr(err, errlen, "unparsable CLUSTER NODES reply");
    cp_reply_free(r);
    return rc;
}

int cp__cluster_view(const cp_topo *t, size_t i, cp__cview *v, char *err, size_t errlen) {
    cp__adm *c = cp__topo_connect(t, i, CP__ADM_TIMEOUT_MS, err, errlen);
    if (c == NULL)
        return CP_ECONNECT;
    int rc = view_of(c, v, err, errlen);
    cp__adm_free(c);
    return rc;
}

int cp__cluster_any_master(const cp_topo *t, int not_index) {
    for (size_t i = 0; i < t->nprocs; i++)
        if ((int)i != not_index && t->procs[i].role == CP_ROLE_MASTER && cp_topo_alive(t, i))
            return (int)i;
    return -1;
}

/* ---- agreement ------------------------------------------------------------------------------- */

/* 1 when two views name the same nodes with the same roles and the same slot owners. */
static int views_agree(const cp__cview *a, const cp__cview *b, char *why, size_t whylen) {
    short map[CP__MAX_PROCS];
    if (a->n != b->n) {
        cp__seterr(why, whylen, "they know %zu and %zu nodes", a->n, b->n);
        return 0;
    }
    for (size_t i = 0; i < a->n; i++) {
        int j = cp__cview_find(b, a->node[i].id);
        if (j < 0) {
            cp__seterr(why, whylen, "node %.8s is unknown to one of them", a->node[i].id);
            return 0;
        }
        if (a->node[i].master != b->node[j].master ||
            strcmp(a->node[i].master_id, b->node[j].master_id) != 0) {
            cp__seterr(why, whylen, "they disagree on the role of node %.8s (port %d)",
                       a->node[i].id, a->node[i].port);
            return 0;
        }
        map[i] = (short)j;
    }
    for (int s = 0; s < CP_SLOTS; s++) {
        short oa = a->owner[s], ob = b->owner[s];
        if ((oa < 0) != (ob < 0) || (oa >= 0 && map[oa] != ob)) {
            cp__seterr(why, whylen, "they disagree on the owner of slot %d", s);
            return 0;
        }
    }
    return 1;
}

/* Checks node i's own view against t: every recorded node known, alive ones without bad flags,
 * and (strict) the recorded roles. */
static int view_matches_topo(const cp_topo *t, size_t i, const cp__cview *v, int strict, char *err,
                             size_t errlen) {
    char label[128];
    cp__topo_proc_label(t, i, label, sizeof(label));
    for (size_t k = 0; k < t->nprocs; k++) {
        const cp_proc *p = &t->procs[k];
        if (p->id[0] == '\0')
            continue;
        int j = cp__cview_find(v, p->id);
        if (j < 0) {
            cp__seterr(err, errlen, "%s does not know the node on port %d yet", label, p->port);
            return CP_ETOPOLOGY;
        }
        if (v->node[j].bad && cp_topo_alive(t, k)) {
            cp__seterr(err, errlen, "%s sees the node on port %d as failing or not connected",
                       label, p->port);
            return CP_ETOPOLOGY;
        }
        if (!strict)
            continue;
        int want_master = p->role == CP_ROLE_MASTER;
        const char *want_mid =
            (!want_master && p->master >= 0) ? t->procs[p->master].id : v->node[j].master_id;
        if (v->node[j].master != want_master || strcmp(v->node[j].master_id, want_mid) != 0) {
            cp__seterr(err, errlen, "%s does not see port %d as %s yet", label, p->port,
                       cp_proc_role_name(p->role));
            return CP_ETOPOLOGY;
        }
    }
    return 0;
}

int cp__cluster_check(const cp_topo *t, int strict, char *err, size_t errlen) {
    cp__cview *ref = malloc(sizeof(*ref)), *v = malloc(sizeof(*v));
    int rc = CP_ETOPOLOGY, have_ref = 0;
    size_t ref_i = 0;
    if (ref == NULL || v == NULL) {
        cp__seterr(err, errlen, "out of memory");
        rc = CP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < t->nprocs; i++) {
        if (!cp__topo_is_node(t, i) || !cp_topo_alive(t, i))
            continue;
        char label[128], val[64];
        cp__topo_proc_label(t, i, label, sizeof(label));
        cp__adm *c = cp__topo_connect(t, i, CP__ADM_TIMEOUT_MS, err, errlen);
        if (c == NULL) {
            rc = CP_ECONNECT;
            goto out;
        }
        if (cp__adm_info(c, "cluster", "cluster_enabled", val, sizeof(val), err, errlen) != 0 ||
            strcmp(val, "1") != 0) {
            cp__seterr(err, errlen, "%s is not a cluster node", label);
            cp__adm_free(c);
            goto out;
        }
        redisReply *r = cp__adm_cmd(c, err, errlen, "CLUSTER INFO");
        if (r == NULL || cp__info_field(r->str, "cluster_state", val, sizeof(val)) != 0 ||
            strcmp(val, "ok") != 0) {
            if (r != NULL)
                cp__seterr(err, errlen, "%s reports cluster_state:%s", label, val);
            else
                rc = cp__adm_last(c);
            cp_reply_free(r);
            cp__adm_free(c);
            goto out;
        }
        cp_reply_free(r);
        cp__cview *mine = have_ref ? v : ref;
        int bad = view_of(c, mine, err, errlen);
        if (bad == 0)
            bad = view_matches_topo(t, i, mine, strict, err, errlen);
        if (bad == 0) {
            int me = -1;
            for (size_t k = 0; k < mine->n; k++)
                if (mine->node[k].myself)
                    me = (int)k;
            if (me >= 0 && !mine->node[me].master &&
                (cp__adm_info(c, "replication", "master_link_status", val, sizeof(val), err,
                              errlen) != 0 ||
                 strcmp(val, "up") != 0)) {
                cp__seterr(err, errlen, "%s: replication link to its master is not up yet", label);
                bad = CP_ETOPOLOGY;
            }
        }
        cp__adm_free(c);
        if (bad != 0) {
            rc = bad;
            goto out;
        }
        if (!have_ref) {
            have_ref = 1;
            ref_i = i;
            continue;
        }
        char why[160];
        if (!views_agree(ref, v, why, sizeof(why))) {
            char l2[128];
            cp__topo_proc_label(t, ref_i, l2, sizeof(l2));
            cp__seterr(err, errlen, "%s and %s do not agree yet: %s", l2, label, why);
            goto out;
        }
    }
    if (!have_ref) {
        cp__seterr(err, errlen, "no cluster node is alive");
        rc = CP_ECONNECT;
        goto out;
    }
    rc = 0;
out:
    free(ref);
    free(v);
    return rc;
}

int cp__cluster_wait(cp_topo *t, int strict, int timeout_ms, char *err, size_t errlen) {
    int64_t deadline = cp__now_ms() + timeout_ms;
    char last[512] = "";
    int nap = 20;
    for (;;) {
        if (cp__topo_cancelled(t)) {
            cp__seterr(err, errlen, "interrupted");
            return CP_EIO;
        }
        if (cp__cluster_check(t, strict, last, sizeof(last)) == 0)
            return 0;
        if (cp__now_ms() >= deadline) {
            cp__seterr(err, errlen, "the cluster did not agree within %d s: %s", timeout_ms / 1000,
                       last);
            return CP_ETIMEDOUT;
        }
        cp__sleep_ms(nap);
        if (nap < 100)
            nap *= 2;
    }
}

int cp__cluster_sync_roles(cp_topo *t, char *err, size_t errlen) {
    int src = -1;
    for (size_t i = 0; i < t->nprocs && src < 0; i++)
        if (cp__topo_is_node(t, i) && cp_topo_alive(t, i))
            src = (int)i;
    if (src < 0) {
        cp__seterr(err, errlen, "no cluster node is alive");
        return CP_ECONNECT;
    }
    cp__cview *v = malloc(sizeof(*v));
    if (v == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    int rc = cp__cluster_view(t, (size_t)src, v, err, errlen);
    if (rc != 0) {
        free(v);
        return rc;
    }
    for (size_t i = 0; i < t->nprocs; i++) {
        cp_proc *p = &t->procs[i];
        int j = p->id[0] ? cp__cview_find(v, p->id) : -1;
        if (j < 0)
            continue;
        if (v->node[j].master) {
            p->role = CP_ROLE_MASTER;
            p->master = -1;
            continue;
        }
        p->role = CP_ROLE_REPLICA;
        p->master = -1;
        for (size_t k = 0; k < t->nprocs; k++)
            if (strcmp(t->procs[k].id, v->node[j].master_id) == 0)
                p->master = (int)k;
    }
    free(v);
    return cp__state_save(t, err, errlen);
}

/* ---- creation -------------------------------------------------------------------------------- */

/* Assigns slots lo..hi to the node behind c: ADDSLOTSRANGE (Redis 7), else ADDSLOTS in chunks. */
static int add_slots(cp__adm *c, int lo, int hi, char *err, size_t errlen) {
    char e[256];
    int rc = cp__adm_ok(c, e, sizeof(e), "CLUSTER ADDSLOTSRANGE %d %d", lo, hi);
    if (rc == 0)
        return 0;
    if (strstr(e, "nknown") == NULL && strstr(e, "syntax") == NULL) {
        cp__seterr(err, errlen, "CLUSTER ADDSLOTSRANGE %d %d: %s", lo, hi, e);
        return rc;
    }
    enum { CHUNK = 1024 };
    const char *argv[CHUNK + 2];
    char nums[CHUNK][12];
    for (int s = lo; s <= hi;) {
        int argc = 0;
        argv[argc++] = "CLUSTER";
        argv[argc++] = "ADDSLOTS";
        for (int k = 0; k < CHUNK && s <= hi; k++, s++) {
            snprintf(nums[k], sizeof(nums[k]), "%d", s);
            argv[argc++] = nums[k];
        }
        redisReply *r = cp__adm_argv(c, argc, argv, NULL, err, errlen);
        if (r == NULL)
            return cp__adm_last(c);
        cp_reply_free(r);
    }
    return 0;
}

/* Waits until every node knows every other one (handshakes done), so REPLICATE can name them. */
static int wait_all_known(cp_topo *t, char *err, size_t errlen) {
    int64_t deadline = cp__now_ms() + CP__CONVERGE_TIMEOUT_MS;
    cp__cview *v = malloc(sizeof(*v));
    if (v == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    char last[256] = "";
    int rc = 0;
    for (;;) {
        size_t ok = 0;
        for (size_t i = 0; i < t->nprocs; i++) {
            if (!cp__topo_is_node(t, i)) { /* the wire */
                ok++;
                continue;
            }
            if (cp__cluster_view(t, i, v, last, sizeof(last)) != 0 ||
                view_matches_topo(t, i, v, 0, last, sizeof(last)) != 0)
                break;
            ok++;
        }
        if (ok == t->nprocs)
            break;
        rc = cp__topo_check_alive(t, err, errlen);
        if (rc != 0)
            break;
        if (cp__topo_cancelled(t)) {
            cp__seterr(err, errlen, "interrupted");
            rc = CP_EIO;
            break;
        }
        if (cp__now_ms() >= deadline) {
            cp__seterr(err, errlen, "nodes did not meet within %d s: %s",
                       CP__CONVERGE_TIMEOUT_MS / 1000, last);
            rc = CP_ETIMEDOUT;
            break;
        }
        cp__sleep_ms(20);
    }
    free(v);
    return rc;
}

/* Connects for one setup step on node i; a failure becomes CP_ECONNECT with a message naming the
 * node (or its death, when that is the cause). */
static int node_step(cp_topo *t, size_t i, cp__adm **cp, char *err, size_t errlen) {
    char label[128], e[256];
    cp__topo_proc_label(t, i, label, sizeof(label));
    *cp = cp__topo_connect(t, i, CP__ADM_TIMEOUT_MS, e, sizeof(e));
    if (*cp != NULL)
        return 0;
    if (!cp_topo_alive(t, i))
        cp__topo_dead_error(t, i, "while the cluster was being formed", err, errlen);
    else
        cp__seterr(err, errlen, "%s: %s", label, e);
    return CP_ECONNECT;
}

int cp__cluster_prepare(cp_topo *t, char *err, size_t errlen) {
    size_t nmasters = 0;
    for (size_t i = 0; i < t->nprocs; i++)
        nmasters += t->procs[i].role == CP_ROLE_MASTER;
    if (nmasters == 0) {
        cp__seterr(err, errlen, "a cluster needs at least one master");
        return CP_EINVAL;
    }
    char e[512], label[128];
    size_t m = 0;
    for (size_t i = 0; i < t->nprocs; i++) {
        cp_proc *p = &t->procs[i];
        cp__adm *c;
        if (!cp__topo_is_node(t, i))
            continue;
        if (node_step(t, i, &c, err, errlen) != 0)
            return CP_ECONNECT;
        cp__topo_proc_label(t, i, label, sizeof(label));
        redisReply *r = cp__adm_cmd(c, e, sizeof(e), "CLUSTER MYID");
        int rc = r == NULL ? cp__adm_last(c) : CP_EPROTO;
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            snprintf(p->id, sizeof(p->id), "%s", r->str);
            rc = 0;
        }
        cp_reply_free(r);
        /* Distinct config epochs up front: no epoch collision to resolve after MEET. */
        if (rc == 0)
            rc = cp__adm_ok(c, e, sizeof(e), "CLUSTER SET-CONFIG-EPOCH %d", (int)i + 1);
        if (rc == 0 && p->role == CP_ROLE_MASTER) {
            int lo = (int)(m * CP_SLOTS / nmasters), hi = (int)((m + 1) * CP_SLOTS / nmasters) - 1;
            rc = add_slots(c, lo, hi, e, sizeof(e));
            m++;
        }
        cp__adm_free(c);
        if (rc != 0) {
            cp__seterr(err, errlen, "%s: %s", label, e);
            return CP_ESERVER;
        }
    }
    return cp__state_save(t, err, errlen);
}

int cp__cluster_create(cp_topo *t, char *err, size_t errlen) {
    char e[512], label[128];
    int rc;
    cp__topo_log(t, "forming the cluster: MEET, then REPLICATE");
    /* Every pair meets directly: with MEET from one node only, the others learn each other
     * through gossip, which takes a second or more. */
    for (size_t i = 0; i + 1 < t->nprocs; i++) {
        cp__adm *c;
        size_t later = 0; /* nodes after i: the wire is none */
        for (size_t j = i + 1; j < t->nprocs; j++)
            later += (size_t)cp__topo_is_node(t, j);
        if (!cp__topo_is_node(t, i) || later == 0)
            continue;
        if (node_step(t, i, &c, err, errlen) != 0)
            return CP_ECONNECT;
        int queued = 0;
        for (size_t j = i + 1; j < t->nprocs && queued == 0; j++)
            if (cp__topo_is_node(t, j))
                queued =
                    cp__adm_append(c, "CLUSTER MEET %s %d", t->procs[j].host, t->procs[j].port);
        if (queued != 0) {
            cp__adm_free(c);
            cp__seterr(err, errlen, "cannot queue CLUSTER MEET: %s", cp_strerror(queued));
            return queued;
        }
        if (cp__adm_flush(c, e, sizeof(e)) != 0) {
            /* Name the first MEET that failed (no reply, or an error reply), when one did. */
            size_t failed = t->nprocs;
            for (size_t j = i + 1, k = 0; j < t->nprocs && failed == t->nprocs; j++) {
                if (!cp__topo_is_node(t, j))
                    continue;
                const redisReply *r = cp__adm_reply(c, k++);
                if (r == NULL || r->type == REDIS_REPLY_ERROR)
                    failed = j;
            }
            cp__topo_proc_label(t, i, label, sizeof(label));
            if (failed < t->nprocs)
                cp__seterr(err, errlen, "%s: CLUSTER MEET port %d: %s", label,
                           t->procs[failed].port, e);
            else
                cp__seterr(err, errlen, "%s: CLUSTER MEET: %s", label, e);
            cp__adm_free(c);
            return CP_ESERVER;
        }
        cp__adm_free(c);
    }
    rc = wait_all_known(t, err, errlen);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < t->nprocs; i++) {
        cp_proc *p = &t->procs[i];
        if (p->role != CP_ROLE_REPLICA)
            continue;
        cp__adm *c;
        if (node_step(t, i, &c, err, errlen) != 0)
            return CP_ECONNECT;
        rc = cp__adm_ok(c, e, sizeof(e), "CLUSTER REPLICATE %s", t->procs[p->master].id);
        cp__adm_free(c);
        if (rc != 0) {
            cp__topo_proc_label(t, i, label, sizeof(label));
            cp__seterr(err, errlen, "%s: CLUSTER REPLICATE: %s", label, e);
            return CP_ESERVER;
        }
    }
    cp__topo_log(t, "waiting until every node reports cluster_state:ok with the same slot map");
    /* Poll the agreement while watching for deaths, so a crash is reported as a crash. */
    int64_t deadline = cp__now_ms() + CP__CONVERGE_TIMEOUT_MS;
    char last[512] = "";
    for (int nap = 20;; nap = nap < 100 ? nap * 2 : nap) {
        if (cp__topo_cancelled(t)) {
            cp__seterr(err, errlen, "interrupted");
            return CP_EIO;
        }
        int rc2 = cp__topo_check_alive(t, err, errlen);
        if (rc2 != 0)
            return rc2;
        if (cp__cluster_check(t, 1, last, sizeof(last)) == 0)
            return 0;
        if (cp__now_ms() >= deadline) {
            cp__seterr(err, errlen, "the cluster did not agree within %d s: %s",
                       CP__CONVERGE_TIMEOUT_MS / 1000, last);
            return CP_ETIMEDOUT;
        }
        cp__sleep_ms(nap);
    }
}
