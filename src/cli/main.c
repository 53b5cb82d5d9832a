/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe`: entry point and subcommand dispatch. Each subcommand lives in its own
 * src/cli/cmd_*.c file and returns an exit code (0 ok, 1 failed run, 2 bad usage).
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#ifndef CP_VERSION
#define CP_VERSION "unknown"
#endif

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand commands[] = {
    {"up", cp_cli_up, "start a Redis Cluster or a twemproxy topology on loopback"},
    {"status", cp_cli_status, "show the processes of a topology started by 'up'"},
    {"down", cp_cli_down, "stop every process of a topology and remove its directory"},
    {"load", cp_cli_load, "bulk-load N keys with verifiable values, then check the key count"},
    {"bench", cp_cli_bench, "run a verified GET/SET workload; latency, CPU per component"},
    {"compare", cp_cli_compare, "twemproxy vs Redis Cluster: the experiment, table and charts"},
    {"report", cp_cli_report, "re-render table, charts and report.md from DIR/results.json"},
    {"plan", cp_cli_plan, "cores per component for a target rate, from DIR/results.json"},
    {"scenario", cp_cli_scenario, "reshard | failover | partition | slow-link under load"},
    {"migrate", cp_cli_migrate, "move standalone redis-servers' keys into a cluster, live"},
    {"verify", cp_cli_verify, "compare standalone redis-servers' keys with a cluster's"},
    {"wire", cp_cli_wire, "an emulated network: a delay, a partition or a slow link on loopback"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: clusterpipe <command> [options]\n\n"
                 "Redis Cluster vs twemproxy: bring up real topologies, benchmark them with\n"
                 "verified replies and per-process CPU accounting.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'clusterpipe <command> --help' describes each command.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CP_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CP_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("clusterpipe %s\n", CP_VERSION);
        return CP_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    return cp_cli_usage_error(NULL, "unknown command '%s'", argv[1]);
}
