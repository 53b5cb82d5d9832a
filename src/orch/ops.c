/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Operations on a running cluster that the scenarios need: add a node, migrate slots with their
 * keys, rebalance, kill and restart one process, manual failover. Each one blocks until the
 * cluster agrees again, then records the new roles in state.json. The admin connections opened
 * here (adm.h: TLS when the topology has it) are closed before returning. One thread per
 * cp_topo.
 */
#include "clusterpipe/clusterpipe.h"
#include "orch/adm.h"
#include "orch/cluster.h"
#include "orch/launch.h"
#include "orch/links.h"
#include "orch/state.h"
#include "orch/topo.h"
#include "util/clock.h"
#include "util/errmsg.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIGRATE_BATCH 100           /* keys per GETKEYSINSLOT / MIGRATE */
#define MIGRATE_SLOTS_PER_BATCH 256 /* slots per pipelined SETSLOT round (has_keys[] size) */
#define MIGRATE_TIMEOUT_MS 10000    /* MIGRATE's own transfer timeout */
#define FAILOVER_TIMEOUT_MS 20000

/* 0, or CP_EINVAL when t has no process i. */
static int check_index(const cp_topo *t, size_t i, char *err, size_t errlen) {
    if (t == NULL || i >= t->nprocs) {
        cp__seterr(err, errlen, "no process %zu in this topology", i);
        return CP_EINVAL;
    }
    return 0;
}

/* 0, or CP_EINVAL when t is not a cluster. */
static int need_cluster(const cp_topo *t, const char *op, char *err, size_t errlen) {
    if (t == NULL || t->kind != CP_TOPO_CLUSTER) {
        cp__seterr(err, errlen, "%s needs a Redis Cluster topology", op);
        return CP_EINVAL;
    }
    return 0;
}

/* ---- add a node ------------------------------------------------------------------------------ */

/* Waits until node i knows the node `id` (handshake done, link up). */
static int wait_knows(cp_topo *t, size_t i, const char *id, char *err, size_t errlen) {
    cp__cview *v = malloc(sizeof(*v));
    if (v == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    int64_t deadline = cp__now_ms() + CP__CONVERGE_TIMEOUT_MS;
    int rc = 0;
    char last[256] = "";
    for (;;) {
        if (cp__cluster_view(t, i, v, last, sizeof(last)) == 0) {
            int j = cp__cview_find(v, id);
            if (j >= 0 && !v->node[j].bad)
                break;
            snprintf(last, sizeof(last), "node %.8s not known yet", id);
        }
        if (cp__topo_cancelled(t) || cp__now_ms() >= deadline) {
            cp__seterr(err, errlen, "port %d did not learn its master: %s", t->procs[i].port,
                       cp__topo_cancelled(t) ? "interrupted" : last);
            rc = CP_ETIMEDOUT;
            break;
        }
        cp__sleep_ms(20);
    }
    free(v);
    return rc;
}

int cp_topo_add_node(cp_topo *t, int replica_of, size_t *index, char *err, size_t errlen) {
    if (need_cluster(t, "add_node", err, errlen) != 0)
        return CP_EINVAL;
    if (replica_of >= 0 &&
        ((size_t)replica_of >= t->nprocs || t->procs[replica_of].role != CP_ROLE_MASTER)) {
        cp__seterr(err, errlen, "process %d is not a master", replica_of);
        return CP_EINVAL;
    }
    int seed = cp__cluster_any_master(t, -1);
    if (seed < 0) {
        cp__seterr(err, errlen, "no alive master to introduce the new node to");
        return CP_ECONNECT;
    }
    size_t i;
    int rc = cp__topo_add_new(t, replica_of >= 0 ? CP_ROLE_REPLICA : CP_ROLE_MASTER, replica_of, &i,
                              err, errlen);
    if (rc != 0)
        return rc;
    cp_proc *p = &t->procs[i];
    rc = cp__links_add_for(t, i, err, errlen); /* before its config names the wire's port */
    if (rc == 0)
        rc = cp__launch(t, &i, 1, 1, err, errlen);
    char e[256];
    cp__adm *c = rc == 0 ? cp__topo_connect(t, i, CP__ADM_TIMEOUT_MS, e, sizeof(e)) : NULL;
    if (rc == 0 && c == NULL) {
        cp__seterr(err, errlen, "new node on port %d: %s", p->port, e);
        rc = CP_ECONNECT;
    }
    if (rc == 0) {
        redisReply *r = cp__adm_cmd(c, e, sizeof(e), "CLUSTER MYID");
        if (r != NULL && r->type == REDIS_REPLY_STRING)
            snprintf(p->id, sizeof(p->id), "%s", r->str);
        else {
            cp__seterr(err, errlen, "new node on port %d: CLUSTER MYID: %s", p->port, e);
            rc = CP_ESERVER;
        }
        cp_reply_free(r);
    }
    cp__adm_free(c);
    if (rc != 0) {
        /* Not introduced to anyone yet: forget it entirely. */
        cp__topo_stop(t, &i, 1);
        cp__links_drop_for(t, i);
        t->nprocs--;
        cp__state_save(t, NULL, 0);
        return rc;
    }
    cp__state_save(t, NULL, 0);
    c = cp__topo_connect(t, (size_t)seed, CP__ADM_TIMEOUT_MS, err, errlen);
    if (c == NULL)
        return CP_ECONNECT;
    rc = cp__adm_ok(c, e, sizeof(e), "CLUSTER MEET %s %d", p->host, p->port);
    cp__adm_free(c);
    if (rc != 0) {
        cp__seterr(err, errlen, "CLUSTER MEET %s %d: %s", p->host, p->port, e);
        return CP_ESERVER;
    }
    cp__topo_log(t, "node on port %d met the cluster", p->port);
    if (replica_of >= 0) {
        /* REPLICATE as soon as the node knows its master: a node that is still a master waits
         * Redis's 2 s writable delay before reporting cluster_state:ok, a replica does not. */
        rc = wait_knows(t, i, t->procs[replica_of].id, err, errlen);
        c = rc == 0 ? cp__topo_connect(t, i, CP__ADM_TIMEOUT_MS, err, errlen) : NULL;
        if (rc == 0 && c == NULL)
            rc = CP_ECONNECT;
        if (rc == 0 &&
            cp__adm_ok(c, e, sizeof(e), "CLUSTER REPLICATE %s", t->procs[replica_of].id) != 0) {
            cp__seterr(err, errlen, "CLUSTER REPLICATE on port %d: %s", p->port, e);
            rc = CP_ESERVER;
        }
        if (c != NULL)
            cp__adm_free(c);
    }
    if (rc == 0)
        rc = cp__cluster_wait(t, 1, CP__CONVERGE_TIMEOUT_MS, err, errlen);
    if (rc != 0)
        return rc;
    if (index != NULL)
        *index = i;
    return cp__state_save(t, err, errlen);
}

/* ---- slot migration -------------------------------------------------------------------------- */

/* Moves the keys of one slot from cf to the node at to_port, MIGRATE_BATCH keys per MIGRATE,
 * until GETKEYSINSLOT comes back empty. REPLACE is safe: while the slot is MIGRATING, the source
 * holds the authoritative copy of every key it still has. */
static int move_keys(const cp_topo *t, cp__adm *cf, const cp_proc *to, int slot, char *err,
                     size_t errlen) {
    char port[16], tmo[16];
    snprintf(port, sizeof(port), "%d", to->port);
    snprintf(tmo, sizeof(tmo), "%d", MIGRATE_TIMEOUT_MS);
    for (;;) {
        redisReply *keys =
            cp__adm_cmd(cf, err, errlen, "CLUSTER GETKEYSINSLOT %d %d", slot, MIGRATE_BATCH);
        if (keys == NULL)
            return cp__adm_last(cf);
        if (keys->type != REDIS_REPLY_ARRAY || keys->elements == 0) {
            cp_reply_free(keys);
            return 0;
        }
        const char *argv[MIGRATE_BATCH + 12];
        size_t lens[MIGRATE_BATCH + 12];
        int argc = 0;
#define ARG(s) (argv[argc] = (s), lens[argc] = strlen(argv[argc]), argc++)
        ARG("MIGRATE");
        ARG(to->host);
        ARG(port);
        ARG("");
        ARG("0");
        ARG(tmo);
        ARG("REPLACE");
        if (t->password != NULL) {
            ARG("AUTH");
            ARG(t->password);
        }
        ARG("KEYS");
#undef ARG
        for (size_t k = 0; k < keys->elements && k < MIGRATE_BATCH; k++) {
            argv[argc] = keys->element[k]->str;
            lens[argc++] = keys->element[k]->len;
        }
        redisReply *r = cp__adm_argv(cf, argc, argv, lens, err, errlen);
        cp_reply_free(keys);
        if (r == NULL)
            return cp__adm_last(cf);
        cp_reply_free(r);
    }
}

/* Sends "CLUSTER SETSLOT <s> <how> <id>" for every slot of the batch to c as one pipeline (all
 * written before any answer is read) and waits for every answer. Returns 0, or a CP_E* code with
 * the first error in err. */
static int setslot_all(cp__adm *c, const int *slots, int n, const char *how, const char *id,
                       char *err, size_t errlen) {
    for (int k = 0; k < n; k++) {
        int rc = cp__adm_append(c, "CLUSTER SETSLOT %d %s %s", slots[k], how, id);
        if (rc != 0) {
            cp__seterr(err, errlen, "cannot queue CLUSTER SETSLOT: %s", cp_strerror(rc));
            return rc;
        }
    }
    return cp__adm_flush(c, err, errlen);
}

/* What every master says of slot's owner and of the config epochs now, appended to err: a
 * MIGRATE answered MOVED means the source lost the slot while it moved, and this says to whom
 * and by which epochs (a report to read, not a repair). */
static void describe_slot(const cp_topo *t, int slot, char *err, size_t errlen) {
    cp__cview *v = malloc(sizeof(*v));
    if (v == NULL)
        return;
    size_t len = strlen(err);
    for (size_t k = 0; k < t->nprocs && len + 1 < errlen; k++) {
        char e[256];
        if (t->procs[k].role != CP_ROLE_MASTER || cp__cluster_view(t, k, v, e, sizeof(e)) != 0)
            continue;
        int o = v->owner[slot];
        int n = snprintf(err + len, errlen - len, "; port %d says slot %d is port %d's, epochs",
                         t->procs[k].port, slot, o >= 0 ? v->node[o].port : -1);
        for (size_t j = 0; n > 0 && (size_t)n < errlen - len && j < v->n; j++)
            if (v->node[j].master)
                n += snprintf(err + len + n, errlen - len - (size_t)n, " %d:%llu", v->node[j].port,
                              v->node[j].epoch);
        len = n > 0 ? strlen(err) : len;
    }
    free(v);
}

/* Moves a batch of slots from `from` to `to` (both masters): IMPORTING on the target, MIGRATING
 * on the source, the keys of each non-empty slot, then SETSLOT NODE on the target first (so it
 * owns the slots before the source lets go), then on the source and every other master. Each
 * step is one pipeline per node: Redis saves nodes.conf (with an fsync) once per event-loop
 * turn, so a pipelined batch costs one fsync where one command at a time costs one each.
 * Returns 0, or the CP_E* code of the failing step with err naming it. */
static int move_batch(const cp_topo *t, cp__adm **cms, size_t from, size_t to, const int *slots,
                      int n, char *err, size_t errlen) {
    const char *fid = t->procs[from].id, *tid = t->procs[to].id;
    cp__adm *cf = cms[from], *ct = cms[to];
    char e[512];
    const char *step = "IMPORTING";
    int rc = setslot_all(ct, slots, n, "IMPORTING", fid, e, sizeof(e));
    if (rc != 0)
        goto fail;
    step = "MIGRATING";
    rc = setslot_all(cf, slots, n, "MIGRATING", tid, e, sizeof(e));
    if (rc != 0)
        goto fail;
    step = "COUNTKEYSINSLOT";
    for (int k = 0; k < n && rc == 0; k++)
        rc = cp__adm_append(cf, "CLUSTER COUNTKEYSINSLOT %d", slots[k]);
    if (rc != 0) {
        snprintf(e, sizeof(e), "cannot queue: %s", cp_strerror(rc));
        goto fail;
    }
    rc = cp__adm_flush(cf, e, sizeof(e));
    if (rc != 0)
        goto fail;
    unsigned char has_keys[MIGRATE_SLOTS_PER_BATCH] = {0};
    for (int k = 0; k < n; k++) {
        const redisReply *r = cp__adm_reply(cf, (size_t)k);
        has_keys[k] = r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer > 0;
    }
    step = "MIGRATE";
    for (int k = 0; k < n && rc == 0; k++)
        if (has_keys[k] && (rc = move_keys(t, cf, &t->procs[to], slots[k], e, sizeof(e))) != 0 &&
            strstr(e, "MOVED") != NULL)
            describe_slot(t, slots[k], e, sizeof(e));
    if (rc != 0)
        goto fail;
    step = "NODE";
    rc = setslot_all(ct, slots, n, "NODE", tid, e, sizeof(e));
    if (rc == 0)
        rc = setslot_all(cf, slots, n, "NODE", tid, e, sizeof(e));
    if (rc != 0)
        goto fail;
    for (size_t k = 0; k < t->nprocs; k++) {
        if (k == from || k == to || cms[k] == NULL)
            continue;
        /* Other masters learn it from gossip anyway; telling them now avoids a MOVED detour,
         * and an error here (a node that just restarted) is not fatal. */
        setslot_all(cms[k], slots, n, "NODE", tid, e, sizeof(e));
    }
    return 0;
fail:
    cp__seterr(err, errlen, "moving slots %d..%d from port %d to port %d (%s): %s", slots[0],
               slots[n - 1], t->procs[from].port, t->procs[to].port, step, e);
    return rc;
}

int cp_topo_migrate_slots(cp_topo *t, size_t from, size_t to, int nslots, char *err,
                          size_t errlen) {
    if (need_cluster(t, "migrate_slots", err, errlen) != 0 ||
        check_index(t, from, err, errlen) != 0 || check_index(t, to, err, errlen) != 0)
        return CP_EINVAL;
    if (from == to || nslots <= 0) {
        cp__seterr(err, errlen, "migrate_slots: need two different masters and nslots > 0");
        return CP_EINVAL;
    }
    int rc = cp__cluster_sync_roles(t, err, errlen);
    if (rc != 0)
        return rc;
    if (t->procs[from].role != CP_ROLE_MASTER || t->procs[to].role != CP_ROLE_MASTER) {
        cp__seterr(err, errlen, "migrate_slots: ports %d and %d must both be masters",
                   t->procs[from].port, t->procs[to].port);
        return CP_EINVAL;
    }
    cp__cview *v = malloc(sizeof(*v));
    cp__adm **cms = calloc(t->nprocs, sizeof(*cms));
    int *slots = malloc(sizeof(int) * CP_SLOTS);
    if (v == NULL || cms == NULL || slots == NULL) {
        cp__seterr(err, errlen, "out of memory");
        rc = CP_ENOMEM;
        goto out;
    }
    rc = cp__cluster_view(t, from, v, err, errlen);
    if (rc != 0)
        goto out;
    int me = cp__cview_find(v, t->procs[from].id), n = 0;
    for (int s = CP_SLOTS - 1; s >= 0 && n < nslots; s--)
        if (me >= 0 && v->owner[s] == me)
            slots[n++] = s;
    if (n < nslots) {
        cp__seterr(err, errlen, "port %d owns %d slots, fewer than the %d asked to move",
                   t->procs[from].port, n, nslots);
        rc = CP_EINVAL;
        goto out;
    }
    for (size_t k = 0; k < t->nprocs; k++) {
        if (t->procs[k].role != CP_ROLE_MASTER || !cp_topo_alive(t, k))
            continue;
        cms[k] = cp__topo_connect(t, k, MIGRATE_TIMEOUT_MS * 2, err, errlen);
        if (cms[k] == NULL && (k == from || k == to)) {
            rc = CP_ECONNECT;
            goto out;
        }
    }
    cp__topo_log(t, "moving %d slots with their keys from port %d to port %d", nslots,
                 t->procs[from].port, t->procs[to].port);
    for (int k = 0; k < n; k += MIGRATE_SLOTS_PER_BATCH) {
        if (cp__topo_cancelled(t)) {
            cp__seterr(err, errlen, "interrupted after %d of %d slots", k, n);
            rc = CP_EIO;
            goto out;
        }
        int len = n - k < MIGRATE_SLOTS_PER_BATCH ? n - k : MIGRATE_SLOTS_PER_BATCH;
        rc = move_batch(t, cms, from, to, slots + k, len, err, errlen);
        if (rc != 0)
            goto out;
    }
    rc = cp__cluster_wait(t, 0, CP__CONVERGE_TIMEOUT_MS, err, errlen);
out:
    for (size_t k = 0; cms != NULL && k < t->nprocs; k++)
        if (cms[k] != NULL)
            cp__adm_free(cms[k]);
    free(cms);
    free(slots);
    free(v);
    return rc;
}

int cp_topo_rebalance(cp_topo *t, char *err, size_t errlen) {
    if (need_cluster(t, "rebalance", err, errlen) != 0)
        return CP_EINVAL;
    int rc = cp__cluster_sync_roles(t, err, errlen);
    if (rc != 0)
        return rc;
    int m0 = cp__cluster_any_master(t, -1);
    cp__cview *v = malloc(sizeof(*v));
    size_t *ms = malloc(sizeof(size_t) * t->nprocs);
    int *have = calloc(t->nprocs, sizeof(int)), *want = calloc(t->nprocs, sizeof(int));
    if (v == NULL || ms == NULL || have == NULL || want == NULL) {
        cp__seterr(err, errlen, "out of memory");
        rc = CP_ENOMEM;
        goto out;
    }
    if (m0 < 0) {
        cp__seterr(err, errlen, "no alive master");
        rc = CP_ECONNECT;
        goto out;
    }
    rc = cp__cluster_view(t, (size_t)m0, v, err, errlen);
    if (rc != 0)
        goto out;
    size_t nm = 0;
    for (size_t i = 0; i < t->nprocs; i++) {
        if (t->procs[i].role != CP_ROLE_MASTER)
            continue;
        int j = cp__cview_find(v, t->procs[i].id);
        have[i] = j >= 0 ? v->node[j].nslots : 0;
        /* Insert by slot count, largest first: the extra slots of an uneven split stay with
         * those already holding them, which saves moves. */
        size_t at = nm++;
        while (at > 0 && have[ms[at - 1]] < have[i]) {
            ms[at] = ms[at - 1];
            at--;
        }
        ms[at] = i;
    }
    if (nm == 0) {
        cp__seterr(err, errlen, "no master to rebalance");
        rc = CP_EINVAL;
        goto out;
    }
    for (size_t k = 0; k < nm; k++)
        want[ms[k]] = (int)(CP_SLOTS / nm) + (k < CP_SLOTS % nm ? 1 : 0);
    for (;;) {
        size_t donor = 0, taker = 0;
        int surplus = 0, deficit = 0;
        for (size_t k = 0; k < nm; k++) {
            size_t i = ms[k];
            if (have[i] - want[i] > surplus) {
                surplus = have[i] - want[i];
                donor = i;
            }
            if (want[i] - have[i] > deficit) {
                deficit = want[i] - have[i];
                taker = i;
            }
        }
        if (surplus == 0 || deficit == 0)
            break;
        int k = surplus < deficit ? surplus : deficit;
        rc = cp_topo_migrate_slots(t, donor, taker, k, err, errlen);
        if (rc != 0)
            goto out;
        have[donor] -= k;
        have[taker] += k;
    }
    rc = 0;
out:
    free(v);
    free(ms);
    free(have);
    free(want);
    return rc;
}

/* ---- kill, restart, failover ----------------------------------------------------------------- */

int cp_topo_kill(cp_topo *t, size_t i, int sig, char *err, size_t errlen) {
    if (check_index(t, i, err, errlen) != 0)
        return CP_EINVAL;
    char label[128];
    cp__topo_proc_label(t, i, label, sizeof(label));
    cp__pidref r = cp__topo_ref(t, i);
    if (cp__proc_signal(&r, sig) != 0) {
        cp__seterr(err, errlen, "%s (pid %ld) is not running, or is no longer ours", label,
                   (long)r.pid);
        return CP_EINVAL;
    }
    cp__topo_log(t, "sent signal %d to %s, pid %ld", sig, label, (long)r.pid);
    if ((sig == SIGKILL || sig == SIGTERM) && !cp__proc_wait_gone(&r, CP__STOP_TIMEOUT_MS)) {
        cp__seterr(err, errlen, "%s (pid %ld) did not exit after signal %d", label, (long)r.pid,
                   sig);
        return CP_ETIMEDOUT;
    }
    return 0;
}

int cp_topo_restart(cp_topo *t, size_t i, char *err, size_t errlen) {
    if (check_index(t, i, err, errlen) != 0)
        return CP_EINVAL;
    char label[128];
    cp__topo_proc_label(t, i, label, sizeof(label));
    int rc = cp__launch_restart(t, i, err, errlen);
    if (rc != 0)
        return rc;
    cp__topo_log(t, "restarted %s, pid %ld", label, (long)t->procs[i].pid);
    if (t->kind != CP_TOPO_CLUSTER)
        return 0;
    rc = cp__cluster_wait(t, 0, CP__CONVERGE_TIMEOUT_MS, err, errlen);
    if (rc == 0)
        rc = cp__cluster_sync_roles(t, err, errlen);
    return rc;
}

int cp_topo_failover(cp_topo *t, size_t replica, char *err, size_t errlen) {
    if (need_cluster(t, "failover", err, errlen) != 0 || check_index(t, replica, err, errlen) != 0)
        return CP_EINVAL;
    int rc = cp__cluster_sync_roles(t, err, errlen);
    if (rc != 0)
        return rc;
    cp_proc *p = &t->procs[replica];
    if (p->role != CP_ROLE_REPLICA) {
        cp__seterr(err, errlen, "port %d is not a replica", p->port);
        return CP_EINVAL;
    }
    /* A live master hands over cleanly; a dead one cannot take part, so force it. */
    int forced = p->master < 0 || !cp_topo_alive(t, (size_t)p->master);
    cp__adm *c = cp__topo_connect(t, replica, CP__ADM_TIMEOUT_MS, err, errlen);
    if (c == NULL)
        return CP_ECONNECT;
    char e[256], role[32] = "";
    rc = cp__adm_ok(c, e, sizeof(e), forced ? "CLUSTER FAILOVER FORCE" : "CLUSTER FAILOVER");
    if (rc != 0) {
        cp__seterr(err, errlen, "CLUSTER FAILOVER on port %d: %s", p->port, e);
        cp__adm_free(c);
        return CP_ESERVER;
    }
    cp__topo_log(t, "failover%s: replica on port %d takes over", forced ? " (forced)" : "",
                 p->port);
    int64_t deadline = cp__now_ms() + FAILOVER_TIMEOUT_MS;
    while (cp__adm_info(c, "replication", "role", role, sizeof(role), e, sizeof(e)) != 0 ||
           strcmp(role, "master") != 0) {
        if (cp__now_ms() >= deadline || cp__topo_cancelled(t)) {
            cp__seterr(err, errlen, "port %d did not become master within %d s (role %s)", p->port,
                       FAILOVER_TIMEOUT_MS / 1000, role[0] ? role : e);
            cp__adm_free(c);
            return CP_ETIMEDOUT;
        }
        cp__sleep_ms(20);
    }
    cp__adm_free(c);
    rc = cp__cluster_wait(t, 0, CP__CONVERGE_TIMEOUT_MS, err, errlen);
    if (rc == 0)
        rc = cp__cluster_sync_roles(t, err, errlen);
    if (rc == 0 && t->procs[replica].role != CP_ROLE_MASTER) {
        cp__seterr(err, errlen, "port %d reports master, but the cluster disagrees", p->port);
        rc = CP_ETOPOLOGY;
    }
    return rc;
}
