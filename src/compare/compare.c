/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Running the compare experiment (compare.h): presets, options, one setup at a time (up, load,
 * GET and pipelined GET `repeat` times, down; or the user's endpoints, nothing started), and the
 * "clusterpipe.compare/1" document that records all of it, failures included, so the report
 * shows a run that could not happen instead of silently missing it.
 *
 * Ownership: the document and every object in it are built here and handed to the caller; bench
 * results are freed right after their JSON is taken, topology handles after their setup. The run
 * context (failures, versions first seen) is allocated per call and freed before returning.
 * Threads: everything runs on the calling thread (the engine starts its workers inside
 * cp__bench_run and joins them before returning). Never prints: progress goes to the log hook,
 * problems to the warn hook.
 */
#include "compare/compare.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"
#include "report/io.h"
#include "util/cpuset.h"
#include "util/env.h"
#include "util/errmsg.h"
#include "bench/load.h"
#include "bench/report.h"
#include "bench/target.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 4096

/* quick: three repeats of everything (so the report can tell noise from difference) well under
 * 2 minutes on a 2-core machine; full: the published scale (10 threads x 1,000,000 GETs each =
 * 10,000,000 per case, 100,000 keys); large: a dataset of 20 million 100-byte keys (a few GB per
 * setup, loaded once per setup). */
static const cp__compare_preset presets[] = {
    {"quick", 10, 10, 10, 100000, 100000, 100, 3},
    {"full", 10, 10, 10, 10000000, 100000, 100, 1},
    {"large", 10, 10, 10, 10000000, 20000000, 100, 1},
};

const cp__compare_preset *cp__compare_preset_find(const char *name) {
    for (size_t i = 0; name != NULL && i < sizeof(presets) / sizeof(presets[0]); i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

void cp__compare_opts_init(cp__compare_opts *o, const cp__compare_preset *p) {
    if (p == NULL)
        p = &presets[0];
    memset(o, 0, sizeof(*o));
    o->preset = p->name;
    o->threads = p->threads;
    o->clients = p->threads; /* one connection per thread, like the published experiment */
    o->pipeline = p->pipeline;
    o->requests = p->requests;
    o->keys = p->keys;
    o->value_size = p->value_size;
    o->repeat = p->repeat;
    o->dist.kind = CP__DIST_UNIFORM;
    o->verify = 1;
}

/* The client's CPU set (its load and bench threads), NULL when it is not pinned. */
static const cpu_set_t *client_cpus(const cp__compare_opts *o) {
    return o->placement != NULL && o->placement->has_client ? &o->placement->client : NULL;
}

/* The engine configuration of one case: GETs only, the same key sequence for both setups in
 * repeat `seed`. */
static void bench_config(const cp__compare_opts *o, int pipeline, uint64_t seed,
                         cp__bench_config *cfg) {
    cp__bench_config_init(cfg);
    cfg->threads = o->threads;
    cfg->clients = o->clients;
    cfg->pipeline = pipeline;
    cfg->requests = o->requests;
    cfg->ratio_set = 0;
    cfg->ratio_get = 1;
    cfg->keys = o->keys;
    cfg->value_size = o->value_size;
    cfg->dist = o->dist;
    cfg->verify = o->verify;
    cfg->seed = seed;
    cfg->progress = o->bench_progress;
    cfg->progress_ud = o->ud;
    cfg->cancel = o->cancel;
    cfg->cpus = client_cpus(o);
}

int cp__compare_opts_check(const cp__compare_opts *o, char *err, size_t errlen) {
    cp__bench_config chk;
    bench_config(o, o->pipeline, 1, &chk);
    if (cp__bench_config_check(&chk, err, errlen) != 0)
        return CP_EINVAL;
    if (o->repeat < 1 || o->repeat > CP__COMPARE_REPEAT_MAX) {
        cp__seterr(err, errlen, "--repeat: %d is out of range [1, %d]", o->repeat,
                   CP__COMPARE_REPEAT_MAX);
        return CP_EINVAL;
    }
    cp__bench_target probe;
    if (o->cluster_eps &&
        cp__bench_target_external(&probe, CP__TARGET_CLUSTER, o->cluster_eps, NULL, NULL) != 0) {
        cp__seterr(err, errlen, "--cluster: '%s' is not HOST:PORT[,HOST:PORT...]", o->cluster_eps);
        return CP_EINVAL;
    }
    if (o->proxy_eps &&
        cp__bench_target_external(&probe, CP__TARGET_PROXY, o->proxy_eps, NULL, NULL) != 0) {
        cp__seterr(err, errlen, "--proxy: '%s' is not HOST:PORT[,HOST:PORT...]", o->proxy_eps);
        return CP_EINVAL;
    }
    if (o->password && !o->cluster_eps && !o->proxy_eps) {
        cp__seterr(err, errlen, "--password applies to --cluster/--proxy endpoints");
        return CP_EINVAL;
    }
    const cp__placement *pl = o->placement;
    if (pl != NULL && (o->cluster_eps || o->proxy_eps) &&
        (pl->has_redis || pl->proxy_explicit || pl->side_given)) {
        cp__seterr(err, errlen,
                   "--cpus: only client= applies to --cluster/--proxy endpoints "
                   "(their servers are not started here)");
        return CP_EINVAL;
    }
    return 0;
}

/* ---- the run context ------------------------------------------------------------------------
 */

typedef struct cmp {
    const cp__compare_opts *o;
    json_t *doc;
    int failed;             /* any run failed, or a setup did not run */
    char first_err[512];    /* the first problem, for the caller's err */
    char redis_version[64]; /* first seen, for the environment */
    char nutcracker_version[64];
    int cores;
    char cpu_model[128];
} cmp;

static int cancelled(const cmp *r) {
    return r->o->cancel != NULL && *r->o->cancel != 0;
}

static void say(const cmp *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const cmp *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cp__vlogf(r->o->log, r->o->ud, fmt, ap);
    va_end(ap);
}

/* A problem: the run as a whole failed; the first one is kept for the caller's err. */
static void warn(cmp *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(cmp *r, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (r->first_err[0] == '\0')
        snprintf(r->first_err, sizeof(r->first_err), "%.500s", line);
    r->failed = 1;
    if (r->o->warn != NULL)
        r->o->warn(r->o->ud, line);
}

/* Appends a run that could not produce a bench object (setup down, load failed, engine error)
 * so the report shows it as failed instead of silently missing. */
static void add_failed_run(cmp *r, const char *setup, const char *call, int iteration, int pipeline,
                           const char *why) {
    char name[64];
    snprintf(name, sizeof(name), "%s %s", setup, call);
    json_t *run = json_object();
    json_object_set_new(run, "name", json_string(name));
    json_object_set_new(run, "setup", json_string(setup));
    json_object_set_new(run, "call_type", json_string(call));
    json_object_set_new(run, "iteration", json_integer(iteration));
    json_object_set_new(run, "workload", json_pack("{s:i}", "pipeline", pipeline));
    json_object_set_new(run, "error", json_string(why));
    json_array_append_new(json_object_get(r->doc, "runs"), run);
    r->failed = 1;
}

/* Both cases of every repeat of a setup that could not run them. */
static void fail_setup(cmp *r, const char *setup, const char *why) {
    for (int k = 1; k <= r->o->repeat; k++) {
        add_failed_run(r, setup, "GET", k, 1, why);
        add_failed_run(r, setup, "pipelined GET", k, r->o->pipeline, why);
    }
}

/* The `clusterpipe bench` command that reproduces one run by hand (the report's "commands"). */
static void bench_command(const cp__compare_opts *o, const char *target, int pipeline, char *buf,
                          size_t len) {
    char dist[64];
    cp__dist_format(&o->dist, dist, sizeof(dist));
    snprintf(buf, len,
             "clusterpipe bench %s --threads %d --clients %d --pipeline %d --requests %" PRIu64
             " --keys %" PRIu64 " --value-size %zu --key-dist %s%s",
             target, o->threads, o->clients, pipeline, o->requests, o->keys, o->value_size, dist,
             o->verify ? "" : " --no-verify");
}

static void add_command(cmp *r, const char *text) {
    json_array_append_new(json_object_get(r->doc, "commands"), json_string(text));
}

/* The versions and machine the first successful run saw, for the environment. */
static void note_environment(cmp *r, const cp__bench_result *res) {
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

/* One case (GET or pipelined GET, repeat k) against one target: its bench object, or a failed
 * run. */
static void run_case(cmp *r, const char *setup, const cp__bench_target *t, const char *target_flags,
                     const char *call, int pipeline, int k) {
    const cp__compare_opts *o = r->o;
    char cmdline[1024], err[ERRLEN] = "";
    bench_command(o, target_flags, pipeline, cmdline, sizeof(cmdline));
    if (k == 1)
        add_command(r, cmdline);
    cp__bench_config cfg;
    bench_config(o, pipeline, (uint64_t)k, &cfg);
    cfg.command_line = cmdline;
    char rep[32] = "";
    if (o->repeat > 1)
        snprintf(rep, sizeof(rep), " [%d/%d]", k, o->repeat);
    say(r, "%s %s%s: %" PRIu64 " requests, %d threads, %d connections, pipeline %d", setup, call,
        rep, o->requests, o->threads, o->clients, pipeline);
    cp__bench_result res;
    if (cp__bench_run(t, &cfg, &res, err, sizeof(err)) != 0) {
        warn(r, "%s %s: %s", setup, call, err);
        add_failed_run(r, setup, call, k, pipeline, err);
        cp__bench_result_free(&res);
        return;
    }
    note_environment(r, &res);
    json_t *obj = cp__bench_json(t, &cfg, &res);
    int stopped = cancelled(r);
    if (obj == NULL) {
        add_failed_run(r, setup, call, k, pipeline, "out of memory");
    } else {
        char name[64];
        snprintf(name, sizeof(name), "%s %s", setup, call);
        json_object_set_new(obj, "name", json_string(name));
        json_object_set_new(obj, "setup", json_string(setup));
        json_object_set_new(obj, "call_type", json_string(call));
        json_object_set_new(obj, "iteration", json_integer(k));
        if (stopped)
            json_object_set_new(obj, "error", json_string("interrupted"));
        json_array_append_new(json_object_get(r->doc, "runs"), obj);
    }
    if (cp__bench_result_failed(&res) || stopped) {
        r->failed = 1;
        warn(r, "%s %s FAILED: %" PRIu64 " failed, %" PRIu64 " unknown, %" PRIu64 " mismatched%s%s",
             setup, call, res.failed_ops, res.unknown_ops, res.verify_mismatches,
             res.first_error[0] ? "; first error: " : "", res.first_error);
    }
    say(r, "  %" PRIu64 " ops in %.2f s, %.0f ops/s, p50 %.0f us, p99 %.0f us", res.ops,
        res.seconds, res.ops_per_sec, cp__hist_percentile_us(&res.latency, 50),
        cp__hist_percentile_us(&res.latency, 99));
    cp__bench_result_free(&res);
}

/* Runs GET and pipelined GET K times against one target and appends each run's object. */
static void run_cases(cmp *r, const char *setup, const cp__bench_target *t,
                      const char *target_flags) {
    static const char *const calls[2] = {"GET", "pipelined GET"};
    for (int k = 1; k <= r->o->repeat; k++)
        for (int c = 0; c < 2; c++) {
            int pipeline = c == 0 ? 1 : r->o->pipeline;
            if (cancelled(r))
                add_failed_run(r, setup, calls[c], k, pipeline, "interrupted");
            else
                run_case(r, setup, t, target_flags, calls[c], pipeline, k);
        }
}

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

/* Loads the dataset into one target. Returns 0, or 1 when it failed or was interrupted (warned). */
static int load(cmp *r, const char *setup, const cp__bench_target *t, const char *target_flags) {
    const cp__compare_opts *o = r->o;
    cp__load_config cfg;
    cp__load_config_init(&cfg);
    cfg.keys = o->keys;
    cfg.value_size = o->value_size;
    cfg.progress = o->load_progress;
    cfg.progress_ud = o->ud;
    cfg.cancel = o->cancel;
    cfg.cpus = client_cpus(o);
    char cmd[512], err[ERRLEN] = "";
    snprintf(cmd, sizeof(cmd), "clusterpipe load %s --keys %" PRIu64 " --value-size %zu",
             target_flags, o->keys, o->value_size);
    add_command(r, cmd);
    say(r, "%s: loading %" PRIu64 " keys of %zu bytes", setup, o->keys, o->value_size);
    cp__load_result res;
    memset(&res, 0, sizeof(res));
    int rc = cp__load_run(t, &cfg, &res, err, sizeof(err));
    json_t *l = json_pack("{s:s,s:I,s:f,s:f}", "setup", setup, "keys", (json_int_t)res.written,
                          "seconds", res.seconds, "keys_per_sec", res.keys_per_sec);
    if (l != NULL && rc == 0 && t->topo != NULL)
        json_object_set_new(l, "memory_per_shard", shard_memory(t->topo));
    if (l != NULL)
        json_array_append_new(json_object_get(r->doc, "load"), l);
    if (rc != 0 || cancelled(r)) {
        warn(r, "%s: load failed: %s", setup, cancelled(r) ? "interrupted" : err);
        return 1;
    }
    say(r, "%s: loaded %" PRIu64 " keys in %.2f s (%.0f keys/s)%s%s", setup, res.written,
        res.seconds, res.keys_per_sec, res.note[0] ? "; " : "", res.note);
    return 0;
}

/* Records the processes of a started topology in the document, so a reader (and the test) can
 * check by PID that nothing was left running. */
static void record_topology(cmp *r, const char *setup, const cp_topo *t) {
    char eps[CP__ENDPOINTS_MAX];
    cp_topo_endpoints(t, eps, sizeof(eps));
    json_t *procs = json_array();
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        const char *role = p->role == CP_ROLE_PROXY ? "proxy" : "redis";
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
    json_array_append_new(
        json_object_get(r->doc, "topologies"),
        json_pack("{s:s,s:s,s:o}", "setup", setup, "endpoints", eps, "processes", procs));
}

/* One local setup: up, load, runs, down. Down happens whatever went wrong in between. */
static void local_setup(cmp *r, cp_topo_kind kind) {
    const cp__compare_opts *o = r->o;
    const char *setup = kind == CP_TOPO_CLUSTER ? "cluster" : "twemproxy";
    cp_up_opts up = CP_UP_OPTS_INIT;
    up.kind = kind;
    up.shards = CP__COMPARE_SHARDS;
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
    char err[ERRLEN] = "";
    if (kind == CP_TOPO_CLUSTER)
        add_command(r, "clusterpipe up cluster --shards 4 --dir DIR");
    else
        add_command(r, "clusterpipe up twemproxy --shards 4 --proxies 4 --dir DIR");
    say(r, "%s: starting %s", setup,
        kind == CP_TOPO_CLUSTER ? "a 4-master Redis Cluster" : "4 redis-server + 4 nutcracker");
    cp_topo *t = NULL;
    if (cp_topo_up(&up, &t, err, sizeof(err)) != 0) {
        warn(r, "%s did not start: %s", setup, err);
        fail_setup(r, setup, err);
        return;
    }
    record_topology(r, setup, t);
    cp__bench_target target;
    if (cp__bench_target_from_topo(&target, t, NULL, NULL) != 0)
        fail_setup(r, setup, "endpoint list too long");
    else if (load(r, setup, &target, "--dir DIR") == 0)
        run_cases(r, setup, &target, "--dir DIR");
    else
        fail_setup(r, setup, "load failed");
    add_command(r, "clusterpipe down --dir DIR");
    if (cp_topo_down(t, 0, err, sizeof(err)) != 0)
        warn(r, "%s: stopping: %s", setup, err);
    else
        say(r, "%s: stopped", setup);
    cp_topo_free(t);
}

/* One user-provided setup: nothing is started or stopped. */
static void external_setup(cmp *r, const char *setup, cp__target_mode mode, const char *eps) {
    cp__bench_target t;
    char flags[CP__ENDPOINTS_MAX + 32];
    snprintf(flags, sizeof(flags), "--%s %s", mode == CP__TARGET_CLUSTER ? "cluster" : "proxy",
             eps);
    cp__bench_target_external(&t, mode, eps, r->o->password, NULL);
    json_array_append_new(
        json_object_get(r->doc, "topologies"),
        json_pack("{s:s,s:s,s:[]}", "setup", setup, "endpoints", eps, "processes"));
    if (load(r, setup, &t, flags) == 0)
        run_cases(r, setup, &t, flags);
    else
        fail_setup(r, setup, "load failed");
}

/* Records the placement in the document and shows its warnings before anything runs: they are
 * not failures (the user may want exactly that), but they change what the numbers mean. */
static void note_placement(cmp *r) {
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
        snprintf(line, sizeof(line), "placement: %s", lines[i]);
        o->warn(o->ud, line);
    }
}

/* ---- the document ----------------------------------------------------------------------------
 */

static json_t *settings_json(const cp__compare_opts *o) {
    char dist[64];
    cp__dist_format(&o->dist, dist, sizeof(dist));
    return json_pack("{s:i,s:i,s:I,s:I,s:I,s:i,s:s,s:b,s:i,s:i}", "threads", o->threads, "clients",
                     o->clients, "requests", (json_int_t)o->requests, "keys", (json_int_t)o->keys,
                     "value_size", (json_int_t)o->value_size, "pipeline", o->pipeline, "key_dist",
                     dist, "verify", o->verify, "shards", CP__COMPARE_SHARDS, "proxies",
                     CP__COMPARE_PROXIES);
}

static json_t *new_doc(const cp__compare_opts *o, int external) {
    return json_pack("{s:s,s:s,s:i,s:s,s:s,s:o,s:{},s:[],s:[],s:[],s:[]}", "schema",
                     CP__COMPARE_SCHEMA, "command", o->command_line ? o->command_line : "",
                     "repeat", o->repeat, "preset", o->preset ? o->preset : "quick", "mode",
                     external ? "external" : "local", "settings", settings_json(o), "environment",
                     "topologies", "commands", "load", "runs");
}

int cp__compare_run(const cp__compare_opts *o, json_t **doc, char *err, size_t errlen) {
    *doc = NULL;
    int rc = cp__compare_opts_check(o, err, errlen);
    if (rc != 0)
        return rc;
    cmp *r = calloc(1, sizeof(*r));
    int external = o->cluster_eps || o->proxy_eps;
    if (r == NULL || (r->doc = new_doc(o, external)) == NULL) {
        free(r);
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    r->o = o;
    note_placement(r);
    if (external) {
        if (o->proxy_eps)
            external_setup(r, "twemproxy", CP__TARGET_PROXY, o->proxy_eps);
        if (o->cluster_eps && !cancelled(r))
            external_setup(r, "cluster", CP__TARGET_CLUSTER, o->cluster_eps);
    } else {
        local_setup(r, CP_TOPO_TWEMPROXY); /* down before the cluster starts */
        if (!cancelled(r))
            local_setup(r, CP_TOPO_CLUSTER);
        else
            fail_setup(r, "cluster", "interrupted");
    }
    if (cancelled(r)) {
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
