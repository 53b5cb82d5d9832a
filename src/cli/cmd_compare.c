/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe compare`: the flags, the output directory, progress on stderr, results.json and
 * the table, and exit codes around the compare experiment (src/compare/compare.h), which runs
 * every setup and builds the "clusterpipe.compare/1" document without printing. Once it returns,
 * results.json is written here and handed to cp_cli_render (cmd_report.c) for table.md, charts
 * and report.md.
 *
 * Processes: the experiment starts every server ephemeral from this (the main) thread and stops
 * it by PID after its setup, on failure, and on SIGINT/SIGTERM/SIGHUP (the signal flag it polls
 * through opts.cancel); every spawn is recorded here and checked gone at the end. Ownership: the
 * document comes from cp__compare_run and is freed here. Single-threaded (the engine runs its
 * workers inside the experiment). Results go to stdout, progress and errors to stderr. Exit codes:
 * 0 ok, 1 a run failed (errors, mismatches, interrupted), 2 bad usage.
 */
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/flagsets.h"

#include "clusterpipe/clusterpipe.h"
#include "compare/compare.h"
#include "util/jsonfile.h"
#include "bench/load.h"

#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CP_VERSION
#define CP_VERSION "unknown"
#endif

#define ERRLEN 4096

typedef struct compare_cli {
    cp__compare_opts o;
    const char *out;
    int quiet;
    int progress_shown; /* a live progress line is on the terminal */
    cp_cli_pids pids;   /* every process the experiment started */
    cp__placement placement;
    cp__sweep sweep;
    cp_cli_commands cmds;
} compare_cli;

static int parse_sweep(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    char err[512];
    cp__sweep *s = dst;
    if (s->param != CP__SWEEP_NONE)
        return cp_cli_flag_error(cmd, f, "one sweep per run (already %s)",
                                 cp__sweep_param_name(s->param));
    if (cp__sweep_parse(s, val, err, sizeof(err)) != 0)
        return cp_cli_flag_error(cmd, f, "%s", err);
    return 0;
}

static int parse_setups(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    char err[512];
    if (cp__cmp_setups_parse(val, dst, err, sizeof(err)) != 0)
        return cp_cli_flag_error(cmd, f, "%s", err);
    return 0;
}

static int parse_cpus(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    char err[512];
    if (cp__placement_parse(dst, val, err, sizeof(err)) != 0)
        return cp_cli_flag_error(cmd, f, "%s", err);
    return 0;
}

static int parse_proxy_side(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    char err[512];
    if (cp__placement_parse_side(dst, val, err, sizeof(err)) != 0)
        return cp_cli_flag_error(cmd, f, "%s", err);
    return 0;
}

/* --quick, --full, --large: applied before every other flag (which override them), and only
 * one of them. */
static int preset_action(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    (void)val;
    cp__compare_opts *o = dst;
    const cp__compare_preset *p = cp__compare_preset_find(f->name + 2);
    if (o->preset != NULL && strcmp(o->preset, p->name) != 0) {
        cp_cli_usage_error(cmd, "--%s and --%s are exclusive", o->preset, p->name);
        return -1;
    }
    cp__compare_opts_init(o, p);
    return 0;
}

#define CO(field) offsetof(compare_cli, o.field)
/* The two adjacent fields --ratio fills (flagsets.h). */
_Static_assert(offsetof(cp__compare_opts, ratio_get) ==
                   offsetof(cp__compare_opts, ratio_set) + sizeof(unsigned),
               "ratio_set, ratio_get adjacent");
#define PRESET(flag, text)                                                                         \
    {                                                                                              \
        .name = flag, .kind = CP_CLI_ACTION, .parse = preset_action,                               \
        .off = offsetof(compare_cli, o), .opts = CP_CLI_FIRST, .help = text                        \
    }

static const cp_cli_flag compare_rows[] = {
    CP_CLI_HEAD("presets (flags below override any preset value):"),
    PRESET("--quick", "default: 10 threads, 10 connections, 100,000 GETs per case,\n100,000 keys "
                      "of 100 bytes, every case 3 times (under a\nminute on 2 cores)"),
    PRESET("--full", "the published scale: 10 threads x 1,000,000 GETs each\n(10,000,000 per "
                     "case) over 100,000 keys"),
    PRESET("--large",
           "20,000,000 keys of 100 bytes (several GB of RAM per setup,\nminutes of "
           "loading), 10,000,000 GETs per case. Above\n100,000 keys every setup first "
           "loads 100,000, measures\nthe memory per key and refuses a dataset that would "
           "not\nfit; every load is checked (DBSIZE, the first 100,000\nkeys read back) "
           "and costed (memory per key, client RSS)"),
    CP_CLI_HEAD("options:"),
    CP_CLI_LIKE(cp_cli_def_out, offsetof(compare_cli, out),
                "output directory (default results/<timestamp>)"),
    CP_CLI_NUM("--repeat", "K", CP_CLI_INT, 1, CP__COMPARE_REPEAT_MAX, CO(repeat),
               "run each case K times (quick: 3, full/large: 1); the table\nshows medians and "
               "[min-max], the report says which\ndifferences are inside the noise"),
    CP_CLI_LIKE(cp_cli_def_threads, CO(threads), "client threads (default 10)"),
    CP_CLI_LIKE(cp_cli_def_clients, CO(clients),
                "connections in total, spread over the threads (default:\none per thread)"),
    CP_CLI_LIKE(
        cp_cli_def_pipeline, CO(pipeline),
        "requests in flight per connection for pipelined GET\n(default 10; plain GET always "
        "uses 1)"),
    CP_CLI_LIKE(cp_cli_def_requests, CO(requests), "GETs per case, all threads together"),
    {.like = &cp_cli_def_dataset_keys,
     .off = CO(keys),
     .arg = "K",
     .help = "dataset size, keys key:0 .. key:K-1"},
    CP_CLI_LIKE(cp_cli_def_value_size, CO(value_size),
                "bytes per value: B, MIN-MAX or SIZE:WEIGHT,... (default\n100; a key's size is the "
                "same in the load and the GETs)"),
    CP_CLI_LIKE(cp_cli_def_key_dist, CO(dist),
                "uniform (default), sequential, zipf:S, gaussian or\ngaussian:C,S (centre C, "
                "spread S, in keys)"),
    CP_CLI_LIKE(cp_cli_def_ratio, CO(ratio_set),
                "SET:GET mix of every case (default 0:1, GETs only; the\ncall types are then "
                "named \"SET:GET 1:4\")"),
    CP_CLI_LIKE(cp_cli_def_no_verify, CO(verify), NULL),
    {.kind = CP_CLI_INCLUDE, .include = cp_cli_command_flags, .off = offsetof(compare_cli, cmds)},
    {.like = &cp_cli_def_cluster,
     .off = CO(cluster_eps),
     .arg = "H:P,...",
     .help = "use this existing Redis Cluster instead of starting one"},
    {.like = &cp_cli_def_proxy,
     .off = CO(proxy_eps),
     .arg = "H:P,...",
     .help = "use these existing twemproxy endpoints instead of starting\nthem. With either, "
             "nothing is started, only the given\nsetups run, the dataset is WRITTEN into them "
             "(SET key:N),\nredis CPU comes from INFO CPU and proxy CPU is n/a"},
    CP_CLI_LIKE(cp_cli_def_password, CO(password), "AUTH for --cluster/--proxy endpoints"),
    CP_CLI_SET("--replica-reads", CP_CLI_BOOL, 1, CO(replica_reads),
               "a third setup after the cluster, \"cluster-replicas\": the\nsame 4 masters "
               "with a replica each, the dataset on the\nreplicas too, every case reading from "
               "the replicas\n(bench --read-from replica). The tables split its redis\nCPU "
               "into masters and replicas, beside the cluster's\nmasters. Local setups only "
               "(not with --cluster/--proxy)"),
    CP_CLI_NUM("--protocol", "N", CP_CLI_INT, 2, 3, CO(protocol),
               "RESP version of the cluster setups' clients: 2 (default)\nor 3, so that "
               "cluster and cluster-cached differ by the\ncache alone (cluster-cached always "
               "speaks 3, twemproxy 2)"),
    CP_CLI_FN("--setups", "LIST", parse_setups, CO(setups),
              "the setups to run, in this order whatever LIST's:\ntwemproxy, cluster, "
              "cluster-replicas (as --replica-reads),\ncluster-cached (the cluster, every "
              "client with a\nclient-side cache: RESP3, CLIENT TRACKING; its runs report\n"
              "the hit ratio and invalidations, and the tables set it\nbeside the cluster's) "
              "(default: twemproxy,cluster). With\n--cluster/--proxy, cluster and "
              "cluster-cached use --cluster"),
    CP_CLI_HEAD("sweeps:"),
    CP_CLI_FN("--sweep", "PARAM=V,...", parse_sweep, offsetof(compare_cli, sweep),
              "run one case per value of PARAM on both architectures:\n"
              "pipeline=1,2,5,10,20,50 | shards=2,4,8,16 (a setup per\n"
              "point) | value-size=100,1000,10000 (loaded per point) |\n"
              "clients=10,100,1000 (with each server's connections and\n"
              "their memory; the file-descriptor limit is raised as\n"
              "needed) | rtt=0,100us,500us,1ms (the round trip of each\n"
              "link between hosts, as --rtt, up to 1s: a setup per\n"
              "point, no wire at 0; not with --rtt). The other settings\n"
              "stay as given; charts of CPU us/op per component, ops/s\n"
              "and p99 (rtt: also p50) against PARAM"),
    CP_CLI_HEAD("placement:"),
    CP_CLI_FN("--cpus", "SPEC", parse_cpus, offsetof(compare_cli, placement),
              "pin each component to CPUs (sched_setaffinity): SPEC is\n"
              "redis=LIST,proxy=LIST,client=LIST (each optional, LIST as\n"
              "taskset -c: 0-3,8), or 2core: redis on CPU 0, the client\n"
              "on CPU 1, the proxies as --proxy-placement says. The\n"
              "report records the CPUs every process and the client's\n"
              "threads really had, and warns on overlaps and on more\n"
              "processes than CPUs"),
    CP_CLI_FN("--proxy-placement", "SIDE", parse_proxy_side, offsetof(compare_cli, placement),
              "servers (default: nutcracker on the redis CPUs, the\n"
              "published setup) or clients (a sidecar on the client's\n"
              "CPUs); with --cpus, instead of proxy=LIST. With --rtt\n"
              "or --sweep rtt it is also the proxies' host (then\n"
              "without --cpus too), and tier puts the proxies on hosts\n"
              "of their own (both links cross)"),
    CP_CLI_HEAD("network:"),
    CP_CLI_LIKE(cp_cli_def_rtt, offsetof(compare_cli, o.rtt_ns),
                "the setups' links between hosts go through a wire\n"
                "adding D of round trip (J: jitter around it), as 'up\n"
                "--rtt'; every redis-server is a host, the client one\n"
                "more. The wire's CPU is its own component, in no total"),
    CP_CLI_HEAD("output:"),
    CP_CLI_LIKE(cp_cli_def_quiet, offsetof(compare_cli, quiet), NULL),
    CP_CLI_END,
};

static const cp_cli_cmd compare_cmd = {
    .rows = compare_rows,
    .name = "compare",
    .usage = "usage: clusterpipe compare [--quick | --full | --large] [--out DIR] [--repeat K]\n"
             "                           [--cluster HOST:PORT,... --proxy HOST:PORT,...]\n"
             "                           [--threads T] [--clients C] [--pipeline P]\n"
             "                           [--requests N] [--keys K]\n"
             "                           [--value-size B|MIN-MAX|SIZE:WEIGHT,...]\n"
             "                           [--key-dist uniform|zipf:S|sequential|gaussian[:C,S]]\n"
             "                           [--no-verify] [--command T ... [--command-ratio W,...]]\n"
             "                           [--replica-reads] [--ratio SET:GET] [--protocol 2|3]\n"
             "                           [--setups twemproxy,cluster,cluster-replicas,...]\n"
             "                           [--cpus 2core|redis=LIST,proxy=LIST,client=LIST]\n"
             "                           [--proxy-placement servers|clients|tier]\n"
             "                           [--rtt D[~J]]\n"
             "                           [--sweep pipeline|shards|value-size|clients|rtt=V,...]\n"
             "\n"
             "Twemproxy or Redis Cluster? Reproduces the published experiment on this machine:\n"
             "starts twemproxy (4 redis-server + 4 nutcracker) on 127.0.0.1, loads the dataset,\n"
             "runs GET and pipelined GET, stops it, then does the same with a 4-master Redis\n"
             "Cluster, one setup at a time so they never share the CPU. Prints the table (time,\n"
             "Redis / client / twemproxy / total CPU-seconds, ops/s, p50/p99, CPU us per op, and\n"
             "the cluster/twemproxy ratio per call type; with --command the cases run those\n"
             "commands, plain and pipelined, and a table per command follows) and writes into\n"
             "DIR: results.json,\n"
             "latency/*.hgrm (every run's latency distribution, HdrHistogram's text),\n"
             "table.md, charts (PNG and SVG, drawn with gnuplot) and report.md.\n"
             "\n",
    .epilog = "\n"
              "Ctrl-C or SIGTERM stops the run and every process it started. Exit status: 0 "
              "ok,\n1 a run failed (failed requests, unknown outcomes, mismatched replies, a "
              "setup\nthat did not start, interrupted), 2 bad usage.\n",
    .width = 21,
};

/* ---- progress on stderr ----------------------------------------------------------------------
 */

/* A line that follows a live progress line replaces it. */
static void clear_progress(compare_cli *c) {
    if (c->progress_shown)
        fprintf(stderr, "\r%72s\r", "");
    c->progress_shown = 0;
}

static void log_line(void *ud, const char *line) {
    compare_cli *c = ud;
    clear_progress(c);
    if (!c->quiet)
        fprintf(stderr, "clusterpipe compare: %s\n", line);
}

static void warn_line(void *ud, const char *line) {
    compare_cli *c = ud;
    clear_progress(c);
    fprintf(stderr, "clusterpipe compare: %s\n", line);
}

/* A live progress line on a terminal only; logs and pipes get the per-run summary instead. */
static void bench_progress(void *ud, const cp__bench_progress *p) {
    compare_cli *c = ud;
    if (c->quiet || !isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r  %5.1f%%  %10.0f ops/s  p99 %8.0f us  errors %" PRIu64 "   ",
            p->fraction * 100, p->ops_per_sec, p->p99_us, p->errors + p->mismatches);
    c->progress_shown = 1;
}

static void load_progress(void *ud, const cp__load_progress *p) {
    compare_cli *c = ud;
    if (c->quiet || !isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r  loaded %" PRIu64 " / %" PRIu64 " keys (%.0f keys/s)   ", p->done, p->total,
            p->rate);
    c->progress_shown = 1;
}

static void on_spawn(void *ud, const cp_proc *p) {
    cp_cli_pids_add(&((compare_cli *)ud)->pids, p->pid, p->start_time);
}

static int run_compare(compare_cli *c, int argc, char **argv);

int cp_cli_compare(int argc, char **argv) {
    static compare_cli c; /* static: the hooks' state; one compare per process */
    memset(&c, 0, sizeof(c));
    cp__compare_opts_init(&c.o, NULL);
    cp__placement_init(&c.placement);
    c.o.preset = NULL; /* set by a preset flag; quick when none */
    cp_cli_seen seen;
    int rc = cp_cli_parse(&compare_cmd, argc, argv, 1, &c, &seen);
    if (rc != CP_CLI_GO)
        return rc;
    if (c.o.preset == NULL)
        c.o.preset = "quick";
    if (!cp_cli_given(&seen, "--clients")) /* one connection per thread, as published */
        c.o.clients = c.o.threads;
    if (c.o.setups != 0 && c.o.replica_reads) /* --replica-reads adds its setup to the list */
        c.o.setups |= CP__CMP_SETUP_REPLICAS;
    char err[ERRLEN] = "";
    c.placement.hosts = c.o.rtt_ns > 0 || c.sweep.param == CP__SWEEP_RTT;
    if (cp__placement_resolve(&c.placement, err, sizeof(err)) != 0)
        return cp_cli_usage_error("compare", "%s", err);
    c.o.placement = &c.placement;
    c.o.sweep = &c.sweep;
    /* The wire is this very program, run as `clusterpipe wire`. */
    static char self[PATH_MAX];
    ssize_t selflen = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if ((c.o.rtt_ns > 0 || c.sweep.param == CP__SWEEP_RTT) && selflen > 0) {
        self[selflen] = '\0';
        c.o.clusterpipe = self;
    }
    cp__cmdset *cmds = NULL;
    rc = cp_cli_commands_build("compare", &c.cmds, &cmds);
    if (rc != CP_EXIT_OK)
        return rc;
    c.o.commands = cmds;
    rc = run_compare(&c, argc, argv);
    cp__cmdset_free(cmds);
    return rc;
}

/* compare once the flags are parsed (c->o.commands built, owned by the caller). */
static int run_compare(compare_cli *c, int argc, char **argv) {
    char err[ERRLEN] = "";
    int rc;
    if (cp__compare_opts_check(&c->o, err, sizeof(err)) != 0)
        return cp_cli_usage_error("compare", "%s", err);

    char outdir[4096];
    if (c->out) {
        snprintf(outdir, sizeof(outdir), "%s", c->out);
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
    char hgrm_dir[4200];
    snprintf(hgrm_dir, sizeof(hgrm_dir), "%s/latency", outdir);
    if (cp_cli_make_dirs(hgrm_dir, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe compare: %s\n", err);
        return CP_EXIT_FAIL;
    }
    c->o.hgrm_dir = hgrm_dir;
    cp_cli_install_signals();
    char command[8192];
    cp_cli_join_command(argc, argv, command, sizeof(command));
    c->o.command_line = command;
    c->o.version = CP_VERSION;
    c->o.log = c->quiet ? NULL : log_line;
    c->o.warn = warn_line;
    c->o.bench_progress = bench_progress;
    c->o.load_progress = load_progress;
    c->o.on_spawn = on_spawn;
    c->o.ud = c;
    c->o.cancel = &cp_cli_interrupted;

    json_t *doc = NULL;
    rc = cp__compare_run(&c->o, &doc, err, sizeof(err));
    clear_progress(c);
    if (doc == NULL) {
        fprintf(stderr, "clusterpipe compare: %s\n", err[0] ? err : cp_strerror(rc));
        return rc == CP_EINVAL ? CP_EXIT_USAGE : CP_EXIT_FAIL;
    }
    int failed = rc != 0;
    if (cp_cli_pids_check(&c->pids, "compare") > 0) {
        failed = 1;
        json_object_set_new(doc, "failed", json_true());
    }
    if (cp_cli_interrupted)
        fprintf(stderr,
                "clusterpipe compare: interrupted by signal %d; everything started was "
                "stopped\n",
                (int)cp_cli_interrupted);
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", outdir);
    if (cp__json_write_file(path, doc, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe compare: %s\n", err);
        json_decref(doc);
        return CP_EXIT_FAIL;
    }
    /* a chart failure is reported but does not fail the measurement */
    cp_cli_render(outdir, doc, c->quiet, 1, &cp_cli_interrupted);
    json_decref(doc);
    if (failed)
        fprintf(stderr,
                "clusterpipe compare: some runs FAILED (see the table's \"runs\" column "
                "and %s/results.json)\n",
                outdir);
    return failed ? CP_EXIT_FAIL : CP_EXIT_OK;
}
