/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe load` and `clusterpipe bench`: flag parsing, target resolution (--cluster, --proxy
 * or --dir), progress on a TTY, the human summary on stdout, --json / --csv files, and exit codes
 * (0 ok, 1 the run failed: unreachable target, errors, mismatches; 2 bad usage). The work is done
 * by the bench engine (src/bench/engine.h), which never prints.
 *
 * Single-threaded from the CLI's point of view (the engine's progress callbacks come on this
 * thread). The only global is the signal flag that lets Ctrl-C end a run early with a summary.
 * Every allocation made here is freed before returning; a topology opened for --dir is only
 * closed (cp_topo_free), never stopped.
 */
#include "cli/cli.h"

#include "bench/engine.h"
#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"
#include "util/jsonfile.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 1024

/* A non-negative decimal (fractions allowed) in [min, max]; prints a usage error naming the
 * flag otherwise. */
static int parse_double(const char *cmd, const char *flag, const char *val, double min, double max,
                        double *out) {
    if (val == NULL || *val == '\0') {
        cp_cli_usage_error(cmd, "%s needs a value", flag);
        return -1;
    }
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (errno != 0 || *end != '\0' || end == val || !isfinite(v)) {
        cp_cli_usage_error(cmd, "%s: '%s' is not a number", flag, val);
        return -1;
    }
    if (v < min || v > max) {
        cp_cli_usage_error(cmd, "%s: %s is out of range [%g, %g]", flag, val, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_u64(const char *cmd, const char *flag, const char *val, uint64_t min, uint64_t max,
                     uint64_t *out) {
    long v;
    if (cp_cli_parse_long(cmd, flag, val, (long)min, (long)max, &v) != 0)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_layout(const char *cmd, const char *val, cp__key_layout *out) {
    if (val != NULL && cp__key_layout_parse(val, out) == 0)
        return 0;
    cp_cli_usage_error(cmd, "--key-layout: '%s' is not spread or per-master", val ? val : "");
    return -1;
}

/* ---- target ------------------------------------------------------------------------------------
 */

typedef struct target_flags {
    const char *cluster, *proxy, *dir, *password, *user;
    int tls, insecure;
    const char *cacert, *cert, *key;
} target_flags;

/* Consumes a TARGET flag, --password / --user or a TLS flag at argv[*i]. Returns 1 consumed, 0
 * not a target flag, -1 usage error (printed). */
static int target_flag(const char *cmd, int argc, char **argv, int *i, target_flags *tf) {
    const char *v = NULL;
    const char **slot = NULL;
    const char *name = NULL;
    if (strcmp(argv[*i], "--tls") == 0 || strcmp(argv[*i], "--insecure") == 0) {
        tf->tls = 1;
        tf->insecure |= strcmp(argv[*i], "--insecure") == 0;
        return 1;
    }
    if (cp_cli_flag_value(argc, argv, i, "--cacert", &v))
        slot = &tf->cacert, name = "--cacert";
    else if (cp_cli_flag_value(argc, argv, i, "--cert", &v))
        slot = &tf->cert, name = "--cert";
    else if (cp_cli_flag_value(argc, argv, i, "--key", &v))
        slot = &tf->key, name = "--key";
    else if (cp_cli_flag_value(argc, argv, i, "--cluster", &v))
        slot = &tf->cluster, name = "--cluster";
    else if (cp_cli_flag_value(argc, argv, i, "--proxy", &v))
        slot = &tf->proxy, name = "--proxy";
    else if (cp_cli_flag_value(argc, argv, i, "--dir", &v))
        slot = &tf->dir, name = "--dir";
    else if (cp_cli_flag_value(argc, argv, i, "--password", &v))
        slot = &tf->password, name = "--password";
    else if (cp_cli_flag_value(argc, argv, i, "--user", &v))
        slot = &tf->user, name = "--user";
    else
        return 0;
    if (v == NULL || *v == '\0') {
        cp_cli_usage_error(cmd, "%s needs a value", name);
        return -1;
    }
    *slot = v;
    return 1;
}

/* Builds the engine target from the flags. Returns CP_EXIT_OK, CP_EXIT_USAGE (printed) or
 * CP_EXIT_FAIL (printed: --dir cannot be opened). *topo is set for --dir (caller frees). */
static int resolve_target(const char *cmd, const target_flags *tf, cp__bench_target *t,
                          cp_topo **topo) {
    int n = (tf->cluster != NULL) + (tf->proxy != NULL) + (tf->dir != NULL);
    *topo = NULL;
    if (n == 0)
        return cp_cli_usage_error(cmd, "a target is needed: --cluster HOST:PORT[,...], "
                                       "--proxy HOST:PORT[,...] or --dir DIR");
    if (n > 1)
        return cp_cli_usage_error(cmd, "give only one of --cluster, --proxy and --dir");
    if (tf->user != NULL && tf->password == NULL && tf->dir == NULL)
        return cp_cli_usage_error(cmd, "--user needs --password");
    if ((tf->cacert || tf->cert || tf->key) && !tf->tls)
        return cp_cli_usage_error(cmd, "--cacert, --cert and --key need --tls");
    if (tf->tls && tf->proxy != NULL)
        return cp_cli_usage_error(cmd, "--tls: twemproxy (nutcracker) offers no TLS");
    if (tf->dir != NULL) {
        char err[ERRLEN];
        if (cp_topo_open(tf->dir, topo, err, sizeof(err)) != 0) {
            fprintf(stderr, "clusterpipe %s: --dir %s: %s\n", cmd, tf->dir, err);
            return CP_EXIT_FAIL;
        }
        /* A topology stopped by `down --keep` (or a reboot) still has its state file. */
        size_t nprocs = cp_topo_nprocs(*topo), alive = 0;
        for (size_t i = 0; i < nprocs; i++)
            alive += cp_topo_alive(*topo, i) != 0;
        if (alive == 0) {
            fprintf(stderr,
                    "clusterpipe %s: --dir %s: the topology is not running (none of its %zu "
                    "processes is alive); start one with 'clusterpipe up'\n",
                    cmd, tf->dir, nprocs);
            cp_topo_free(*topo);
            *topo = NULL;
            return CP_EXIT_FAIL;
        }
        if (alive < nprocs)
            fprintf(stderr, "clusterpipe %s: --dir %s: %zu of %zu processes are not running\n", cmd,
                    tf->dir, nprocs - alive, nprocs);
        if (cp__bench_target_from_topo(t, *topo, tf->password, tf->user) != 0) {
            fprintf(stderr, "clusterpipe %s: --dir %s: too many endpoints\n", cmd, tf->dir);
            cp_topo_free(*topo);
            *topo = NULL;
            return CP_EXIT_FAIL;
        }
        return CP_EXIT_OK;
    }
    const char *list = tf->cluster ? tf->cluster : tf->proxy;
    if (cp__bench_target_external(t, tf->cluster ? CP__TARGET_CLUSTER : CP__TARGET_PROXY, list,
                                  tf->password, tf->user) != 0)
        return cp_cli_usage_error(cmd, "%s: '%s' is not a list of HOST:PORT",
                                  tf->cluster ? "--cluster" : "--proxy", list);
    t->tls = tf->tls;
    t->tls_insecure = tf->insecure;
    t->tls_ca = tf->cacert;
    t->tls_cert = tf->cert;
    t->tls_key = tf->key;
    return CP_EXIT_OK;
}

/* "clusterpipe <argv...>" with arguments holding spaces or quotes single-quoted; --password
 * values are masked. Caller frees. */
static char *command_line(int argc, char **argv) {
    size_t n = 32;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) * 4 + 3;
    char *s = malloc(n), *p = s;
    if (s == NULL)
        return NULL;
    p += sprintf(p, "clusterpipe");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (i > 0 && strcmp(argv[i - 1], "--password") == 0)
            a = "***";
        else if (strncmp(a, "--password=", 11) == 0)
            a = "--password=***";
        *p++ = ' ';
        if (*a != '\0' && strpbrk(a, " \t'\"$\\;&|<>*?") == NULL) {
            p += sprintf(p, "%s", a);
            continue;
        }
        *p++ = '\'';
        for (; *a; a++) {
            if (*a == '\'')
                p += sprintf(p, "'\\''");
            else
                *p++ = *a;
        }
        *p++ = '\'';
    }
    *p = '\0';
    return s;
}

/* 1234567 -> "1,234,567" for the human table. */
static const char *grouped(double v, char *buf, size_t cap) {
    char raw[32];
    snprintf(raw, sizeof(raw), "%.0f", v < 0 ? 0 : v);
    size_t len = strlen(raw), o = 0;
    for (size_t i = 0; i < len && o + 2 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

/* ---- bench ------------------------------------------------------------------------------------
 */

static void bench_help(FILE *out) {
    fprintf(
        out,
        "usage: clusterpipe bench TARGET [options]\n"
        "TARGET: --cluster HOST:PORT[,...]  Redis Cluster seeds (one connection per master)\n"
        "        --proxy HOST:PORT[,...]    twemproxy (or plain redis) endpoints, clients\n"
        "                                   spread round-robin over them\n"
        "        --dir DIR                  a topology started by 'clusterpipe up' (its kind and\n"
        "                                   password are read from it; its processes' CPU is\n"
        "                                   measured)\n"
        "\n"
        "Runs GET/SET traffic with T threads x C clients x P requests in flight per\n"
        "connection, checks every GET reply against its key, and reports throughput,\n"
        "per-request latency, CPU per component (redis, proxy, client) over the measured\n"
        "interval, redirects, retries and failures.\n"
        "\n"
        "options:\n"
        "  --threads T          worker threads, each with its own event loop (default 1)\n"
        "  --clients C          clients in total (default 50); in cluster mode each has a\n"
        "                       lane (connection + pipeline) per master, fed the keys its\n"
        "                       master serves, so every connection keeps P in flight\n"
        "  --pipeline P         requests in flight per connection (default 1)\n"
        "  --requests N         total requests (default 100000)\n"
        "  --duration S         run for S seconds instead of a request count\n"
        "  --ratio SET:GET      operation mix (default 0:1, only GETs)\n"
        "  --keys K             key space key:0 .. key:K-1 (default 100000)\n"
        "  --key-dist D         uniform | zipf:S | sequential (default uniform)\n"
        "  --key-layout L       spread (default): key:N, keys all over the slots;\n"
        "                       per-master: key:{TAG}:NNNNNNNNNNNN, one hash tag per\n"
        "                       master, the keys redis-benchmark --cluster reads (key n\n"
        "                       has master n %% M's tag and number n / M; cluster only;\n"
        "                       load them with the same layout)\n"
        "  --value-size B       SET value size in bytes (default 64; same as load's to verify)\n"
        "  --rate R             total ops/s, paced per client (default: as fast as possible)\n"
        "  --seed N             key generator seed (default 1)\n"
        "  --retry-budget MS    time a batch may spend retrying after errors (TRYAGAIN,\n"
        "                       CLUSTERDOWN, lost connections) before giving up on them\n"
        "                       (default: the library's, 3000)\n"
        "  --no-verify          do not check GET replies\n"
        "  --json FILE          write the clusterpipe.bench/1 JSON report (atomically)\n"
        "  --csv FILE           write the numbers as CSV (atomically)\n"
        "  --password PW        AUTH password (default with --dir: the topology's)\n"
        "  --user U             ACL user for AUTH\n"
        "  --tls                TLS to the cluster (with --dir: from the topology)\n"
        "  --cacert FILE        CA bundle to verify the servers (default: the system's)\n"
        "  --cert FILE, --key FILE   client certificate and key (tls-auth-clients)\n"
        "  --insecure           TLS without verifying the servers' certificates\n"
        "  --quiet              no progress line on stderr\n"
        "\n"
        "Exit status: 0 ok; 1 the run failed (target unreachable, failed or unknown requests,\n"
        "verification mismatches); 2 bad usage.\n");
}

typedef struct progress_state {
    int tty;
} progress_state;

static void bench_progress(void *ud, const cp__bench_progress *p) {
    const progress_state *ps = ud;
    if (!ps->tty)
        return;
    char a[32], b[32];
    fprintf(stderr, "\r\033[K%5.0fs  %s ops/s  p99 %.0f us  errors %s%s", p->elapsed,
            grouped(p->ops_per_sec, a, sizeof(a)), p->p99_us,
            grouped((double)p->errors, b, sizeof(b)), p->mismatches ? "  MISMATCHES" : "");
    fflush(stderr);
}

static void print_cpu(const char *name, bool has, double s, uint64_t ops) {
    if (!has)
        printf("  %-7s n/a", name);
    else if (ops > 0)
        printf("  %-7s %.3f s (%.2f us/op)", name, s, s * 1e6 / (double)ops);
    else
        printf("  %-7s %.3f s", name, s);
}

static void print_summary(const cp__bench_target *t, const cp__bench_config *cfg,
                          const cp__bench_result *r) {
    char a[32], b[32], dist[32];
    cp__dist_format(&cfg->dist, dist, sizeof(dist));
    printf("clusterpipe bench: %s, %d %s, %s\n", cp__bench_target_topology(t), r->masters,
           t->mode == CP__TARGET_CLUSTER ? "masters" : "endpoints", t->endpoints);
    printf("workload     threads %d, clients %d, pipeline %d, ratio %u:%u, keys %llu%s, value "
           "%zu B, %s%s\n",
           cfg->threads, cfg->clients, cfg->pipeline, cfg->ratio_set, cfg->ratio_get,
           (unsigned long long)cfg->keys,
           cfg->key_layout == CP__KEYS_PER_MASTER ? " (per-master)" : "", cfg->value_size, dist,
           cfg->verify ? "" : ", no verify");
    printf("throughput   %s ops in %.3f s = %s ops/s (gets %llu, sets %llu, misses %llu)\n",
           grouped((double)r->ops, a, sizeof(a)), r->seconds, grouped(r->ops_per_sec, b, sizeof(b)),
           (unsigned long long)r->gets, (unsigned long long)r->sets, (unsigned long long)r->misses);
    printf("latency us   p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
           cp__hist_percentile_us(&r->latency, 50), cp__hist_percentile_us(&r->latency, 90),
           cp__hist_percentile_us(&r->latency, 99), cp__hist_percentile_us(&r->latency, 99.9),
           cp__hist_max_us(&r->latency));
    printf("cpu        ");
    print_cpu("redis", r->has_cpu_redis, r->cpu_redis, r->ops);
    print_cpu("proxy", r->has_cpu_proxy, r->cpu_proxy, r->ops);
    print_cpu("client", r->has_cpu_client, r->cpu_client, r->ops);
    printf("\n");
    printf("redirects    moved %llu, ask %llu; retries: tryagain %llu, clusterdown %llu, io "
           "%llu\n",
           (unsigned long long)r->stats.moved, (unsigned long long)r->stats.ask,
           (unsigned long long)r->stats.tryagain, (unsigned long long)r->stats.clusterdown,
           (unsigned long long)r->stats.io_retries);
    printf("outcomes     failed %llu (error replies %llu), unknown %llu\n",
           (unsigned long long)r->failed_ops, (unsigned long long)r->error_replies,
           (unsigned long long)r->unknown_ops);
    printf("verify       %s checked %llu, mismatches %llu\n", cfg->verify ? "on," : "off,",
           (unsigned long long)r->verify_checked, (unsigned long long)r->verify_mismatches);
    for (size_t i = 0; i < r->nmismatch; i++)
        fprintf(stderr, "clusterpipe bench: mismatch: key %s (slot %u, node %s): %s\n",
                r->mismatch[i].key, r->mismatch[i].slot, r->mismatch[i].node, r->mismatch[i].what);
    if (r->first_error[0] != '\0')
        fprintf(stderr, "clusterpipe bench: first error: %s\n", r->first_error);
}

int cp_cli_bench(int argc, char **argv) {
    const char *cmd = "bench";
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    target_flags tf = {0};
    const char *json_path = NULL, *csv_path = NULL;
    int have_requests = 0, have_duration = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int tr = target_flag(cmd, argc, argv, &i, &tf);
        if (tr < 0)
            return CP_EXIT_USAGE;
        if (tr > 0)
            continue;
        if (cp_cli_is_help(argv[i])) {
            bench_help(stdout);
            return CP_EXIT_OK;
        } else if (cp_cli_flag_value(argc, argv, &i, "--threads", &v)) {
            if (cp_cli_parse_int(cmd, "--threads", v, 1, 1024, &cfg.threads))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--clients", &v)) {
            if (cp_cli_parse_int(cmd, "--clients", v, 1, 100000, &cfg.clients))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--pipeline", &v)) {
            if (cp_cli_parse_int(cmd, "--pipeline", v, 1, 100000, &cfg.pipeline))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--requests", &v)) {
            if (parse_u64(cmd, "--requests", v, 1, (uint64_t)LONG_MAX, &cfg.requests))
                return CP_EXIT_USAGE;
            have_requests = 1;
        } else if (cp_cli_flag_value(argc, argv, &i, "--duration", &v)) {
            if (parse_double(cmd, "--duration", v, 0.001, 1e7, &cfg.duration_s))
                return CP_EXIT_USAGE;
            have_duration = 1;
        } else if (cp_cli_flag_value(argc, argv, &i, "--ratio", &v)) {
            if (v == NULL || cp__ratio_parse(v, &cfg.ratio_set, &cfg.ratio_get) != 0)
                return cp_cli_usage_error(cmd,
                                          "--ratio: '%s' is not SET:GET (two integers, not both "
                                          "0, e.g. 1:10)",
                                          v ? v : "");
        } else if (cp_cli_flag_value(argc, argv, &i, "--keys", &v)) {
            if (parse_u64(cmd, "--keys", v, 1, (uint64_t)LONG_MAX, &cfg.keys))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--key-dist", &v)) {
            if (v == NULL || cp__dist_parse(v, &cfg.dist) != 0)
                return cp_cli_usage_error(
                    cmd, "--key-dist: '%s' is not uniform, sequential or zipf:S (S > 0)",
                    v ? v : "");
        } else if (cp_cli_flag_value(argc, argv, &i, "--key-layout", &v)) {
            if (parse_layout(cmd, v, &cfg.key_layout))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--value-size", &v)) {
            long vs;
            if (cp_cli_parse_long(cmd, "--value-size", v, 1, CP__VALUE_MAX_SIZE, &vs))
                return CP_EXIT_USAGE;
            cfg.value_size = (size_t)vs;
        } else if (cp_cli_flag_value(argc, argv, &i, "--rate", &v)) {
            if (parse_double(cmd, "--rate", v, 0, 1e12, &cfg.rate))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--retry-budget", &v)) {
            if (cp_cli_parse_int(cmd, "--retry-budget", v, 0, 3600000, &cfg.retry_budget_ms))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--seed", &v)) {
            if (parse_u64(cmd, "--seed", v, 0, (uint64_t)LONG_MAX, &cfg.seed))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--json", &v)) {
            if (v == NULL || *v == '\0')
                return cp_cli_usage_error(cmd, "--json needs a file name");
            json_path = v;
        } else if (cp_cli_flag_value(argc, argv, &i, "--csv", &v)) {
            if (v == NULL || *v == '\0')
                return cp_cli_usage_error(cmd, "--csv needs a file name");
            csv_path = v;
        } else if (strcmp(argv[i], "--no-verify") == 0) {
            cfg.verify = false;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            quiet = 1;
        } else {
            return cp_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
    }
    if (have_requests && have_duration)
        return cp_cli_usage_error(cmd, "give either --requests or --duration, not both");
    if (have_duration)
        cfg.requests = 0;
    char err[ERRLEN];
    if (cp__bench_config_check(&cfg, err, sizeof(err)) != 0)
        return cp_cli_usage_error(cmd, "%s", err);

    cp__bench_target t;
    cp_topo *topo = NULL;
    int rc = resolve_target(cmd, &tf, &t, &topo);
    if (rc != CP_EXIT_OK)
        return rc;
    cp_cli_install_signals();
    char *cmdline = command_line(argc, argv);
    progress_state ps = {!quiet && isatty(STDERR_FILENO)};
    cfg.command_line = cmdline;
    cfg.progress = bench_progress;
    cfg.progress_ud = &ps;
    cfg.cancel = &cp_cli_interrupted;

    cp__bench_result *r = malloc(sizeof(*r));
    if (r == NULL) {
        fprintf(stderr, "clusterpipe bench: out of memory\n");
        free(cmdline);
        cp_topo_free(topo);
        return CP_EXIT_FAIL;
    }
    int erc = cp__bench_run(&t, &cfg, r, err, sizeof(err));
    if (ps.tty)
        fprintf(stderr, "\r\033[K");
    if (erc != 0) {
        fprintf(stderr, "clusterpipe bench: %s\n", err[0] ? err : cp_strerror(erc));
        rc = erc == CP_EINVAL ? CP_EXIT_USAGE : CP_EXIT_FAIL;
    } else {
        print_summary(&t, &cfg, r);
        rc = cp__bench_result_failed(r) ? CP_EXIT_FAIL : CP_EXIT_OK;
        if (cp_cli_interrupted) {
            /* Not the run that was asked for: exit 1, and any file says so. */
            fprintf(stderr, "clusterpipe bench: interrupted; the numbers cover the run so far\n");
            rc = CP_EXIT_FAIL;
        }
        if (json_path != NULL) {
            json_t *j = cp__bench_json(&t, &cfg, r);
            if (j != NULL && cp_cli_interrupted)
                json_object_set_new(j, "interrupted", json_true());
            if (j == NULL || cp__json_write_file(json_path, j, err, sizeof(err)) != 0) {
                fprintf(stderr, "clusterpipe bench: --json: %s\n", j ? err : "out of memory");
                rc = CP_EXIT_FAIL;
            }
            json_decref(j);
        }
        if (csv_path != NULL && cp_cli_interrupted)
            fprintf(stderr, "clusterpipe bench: --csv not written: the run was interrupted\n");
        else if (csv_path != NULL &&
                 cp__bench_write_csv(csv_path, &t, &cfg, r, err, sizeof(err)) != 0) {
            fprintf(stderr, "clusterpipe bench: --csv: %s\n", err);
            rc = CP_EXIT_FAIL;
        }
        if (rc == CP_EXIT_FAIL && cp__bench_result_failed(r))
            fprintf(stderr,
                    "clusterpipe bench: the run failed: %llu failed, %llu unknown, %llu "
                    "mismatches\n",
                    (unsigned long long)r->failed_ops, (unsigned long long)r->unknown_ops,
                    (unsigned long long)r->verify_mismatches);
    }
    cp__bench_result_free(r);
    free(r);
    free(cmdline);
    cp_topo_free(topo);
    return rc;
}

/* ---- load -------------------------------------------------------------------------------------
 */

static void load_help(FILE *out) {
    fprintf(out, "usage: clusterpipe load TARGET --keys N [options]\n"
                 "TARGET: --cluster HOST:PORT[,...] | --proxy HOST:PORT[,...] | --dir DIR\n"
                 "\n"
                 "Writes key:0 .. key:N-1 once each with values that embed their key (so 'bench'\n"
                 "can verify them), pipelined over every node (into a cluster in slot order, one\n"
                 "MSET per run of keys of one slot), then checks that the servers hold exactly N\n"
                 "keys (cluster masters, or the shards of a twemproxy topology from --dir;\n"
                 "skipped for an external --proxy).\n"
                 "\n"
                 "options:\n"
                 "  --keys N         keys to write (required)\n"
                 "  --value-size B   value size in bytes (default 64)\n"
                 "  --pipeline P     keys in flight per connection (default 512 against a\n"
                 "                   cluster, 64 through a proxy)\n"
                 "  --mset K         keys per command: a cluster is written in slot order, and\n"
                 "                   up to K neighbouring keys of one slot go as one MSET\n"
                 "                   (default 16 against a cluster; 1 = one SET per key, the\n"
                 "                   default through a proxy)\n"
                 "  --key-layout L   spread (default) or per-master: keys named as\n"
                 "                   redis-benchmark --cluster names them (see bench --help)\n"
                 "  --threads T      worker threads (default 2)\n"
                 "  --clients C      clients in total (default 4 per thread)\n"
                 "  --no-check       skip the DBSIZE check (e.g. the servers hold other keys)\n"
                 "  --password PW    AUTH password (default with --dir: the topology's)\n"
                 "  --user U         ACL user for AUTH\n"
                 "  --tls, --cacert FILE, --cert FILE, --key FILE, --insecure\n"
                 "                   TLS to the cluster, as for bench\n"
                 "  --quiet          no progress bar on stderr\n"
                 "\n"
                 "Exit status: 0 ok; 1 keys not written or the count differs; 2 bad usage.\n");
}

static void load_progress(void *ud, const cp__load_progress *p) {
    const progress_state *ps = ud;
    if (!ps->tty || p->total == 0)
        return;
    double frac = (double)p->done / (double)p->total;
    if (frac > 1)
        frac = 1;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    char a[32], b[32], c[32];
    double eta = p->rate > 0 ? (double)(p->total - p->done) / p->rate : 0;
    fprintf(stderr, "\r\033[K[%s] %3.0f%%  %s/%s keys  %s keys/s  ETA %.0fs", bar, frac * 100,
            grouped((double)p->done, a, sizeof(a)), grouped((double)p->total, b, sizeof(b)),
            grouped(p->rate, c, sizeof(c)), eta);
    if (p->failed)
        fprintf(stderr, "  failed %llu", (unsigned long long)p->failed);
    fflush(stderr);
}

int cp_cli_load(int argc, char **argv) {
    const char *cmd = "load";
    cp__load_config cfg;
    cp__load_config_init(&cfg);
    target_flags tf = {0};
    int have_keys = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int tr = target_flag(cmd, argc, argv, &i, &tf);
        if (tr < 0)
            return CP_EXIT_USAGE;
        if (tr > 0)
            continue;
        if (cp_cli_is_help(argv[i])) {
            load_help(stdout);
            return CP_EXIT_OK;
        } else if (cp_cli_flag_value(argc, argv, &i, "--keys", &v)) {
            if (parse_u64(cmd, "--keys", v, 1, (uint64_t)LONG_MAX, &cfg.keys))
                return CP_EXIT_USAGE;
            have_keys = 1;
        } else if (cp_cli_flag_value(argc, argv, &i, "--value-size", &v)) {
            long vs;
            if (cp_cli_parse_long(cmd, "--value-size", v, 1, CP__VALUE_MAX_SIZE, &vs))
                return CP_EXIT_USAGE;
            cfg.value_size = (size_t)vs;
        } else if (cp_cli_flag_value(argc, argv, &i, "--pipeline", &v)) {
            if (cp_cli_parse_int(cmd, "--pipeline", v, 1, 100000, &cfg.pipeline))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--mset", &v)) {
            if (cp_cli_parse_int(cmd, "--mset", v, 1, 65535, &cfg.mset))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--key-layout", &v)) {
            if (parse_layout(cmd, v, &cfg.key_layout))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--threads", &v)) {
            if (cp_cli_parse_int(cmd, "--threads", v, 1, 1024, &cfg.threads))
                return CP_EXIT_USAGE;
        } else if (cp_cli_flag_value(argc, argv, &i, "--clients", &v)) {
            if (cp_cli_parse_int(cmd, "--clients", v, 1, 100000, &cfg.clients))
                return CP_EXIT_USAGE;
        } else if (strcmp(argv[i], "--no-check") == 0) {
            cfg.check_dbsize = false;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            quiet = 1;
        } else {
            return cp_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
    }
    if (!have_keys)
        return cp_cli_usage_error(cmd, "--keys N is required");
    char why[160];
    if (cp__load_mset_check(cfg.mset, cfg.value_size, why, sizeof(why)) != 0)
        return cp_cli_usage_error(cmd, "%s", why);
    if (cfg.clients > 0 && cfg.clients < cfg.threads)
        return cp_cli_usage_error(cmd, "--clients (%d) must be >= --threads (%d)", cfg.clients,
                                  cfg.threads);
    size_t maxkey = cp__key_max_len_of(cfg.key_prefix, cfg.key_layout, cfg.keys);
    if (cfg.value_size < cp__value_min_size(maxkey))
        return cp_cli_usage_error(cmd,
                                  "--value-size %zu cannot hold a verifiable value for keys of "
                                  "%zu bytes (minimum %zu)",
                                  cfg.value_size, maxkey, cp__value_min_size(maxkey));
    cp__bench_target t;
    cp_topo *topo = NULL;
    int rc = resolve_target(cmd, &tf, &t, &topo);
    if (rc != CP_EXIT_OK)
        return rc;
    cp_cli_install_signals();
    progress_state ps = {!quiet && isatty(STDERR_FILENO)};
    cfg.progress = load_progress;
    cfg.progress_ud = &ps;
    cfg.cancel = &cp_cli_interrupted;
    cp__load_result r;
    char err[ERRLEN];
    int erc = cp__load_run(&t, &cfg, &r, err, sizeof(err));
    if (ps.tty)
        fprintf(stderr, "\r\033[K");
    char a[32], b[32];
    char how[48] = "SET per key";
    if (r.mset > 1)
        snprintf(how, sizeof(how), "MSET of <= %d keys", r.mset);
    if (r.seconds > 0)
        printf("loaded %s keys of %zu B in %.3f s = %s keys/s (%s, pipeline %d, %s)\n",
               grouped((double)r.written, a, sizeof(a)), cfg.value_size, r.seconds,
               grouped(r.keys_per_sec, b, sizeof(b)), cp__bench_target_topology(&t), r.pipeline,
               how);
    if (erc == 0) {
        if (r.dbsize_checked)
            printf("key count    the servers hold %lld keys, as expected\n", r.dbsize);
        else if (r.note[0] != '\0')
            printf("key count    %s\n", r.note);
        rc = CP_EXIT_OK;
    } else {
        fprintf(stderr, "clusterpipe load: %s\n", err[0] ? err : cp_strerror(erc));
        rc = erc == CP_EINVAL ? CP_EXIT_USAGE : CP_EXIT_FAIL;
    }
    cp_topo_free(topo);
    return rc;
}
