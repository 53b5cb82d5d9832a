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
#include "clusterpipe/clusterpipe.h"

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

/* One side's TLS flags (bench's --tls, --cacert, --cert, --key and --insecure, behind the side's
 * --from- or --to-). */
typedef struct cp_cli_tls {
    int tls, insecure;
    const char *cacert, *cert, *key;
} cp_cli_tls;

#define CP_CLI_TLS_ROWS(side, off, whose)                                                          \
    CP_CLI_SET("--" side "-tls", CP_CLI_SWITCH, 1, (off) + offsetof(cp_cli_tls, tls),              \
               "TLS to " whose),                                                                   \
        CP_CLI_STR("--" side "-cacert", "FILE", (off) + offsetof(cp_cli_tls, cacert),              \
                   "CA bundle to verify " whose " (default: the\nsystem's)"),                      \
        CP_CLI_STR("--" side "-cert", "FILE", (off) + offsetof(cp_cli_tls, cert),                  \
                   "client certificate for " whose " (tls-auth-clients)"),                         \
        CP_CLI_STR("--" side "-key", "FILE", (off) + offsetof(cp_cli_tls, key),                    \
                   "its key (default: in the --" side "-cert file)"),                              \
        CP_CLI_SET(                                                                                \
            "--" side "-insecure", CP_CLI_SWITCH, 1, (off) + offsetof(cp_cli_tls, insecure),       \
            "TLS to " whose " without verifying their\ncertificates (implies --" side "-tls)")

/* The flag rows of a move's two ends, for migrate and verify alike: --from, --to, and each
 * side's password, ACL user and TLS, at the offsets of the caller's fields (from_tls and to_tls:
 * of a cp_cli_tls). */
#define CP_CLI_MOVE_ROWS(from, to, from_password, to_password, from_user, to_user, from_tls,       \
                         to_tls)                                                                   \
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
        CP_CLI_STR("--to-user", "U", (to_user), "ACL user of the target (AUTH U PW)"),             \
        CP_CLI_TLS_ROWS("from", (from_tls), "the sources"),                                        \
        CP_CLI_TLS_ROWS("to", (to_tls), "the target's nodes")

/* Each side's TLS flags: --X-insecure turns --X-tls on; --X-cacert, --X-cert or --X-key without
 * it is a usage error (printed; its code returned). 0 otherwise. */
int cp_cli_tls_check(const char *cmd, cp_cli_tls *from, cp_cli_tls *to);

/* The side's TLS as client options, in *o (zeroed first): o with TLS on, NULL for plain TCP. */
const cp_options *cp_cli_tls_options(const cp_cli_tls *t, cp_options *o);

/* An ACL user needs its password: --from-user with neither --from-password nor a YAML's
 * redis_auth (from_password, the one in effect), or --to-user without --to-password, is a usage
 * error (printed; its code returned). 0 otherwise. */
int cp_cli_users_check(const char *cmd, const char *from_user, const char *from_password,
                       const char *to_user, const char *to_password);

/* Asks each source whether it is a cluster node; if so, the sources become the cluster's masters
 * serving slots. tls: the sources' (NULL: plain TCP). 0, or CP_EXIT_FAIL after printing
 * "clusterpipe CMD: <reason>" on stderr. */
int cp_cli_sources_resolve(const char *cmd, cp_cli_sources *s, const char *user,
                           const char *password, const cp_options *tls, int timeout_ms);

#endif
