/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `--from` of `migrate` and `verify`: standalone redis-servers as "host:port[,host:port...]", or a
 * nutcracker YAML file (a file that exists, or a name ending .yml/.yaml): every pool's servers,
 * and its redis_auth as the sources' password.
 */
#ifndef CLUSTERPIPE_CLI_FROMARG_H
#define CLUSTERPIPE_CLI_FROMARG_H

typedef struct cp_cli_sources {
    char **hosts; /* malloc'd, each malloc'd */
    int *ports;
    int n;
    char *yaml_password; /* the YAML's redis_auth (malloc'd), or NULL */
} cp_cli_sources;

/* Parses --from's value for subcommand cmd into out (zeroed first). 0, or the exit code of the
 * usage error it printed (or CP_EXIT_FAIL out of memory). Free out with cp_cli_sources_free
 * either way. */
int cp_cli_sources_parse(const char *cmd, const char *from, cp_cli_sources *out);
void cp_cli_sources_free(cp_cli_sources *s);

#endif
