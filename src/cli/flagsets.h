/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The flags several subcommands share, each declared once with its name, kind, bounds (the
 * workload's from bench/limits.h) and a generic help text: the workload set that bench, load,
 * compare and scenario bind with a `like` row (landing wherever each command keeps the value,
 * with its own help text when it says more), the --command pair that bench, compare and scenario
 * include whole (landing in a cp_cli_commands), and the TARGET set that bench and load include
 * whole (landing in a cp_cli_target). Static const data and their row parsers; the parsers
 * write only the value they are given and print only usage errors. Single-threaded.
 */
#ifndef CLUSTERPIPE_CLI_FLAGSETS_H
#define CLUSTERPIPE_CLI_FLAGSETS_H

#include "bench/template.h"
#include "cli/flags.h"

/* compare and scenario load their dataset themselves: at most this many keys */
#define CP_CLI_DATASET_KEYS_MAX 4000000000LL

/* ---- the workload set ---------------------------------------------------------------------- */

extern const cp_cli_flag cp_cli_def_threads;      /* int */
extern const cp_cli_flag cp_cli_def_clients;      /* int */
extern const cp_cli_flag cp_cli_def_pipeline;     /* int */
extern const cp_cli_flag cp_cli_def_requests;     /* uint64_t, >= 1 */
extern const cp_cli_flag cp_cli_def_keys;         /* uint64_t, >= 1 */
extern const cp_cli_flag cp_cli_def_dataset_keys; /* uint64_t, 1 .. CP_CLI_DATASET_KEYS_MAX */
extern const cp_cli_flag cp_cli_def_value_size;   /* cp__value_sizes: B, MIN-MAX, S:W,... */
extern const cp_cli_flag cp_cli_def_duration;     /* double seconds of a bench run */
/* unsigned set, get: two adjacent unsigned fields, SET's first (checked where bound) */
extern const cp_cli_flag cp_cli_def_ratio;
/* --rtt D[~J]: two adjacent uint64_t, the round trip and its jitter in ns (up, compare). */
extern const cp_cli_flag cp_cli_def_rtt;
extern const cp_cli_flag cp_cli_def_key_dist;     /* cp__dist (uniform, zipf, gaussian, ...) */
extern const cp_cli_flag cp_cli_def_key_layout;   /* cp__key_layout */
extern const cp_cli_flag cp_cli_def_retry_budget; /* int ms */
extern const cp_cli_flag cp_cli_def_read_from;    /* int cp_read_from */
extern const cp_cli_flag cp_cli_def_no_verify;    /* bool, set false */
extern const cp_cli_flag cp_cli_def_client_cache; /* int, set 1 */
/* cp_cache_options: ENTRIES[:BYTES] (k/m/g suffixes), 0 where not given */
extern const cp_cli_flag cp_cli_def_client_cache_size;
extern const cp_cli_flag cp_cli_def_quiet;    /* int, set 1; -q */
extern const cp_cli_flag cp_cli_def_out;      /* const char *, a directory */
extern const cp_cli_flag cp_cli_def_dir;      /* const char *, a topology directory */
extern const cp_cli_flag cp_cli_def_password; /* const char * */

/* ---- --command and --command-ratio of bench, compare and scenario ------------------------------
 */

/* What the two flags were given: the templates in order (pointing into argv) and the weights. */
typedef struct cp_cli_commands {
    const char *text[CP__COMMANDS_MAX];
    int n;
    const char *ratio;
} cp_cli_commands;

/* An include table (CP_CLI_INCLUDE at offsetof(..., the cp_cli_commands)): --command TEMPLATE
 * (repeatable, each checked as it is parsed) and --command-ratio W,... */
extern const cp_cli_flag cp_cli_command_flags[];

/* The templates of c as the engine takes them: *out NULL when no --command was given. Returns
 * CP_EXIT_OK, or CP_EXIT_USAGE after printing why (a weight count that does not match, weights
 * without --command, out of memory as a failure: CP_EXIT_FAIL). The caller frees *out with
 * cp__cmdset_free. */
int cp_cli_commands_build(const char *cmd, const cp_cli_commands *c, cp__cmdset **out);

/* ---- TARGET, AUTH and TLS of bench and load -------------------------------------------------- */

typedef struct cp_cli_target {
    const char *cluster, *proxy, *dir, *password, *user;
    int tls, insecure;
    const char *cacert, *cert, *key;
    int protocol; /* 0: not given */
} cp_cli_target;

extern const cp_cli_flag cp_cli_def_cluster; /* const char *, HOST:PORT[,...] */
extern const cp_cli_flag cp_cli_def_proxy;   /* const char *, HOST:PORT[,...] */

/* An include table (CP_CLI_INCLUDE at offsetof(..., the cp_cli_target)). */
extern const cp_cli_flag cp_cli_target_flags[];

#endif /* CLUSTERPIPE_CLI_FLAGSETS_H */
