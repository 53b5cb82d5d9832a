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
#include "compare/sweep.h"
#include "util/cpuset.h"
#include "util/env.h"
#include "util/fdlimit.h"
#include "util/errmsg.h"
#include "bench/load.h"
#include "bench/nodes.h"
#include "bench/readback.h"
#include "bench/report.h"
#include "bench/target.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define ERRLEN 4096
#define CP__MAX_SERVERS                                                                            \
    160 /* processes of the largest setup a sweep starts (64 shards + 4 proxies) */

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
    cp__value_sizes_fixed(&o->value_size, p->value_size);
    o->repeat = p->repeat;
    o->dist.kind = CP__DIST_UNIFORM;
    o->verify = 1;
}

/* The client's CPU set (its load and bench threads), NULL when it is not pinned. */
static const cpu_set_t *client_cpus(const cp__compare_opts *o) {
    return o->placement != NULL && o->placement->has_client ? &o->placement->client : NULL;
}

/* ---- points: one measured workload each -----------------------------------------------------
 */

/* The settings of one point of the experiment: the options with the swept parameter applied.
 * Without a sweep there is one point, the options themselves. */
typedef struct point {
    int shards, threads, clients;
    int pipeline; /* of the pipelined case (a sweep's only case) */
    cp__value_sizes value_size;
    char sizes[256]; /* value_size as --value-size spells it */
    uint64_t value;  /* the swept value; 0 without a sweep */
    char label[48];  /* "pipeline=5" (run names and call type); "" without a sweep */
} point;

/* The JSON's value_size: the one size, or the mean of several (value_sizes spells them). */
static json_int_t size_number(const cp__value_sizes *z) {
    return (json_int_t)llround(cp__value_sizes_mean(z));
}

static int sweeping(const cp__compare_opts *o) {
    return o->sweep != NULL && o->sweep->param != CP__SWEEP_NONE;
}

static int npoints(const cp__compare_opts *o) {
    return sweeping(o) ? o->sweep->n : 1;
}

static void point_at(const cp__compare_opts *o, int k, point *pt) {
    memset(pt, 0, sizeof(*pt));
    pt->shards = CP__COMPARE_SHARDS;
    pt->threads = o->threads;
    pt->clients = o->clients;
    pt->pipeline = o->pipeline;
    pt->value_size = o->value_size;
    cp__value_sizes_format(&pt->value_size, pt->sizes, sizeof(pt->sizes));
    if (!sweeping(o))
        return;
    uint64_t v = o->sweep->values[k];
    switch (o->sweep->param) {
    case CP__SWEEP_PIPELINE:
        pt->pipeline = (int)v;
        break;
    case CP__SWEEP_SHARDS:
        pt->shards = (int)v;
        break;
    case CP__SWEEP_VALUE_SIZE:
        cp__value_sizes_fixed(&pt->value_size, (size_t)v);
        break;
    case CP__SWEEP_CLIENTS:
        pt->clients = (int)v;
        if (pt->threads > pt->clients) /* a thread needs a connection of its own */
            pt->threads = pt->clients;
        break;
    case CP__SWEEP_NONE:
        break;
    }
    pt->value = v;
    cp__value_sizes_format(&pt->value_size, pt->sizes, sizeof(pt->sizes));
    snprintf(pt->label, sizeof(pt->label), "%s=%" PRIu64, cp__sweep_param_name(o->sweep->param), v);
}

/* The cases of a point: GET and pipelined GET (the published pair), or under a sweep the one
 * case at the point's pipeline depth, named after the point. Returns how many. */
typedef struct bench_case {
    char call[48]; /* as a point's label (the report keeps 31 bytes of it) */
    int pipeline;
} bench_case;

static int cases_of(const cp__compare_opts *o, const point *pt, bench_case out[2]) {
    if (pt->label[0] != '\0') {
        out[0].pipeline = pt->pipeline;
        snprintf(out[0].call, sizeof(out[0].call), "%s", pt->label);
        return 1;
    }
    char what[22] = "GET"; /* --command: the commands' label; with "pipelined " in 31 bytes */
    if (o->commands != NULL)
        cp__cmdset_label(o->commands, what, sizeof(what));
    out[0].pipeline = 1;
    snprintf(out[0].call, sizeof(out[0].call), "%s", what);
    out[1].pipeline = pt->pipeline;
    snprintf(out[1].call, sizeof(out[1].call), "pipelined %s", what);
    return 2;
}

/* The engine configuration of one case: GETs only, the same key sequence for both setups in
 * repeat `seed`. */
static void bench_config(const cp__compare_opts *o, const point *pt, int pipeline, uint64_t seed,
                         cp__bench_config *cfg) {
    cp__bench_config_init(cfg);
    cfg->threads = pt->threads;
    cfg->clients = pt->clients;
    cfg->pipeline = pipeline;
    cfg->requests = o->requests;
    cfg->ratio_set = 0;
    cfg->ratio_get = 1;
    cfg->keys = o->keys;
    cfg->value_size = pt->value_size;
    cfg->dist = o->dist;
    cfg->verify = o->verify;
    cfg->commands = o->commands;
    cfg->seed = seed;
    cfg->progress = o->bench_progress;
    cfg->progress_ud = o->ud;
    cfg->cancel = o->cancel;
    cfg->cpus = client_cpus(o);
}

/* File descriptors the client needs at the largest point: a cluster client connects to every
 * master (with --replica-reads to every replica too), a proxy client to one proxy; the rest is
 * the engine's and the process's own. */
static uint64_t fds_needed(const cp__compare_opts *o) {
    uint64_t need = 0;
    for (int k = 0; k < npoints(o); k++) {
        point pt;
        point_at(o, k, &pt);
        uint64_t servers = (uint64_t)pt.shards * (o->replica_reads ? 2u : 1u);
        uint64_t n = (uint64_t)pt.clients * (servers + 1);
        need = n > need ? n : need;
    }
    return need + 256;
}

int cp__compare_opts_check(const cp__compare_opts *o, char *err, size_t errlen) {
    for (int k = 0; k < npoints(o); k++) {
        point pt;
        point_at(o, k, &pt);
        cp__bench_config chk;
        bench_config(o, &pt, pt.pipeline, 1, &chk);
        if (cp__bench_config_check(&chk, err, errlen) != 0) {
            if (pt.label[0])
                cp__adderr(err, errlen, " (--sweep %s)", pt.label);
            return CP_EINVAL;
        }
        if (pt.shards < 1 || pt.shards > CP__COMPARE_SHARDS_MAX) {
            cp__seterr(err, errlen, "--sweep %s: shards must be in [1, %d]", pt.label,
                       CP__COMPARE_SHARDS_MAX);
            return CP_EINVAL;
        }
    }
    if (sweeping(o) && o->sweep->param == CP__SWEEP_SHARDS && (o->cluster_eps || o->proxy_eps)) {
        cp__seterr(err, errlen,
                   "--sweep shards=... starts its own setups: not with "
                   "--cluster/--proxy");
        return CP_EINVAL;
    }
    if (o->replica_reads && (o->cluster_eps || o->proxy_eps)) {
        cp__seterr(err, errlen,
                   "--replica-reads starts its own cluster with a replica per master: not with "
                   "--cluster/--proxy");
        return CP_EINVAL;
    }
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
    int read_from;          /* the setup being run: its cases' cp_options.read_from */
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

/* Marks a run object with the point it measured: the shards it ran on (always, so a plan can
 * tell points apart) and, under a sweep, the swept parameter and value. */
static void mark_point(const cmp *r, json_t *run, const point *pt) {
    json_object_set_new(run, "shards", json_integer(pt->shards));
    if (sweeping(r->o))
        json_object_set_new(run, "sweep",
                            json_pack("{s:s,s:I}", "param",
                                      cp__sweep_param_name(r->o->sweep->param), "value",
                                      (json_int_t)pt->value));
}

/* Appends a run that could not produce a bench object (setup down, load failed, engine error)
 * so the report shows it as failed instead of silently missing. */
static void add_failed_run(cmp *r, const char *setup, const point *pt, const bench_case *c,
                           int iteration, const char *why) {
    char name[160]; /* "<setup> <call type>" */
    snprintf(name, sizeof(name), "%s %s", setup, c->call);
    json_t *run = json_object();
    json_object_set_new(run, "name", json_string(name));
    json_object_set_new(run, "setup", json_string(setup));
    json_object_set_new(run, "call_type", json_string(c->call));
    json_object_set_new(run, "iteration", json_integer(iteration));
    json_object_set_new(run, "workload",
                        json_pack("{s:i,s:i,s:I}", "pipeline", c->pipeline, "clients", pt->clients,
                                  "value_size", size_number(&pt->value_size)));
    mark_point(r, run, pt);
    json_object_set_new(run, "error", json_string(why));
    json_array_append_new(json_object_get(r->doc, "runs"), run);
    r->failed = 1;
}

/* Every case of every repeat of points [from, to) of a setup that could not run them. */
static void fail_points(cmp *r, const char *setup, int from, int to, const char *why) {
    for (int p = from; p < to; p++) {
        point pt;
        point_at(r->o, p, &pt);
        bench_case cases[2];
        int nc = cases_of(r->o, &pt, cases);
        for (int k = 1; k <= r->o->repeat; k++)
            for (int c = 0; c < nc; c++)
                add_failed_run(r, setup, &pt, &cases[c], k, why);
    }
}

/* The `clusterpipe bench` command that reproduces one run by hand (the report's "commands"). */
static void bench_command(const cp__compare_opts *o, const point *pt, const char *target,
                          int pipeline, int read_from, char *buf, size_t len) {
    char dist[64];
    cp__dist_format(&o->dist, dist, sizeof(dist));
    int n = snprintf(buf, len,
                     "clusterpipe bench %s --threads %d --clients %d --pipeline %d --requests "
                     "%" PRIu64 " --keys %" PRIu64 " --value-size %s --key-dist %s%s%s",
                     target, pt->threads, pt->clients, pipeline, o->requests, o->keys, pt->sizes,
                     dist, o->verify ? "" : " --no-verify",
                     read_from == CP_READ_REPLICA ? " --read-from replica" : "");
    if (o->commands != NULL && n > 0 && (size_t)n < len)
        cp__cmdset_flags(o->commands, buf + n, len - (size_t)n);
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
    cp_proc_stats before[CP__MAX_SERVERS];
    json_t *servers; /* NULL until taken */
} ready_probe;

static void sample_servers(const cp_topo *t, cp_proc_stats *st) {
    for (size_t i = 0; i < cp_topo_nprocs(t) && i < CP__MAX_SERVERS; i++)
        if (cp_topo_proc_stats(t, i, &st[i]) != 0)
            st[i].reachable = 0;
}

static void take_connections(void *ud) {
    ready_probe *rp = ud;
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < cp_topo_nprocs(rp->topo) && i < CP__MAX_SERVERS; i++) {
        const cp_proc *p = cp_topo_proc(rp->topo, i);
        const cp_proc_stats *b = &rp->before[i];
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

/* One case (repeat k) of one point against one target: its bench object, or a failed run. */
/* The run's latency distribution into o->hgrm_dir as "<name>-<k>.hgrm" (spaces and '=' as '-'),
 * named in the run's "hgrm"; a file that cannot be written is warned about and fails the run. */
static void write_hgrm(cmp *r, json_t *obj, const char *name, int k, const cp__bench_result *res) {
    if (r->o->hgrm_dir == NULL)
        return;
    char file[200], path[4096], err[ERRLEN] = "";
    snprintf(file, sizeof(file), "%s-%d.hgrm", name, k);
    for (char *p = file; *p; p++)
        if (*p == ' ' || *p == '=' || *p == '/')
            *p = '-';
    snprintf(path, sizeof(path), "%s/%s", r->o->hgrm_dir, file);
    if (cp__bench_write_hgrm(path, res, err, sizeof(err)) != 0) {
        warn(r, "%s: %s", path, err);
        r->failed = 1;
        return;
    }
    json_object_set_new(obj, "hgrm", json_string(file));
    /* --command: each command's beside it, named in its commands[] entry */
    json_t *cmds = json_object_get(obj, "commands");
    for (size_t c = 0; c < json_array_size(cmds) && c < res->ncommands; c++) {
        char one[160], onepath[4200];
        cp__bench_hgrm_command_path(file, c, r->o->commands->t[c].name, one, sizeof(one));
        snprintf(onepath, sizeof(onepath), "%s/%s", r->o->hgrm_dir, one);
        if (cp__bench_write_hgrm_of(onepath, &res->commands[c].latency, err, sizeof(err)) != 0) {
            warn(r, "%s: %s", onepath, err);
            r->failed = 1;
            return;
        }
        json_object_set_new(json_array_get(cmds, c), "hgrm", json_string(one));
    }
}

static void run_case(cmp *r, const char *setup, const cp__bench_target *t, const char *target_flags,
                     const point *pt, const bench_case *c, int k) {
    const cp__compare_opts *o = r->o;
    char cmdline[12288], err[ERRLEN] = "";
    bench_command(o, pt, target_flags, c->pipeline, r->read_from, cmdline, sizeof(cmdline));
    if (k == 1)
        add_command(r, cmdline);
    cp__bench_config cfg;
    bench_config(o, pt, c->pipeline, (uint64_t)k, &cfg);
    cfg.read_from = r->read_from;
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
    say(r, "%s %s%s: %" PRIu64 " requests, %d threads, %d connections, pipeline %d", setup, c->call,
        rep, o->requests, pt->threads, pt->clients, c->pipeline);
    cp__bench_result res;
    if (cp__bench_run(t, &cfg, &res, err, sizeof(err)) != 0) {
        warn(r, "%s %s: %s", setup, c->call, err);
        add_failed_run(r, setup, pt, c, k, err);
        cp__bench_result_free(&res);
        if (probe != NULL)
            json_decref(probe->servers);
        free(probe);
        return;
    }
    note_environment(r, &res);
    json_t *obj = cp__bench_json(t, &cfg, &res);
    int stopped = cancelled(r);
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
        if (stopped)
            json_object_set_new(obj, "error", json_string("interrupted"));
        write_hgrm(r, obj, name, k, &res);
        json_array_append_new(json_object_get(r->doc, "runs"), obj);
    }
    if (probe != NULL)
        json_decref(probe->servers);
    free(probe);
    if (cp__bench_result_failed(&res) || stopped) {
        r->failed = 1;
        warn(r, "%s %s FAILED: %" PRIu64 " failed, %" PRIu64 " unknown, %" PRIu64 " mismatched%s%s",
             setup, c->call, res.failed_ops, res.unknown_ops, res.verify_mismatches,
             res.first_error[0] ? "; first error: " : "", res.first_error);
    }
    say(r, "  %" PRIu64 " ops in %.2f s, %.0f ops/s, p50 %.0f us, p99 %.0f us", res.ops,
        res.seconds, res.ops_per_sec, cp__hist_percentile_us(&res.latency, 50),
        cp__hist_percentile_us(&res.latency, 99));
    cp__bench_result_free(&res);
}

/* Runs every case of a point K times against one target and appends each run's object. */
static void run_point(cmp *r, const char *setup, const cp__bench_target *t,
                      const char *target_flags, const point *pt) {
    bench_case cases[2];
    int nc = cases_of(r->o, pt, cases);
    for (int k = 1; k <= r->o->repeat; k++)
        for (int c = 0; c < nc; c++) {
            if (cancelled(r))
                add_failed_run(r, setup, pt, &cases[c], k, "interrupted");
            else
                run_case(r, setup, t, target_flags, pt, &cases[c], k);
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
static int load_keys(cmp *r, const cp__bench_target *t, const point *pt, uint64_t nkeys,
                     cp__load_result *res, char *err, size_t errlen) {
    const cp__compare_opts *o = r->o;
    cp__load_config cfg;
    cp__load_config_init(&cfg);
    cfg.keys = nkeys;
    cfg.value_size = pt->value_size;
    cfg.progress = o->load_progress;
    cfg.progress_ud = o->ud;
    cfg.cancel = o->cancel;
    cfg.cpus = client_cpus(o);
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
static int sync_replicas(cmp *r, const char *setup, const cp__bench_target *t, json_t *l) {
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
        char err[ERRLEN] = "";
        cp_client *c = cp__target_node_connect(t, p->host, p->port, err, sizeof(err));
        long long target = -1, off = 0, acked = 0;
        int online = 0, rc = c == NULL ? CP_ECONNECT : 0;
        for (;;) {
            if (rc == 0)
                rc = cp__node_repl_offsets(c, &off, &online, &acked);
            if (rc == 0 && target < 0)
                target = off; /* no write comes after the load: this is all of it */
            if (rc != 0 || (online >= want && acked >= target) || cancelled(r))
                break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec >= CP__COMPARE_SYNC_TIMEOUT_S)
                break;
            nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        }
        if (c != NULL)
            cp_free(c);
        if (rc != 0 || online < want || acked < target) {
            warn(r,
                 "%s: the replicas of %s:%d did not catch up with the load (%d of %d online, "
                 "offset %lld of %lld)%s%s",
                 setup, p->host, p->port, online, want, acked, target, err[0] ? ": " : "", err);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    double waited = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
    json_object_set_new(l, "replicas_synced_s", json_real(waited));
    say(r, "%s: every replica has the dataset (waited %.2f s)", setup, waited);
    return 0;
}

/* A dataset of more than CP__COMPARE_FIT_PROBE_KEYS keys is first loaded in part (its first
 * keys: the full load overwrites them), and the servers' memory per key of that part projects
 * what the whole will take; when that is more than the machine has available, the setup stops
 * here, before minutes of loading end in the OOM killer. Returns 0 to go on, 1 when it does not
 * fit or the probe failed (warned, recorded in the document's "fit"). */
static int fits(cmp *r, const char *setup, const cp__bench_target *t, const point *pt) {
    const cp__compare_opts *o = r->o;
    if (t->topo == NULL || o->keys <= CP__COMPARE_FIT_PROBE_KEYS)
        return 0;
    long long before = dataset_memory(t->topo);
    cp__load_result res;
    char err[ERRLEN] = "";
    say(r, "%s: loading %d keys first, to measure the memory per key", setup,
        CP__COMPARE_FIT_PROBE_KEYS);
    if (load_keys(r, t, pt, CP__COMPARE_FIT_PROBE_KEYS, &res, err, sizeof(err)) != 0) {
        warn(r, "%s: the probe load failed: %s", setup, err);
        return 1;
    }
    long long after = dataset_memory(t->topo);
    long long avail = o->mem_available > 0 ? o->mem_available : cp__env_mem_available();
    if (before < 0 || after < 0 || avail < 0) {
        say(r, "%s: cannot tell the memory per key or what is available; loading anyway", setup);
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
        warn(r,
             "%s: %" PRIu64 " keys of %s bytes will not fit: %.0f bytes per key (measured on a "
             "%d-key load) make %.1f GB, and %.0f%% of the %.1f GB available is %.1f GB; not "
             "loading (fewer --keys, or a bigger machine)",
             setup, o->keys, pt->sizes, per_key, CP__COMPARE_FIT_PROBE_KEYS, projected / 1e9,
             CP__COMPARE_FIT_SHARE * 100, (double)avail / 1e9, usable / 1e9);
        return 1;
    }
    say(r, "%s: %.0f bytes per key: %.1f GB projected, %.1f GB available", setup, per_key,
        projected / 1e9, (double)avail / 1e9);
    return 0;
}

/* Reads back the first keys of the dataset and checks every value (a sample: the bench's
 * verified GETs then read random keys all over it). Returns 0, or 1 when a key was missing or
 * wrong (warned). */
static int read_sample(cmp *r, const char *setup, const cp__bench_target *t, const point *pt,
                       json_t *l) {
    cp__readback_config rc;
    cp__readback_config_init(&rc);
    rc.keys = r->o->keys < CP__COMPARE_READBACK_SAMPLE ? r->o->keys : CP__COMPARE_READBACK_SAMPLE;
    rc.value_size = pt->value_size;
    rc.read_from = r->read_from; /* cluster-replicas: the sample is read from the replicas */
    rc.cancel = r->o->cancel;
    cp__readback_result rb;
    memset(&rb, 0, sizeof(rb));
    char err[ERRLEN] = "";
    int read_rc = cp__readback_run(t, &rc, NULL, NULL, &rb, err, sizeof(err));
    json_object_set_new(l, "readback",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:f}", "keys", (json_int_t)rb.keys, "ok",
                                  (json_int_t)rb.ok, "missing", (json_int_t)rb.missing,
                                  "mismatched", (json_int_t)(rb.mismatched + rb.stale + rb.newer),
                                  "failed", (json_int_t)rb.failed, "seconds", rb.seconds));
    if (read_rc != 0 || rb.ok != rc.keys) {
        warn(r,
             "%s: read-back of the first %" PRIu64 " keys: %" PRIu64 " ok, %" PRIu64
             " missing, %" PRIu64 " wrong, %" PRIu64 " failed%s%s",
             setup, rc.keys, rb.ok, rb.missing, rb.mismatched + rb.stale + rb.newer, rb.failed,
             err[0] ? ": " : "", err);
        return 1;
    }
    return 0;
}

/* Loads the dataset of a point into one target, checks it (DBSIZE equal to the keys, a sample
 * read back) and records its cost (load rate, the servers' memory per key, the client's peak
 * RSS). Returns 0, or 1 when it failed, did not fit or was interrupted (warned). */
static int load(cmp *r, const char *setup, const cp__bench_target *t, const char *target_flags,
                const point *pt, long long *empty) {
    const cp__compare_opts *o = r->o;
    char cmd[512], err[ERRLEN] = "";
    snprintf(cmd, sizeof(cmd), "clusterpipe load %s --keys %" PRIu64 " --value-size %s",
             target_flags, o->keys, pt->sizes);
    add_command(r, cmd);
    /* memory per key counts from the servers as they were empty, also when a value-size sweep
     * loads again over an earlier dataset */
    if (*empty < 0 && t->topo != NULL)
        *empty = dataset_memory(t->topo);
    long long before = *empty;
    if (fits(r, setup, t, pt) != 0)
        return 1;
    say(r, "%s: loading %" PRIu64 " keys of %s bytes", setup, o->keys, pt->sizes);
    cp__load_result res;
    int rc = load_keys(r, t, pt, o->keys, &res, err, sizeof(err));
    json_t *l = json_pack("{s:s,s:I,s:I,s:I,s:f,s:f,s:I}", "setup", setup, "shards",
                          (json_int_t)pt->shards, "value_size", size_number(&pt->value_size),
                          "keys", (json_int_t)res.written, "seconds", res.seconds, "keys_per_sec",
                          res.keys_per_sec, "client_peak_rss", (json_int_t)client_peak_rss());
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
    if (rc != 0 || cancelled(r)) {
        warn(r, "%s: load failed: %s", setup, cancelled(r) ? "interrupted" : err);
        return 1;
    }
    say(r, "%s: loaded %" PRIu64 " keys in %.2f s (%.0f keys/s)%s%s", setup, res.written,
        res.seconds, res.keys_per_sec, res.note[0] ? "; " : "", res.note);
    if (l != NULL && (sync_replicas(r, setup, t, l) != 0 || read_sample(r, setup, t, pt, l) != 0))
        return 1;
    return 0;
}

/* Points [from, to) against one target that is up: the dataset loaded again whenever a point's
 * value size differs from what the servers hold, then each point's cases. */
static void run_points(cmp *r, const char *setup, const cp__bench_target *t,
                       const char *target_flags, int from, int to) {
    char loaded[sizeof(((point *)0)->sizes)] = "";
    long long empty = -1; /* the servers' used_memory before the first load */
    for (int k = from; k < to; k++) {
        point pt;
        point_at(r->o, k, &pt);
        if (cancelled(r)) {
            fail_points(r, setup, k, to, "interrupted");
            return;
        }
        if (strcmp(pt.sizes, loaded) != 0) {
            if (load(r, setup, t, target_flags, &pt, &empty) != 0) {
                fail_points(r, setup, k, to, "load failed");
                return;
            }
            memcpy(loaded, pt.sizes, sizeof(loaded));
        }
        run_point(r, setup, t, target_flags, &pt);
    }
}

/* Records the processes of a started topology in the document, so a reader (and the test) can
 * check by PID that nothing was left running. */
static void record_topology(cmp *r, const char *setup, const cp_topo *t) {
    char eps[CP__ENDPOINTS_MAX];
    cp_topo_endpoints(t, eps, sizeof(eps));
    json_t *procs = json_array();
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        const char *role = p->role == CP_ROLE_PROXY     ? "proxy"
                           : p->role == CP_ROLE_REPLICA ? "replica"
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
    json_array_append_new(
        json_object_get(r->doc, "topologies"),
        json_pack("{s:s,s:s,s:o}", "setup", setup, "endpoints", eps, "processes", procs));
}

/* A local setup: what it starts and how it reads. */
typedef struct local_def {
    const char *name; /* the runs' "setup" */
    cp_topo_kind kind;
    int replicas;  /* cluster: replicas per master */
    int read_from; /* cp_options.read_from of its cases */
} local_def;

static const local_def TWEMPROXY = {"twemproxy", CP_TOPO_TWEMPROXY, 0, CP_READ_MASTER};
static const local_def CLUSTER = {"cluster", CP_TOPO_CLUSTER, 0, CP_READ_MASTER};
static const local_def CLUSTER_REPLICAS = {"cluster-replicas", CP_TOPO_CLUSTER, 1, CP_READ_REPLICA};

/* One local setup for points [from, to) (their shards are the first's): up, load, runs, down.
 * Down happens whatever went wrong in between. */
static void local_span(cmp *r, const local_def *def, int from, int to) {
    const cp__compare_opts *o = r->o;
    const char *setup = def->name;
    cp_topo_kind kind = def->kind;
    r->read_from = def->read_from;
    point first;
    point_at(o, from, &first);
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
    char err[ERRLEN] = "", cmd[128];
    if (kind == CP_TOPO_CLUSTER && def->replicas > 0)
        snprintf(cmd, sizeof(cmd), "clusterpipe up cluster --shards %d --replicas %d --dir DIR",
                 first.shards, def->replicas);
    else if (kind == CP_TOPO_CLUSTER)
        snprintf(cmd, sizeof(cmd), "clusterpipe up cluster --shards %d --dir DIR", first.shards);
    else
        snprintf(cmd, sizeof(cmd), "clusterpipe up twemproxy --shards %d --proxies %d --dir DIR",
                 first.shards, CP__COMPARE_PROXIES);
    add_command(r, cmd);
    if (kind == CP_TOPO_CLUSTER)
        say(r, "%s: starting a %d-master Redis Cluster%s", setup, first.shards,
            def->replicas > 0 ? ", a replica per master, reads on the replicas" : "");
    else
        say(r, "%s: starting %d redis-server + %d nutcracker", setup, first.shards,
            CP__COMPARE_PROXIES);
    cp_topo *t = NULL;
    if (cp_topo_up(&up, &t, err, sizeof(err)) != 0) {
        warn(r, "%s did not start: %s", setup, err);
        fail_points(r, setup, from, to, err);
        return;
    }
    record_topology(r, setup, t);
    cp__bench_target target;
    if (cp__bench_target_from_topo(&target, t, NULL, NULL) != 0)
        fail_points(r, setup, from, to, "endpoint list too long");
    else
        run_points(r, setup, &target, "--dir DIR", from, to);
    add_command(r, "clusterpipe down --dir DIR");
    if (cp_topo_down(t, 0, err, sizeof(err)) != 0)
        warn(r, "%s: stopping: %s", setup, err);
    else
        say(r, "%s: stopped", setup);
    cp_topo_free(t);
    r->read_from = CP_READ_MASTER;
}

/* Every point on one architecture: one setup for all of them, or one per point when the sweep
 * changes the servers themselves (shards). */
static void local_setup(cmp *r, const local_def *def) {
    const cp__compare_opts *o = r->o;
    if (cancelled(r)) {
        fail_points(r, def->name, 0, npoints(o), "interrupted");
    } else if (sweeping(o) && o->sweep->param == CP__SWEEP_SHARDS) {
        for (int k = 0; k < npoints(o); k++) {
            if (cancelled(r)) {
                fail_points(r, def->name, k, npoints(o), "interrupted");
                return;
            }
            local_span(r, def, k, k + 1);
        }
    } else {
        local_span(r, def, 0, npoints(o));
    }
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
    run_points(r, setup, &t, flags, 0, npoints(r->o));
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
        snprintf(line, sizeof(line), "placement: %.280s", lines[i]); /* bounded for gcc */
        o->warn(o->ud, line);
    }
}

/* ---- the document ----------------------------------------------------------------------------
 */

static json_t *sweep_json(const cp__compare_opts *o) {
    if (!sweeping(o))
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
                          (json_int_t)o->keys, "value_size", size_number(&o->value_size),
                          "pipeline", o->pipeline, "key_dist", dist, "verify", o->verify, "shards",
                          CP__COMPARE_SHARDS, "proxies", CP__COMPARE_PROXIES);
    if (s != NULL) {
        char sizes[256];
        cp__value_sizes_format(&o->value_size, sizes, sizeof(sizes));
        json_object_set_new(s, "value_sizes", json_string(sizes));
    }
    if (s != NULL)
        json_object_set_new(s, "sweep", sweep_json(o));
    if (s != NULL && o->replica_reads) /* only then: documents without it stay as they were */
        json_object_set_new(s, "replica_reads", json_true());
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
    int frc = cp__fdlimit_ensure(fds_needed(o), &fds);
    if (frc == -EMFILE) {
        cp__seterr(err, errlen,
                   "the largest point needs about %" PRIu64 " file descriptors (connections x "
                   "(shards + 1) + 256) and the hard limit is %" PRIu64
                   " (ulimit -Hn): raise it (limits.conf, systemd LimitNOFILE) or ask for fewer "
                   "clients; nothing was started",
                   fds.needed, fds.hard);
        return CP_EIO;
    }
    cmp *r = calloc(1, sizeof(*r));
    int external = o->cluster_eps || o->proxy_eps;
    if (r == NULL || (r->doc = new_doc(o, external)) == NULL) {
        free(r);
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    r->o = o;
    if (frc == 0)
        json_object_set_new(json_object_get(r->doc, "settings"), "fd_limit",
                            json_pack("{s:I,s:I,s:I,s:I}", "needed", (json_int_t)fds.needed,
                                      "soft_before", (json_int_t)fds.soft_before, "soft",
                                      (json_int_t)fds.soft, "hard",
                                      (json_int_t)(fds.hard > INT64_MAX ? -1 : (int64_t)fds.hard)));
    note_placement(r);
    if (external) {
        if (o->proxy_eps)
            external_setup(r, "twemproxy", CP__TARGET_PROXY, o->proxy_eps);
        if (o->cluster_eps && !cancelled(r))
            external_setup(r, "cluster", CP__TARGET_CLUSTER, o->cluster_eps);
    } else {
        local_setup(r, &TWEMPROXY); /* down before the cluster starts */
        local_setup(r, &CLUSTER);
        if (o->replica_reads)
            local_setup(r, &CLUSTER_REPLICAS);
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
