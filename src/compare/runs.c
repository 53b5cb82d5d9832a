/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The runs of a compare setup (runs.h): a bench run per case, repeat and point, with the
 * command that reproduces it, the connections every server holds at the start gate and their
 * memory, its latency distributions (bench/session.h), or a failed run in its place, so the
 * report shows a run that could not happen instead of silently missing it. Bench results are
 * freed right after their JSON is taken; the objects go into the context's document. The
 * calling thread (the engine starts its workers inside cp__bench_run and joins them).
 */
#include "compare/runs.h"

#include "bench/report.h"
#include "compare/dataset.h"
#include "orch/orch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERVERS                                                                                \
    160 /* processes of the largest setup a sweep starts (64 shards + 4 proxies)                   \
         */

/* Marks a run object with the point it measured: the shards it ran on (always, so a plan can
 * tell points apart), the round trip of its links when there was one or the sweep is over it,
 * and, under a sweep, the swept parameter and value. */
static void mark_point(const cp__cmp *r, json_t *run, const cp__cmp_point *pt) {
    json_object_set_new(run, "shards", json_integer(pt->shards));
    if (pt->rtt_ns > 0 || (cp__cmp_sweeping(r->o) && r->o->sweep->param == CP__SWEEP_RTT))
        json_object_set_new(run, "rtt_ns", json_integer((json_int_t)pt->rtt_ns));
    if (cp__cmp_sweeping(r->o))
        json_object_set_new(run, "sweep",
                            json_pack("{s:s,s:I}", "param",
                                      cp__sweep_param_name(r->o->sweep->param), "value",
                                      (json_int_t)pt->value));
}

/* Appends a run that could not produce a bench object (setup down, load failed, engine error)
 * so the report shows it as failed instead of silently missing. */
static void add_failed_run(cp__cmp *r, const char *setup, const cp__cmp_point *pt,
                           const cp__cmp_case *c, int iteration, const char *why) {
    char name[160]; /* "<setup> <call type>" */
    snprintf(name, sizeof(name), "%s %s", setup, c->call);
    json_t *run = json_object();
    json_object_set_new(run, "name", json_string(name));
    json_object_set_new(run, "setup", json_string(setup));
    json_object_set_new(run, "call_type", json_string(c->call));
    json_object_set_new(run, "iteration", json_integer(iteration));
    json_object_set_new(run, "workload",
                        json_pack("{s:i,s:i,s:I}", "pipeline", c->pipeline, "clients", pt->clients,
                                  "value_size", cp__cmp_size_number(&pt->value_size)));
    mark_point(r, run, pt);
    json_object_set_new(run, "error", json_string(why));
    json_array_append_new(json_object_get(r->doc, "runs"), run);
    r->failed = 1;
}

void cp__cmp_fail_points(cp__cmp *r, const char *setup, int from, int to, const char *why) {
    for (int p = from; p < to; p++) {
        cp__cmp_point pt;
        cp__cmp_point_at(r->o, p, &pt);
        cp__cmp_case cases[2];
        int nc = cp__cmp_cases_of(r->o, &pt, cases);
        for (int k = 1; k <= r->o->repeat; k++)
            for (int c = 0; c < nc; c++)
                add_failed_run(r, setup, &pt, &cases[c], k, why);
    }
}

/* The `clusterpipe bench` command that reproduces one run by hand (the report's "commands"). */
static void bench_command(const cp__compare_opts *o, const cp__cmp_point *pt, const char *target,
                          int pipeline, const cp__cmp *r, const cp__bench_target *t, char *buf,
                          size_t len) {
    char dist[64], ratio[40] = "";
    cp__dist_format(&o->dist, dist, sizeof(dist));
    if (o->ratio_set > 0)
        snprintf(ratio, sizeof(ratio), " --ratio %u:%u", o->ratio_set, o->ratio_get);
    int n = snprintf(buf, len,
                     "clusterpipe bench %s --threads %d --clients %d --pipeline %d --requests "
                     "%" PRIu64 " --keys %" PRIu64 " --value-size %s --key-dist %s%s%s%s%s",
                     target, pt->threads, pt->clients, pipeline, o->requests, o->keys, pt->sizes,
                     dist, ratio, o->verify ? "" : " --no-verify",
                     r->read_from == CP_READ_REPLICA ? " --read-from replica" : "",
                     r->client_cache    ? " --client-cache"
                     : t->protocol == 3 ? " --protocol 3"
                                        : "");
    if (o->commands != NULL && n > 0 && (size_t)n < len)
        cp__cmdset_flags(o->commands, buf + n, len - (size_t)n);
}
/* The versions and machine the first successful run saw, for the environment. */
static void note_environment(cp__cmp *r, const cp__bench_result *res) {
    if (!r->redis_version[0] && res->redis_version[0])
        snprintf(r->redis_version, sizeof(r->redis_version), "%s", res->redis_version);
    if (!r->nutcracker_version[0] && res->nutcracker_version[0])
        snprintf(r->nutcracker_version, sizeof(r->nutcracker_version), "%s",
                 res->nutcracker_version);
    if (!r->cores && res->cores > 0) {
        r->cores = res->cores;
        snprintf(r->cpu_model, sizeof(r->cpu_model), "%s", res->cpu_model);
    }
}

/* The connections every server holds once all clients are connected and warmed up, and what
 * they cost it. Taken in the engine's on_ready hook, when every worker waits at the start gate:
 * nothing connects or disconnects meanwhile, so the counts are exact, not a sample of a moving
 * number. A first sample right before the run is the baseline the cost is measured from:
 * memory_per_connection = (used_memory now - before) / (connected_clients now - before) for a
 * redis server, (RSS now - before) / connections added for a proxy (an allocator that kept memory
 * from an earlier, larger point makes that one low). connected_clients counts this probe's own
 * connection. */
typedef struct ready_probe {
    const cp_topo *topo;
    int clients_per_proxy; /* a proxy's share of the client connections (proxies only) */
    cp_proc_stats before[MAX_SERVERS];
    json_t *servers; /* NULL until taken */
} ready_probe;

static void sample_servers(const cp_topo *t, cp_proc_stats *st) {
    for (size_t i = 0; i < cp_topo_nprocs(t) && i < MAX_SERVERS; i++)
        if (cp_topo_proc_stats(t, i, &st[i]) != 0)
            st[i].reachable = 0;
}

static void take_connections(void *ud) {
    ready_probe *rp = ud;
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < cp_topo_nprocs(rp->topo) && i < MAX_SERVERS; i++) {
        const cp_proc *p = cp_topo_proc(rp->topo, i);
        const cp_proc_stats *b = &rp->before[i];
        if (p->role == CP_ROLE_WIRE)
            continue; /* the network, no server: it holds no client connection */
        cp_proc_stats st;
        if (cp_topo_proc_stats(rp->topo, i, &st) != 0 || !st.reachable)
            continue;
        char addr[96];
        snprintf(addr, sizeof(addr), "%s:%d", p->host, p->port);
        json_t *o = json_pack("{s:s,s:s,s:I}", "address", addr, "role", cp_proc_role_name(p->role),
                              "rss", (json_int_t)st.rss);
        if (o == NULL)
            continue;
        double added = 0, grown = 0;
        if (st.connected_clients >= 0) { /* a redis server */
            json_object_set_new(o, "connected_clients", json_integer(st.connected_clients));
            json_object_set_new(o, "used_memory", json_integer(st.used_memory));
            json_object_set_new(o, "clients_memory", json_integer(st.clients_memory));
            if (b->reachable && b->connected_clients >= 0) {
                added = (double)(st.connected_clients - b->connected_clients);
                grown = (double)(st.used_memory - b->used_memory);
            }
        } else if (b->reachable && b->rss >= 0 && st.rss >= 0) { /* a proxy */
            json_object_set_new(o, "client_connections", json_integer(rp->clients_per_proxy));
            added = rp->clients_per_proxy;
            grown = (double)(st.rss - b->rss);
        }
        if (added > 0)
            json_object_set_new(o, "memory_per_connection", json_real(grown / added));
        json_array_append_new(a, o);
    }
    rp->servers = a;
}

/* A wire busier than CP__WIRE_BUSY_CORES: its own queueing is then part of what was measured
 * through it. Said (warn hook) and kept in the run ("wire_warning"); not a failure. */
static void note_busy_wire(cp__cmp *r, json_t *obj, const char *setup, const char *call,
                           const cp__bench_result *res) {
    if (!res->has_cpu_wire || res->seconds <= 0 ||
        res->cpu_wire / res->seconds <= CP__WIRE_BUSY_CORES)
        return;
    char line[300];
    snprintf(line, sizeof(line),
             "%s %s: the wire was busy %.2f cores (more than %.1f): its own queueing is part of "
             "this run's latencies and throughput",
             setup, call, res->cpu_wire / res->seconds, CP__WIRE_BUSY_CORES);
    json_object_set_new(obj, "wire_warning", json_string(line));
    if (r->o->warn != NULL)
        r->o->warn(r->o->ud, line);
}

/* One case (repeat k) of one point against one target: its bench object (and, with an hgrm_dir,
 * its latency distributions as "<setup> <call>-<k>.hgrm"), or a failed run. */
static void run_case(cp__cmp *r, const char *setup, const cp__bench_target *t,
                     const char *target_flags, const cp__cmp_point *pt, const cp__cmp_case *c,
                     int k) {
    const cp__compare_opts *o = r->o;
    char cmdline[12288], err[CP__CMP_ERRLEN] = "";
    bench_command(o, pt, target_flags, c->pipeline, r, t, cmdline, sizeof(cmdline));
    if (k == 1)
        cp__cmp_add_command(r, cmdline);
    cp__bench_config cfg;
    cp__cmp_bench_config(o, pt, c->pipeline, (uint64_t)k, &cfg);
    cfg.read_from = r->read_from;
    static const cp_cache_options cache_defaults; /* zeros: the library's defaults */
    cfg.client_cache = r->client_cache ? &cache_defaults : NULL;
    cfg.command_line = cmdline;
    ready_probe *probe = calloc(1, sizeof(*probe)); /* large: not on the stack */
    if (probe != NULL && t->topo != NULL) {
        probe->topo = t->topo;
        probe->clients_per_proxy = (pt->clients + CP__COMPARE_PROXIES - 1) / CP__COMPARE_PROXIES;
        sample_servers(t->topo, probe->before);
        cfg.on_ready = take_connections;
        cfg.on_ready_ud = probe;
    }
    char rep[32] = "";
    if (o->repeat > 1)
        snprintf(rep, sizeof(rep), " [%d/%d]", k, o->repeat);
    cp__session_say(&r->ss,
                    "%s %s%s: %" PRIu64 " requests, %d threads, %d connections, pipeline %d", setup,
                    c->call, rep, o->requests, pt->threads, pt->clients, c->pipeline);
    cp__bench_result res;
    if (cp__bench_run(t, &cfg, &res, err, sizeof(err)) != 0) {
        cp__cmp_warn(r, "%s %s: %s", setup, c->call, err);
        add_failed_run(r, setup, pt, c, k, err);
        cp__bench_result_free(&res);
        if (probe != NULL)
            json_decref(probe->servers);
        free(probe);
        return;
    }
    note_environment(r, &res);
    json_t *obj = cp__bench_json(t, &cfg, &res);
    int stopped = cp__session_cancelled(&r->ss);
    if (obj == NULL) {
        add_failed_run(r, setup, pt, c, k, "out of memory");
    } else {
        char name[160];
        snprintf(name, sizeof(name), "%s %s", setup, c->call);
        json_object_set_new(obj, "name", json_string(name));
        json_object_set_new(obj, "setup", json_string(setup));
        json_object_set_new(obj, "call_type", json_string(c->call));
        json_object_set_new(obj, "iteration", json_integer(k));
        mark_point(r, obj, pt);
        if (probe != NULL && probe->servers != NULL) {
            json_object_set_new(obj, "servers", probe->servers);
            probe->servers = NULL;
        }
        note_busy_wire(r, obj, setup, c->call, &res);
        if (stopped)
            json_object_set_new(obj, "error", json_string("interrupted"));
        char base[176];
        snprintf(base, sizeof(base), "%s-%d", name, k);
        if (cp__session_write_hgrm(&r->ss, obj, base, o->commands, &res, err, sizeof(err)) != 0)
            cp__cmp_warn(r, "%s", err); /* the run fails with it */
        json_array_append_new(json_object_get(r->doc, "runs"), obj);
    }
    if (probe != NULL)
        json_decref(probe->servers);
    free(probe);
    if (cp__bench_result_failed(&res) || stopped) {
        r->failed = 1;
        cp__cmp_warn(
            r, "%s %s FAILED: %" PRIu64 " failed, %" PRIu64 " unknown, %" PRIu64 " mismatched%s%s",
            setup, c->call, res.failed_ops, res.unknown_ops, res.verify_mismatches,
            res.first_error[0] ? "; first error: " : "", res.first_error);
    }
    cp__session_say(&r->ss, "  %" PRIu64 " ops in %.2f s, %.0f ops/s, p50 %.0f us, p99 %.0f us",
                    res.ops, res.seconds, res.ops_per_sec, cp__hist_percentile_us(&res.latency, 50),
                    cp__hist_percentile_us(&res.latency, 99));
    cp__bench_result_free(&res);
}

/* Runs every case of a point K times against one target and appends each run's object. */
static void run_point(cp__cmp *r, const char *setup, const cp__bench_target *t,
                      const char *target_flags, const cp__cmp_point *pt) {
    cp__cmp_case cases[2];
    int nc = cp__cmp_cases_of(r->o, pt, cases);
    for (int k = 1; k <= r->o->repeat; k++)
        for (int c = 0; c < nc; c++) {
            if (cp__session_cancelled(&r->ss))
                add_failed_run(r, setup, pt, &cases[c], k, "interrupted");
            else
                run_case(r, setup, t, target_flags, pt, &cases[c], k);
        }
}
void cp__cmp_run_points(cp__cmp *r, const char *setup, const cp__bench_target *t,
                        const char *target_flags, int from, int to) {
    char loaded[sizeof(((cp__cmp_point *)0)->sizes)] = "";
    long long empty = -1; /* the servers' used_memory before the first load */
    for (int k = from; k < to; k++) {
        cp__cmp_point pt;
        cp__cmp_point_at(r->o, k, &pt);
        if (cp__session_cancelled(&r->ss)) {
            cp__cmp_fail_points(r, setup, k, to, "interrupted");
            return;
        }
        if (strcmp(pt.sizes, loaded) != 0) {
            if (cp__cmp_load(r, setup, t, target_flags, &pt, &empty) != 0) {
                cp__cmp_fail_points(r, setup, k, to, "load failed");
                return;
            }
            memcpy(loaded, pt.sizes, sizeof(loaded));
        }
        run_point(r, setup, t, target_flags, &pt);
    }
}
