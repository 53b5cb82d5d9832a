/* SPDX-License-Identifier: BSD-3-Clause
 *
 * report.md and the render-everything entry point (report/render.h). Reads the borrowed results
 * document, builds text in cp__sbuf buffers and writes each file atomically. The only child
 * process is gnuplot, owned by report/charts.c for the duration of the call. Never prints.
 */
#include "report/render.h"

#include "clusterpipe/clusterpipe.h"
#include "report/capacity.h"
#include "report/io.h"
#include "report/network.h"
#include "report/rttmodel.h"
#include "report/sweep.h"
#include "report/table.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* doc.obj.key as a string, else first_run.fobj.fkey, else NULL. */
static const char *str2(const json_t *doc, const char *obj, const char *key, const char *fobj,
                        const char *fkey) {
    const char *v = json_string_value(json_object_get(json_object_get(doc, obj), key));
    if (v == NULL && fobj != NULL) {
        const json_t *run0 = json_array_get(json_object_get(doc, "runs"), 0);
        v = json_string_value(json_object_get(json_object_get(run0, fobj), fkey));
    }
    return v;
}

/* Same for numbers; NaN when absent. */
static double num2(const json_t *doc, const char *obj, const char *key, const char *fobj,
                   const char *fkey) {
    const json_t *v = json_object_get(json_object_get(doc, obj), key);
    if (!json_is_number(v) && fobj != NULL) {
        const json_t *run0 = json_array_get(json_object_get(doc, "runs"), 0);
        v = json_object_get(json_object_get(run0, fobj), fkey);
    }
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Appends ", <formatted>" (or just <formatted> to an empty list) to a NUL-terminated list. */
static void list_add(char *list, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void list_add(char *list, size_t cap, const char *fmt, ...) {
    size_t used = strlen(list);
    if (used > 0 && used + 2 < cap) {
        memcpy(list + used, ", ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(list + used, cap - used, fmt, ap);
    va_end(ap);
}

/* The workload paragraph: what ran, how much, how hard, on what. */
static void workload(cp__sbuf *b, const json_t *doc) {
    const char *mode = json_string_value(json_object_get(doc, "mode"));
    int external = mode && strcmp(mode, "external") == 0;
    double shards = num2(doc, "settings", "shards", NULL, NULL);
    double proxies = num2(doc, "settings", "proxies", NULL, NULL);
    if (external)
        cp__sbuf_puts(b, "Setups: the user's own deployments (`--proxy` for twemproxy, "
                         "`--cluster` for Redis Cluster); nothing was started. Redis CPU comes "
                         "from `INFO CPU`; twemproxy CPU cannot be measured remotely and is "
                         "shown as n/a.\n\n");
    else if (!isnan(shards))
        cp__sbuf_printf(b,
                        "Setups, started on 127.0.0.1 one after the other so they never shared "
                        "the CPU: **twemproxy** = %.0f redis-server behind %.0f nutcracker "
                        "processes (every proxy fronts every server; hash fnv1a_64, ketama), the "
                        "client spreading its connections over the proxies; **cluster** = a "
                        "%.0f-master Redis Cluster (no replicas) and a cluster-aware client "
                        "(libclusterpipe) talking to the masters directly.\n\n",
                        shards, isnan(proxies) ? shards : proxies, shards);
    double th = num2(doc, "settings", "threads", "workload", "threads");
    double cl = num2(doc, "settings", "clients", "workload", "clients");
    double rq = num2(doc, "settings", "requests", NULL, NULL);
    double keys = num2(doc, "settings", "keys", "workload", "keys");
    double vs = num2(doc, "settings", "value_size", "workload", "value_size");
    double pl = num2(doc, "settings", "pipeline", NULL, NULL);
    const char *dist = str2(doc, "settings", "key_dist", "workload", "key_dist");
    cp__sbuf_puts(b, "Workload: the same dataset loaded into each setup");
    if (!isnan(keys))
        cp__sbuf_printf(b, " (%.0f keys", keys);
    if (!isnan(keys) && !isnan(vs))
        cp__sbuf_printf(b, " of %.0f bytes", vs);
    if (!isnan(keys))
        cp__sbuf_puts(b, ")");
    const json_t *cmds = json_object_get(json_object_get(doc, "settings"), "commands");
    if (json_array_size(cmds) > 0) { /* --command: the templates instead of GETs */
        cp__sbuf_puts(b, ", then the commands ");
        for (size_t k = 0; k < json_array_size(cmds); k++)
            cp__sbuf_printf(b, "%s`%s`", k ? ", " : "", json_string_value(json_array_get(cmds, k)));
        cp__sbuf_printf(b,
                        " (weights %s) with one request in flight per connection, and "
                        "pipelined",
                        str2(doc, "settings", "command_ratio", NULL, NULL)
                            ? str2(doc, "settings", "command_ratio", NULL, NULL)
                            : "?");
    } else {
        cp__sbuf_puts(b, ", then GET (one request in flight per connection) and pipelined GET");
    }
    if (!isnan(pl))
        cp__sbuf_printf(b, " (%.0f in flight per connection)", pl);
    char parts[256] = "";
    if (!isnan(th))
        list_add(parts, sizeof(parts), "%.0f threads", th);
    if (!isnan(cl))
        list_add(parts, sizeof(parts), "%.0f connections", cl);
    if (!isnan(rq))
        list_add(parts, sizeof(parts), "%.0f requests per case", rq);
    if (dist != NULL)
        list_add(parts, sizeof(parts), "%s keys", dist);
    if (parts[0])
        cp__sbuf_printf(b, ", each with the same %s", parts);
    const json_t *verify = json_object_get(json_object_get(doc, "settings"), "verify");
    if (json_is_false(verify))
        cp__sbuf_puts(b, ". Replies were not verified (`--no-verify`).");
    else if (json_array_size(cmds) > 0)
        cp__sbuf_puts(b, ". Replies of reads of the keys' values and of counters were checked, "
                         "the other commands only counted (the tables per command say which).");
    else
        cp__sbuf_puts(b, ". Every GET reply was checked against the key it was asked for.");
    cp__sbuf_puts(b, "\n\n");
}

static void status_line(cp__sbuf *b, const cp__rpt_summary *s) {
    if (s->nfailed == 0) {
        cp__sbuf_printf(b,
                        "**Status: all %zu runs clean** (no failed requests, no unknown "
                        "outcomes, no mismatched replies).\n\n",
                        s->nruns);
        return;
    }
    cp__sbuf_printf(b, "**Status: %zu of %zu runs FAILED**; their numbers are not comparable:\n\n",
                    s->nfailed, s->nruns);
    for (size_t i = 0; i < s->ncases; i++)
        if (s->cases[i].nfailed)
            cp__sbuf_printf(b, "- %s: %zu of %zu runs failed%s%s\n", s->cases[i].name,
                            s->cases[i].nfailed, s->cases[i].nruns,
                            s->cases[i].first_error ? ": " : "",
                            s->cases[i].first_error ? s->cases[i].first_error : "");
    cp__sbuf_puts(b, "\n");
}

static void charts(cp__sbuf *b, const char *chart_err) {
    cp__sbuf_puts(b, "## Charts\n\n");
    if (chart_err) {
        cp__sbuf_printf(b,
                        "Charts could not be drawn: %s. Install gnuplot-nox and run "
                        "`clusterpipe report DIR` to draw them from results.json.\n\n",
                        chart_err);
        return;
    }
    cp__sbuf_puts(b, "![CPU-seconds by component per case](cpu.png)\n\n"
                     "Where the CPU goes: each bar stacks the CPU-seconds of the redis "
                     "servers, the proxies and the client for one case, the number on top "
                     "their total; with --rtt the emulated wire's stacks above it, hatched, "
                     "not in the total ([SVG](cpu.svg)).\n\n"
                     "![Throughput and p99 latency per case](throughput_p99.png)\n\n"
                     "Throughput (higher is better) and p99 latency (lower is better); orange "
                     "is twemproxy, green the cluster; black bars span min-max over repeats "
                     "([SVG](throughput_p99.svg)).\n\n"
                     "![Latency by percentile](latency.png)\n\n"
                     "Latency of every request by percentile, on a scale that spreads out the "
                     "tail: 90, 99, 99.9 are equally spaced; solid lines GET, dashed pipelined "
                     "GET ([SVG](latency.svg)).\n\n");
}

static void how_to_read(cp__sbuf *b) {
    cp__sbuf_puts(
        b, "## How to read this\n\n"
           "- **time taken** is the wall-clock time of one case: every request of the case, at the "
           "given concurrency, measured from the first request to the last reply. It is the "
           "published table's \"time taken\". Lower is better.\n"
           "- **Redis / client / twemproxy CPU-s** are user + system CPU seconds over that "
           "interval only: of all redis-server processes together, of the client (clusterpipe, "
           "all threads), of all nutcracker processes together. **total CPU-s** is their sum; "
           "**%CPU x s** is the same total times 100, the unit of the published \"total CPU "
           "cycles\" column. CPU is what a deployment pays for; it depends far less on the "
           "machine's load than time does.\n"
           "- **us/op** divides each component's CPU by the requests served: the cost of one GET "
           "in each place. The twemproxy column is what the extra hop costs; the cluster has no "
           "such column because the client talks to the shards directly.\n"
           "- **wire CPU-s / wire us/op** (runs through the emulated network, `--rtt`): the "
           "wire's own CPU, a component of its own and in no total, since a real network "
           "costs the hosts none of it; `-` where a case ran without a wire.\n"
           "- **n/a** means not measurable (a remote proxy, a run that did not start), never "
           "zero; **-** means there is nothing to measure (a cluster has no proxy); a total "
           "marked **>=** lacks an n/a component, so it is a lower bound and its ratio is n/a.\n"
           "- **p50 / p99** are per request, from its own send to its reply; with pipelining a "
           "request also waits for the ones ahead of it on its connection.\n"
           "- **pipeline P** is the number of requests in flight on each connection. A twemproxy "
           "client has one connection (to a proxy); a cluster client has one per master and "
           "sends batches of P x masters requests split by slot, so about P are in flight on "
           "each master, every one written before any reply is read.\n"
           "- **cluster / twemproxy** divides the cluster's median by twemproxy's: below 1x the "
           "cluster needs less time or CPU, above 1x for ops/s it is faster. The published "
           "ratios sit beside ours: on other hardware the absolute numbers differ, the shape "
           "should not.\n"
           "- On a machine with fewer cores than processes (redis servers, proxies and client "
           "threads), they queue for the CPU, so time includes waiting; compare CPU-s and ratios "
           "rather than absolute times, and repeat runs (`--repeat 3`) before trusting a small "
           "difference.\n"
           "- **Encryption** is not in these numbers, and not a like-for-like option: twemproxy "
           "(nutcracker) offers no TLS, neither to clients nor to the servers, while Redis "
           "Cluster does (`clusterpipe up cluster --tls`, `bench --tls`). A twemproxy "
           "deployment that needs encryption in transit has to add it around the proxy.\n\n");
}

/* One sentence per call type: does this run point the same way as the published one, and is
 * the cluster's advantage larger or smaller? Judged on total CPU, the least load-sensitive
 * number. */
static void direction(cp__sbuf *b, const cp__rpt_summary *s) {
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *tw = &s->cases[i];
        const cp__rpt_case *cl = cp__rpt_find(s, "cluster", tw->call);
        const cp__rpt_ref *rt = cp__rpt_ref_find("twemproxy", tw->call);
        const cp__rpt_ref *rc = cp__rpt_ref_find("cluster", tw->call);
        if (strcmp(tw->setup, "twemproxy") != 0 || cl == NULL || rt == NULL || rc == NULL)
            continue;
        double ours = cp__rpt_case_ratio(cl, tw, CP__M_CPU_TOTAL);
        double theirs = rc->cpu_cycles / rt->cpu_cycles;
        if (isnan(ours))
            continue;
        const char *how = (ours < 1) != (theirs < 1)  ? "the OPPOSITE direction to"
                          : fabs(ours - theirs) < 0.1 ? "about the same as"
                          : (ours < theirs) == (theirs < 1)
                              ? "the same direction as, and a larger gap than,"
                              : "the same direction as, and a smaller gap than,";
        cp__sbuf_printf(b,
                        "- %s: total CPU cluster/twemproxy %.2fx here vs %.2fx published: %s "
                        "the published result.\n",
                        tw->call, ours, theirs, how);
    }
    cp__sbuf_puts(b, "\n");
}

/* The experiment being reproduced, and our ratios next to its. */
static void reference(cp__sbuf *b, const cp__rpt_summary *s) {
    cp__sbuf_puts(b, "## The published experiment being reproduced\n\n"
                     "4 redis + 4 twemproxy against a 4-master Redis Cluster, 10 threads, GET "
                     "and pipelined GET. Its \"total CPU cycles\" is %CPU x seconds, i.e. 100 "
                     "x CPU-seconds.\n\n"
                     "| setup | call type | time taken (s) | total CPU cycles (%CPU x s) | "
                     "= CPU-s |\n"
                     "| :-- | :-- | --: | --: | --: |\n");
    for (size_t i = 0; i < CP__RPT_NREF; i++) {
        const cp__rpt_ref *r = &cp__rpt_published[i];
        cp__sbuf_printf(b, "| %s | %s | %.0f | %.0f | %.1f |\n", r->setup, r->call, r->seconds,
                        r->cpu_cycles, r->cpu_cycles / 100);
    }
    cp__sbuf_puts(b, "\nPublished cluster / twemproxy: GET time 0.48x, CPU 0.46x; pipelined GET "
                     "time 0.83x, CPU 0.80x.");
    int any = 0;
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *tw = &s->cases[i];
        const cp__rpt_case *cl = cp__rpt_find(s, "cluster", tw->call);
        if (strcmp(tw->setup, "twemproxy") != 0 || cl == NULL)
            continue;
        double rt = cp__rpt_case_ratio(cl, tw, CP__M_SECONDS);
        double rc = cp__rpt_case_ratio(cl, tw, CP__M_CPU_TOTAL);
        char a[32], c[32];
        cp__rpt_fmt_value(a, sizeof(a), rt, 2);
        cp__rpt_fmt_value(c, sizeof(c), rc, 2);
        cp__sbuf_printf(b, "%s %s time %s%s, CPU %s%s", any ? ";" : " This run:", tw->call, a,
                        isnan(rt) ? "" : "x", c, isnan(rc) ? "" : "x");
        any = 1;
    }
    cp__sbuf_puts(b, any ? ".\n\n" : "\n\n");
    if (any)
        direction(b, s);
}

/* compare --replica-reads: what moving the reads to the replicas did to the masters, per call
 * type (the masters' CPU per op here against the plain cluster's). Nothing without its runs. */
static void replica_reads(cp__sbuf *b, const cp__rpt_summary *s) {
    int any = 0;
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *rep = &s->cases[i];
        const cp__rpt_case *cl = cp__rpt_find(s, "cluster", rep->call);
        if (strcmp(rep->setup, CP__RPT_SETUP_REPLICAS) != 0 || cl == NULL)
            continue;
        if (!any)
            cp__sbuf_puts(b, "## Reads on replicas\n\n"
                             "`" CP__RPT_SETUP_REPLICAS "` is the same 4-master cluster with a "
                             "replica per master, loaded the same way (and the replicas caught "
                             "up before any read), every read sent to a replica (`bench "
                             "--read-from replica`). Its Redis CPU is split into the masters' "
                             "and the replicas' part.\n\n");
        any = 1;
        char m0[32], m1[32], r1[32], q[32], ops[32];
        cp__rpt_fmt_value(m0, sizeof(m0), cl->m[CP__M_US_MASTERS].med, 2);
        cp__rpt_fmt_value(m1, sizeof(m1), rep->m[CP__M_US_MASTERS].med, 2);
        cp__rpt_fmt_value(r1, sizeof(r1), rep->m[CP__M_US_REPLICAS].med, 2);
        cp__rpt_fmt_value(q, sizeof(q), cp__rpt_case_ratio(rep, cl, CP__M_US_MASTERS), 2);
        cp__rpt_fmt_value(ops, sizeof(ops), cp__rpt_case_ratio(rep, cl, CP__M_OPS_PER_SEC), 2);
        cp__sbuf_printf(b,
                        "- %s: the masters spend %s us of CPU per op with reads on the replicas "
                        "against %s us when they serve the reads (%s%s), the replicas %s us; "
                        "ops/s %s%s the plain cluster's.\n",
                        rep->call, m1, m0, q, strcmp(q, "n/a") ? "x" : "", r1, ops,
                        strcmp(ops, "n/a") ? "x" : "");
    }
    if (any)
        cp__sbuf_puts(b, "\n");
}

/* compare --setups ...,cluster-cached: what the client-side cache did, per call type (its hit
 * ratio, the invalidations the writes caused, Redis CPU per op over every op against the plain
 * cluster's). Nothing without its runs. */
static void client_cache(cp__sbuf *b, const cp__rpt_summary *s) {
    int any = 0;
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *cc = &s->cases[i];
        const cp__rpt_case *cl = cp__rpt_find(s, "cluster", cc->call);
        if (strcmp(cc->setup, CP__RPT_SETUP_CACHED) != 0 || cl == NULL)
            continue;
        if (!any)
            cp__sbuf_puts(b, "## Client-side cache\n\n"
                             "`" CP__RPT_SETUP_CACHED "` is the same 4-master cluster, every "
                             "client keeping the library's client-side cache (`bench "
                             "--client-cache`: RESP3, `CLIENT TRACKING`). CPU per op counts "
                             "every op, the cache's hits included, as the plain cluster's "
                             "does.\n\n");
        any = 1;
        char hit[32], inv[32], r0[32], r1[32], q[32], ops[32];
        cp__rpt_fmt_value(hit, sizeof(hit), cc->m[CP__M_CACHE_HIT_RATIO].med * 100, 1);
        cp__rpt_fmt_value(inv, sizeof(inv), cc->m[CP__M_CACHE_INVALIDATIONS].med, 0);
        cp__rpt_fmt_value(r0, sizeof(r0), cl->m[CP__M_US_REDIS].med, 2);
        cp__rpt_fmt_value(r1, sizeof(r1), cc->m[CP__M_US_REDIS].med, 2);
        cp__rpt_fmt_value(q, sizeof(q), cp__rpt_case_ratio(cc, cl, CP__M_US_REDIS), 2);
        cp__rpt_fmt_value(ops, sizeof(ops), cp__rpt_case_ratio(cc, cl, CP__M_OPS_PER_SEC), 2);
        cp__sbuf_printf(b,
                        "- %s: the cache answered %s%s of the reads, the servers invalidated %s "
                        "keys; Redis spends %s us of CPU per op against %s us without the cache "
                        "(%s%s); ops/s %s%s the plain cluster's.\n",
                        cc->call, hit, strcmp(hit, "n/a") ? "%" : "", inv, r1, r0, q,
                        strcmp(q, "n/a") ? "x" : "", ops, strcmp(ops, "n/a") ? "x" : "");
    }
    if (any)
        cp__sbuf_puts(b, "\n");
}

static void environment(cp__sbuf *b, const json_t *doc) {
    cp__sbuf_puts(b, "## Environment\n\n");
    static const struct {
        const char *label, *key, *fobj, *fkey;
    } rows[] = {
        {"clusterpipe", "clusterpipe", "versions", "clusterpipe"},
        {"redis-server", "redis", "versions", "redis"},
        {"nutcracker (twemproxy)", "nutcracker", "versions", "nutcracker"},
        {"CPU model", "cpu_model", "machine", "cpu_model"},
        {"kernel", "kernel", "machine", "kernel"},
        {"date", "date", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *v = str2(doc, "environment", rows[i].key, rows[i].fobj, rows[i].fkey);
        cp__sbuf_printf(b, "- %s: %s\n", rows[i].label, v && *v ? v : "unknown");
        if (i == 2) {
            double cores = num2(doc, "environment", "cores", "machine", "cores");
            if (isnan(cores))
                cp__sbuf_puts(b, "- cores: unknown\n");
            else
                cp__sbuf_printf(b, "- cores: %.0f\n", cores);
        }
    }
    const json_t *load = json_object_get(doc, "load");
    size_t i;
    const json_t *l;
    json_array_foreach(load, i, l) {
        const char *setup = json_string_value(json_object_get(l, "setup"));
        cp__sbuf_printf(b, "- load (%s): %.0f keys in %.2f s (%.0f keys/s)", setup ? setup : "?",
                        json_number_value(json_object_get(l, "keys")),
                        json_number_value(json_object_get(l, "seconds")),
                        json_number_value(json_object_get(l, "keys_per_sec")));
        /* what a large dataset is judged by: the count, a sample read back, the servers' memory
         * per key and the client's own memory */
        const json_t *db = json_object_get(l, "dbsize"), *rb = json_object_get(l, "readback");
        if (json_is_object(db))
            cp__sbuf_printf(b, "; DBSIZE %.0f (%s)",
                            json_number_value(json_object_get(db, "total")),
                            json_is_true(json_object_get(db, "equal")) ? "equal to the keys"
                                                                       : "NOT equal to the keys");
        if (json_is_object(rb))
            cp__sbuf_printf(b, "; read back %.0f of the first %.0f keys intact",
                            json_number_value(json_object_get(rb, "ok")),
                            json_number_value(json_object_get(rb, "keys")));
        if (json_is_number(json_object_get(l, "memory_per_key")))
            cp__sbuf_printf(b, "; %.0f bytes of server memory per key",
                            json_number_value(json_object_get(l, "memory_per_key")));
        if (json_is_number(json_object_get(l, "client_peak_rss")))
            cp__sbuf_printf(b, "; client peak RSS %.0f MB",
                            json_number_value(json_object_get(l, "client_peak_rss")) / 1e6);
        cp__sbuf_puts(b, "\n");
        /* Memory the dataset takes on each server, as redis reports it (used_memory). */
        const json_t *mem = json_object_get(l, "memory_per_shard"), *m;
        size_t k;
        if (json_array_size(mem) > 0)
            cp__sbuf_printf(b, "  - memory per shard (%s):", setup ? setup : "?");
        json_array_foreach(mem, k, m) {
            cp__sbuf_printf(b, "%s %s %.1f MB (%.0f keys)", k ? "," : "",
                            json_string_value(json_object_get(m, "address")),
                            json_number_value(json_object_get(m, "used_memory")) / 1e6,
                            json_number_value(json_object_get(m, "keys")));
        }
        if (json_array_size(mem) > 0)
            cp__sbuf_puts(b, "\n");
    }
    cp__sbuf_puts(b, "\n");
}

/* Where each component ran: the CPU sets asked for, the sets every process and the client's
 * threads really had (read back from /proc), and the warnings. Nothing when --cpus was not
 * given: then every component could run on every CPU, which the environment's core count says. */
static void placement(cp__sbuf *b, const json_t *doc) {
    const json_t *pl = json_object_get(doc, "placement");
    if (!json_is_object(pl))
        return;
    cp__sbuf_puts(b, "## Placement\n\n");
    const char *side = json_string_value(json_object_get(pl, "proxy_placement"));
    cp__sbuf_printf(b, "Asked: `--cpus %s`, proxies with the %s.\n\n",
                    json_string_value(json_object_get(pl, "cpus")), side ? side : "servers");
    static const char *const comps[] = {"redis", "proxy", "client"};
    for (size_t i = 0; i < 3; i++) {
        const char *v = json_string_value(json_object_get(pl, comps[i]));
        cp__sbuf_printf(b, "- %s: %s\n", comps[i], v ? v : "not pinned (any CPU)");
    }
    const char *usable = json_string_value(json_object_get(pl, "usable"));
    cp__sbuf_printf(b, "- CPUs this machine let the run use: %s\n\n",
                    usable && *usable ? usable : "?");
    cp__sbuf_puts(b, "Observed (Cpus_allowed_list, read back from /proc while they ran):\n\n");
    size_t i, k;
    const json_t *t, *p;
    json_array_foreach(json_object_get(doc, "topologies"), i, t) {
        char redis[256] = "", proxy[256] = "";
        json_array_foreach(json_object_get(t, "processes"), k, p) {
            const char *cpus = json_string_value(json_object_get(p, "cpus"));
            const char *role = json_string_value(json_object_get(p, "role"));
            char *list = role && strcmp(role, "proxy") == 0 ? proxy : redis;
            list_add(list, sizeof(redis), "%s", cpus && *cpus ? cpus : "?");
        }
        cp__sbuf_printf(b, "- %s: redis [%s]", json_string_value(json_object_get(t, "setup")),
                        redis);
        if (proxy[0])
            cp__sbuf_printf(b, ", proxies [%s]", proxy);
        cp__sbuf_puts(b, "\n");
    }
    const json_t *r;
    json_array_foreach(json_object_get(doc, "runs"), i, r) {
        const char *c = json_string_value(json_object_get(r, "client_threads_cpus"));
        if (c != NULL) {
            cp__sbuf_printf(b, "- client threads: %s\n", c);
            break;
        }
    }
    const json_t *w = json_object_get(pl, "warnings"), *line;
    if (json_array_size(w) > 0) {
        cp__sbuf_puts(b, "\nWarnings (what these numbers do not show about separate hosts):\n\n");
        json_array_foreach(w, i, line) {
            cp__sbuf_printf(b, "- %s\n", json_string_value(line));
        }
    }
    cp__sbuf_puts(b, "\n");
}

/* The capacity plan at a reference rate, so a reader sees cores rather than seconds on a test
 * box without running anything, and the RTT model at a reference round trip; `clusterpipe
 * plan` gives both for their own rate, workload and RTT. */
#define REPORT_PLAN_RATE 1000000.0
#define REPORT_PLAN_UTIL 0.6
#define REPORT_RTT_NS 1e6 /* 1 ms: a round trip between hosts in one data centre, roughly */
static void capacity(cp__sbuf *b, const json_t *doc) {
    cp__plan_opts o = {REPORT_PLAN_RATE, REPORT_PLAN_UTIL, {0, 0, 0, 0}, 0};
    char err[256];
    char *md = cp__plan_md(doc, &o, "##", err, sizeof(err));
    if (md == NULL) {
        cp__sbuf_printf(b, "## Capacity plan\n\nNot available: %s.\n\n", err);
        return;
    }
    cp__sbuf_puts(b, md);
    free(md);
    cp__sbuf_puts(b, "\nFor your rate and workload: `clusterpipe plan DIR --rate OPS "
                     "[--target-util U] [--pipeline P] [--clients C] [--value-size B] "
                     "[--shards N]`.\n\n");
    /* the same runs at RTT 0 through a network, at a reference round trip */
    o.at_zero_only = 1;
    char *model = cp__rtt_plan_md(doc, &o, REPORT_RTT_NS, "##", err, sizeof(err));
    if (model == NULL)
        return; /* no run at RTT 0: the points through the wire are in "The network" */
    cp__sbuf_puts(b, model);
    free(model);
    cp__sbuf_puts(b, "\nAt your round trip: `clusterpipe plan DIR --rate OPS --rtt D`.\n\n");
}

static void commands(cp__sbuf *b, const json_t *doc) {
    const char *cmd = json_string_value(json_object_get(doc, "command"));
    const json_t *steps = json_object_get(doc, "commands");
    cp__sbuf_puts(b, "## Commands\n\nThis report came from:\n\n```\n");
    cp__sbuf_printf(b, "%s\n```\n\n", cmd ? cmd : "(command line not recorded)");
    if (json_is_array(steps) && json_array_size(steps) > 0) {
        cp__sbuf_puts(b, "The same steps by hand, one setup at a time:\n\n```\n");
        size_t i;
        const json_t *s;
        json_array_foreach(steps, i, s) {
            if (json_is_string(s))
                cp__sbuf_printf(b, "%s\n", json_string_value(s));
        }
        cp__sbuf_puts(b, "```\n\n");
    }
    cp__sbuf_puts(b, "Re-render this report, table and charts from results.json: "
                     "`clusterpipe report DIR`. Every number above is in results.json, one "
                     "`clusterpipe.bench/1` object per run.\n");
}

char *cp__rpt_report_md(const json_t *doc, const cp__rpt_summary *s, const char *table_md,
                        const char *chart_err) {
    cp__sbuf b = CP__SBUF_INIT;
    cp__sbuf_puts(&b, "# Twemproxy vs Redis Cluster: clusterpipe compare\n\n");
    workload(&b, doc);
    status_line(&b, s);
    cp__sbuf_puts(&b, "## Results\n\n");
    cp__sbuf_puts(&b, table_md);
    cp__sbuf_puts(&b, "\n");
    charts(&b, chart_err);
    cp__rpt_sweep_md(&b, doc, s, chart_err);
    cp__rpt_network_md(&b, doc, s);
    cp__rtt_report_md(&b, doc);
    how_to_read(&b);
    reference(&b, s);
    replica_reads(&b, s);
    client_cache(&b, s);
    capacity(&b, doc);
    environment(&b, doc);
    placement(&b, doc);
    commands(&b, doc);
    return cp__sbuf_take(&b);
}

/* Table first (it is what the user needs even when gnuplot is missing), then charts, then the
 * report that embeds both. */
int cp__rpt_render(const char *dir, const json_t *doc, const cp__rpt_chart_opts *chart_opts,
                   cp__rpt_render_out *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    int rc = cp__rpt_summarize(doc, &out->summary, err, errlen);
    if (rc != 0)
        return rc;
    out->table_md = cp__rpt_table_md(&out->summary);
    if (out->table_md == NULL) {
        snprintf(err, errlen, "out of memory rendering the table");
        return CP_ENOMEM;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/table.md", dir);
    rc = (cp__write_text(path, out->table_md, strlen(out->table_md), err, errlen) ? CP_EIO : 0);
    if (rc != 0)
        return rc;
    rc = cp__rpt_charts(dir, &out->summary, chart_opts, out->chart_err, sizeof(out->chart_err));
    if (rc == 0)
        rc = cp__rpt_sweep_charts(dir, doc, &out->summary, chart_opts, out->chart_err,
                                  sizeof(out->chart_err));
    out->charts_ok = rc == 0;
    char *md = cp__rpt_report_md(doc, &out->summary, out->table_md,
                                 out->charts_ok ? NULL : out->chart_err);
    if (md == NULL) {
        snprintf(err, errlen, "out of memory rendering the report");
        return CP_ENOMEM;
    }
    snprintf(path, sizeof(path), "%s/report.md", dir);
    rc = (cp__write_text(path, md, strlen(md), err, errlen) ? CP_EIO : 0);
    free(md);
    return rc;
}

void cp__rpt_render_out_free(cp__rpt_render_out *out) {
    free(out->table_md);
    out->table_md = NULL;
}
