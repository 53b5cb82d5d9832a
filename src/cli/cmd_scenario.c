/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe scenario reshard|failover|partition|slow-link`: what Redis Cluster and twemproxy do
 * to live traffic when a shard is added, a server dies, or a link of the emulated network is cut
 * or slowed. Parses the flags, runs the scenario (src/scenario/: one
 * topology at a time, started ephemeral from this thread and stopped by PID after its case, on
 * failure and on SIGINT/SIGTERM/SIGHUP), writes results.json ("clusterpipe.scenario/1"), the
 * timeline chart and report.md into the output directory (each atomically), prints a line per case
 * and the report's path on stdout; progress and errors go to stderr.
 *
 * Ownership: the results document is created by the scenario layer and freed here. Threads: this
 * is the main thread, which owns every server process; the scenario layer runs the bench engine in
 * one extra thread per case. Exit codes: 0 every case ran to the end with verified replies, 1 a
 * case could not run to the end (a setup that did not start, a failed load or event, wrong
 * replies, a process left running, interrupted), 2 bad usage.
 */
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/flagsets.h"

#include "orch/orch.h"
#include "report/io.h"
#include "scenario/scenario.h"
#include "util/dur.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CP_VERSION
#define CP_VERSION "unknown"
#endif

#define ERRLEN 4096

/* Seconds as a decimal > 0 and <= one day. */
static int parse_seconds(const char *cmd, const cp_cli_flag *f, const char *v, void *dst) {
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (*v == '\0' || errno != 0 || *end != '\0' || !(d > 0) || d > 86400)
        return cp_cli_flag_error(cmd, f, "'%s' is not a number of seconds in (0, 86400]", v);
    *(double *)dst = d;
    return 0;
}

/* A duration with its unit, > 0 (slow-link's --delay). */
static int parse_delay(const char *cmd, const cp_cli_flag *f, const char *v, void *dst) {
    uint64_t ns;
    if (cp__dur_parse(v, &ns) != 0 || ns == 0)
        return cp_cli_flag_error(cmd, f, "'%s': expected a duration > 0 with its unit (50ms, 1s)",
                                 v);
    *(uint64_t *)dst = ns;
    return 0;
}

static int parse_only(const char *cmd, const cp_cli_flag *f, const char *v, void *dst) {
    if (strcmp(v, "cluster") != 0 && strcmp(v, "twemproxy") != 0)
        return cp_cli_flag_error(cmd, f, "'%s' is not cluster or twemproxy", v);
    *(const char **)dst = v;
    return 0;
}

/* The two adjacent fields --ratio fills (flagsets.h). */
_Static_assert(offsetof(cp__scn_opts, ratio_get) ==
                   offsetof(cp__scn_opts, ratio_set) + sizeof(unsigned),
               "ratio_set, ratio_get adjacent");

typedef struct scenario_cli {
    cp__scn_opts o;
    const char *out;
    int quiet;
    cp_cli_commands cmds;
    cp__cmdset *set; /* built from cmds (freed by the caller of parse) */
} scenario_cli;

#define SO(field) offsetof(scenario_cli, o.field)
#define SECONDS(flag, field, text)                                                                 \
    {                                                                                              \
        .name = flag, .arg = "S", .kind = CP_CLI_PARSE, .parse = parse_seconds, .off = SO(field),  \
        .help = text                                                                               \
    }

static const cp_cli_flag scenario_rows[] = {
    CP_CLI_LIKE(cp_cli_def_out, offsetof(scenario_cli, out),
                "output directory (default\nresults/scenario-<name>-<timestamp>)"),
    CP_CLI_LIKE(cp_cli_def_dataset_keys, SO(keys), "keys loaded and used (default 200000)"),
    CP_CLI_LIKE(cp_cli_def_value_size, SO(value_size),
                "bytes per value: B, MIN-MAX or SIZE:WEIGHT,...\n(default 100)"),
    CP_CLI_LIKE(cp_cli_def_key_dist, SO(dist), NULL),
    SECONDS("--duration", duration_s, "measured seconds per setup (default 30)"),
    SECONDS("--warmup", warmup_s, "seconds before the change (default 5)"),
    SECONDS("--down", down_s,
            "failover: restart the killed server S seconds after the\nkill, and not before a "
            "cluster replica took over;\npartition, slow-link: how long the fault lasts "
            "(default 8)"),
    CP_CLI_FN("--delay", "D", parse_delay, SO(delay_ns),
              "slow-link: added to the link each way (default 50ms)"),
    CP_CLI_LIKE(cp_cli_def_rtt, SO(rtt_ns),
                "every setup's links between hosts go through the wire\n(as 'up --rtt'); "
                "partition and slow-link always have\none, by default of 100us"),
    CP_CLI_LIKE(cp_cli_def_ratio, SO(ratio_set), "mix of the load (default 1:9)"),
    {.kind = CP_CLI_INCLUDE, .include = cp_cli_command_flags, .off = offsetof(scenario_cli, cmds)},
    CP_CLI_LIKE(cp_cli_def_threads, SO(threads), "client threads (default 4)"),
    CP_CLI_LIKE(cp_cli_def_clients, SO(clients), "connections in total (default 16)"),
    CP_CLI_LIKE(cp_cli_def_pipeline, SO(pipeline), "requests in flight per connection (default 4)"),
    CP_CLI_LIKE(cp_cli_def_retry_budget, SO(retry_budget_ms),
                "the client's per-batch retry budget (default: the library's,\n3000 ms); 0 "
                "surfaces every error at once"),
    CP_CLI_FN("--only", "SETUP", parse_only, SO(only),
              "run only the cluster or only the twemproxy case(s)"),
    CP_CLI_SET("--persistence", CP_CLI_SWITCH, 1, SO(persistence),
               "servers keep an append-only file (fsync every second): a\nrestarted server comes "
               "back with its data (failover default)"),
    CP_CLI_SET("--no-persistence", CP_CLI_SWITCH, 0, SO(persistence),
               "no RDB/AOF, as in the published experiment: a restarted\nserver comes back empty "
               "(reshard default)"),
    CP_CLI_LIKE(cp_cli_def_quiet, offsetof(scenario_cli, quiet), NULL),
    CP_CLI_END,
};

static const cp_cli_cmd scenario_cmd = {
    .name = "scenario",
    .usage = "usage: clusterpipe scenario reshard|failover|partition|slow-link\n"
             "                            [--out DIR] [--keys N]\n"
             "                            [--duration S] [--warmup S] [--down S]\n"
             "                            [--rtt D[~J]] [--delay D]\n"
             "                            [--ratio SET:GET | --command T ...]\n"
             "                            [--command-ratio W,...] [--threads T] [--clients C]\n"
             "                            [--pipeline P] [--value-size B] [--retry-budget MS]\n"
             "                            [--only cluster|twemproxy]\n"
             "                            [--persistence | --no-persistence] [-q]\n"
             "\n"
             "What each architecture does to live traffic when the topology changes. For each\n"
             "setup, one at a time on 127.0.0.1: start it, load N keys, run a verified SET:GET\n"
             "load for the duration, change the topology after the warm-up, read every key\n"
             "back, stop it.\n"
             "\n"
             "  reshard    add a fifth shard. Redis Cluster (4 masters): a new master, and a\n"
             "             fifth of the slots move to it live, from each master. twemproxy (4\n"
             "             redis-server + 4 nutcracker, ketama): a fifth server in every\n"
             "             proxy's config, proxies restarted one by one (nutcracker cannot\n"
             "             reload or move keys).\n"
             "  failover   kill -9 one master of a 4-master cluster with one replica each, and\n"
             "             one server of twemproxy with auto_eject_hosts true, then false;\n"
             "             restart it --down seconds later.\n"
             "  partition  on the emulated network (the wire, as 'up --rtt'), one link carries\n"
             "             nothing for --down seconds, its connections left open, then heals:\n"
             "             the client's link to one master of a 4-master cluster with a\n"
             "             replica each, closed then open loop (the same wire port carries\n"
             "             that master's replication;\n"
             "             the cluster bus is direct, so no failover follows), and one\n"
             "             proxy's link to one redis of twemproxy, with nutcracker's timeout:\n"
             "             500 ms, then without one.\n"
             "  slow-link  the same link gains --delay each way for --down seconds.\n"
             "             Both need the wire: without --rtt its round trip is 100us. Both\n"
             "             probe every shard through the faulted path with a GET every 50 ms\n"
             "             during the fault, and report each shard's p99 and the load's p99\n"
             "             in the seconds wholly inside the fault (the cluster's: the other\n"
             "             masters', since none can reach the blocked one), the time to\n"
             "             recover and the link's bytes during and after the fault.\n"
             "\n"
             "Measured per second: answered and failed requests, GETs answered nil (misses),\n"
             "stale reads (older than a write already acknowledged), MOVED/ASK redirects. Per\n"
             "case: failed and unknown requests, the error window, the throughput dip against\n"
             "the warm-up median, how long the change took, the share of keys a reshard made\n"
             "unreachable, and acknowledged writes lost (every SET's version is tracked per key;\n"
             "every key is read back at the end). With --command the load runs those commands\n"
             "instead (no versions are tracked and nothing is read back: no stale reads or lost\n"
             "writes). Writes into DIR: results.json, timeline.png, timeline.svg (via gnuplot,\n"
             "the clients' lifecycle events marked at the top: disconnects, map changes,\n"
             "failovers; each case's bench.events in results.json), report.md.\n"
             "\n",
    .options = "options:",
    .rows = scenario_rows,
    .epilog = "\n"
              "Ctrl-C or SIGTERM stops the run and every process it started. Exit status: 0 "
              "every\ncase ran to the end (failed requests are a measurement, not a failure), 1 "
              "a case\ncould not run to the end or replies did not belong to their key, 2 bad "
              "usage.\n",
    .width = 21,
};

typedef struct cli_ctx {
    int quiet;
    cp_cli_pids pids;
} cli_ctx;

static void log_line(void *ud, const char *line) {
    const cli_ctx *c = ud;
    if (!c->quiet)
        fprintf(stderr, "clusterpipe scenario: %s\n", line);
}

static void on_spawn(void *ud, const cp_proc *p) {
    cp_cli_pids_add(&((cli_ctx *)ud)->pids, p->pid, p->start_time);
}

/* Parses argv (argv[0] "scenario", argv[1] the scenario) into *c. Returns CP_CLI_GO, or the
 * exit code to return (after the help or a usage error). */
static int parse(int argc, char **argv, scenario_cli *c) {
    const char *cmd = "scenario";
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        cp_cli_help(&scenario_cmd, stdout);
        return CP_EXIT_OK;
    }
    if (argc < 2)
        return cp_cli_usage_error(cmd, "which scenario? reshard, failover, partition or slow-link");
    static const cp__scn_kind kinds[] = {CP__SCN_RESHARD, CP__SCN_FAILOVER, CP__SCN_PARTITION,
                                         CP__SCN_SLOW_LINK};
    size_t k = 0;
    while (k < sizeof(kinds) / sizeof(kinds[0]) &&
           strcmp(argv[1], cp__scn_kind_name(kinds[k])) != 0)
        k++;
    if (k == sizeof(kinds) / sizeof(kinds[0]))
        return cp_cli_usage_error(
            cmd, "'%s' is not a scenario (reshard, failover, partition or slow-link)", argv[1]);
    cp__scn_opts_init(&c->o, kinds[k]);
    cp_cli_seen seen;
    int rc = cp_cli_parse(&scenario_cmd, argc, argv, 2, c, &seen);
    if (rc != CP_CLI_GO)
        return rc;
    if (c->cmds.n > 0 && cp_cli_given(&seen, "--ratio"))
        return cp_cli_usage_error(cmd, "--ratio is the SET:GET mix: with --command, give the "
                                       "commands' weights with --command-ratio");
    rc = cp_cli_commands_build(cmd, &c->cmds, &c->set);
    if (rc != CP_EXIT_OK)
        return rc;
    c->o.commands = c->set;
    char err[ERRLEN];
    if (cp__scn_opts_check(&c->o, err, sizeof(err)) != 0)
        return cp_cli_usage_error(cmd, "%s", err);
    if (!cp__scn_kind_wire(c->o.kind) && cp_cli_given(&seen, "--delay"))
        return cp_cli_usage_error(cmd, "--delay is slow-link's");
    /* The wire is this very program, run as `clusterpipe wire`. */
    static char self[PATH_MAX];
    ssize_t selflen = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (c->o.rtt_ns > 0 && selflen > 0) {
        self[selflen] = '\0';
        c->o.clusterpipe = self;
    }
    return CP_CLI_GO;
}

/* A value of the case's summary, NaN when absent. */
static double sum_num(const json_t *c, const char *key) {
    const json_t *v = json_object_get(json_object_get(c, "summary"), key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* One line per case on stdout: the numbers a reader looks for first. */
static void print_cases(const json_t *doc) {
    const char *scenario = json_string_value(json_object_get(doc, "scenario"));
    int reshard = strcmp(scenario, "reshard") == 0;
    int wire = strcmp(scenario, "partition") == 0 || strcmp(scenario, "slow-link") == 0;
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(doc, "cases"), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const json_t *err = json_object_get(c, "error");
        if (json_object_get(c, "summary") == NULL) {
            printf("%-20s did not run: %s\n", name,
                   json_is_string(err) ? json_string_value(err) : "no measurement");
            continue;
        }
        const json_t *w = json_object_get(json_object_get(c, "summary"), "error_window");
        printf("%-20s %s %.2f s, failed %.0f, unknown %.0f, wrong %.0f, misses %.0f, stale %.0f, "
               "dip %.0f%%",
               name,
               reshard ? "change took"
               : wire  ? "fault lasted"
                       : "server back after",
               sum_num(c, "event_seconds"), sum_num(c, "failed_ops"), sum_num(c, "unknown_ops"),
               sum_num(c, "mismatches"), sum_num(c, "misses"), sum_num(c, "stale_reads"),
               sum_num(c, "dip") * 100);
        if (json_is_object(w))
            printf(", errors for %.2f s", json_number_value(json_object_get(w, "seconds")));
        if (reshard && !isnan(sum_num(c, "miss_fraction_keys")))
            printf(", keys unreachable %.1f%%", sum_num(c, "miss_fraction_keys") * 100);
        const json_t *fw = json_object_get(json_object_get(c, "summary"), "fault_window");
        const json_t *fp99 = json_object_get(fw, "median_p99_us");
        if (json_is_number(fp99))
            printf(", p99 during the fault %.2f ms", json_number_value(fp99) / 1000);
        const json_t *rec = json_object_get(json_object_get(c, "fault"), "recovered_after");
        if (json_is_number(rec))
            printf(", faulted shard answered %.2f s after the heal", json_number_value(rec));
        if (!isnan(sum_num(c, "acked_writes_lost")))
            printf(", acked writes lost %.0f", sum_num(c, "acked_writes_lost"));
        if (json_is_string(err))
            printf(" [ERROR: %s]", json_string_value(err));
        printf("\n");
    }
}

static int run_scenario(const scenario_cli *sc, int argc, char **argv);

int cp_cli_scenario(int argc, char **argv) {
    static scenario_cli sc; /* static: with the options; one scenario per process */
    memset(&sc, 0, sizeof(sc));
    int rc = parse(argc, argv, &sc);
    if (rc == CP_CLI_GO)
        rc = run_scenario(&sc, argc, argv);
    cp__cmdset_free(sc.set);
    return rc;
}

/* The scenario once parse() has filled sc. */
static int run_scenario(const scenario_cli *sc, int argc, char **argv) {
    cp__scn_opts o = sc->o;
    const char *out = sc->out;
    int quiet = sc->quiet;
    char outdir[4096], err[ERRLEN] = "";
    if (out != NULL) {
        snprintf(outdir, sizeof(outdir), "%s", out);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
        snprintf(outdir, sizeof(outdir), "results/scenario-%s-%s", cp__scn_kind_name(o.kind),
                 stamp);
    }
    char hgrm_dir[4200];
    snprintf(hgrm_dir, sizeof(hgrm_dir), "%s/latency", outdir);
    if (cp_cli_make_dirs(hgrm_dir, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe scenario: %s\n", err);
        return CP_EXIT_FAIL;
    }
    o.hgrm_dir = hgrm_dir;
    cp_cli_install_signals();
    static cli_ctx ctx; /* static: the PID arrays; one scenario per process */
    memset(&ctx, 0, sizeof(ctx));
    ctx.quiet = quiet;
    char command[8192];
    cp_cli_join_command(argc, argv, command, sizeof(command));
    o.command_line = command;
    o.version = CP_VERSION;
    o.log = log_line;
    o.on_spawn = on_spawn;
    o.ud = &ctx;
    o.cancel = &cp_cli_interrupted;

    json_t *doc = NULL;
    int failed = cp__scn_run(&o, &doc) != 0;
    if (cp_cli_pids_check(&ctx.pids, "scenario") > 0)
        failed = 1;
    if (cp_cli_interrupted) {
        fprintf(stderr,
                "clusterpipe scenario: interrupted by signal %d; everything started was stopped\n",
                (int)cp_cli_interrupted);
        failed = 1;
    }
    json_object_set_new(doc, "failed", json_boolean(failed));
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", outdir);
    if (cp__json_write_file(path, doc, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe scenario: %s\n", err);
        json_decref(doc);
        return CP_EXIT_FAIL;
    }
    cp__rpt_chart_opts co = {NULL, 0, &cp_cli_interrupted};
    int charts_ok = 0;
    char chart_err[1024];
    if (cp__scn_render(outdir, doc, &co, &charts_ok, chart_err, sizeof(chart_err), err,
                       sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe scenario: %s\n", err);
        failed = 1;
    }
    if (!charts_ok)
        fprintf(stderr, "clusterpipe scenario: chart not drawn: %s\n", chart_err);
    print_cases(doc);
    printf("report: %s/report.md\n", outdir);
    fflush(stdout);
    if (!quiet)
        fprintf(stderr, "clusterpipe scenario: wrote %s/{results.json,report.md%s}\n", outdir,
                charts_ok ? ",timeline.png,timeline.svg" : "");
    if (failed)
        fprintf(stderr, "clusterpipe scenario: some cases FAILED (see %s/report.md)\n", outdir);
    json_decref(doc);
    return failed ? CP_EXIT_FAIL : CP_EXIT_OK;
}
