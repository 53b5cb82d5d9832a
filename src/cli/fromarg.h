/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `--from` of `migrate` and `verify`: standalone redis-servers as "host:port[,host:port...]", or a
 * nutcracker YAML file (a file that exists, or a name ending .yml/.yaml): every pool's servers,
 * and its redis_auth as the sources' password; then, addresses of a cluster's nodes replaced by
 * its masters (migrate/clustersrc.h).
 */
#ifndef CLUSTERPIPE_CLI_FROMARG_H
#define CLUSTERPIPE_CLI_FROMARG_H

#include "cli/flags.h"

typedef struct cp_cli_sources {
    char **hosts; /* malloc'd, each malloc'd */
    int *ports;
    int n;
    char *yaml_password; /* the YAML's redis_auth (malloc'd), or NULL */
    int cluster;         /* cp_cli_sources_resolve found a cluster: the sources are its masters */
} cp_cli_sources;

/* Parses --from's value for subcommand cmd into out (zeroed first). 0, or the exit code of the
 * usage error it printed (or CP_EXIT_FAIL out of memory). Free out with cp_cli_sources_free
 * either way. */
int cp_cli_sources_parse(const char *cmd, const char *from, cp_cli_sources *out);
void cp_cli_sources_free(cp_cli_sources *s);

/* The flag rows of a move's two ends, for migrate and verify alike: --from, --to, and each
 * side's password and ACL user, at the offsets of the caller's fields. */
#define CP_CLI_MOVE_ROWS(from, to, from_password, to_password, from_user, to_user)                 \
    {.name = "--from",                                                                             \
     .arg = "HOST:PORT[,...]",                                                                     \
     .kind = CP_CLI_STRING,                                                                        \
     .off = (from),                                                                                \
     .opts = CP_CLI_REQUIRED,                                                                      \
     .help = "the sources: standalone redis-servers, a nutcracker\nYAML file (every "              \
             "pool's servers; its redis_auth as\n--from-password), or a cluster's node(s): "       \
             "every master\nserving slots is a source (required)"},                                \
        {.name = "--to",                                                                           \
         .arg = "HOST:PORT[,...]",                                                                 \
         .kind = CP_CLI_STRING,                                                                    \
         .off = (to),                                                                              \
         .opts = CP_CLI_REQUIRED,                                                                  \
         .help = "the target cluster's seed nodes (required)"},                                    \
        CP_CLI_STR("--from-password", "PW", (from_password), "AUTH password of the sources"),      \
        CP_CLI_STR("--to-password", "PW", (to_password), "AUTH password of the target"),           \
        CP_CLI_STR("--from-user", "U", (from_user), "ACL user of the sources (AUTH U PW)"),        \
        CP_CLI_STR("--to-user", "U", (to_user), "ACL user of the target (AUTH U PW)")

/* An ACL user needs its password: --from-user with neither --from-password nor a YAML's
 * redis_auth (from_password, the one in effect), or --to-user without --to-password, is a usage
 * error (printed; its code returned). 0 otherwise. */
int cp_cli_users_check(const char *cmd, const char *from_user, const char *from_password,
                       const char *to_user, const char *to_password);

/* Asks each source whether it is a cluster node; if so, the sources become the cluster's masters
 * serving slots. 0, or CP_EXIT_FAIL after printing "clusterpipe CMD: <reason>" on stderr. */
int cp_cli_sources_resolve(const char *cmd, cp_cli_sources *s, const char *user,
                           const char *password, int timeout_ms);

#endif
