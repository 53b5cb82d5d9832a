/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe migrate`: moves the keys of standalone redis-servers into a Redis Cluster while
 * writes go on (migrate/migrate.h does it; this file parses, prints progress and the result).
 */
#include "cli/cli.h"
#include "cli/cmd_verify.h"
#include "cli/flags.h"
#include "cli/flagsets.h"
#include "cli/fromarg.h"
#include "migrate/migrate.h"
#include "migrate/source.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct migrate_args {
    const char *from, *to, *from_password, *to_password, *from_user, *to_user;
    cp_cli_tls from_tls, to_tls;
    int db;
    int source_timeout, timeout_ms;
    int until_synced, verify, skip_unknown_types, json, quiet;
} migrate_args;

#define MO(f) offsetof(migrate_args, f)

static const cp_cli_flag migrate_rows[] = {
    CP_CLI_MOVE_ROWS(MO(from), MO(to), MO(from_password), MO(to_password), MO(from_user),
                     MO(to_user), MO(from_tls), MO(to_tls)),
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
    CP_CLI_SET("--verify", CP_CLI_SWITCH, 1, MO(verify),
               "once synced, compare every key with the target as\n'clusterpipe verify' does "
               "(needs --until-synced)"),
    CP_CLI_SET("--skip-unknown-types", CP_CLI_SWITCH, 1, MO(skip_unknown_types),
               "skip keys of module types (and modules' aux data),\ncount and list them (default: "
               "a source that holds\nany is refused, with their count)"),
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
        "                           [--from-user U] [--to-user U]\n"
        "                           [--from-tls [--from-cacert FILE] [--from-cert FILE]\n"
        "                            [--from-key FILE] | --from-insecure]\n"
        "                           [--to-tls [--to-cacert FILE] [--to-cert FILE]\n"
        "                            [--to-key FILE] | --to-insecure]\n"
        "                           [--source-timeout S] [--timeout MS] [--until-synced]\n"
        "                           [--verify] [--skip-unknown-types] [--json] [-q]\n"
        "\n"
        "Moves the keys of standalone redis-servers (or of a cluster's masters) into a Redis\n"
        "Cluster while writes go on. Each source is read as a replica reads its master\n"
        "(PSYNC): its snapshot's keys are written with RESTORE ... REPLACE ABSTTL (keys\n"
        "already expired are skipped), then its stream of writes is applied in order (MULTI\n"
        "... EXEC as one unit), through libclusterpipe: routed by slot, followed through\n"
        "MOVED/ASK and failovers. A key whose write ended with an outcome not known is\n"
        "re-copied from its source when the source's offset equals the offset applied. A\n"
        "progress line per source each second: keys copied of the snapshot's total, the rate,\n"
        "and the stream's lag in bytes and in seconds (how long ago the source was at the\n"
        "offset applied). Without --until-synced it follows the sources until SIGINT or\n"
        "SIGTERM, then finishes what is in flight and prints the offset applied per source.\n"
        "With --verify, once synced, every key is compared with the target ('clusterpipe\n"
        "verify').\n",
    .options = "options:",
    .rows = migrate_rows,
    .epilog = "\nExit status: 0 done (--until-synced: synced; --verify: and no difference), 1 the\n"
              "run failed (a source or the target unreachable or refusing, keys in another\n"
              "database, differences found; --until-synced: stopped by a signal before it\n"
              "synced, ...), 2 bad usage.\n",
    .width = 30,
};

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
    if (o != NULL && s->unknown.keys + s->unknown.aux > 0) {
        json_t *keys = json_array();
        for (int k = 0; k < s->unknown.listed; k++)
            json_array_append_new(keys, json_string(s->unknown.key[k]));
        json_object_set_new(o, "module_data",
                            json_pack("{s:I, s:I, s:s, s:o}", "keys", (json_int_t)s->unknown.keys,
                                      "aux", (json_int_t)s->unknown.aux, "types", s->unknown.types,
                                      "first_keys", keys));
    }
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

/* The data of module types a source held (skipped, or the reason of the refusal). */
static void print_unknowns(const cp__migrate_source_status *s) {
    const cp__unknowns *u = &s->unknown;
    if (u->keys + u->aux == 0)
        return;
    printf("source %s: not moved: %llu keys and %llu aux data of module types (%s)%s", s->name,
           (unsigned long long)u->keys, (unsigned long long)u->aux, u->types,
           u->listed > 0 ? "; the first keys:" : "");
    for (int k = 0; k < u->listed; k++)
        printf(" \"%s\"", u->key[k]);
    printf("\n");
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
        print_unknowns(s);
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
    if (a.verify && !a.until_synced)
        return cp_cli_usage_error("migrate", "--verify needs --until-synced (a verify while "
                                             "writes go on finds the writes)");
    cp_cli_sources src;
    int rc = cp_cli_sources_parse("migrate", a.from, &src);
    if (rc != 0)
        goto out;
    if (a.from_password == NULL)
        a.from_password = src.yaml_password;
    rc = cp_cli_users_check("migrate", a.from_user, a.from_password, a.to_user, a.to_password);
    if (rc == 0)
        rc = cp_cli_tls_check("migrate", &a.from_tls, &a.to_tls);
    if (rc != 0)
        goto out;
    static cp_options from_tls, to_tls;
    const cp_options *ft = cp_cli_tls_options(&a.from_tls, &from_tls);
    rc = cp_cli_sources_resolve("migrate", &src, a.from_user, a.from_password, ft, a.timeout_ms);
    if (rc != 0)
        goto out;
    if (src.cluster && !a.json && !a.quiet)
        printf("the source is a cluster: its %d masters are the sources\n", src.n);
    cp_cli_install_signals();
    static printer pr;
    memset(&pr, 0, sizeof pr);
    pr.a = &a;
    cp__migrate_opts o = {.hosts = (const char *const *)src.hosts,
                          .ports = src.ports,
                          .nsources = src.n,
                          .to = a.to,
                          .from_password = a.from_password,
                          .to_password = a.to_password,
                          .from_user = a.from_user,
                          .to_user = a.to_user,
                          .from_tls = ft,
                          .to_tls = cp_cli_tls_options(&a.to_tls, &to_tls),
                          .db = a.db,
                          .until_synced = a.until_synced,
                          .skip_unknown_types = a.skip_unknown_types,
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
    if (ok && a.verify && cp_cli_interrupted) { /* synced, but a signal came before the verify */
        fprintf(stderr, "clusterpipe migrate: stopped by a signal: not verified\n");
        rc = CP_EXIT_FAIL;
    } else if (ok && a.verify) {
        fflush(stdout);
        cp_cli_verify_args v;
        cp_cli_verify_defaults(&v);
        v.to = a.to;
        v.from_password = a.from_password;
        v.to_password = a.to_password;
        v.from_user = a.from_user;
        v.to_user = a.to_user;
        v.from_tls = a.from_tls;
        v.to_tls = a.to_tls;
        v.db = a.db;
        v.timeout_ms = a.timeout_ms;
        v.skip_unknown_types = a.skip_unknown_types;
        v.json = a.json;
        v.quiet = a.quiet;
        rc = cp_cli_verify_run(&v, &src);
    }
out:
    cp_cli_sources_free(&src);
    return rc;
}
