/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The table-driven flag parser and help printer (flags.h). A table is flattened once per call
 * (include rows expanded, like rows resolved) into a small array on the stack; nothing is
 * allocated and nothing outlives the call. Usage errors go to stderr, help to stdout (or the
 * stream given). Single-threaded.
 */
#include "cli/flags.h"

#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A flattened row: the definition (name, kind, bounds, parser) and where it lands. */
typedef struct row {
    const cp_cli_flag *def;  /* the row itself, or what it is like */
    const cp_cli_flag *self; /* the row as written (help, opts) */
    size_t off;              /* absolute offset in the options struct */
} row;

typedef struct flat {
    row r[CP_CLI_MAX_ROWS];
    size_t n;
} flat;

static void flatten(const cp_cli_flag *t, size_t base, flat *f) {
    for (; (t->kind != 0 || t->like != NULL) && f->n < CP_CLI_MAX_ROWS; t++) {
        if (t->kind == CP_CLI_INCLUDE) {
            flatten(t->include, base + t->off, f);
            continue;
        }
        row *r = &f->r[f->n++];
        r->def = t->like ? t->like : t;
        r->self = t;
        r->off = base + t->off;
    }
}

static const char *help_of(const row *r) {
    return r->self->help ? r->self->help : r->def->help;
}

static const char *arg_of(const row *r) {
    return r->self->arg ? r->self->arg : r->def->arg;
}

static int takes_value(const cp_cli_flag *d) {
    return d->kind != CP_CLI_SWITCH && d->kind != CP_CLI_BOOL && d->kind != CP_CLI_ACTION &&
           d->kind != CP_CLI_HEADING;
}

int cp_cli_flag_error(const char *cmd, const cp_cli_flag *f, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cp_cli_usage_error(cmd, "%s: %s", f->name, msg);
    return -1;
}

static int parse_double(const char *cmd, const cp_cli_flag *d, const char *val, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (errno != 0 || *end != '\0' || end == val || !isfinite(v))
        return cp_cli_flag_error(cmd, d, "'%s' is not a number", val);
    if (v < d->dmin || v > d->dmax)
        return cp_cli_flag_error(cmd, d, "%s is out of range [%g, %g]", val, d->dmin, d->dmax);
    *out = v;
    return 0;
}

/* Stores val (NULL: absent) for row r into opts. Returns 0 or -1 (printed). */
static int store(const char *cmd, const row *r, const char *val, char *opts) {
    const cp_cli_flag *d = r->def;
    void *dst = opts + r->off;
    long v;
    if (takes_value(d) && (val == NULL || (*val == '\0' && d->kind == CP_CLI_STRING))) {
        const char *arg = arg_of(r);
        if (arg != NULL) /* "--json needs a value: --json FILE" says what kind */
            cp_cli_usage_error(cmd, "%s needs a value: %s %s", d->name, d->name, arg);
        else
            cp_cli_usage_error(cmd, "%s needs a value", d->name);
        return -1;
    }
    switch (d->kind) {
    case CP_CLI_INT:
    case CP_CLI_U64:
    case CP_CLI_SIZE:
        if (cp_cli_parse_long(cmd, d->name, val, (long)d->min, (long)d->max, &v) != 0)
            return -1;
        if (d->kind == CP_CLI_INT)
            *(int *)dst = (int)v;
        else if (d->kind == CP_CLI_U64)
            *(uint64_t *)dst = (uint64_t)v;
        else
            *(size_t *)dst = (size_t)v;
        return 0;
    case CP_CLI_DOUBLE:
        return parse_double(cmd, d, val, dst);
    case CP_CLI_STRING:
        *(const char **)dst = val;
        return 0;
    case CP_CLI_SWITCH:
        *(int *)dst = d->set;
        return 0;
    case CP_CLI_BOOL:
        *(bool *)dst = d->set != 0;
        return 0;
    case CP_CLI_PARSE:
    case CP_CLI_ACTION:
        return d->parse(cmd, d, val, dst);
    default:
        return 0;
    }
}

/* The row argv[*i] names (advancing *i past a separate value, *val set; NULL when missing), or
 * NULL when it names none. */
static const row *match(const flat *f, int argc, char **argv, int *i, const char **val) {
    const char *a = argv[*i];
    for (size_t k = 0; k < f->n; k++) {
        const cp_cli_flag *d = f->r[k].def;
        if (d->name == NULL)
            continue;
        if (!takes_value(d)) {
            if (strcmp(a, d->name) == 0 || (d->alias && strcmp(a, d->alias) == 0))
                return &f->r[k];
            continue;
        }
        size_t n = strlen(d->name);
        if (strncmp(a, d->name, n) != 0 || (a[n] != '=' && a[n] != '\0'))
            continue;
        *val = a[n] == '=' ? a + n + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
        return &f->r[k];
    }
    return NULL;
}

/* One pass over argv: pass 0 applies only CP_CLI_FIRST rows, pass 1 everything else. */
static int pass(const cp_cli_cmd *cmd, const flat *f, int argc, char **argv, int first, char *opts,
                int *at, int which) {
    for (int i = first; i < argc; i++) {
        const char *val = NULL;
        int start = i;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (which == 0)
                continue;
            cp_cli_help(cmd, stdout);
            return CP_EXIT_OK;
        }
        const row *r = match(f, argc, argv, &i, &val);
        if (r == NULL) {
            if (which == 0)
                continue;
            return cp_cli_usage_error(cmd->name, "unknown option '%s'", argv[i]);
        }
        if (((r->self->opts & CP_CLI_FIRST) != 0) != (which == 0))
            continue;
        if (store(cmd->name, r, val, opts) != 0)
            return CP_EXIT_USAGE;
        at[r - f->r] = start;
    }
    return CP_CLI_GO;
}

int cp_cli_parse(const cp_cli_cmd *cmd, int argc, char **argv, int first, void *opts,
                 cp_cli_seen *seen) {
    flat f = {.n = 0};
    flatten(cmd->rows, 0, &f);
    int at[CP_CLI_MAX_ROWS] = {0};
    for (int which = 0; which < 2; which++) {
        int rc = pass(cmd, &f, argc, argv, first, opts, at, which);
        if (rc != CP_CLI_GO)
            return rc;
    }
    for (size_t k = 0; k < f.n; k++)
        if ((f.r[k].self->opts & CP_CLI_REQUIRED) && at[k] == 0)
            return cp_cli_usage_error(cmd->name, "%s %s is required", f.r[k].def->name,
                                      arg_of(&f.r[k]) ? arg_of(&f.r[k]) : "");
    if (seen != NULL) {
        seen->cmd = cmd;
        memcpy(seen->at, at, sizeof(at));
    }
    return CP_CLI_GO;
}

int cp_cli_given(const cp_cli_seen *seen, const char *name) {
    flat f = {.n = 0};
    flatten(seen->cmd->rows, 0, &f);
    for (size_t k = 0; k < f.n; k++)
        if (f.r[k].def->name && strcmp(f.r[k].def->name, name) == 0 && seen->at[k] > 0)
            return seen->at[k];
    return 0;
}

void cp_cli_help(const cp_cli_cmd *cmd, FILE *out) {
    flat f = {.n = 0};
    flatten(cmd->rows, 0, &f);
    int width = cmd->width > 0 ? cmd->width : 21;
    fputs(cmd->usage, out);
    if (cmd->options != NULL)
        fprintf(out, "%s\n", cmd->options);
    for (size_t k = 0; k < f.n; k++) {
        const cp_cli_flag *d = f.r[k].def;
        const char *h = help_of(&f.r[k]);
        if (d->kind == CP_CLI_HEADING) {
            fprintf(out, "%s\n", h);
            continue;
        }
        char left[128];
        const char *arg = arg_of(&f.r[k]);
        snprintf(left, sizeof(left), "%s%s%s%s%s", d->alias ? d->alias : "", d->alias ? ", " : "",
                 d->name, arg ? " " : "", arg ? arg : "");
        int len = (int)strlen(left);
        if (len + 3 > width) /* too long for the column: the help starts on the next line */
            fprintf(out, "  %s\n%*s", left, width, "");
        else
            fprintf(out, "  %-*s", width - 2, left);
        for (const char *p = h ? h : "";;) {
            size_t n = strcspn(p, "\n");
            fprintf(out, "%.*s\n", (int)n, p);
            if (p[n] == '\0')
                break;
            p += n + 1;
            fprintf(out, "%*s", width, "");
        }
    }
    if (cmd->epilog != NULL)
        fputs(cmd->epilog, out);
}
