/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe verify`: compares every key of standalone redis-servers (or a nutcracker YAML's)
 * with a Redis Cluster's: type, value and expiry (migrate/verify.h does it; this file parses and
 * prints).
 */
#include "cli/cmd_verify.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/flagsets.h"
#include "migrate/verify.h"

typedef struct verify_flags {
    const char *from;
    cp_cli_verify_args v;
} verify_flags;

#define VO(f) offsetof(verify_flags, f)

static const cp_cli_flag verify_rows[] = {
    CP_CLI_MOVE_ROWS(VO(from), VO(v.to), VO(v.from_password), VO(v.to_password), VO(v.from_user),
                     VO(v.to_user), VO(v.from_tls), VO(v.to_tls)),
    CP_CLI_NUM("--db", "N", CP_CLI_INT, 0, 1000000, VO(v.db),
               "compare database N of the sources with the target's 0\n(default 0)"),
    CP_CLI_NUM("--ttl-tolerance", "MS", CP_CLI_INT, 0, 86400000, VO(v.tolerance_ms),
               "expiries this close are the same (default 1000)"),
    CP_CLI_NUM("--timeout", "MS", CP_CLI_INT, 100, 600000, VO(v.timeout_ms),
               "I/O timeout of every connection (default 5000)"),
    CP_CLI_NUM("--max-print", "N", CP_CLI_INT, 0, 1000000, VO(v.max_print),
               "print at most N differences, count the rest\n(default 100)"),
    CP_CLI_SET("--skip-unknown-types", CP_CLI_SWITCH, 1, VO(v.skip_unknown_types),
               "keys of other types than Redis's six (modules')\nare counted as skipped, not "
               "compared (default:\ncompared by DUMP bytes)"),
    CP_CLI_SET("--json", CP_CLI_SWITCH, 1, VO(v.json),
               "progress and result as JSON lines (\"schema\":\n\"clusterpipe.verify/1\") on "
               "stdout"),
    CP_CLI_LIKE(cp_cli_def_quiet, VO(v.quiet), "no progress lines, only the result"),
    CP_CLI_END,
};

static const cp_cli_cmd verify_cmd = {
    .name = "verify",
    .usage =
        "usage: clusterpipe verify --from HOST:PORT[,...]|NUTCRACKER.YML --to HOST:PORT[,...]\n"
        "                          [--db N] [--from-password PW] [--to-password PW]\n"
        "                          [--from-user U] [--to-user U]\n"
        "                          [--from-tls [--from-cacert FILE] [--from-cert FILE]\n"
        "                           [--from-key FILE] | --from-insecure]\n"
        "                          [--to-tls [--to-cacert FILE] [--to-cert FILE]\n"
        "                           [--to-key FILE] | --to-insecure]\n"
        "                          [--ttl-tolerance MS] [--timeout MS] [--max-print N]\n"
        "                          [--skip-unknown-types] [--json] [-q]\n"
        "\n"
        "Compares every key of standalone redis-servers (or of a cluster's masters) with a\n"
        "Redis Cluster's, after 'clusterpipe migrate' with the sources' writes stopped: the\n"
        "type, the value (read semantically, in pieces: GETRANGE, LRANGE, ZRANGE, SSCAN +\n"
        "SMISMEMBER, HSCAN + HMGET, XRANGE with XINFO STREAM and GROUPS) and the absolute\n"
        "expiry (PEXPIRETIME, within --ttl-tolerance). Prints each difference with its key\n"
        "and reason (missing, type, value, ttl), the keys checked per type, and how many\n"
        "keys the target holds that no source has (not differences: a target may hold\n"
        "other data).\n",
    .options = "options:",
    .rows = verify_rows,
    .epilog = "\nExit status: 0 no difference, 1 differences or the run failed (a source or the\n"
              "target unreachable or refusing), 2 bad usage.\n",
    .width = 30,
};

void cp_cli_verify_defaults(cp_cli_verify_args *a) {
    memset(a, 0, sizeof *a);
    a->db = -1;
    a->tolerance_ms = 1000;
    a->timeout_ms = 5000;
    a->max_print = 100;
}

typedef struct printer {
    const cp_cli_verify_args *a;
    uint64_t printed, last_checked;
    double last_s;
    json_t *listed; /* --json: the differences printed */
} printer;

static void print_json(json_t *o) {
    char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    if (line != NULL)
        printf("%s\n", line);
    free(line);
    json_decref(o);
}

/* The key as text: printable bytes as they are, others (and " and \) as \xNN. */
static char *key_text(const char *key, size_t len) {
    char *out = malloc(len * 4 + 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            out[n++] = (char)c;
        else
            n += (size_t)sprintf(out + n, "\\x%02x", c);
    }
    out[n] = '\0';
    return out;
}

static void on_difference(const cp__verify_diff *d, void *arg) {
    printer *p = arg;
    if (p->printed >= (uint64_t)p->a->max_print)
        return;
    p->printed++;
    if (p->a->json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "source", d->source, "type",
                              cp__kc_type_name(d->type), "reason", cp__kc_reason_name(d->reason),
                              "detail", d->detail);
        json_t *key = json_stringn(d->key, d->klen);
        if (key == NULL) { /* not UTF-8: escaped as the text output writes it */
            char *text = key_text(d->key, d->klen);
            key = json_string(text ? text : "?");
            free(text);
        }
        if (o != NULL && key != NULL)
            json_object_set(o, "key", key);
        json_decref(key);
        if (o != NULL)
            json_array_append_new(p->listed, o);
        return;
    }
    char *key = key_text(d->key, d->klen);
    printf("difference: \"%s\" (%s, source %s): %s: %s\n", key ? key : "?",
           cp__kc_type_name(d->type), d->source, cp__kc_reason_name(d->reason), d->detail);
    free(key);
    fflush(stdout);
}

static json_t *counts_json(const cp__verify_status *st) {
    json_t *types = json_object(), *reasons = json_object();
    for (int t = 0; t < CP__KC_NTYPES; t++)
        json_object_set_new(types, cp__kc_type_name((cp__kc_type)t),
                            json_integer((json_int_t)st->per_type[t]));
    for (int r = 0; r < CP__KC_NREASONS; r++)
        json_object_set_new(reasons, cp__kc_reason_name((cp__kc_reason)r),
                            json_integer((json_int_t)st->by_reason[r]));
    return json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:f}", "keys_checked", (json_int_t)st->checked,
                     "keys_total", (json_int_t)st->keys_total, "types", types, "reasons", reasons,
                     "differences", (json_int_t)st->differences, "skipped", (json_int_t)st->skipped,
                     "elapsed_s", st->elapsed_s);
}

static void on_progress(const cp__verify_status *st, int final, void *arg) {
    printer *p = arg;
    if (final || p->a->quiet)
        return;
    double dt = st->elapsed_s - p->last_s;
    double rate = dt > 0 ? (double)(st->checked - p->last_checked) / dt : 0;
    p->last_s = st->elapsed_s;
    p->last_checked = st->checked;
    if (p->a->json) {
        json_t *o = counts_json(st);
        json_object_set_new(o, "schema", json_string("clusterpipe.verify/1"));
        json_object_set_new(o, "keys_per_s", json_real(rate));
        print_json(o);
    } else {
        printf("verify: %llu of %llu keys checked, %llu differences, %.0f keys/s\n",
               (unsigned long long)st->checked, (unsigned long long)st->keys_total,
               (unsigned long long)st->differences, rate);
    }
    fflush(stdout);
}

static void print_result(const printer *p, const cp__verify_status *st, int ok, const char *err) {
    uint64_t unprinted = st->differences - p->printed;
    if (p->a->json) {
        json_t *o = counts_json(st);
        json_object_set_new(o, "schema", json_string("clusterpipe.verify/1"));
        json_object_set_new(o, "ok", json_boolean(ok));
        json_object_set_new(o, "listed", json_incref(p->listed));
        json_object_set_new(o, "not_listed", json_integer((json_int_t)unprinted));
        json_object_set_new(o, "target_keys", json_integer((json_int_t)st->target_keys));
        json_object_set_new(o, "only_in_target", json_integer((json_int_t)st->only_in_target));
        if (!ok)
            json_object_set_new(o, "error", json_string(err));
        print_json(o);
        return;
    }
    if (unprinted > 0)
        printf("... and %llu more differences, not printed (--max-print %d)\n",
               (unsigned long long)unprinted, p->a->max_print);
    printf("verify: %llu keys checked in %.1f s:", (unsigned long long)st->checked, st->elapsed_s);
    for (int t = 0; t < CP__KC_NTYPES; t++)
        printf(" %s %llu%s", cp__kc_type_name((cp__kc_type)t), (unsigned long long)st->per_type[t],
               t + 1 < CP__KC_NTYPES ? "," : "\n");
    printf("verify: %llu differences (missing %llu, type %llu, value %llu, ttl %llu); %llu keys "
           "gone from the source while compared\n",
           (unsigned long long)st->differences, (unsigned long long)st->by_reason[CP__KC_MISSING],
           (unsigned long long)st->by_reason[CP__KC_TYPE],
           (unsigned long long)st->by_reason[CP__KC_VALUE],
           (unsigned long long)st->by_reason[CP__KC_TTL],
           (unsigned long long)st->by_reason[CP__KC_VANISHED]);
    if (st->skipped > 0)
        printf("verify: %llu keys of other types (modules') skipped, not compared "
               "(--skip-unknown-types)\n",
               (unsigned long long)st->skipped);
    if (ok)
        printf("verify: the target holds %llu keys that no source has (not differences)\n",
               (unsigned long long)st->only_in_target);
    if (ok && st->differences == 0)
        printf("verify: every key of the sources is on the target, the same.\n");
}

int cp_cli_verify_run(const cp_cli_verify_args *a, const cp_cli_sources *src) {
    static printer pr;
    memset(&pr, 0, sizeof pr);
    pr.a = a;
    pr.listed = json_array();
    static cp_options from_tls, to_tls;
    cp__verify_opts o = {.hosts = (const char *const *)src->hosts,
                         .ports = src->ports,
                         .nsources = src->n,
                         .to = a->to,
                         .from_password =
                             a->from_password != NULL ? a->from_password : src->yaml_password,
                         .to_password = a->to_password,
                         .from_user = a->from_user,
                         .to_user = a->to_user,
                         .from_tls = cp_cli_tls_options(&a->from_tls, &from_tls),
                         .to_tls = cp_cli_tls_options(&a->to_tls, &to_tls),
                         .db = a->db < 0 ? 0 : a->db,
                         .tolerance_ms = a->tolerance_ms,
                         .skip_unknown_types = a->skip_unknown_types,
                         .io_timeout_ms = a->timeout_ms,
                         .stop = &cp_cli_interrupted,
                         .progress = on_progress,
                         .difference = on_difference,
                         .arg = &pr};
    static cp__verify_status st;
    char err[2048] = "";
    int ok = cp__verify_run(&o, &st, err, sizeof err) == 0;
    print_result(&pr, &st, ok, err);
    fflush(stdout);
    if (!ok)
        fprintf(stderr, "clusterpipe verify: %s\n", err);
    json_decref(pr.listed);
    return ok && st.differences == 0 ? CP_EXIT_OK : CP_EXIT_FAIL;
}

int cp_cli_verify(int argc, char **argv) {
    static verify_flags f;
    memset(&f, 0, sizeof f);
    cp_cli_verify_defaults(&f.v);
    int prc = cp_cli_parse(&verify_cmd, argc, argv, 1, &f, NULL);
    if (prc != CP_CLI_GO)
        return prc;
    if (f.v.json && f.v.quiet)
        f.v.quiet = 0; /* JSON lines are for a program: it asked for them */
    cp_cli_sources src;
    int rc = cp_cli_sources_parse("verify", f.from, &src);
    if (rc == 0)
        rc = cp_cli_users_check("verify", f.v.from_user,
                                f.v.from_password ? f.v.from_password : src.yaml_password,
                                f.v.to_user, f.v.to_password);
    if (rc == 0)
        rc = cp_cli_tls_check("verify", &f.v.from_tls, &f.v.to_tls);
    static cp_options from_tls;
    if (rc == 0)
        rc = cp_cli_sources_resolve("verify", &src, f.v.from_user,
                                    f.v.from_password ? f.v.from_password : src.yaml_password,
                                    cp_cli_tls_options(&f.v.from_tls, &from_tls), f.v.timeout_ms);
    if (rc == 0) {
        if (src.cluster && !f.v.json && !f.v.quiet)
            printf("the source is a cluster: its %d masters are the sources\n", src.n);
        cp_cli_install_signals();
        rc = cp_cli_verify_run(&f.v, &src);
    }
    cp_cli_sources_free(&src);
    return rc;
}
