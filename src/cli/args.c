/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Flag value parsing and usage errors shared by every subcommand.
 */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cp_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "clusterpipe%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'clusterpipe %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return CP_EXIT_USAGE;
}

int cp_cli_parse_long(const char *cmd, const char *flag, const char *val, long min, long max,
                      long *out) {
    char *end = NULL;
    if (val == NULL || *val == '\0') {
        cp_cli_usage_error(cmd, "%s needs a value", flag);
        return -1;
    }
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno == ERANGE || *end != '\0' || end == val) {
        cp_cli_usage_error(cmd, "%s: '%s' is not an integer", flag, val);
        return -1;
    }
    if (v < min || v > max) {
        cp_cli_usage_error(cmd, "%s: %ld is out of range [%ld, %ld]", flag, v, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int cp_cli_parse_int(const char *cmd, const char *flag, const char *val, int min, int max,
                     int *out) {
    long v;
    if (cp_cli_parse_long(cmd, flag, val, min, max, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}
