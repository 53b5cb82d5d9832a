/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Shared pieces of the `clusterpipe` command: subcommand entry points, exit codes, usage errors
 * and the integer value parser under every subcommand's flag table (flags.h), so that a bad value
 * gets the same clear message and exit code 2 everywhere. Only src/cli/ prints and exits.
 */
#ifndef CLUSTERPIPE_CLI_H
#define CLUSTERPIPE_CLI_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#define CP_EXIT_OK 0
#define CP_EXIT_FAIL 1  /* the run failed: errors, mismatches, unreachable target */
#define CP_EXIT_USAGE 2 /* bad command line */

/* Prints "clusterpipe: <fmt>" and a hint to use --help on stderr. Returns CP_EXIT_USAGE. */
int cp_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a decimal integer flag value in [min, max]. On error prints a message naming the flag
 * and returns -1; else 0. Rejects empty strings, trailing junk, overflow. (flags.c parses every
 * integer flag with it.) */
int cp_cli_parse_long(const char *cmd, const char *flag, const char *val, long min, long max,
                      long *out);

/* argv joined with spaces after "clusterpipe", each argument single-quoted when the shell would
 * split or expand it (a ' inside written '\''), so the line can be pasted back; the value of
 * --password (and --password=...) is written "***", since reports record the line and are shared.
 * malloc'd (caller frees), NULL on OOM. */
char *cp_cli_command_line(int argc, char **argv);

/* cp_cli_command_line into buf, truncated to len. */
void cp_cli_join_command(int argc, char **argv, char *buf, size_t len);

/* mkdir -p path (an existing directory is fine) and check it is a writable directory. Returns 0,
 * or -1 with the reason in err. */
int cp_cli_make_dirs(const char *path, char *err, size_t errlen);

/* Set (to the signal number) by SIGINT, SIGTERM or SIGHUP once cp_cli_install_signals ran; the
 * long-running layers poll it through their `cancel` pointers. */
extern volatile sig_atomic_t cp_cli_interrupted;

/* Installs the handlers that set cp_cli_interrupted, without SA_RESTART so blocking waits return
 * early and the flag is seen soon; ignores SIGPIPE so a server dying under a connection cannot
 * kill the command (and skip its teardown). */
void cp_cli_install_signals(void);

/* The PIDs (and start times) of every process an experiment spawned, recorded by its on_spawn
 * hook, for the final "nothing left running" check. Caller-allocated (it is large: static). */
#define CP_CLI_MAX_PIDS 512
typedef struct cp_cli_pids {
    size_t n;
    pid_t pid[CP_CLI_MAX_PIDS];
    unsigned long long start[CP_CLI_MAX_PIDS];
} cp_cli_pids;

/* Records one process (beyond CP_CLI_MAX_PIDS: ignored). */
void cp_cli_pids_add(cp_cli_pids *p, pid_t pid, unsigned long long start_time);

/* Prints "clusterpipe CMD: process PID still running after teardown" on stderr for every
 * recorded process still alive (same PID and start time). Returns how many there were. */
size_t cp_cli_pids_check(const cp_cli_pids *p, const char *cmd);

/* 1 for --help or -h. */
int cp_cli_is_help(const char *arg);

/* Subcommands: argv[0] is the subcommand name. Return an exit code. */
int cp_cli_up(int argc, char **argv);
int cp_cli_status(int argc, char **argv);
int cp_cli_down(int argc, char **argv);
int cp_cli_load(int argc, char **argv);
int cp_cli_bench(int argc, char **argv);
int cp_cli_compare(int argc, char **argv);
int cp_cli_report(int argc, char **argv);
int cp_cli_plan(int argc, char **argv);
int cp_cli_scenario(int argc, char **argv);
int cp_cli_wire(int argc, char **argv);
int cp_cli_migrate(int argc, char **argv);
int cp_cli_verify(int argc, char **argv);

/* Renders table.md, charts and report.md into dir from a "clusterpipe.compare/1" document
 * (borrowed) and prints the table and "report: DIR/report.md" on stdout. wrote_results: say
 * results.json was written too. cancel: stops gnuplot when it becomes non-zero (may be NULL).
 * Returns 0, or -1 when something (a chart included) could not be written; the reason is on
 * stderr. Blocks while gnuplot runs. */
int cp_cli_render(const char *dir, const json_t *doc, int quiet, int wrote_results,
                  const volatile sig_atomic_t *cancel);

#endif /* CLUSTERPIPE_CLI_H */
