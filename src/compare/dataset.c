/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The dataset of a compare setup (dataset.h): the fit check (a large dataset's memory per key
 * measured on a part of it first, the setup refused when the whole would not fit), the load by
 * the engine, DBSIZE and a read-back sample checked, the replicas waited for, and what it cost:
 * load rate, memory per key and per shard, the client's peak RSS. Every number goes into the
 * document (the context's); clients made here are freed here. The calling thread (the engine
 * runs its own workers inside cp__load_run and joins them).
 */
#include "compare/dataset.h"

#include "bench/nodes.h"
#include "bench/readback.h"
#include "orch/orch.h"
#include "util/env.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* What the dataset costs each server that holds it (cluster masters or twemproxy's shards):
 * [{address, used_memory, keys}], after the load. */
static json_t *shard_memory(const cp_topo *topo) {
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < cp_topo_nprocs(topo); i++) {
        const cp_proc *p = cp_topo_proc(topo, i);
        cp_proc_stats st;
        if ((p->role != CP_ROLE_MASTER && p->role != CP_ROLE_SHARD) ||
            cp_topo_proc_stats(topo, i, &st) != 0 || !st.reachable)
            continue;
        char addr[96];
        snprintf(addr, sizeof(addr), "%s:%d", p->host, p->port);
        json_array_append_new(a,
                              json_pack("{s:s,s:I,s:I}", "address", addr, "used_memory",
                                        (json_int_t)st.used_memory, "keys", (json_int_t)st.keys));
    }
    return a;
}

/* used_memory summed over the servers that hold the dataset (masters or twemproxy's shards);
 * -1 when one could not be asked. */
static long long dataset_memory(const cp_topo *topo) {
    long long sum = 0;
    for (size_t i = 0; i < cp_topo_nprocs(topo); i++) {
        const cp_proc *p = cp_topo_proc(topo, i);
        cp_proc_stats st;
        if (p->role != CP_ROLE_MASTER && p->role != CP_ROLE_SHARD)
            continue;
        if (cp_topo_proc_stats(topo, i, &st) != 0 || !st.reachable || st.used_memory < 0)
            return -1;
        sum += st.used_memory;
    }
    return sum;
}

/* The client's peak resident memory so far (getrusage: the whole process), bytes. */
static long long client_peak_rss(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (long long)ru.ru_maxrss * 1024 : -1;
}

/* The engine's load of keys [0, nkeys) of a point's values. */
static int load_keys(cp__cmp *r, const cp__bench_target *t, const cp__cmp_point *pt, uint64_t nkeys,
                     cp__load_result *res, char *err, size_t errlen) {
    const cp__compare_opts *o = r->o;
    cp__load_config cfg;
    cp__load_config_init(&cfg);
    cfg.keys = nkeys;
    cfg.value_size = pt->value_size;
    cfg.progress = o->load_progress;
    cfg.progress_ud = o->ud;
    cfg.cancel = o->cancel;
    cfg.cpus = cp__cmp_client_cpus(o);
    memset(res, 0, sizeof(*res));
    return cp__load_run(t, &cfg, res, err, errlen);
}

/* How many servers hold each key: 1 + the replicas per master (1 without replicas). */
static double copies(const cp_topo *topo) {
    size_t masters = 0, replicas = 0;
    for (size_t i = 0; i < cp_topo_nprocs(topo); i++) {
        cp_proc_role role = cp_topo_proc(topo, i)->role;
        masters += role == CP_ROLE_MASTER || role == CP_ROLE_SHARD;
        replicas += role == CP_ROLE_REPLICA;
    }
    return masters > 0 ? 1.0 + (double)replicas / (double)masters : 1.0;
}

/* Waits until every master's replicas, all online, have acknowledged the master's replication
 * offset as it was when the load ended (INFO replication: master_repl_offset, slaveN offset),
 * so reads on the replicas see the whole dataset, not a lagging part of it. Polls every 50 ms
 * for at most CP__COMPARE_SYNC_TIMEOUT_S seconds; records the wait in the load entry l
 * ("replicas_synced_s"). Returns 0 (also when the topology has no replicas), or 1 (warned). */
static int sync_replicas(cp__cmp *r, const char *setup, const cp__bench_target *t, json_t *l) {
    const cp_topo *topo = t->topo;
    if (topo == NULL || copies(topo) <= 1.0)
        return 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < cp_topo_nprocs(topo); i++) {
        const cp_proc *p = cp_topo_proc(topo, i);
        if (p->role != CP_ROLE_MASTER)
            continue;
        int want = 0;
        for (size_t k = 0; k < cp_topo_nprocs(topo); k++)
            want += cp_topo_proc(topo, k)->role == CP_ROLE_REPLICA &&
                    cp_topo_proc(topo, k)->master == (int)i;
        char err[CP__CMP_ERRLEN] = "";
        cp_client *c = cp__target_node_connect(t, p->host, p->port, err, sizeof(err));
        long long target = -1, off = 0, acked = 0;
        int online = 0, rc = c == NULL ? CP_ECONNECT : 0;
        for (;;) {
            if (rc == 0)
                rc = cp__node_repl_offsets(c, &off, &online, &acked);
            if (rc == 0 && target < 0)
                target = off; /* no write comes after the load: this is all of it */
            if (rc != 0 || (online >= want && acked >= target) || cp__session_cancelled(&r->ss))
                break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec >= CP__COMPARE_SYNC_TIMEOUT_S)
                break;
            nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        }
        if (c != NULL)
            cp_free(c);
        if (rc != 0 || online < want || acked < target) {
            cp__cmp_warn(
                r,
                "%s: the replicas of %s:%d did not catch up with the load (%d of %d online, "
                "offset %lld of %lld)%s%s",
                setup, p->host, p->port, online, want, acked, target, err[0] ? ": " : "", err);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    double waited = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
    json_object_set_new(l, "replicas_synced_s", json_real(waited));
    cp__session_say(&r->ss, "%s: every replica has the dataset (waited %.2f s)", setup, waited);
    return 0;
}

/* A dataset of more than CP__COMPARE_FIT_PROBE_KEYS keys is first loaded in part (its first
 * keys: the full load overwrites them), and the servers' memory per key of that part projects
 * what the whole will take; when that is more than the machine has available, the setup stops
 * here, before minutes of loading end in the OOM killer. Returns 0 to go on, 1 when it does not
 * fit or the probe failed (warned, recorded in the document's "fit"). */
static int fits(cp__cmp *r, const char *setup, const cp__bench_target *t, const cp__cmp_point *pt) {
    const cp__compare_opts *o = r->o;
    if (t->topo == NULL || o->keys <= CP__COMPARE_FIT_PROBE_KEYS)
        return 0;
    long long before = dataset_memory(t->topo);
    cp__load_result res;
    char err[CP__CMP_ERRLEN] = "";
    cp__session_say(&r->ss, "%s: loading %d keys first, to measure the memory per key", setup,
                    CP__COMPARE_FIT_PROBE_KEYS);
    if (load_keys(r, t, pt, CP__COMPARE_FIT_PROBE_KEYS, &res, err, sizeof(err)) != 0) {
        cp__cmp_warn(r, "%s: the probe load failed: %s", setup, err);
        return 1;
    }
    long long after = dataset_memory(t->topo);
    long long avail = o->mem_available > 0 ? o->mem_available : cp__env_mem_available();
    if (before < 0 || after < 0 || avail < 0) {
        cp__session_say(&r->ss,
                        "%s: cannot tell the memory per key or what is available; loading anyway",
                        setup);
        return 0;
    }
    double per_key = (double)(after - before) / CP__COMPARE_FIT_PROBE_KEYS;
    /* every replica holds its master's keys too: masters' memory per key x copies */
    double projected = per_key * (double)o->keys * copies(t->topo);
    /* the kernel, the client and the other engineer's processes need room too */
    double usable = (double)avail * CP__COMPARE_FIT_SHARE;
    json_array_append_new(json_object_get(r->doc, "fit"),
                          json_pack("{s:s,s:I,s:f,s:f,s:I,s:f,s:b}", "setup", setup, "probe_keys",
                                    (json_int_t)CP__COMPARE_FIT_PROBE_KEYS, "memory_per_key",
                                    per_key, "projected_bytes", projected, "mem_available",
                                    (json_int_t)avail, "share", CP__COMPARE_FIT_SHARE, "fits",
                                    projected <= usable));
    if (projected > usable) {
        cp__cmp_warn(
            r,
            "%s: %" PRIu64 " keys of %s bytes will not fit: %.0f bytes per key (measured on a "
            "%d-key load) make %.1f GB, and %.0f%% of the %.1f GB available is %.1f GB; not "
            "loading (fewer --keys, or a bigger machine)",
            setup, o->keys, pt->sizes, per_key, CP__COMPARE_FIT_PROBE_KEYS, projected / 1e9,
            CP__COMPARE_FIT_SHARE * 100, (double)avail / 1e9, usable / 1e9);
        return 1;
    }
    cp__session_say(&r->ss, "%s: %.0f bytes per key: %.1f GB projected, %.1f GB available", setup,
                    per_key, projected / 1e9, (double)avail / 1e9);
    return 0;
}

/* Reads back the first keys of the dataset and checks every value (a sample: the bench's
 * verified GETs then read random keys all over it). Returns 0, or 1 when a key was missing or
 * wrong (warned). */
static int read_sample(cp__cmp *r, const char *setup, const cp__bench_target *t,
                       const cp__cmp_point *pt, json_t *l) {
    cp__readback_config rc;
    cp__readback_config_init(&rc);
    rc.keys = r->o->keys < CP__COMPARE_READBACK_SAMPLE ? r->o->keys : CP__COMPARE_READBACK_SAMPLE;
    rc.value_size = pt->value_size;
    rc.read_from = r->read_from; /* cluster-replicas: the sample is read from the replicas */
    rc.cancel = r->o->cancel;
    cp__readback_result rb;
    memset(&rb, 0, sizeof(rb));
    char err[CP__CMP_ERRLEN] = "";
    int read_rc = cp__readback_run(t, &rc, NULL, NULL, &rb, err, sizeof(err));
    json_object_set_new(l, "readback",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:f}", "keys", (json_int_t)rb.keys, "ok",
                                  (json_int_t)rb.ok, "missing", (json_int_t)rb.missing,
                                  "mismatched", (json_int_t)(rb.mismatched + rb.stale + rb.newer),
                                  "failed", (json_int_t)rb.failed, "seconds", rb.seconds));
    if (read_rc != 0 || rb.ok != rc.keys) {
        cp__cmp_warn(r,
                     "%s: read-back of the first %" PRIu64 " keys: %" PRIu64 " ok, %" PRIu64
                     " missing, %" PRIu64 " wrong, %" PRIu64 " failed%s%s",
                     setup, rc.keys, rb.ok, rb.missing, rb.mismatched + rb.stale + rb.newer,
                     rb.failed, err[0] ? ": " : "", err);
        return 1;
    }
    return 0;
}

int cp__cmp_load(cp__cmp *r, const char *setup, const cp__bench_target *t, const char *target_flags,
                 const cp__cmp_point *pt, long long *empty) {
    const cp__compare_opts *o = r->o;
    char cmd[512], err[CP__CMP_ERRLEN] = "";
    snprintf(cmd, sizeof(cmd), "clusterpipe load %s --keys %" PRIu64 " --value-size %s",
             target_flags, o->keys, pt->sizes);
    cp__cmp_add_command(r, cmd);
    /* memory per key counts from the servers as they were empty, also when a value-size sweep
     * loads again over an earlier dataset */
    if (*empty < 0 && t->topo != NULL)
        *empty = dataset_memory(t->topo);
    long long before = *empty;
    if (fits(r, setup, t, pt) != 0)
        return 1;
    cp__session_say(&r->ss, "%s: loading %" PRIu64 " keys of %s bytes", setup, o->keys, pt->sizes);
    cp__load_result res;
    int rc = load_keys(r, t, pt, o->keys, &res, err, sizeof(err));
    json_t *l =
        json_pack("{s:s,s:I,s:I,s:I,s:f,s:f,s:I}", "setup", setup, "shards", (json_int_t)pt->shards,
                  "value_size", cp__cmp_size_number(&pt->value_size), "keys",
                  (json_int_t)res.written, "seconds", res.seconds, "keys_per_sec", res.keys_per_sec,
                  "client_peak_rss", (json_int_t)client_peak_rss());
    if (l != NULL && res.dbsize_checked)
        json_object_set_new(l, "dbsize",
                            json_pack("{s:I,s:b}", "total", (json_int_t)res.dbsize, "equal",
                                      res.dbsize == (long long)o->keys));
    if (l != NULL && rc == 0 && t->topo != NULL) {
        json_object_set_new(l, "memory_per_shard", shard_memory(t->topo));
        long long after = dataset_memory(t->topo);
        if (before >= 0 && after >= 0 && res.written > 0)
            json_object_set_new(l, "memory_per_key",
                                json_real((double)(after - before) / (double)res.written));
    }
    if (l != NULL)
        json_array_append_new(json_object_get(r->doc, "load"), l);
    if (rc != 0 || cp__session_cancelled(&r->ss)) {
        cp__cmp_warn(r, "%s: load failed: %s", setup,
                     cp__session_cancelled(&r->ss) ? "interrupted" : err);
        return 1;
    }
    cp__session_say(&r->ss, "%s: loaded %" PRIu64 " keys in %.2f s (%.0f keys/s)%s%s", setup,
                    res.written, res.seconds, res.keys_per_sec, res.note[0] ? "; " : "", res.note);
    if (l != NULL && (sync_replicas(r, setup, t, l) != 0 || read_sample(r, setup, t, pt, l) != 0))
        return 1;
    return 0;
}
