/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe compare`: the twemproxy vs Redis Cluster experiment in one command. compare brings
 * up twemproxy (4 redis-server + 4 nutcracker), loads the dataset, runs GET and pipelined GET (K
 * times each with --repeat), tears it down, then does the same with a 4-master cluster, so the two
 * setups never share the CPU; with --cluster/--proxy it runs against the user's endpoints and
 * starts nothing. It writes results.json
 * ("clusterpipe.compare/1") and hands it to cp_cli_render (cmd_report.c) for table.md, charts
 * and report.md.
 *
 * Processes: every server is started ephemeral (it dies with this thread), tracked by PID by
 * the orchestration layer and stopped by PID after its setup's runs, on failure, and on
 * SIGINT/SIGTERM/SIGHUP (a flag the engine and orchestration poll). The PIDs are recorded in
 * results.json and checked dead before we exit. Ownership: the results document is built and
 * freed here; bench results are freed right after their JSON is taken. Single-threaded (the
 * engine runs its workers inside cp__bench_run). Results go to stdout, progress and errors to
 * stderr. Exit codes: 0 ok, 1 a run failed (errors, mismatches, interrupted), 2 bad usage.
 */
#include "cli/cli.h"

#include "bench/engine.h"
#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"
#include "report/io.h"
#include "util/env.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef CP_VERSION
#define CP_VERSION "unknown"
#endif

#define ERRLEN 4096
#define SHARDS 4  /* the published experiment: 4 redis servers / 4 cluster masters */
#define PROXIES 4 /* and 4 nutcracker processes */

/* ---- options and presets ---------------------------------------------------------------------
 */

typedef struct preset {
    const char *name;
    int threads, clients, pipeline;
    uint64_t requests, keys;
    size_t value_size;
    int repeat;
} preset;

/* quick: three repeats of everything (so the report can tell noise from difference) well
 * under 2 minutes on a 2-core machine; full: the published scale (10 threads x 1,000,000 GETs
 * each = 10,000,000 per case, 100,000 keys); large: a dataset of 20 million 100-byte keys (a few
 * GB per setup, loaded once per setup). */
static const preset presets[] = {
    {"quick", 10, 10, 10, 100000, 100000, 100, 3},
    {"full", 10, 10, 10, 10000000, 100000, 100, 1},
    {"large", 10, 10, 10, 10000000, 20000000, 100, 1},
};

typedef struct compare_opts {
    const preset *pre;
    int threads, clients, pipeline, repeat;
    uint64_t requests, keys;
    long value_size;
    const char *key_dist;
    cp__dist dist;
    int verify, quiet;
    const char *out;
    const char *cluster_eps, *proxy_eps, *password;
} compare_opts;

static void compare_help(FILE *out) {
    fprintf(out,
            "usage: clusterpipe compare [--quick | --full | --large] [--out DIR] [--repeat K]\n"
            "                           [--cluster HOST:PORT,... --proxy HOST:PORT,...]\n"
            "                           [--threads T] [--clients C] [--pipeline P]\n"
            "                           [--requests N] [--keys K] [--value-size B]\n"
            "                           [--key-dist uniform|zipf:S|sequential] [--no-verify]\n"
            "\n"
            "Twemproxy or Redis Cluster? Reproduces the published experiment on this machine:\n"
            "starts twemproxy (4 redis-server + 4 nutcracker) on 127.0.0.1, loads the dataset,\n"
            "runs GET and pipelined GET, stops it, then does the same with a 4-master Redis\n"
            "Cluster, one setup at a time so they never share the CPU. Prints the table (time,\n"
            "Redis / client / twemproxy / total CPU-seconds, ops/s, p50/p99, CPU us per op, and\n"
            "the cluster/twemproxy ratio per call type) and writes into DIR: results.json,\n"
            "table.md, charts (PNG and SVG, drawn with gnuplot) and report.md.\n"
            "\n"
            "presets (flags below override any preset value):\n"
            "  --quick            default: 10 threads, 10 connections, 100,000 GETs per case,\n"
            "                     100,000 keys of 100 bytes, every case 3 times (under a\n"
            "                     minute on 2 cores)\n"
            "  --full             the published scale: 10 threads x 1,000,000 GETs each\n"
            "                     (10,000,000 per case) over 100,000 keys\n"
            "  --large            20,000,000 keys of 100 bytes (several GB of RAM per setup,\n"
            "                     minutes of loading), 10,000,000 GETs per case\n"
            "options:\n"
            "  --out DIR          output directory (default results/<timestamp>)\n"
            "  --repeat K         run each case K times (quick: 3, full/large: 1); the table\n"
            "                     shows medians and [min-max], the report says which\n"
            "                     differences are inside the noise\n"
            "  --threads T        client threads (default 10)\n"
            "  --clients C        connections in total, spread over the threads (default:\n"
            "                     one per thread)\n"
            "  --pipeline P       requests in flight per connection for pipelined GET\n"
            "                     (default 10; plain GET always uses 1)\n"
            "  --requests N       GETs per case, all threads together\n"
            "  --keys K           dataset size, keys key:0 .. key:K-1\n"
            "  --value-size B     bytes per value (default 100)\n"
            "  --key-dist D       uniform (default), sequential or zipf:S\n"
            "  --no-verify        do not check that each GET reply belongs to its key\n"
            "  --cluster H:P,...  use this existing Redis Cluster instead of starting one\n"
            "  --proxy H:P,...    use these existing twemproxy endpoints instead of starting\n"
            "                     them. With either, nothing is started, only the given\n"
            "                     setups run, the dataset is WRITTEN into them (SET key:N),\n"
            "                     redis CPU comes from INFO CPU and proxy CPU is n/a\n"
            "  --password PW      AUTH for --cluster/--proxy endpoints\n"
            "  -q, --quiet        no progress lines on stderr\n"
            "\n"
            "Ctrl-C or SIGTERM stops the run and every process it started. Exit status: 0 ok,\n"
            "1 a run failed (failed requests, unknown outcomes, mismatched replies, a setup\n"
            "that did not start, interrupted), 2 bad usage.\n");
}

/* Parses argv into *o (preset first, then the flags that override it). Returns 0 or exit code
 * 2 after printing the problem. */
static int parse_compare(int argc, char **argv, compare_opts *o, int *help) {
    const char *cmd = "compare";
    const preset *pre = NULL;
    for (int i = 1; i < argc; i++)
        for (size_t p = 0; p < sizeof(presets) / sizeof(presets[0]); p++) {
            char flag[32];
            snprintf(flag, sizeof(flag), "--%s", presets[p].name);
            if (strcmp(argv[i], flag) != 0)
                continue;
            if (pre != NULL && pre != &presets[p])
                return cp_cli_usage_error(cmd, "--%s and --%s are exclusive", pre->name,
                                          presets[p].name);
            pre = &presets[p];
        }
    if (pre == NULL)
        pre = &presets[0];
    memset(o, 0, sizeof(*o));
    o->pre = pre;
    o->threads = pre->threads;
    o->clients = pre->clients;
    o->pipeline = pre->pipeline;
    o->requests = pre->requests;
    o->keys = pre->keys;
    o->value_size = (long)pre->value_size;
    o->repeat = pre->repeat;
    o->verify = 1;
    o->key_dist = "uniform";
    int clients_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        long l;
        if (cp_cli_is_help(a)) {
            *help = 1;
            return 0;
        } else if (strcmp(a, "--quick") == 0 || strcmp(a, "--full") == 0 ||
                   strcmp(a, "--large") == 0) {
            continue;
        } else if (cp_cli_flag_value(argc, argv, &i, "--out", &v)) {
            if (v == NULL || *v == '\0')
                return cp_cli_usage_error(cmd, "--out needs a directory");
            o->out = v;
        } else if (cp_cli_flag_value(argc, argv, &i, "--repeat", &v)) {
            if (cp_cli_parse_int(cmd, "--repeat", v, 1, 100, &o->repeat) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--threads", &v)) {
            if (cp_cli_parse_int(cmd, "--threads", v, 1, 1024, &o->threads) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--clients", &v)) {
            if (cp_cli_parse_int(cmd, "--clients", v, 1, 100000, &o->clients) != 0)
                return CP_EXIT_USAGE;
            clients_set = 1;
        } else if (cp_cli_flag_value(argc, argv, &i, "--pipeline", &v)) {
            if (cp_cli_parse_int(cmd, "--pipeline", v, 1, 100000, &o->pipeline) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--requests", &v)) {
            if (cp_cli_parse_long(cmd, "--requests", v, 1, LONG_MAX, &l) != 0)
                return CP_EXIT_USAGE;
            o->requests = (uint64_t)l;
        } else if (cp_cli_flag_value(argc, argv, &i, "--keys", &v)) {
            if (cp_cli_parse_long(cmd, "--keys", v, 1, 4000000000L, &l) != 0)
                return CP_EXIT_USAGE;
            o->keys = (uint64_t)l;
        } else if (cp_cli_flag_value(argc, argv, &i, "--value-size", &v)) {
            if (cp_cli_parse_long(cmd, "--value-size", v, 1, 512L * 1024 * 1024, &o->value_size) !=
                0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--key-dist", &v)) {
            if (v == NULL || cp__dist_parse(v, &o->dist) != 0)
                return cp_cli_usage_error(
                    cmd, "--key-dist: '%s' is not uniform, sequential or zipf:S (S > 0)",
                    v ? v : "");
            o->key_dist = v;
        } else if (strcmp(a, "--no-verify") == 0) {
            o->verify = 0;
        } else if (cp_cli_flag_value(argc, argv, &i, "--cluster", &v)) {
            if (v == NULL || *v == '\0')
                return cp_cli_usage_error(cmd, "--cluster needs HOST:PORT[,HOST:PORT...]");
            o->cluster_eps = v;
        } else if (cp_cli_flag_value(argc, argv, &i, "--proxy", &v)) {
            if (v == NULL || *v == '\0')
                return cp_cli_usage_error(cmd, "--proxy needs HOST:PORT[,HOST:PORT...]");
            o->proxy_eps = v;
        } else if (cp_cli_flag_value(argc, argv, &i, "--password", &v)) {
            if (v == NULL || *v == '\0')
                return cp_cli_usage_error(cmd, "--password needs a value");
            o->password = v;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else {
            return cp_cli_usage_error(cmd, "unknown option '%s'", a);
        }
    }
    if (!clients_set) /* one connection per thread, like the published experiment */
        o->clients = o->threads;
    if (o->password && !o->cluster_eps && !o->proxy_eps)
        return cp_cli_usage_error(cmd, "--password applies to --cluster/--proxy endpoints");
    return 0;
}

/* ---- one setup -------------------------------------------------------------------------------
 */

typedef struct run_ctx {
    const compare_opts *o;
    const char *command; /* the compare command line */
    json_t *doc;
    int failed;             /* any run failed, or a setup did not run */
    char redis_version[64]; /* first seen, for the environment */
    char nutcracker_version[64];
    int cores;
    char cpu_model[128];
    /* every process started, for the final "nothing left running" check */
    size_t nspawned;
    pid_t pids[256];
    unsigned long long starts[256];
} run_ctx;

static void log_line(void *ud, const char *line) {
    const run_ctx *r = ud;
    if (!r->o->quiet)
        fprintf(stderr, "clusterpipe compare: %s\n", line);
}

static void note(const run_ctx *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const run_ctx *r, const char *fmt, ...) {
    if (r->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "clusterpipe compare: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static void on_spawn(void *ud, const cp_proc *p) {
    run_ctx *r = ud;
    if (r->nspawned < sizeof(r->pids) / sizeof(r->pids[0])) {
        r->pids[r->nspawned] = p->pid;
        r->starts[r->nspawned] = p->start_time;
        r->nspawned++;
    }
}

/* A live progress line on a terminal only; logs and pipes get the per-run summary instead. */
static void bench_progress(void *ud, const cp__bench_progress *p) {
    const run_ctx *r = ud;
    if (r->o->quiet || !isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r  %5.1f%%  %10.0f ops/s  p99 %8.0f us  errors %" PRIu64 "   ",
            p->fraction * 100, p->ops_per_sec, p->p99_us, p->errors + p->mismatches);
}

static void load_progress(void *ud, const cp__load_progress *p) {
    const run_ctx *r = ud;
    if (r->o->quiet || !isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r  loaded %" PRIu64 " / %" PRIu64 " keys (%.0f keys/s)   ", p->done, p->total,
            p->rate);
}

static void end_progress_line(const run_ctx *r) {
    if (!r->o->quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "\r%72s\r", "");
}

/* Appends a run that could not produce a bench object (setup down, load failed, engine error)
 * so the report shows it as failed instead of silently missing. */
static void add_failed_run(run_ctx *r, const char *setup, const char *call, int iteration,
                           int pipeline, const char *why) {
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

/* The `clusterpipe bench` command that reproduces one run by hand (the report's "commands"). */
static void bench_command(const compare_opts *o, const char *target, int pipeline, char *buf,
                          size_t len) {
    snprintf(buf, len,
             "clusterpipe bench %s --threads %d --clients %d --pipeline %d --requests %" PRIu64
             " --keys %" PRIu64 " --value-size %ld --key-dist %s%s",
             target, o->threads, o->clients, pipeline, o->requests, o->keys, o->value_size,
             o->key_dist, o->verify ? "" : " --no-verify");
}

static void add_command(run_ctx *r, const char *text) {
    json_array_append_new(json_object_get(r->doc, "commands"), json_string(text));
}

/* Runs GET and pipelined GET K times against one target and appends each run's bench object.
 * Returns -1 when interrupted. */
static int run_cases(run_ctx *r, const char *setup, const cp__bench_target *t,
                     const char *target_flags) {
    const compare_opts *o = r->o;
    static const char *const calls[2] = {"GET", "pipelined GET"};
    for (int k = 1; k <= o->repeat; k++)
        for (int c = 0; c < 2; c++) {
            int pipeline = c == 0 ? 1 : o->pipeline;
            if (cp_cli_interrupted) {
                add_failed_run(r, setup, calls[c], k, pipeline, "interrupted");
                continue;
            }
            char cmdline[1024], err[ERRLEN] = "";
            bench_command(o, target_flags, pipeline, cmdline, sizeof(cmdline));
            if (k == 1)
                add_command(r, cmdline);
            cp__bench_config cfg;
            cp__bench_config_init(&cfg);
            cfg.threads = o->threads;
            cfg.clients = o->clients;
            cfg.pipeline = pipeline;
            cfg.requests = o->requests;
            cfg.ratio_set = 0;
            cfg.ratio_get = 1;
            cfg.keys = o->keys;
            cfg.value_size = (size_t)o->value_size;
            cfg.dist = o->dist;
            cfg.verify = o->verify;
            cfg.seed = (uint64_t)k; /* same key sequence for both setups in repeat k */
            cfg.command_line = cmdline;
            cfg.progress = bench_progress;
            cfg.progress_ud = r;
            cfg.cancel = &cp_cli_interrupted;
            char rep[32] = "";
            if (o->repeat > 1)
                snprintf(rep, sizeof(rep), " [%d/%d]", k, o->repeat);
            note(r, "%s %s%s: %" PRIu64 " requests, %d threads, %d connections, pipeline %d", setup,
                 calls[c], rep, o->requests, o->threads, o->clients, pipeline);
            cp__bench_result res;
            int rc = cp__bench_run(t, &cfg, &res, err, sizeof(err));
            end_progress_line(r);
            if (rc != 0) {
                fprintf(stderr, "clusterpipe compare: %s %s: %s\n", setup, calls[c], err);
                add_failed_run(r, setup, calls[c], k, pipeline, err);
                cp__bench_result_free(&res);
                continue;
            }
            if (!r->redis_version[0] && res.redis_version[0])
                snprintf(r->redis_version, sizeof(r->redis_version), "%s", res.redis_version);
            if (!r->nutcracker_version[0] && res.nutcracker_version[0])
                snprintf(r->nutcracker_version, sizeof(r->nutcracker_version), "%s",
                         res.nutcracker_version);
            if (!r->cores && res.cores > 0) {
                r->cores = res.cores;
                snprintf(r->cpu_model, sizeof(r->cpu_model), "%s", res.cpu_model);
            }
            json_t *obj = cp__bench_json(t, &cfg, &res);
            int bad = cp__bench_result_failed(&res) || cp_cli_interrupted;
            if (obj == NULL) {
                add_failed_run(r, setup, calls[c], k, pipeline, "out of memory");
            } else {
                char name[64];
                snprintf(name, sizeof(name), "%s %s", setup, calls[c]);
                json_object_set_new(obj, "name", json_string(name));
                json_object_set_new(obj, "setup", json_string(setup));
                json_object_set_new(obj, "call_type", json_string(calls[c]));
                json_object_set_new(obj, "iteration", json_integer(k));
                if (cp_cli_interrupted)
                    json_object_set_new(obj, "error", json_string("interrupted"));
                json_array_append_new(json_object_get(r->doc, "runs"), obj);
            }
            if (bad) {
                r->failed = 1;
                fprintf(stderr,
                        "clusterpipe compare: %s %s FAILED: %" PRIu64 " failed, %" PRIu64
                        " unknown, %" PRIu64 " mismatched%s%s\n",
                        setup, calls[c], res.failed_ops, res.unknown_ops, res.verify_mismatches,
                        res.first_error[0] ? "; first error: " : "", res.first_error);
            }
            note(r, "  %" PRIu64 " ops in %.2f s, %.0f ops/s, p50 %.0f us, p99 %.0f us", res.ops,
                 res.seconds, res.ops_per_sec, cp__hist_percentile_us(&res.latency, 50),
                 cp__hist_percentile_us(&res.latency, 99));
            cp__bench_result_free(&res);
        }
    return cp_cli_interrupted ? -1 : 0;
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

/* Loads the dataset into one target. Returns 0 or -1 (message printed). */
static int load(run_ctx *r, const char *setup, const cp__bench_target *t,
                const char *target_flags) {
    const compare_opts *o = r->o;
    cp__load_config cfg;
    cp__load_config_init(&cfg);
    cfg.keys = o->keys;
    cfg.value_size = (size_t)o->value_size;
    cfg.progress = load_progress;
    cfg.progress_ud = r;
    cfg.cancel = &cp_cli_interrupted;
    char cmd[512], err[ERRLEN] = "";
    snprintf(cmd, sizeof(cmd), "clusterpipe load %s --keys %" PRIu64 " --value-size %ld",
             target_flags, o->keys, o->value_size);
    add_command(r, cmd);
    note(r, "%s: loading %" PRIu64 " keys of %ld bytes", setup, o->keys, o->value_size);
    cp__load_result res;
    memset(&res, 0, sizeof(res));
    int rc = cp__load_run(t, &cfg, &res, err, sizeof(err));
    end_progress_line(r);
    json_t *l = json_pack("{s:s,s:I,s:f,s:f}", "setup", setup, "keys", (json_int_t)res.written,
                          "seconds", res.seconds, "keys_per_sec", res.keys_per_sec);
    if (l != NULL && rc == 0 && t->topo != NULL)
        json_object_set_new(l, "memory_per_shard", shard_memory(t->topo));
    if (l != NULL)
        json_array_append_new(json_object_get(r->doc, "load"), l);
    if (rc != 0 || cp_cli_interrupted) {
        fprintf(stderr, "clusterpipe compare: %s: load failed: %s\n", setup,
                cp_cli_interrupted ? "interrupted" : err);
        return -1;
    }
    note(r, "%s: loaded %" PRIu64 " keys in %.2f s (%.0f keys/s)%s%s", setup, res.written,
         res.seconds, res.keys_per_sec, res.note[0] ? "; " : "", res.note);
    return 0;
}

/* Records the processes of a started topology in results.json, so a reader (and the test) can
 * check by PID that nothing was left running. */
static void record_topology(run_ctx *r, const char *setup, const cp_topo *t) {
    char eps[CP__ENDPOINTS_MAX];
    cp_topo_endpoints(t, eps, sizeof(eps));
    json_t *procs = json_array();
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        const char *role = p->role == CP_ROLE_PROXY ? "proxy" : "redis";
        json_array_append_new(procs, json_pack("{s:s,s:i,s:I,s:I}", "role", role, "port", p->port,
                                               "pid", (json_int_t)p->pid, "start_time",
                                               (json_int_t)p->start_time));
    }
    json_array_append_new(
        json_object_get(r->doc, "topologies"),
        json_pack("{s:s,s:s,s:o}", "setup", setup, "endpoints", eps, "processes", procs));
}

/* One local setup: up, load, runs, down. Down happens whatever went wrong in between. */
static void local_setup(run_ctx *r, cp_topo_kind kind) {
    const compare_opts *o = r->o;
    const char *setup = kind == CP_TOPO_CLUSTER ? "cluster" : "twemproxy";
    cp_up_opts up = CP_UP_OPTS_INIT;
    up.kind = kind;
    up.shards = SHARDS;
    up.proxies = PROXIES;
    up.ephemeral = 1;
    up.quiet = o->quiet;
    up.log = log_line;
    up.on_spawn = on_spawn;
    up.hook_ud = r;
    up.cancel = &cp_cli_interrupted;
    char err[ERRLEN] = "";
    if (kind == CP_TOPO_CLUSTER)
        add_command(r, "clusterpipe up cluster --shards 4 --dir DIR");
    else
        add_command(r, "clusterpipe up twemproxy --shards 4 --proxies 4 --dir DIR");
    note(r, "%s: starting %s", setup,
         kind == CP_TOPO_CLUSTER ? "a 4-master Redis Cluster" : "4 redis-server + 4 nutcracker");
    cp_topo *t = NULL;
    if (cp_topo_up(&up, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe compare: %s did not start: %s\n", setup, err);
        for (int k = 1; k <= o->repeat; k++) {
            add_failed_run(r, setup, "GET", k, 1, err);
            add_failed_run(r, setup, "pipelined GET", k, o->pipeline, err);
        }
        return;
    }
    record_topology(r, setup, t);
    cp__bench_target target;
    if (cp__bench_target_from_topo(&target, t, NULL, NULL) != 0) {
        for (int k = 1; k <= o->repeat; k++) {
            add_failed_run(r, setup, "GET", k, 1, "endpoint list too long");
            add_failed_run(r, setup, "pipelined GET", k, o->pipeline, "endpoint list too long");
        }
    } else if (load(r, setup, &target, "--dir DIR") == 0) {
        run_cases(r, setup, &target, "--dir DIR");
    } else {
        for (int k = 1; k <= o->repeat; k++) {
            add_failed_run(r, setup, "GET", k, 1, "load failed");
            add_failed_run(r, setup, "pipelined GET", k, o->pipeline, "load failed");
        }
    }
    add_command(r, "clusterpipe down --dir DIR");
    if (cp_topo_down(t, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe compare: %s: stopping: %s\n", setup, err);
        r->failed = 1;
    } else {
        note(r, "%s: stopped", setup);
    }
    cp_topo_free(t);
}

/* One user-provided setup: nothing is started or stopped. */
static void external_setup(run_ctx *r, const char *setup, cp__target_mode mode, const char *eps) {
    const compare_opts *o = r->o;
    cp__bench_target t;
    char flags[CP__ENDPOINTS_MAX + 32];
    snprintf(flags, sizeof(flags), "--%s %s", mode == CP__TARGET_CLUSTER ? "cluster" : "proxy",
             eps);
    cp__bench_target_external(&t, mode, eps, o->password, NULL);
    json_array_append_new(
        json_object_get(r->doc, "topologies"),
        json_pack("{s:s,s:s,s:[]}", "setup", setup, "endpoints", eps, "processes"));
    if (load(r, setup, &t, flags) == 0) {
        run_cases(r, setup, &t, flags);
        return;
    }
    for (int k = 1; k <= o->repeat; k++) {
        add_failed_run(r, setup, "GET", k, 1, "load failed");
        add_failed_run(r, setup, "pipelined GET", k, o->pipeline, "load failed");
    }
}

/* ---- results document ------------------------------------------------------------------------
 */

static json_t *settings_json(const compare_opts *o) {
    char dist[64];
    cp__dist_format(&o->dist, dist, sizeof(dist));
    return json_pack("{s:i,s:i,s:I,s:I,s:I,s:i,s:s,s:b,s:i,s:i}", "threads", o->threads, "clients",
                     o->clients, "requests", (json_int_t)o->requests, "keys", (json_int_t)o->keys,
                     "value_size", (json_int_t)o->value_size, "pipeline", o->pipeline, "key_dist",
                     dist, "verify", o->verify, "shards", SHARDS, "proxies", PROXIES);
}

/* Versions, cores, CPU model, kernel and date: what makes a table reproducible. */
static json_t *environment_json(const run_ctx *r) {
    return cp__env_json(CP_VERSION, r->redis_version, r->nutcracker_version, r->cores,
                        r->cpu_model);
}

int cp_cli_compare(int argc, char **argv) {
    compare_opts o;
    int help = 0;
    int rc = parse_compare(argc, argv, &o, &help);
    if (rc != 0)
        return rc;
    if (help) {
        compare_help(stdout);
        return CP_EXIT_OK;
    }
    /* what the engine would refuse is a usage error, found before anything starts */
    char err[ERRLEN] = "";
    cp__bench_config chk;
    cp__bench_config_init(&chk);
    chk.threads = o.threads;
    chk.clients = o.clients;
    chk.pipeline = o.pipeline;
    chk.requests = o.requests;
    chk.keys = o.keys;
    chk.value_size = (size_t)o.value_size;
    chk.dist = o.dist;
    chk.verify = o.verify;
    chk.ratio_set = 0;
    chk.ratio_get = 1;
    if (cp__bench_config_check(&chk, err, sizeof(err)) != 0)
        return cp_cli_usage_error("compare", "%s", err);
    cp__bench_target probe;
    if (o.cluster_eps &&
        cp__bench_target_external(&probe, CP__TARGET_CLUSTER, o.cluster_eps, NULL, NULL) != 0)
        return cp_cli_usage_error("compare", "--cluster: '%s' is not HOST:PORT[,HOST:PORT...]",
                                  o.cluster_eps);
    if (o.proxy_eps &&
        cp__bench_target_external(&probe, CP__TARGET_PROXY, o.proxy_eps, NULL, NULL) != 0)
        return cp_cli_usage_error("compare", "--proxy: '%s' is not HOST:PORT[,HOST:PORT...]",
                                  o.proxy_eps);

    char outdir[4096];
    if (o.out) {
        snprintf(outdir, sizeof(outdir), "%s", o.out);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(outdir, sizeof(outdir), "results/%Y%m%d-%H%M%S", &tm);
    }
    if (cp_cli_make_dirs(outdir, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe compare: %s\n", err);
        return CP_EXIT_FAIL;
    }
    cp_cli_install_signals();

    static run_ctx r; /* static: the PID arrays are large; one compare per process */
    memset(&r, 0, sizeof(r));
    r.o = &o;
    char command[8192];
    cp_cli_join_command(argc, argv, command, sizeof(command));
    r.command = command;
    int external = o.cluster_eps || o.proxy_eps;
    r.doc = json_object();
    json_object_set_new(r.doc, "schema", json_string(CP__COMPARE_SCHEMA));
    json_object_set_new(r.doc, "command", json_string(command));
    json_object_set_new(r.doc, "repeat", json_integer(o.repeat));
    json_object_set_new(r.doc, "preset", json_string(o.pre->name));
    json_object_set_new(r.doc, "mode", json_string(external ? "external" : "local"));
    json_object_set_new(r.doc, "settings", settings_json(&o));
    json_object_set_new(r.doc, "environment", json_object());
    json_object_set_new(r.doc, "topologies", json_array());
    json_object_set_new(r.doc, "commands", json_array());
    json_object_set_new(r.doc, "load", json_array());
    json_object_set_new(r.doc, "runs", json_array());

    if (external) {
        if (o.proxy_eps)
            external_setup(&r, "twemproxy", CP__TARGET_PROXY, o.proxy_eps);
        if (o.cluster_eps && !cp_cli_interrupted)
            external_setup(&r, "cluster", CP__TARGET_CLUSTER, o.cluster_eps);
    } else {
        local_setup(&r, CP_TOPO_TWEMPROXY); /* down before the cluster starts */
        if (!cp_cli_interrupted)
            local_setup(&r, CP_TOPO_CLUSTER);
        else
            for (int k = 1; k <= o.repeat; k++) {
                add_failed_run(&r, "cluster", "GET", k, 1, "interrupted");
                add_failed_run(&r, "cluster", "pipelined GET", k, o.pipeline, "interrupted");
            }
    }
    /* belt and braces: every PID we saw spawn must be gone (the orchestration stops them; a
     * survivor is a bug worth failing loudly on) */
    for (size_t i = 0; i < r.nspawned; i++)
        if (cp_orch_pid_alive(r.pids[i], r.starts[i])) {
            fprintf(stderr, "clusterpipe compare: process %ld still running after teardown\n",
                    (long)r.pids[i]);
            r.failed = 1;
        }
    if (cp_cli_interrupted) {
        fprintf(stderr,
                "clusterpipe compare: interrupted by signal %d; everything started was "
                "stopped\n",
                (int)cp_cli_interrupted);
        r.failed = 1;
    }
    json_object_set_new(r.doc, "environment", environment_json(&r));
    json_object_set_new(r.doc, "failed", json_boolean(r.failed));

    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", outdir);
    if (cp__json_write_file(path, r.doc, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe compare: %s\n", err);
        json_decref(r.doc);
        return CP_EXIT_FAIL;
    }
    /* a chart failure is reported but does not fail the measurement */
    cp_cli_render(outdir, r.doc, o.quiet, 1, &cp_cli_interrupted);
    json_decref(r.doc);
    if (r.failed)
        fprintf(stderr,
                "clusterpipe compare: some runs FAILED (see the table's \"runs\" column "
                "and %s/results.json)\n",
                outdir);
    return r.failed ? CP_EXIT_FAIL : CP_EXIT_OK;
}
