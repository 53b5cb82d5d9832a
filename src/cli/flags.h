/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The table-driven flag parser of the `clusterpipe` command. Each subcommand declares one table
 * (cp_cli_cmd): its usage text, then one row per flag saying the flag's name, kind (int, u64,
 * size, double, string, switch, bool, a parser callback, an action), bounds, where its value lands
 * (an offsetof into the subcommand's options struct) and its help text. The same table parses argv,
 * prints `--help` (from which scripts/gen-man.sh writes the man page) and names the flag in every
 * usage error, so the three cannot drift. Flags several subcommands share are declared once
 * (flagsets.h) and bound by a row's `like` pointer, or pulled in whole by an include row.
 *
 * Tables are static const data; parsing writes only into the caller's options struct and the
 * caller's cp_cli_seen, prints usage errors on stderr and help on stdout. Values of string flags
 * point into argv (borrowed). Single-threaded, like the rest of the command.
 */
#ifndef CLUSTERPIPE_CLI_FLAGS_H
#define CLUSTERPIPE_CLI_FLAGS_H

#include <stddef.h>
#include <stdio.h>

typedef enum cp_cli_kind {
    CP_CLI_INT = 1, /* int in [min, max] */
    CP_CLI_U64,     /* uint64_t in [min, max] */
    CP_CLI_SIZE,    /* size_t in [min, max] */
    CP_CLI_DOUBLE,  /* double in [dmin, dmax], finite */
    CP_CLI_STRING,  /* const char *, not empty (points into argv) */
    CP_CLI_SWITCH,  /* no value: the int at off is set to `set` */
    CP_CLI_BOOL,    /* no value: the bool at off is set to `set` != 0 */
    CP_CLI_PARSE,   /* a value handed to `parse` */
    CP_CLI_ACTION,  /* no value: `parse` is called with val NULL */
    CP_CLI_INCLUDE, /* every row of `include`, their offsets relative to off */
    CP_CLI_HEADING, /* no flag: `help` is printed as a heading line in --help */
} cp_cli_kind;

struct cp_cli_flag;

/* A row's parser for CP_CLI_PARSE (val never NULL) and CP_CLI_ACTION (val NULL). dst is where
 * the row lands (base + off). Returns 0, or -1 after printing a usage error naming the flag (see
 * cp_cli_flag_error). */
typedef int (*cp_cli_parse_fn)(const char *cmd, const struct cp_cli_flag *f, const char *val,
                               void *dst);

/* Row options (bits of cp_cli_flag.opts). */
#define CP_CLI_REQUIRED 1u /* "NAME ARG is required" when absent */
#define CP_CLI_FIRST 2u    /* applied before every other flag wherever it stands (presets) */

typedef struct cp_cli_flag {
    const char *name;  /* "--threads"; NULL only for CP_CLI_HEADING / CP_CLI_INCLUDE */
    const char *alias; /* e.g. "-q", or NULL */
    const char *arg;   /* the value's placeholder in help and messages ("T"); NULL: none */
    cp_cli_kind kind;
    size_t off;            /* where the value lands in the options struct (offsetof) */
    long long min, max;    /* CP_CLI_INT, CP_CLI_U64, CP_CLI_SIZE */
    double dmin, dmax;     /* CP_CLI_DOUBLE */
    int set;               /* CP_CLI_SWITCH, CP_CLI_BOOL: the value stored */
    cp_cli_parse_fn parse; /* CP_CLI_PARSE, CP_CLI_ACTION */
    const char *help;      /* one or more lines ('\n' between them); NULL: like's */
    unsigned opts;         /* CP_CLI_REQUIRED, CP_CLI_FIRST */
    /* A shared definition (flagsets.h) this row binds: name, alias, arg, kind, bounds, set and
     * parse come from it; off, opts and (when not NULL) help and arg from the row. */
    const struct cp_cli_flag *like;
    const struct cp_cli_flag *include; /* CP_CLI_INCLUDE: a table ended by CP_CLI_END */
} cp_cli_flag;

#define CP_CLI_END                                                                                 \
    { 0 } /* no kind, no like */

/* A row binding a shared definition (flagsets.h) at offset, with its own help (NULL: the
 * definition's). */
#define CP_CLI_LIKE(def, offset, text)                                                             \
    { .like = &(def), .off = (offset), .help = (text) }

/* Rows (and shared definitions, at offset 0) of the common kinds. */
#define CP_CLI_NUM(flag, placeholder, k, lo, hi, offset, text)                                     \
    {                                                                                              \
        .name = (flag), .arg = (placeholder), .kind = (k), .min = (lo), .max = (hi),               \
        .off = (offset), .help = (text)                                                            \
    }
#define CP_CLI_STR(flag, placeholder, offset, text)                                                \
    { .name = (flag), .arg = (placeholder), .kind = CP_CLI_STRING, .off = (offset), .help = (text) }
#define CP_CLI_SET(flag, k, value, offset, text)                                                   \
    { .name = (flag), .kind = (k), .set = (value), .off = (offset), .help = (text) }
#define CP_CLI_FN(flag, placeholder, fn, offset, text)                                             \
    {                                                                                              \
        .name = (flag), .arg = (placeholder), .kind = CP_CLI_PARSE, .parse = (fn),                 \
        .off = (offset), .help = (text)                                                            \
    }
#define CP_CLI_HEAD(text)                                                                          \
    { .kind = CP_CLI_HEADING, .help = (text) }

/* One subcommand: the first part of its --help, its flags, the last part. */
typedef struct cp_cli_cmd {
    const char *name;        /* "bench", as in messages: "clusterpipe bench: ..." */
    const char *usage;       /* printed first, verbatim (usage lines and description) */
    const char *options;     /* the heading of the flag list ("options:"); NULL: none */
    const cp_cli_flag *rows; /* ended by CP_CLI_END */
    const char *epilog;      /* printed last, verbatim (exit status); NULL: none */
    int width;               /* column of the help texts; 0: 21 */
} cp_cli_cmd;

/* Which flags a parse met: for each row (includes flattened, in table order), the argv index
 * where it was last given, 0 when never. */
#define CP_CLI_MAX_ROWS 64
typedef struct cp_cli_seen {
    const cp_cli_cmd *cmd;
    int at[CP_CLI_MAX_ROWS];
} cp_cli_seen;

/* cp_cli_parse's "go on" return: anything else is the exit code to return now. */
#define CP_CLI_GO (-1)

/* Parses argv[first..argc) against cmd's table into opts (already holding the defaults):
 * `--name value`, `--name=value`, switches and aliases exactly. --help / -h prints the help and
 * returns CP_EXIT_OK; an unknown option, a bare argument, a missing or bad value or a missing
 * required flag prints a usage error (naming the flag, then "Try ... --help") and returns
 * CP_EXIT_USAGE; else CP_CLI_GO. seen may be NULL. */
int cp_cli_parse(const cp_cli_cmd *cmd, int argc, char **argv, int first, void *opts,
                 cp_cli_seen *seen);

/* The argv index where flag `name` was last given in the parse that filled seen, 0 when never. */
int cp_cli_given(const cp_cli_seen *seen, const char *name);

/* Prints cmd's help (usage, the flag list from the table, epilog) to out. */
void cp_cli_help(const cp_cli_cmd *cmd, FILE *out);

/* "clusterpipe CMD: FLAG: <fmt>" and the --help hint on stderr, for row parsers. Returns -1. */
int cp_cli_flag_error(const char *cmd, const cp_cli_flag *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* CLUSTERPIPE_CLI_FLAGS_H */
