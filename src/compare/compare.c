/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The compare experiment (compare.h): one setup at a time (up, load, GET and pipelined GET
 * `repeat` times, down; or the user's endpoints, nothing started), and the
 * "clusterpipe.compare/1" document that records all of it, failures included, so the report
 * shows a run that could not happen instead of silently missing it. The options and points are
 * options.c's, the run context context.c's, a setup's dataset dataset.c's, its runs runs.c's.
 *
 * Ownership: the document and every object in it are built here and handed to the caller; bench
 * results are freed right after their JSON is taken, topology handles after their setup. The run
 * context (failures, versions first seen) is allocated per call and freed before returning.
 * Threads: everything runs on the calling thread (the engine starts its workers inside
 * cp__bench_run and joins them before returning). Never prints: progress goes to the log hook,
 * problems to the warn hook.
 */
#include "compare/compare.h"

#include "bench/report.h"
#include "compare/context.h"
#include "compare/runs.h"
#include "orch/orch.h"
#include "report/io.h"
#include "util/cpuset.h"
#include "util/dur.h"
#include "util/env.h"
#include "util/errmsg.h"
#include "util/fdlimit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The links of a topology with a wire: from and to (a role and port, or "client"), whether each
 * crosses hosts, the wire's port and the round trip it adds. */
static json_t *links_json(const cp_topo *t) {
    json_t *a = json_array();
    for (size_t k = 0; a != NULL && k < cp_topo_nlinks(t); k++) {
        const cp_link *l = cp_topo_link(t, k);
        const cp_proc *to = cp_topo_proc(t, (size_t)l->to);
        const cp_proc *from = l->from >= 0 ? cp_topo_proc(t, (size_t)l->from) : NULL;
        json_array_append_new(a, json_pack("{s:s,s:s,s:i,s:s,s:i,s:b,s:i,s:I}", "name", l->name,
                                           "from", from ? cp_proc_role_name(from->role) : "client",
                                           "from_port", from ? from->port : 0, "to",
                                           cp_proc_role_name(to->role), "to_port", to->port,
                                           "crosses", l->crosses, "wire_port", l->port, "rtt_ns",
                                           (json_int_t)l->rtt_ns));
    }
    return a;
}

/* Records the processes of a started topology in the document, so a reader (and the test) can
 * check by PID that nothing was left running. */
static void record_topology(cp__cmp *r, const char *setup, const cp_topo *t) {
    char eps[CP__ENDPOINTS_MAX];
    cp_topo_endpoints(t, eps, sizeof(eps));
    json_t *procs = json_array();
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        const char *role = p->role == CP_ROLE_PROXY     ? "proxy"
                           : p->role == CP_ROLE_REPLICA ? "replica"
                           : p->role == CP_ROLE_WIRE    ? "wire"
                                                        : "redis";
        /* The CPUs the process may really run on, read back from /proc: placement as it
         * happened, also when none was asked (then every CPU). */
        cpu_set_t cpus;
        char list[256] = "";
        if (cp__cpuset_of(p->pid, 0, &cpus) == 0)
            cp__cpuset_format(&cpus, list, sizeof(list));
        json_array_append_new(procs, json_pack("{s:s,s:i,s:I,s:I,s:s}", "role", role, "port",
                                               p->port, "pid", (json_int_t)p->pid, "start_time",
                                               (json_int_t)p->start_time, "cpus", list));
    }
    json_t *top = json_pack("{s:s,s:s,s:o}", "setup", setup, "endpoints", eps, "processes", procs);
    if (top != NULL && cp_topo_nlinks(t) > 0) {
        json_object_set_new(top, "links", links_json(t));
        if (cp_topo_get_kind(t) == CP_TOPO_TWEMPROXY) /* the proxies' hosts */
            json_object_set_new(top, "proxy_placement",
                                json_string(cp_proxy_placement_name(cp_topo_proxy_placement(t))));
    }
    json_array_append_new(json_object_get(r->doc, "topologies"), top);
}

/* A local setup: what it starts and how it reads. */
typedef struct local_def {
    const char *name; /* the runs' "setup" */
    cp_topo_kind kind;
    int replicas;  /* cluster: replicas per master */
    int read_from; /* cp_options.read_from of its cases */
    int cache;     /* its cases' clients keep a client-side cache (RESP3) */
} local_def;

static const local_def TWEMPROXY = {"twemproxy", CP_TOPO_TWEMPROXY, 0, CP_READ_MASTER, 0};
static const local_def CLUSTER = {"cluster", CP_TOPO_CLUSTER, 0, CP_READ_MASTER, 0};
static const local_def CLUSTER_REPLICAS = {"cluster-replicas", CP_TOPO_CLUSTER, 1, CP_READ_REPLICA,
                                           0};
static const local_def CLUSTER_CACHED = {"cluster-cached", CP_TOPO_CLUSTER, 0, CP_READ_MASTER, 1};

/* One local setup for points [from, to) (their shards are the first's): up, load, runs, down.
 * Down happens whatever went wrong in between. */
static void local_span(cp__cmp *r, const local_def *def, int from, int to) {
    const cp__compare_opts *o = r->o;
    const char *setup = def->name;
    cp_topo_kind kind = def->kind;
    r->read_from = def->read_from;
    r->client_cache = def->cache;
    cp__cmp_point first;
    cp__cmp_point_at(o, from, &first);
    cp_up_opts up = CP_UP_OPTS_INIT;
    up.kind = kind;
    up.shards = first.shards;
    up.replicas = def->replicas;
    up.proxies = CP__COMPARE_PROXIES;
    up.ephemeral = 1;
    up.quiet = o->log == NULL;
    up.log = o->log;
    up.on_spawn = o->on_spawn;
    up.hook_ud = o->ud;
    up.cancel = o->cancel;
    const cp__placement *pl = o->placement;
    if (pl != NULL) {
        up.redis_cpus = pl->has_redis ? &pl->redis : NULL;
        up.proxy_cpus = pl->has_proxy ? &pl->proxy : NULL;
    }
    up.rtt_ns = first.rtt_ns; /* --rtt, or the point's under an rtt sweep */
    up.jitter_ns = first.rtt_ns > 0 ? o->jitter_ns : 0;
    up.clusterpipe = o->clusterpipe;
    cp__proxy_side side = pl != NULL ? pl->side : CP__PROXY_WITH_SERVERS;
    up.proxy_placement = side == CP__PROXY_WITH_CLIENTS ? CP_PROXIES_WITH_CLIENTS
                         : side == CP__PROXY_TIER       ? CP_PROXIES_TIER
                                                        : CP_PROXIES_WITH_SERVERS;
    char err[CP__CMP_ERRLEN] = "", cmd[128];
    if (kind == CP_TOPO_CLUSTER && def->replicas > 0)
        snprintf(cmd, sizeof(cmd), "clusterpipe up cluster --shards %d --replicas %d --dir DIR",
                 first.shards, def->replicas);
    else if (kind == CP_TOPO_CLUSTER)
        snprintf(cmd, sizeof(cmd), "clusterpipe up cluster --shards %d --dir DIR", first.shards);
    else
        snprintf(cmd, sizeof(cmd), "clusterpipe up twemproxy --shards %d --proxies %d --dir DIR",
                 first.shards, CP__COMPARE_PROXIES);
    if (first.rtt_ns > 0) {
        char d[32];
        cp__dur_format(first.rtt_ns, d, sizeof(d));
        size_t n = strlen(cmd);
        snprintf(cmd + n, sizeof(cmd) - n, " --rtt %s%s%s", d,
                 kind == CP_TOPO_TWEMPROXY && side != CP__PROXY_WITH_SERVERS ? " --proxy-placement "
                                                                             : "",
                 kind == CP_TOPO_TWEMPROXY && side != CP__PROXY_WITH_SERVERS
                     ? cp__placement_side_name(side)
                     : "");
    }
    cp__cmp_add_command(r, cmd);
    if (cp__cmp_sweeping(o) && o->sweep->param == CP__SWEEP_RTT)
        cp__session_say(&r->ss, "%s: point %s", setup, first.label);
    if (kind == CP_TOPO_CLUSTER)
        cp__session_say(&r->ss, "%s: starting a %d-master Redis Cluster%s", setup, first.shards,
                        def->replicas > 0 ? ", a replica per master, reads on the replicas"
                        : def->cache      ? ", clients with a client-side cache (RESP3)"
                                          : "");
    else
        cp__session_say(&r->ss, "%s: starting %d redis-server + %d nutcracker", setup, first.shards,
                        CP__COMPARE_PROXIES);
    cp_topo *t = NULL;
    if (cp_topo_up(&up, &t, err, sizeof(err)) != 0) {
        cp__cmp_warn(r, "%s did not start: %s", setup, err);
        cp__cmp_fail_points(r, setup, from, to, err);
        return;
    }
    record_topology(r, setup, t);
    cp__bench_target target;
    if (cp__bench_target_from_topo(&target, t, NULL, NULL) != 0) {
        cp__cmp_fail_points(r, setup, from, to, "endpoint list too long");
    } else {
        /* the cache's invalidations are RESP3 pushes; nutcracker speaks RESP2 only */
        target.protocol = def->cache ? 3 : kind == CP_TOPO_CLUSTER ? o->protocol : 0;
        cp__cmp_run_points(r, setup, &target, "--dir DIR", from, to);
    }
    cp__cmp_add_command(r, "clusterpipe down --dir DIR");
    if (cp_topo_down(t, 0, err, sizeof(err)) != 0)
        cp__cmp_warn(r, "%s: stopping: %s", setup, err);
    else
        cp__session_say(&r->ss, "%s: stopped", setup);
    cp_topo_free(t);
    r->read_from = CP_READ_MASTER;
    r->client_cache = 0;
}

/* Every point on one architecture: one setup for all of them, or one per point when the sweep
 * changes the servers themselves (shards) or the links between them (rtt). */
static void local_setup(cp__cmp *r, const local_def *def) {
    const cp__compare_opts *o = r->o;
    if (cp__session_cancelled(&r->ss)) {
        cp__cmp_fail_points(r, def->name, 0, cp__cmp_npoints(o), "interrupted");
    } else if (cp__cmp_setup_per_point(o)) {
        for (int k = 0; k < cp__cmp_npoints(o); k++) {
            if (cp__session_cancelled(&r->ss)) {
                cp__cmp_fail_points(r, def->name, k, cp__cmp_npoints(o), "interrupted");
                return;
            }
            local_span(r, def, k, k + 1);
        }
    } else {
        local_span(r, def, 0, cp__cmp_npoints(o));
    }
}

/* One user-provided setup: nothing is started or stopped. cache: cluster-cached's clients keep
 * a client-side cache. */
static void external_setup(cp__cmp *r, const char *setup, cp__target_mode mode, const char *eps,
                           int cache) {
    cp__bench_target t;
    char flags[CP__ENDPOINTS_MAX + 32];
    snprintf(flags, sizeof(flags), "--%s %s", mode == CP__TARGET_CLUSTER ? "cluster" : "proxy",
             eps);
    cp__bench_target_external(&t, mode, eps, r->o->password, NULL);
    json_array_append_new(
        json_object_get(r->doc, "topologies"),
        json_pack("{s:s,s:s,s:[]}", "setup", setup, "endpoints", eps, "processes"));
    t.protocol = cache ? 3 : mode == CP__TARGET_CLUSTER ? r->o->protocol : 0;
    r->client_cache = cache;
    cp__cmp_run_points(r, setup, &t, flags, 0, cp__cmp_npoints(r->o));
    r->client_cache = 0;
}

/* Records the placement in the document and shows its warnings before anything runs: they are
 * not failures (the user may want exactly that), but they change what the numbers mean. */
static void note_placement(cp__cmp *r) {
    const cp__compare_opts *o = r->o;
    if (o->placement == NULL || !o->placement->given)
        return;
    int servers = CP__COMPARE_SHARDS, proxies = CP__COMPARE_PROXIES;
    json_object_set_new(r->doc, "placement",
                        cp__placement_json(o->placement, servers, proxies, o->threads));
    char lines[CP__PLACEMENT_WARNINGS_MAX][256];
    int n = cp__placement_warnings(o->placement, servers, proxies, o->threads, lines,
                                   CP__PLACEMENT_WARNINGS_MAX);
    for (int i = 0; i < n && o->warn != NULL; i++) {
        char line[300];
        snprintf(line, sizeof(line), "placement: %.280s", lines[i]); /* bounded for gcc */
        o->warn(o->ud, line);
    }
}

/* ---- the document ----------------------------------------------------------------------------
 */

static json_t *sweep_json(const cp__compare_opts *o) {
    if (!cp__cmp_sweeping(o))
        return json_null();
    json_t *v = json_array();
    for (int k = 0; k < o->sweep->n; k++)
        json_array_append_new(v, json_integer((json_int_t)o->sweep->values[k]));
    return json_pack("{s:s,s:o}", "param", cp__sweep_param_name(o->sweep->param), "values", v);
}

static json_t *settings_json(const cp__compare_opts *o) {
    char dist[64];
    cp__dist_format(&o->dist, dist, sizeof(dist));
    json_t *s = json_pack("{s:i,s:i,s:I,s:I,s:I,s:i,s:s,s:b,s:i,s:i}", "threads", o->threads,
                          "clients", o->clients, "requests", (json_int_t)o->requests, "keys",
                          (json_int_t)o->keys, "value_size", cp__cmp_size_number(&o->value_size),
                          "pipeline", o->pipeline, "key_dist", dist, "verify", o->verify, "shards",
                          CP__COMPARE_SHARDS, "proxies", CP__COMPARE_PROXIES);
    if (s != NULL) {
        char sizes[256];
        cp__value_sizes_format(&o->value_size, sizes, sizeof(sizes));
        json_object_set_new(s, "value_sizes", json_string(sizes));
    }
    if (s != NULL)
        json_object_set_new(s, "sweep", sweep_json(o));
    if (s != NULL && (cp__cmp_setups(o) & CP__CMP_SETUP_REPLICAS)) /* only then: documents
                                                      without it stay as they were */
        json_object_set_new(s, "replica_reads", json_true());
    if (s != NULL && (cp__cmp_setups(o) & CP__CMP_SETUP_CACHED))
        json_object_set_new(s, "client_cache", json_true());
    if (s != NULL && o->protocol == 3)
        json_object_set_new(s, "protocol", json_integer(3));
    if (s != NULL && o->rtt_ns > 0) { /* only then: documents without a wire stay as they were */
        json_object_set_new(s, "rtt_ns", json_integer((json_int_t)o->rtt_ns));
        json_object_set_new(s, "jitter_ns", json_integer((json_int_t)o->jitter_ns));
    }
    if (s != NULL && o->ratio_set > 0) {
        char ratio[32];
        snprintf(ratio, sizeof(ratio), "%u:%u", o->ratio_set, o->ratio_get);
        json_object_set_new(s, "ratio", json_string(ratio));
    }
    if (s != NULL && o->setups != 0) {
        static const char *const names[] = {"twemproxy", "cluster", "cluster-replicas",
                                            "cluster-cached"};
        json_t *a = json_array();
        for (unsigned i = 0; i < 4; i++)
            if (o->setups & (1u << i))
                json_array_append_new(a, json_string(names[i]));
        json_object_set_new(s, "setups", a);
    }
    if (s != NULL && o->commands != NULL)
        cp__bench_json_templates(s, o->commands);
    return s;
}

static json_t *new_doc(const cp__compare_opts *o, int external) {
    return json_pack("{s:s,s:s,s:i,s:s,s:s,s:o,s:{},s:[],s:[],s:[],s:[],s:[]}", "schema",
                     CP__COMPARE_SCHEMA, "command", o->command_line ? o->command_line : "",
                     "repeat", o->repeat, "preset", o->preset ? o->preset : "quick", "mode",
                     external ? "external" : "local", "settings", settings_json(o), "environment",
                     "topologies", "commands", "load", "runs", "fit");
}

int cp__compare_run(const cp__compare_opts *o, json_t **doc, char *err, size_t errlen) {
    *doc = NULL;
    int rc = cp__compare_opts_check(o, err, errlen);
    if (rc != 0)
        return rc;
    cp__fdlimit fds;
    int frc = cp__fdlimit_ensure(cp__cmp_fds_needed(o), &fds);
    if (frc == -EMFILE) {
        cp__seterr(err, errlen,
                   "the largest point needs about %" PRIu64 " file descriptors (connections x "
                   "(shards + 1) + 256) and the hard limit is %" PRIu64
                   " (ulimit -Hn): raise it (limits.conf, systemd LimitNOFILE) or ask for fewer "
                   "clients; nothing was started",
                   fds.needed, fds.hard);
        return CP_EIO;
    }
    cp__cmp *r = calloc(1, sizeof(*r));
    int external = o->cluster_eps || o->proxy_eps;
    if (r == NULL || (r->doc = new_doc(o, external)) == NULL) {
        free(r);
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    r->o = o;
    r->ss = (cp__session){o->log, o->ud, o->cancel, o->hgrm_dir};
    if (frc == 0)
        json_object_set_new(json_object_get(r->doc, "settings"), "fd_limit",
                            json_pack("{s:I,s:I,s:I,s:I}", "needed", (json_int_t)fds.needed,
                                      "soft_before", (json_int_t)fds.soft_before, "soft",
                                      (json_int_t)fds.soft, "hard",
                                      (json_int_t)(fds.hard > INT64_MAX ? -1 : (int64_t)fds.hard)));
    note_placement(r);
    unsigned setups = cp__cmp_setups(o);
    if (external) {
        if (o->proxy_eps && (setups & CP__CMP_SETUP_TWEMPROXY))
            external_setup(r, "twemproxy", CP__TARGET_PROXY, o->proxy_eps, 0);
        if (o->cluster_eps && (setups & CP__CMP_SETUP_CLUSTER) && !cp__session_cancelled(&r->ss))
            external_setup(r, "cluster", CP__TARGET_CLUSTER, o->cluster_eps, 0);
        if (o->cluster_eps && (setups & CP__CMP_SETUP_CACHED) && !cp__session_cancelled(&r->ss))
            external_setup(r, CLUSTER_CACHED.name, CP__TARGET_CLUSTER, o->cluster_eps, 1);
    } else { /* one at a time: each is down before the next starts */
        static const local_def *const order[] = {&TWEMPROXY, &CLUSTER, &CLUSTER_REPLICAS,
                                                 &CLUSTER_CACHED};
        static const unsigned bits[] = {CP__CMP_SETUP_TWEMPROXY, CP__CMP_SETUP_CLUSTER,
                                        CP__CMP_SETUP_REPLICAS, CP__CMP_SETUP_CACHED};
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
            if (setups & bits[i])
                local_setup(r, order[i]);
    }
    if (cp__session_cancelled(&r->ss)) {
        r->failed = 1;
        if (r->first_err[0] == '\0')
            snprintf(r->first_err, sizeof(r->first_err), "interrupted");
    }
    json_object_set_new(
        r->doc, "environment",
        cp__env_json(o->version, r->redis_version, r->nutcracker_version, r->cores, r->cpu_model));
    json_object_set_new(r->doc, "failed", json_boolean(r->failed));
    *doc = r->doc;
    rc = 0;
    if (r->failed) {
        cp__seterr(err, errlen, "%s", r->first_err[0] ? r->first_err : "some runs failed");
        rc = CP_EPARTIAL;
    }
    free(r);
    return rc;
}
