/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe plan DIR --rate OPS`: the capacity plan of a compare run (src/report/capacity.h)
 * on stdout, from DIR/results.json: the cores each architecture needs per component for that
 * rate, for the measured workload or the measured point closest to the one described by
 * --pipeline / --clients / --value-size / --shards, with its assumptions; with --rtt D, each
 * setup's latency and throughput at D predicted from its runs at RTT 0 (src/report/rttmodel.h),
 * and the connections the rate needs. Reads one file, writes nothing. Errors on stderr. Exit codes:
 * 0 ok, 1 DIR/results.json unreadable or nothing to plan from, 2 bad usage. Single-threaded.
 */
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/flagsets.h"

#include "bench/keyspace.h"
#include "bench/limits.h"
#include "report/capacity.h"
#include "report/io.h"
#include "report/rttmodel.h"
#include "util/dur.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 4096

typedef struct plan_cli {
    cp__plan_opts o;
    cp__value_sizes value_size; /* zeroed: not given (mean 0) */
    uint64_t rtt_ns;            /* --rtt; NO_RTT: not given */
} plan_cli;

#define NO_RTT UINT64_MAX

static int parse_rtt(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    if (cp__dur_parse(val, dst) != 0)
        return cp_cli_flag_error(cmd, f, "'%s': expected a duration with its unit (250us, 1ms)",
                                 val);
    return 0;
}

#define PO(field) offsetof(plan_cli, o.field)

static const cp_cli_flag plan_rows[] = {
    {.name = "--rate",
     .arg = "OPS",
     .kind = CP_CLI_DOUBLE,
     .dmin = 1,
     .dmax = 1e12,
     .off = PO(rate),
     .opts = CP_CLI_REQUIRED,
     .help = "operations per second to plan for (required)"},
    {.name = "--target-util",
     .arg = "U",
     .kind = CP_CLI_DOUBLE,
     .dmin = 0.01,
     .dmax = 1,
     .off = PO(target_util),
     .help = "share of each core a component may use, in (0, 1]\n(default 0.6: 40% headroom)"},
    CP_CLI_FN("--rtt", "D", parse_rtt, offsetof(plan_cli, rtt_ns),
              "the round trip between hosts to predict at (250us,\n"
              "1ms): each setup's latency and throughput there, from\n"
              "its runs at RTT 0, and the connections OPS needs"),
    CP_CLI_HEAD("your workload (each optional; with any, each setup's closest\n"
                "measured point is used, else every point is listed):"),
    {.like = &cp_cli_def_pipeline,
     .off = PO(want.pipeline),
     .help = "requests in flight per "
             "connection"},
    {.like = &cp_cli_def_clients, .off = PO(want.clients), .help = "client connections in total"},
    {.like = &cp_cli_def_value_size,
     .off = offsetof(plan_cli, value_size),
     .help = "bytes per value (several sizes: their mean)"},
    CP_CLI_NUM("--shards", "N", CP_CLI_INT, 1, 1024, PO(want.shards),
               "redis servers (twemproxy) or masters (cluster)"),
    CP_CLI_END,
};

static const cp_cli_cmd plan_cmd = {
    .rows = plan_rows,
    .name = "plan",
    .usage = "usage: clusterpipe plan DIR --rate OPS [--target-util U] [--rtt D]\n"
             "                        [--pipeline P] [--clients C] [--value-size B] [--shards N]\n"
             "\n"
             "What would each architecture cost at your rate? Reads DIR/results.json (written\n"
             "by 'clusterpipe compare') and turns the CPU each component spent per operation\n"
             "into the cores redis, twemproxy and the client need for OPS operations per\n"
             "second: rate x CPU-us per op / 1,000,000 / U, rounded up. Prints the table, how\n"
             "it was computed and the assumptions (utilisation, loopback hiding the network's\n"
             "cost, the measuring machine's cores as the unit).\n"
             "\n"
             "With --rtt D, from the runs at RTT 0 (no wire): a closed loop's latency at D is\n"
             "its service time (in flight / throughput) + hops x D, its throughput in flight /\n"
             "that latency (at most cores / CPU per op), and OPS needs OPS x latency requests\n"
             "in flight: the connections for that. Hops per batch: cluster 1; twemproxy with\n"
             "a proxy on each of 4 redis hosts 1.75 at depth 1 (2 when pipelined), beside the\n"
             "client 1, on hosts of their own 2.\n"
             "\n",
    .epilog = "\nExit status: 0 ok, 1 DIR/results.json unreadable or without a successful run\n"
              "(with --rtt: at RTT 0), 2 bad usage.\n",
    .width = 21,
};

int cp_cli_plan(int argc, char **argv) {
    if (argc >= 2 && cp_cli_is_help(argv[1])) {
        cp_cli_help(&plan_cmd, stdout);
        return CP_EXIT_OK;
    }
    if (argc < 2 || argv[1][0] == '-') {
        for (int i = 1; i < argc; i++)
            if (cp_cli_is_help(argv[i])) {
                cp_cli_help(&plan_cmd, stdout);
                return CP_EXIT_OK;
            }
        return cp_cli_usage_error("plan", "which directory? (one written by compare, first)");
    }
    const char *dir = argv[1];
    plan_cli c;
    memset(&c, 0, sizeof(c));
    c.o.target_util = 0.6;
    c.rtt_ns = NO_RTT;
    int rc = cp_cli_parse(&plan_cmd, argc, argv, 2, &c, NULL);
    if (rc != CP_CLI_GO)
        return rc;
    c.o.want.value_size = cp__value_sizes_mean(&c.value_size);
    char path[4200], err[ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/results.json", dir);
    json_t *doc = NULL;
    if (cp__rpt_load(path, &doc, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe plan: %s\n", err);
        return CP_EXIT_FAIL;
    }
    c.o.at_zero_only = c.rtt_ns != NO_RTT; /* the model's bases */
    char *md = cp__plan_md(doc, &c.o, "#", err, sizeof(err));
    char *model = md != NULL && c.rtt_ns != NO_RTT
                      ? cp__rtt_plan_md(doc, &c.o, (double)c.rtt_ns, "#", err, sizeof(err))
                      : NULL;
    json_decref(doc);
    if (md == NULL || (c.rtt_ns != NO_RTT && model == NULL)) {
        fprintf(stderr, "clusterpipe plan: %s: %s\n", path, err);
        free(md);
        return CP_EXIT_FAIL;
    }
    fputs(md, stdout);
    if (model != NULL) {
        fputs("\n", stdout);
        fputs(model, stdout);
    }
    free(md);
    free(model);
    return CP_EXIT_OK;
}
