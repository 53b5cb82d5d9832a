/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe scenario reshard|failover`: what Redis Cluster and twemproxy do to live traffic when
 * a shard is added or a server dies. Parses the flags, runs the scenario (src/scenario/: one
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

#include "orch/orch.h"
#include "report/io.h"
#include "scenario/scenario.h"

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
#define MAX_PIDS 512

static void scenario_help(FILE *out) {
    fprintf(out,
            "usage: clusterpipe scenario reshard|failover [--out DIR] [--keys N]\n"
            "                            [--duration S] [--warmup S] [--down S]\n"
            "                            [--ratio SET:GET] [--threads T] [--clients C]\n"
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
            "\n"
            "Measured per second: answered and failed requests, GETs answered nil (misses),\n"
            "stale reads (older than a write already acknowledged), MOVED/ASK redirects. Per\n"
            "case: failed and unknown requests, the error window, the throughput dip against\n"
            "the warm-up median, how long the change took, the share of keys a reshard made\n"
            "unreachable, and acknowledged writes lost (every SET's version is tracked per key;\n"
            "every key is read back at the end). Writes into DIR: results.json, timeline.png,\n"
            "timeline.svg (via gnuplot), report.md.\n"
            "\n"
            "options:\n"
            "  --out DIR          output directory (default\n"
            "                     results/scenario-<name>-<timestamp>)\n"
            "  --keys N           keys loaded and used (default 200000)\n"
            "  --value-size B     bytes per value (default 100)\n"
            "  --duration S       measured seconds per setup (default 30)\n"
            "  --warmup S         seconds before the change (default 5)\n"
            "  --down S           failover: restart the killed server S seconds after the\n"
            "                     kill, and not before a cluster replica took over (default 8)\n"
            "  --ratio SET:GET    mix of the load (default 1:9)\n"
            "  --threads T        client threads (default 4)\n"
            "  --clients C        connections in total (default 16)\n"
            "  --pipeline P       requests in flight per connection (default 4)\n"
            "  --retry-budget MS  the client's per-batch retry budget (default: the library's,\n"
            "                     3000 ms); 0 surfaces every error at once\n"
            "  --only SETUP       run only the cluster or only the twemproxy case(s)\n"
            "  --persistence      servers keep an append-only file (fsync every second): a\n"
            "                     restarted server comes back with its data (failover default)\n"
            "  --no-persistence   no RDB/AOF, as in the published experiment: a restarted\n"
            "                     server comes back empty (reshard default)\n"
            "  -q, --quiet        no progress lines on stderr\n"
            "\n"
            "Ctrl-C or SIGTERM stops the run and every process it started. Exit status: 0 every\n"
            "case ran to the end (failed requests are a measurement, not a failure), 1 a case\n"
            "could not run to the end or replies did not belong to their key, 2 bad usage.\n");
}

/* Seconds as a decimal > 0 and <= one day. Returns 0, or prints and returns -1. */
static int parse_seconds(const char *flag, const char *v, double *out) {
    char *end = NULL;
    errno = 0;
    double d = v ? strtod(v, &end) : NAN;
    if (v == NULL || *v == '\0' || errno != 0 || *end != '\0' || !(d > 0) || d > 86400) {
        cp_cli_usage_error("scenario", "%s: '%s' is not a number of seconds in (0, 86400]", flag,
                           v ? v : "");
        return -1;
    }
    *out = d;
    return 0;
}

typedef struct cli_ctx {
    int quiet;
    size_t npids;
    pid_t pids[MAX_PIDS];
    unsigned long long starts[MAX_PIDS];
} cli_ctx;

static void log_line(void *ud, const char *line) {
    const cli_ctx *c = ud;
    if (!c->quiet)
        fprintf(stderr, "clusterpipe scenario: %s\n", line);
}

static void on_spawn(void *ud, const cp_proc *p) {
    cli_ctx *c = ud;
    if (c->npids < MAX_PIDS) {
        c->pids[c->npids] = p->pid;
        c->starts[c->npids] = p->start_time;
        c->npids++;
    }
}

/* Parses argv (argv[0] "scenario", argv[1] the scenario) into *o. Returns 0, or an exit code
 * (2 after printing the problem; 0 with *help set). */
static int parse(int argc, char **argv, cp__scn_opts *o, const char **out, int *quiet, int *help) {
    const char *cmd = "scenario";
    if (argc < 2)
        return cp_cli_usage_error(cmd, "which scenario? reshard or failover");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        *help = 1;
        return 0;
    }
    if (strcmp(argv[1], "reshard") == 0)
        cp__scn_opts_init(o, CP__SCN_RESHARD);
    else if (strcmp(argv[1], "failover") == 0)
        cp__scn_opts_init(o, CP__SCN_FAILOVER);
    else
        return cp_cli_usage_error(cmd, "'%s' is not a scenario (reshard or failover)", argv[1]);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        long l;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = 1;
            return 0;
        } else if (cp_cli_flag_value(argc, argv, &i, "--out", &v)) {
            if (v == NULL || *v == '\0')
                return cp_cli_usage_error(cmd, "--out needs a directory");
            *out = v;
        } else if (cp_cli_flag_value(argc, argv, &i, "--keys", &v)) {
            if (cp_cli_parse_long(cmd, "--keys", v, 1, 4000000000L, &l) != 0)
                return CP_EXIT_USAGE;
            o->keys = (uint64_t)l;
        } else if (cp_cli_flag_value(argc, argv, &i, "--value-size", &v)) {
            if (cp_cli_parse_long(cmd, "--value-size", v, 1, 512L * 1024 * 1024, &l) != 0)
                return CP_EXIT_USAGE;
            o->value_size = (size_t)l;
        } else if (cp_cli_flag_value(argc, argv, &i, "--duration", &v)) {
            if (parse_seconds("--duration", v, &o->duration_s) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--warmup", &v)) {
            if (parse_seconds("--warmup", v, &o->warmup_s) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--down", &v)) {
            if (parse_seconds("--down", v, &o->down_s) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--ratio", &v)) {
            if (v == NULL || cp__ratio_parse(v, &o->ratio_set, &o->ratio_get) != 0)
                return cp_cli_usage_error(cmd, "--ratio: '%s' is not SET:GET", v ? v : "");
        } else if (cp_cli_flag_value(argc, argv, &i, "--threads", &v)) {
            if (cp_cli_parse_int(cmd, "--threads", v, 1, 1024, &o->threads) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--clients", &v)) {
            if (cp_cli_parse_int(cmd, "--clients", v, 1, 100000, &o->clients) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--pipeline", &v)) {
            if (cp_cli_parse_int(cmd, "--pipeline", v, 1, 100000, &o->pipeline) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--retry-budget", &v)) {
            if (cp_cli_parse_int(cmd, "--retry-budget", v, 0, 3600000, &o->retry_budget_ms) != 0)
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--only", &v)) {
            if (v == NULL || (strcmp(v, "cluster") != 0 && strcmp(v, "twemproxy") != 0))
                return cp_cli_usage_error(cmd, "--only: '%s' is not cluster or twemproxy",
                                          v ? v : "");
            o->only = v;
        } else if (strcmp(a, "--persistence") == 0) {
            o->persistence = 1;
        } else if (strcmp(a, "--no-persistence") == 0) {
            o->persistence = 0;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            *quiet = 1;
        } else {
            return cp_cli_usage_error(cmd, "unknown option '%s'", a);
        }
    }
    char err[ERRLEN];
    if (cp__scn_opts_check(o, err, sizeof(err)) != 0)
        return cp_cli_usage_error(cmd, "%s", err);
    return 0;
}

/* A value of the case's summary, NaN when absent. */
static double sum_num(const json_t *c, const char *key) {
    const json_t *v = json_object_get(json_object_get(c, "summary"), key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* One line per case on stdout: the numbers a reader looks for first. */
static void print_cases(const json_t *doc) {
    int reshard = strcmp(json_string_value(json_object_get(doc, "scenario")), "reshard") == 0;
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
               name, reshard ? "change took" : "server back after", sum_num(c, "event_seconds"),
               sum_num(c, "failed_ops"), sum_num(c, "unknown_ops"), sum_num(c, "mismatches"),
               sum_num(c, "misses"), sum_num(c, "stale_reads"), sum_num(c, "dip") * 100);
        if (json_is_object(w))
            printf(", errors for %.2f s", json_number_value(json_object_get(w, "seconds")));
        if (reshard && !isnan(sum_num(c, "miss_fraction_keys")))
            printf(", keys unreachable %.1f%%", sum_num(c, "miss_fraction_keys") * 100);
        if (!isnan(sum_num(c, "acked_writes_lost")))
            printf(", acked writes lost %.0f", sum_num(c, "acked_writes_lost"));
        if (json_is_string(err))
            printf(" [ERROR: %s]", json_string_value(err));
        printf("\n");
    }
}

int cp_cli_scenario(int argc, char **argv) {
    cp__scn_opts o;
    const char *out = NULL;
    int quiet = 0, help = 0;
    int rc = parse(argc, argv, &o, &out, &quiet, &help);
    if (rc != 0)
        return rc;
    if (help) {
        scenario_help(stdout);
        return CP_EXIT_OK;
    }
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
    if (cp_cli_make_dirs(outdir, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe scenario: %s\n", err);
        return CP_EXIT_FAIL;
    }
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
    /* belt and braces: every PID seen spawning must be gone */
    for (size_t i = 0; i < ctx.npids; i++)
        if (cp_orch_pid_alive(ctx.pids[i], ctx.starts[i])) {
            fprintf(stderr, "clusterpipe scenario: process %ld still running after teardown\n",
                    (long)ctx.pids[i]);
            failed = 1;
        }
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
