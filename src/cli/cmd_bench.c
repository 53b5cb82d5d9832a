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
#include "cli/flags.h"
#include "cli/flagsets.h"

#include "bench/engine.h"
#include "bench/libmem.h"
#include "bench/limits.h"
#include "bench/load.h"
#include "bench/report.h"
#include "bench/target.h"
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

/* ---- target ------------------------------------------------------------------------------------
 */

/* Builds the engine target from the flags. Returns CP_EXIT_OK, CP_EXIT_USAGE (printed) or
 * CP_EXIT_FAIL (printed: --dir cannot be opened). *topo is set for --dir (caller frees). */
static int resolve_target(const char *cmd, const cp_cli_target *tf, cp__bench_target *t,
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
        t->protocol = tf->protocol;
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
    t->protocol = tf->protocol;
    return CP_EXIT_OK;
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

/* The two adjacent fields --ratio fills (flagsets.h). */
_Static_assert(offsetof(cp__bench_config, ratio_get) ==
                   offsetof(cp__bench_config, ratio_set) + sizeof(unsigned),
               "ratio_set, ratio_get adjacent");

/* What bench and load parse into: their engine's configuration, the target, the CLI's own. */
typedef struct bench_opts {
    cp__bench_config cfg;
    cp_cli_target tf;
    cp_cli_commands cmds;
    const char *json, *csv, *hdr;
    const char *lib_memory; /* --lib-memory FILE */
    int quiet;
    int client_cache;          /* --client-cache (or --client-cache-size) */
    cp_cache_options cache_sz; /* --client-cache-size; zeros: the library's defaults */
} bench_opts;
typedef struct load_opts {
    cp__load_config cfg;
    cp_cli_target tf;
    int quiet;
} load_opts;

_Static_assert(CP__MAX_INFLIGHT_DEFAULT == 16384, "--max-inflight's help says 16384");
#define BO(field) offsetof(bench_opts, field)
#define BC(field) offsetof(bench_opts, cfg.field)

static const cp_cli_flag bench_rows[] = {
    {.kind = CP_CLI_INCLUDE, .include = cp_cli_target_flags, .off = BO(tf)},
    CP_CLI_HEAD("options:"),
    CP_CLI_LIKE(cp_cli_def_threads, BC(threads),
                "worker threads, each with its own event loop (default 1)"),
    CP_CLI_LIKE(cp_cli_def_clients, BC(clients),
                "clients in total (default 50); in cluster mode each has a\nlane (connection + "
                "pipeline) per master, fed the keys its\nmaster serves, so every connection keeps "
                "P in flight"),
    CP_CLI_LIKE(cp_cli_def_pipeline, BC(pipeline), "requests in flight per connection (default 1)"),
    CP_CLI_LIKE(cp_cli_def_requests, BC(requests), "total requests (default 100000)"),
    CP_CLI_LIKE(cp_cli_def_duration, BC(duration_s), NULL),
    CP_CLI_LIKE(cp_cli_def_ratio, BC(ratio_set), "operation mix (default 0:1, only GETs)"),
    {.kind = CP_CLI_INCLUDE, .include = cp_cli_command_flags, .off = BO(cmds)},
    CP_CLI_LIKE(cp_cli_def_keys, BC(keys), "key space key:0 .. key:K-1 (default 100000)"),
    CP_CLI_LIKE(cp_cli_def_key_dist, BC(dist), NULL),
    CP_CLI_LIKE(cp_cli_def_key_layout, BC(key_layout),
                "spread (default): key:N, keys all over the slots;\nper-master: "
                "key:{TAG}:NNNNNNNNNNNN, one hash tag per\nmaster, the keys redis-benchmark "
                "--cluster reads (key n\nhas master n % M's tag and number n / M; cluster "
                "only;\nload them with the same layout)"),
    CP_CLI_LIKE(cp_cli_def_value_size, BC(value_size),
                "SET value size: B bytes (default 64), MIN-MAX (uniform)\nor SIZE:WEIGHT,... "
                "(e.g. 100:7,1000:2,10000:1); a key's\nsize comes from its name, so give load's "
                "to verify"),
    {.name = "--rate",
     .arg = "R",
     .kind = CP_CLI_DOUBLE,
     .dmin = 0,
     .dmax = 1e12,
     .off = BC(rate),
     .help = "total ops/s, paced per client (default: as fast as possible)"},
    CP_CLI_NUM("--max-inflight", "N", CP_CLI_INT, 1, CP__MAX_INFLIGHT_MAX, BC(max_inflight),
               "with --rate: requests a lane (a client's connection to\none master) may have "
               "in flight (default 16384, at least\n--pipeline); past it its batches are shed: "
               "not sent,\ncounted as failed and as shed. A master down holds at\nmost clients "
               "x N requests, about 950 bytes each at\n--pipeline 1"),
    CP_CLI_NUM("--seed", "N", CP_CLI_U64, 0, LONG_MAX, BC(seed), "key generator seed (default 1)"),
    CP_CLI_LIKE(cp_cli_def_retry_budget, BC(retry_budget_ms),
                "time a batch may spend retrying after errors (TRYAGAIN,\nCLUSTERDOWN, lost "
                "connections) before giving up on them\n(default: the library's, 3000)"),
    CP_CLI_LIKE(cp_cli_def_read_from, BC(read_from),
                "cluster: where reads go: master (default), replica (never\nthe master) or "
                "replica-preferred (the master when a\nshard has no usable replica); READONLY "
                "on every connection"),
    CP_CLI_LIKE(cp_cli_def_no_verify, BC(verify),
                "do not check replies (GETs; with --command its reads and\ncounters)"),
    CP_CLI_LIKE(cp_cli_def_client_cache, BO(client_cache),
                "cluster: a client-side cache in every client (CLIENT\nTRACKING: --protocol 3 "
                "unless --protocol 2 is given,\nthen a tracking link per node; refused with "
                "--proxy);\nGETs it answers are verified "
                "as any;\nreports the hit ratio over the run, hit and miss\nlatencies, "
                "invalidations, evictions and entries"),
    CP_CLI_LIKE(cp_cli_def_client_cache_size, BO(cache_sz), NULL),
    CP_CLI_STR("--json", "FILE", BO(json),
               "write the clusterpipe.bench/1 JSON report (atomically)"),
    CP_CLI_STR("--csv", "FILE", BO(csv), "write the numbers as CSV (atomically)"),
    CP_CLI_STR("--hdr-file", "FILE", BO(hdr),
               "write the latency distribution of every request in\nHdrHistogram's .hgrm "
               "percentile text (atomically; values\nin microseconds, as the JSON's latency_us); "
               "with\n--command also each command's, FILE without .hgrm then\n-N-NAME.hgrm "
               "(lat.hgrm: lat-1-HSET.hgrm, ...)"),
    CP_CLI_STR("--lib-memory", "FILE", BO(lib_memory),
               "count the library's allocations (a counting allocator\nset with "
               "cp_set_allocators) and append every second\n\"mem SECONDS RSS_KB LIVE_BYTES "
               "LIVE_BLOCKS MALLOC_USED\nMALLOC_FREE MALLOC_MMAP MALLOC_HEAP\" to FILE: the "
               "process's\nresident memory, the library's live bytes and glibc\nmalloc's "
               "bytes in use, free in its heaps, mmapped and\nits heaps' size (mallinfo2); "
               "FILE.sites holds the call\nsites that hold the live bytes, rewritten every "
               "second\n(\"BYTES BLOCKS OFFSET SYMBOL\")"),
    CP_CLI_LIKE(cp_cli_def_quiet, BO(quiet), "no progress line on stderr"),
    CP_CLI_END,
};

static const cp_cli_cmd bench_cmd = {
    .name = "bench",
    .usage = "usage: clusterpipe bench TARGET [options]\n"
             "\n"
             "Runs GET/SET traffic (or the --command templates) with T threads x C clients x P\n"
             "requests in flight per connection, checks every GET reply against its key, and\n"
             "reports throughput, per-request latency, CPU per component (redis, proxy,\n"
             "client) over the measured interval, redirects, retries and failures; with\n"
             "--command also each command's ops, latency, errors and checks.\n"
             "\n",
    .rows = bench_rows,
    .epilog = "\n"
              "Exit status: 0 ok; 1 the run failed (target unreachable, failed or unknown "
              "requests,\nverification mismatches); 2 bad usage.\n",
    .width = 23,
};

typedef struct progress_state {
    int tty;
    FILE *mem;              /* --lib-memory: its file (NULL: none) */
    const char *sites_path; /* and FILE.sites */
} progress_state;

static void bench_progress(void *ud, const cp__bench_progress *p) {
    const progress_state *ps = ud;
    if (ps->mem != NULL)
        cp__libmem_sample(ps->mem, ps->sites_path, p->elapsed);
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

/* The client-side cache's lines: its share of the reads, who answered how fast, what it
 * dropped and holds. CPU per op above counts every op, hits included (as without a cache). */
static void print_cache(const cp__bench_result *r) {
    const cp_cache_stats *st = &r->cache.stats;
    uint64_t reads = st->hits + st->misses;
    const cp__hist *h = &r->cache.hit_latency, *m = &r->cache.miss_latency;
    if (reads > 0)
        printf("cache        hit ratio %.1f%% (hits %llu, misses %llu); cpu per op above: all "
               "ops, hits included\n",
               100.0 * (double)st->hits / (double)reads, (unsigned long long)st->hits,
               (unsigned long long)st->misses);
    else
        printf("cache        no cacheable reads\n");
    printf("  latency us hits p50 %.1f p99 %.1f; misses p50 %.1f p99 %.1f\n",
           cp__hist_percentile_us(h, 50), cp__hist_percentile_us(h, 99),
           cp__hist_percentile_us(m, 50), cp__hist_percentile_us(m, 99));
    printf("  stored %llu (not %llu), invalidations %llu, dropped %llu, evictions %llu; holds "
           "%llu entries, %llu bytes\n",
           (unsigned long long)st->stored, (unsigned long long)st->not_stored,
           (unsigned long long)st->invalidations, (unsigned long long)st->dropped,
           (unsigned long long)st->evictions, (unsigned long long)st->entries,
           (unsigned long long)st->bytes);
}

/* A --command run's part per command: which were verified, then a row each. */
static void print_commands(const cp__bench_config *cfg, const cp__bench_result *r) {
    const cp__cmdset *set = cfg->commands;
    char line[2][1024];
    size_t len[2] = {0, 0};
    for (int k = 0; k < set->n; k++) {
        int v = cfg->verify && set->t[k].check != CP__CHECK_NONE;
        len[v] += (size_t)snprintf(line[v] + len[v], sizeof(line[v]) - len[v], "%s%s (%d)",
                                   len[v] ? ", " : "", set->t[k].name, k + 1);
        if (len[v] >= sizeof(line[v]))
            len[v] = sizeof(line[v]) - 1;
    }
    printf("commands     verified: %s; counted only: %s\n", len[1] ? line[1] : "none",
           len[0] ? line[0] : "none");
    printf("  # %-36s %6s %12s %8s %8s %10s %10s %9s %9s %9s\n", "command", "weight", "ops",
           "failed", "misses", "checked", "mismatches", "p50 us", "p99 us", "p99.9 us");
    for (size_t k = 0; k < r->ncommands; k++) {
        const cp__template *t = &set->t[k];
        const cp__bench_cmd_result *c = &r->commands[k];
        char ops[32], miss[32] = "-", chk[32] = "-", mism[32] = "-";
        if (t->read)
            snprintf(miss, sizeof(miss), "%llu", (unsigned long long)c->misses);
        if (cfg->verify && t->check != CP__CHECK_NONE) {
            snprintf(chk, sizeof(chk), "%llu", (unsigned long long)c->verify_checked);
            snprintf(mism, sizeof(mism), "%llu", (unsigned long long)c->verify_mismatches);
        }
        int cut = strlen(t->text) > 36;
        printf("%3zu %-*.*s%s %6u %12s %8llu %8s %10s %10s %9.1f %9.1f %9.1f\n", k + 1,
               cut ? 33 : 36, cut ? 33 : 36, t->text, cut ? "..." : "", set->weight[k],
               grouped((double)c->ops, ops, sizeof(ops)),
               (unsigned long long)(c->failed_ops + c->unknown_ops), miss, chk, mism,
               cp__hist_percentile_us(&c->latency, 50), cp__hist_percentile_us(&c->latency, 99),
               cp__hist_percentile_us(&c->latency, 99.9));
    }
}

static void print_summary(const cp__bench_target *t, const cp__bench_config *cfg,
                          const cp__bench_result *r) {
    char a[32], b[32], dist[64], sizes[256], mix[160];
    cp__dist_format(&cfg->dist, dist, sizeof(dist));
    cp__value_sizes_format(&cfg->value_size, sizes, sizeof(sizes));
    if (cfg->commands != NULL)
        snprintf(mix, sizeof(mix), "commands %d (ratio %s)", cfg->commands->n,
                 cfg->commands->ratio);
    else
        snprintf(mix, sizeof(mix), "ratio %u:%u", cfg->ratio_set, cfg->ratio_get);
    printf("clusterpipe bench: %s, %d %s, %s\n", cp__bench_target_topology(t), r->masters,
           t->mode == CP__TARGET_CLUSTER ? "masters" : "endpoints", t->endpoints);
    printf("workload     threads %d, clients %d, pipeline %d, %s, keys %llu%s, value %s B, "
           "%s%s\n",
           cfg->threads, cfg->clients, cfg->pipeline, mix, (unsigned long long)cfg->keys,
           cfg->key_layout == CP__KEYS_PER_MASTER ? " (per-master)" : "", sizes, dist,
           cfg->verify ? "" : ", no verify");
    if (cfg->read_from != CP_READ_MASTER)
        printf("reads        on replicas (%s)\n",
               cfg->read_from == CP_READ_REPLICA ? "replica" : "replica-preferred");
    if (cfg->commands != NULL)
        printf("throughput   %s ops in %.3f s = %s ops/s (reads %llu, misses %llu)\n",
               grouped((double)r->ops, a, sizeof(a)), r->seconds,
               grouped(r->ops_per_sec, b, sizeof(b)), (unsigned long long)r->gets,
               (unsigned long long)r->misses);
    else
        printf("throughput   %s ops in %.3f s = %s ops/s (gets %llu, sets %llu, misses %llu)\n",
               grouped((double)r->ops, a, sizeof(a)), r->seconds,
               grouped(r->ops_per_sec, b, sizeof(b)), (unsigned long long)r->gets,
               (unsigned long long)r->sets, (unsigned long long)r->misses);
    printf("latency us   p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
           cp__hist_percentile_us(&r->latency, 50), cp__hist_percentile_us(&r->latency, 90),
           cp__hist_percentile_us(&r->latency, 99), cp__hist_percentile_us(&r->latency, 99.9),
           cp__hist_max_us(&r->latency));
    printf("cpu        ");
    print_cpu("redis", r->has_cpu_redis, r->cpu_redis, r->ops);
    print_cpu("proxy", r->has_cpu_proxy, r->cpu_proxy, r->ops);
    print_cpu("client", r->has_cpu_client, r->cpu_client, r->ops);
    if (r->has_cpu_replicas && r->cpu_replicas > 0) /* the part of redis's */
        print_cpu("(replicas", true, r->cpu_replicas, r->ops), printf(")");
    if (r->has_cpu_wire) /* the network's, apart from the rest */
        print_cpu("; wire", true, r->cpu_wire, r->ops);
    printf("\n");
    if (r->has_cpu_wire && r->seconds > 0 && r->cpu_wire / r->seconds > CP__WIRE_BUSY_CORES)
        fprintf(stderr,
                "clusterpipe bench: warning: the wire was busy %.2f cores (more than %.1f): its "
                "own queueing is part of these latencies and this throughput\n",
                r->cpu_wire / r->seconds, CP__WIRE_BUSY_CORES);
    printf("redirects    moved %llu, ask %llu; retries: tryagain %llu, clusterdown %llu, io "
           "%llu\n",
           (unsigned long long)r->stats.moved, (unsigned long long)r->stats.ask,
           (unsigned long long)r->stats.tryagain, (unsigned long long)r->stats.clusterdown,
           (unsigned long long)r->stats.io_retries);
    printf("outcomes     failed %llu (error replies %llu, shed %llu), unknown %llu\n",
           (unsigned long long)r->failed_ops, (unsigned long long)r->error_replies,
           (unsigned long long)r->shed_ops, (unsigned long long)r->unknown_ops);
    printf("verify       %s checked %llu, mismatches %llu\n", cfg->verify ? "on," : "off,",
           (unsigned long long)r->verify_checked, (unsigned long long)r->verify_mismatches);
    if (r->cache.on)
        print_cache(r);
    if (cfg->commands != NULL)
        print_commands(cfg, r);
    for (size_t i = 0; i < r->nmismatch; i++)
        fprintf(stderr, "clusterpipe bench: mismatch: %s%skey %s (slot %u, node %s): %s\n",
                r->mismatch[i].command, r->mismatch[i].command[0] ? " " : "", r->mismatch[i].key,
                r->mismatch[i].slot, r->mismatch[i].node, r->mismatch[i].what);
    if (r->first_error[0] != '\0')
        fprintf(stderr, "clusterpipe bench: first error: %s\n", r->first_error);
}

/* Each command's .hgrm file (--hdr-file of a --command run), named in its JSON object. */
static void name_command_hgrms(json_t *j, const char *hdr_path, const cp__bench_config *cfg) {
    json_t *a = json_object_get(j, "commands");
    for (size_t k = 0; k < json_array_size(a) && cfg->commands != NULL; k++) {
        char file[4200];
        cp__bench_hgrm_command_path(hdr_path, k, cfg->commands->t[k].name, file, sizeof(file));
        const char *base = strrchr(file, '/');
        json_object_set_new(json_array_get(a, k), "hgrm", json_string(base ? base + 1 : file));
    }
}

/* bench once the flags are parsed (o->cfg.commands built, owned by the caller). */
static int run_bench(const bench_opts *o, int argc, char **argv);
static int run_bench_with(const bench_opts *op, cp__bench_config *cfgp, progress_state *psp,
                          int argc, char **argv);

int cp_cli_bench(int argc, char **argv) {
    const char *cmd = "bench";
    bench_opts o = {0};
    cp__bench_config_init(&o.cfg);
    cp_cli_seen seen;
    int rc = cp_cli_parse(&bench_cmd, argc, argv, 1, &o, &seen);
    if (rc != CP_CLI_GO)
        return rc;
    if (cp_cli_given(&seen, "--requests") && cp_cli_given(&seen, "--duration"))
        return cp_cli_usage_error(cmd, "give either --requests or --duration, not both");
    if (cp_cli_given(&seen, "--duration"))
        o.cfg.requests = 0;
    if (o.cmds.n > 0 && cp_cli_given(&seen, "--ratio"))
        return cp_cli_usage_error(cmd, "--ratio is the GET/SET mix: with --command, give the "
                                       "commands' weights with --command-ratio");
    o.tf.tls |= o.tf.insecure;
    if (cp_cli_given(&seen, "--client-cache-size"))
        o.client_cache = 1;
    if (o.client_cache) {
        if (o.tf.proxy != NULL)
            return cp_cli_usage_error(cmd, "--client-cache: twemproxy cannot track keys for its "
                                           "clients (CLIENT TRACKING); give a --cluster or a "
                                           "--dir cluster target");
        if (o.tf.protocol == 0) /* RESP3 carries invalidations on each connection */
            o.tf.protocol = 3;
        o.cfg.client_cache = &o.cache_sz;
    }
    cp__cmdset *cmds = NULL;
    rc = cp_cli_commands_build(cmd, &o.cmds, &cmds);
    if (rc != CP_EXIT_OK)
        return rc;
    o.cfg.commands = cmds;
    rc = run_bench(&o, argc, argv);
    cp__cmdset_free(cmds);
    return rc;
}

static int run_bench(const bench_opts *op, int argc, char **argv) {
    const char *cmd = "bench";
    const bench_opts o = *op;
    int rc;
    cp__bench_config cfg = o.cfg;
    int quiet = o.quiet;
    char err[ERRLEN];
    if (cp__bench_config_check(&cfg, err, sizeof(err)) != 0)
        return cp_cli_usage_error(cmd, "%s", err);
    progress_state ps = {!quiet && isatty(STDERR_FILENO), NULL, NULL};
    char sites_path[PATH_MAX];
    if (o.lib_memory != NULL) {
        if (snprintf(sites_path, sizeof(sites_path), "%s.sites", o.lib_memory) >=
            (int)sizeof(sites_path))
            return cp_cli_usage_error(cmd, "--lib-memory: path too long");
        ps.mem = fopen(o.lib_memory, "w");
        if (ps.mem == NULL) {
            fprintf(stderr, "clusterpipe bench: --lib-memory %s: %s\n", o.lib_memory,
                    strerror(errno));
            return CP_EXIT_FAIL;
        }
        ps.sites_path = sites_path;
        cp__libmem_install(); /* before any client: what it allocates is counted */
    }
    rc = run_bench_with(&o, &cfg, &ps, argc, argv);
    if (ps.mem != NULL)
        fclose(ps.mem);
    return rc;
}

static int run_bench_with(const bench_opts *op, cp__bench_config *cfgp, progress_state *psp,
                          int argc, char **argv) {
    const char *cmd = "bench";
    const bench_opts o = *op;
    int rc;
    cp__bench_config cfg = *cfgp;
    const cp_cli_target tf = o.tf;
    const char *json_path = o.json, *csv_path = o.csv, *hdr_path = o.hdr;
    char err[ERRLEN];
    progress_state ps = *psp;

    cp__bench_target t;
    cp_topo *topo = NULL;
    rc = resolve_target(cmd, &tf, &t, &topo);
    if (rc != CP_EXIT_OK)
        return rc;
    cp_cli_install_signals();
    char *cmdline = cp_cli_command_line(argc, argv);
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
            if (j != NULL && hdr_path != NULL && !cp_cli_interrupted)
                name_command_hgrms(j, hdr_path, &cfg);
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
        if (hdr_path != NULL && cp_cli_interrupted)
            fprintf(stderr, "clusterpipe bench: --hdr-file not written: the run was interrupted\n");
        else if (hdr_path != NULL &&
                 (cp__bench_write_hgrm(hdr_path, r, err, sizeof(err)) != 0 ||
                  cp__bench_write_command_hgrms(hdr_path, &cfg, r, err, sizeof(err)) != 0)) {
            fprintf(stderr, "clusterpipe bench: --hdr-file: %s\n", err);
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

#define LC(field) offsetof(load_opts, cfg.field)

static const cp_cli_flag load_rows[] = {
    {.kind = CP_CLI_INCLUDE, .include = cp_cli_target_flags, .off = offsetof(load_opts, tf)},
    CP_CLI_HEAD("options:"),
    {.like = &cp_cli_def_keys,
     .off = LC(keys),
     .arg = "N",
     .help = "keys to write (required)",
     .opts = CP_CLI_REQUIRED},
    CP_CLI_LIKE(cp_cli_def_value_size, LC(value_size),
                "value size: B bytes (default 64), MIN-MAX (uniform) or\nSIZE:WEIGHT,... (e.g. "
                "100:7,1000:2,10000:1); each key gets\nthe size its name picks, as bench expects"),
    CP_CLI_LIKE(
        cp_cli_def_pipeline, LC(pipeline),
        "keys in flight per connection (default 512 against a\ncluster, 64 through a proxy)"),
    CP_CLI_NUM("--mset", "K", CP_CLI_INT, 1, 65535, LC(mset),
               "keys per command: a cluster is written in slot order, and\nup to K neighbouring "
               "keys of one slot go as one MSET\n(default 16 against a cluster; 1 = one SET per "
               "key, the\ndefault through a proxy)"),
    CP_CLI_LIKE(cp_cli_def_key_layout, LC(key_layout),
                "spread (default) or per-master: keys named as\nredis-benchmark --cluster names "
                "them (see bench --help)"),
    CP_CLI_LIKE(cp_cli_def_threads, LC(threads), "worker threads (default 2)"),
    CP_CLI_LIKE(cp_cli_def_clients, LC(clients), "clients in total (default 4 per thread)"),
    CP_CLI_SET("--no-check", CP_CLI_BOOL, 0, LC(check_dbsize),
               "skip the DBSIZE check (e.g. the servers hold other keys)"),
    CP_CLI_LIKE(cp_cli_def_quiet, offsetof(load_opts, quiet), "no progress bar on stderr"),
    CP_CLI_END,
};

static const cp_cli_cmd load_cmd = {
    .name = "load",
    .usage = "usage: clusterpipe load TARGET --keys N [options]\n"
             "\n"
             "Writes key:0 .. key:N-1 once each with values that embed their key (so 'bench'\n"
             "can verify them), pipelined over every node (into a cluster in slot order, one\n"
             "MSET per run of keys of one slot), then checks that the servers hold exactly N\n"
             "keys (cluster masters, or the shards of a twemproxy topology from --dir;\n"
             "skipped for an external --proxy).\n"
             "\n",
    .rows = load_rows,
    .epilog = "\nExit status: 0 ok; 1 keys not written or the count differs; 2 bad usage.\n",
    .width = 23,
};

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
    load_opts o = {0};
    cp__load_config_init(&o.cfg);
    int rc = cp_cli_parse(&load_cmd, argc, argv, 1, &o, NULL);
    if (rc != CP_CLI_GO)
        return rc;
    o.tf.tls |= o.tf.insecure;
    cp__load_config cfg = o.cfg;
    const cp_cli_target tf = o.tf;
    int quiet = o.quiet;
    char why[160];
    if (cp__load_mset_check(cfg.mset, &cfg.value_size, why, sizeof(why)) != 0)
        return cp_cli_usage_error(cmd, "%s", why);
    if (cfg.clients > 0 && cfg.clients < cfg.threads)
        return cp_cli_usage_error(cmd, "--clients (%d) must be >= --threads (%d)", cfg.clients,
                                  cfg.threads);
    size_t maxkey = cp__key_max_len_of(cfg.key_prefix, cfg.key_layout, cfg.keys);
    size_t vmin = cp__value_sizes_min(&cfg.value_size);
    if (vmin < cp__value_min_size(maxkey))
        return cp_cli_usage_error(cmd,
                                  "--value-size %zu cannot hold a verifiable value for keys of "
                                  "%zu bytes (minimum %zu)",
                                  vmin, maxkey, cp__value_min_size(maxkey));
    cp__bench_target t;
    cp_topo *topo = NULL;
    rc = resolve_target(cmd, &tf, &t, &topo);
    if (rc != CP_EXIT_OK)
        return rc;
    cp_cli_install_signals();
    progress_state ps = {!quiet && isatty(STDERR_FILENO), NULL, NULL};
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
    char sizes[256];
    cp__value_sizes_format(&cfg.value_size, sizes, sizeof(sizes));
    if (r.seconds > 0)
        printf("loaded %s keys of %s B in %.3f s = %s keys/s (%s, pipeline %d, %s)\n",
               grouped((double)r.written, a, sizeof(a)), sizes, r.seconds,
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
