/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe verify`'s run and its output, shared with `migrate --verify` (cmd_migrate.c).
 */
#ifndef CLUSTERPIPE_CLI_CMD_VERIFY_H
#define CLUSTERPIPE_CLI_CMD_VERIFY_H

#include "cli/fromarg.h"

typedef struct cp_cli_verify_args {
    const char *to, *from_password, *to_password, *from_user, *to_user;
    cp_cli_tls from_tls, to_tls; /* checked (cp_cli_tls_check) */
    int db;                      /* -1: 0 */
    int tolerance_ms;            /* expiries this close are the same */
    int timeout_ms;
    int max_print;          /* differences printed (the rest counted) */
    int skip_unknown_types; /* keys of modules' types skipped, counted, not compared */
    int json, quiet;
} cp_cli_verify_args;

/* The flags' defaults (db -1, tolerance 1000 ms, timeout 5000 ms, 100 printed). */
void cp_cli_verify_defaults(cp_cli_verify_args *a);

/* Verifies the sources against a->to and prints the differences and the counts (JSON lines with
 * a->json). Returns the exit code: 0 with no difference, 1 with differences or a failed run. */
int cp_cli_verify_run(const cp_cli_verify_args *a, const cp_cli_sources *src);

#endif
