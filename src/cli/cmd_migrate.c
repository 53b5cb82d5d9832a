/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe migrate`: moves the keys of standalone redis-servers into a Redis Cluster while
 * writes go on (migrate/migrate.h does it; this file parses, prints progress and the result).
 */
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/flagsets.h"
#include "migrate/migrate.h"
#include "migrate/nutconf.h"
#include "migrate/source.h"
#include "util/file.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct migrate_args {
    const char *from, *to, *from_password, *to_password;
    int db;
    int source_timeout, timeout_ms;
    int until_synced, json, quiet;
} migrate_args;

#define MO(f) offsetof(migrate_args, f)

static const cp_cli_flag migrate_rows[] = {
    {.name = "--from",
     .arg = "HOST:PORT[,...]",
     .kind = CP_CLI_STRING,
     .off = MO(from),
     .opts = CP_CLI_REQUIRED,
     .help = "the sources: standalone redis-servers, or a nutcracker\nYAML file (every "
             "pool's servers; its redis_auth as\n--from-password) (required)"},
    {.name = "--to",
     .arg = "HOST:PORT[,...]",
     .kind = CP_CLI_STRING,
     .off = MO(to),
     .opts = CP_CLI_REQUIRED,
     .help = "the target cluster's seed nodes (required)"},
    CP_CLI_STR("--from-password", "PW", MO(from_password), "AUTH password of the sources"),
    CP_CLI_STR("--to-password", "PW", MO(to_password), "AUTH password of the target"),
    CP_CLI_NUM("--db", "N", CP_CLI_INT, 0, 1000000, MO(db),
               "move database N of the sources into the target's 0\n(default: 0, and a source "
               "with keys in another is refused)"),
    CP_CLI_NUM("--source-timeout", "S", CP_CLI_INT, 1, 3600, MO(source_timeout),
               "a source that sends nothing for S seconds has failed\n(default 60: a live one "
               "sends a PING every 10 s)"),
    CP_CLI_NUM("--timeout", "MS", CP_CLI_INT, 100, 600000, MO(timeout_ms),
               "the target's I/O timeout: a write unanswered for MS is\nof unknown outcome and its "
               "keys are re-copied (default 5000)"),
    CP_CLI_SET("--until-synced", CP_CLI_SWITCH, 1, MO(until_synced),
               "exit 0 the first time every source's lag is 0 and no\nkey waits for a re-copy "
               "(stop writes at the sources first)"),
    CP_CLI_SET("--json", CP_CLI_SWITCH, 1, MO(json),
               "progress and result as JSON lines (\"schema\":\n\"clusterpipe.migrate/1\") on "
               "stdout"),
    CP_CLI_LIKE(cp_cli_def_quiet, MO(quiet), "no progress lines, only the result"),
    CP_CLI_END,
};

static const cp_cli_cmd migrate_cmd = {
    .name = "migrate",
    .usage =
        "usage: clusterpipe migrate --from HOST:PORT[,...]|NUTCRACKER.YML --to HOST:PORT[,...]\n"
        "                           [--db N]\n"
        "                           [--from-password PW] [--to-password PW]\n"
        "                           [--source-timeout S] [--timeout MS] [--until-synced]\n"
        "                           [--json] [-q]\n"
        "\n"
        "Moves the keys of standalone redis-servers into a Redis Cluster while writes go on.\n"
        "Each source is read as a replica reads its master (PSYNC): its snapshot's keys are\n"
        "written with RESTORE ... REPLACE ABSTTL (keys already expired are skipped), then its\n"
        "stream of writes is applied in order (MULTI ... EXEC as one unit), through\n"
        "libclusterpipe: routed by slot, followed through MOVED/ASK and failovers. A key\n"
        "whose write ended with an outcome not known is re-copied from its source when the\n"
        "source's offset equals the offset applied. A progress line per source each second:\n"
        "keys copied of the snapshot's total, the rate, and the stream's lag in bytes and\n"
        "in seconds (how long ago the source was at the offset applied).\n"
        "Without --until-synced it follows the sources until SIGINT or SIGTERM, then\n"
        "finishes what is in flight and prints the offset applied per source.\n",
    .options = "options:",
    .rows = migrate_rows,
    .epilog = "\nExit status: 0 done (--until-synced: synced), 1 the run failed (a source or the\n"
              "target unreachable or refusing, keys in another database, ...; --until-synced:\n"
              "stopped by a signal before it synced), 2 bad usage.\n",
    .width = 30,
};

/* "host:port,host:port": into hosts (strings malloc'd) and ports. 0, or a usage error's code. */
static int parse_sources(const char *list, char ***hosts, int **ports, int *n) {
    int cap = 1;
    for (const char *p = list; *p; p++)
        cap += *p == ',';
    if (cap > CP__MIGRATE_MAX_SOURCES)
        return cp_cli_usage_error("migrate", "--from: at most %d sources", CP__MIGRATE_MAX_SOURCES);
    *hosts = calloc((size_t)cap, sizeof **hosts);
    *ports = calloc((size_t)cap, sizeof **ports);
    if (*hosts == NULL || *ports == NULL)
        return CP_EXIT_FAIL;
    *n = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *colon = NULL; /* the last one: an IPv6 address has others */
        for (const char *c = p; c < p + len; c++)
            colon = *c == ':' ? c : colon;
        char port[16];
        long v;
        if (colon == NULL || colon == p || (size_t)(p + len - colon - 1) >= sizeof port)
            return cp_cli_usage_error("migrate", "--from: '%.*s' is not HOST:PORT", (int)len, p);
        snprintf(port, sizeof port, "%.*s", (int)(p + len - colon - 1), colon + 1);
        if (cp_cli_parse_long("migrate", "--from", port, 1, 65535, &v) != 0)
            return CP_EXIT_USAGE;
        (*hosts)[*n] = strndup(p, (size_t)(colon - p));
        (*ports)[(*n)++] = (int)v;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* --from naming a nutcracker YAML (a file that exists, or a .yml/.yaml name): its servers, and
 * its redis_auth unless --from-password was given. -1: not a file; else as parse_sources. */
static int from_yaml(migrate_args *a, char ***hosts, int **ports, int *n) {
    size_t len = strlen(a->from);
    int named = (len > 4 && strcmp(a->from + len - 4, ".yml") == 0) ||
                (len > 5 && strcmp(a->from + len - 5, ".yaml") == 0);
    size_t got;
    char *text = cp__read_file(a->from, 1 << 20, &got);
    if (text == NULL && !named)
        return -1;
    if (text == NULL)
        return cp_cli_usage_error("migrate", "--from %s: cannot read it", a->from);
    static cp__nutconf conf;
    char err[512];
    int rc = cp__nutconf_parse(text, &conf, err, sizeof err);
    free(text);
    if (rc != 0)
        return cp_cli_usage_error("migrate", "--from %s: %s", a->from, err);
    *hosts = calloc((size_t)conf.n, sizeof **hosts);
    *ports = calloc((size_t)conf.n, sizeof **ports);
    if (*hosts == NULL || *ports == NULL)
        return CP_EXIT_FAIL;
    for (int i = 0; i < conf.n; i++) {
        (*hosts)[i] = strdup(conf.host[i]);
        (*ports)[i] = conf.port[i];
    }
    *n = conf.n;
    if (a->from_password == NULL && conf.has_password)
        a->from_password = conf.password;
    return 0;
}

static const char *phase_name(int phase) {
    switch (phase) {
    case CP__SRC_HANDSHAKE:
        return "handshake";
    case CP__SRC_SNAPSHOT:
        return "snapshot";
    case CP__SRC_STREAM:
        return "stream";
    default:
        return "failed";
    }
}

typedef struct printer {
    const migrate_args *a;
    uint64_t last_copied[CP__MIGRATE_MAX_SOURCES];
    double last_s;
} printer;

static json_t *source_json(const cp__migrate_source_status *s, double rate) {
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I}", "source",
                  s->name, "phase", phase_name(s->phase), "keys_copied", (json_int_t)s->keys_copied,
                  "keys_total", (json_int_t)s->snapshot_keys_total, "keys_expired",
                  (json_int_t)s->keys_expired, "keys_other_db", (json_int_t)s->keys_other_db,
                  "snapshot_bytes", (json_int_t)s->snapshot_bytes, "commands_applied",
                  (json_int_t)s->commands_applied, "keys_per_s", rate, "offset_applied",
                  (json_int_t)s->offset_applied, "lag_bytes", (json_int_t)s->lag_bytes, "marked",
                  (json_int_t)s->marked, "recopied", (json_int_t)s->recopied);
    if (o != NULL) /* null until known; a lower bound past the history (lag_at_least) */
        json_object_set_new(o, "lag_seconds",
                            s->lag_seconds < 0 ? json_null() : json_real(s->lag_seconds));
    if (o != NULL && s->lag_at_least)
        json_object_set_new(o, "lag_at_least", json_true());
    return o;
}

/* "N B, S s" (">= S s" past the offsets' history; "-" not known yet), into buf. */
static const char *lag_str(const cp__migrate_source_status *s, char *buf, size_t len) {
    if (s->lag_bytes < 0)
        snprintf(buf, len, "-");
    else if (s->lag_seconds < 0)
        snprintf(buf, len, "%lld B", (long long)s->lag_bytes);
    else
        snprintf(buf, len, "%lld B, %s%.1f s", (long long)s->lag_bytes,
                 s->lag_at_least ? ">= " : "", s->lag_seconds);
    return buf;
}

static void progress(const cp__migrate_status *st, int final, void *arg) {
    printer *p = arg;
    double dt = st->elapsed_s - p->last_s;
    for (int i = 0; i < st->n; i++) {
        const cp__migrate_source_status *s = &st->src[i];
        double rate = dt > 0 ? (double)(s->keys_copied - p->last_copied[i]) / dt : 0;
        p->last_copied[i] = s->keys_copied;
        if (final || p->a->quiet)
            continue;
        if (p->a->json) {
            json_t *o = source_json(s, rate);
            json_object_set_new(o, "schema", json_string("clusterpipe.migrate/1"));
            json_object_set_new(o, "elapsed_s", json_real(st->elapsed_s));
            char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
            if (line != NULL)
                printf("%s\n", line);
            free(line);
            json_decref(o);
        } else {
            char lag[64];
            printf("migrate %s: %s, %llu of %llu keys copied, %.0f keys/s, %llu commands, lag "
                   "%s, %llu marked\n",
                   s->name, phase_name(s->phase), (unsigned long long)s->keys_copied,
                   (unsigned long long)s->snapshot_keys_total, rate,
                   (unsigned long long)s->commands_applied, lag_str(s, lag, sizeof lag),
                   (unsigned long long)s->marked);
        }
    }
    p->last_s = st->elapsed_s;
    fflush(stdout);
}

static void print_result(const migrate_args *a, const cp__migrate_status *st, int ok,
                         const char *err) {
    if (a->json) {
        json_t *srcs = json_array();
        for (int i = 0; i < st->n; i++)
            json_array_append_new(srcs, source_json(&st->src[i], 0));
        json_t *o = json_pack(
            "{s:s, s:b, s:b, s:f, s:o, s:I, s:I, s:I, s:I, s:I}", "schema", "clusterpipe.migrate/1",
            "ok", ok, "synced", st->synced, "elapsed_s", st->elapsed_s, "sources", srcs, "unknown",
            (json_int_t)st->unknown, "not_executed", (json_int_t)st->not_executed, "errors",
            (json_int_t)st->errors, "moved", (json_int_t)st->moved, "ask", (json_int_t)st->ask);
        if (!ok)
            json_object_set_new(o, "error", json_string(err));
        char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        if (line != NULL)
            printf("%s\n", line);
        free(line);
        json_decref(o);
        return;
    }
    for (int i = 0; i < st->n; i++) {
        const cp__migrate_source_status *s = &st->src[i];
        char lag[64];
        printf("source %s: %llu keys copied (%llu already expired, skipped), %llu commands "
               "applied, offset applied %llu, lag %s, %llu keys re-copied, %llu marked\n",
               s->name, (unsigned long long)s->keys_copied, (unsigned long long)s->keys_expired,
               (unsigned long long)s->commands_applied, (unsigned long long)s->offset_applied,
               lag_str(s, lag, sizeof lag), (unsigned long long)s->recopied,
               (unsigned long long)s->marked);
        if (s->keys_other_db > 0 || s->commands_other_db > 0)
            printf("source %s: not moved: %llu keys and %llu commands of other databases\n",
                   s->name, (unsigned long long)s->keys_other_db,
                   (unsigned long long)s->commands_other_db);
    }
    printf("target: %llu MOVED and %llu ASK followed; %llu commands ended unknown, %llu not "
           "executed\n",
           (unsigned long long)st->moved, (unsigned long long)st->ask,
           (unsigned long long)st->unknown, (unsigned long long)st->not_executed);
    if (st->errors > 0)
        printf("the target answered %llu stream commands with an error (their keys were "
               "re-copied); the first: %s\n",
               (unsigned long long)st->errors, st->first_error);
    if (ok && st->synced)
        printf("synced: every source's lag is 0 and every key is copied.\n"
               "cutover: 1. stop writes to the sources (done, if they stayed stopped);\n"
               "         2. wait for lag 0 (this run saw it);\n"
               "         3. switch the clients to the cluster.\n");
}

int cp_cli_migrate(int argc, char **argv) {
    static migrate_args a;
    memset(&a, 0, sizeof a);
    a.db = -1;
    a.source_timeout = 60;
    a.timeout_ms = 5000;
    int prc = cp_cli_parse(&migrate_cmd, argc, argv, 1, &a, NULL);
    if (prc != CP_CLI_GO)
        return prc;
    if (a.json && a.quiet)
        a.quiet = 0; /* JSON lines are for a program: it asked for them */
    char **hosts = NULL;
    int *ports = NULL, n = 0;
    int rc = from_yaml(&a, &hosts, &ports, &n);
    if (rc < 0)
        rc = parse_sources(a.from, &hosts, &ports, &n);
    if (rc != 0)
        goto out;
    cp_cli_install_signals();
    static printer pr;
    memset(&pr, 0, sizeof pr);
    pr.a = &a;
    cp__migrate_opts o = {.hosts = (const char *const *)hosts,
                          .ports = ports,
                          .nsources = n,
                          .to = a.to,
                          .from_password = a.from_password,
                          .to_password = a.to_password,
                          .db = a.db,
                          .until_synced = a.until_synced,
                          .silence_ms = a.source_timeout * 1000,
                          .io_timeout_ms = a.timeout_ms,
                          .stop = &cp_cli_interrupted,
                          .progress = progress,
                          .progress_arg = &pr};
    static cp__migrate_status st;
    char err[2048] = "";
    int ok = cp__migrate_run(&o, &st, err, sizeof err) == 0;
    if (ok && a.until_synced && !st.synced) { /* stopped by a signal before lag 0: no cutover */
        snprintf(err, sizeof err, "stopped before every source was synced: do not cut over");
        ok = 0;
    }
    print_result(&a, &st, ok, err);
    if (!ok)
        fprintf(stderr, "clusterpipe migrate: %s\n", err);
    rc = ok ? CP_EXIT_OK : CP_EXIT_FAIL;
out:
    for (int i = 0; hosts != NULL && i < n; i++)
        free(hosts[i]);
    free(hosts);
    free(ports);
    return rc;
}
