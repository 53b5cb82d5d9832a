/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integration tests of `clusterpipe scenario`, driving the real binary (CP_BINARY) at a small
 * scale (20000 keys, 2 threads, 4 connections, runs of 7-8 s) so each scenario ends in well
 * under a minute on 2 cores:
 *   reshard   Redis Cluster 4 -> 5 masters under load: no failed request, no wrong reply, no key
 *             lost; twemproxy 4 -> 5 servers (ketama): the share of untouched keys that became
 *             unreachable is between 0.1 and 0.3 (ketama moves about k/(n+k) = 1/5).
 *   failover  cluster / twemproxy with and without ejection: every request has an outcome, the
 *             report carries the numbers, the killed master's replica took over.
 *   partition the wire's link to one master (cluster, closed and open loop: open loop the other
 *             masters' requests are answered during the cut) / from one proxy to one redis
 * (twemproxy, nutcracker timeout: set and not) carries nothing for 3 s: not a byte passes, the
 *             other shards answer the probes, the faulted one none, and after the heal the link
 *             carries again and the shard answers; the cluster fails nothing over; nutcracker's
 *             timeout: fails requests, its absence makes them wait.
 *   slow-link the cluster's link to one master gains 20 ms each way (closed and open loop): that
 * shard's probe p99 is at least the delay, and nothing is wrong. All: results.json
 * ("clusterpipe.scenario/1"), valid PNG and SVG charts, report.md, and every process the run
 * recorded is gone afterwards (checked by PID and start time). Bad usage exits 2.
 *
 * Children run through cp_clirun (fork/exec, waited for with a timeout, killed by PID on
 * timeout). Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "jsoncheck.h"
#include "clirun.h"
#include "hgrm.h"
#include "testonly.h"

#include "orch/orch.h"

#include <jansson.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks --------------------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    if (len)
        *len = got;
    return buf;
}

static void assert_png(const char *path) {
    size_t n = 0;
    char *b = slurp(path, &n);
    assert_non_null(b);
    assert_int_gt(n, 100);
    assert_memory_equal(b, "\x89PNG\r\n\x1a\n", 8);
    free(b);
}

static void assert_svg(const char *path) {
    size_t n = 0;
    char *b = slurp(path, &n);
    assert_non_null(b);
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == ' ' || b[n - 1] == '\r'))
        b[--n] = '\0';
    if (strncmp(b, "<?xml", 5) != 0 && strncmp(b, "<svg", 4) != 0)
        fail_msg("%s starts with neither <?xml nor <svg: %.40s", path, b);
    assert_int_gt(n, 6);
    assert_string_equal(b + n - 6, "</svg>");
    free(b);
}

/* A number at a dotted path, -1 when absent or not a number. */
static double num(const json_t *o, const char *path) {
    char key[64];
    while (o != NULL && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        o = json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return json_is_number(o) ? json_number_value(o) : -1;
}

static const json_t *find_case(const json_t *doc, const char *name) {
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(doc, "cases"), i, c) {
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return c;
    }
    fail_msg("no case '%s' in results.json", name);
    return NULL;
}

/* Every request ended with an outcome, and the per-second timeline accounts for all of them. */
static void assert_outcomes(const json_t *c) {
    const json_t *b = json_object_get(c, "bench");
    assert_non_null(b);
    double req = num(c, "summary.requests");
    assert_double_gt(req, 0);
    assert_double_eq(req, num(b, "ops") + num(b, "failed_ops") + num(b, "unknown_ops"));
    double tl = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(b, "timeline"), i, e) tl += num(e, "ops") + num(e, "errors");
    assert_double_eq(tl, req);
    assert_double_gt(num(b, "verify.checked"), 0);
    assert_double_eq(num(b, "verify.mismatches"), 0);
    assert_double_eq(num(c, "readback.keys"), 20000);
    assert_double_eq(num(c, "readback.mismatched"), 0);
    assert_double_ge(num(c, "summary.event_start"), 1.5);
    assert_double_ge(num(c, "summary.event_end"), num(c, "summary.event_start"));
    assert_double_gt(num(c, "summary.warmup_median_ops"), 0);
}

/* Runs the scenario into r's scratch directory and returns its results.json (caller decrefs). */
static json_t *run_scenario(cp_clirun *r, const char *const *args, int timeout_s) {
    pid_t pid = cp_clirun_start(r, args);
    int rc = cp_clirun_finish(r, pid, timeout_s);
    if (rc != 0)
        fprintf(stderr, "--- stderr:\n%s\n--- stdout:\n%s\n", r->err, r->out);
    char path[1024];
    snprintf(path, sizeof(path), "%s/out/results.json", r->scratch);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (doc == NULL)
        fail_msg("results.json: %s", jerr.text);
    int seen;
    assert_int_equal(cp_json_kill_recorded(doc, "cases", &seen), 0);
    assert_int_ge(seen, 8);
    assert_int_equal(rc, 0);
    assert_string_equal(json_string_value(json_object_get(doc, "schema")),
                        "clusterpipe.scenario/1");
    assert_false(json_is_true(json_object_get(doc, "failed")));
    snprintf(path, sizeof(path), "%s/out/timeline.png", r->scratch);
    assert_png(path);
    snprintf(path, sizeof(path), "%s/out/timeline.svg", r->scratch);
    assert_svg(path);
    assert_non_null(strstr(r->out, "report: "));
    return doc;
}

static char *report_md(cp_clirun *r) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/out/report.md", r->scratch);
    char *md = slurp(path, NULL);
    assert_non_null(md);
    assert_non_null(strstr(md, "## Numbers"));
    assert_non_null(strstr(md, "![timeline](timeline.png)"));
    return md;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_reshard(void **state) {
    (void)state;
    cp_clirun r;
    cp_clirun_init(&r);
    char out[1024];
    snprintf(out, sizeof(out), "%s/out", r.scratch);
    /* values of two sizes: the load, the run's SETs and GETs and the read-back all agree on
     * each key's length (nothing mismatched below) */
    const char *args[] = {"scenario",   "reshard",    "--out",     out,        "--keys",
                          "20000",      "--duration", "7",         "--warmup", "2",
                          "--threads",  "2",          "--clients", "4",        "--value-size",
                          "50:3,400:1", "-q",         NULL};
    json_t *doc = run_scenario(&r, args, 150);
    assert_int_equal(json_array_size(json_object_get(doc, "cases")), 2);
    const json_t *set = json_object_get(doc, "settings");
    assert_string_equal(json_string_value(json_object_get(set, "value_sizes")), "50:3,400:1");
    assert_string_equal(json_string_value(json_object_get(set, "key_dist")), "uniform");
    assert_int_equal(json_integer_value(json_object_get(set, "value_size")), 138);

    /* Redis Cluster with clusterpipe's client: nothing failed, nothing wrong, nothing lost */
    const json_t *c = find_case(doc, "cluster");
    assert_null(json_object_get(c, "error"));
    assert_outcomes(c);
    assert_double_eq(num(c, "bench.failed_ops"), 0);
    assert_double_eq(num(c, "bench.unknown_ops"), 0);
    assert_double_eq(num(c, "summary.misses"), 0);
    assert_double_eq(num(c, "summary.stale_reads"), 0);
    assert_double_eq(num(c, "readback.missing"), 0);
    assert_double_eq(num(c, "readback.stale"), 0);
    assert_double_eq(num(c, "slots_moved"), 4 * 819);
    assert_double_gt(num(c, "summary.redirects.moved") + num(c, "summary.redirects.ask"), 0);

    /* twemproxy 4 -> 5 servers, ketama: about a fifth of the keys moved away */
    const json_t *t = find_case(doc, "twemproxy");
    assert_null(json_object_get(t, "error"));
    assert_outcomes(t);
    double f = num(t, "summary.miss_fraction_keys");
    fprintf(stderr, "twemproxy: %.3f of the untouched keys unreachable (%.0f keys)\n", f,
            num(t, "readback.untouched"));
    assert_double_ge(num(t, "readback.untouched"), 1000);
    assert_double_ge(f, 0.1);
    assert_double_le(f, 0.3);
    assert_double_gt(num(t, "summary.misses"), 0);

    char *md = report_md(&r);
    assert_non_null(strstr(md, "**cluster**"));
    assert_non_null(strstr(md, "**twemproxy**"));
    free(md);
    /* each case's latency distribution as .hgrm in OUT/latency, the JSON's percentiles */
    for (int k = 0; k < 2; k++) {
        const json_t *bo = json_object_get(k ? t : c, "bench");
        const char *file = json_string_value(json_object_get(bo, "hgrm"));
        assert_non_null(file);
        char hpath[4200];
        snprintf(hpath, sizeof(hpath), "%s/out/latency/%s", r.scratch, file);
        cp_hgrm_check_json(hpath, json_object_get(bo, "latency_us"),
                           (unsigned long long)json_integer_value(json_object_get(bo, "ops")));
    }
    json_decref(doc);
    cp_clirun_free(&r);
}

static void test_failover(void **state) {
    (void)state;
    cp_clirun r;
    cp_clirun_init(&r);
    char out[1024];
    snprintf(out, sizeof(out), "%s/out", r.scratch);
    const char *args[] = {"scenario",   "failover", "--out",     out, "--keys", "20000",
                          "--duration", "8",        "--warmup",  "2", "--down", "3",
                          "--threads",  "2",        "--clients", "4", "-q",     NULL};
    json_t *doc = run_scenario(&r, args, 200);
    assert_int_equal(json_array_size(json_object_get(doc, "cases")), 4);
    static const char *const names[] = {"cluster", "cluster open loop", "twemproxy eject",
                                        "twemproxy no-eject"};
    for (size_t i = 0; i < 4; i++) {
        const json_t *c = find_case(doc, names[i]);
        assert_null(json_object_get(c, "error"));
        assert_outcomes(c);
        assert_non_null(json_object_get(json_object_get(c, "summary"), "error_window"));
        assert_double_ge(num(c, "summary.acked_writes_lost"), 0);
        assert_double_ge(num(c, "summary.stale_after"), 0);
        assert_double_gt(num(c, "killed.pid"), 0);
        assert_double_ge(num(c, "summary.event_seconds"), 3 - 0.05); /* restarted after --down */
    }
    /* the cluster's replica took over by itself before the old master came back */
    const json_t *c = find_case(doc, "cluster");
    double promoted = -1;
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(c, "events"), i, e) {
        if (strcmp(json_string_value(json_object_get(e, "name")), "replica promoted") == 0)
            promoted = num(e, "t");
    }
    assert_double_gt(promoted, num(c, "summary.event_start"));
    assert_double_lt(promoted, num(c, "summary.event_end"));
    /* the bench clients' lifecycle events, which the charts mark: the killed master's
     * connections lost, then the map changed, then the failover seen, in that order */
    double lost = -1, map = -1, fo = -1;
    json_array_foreach(json_object_get(json_object_get(c, "bench"), "events"), i, e) {
        const char *type = json_string_value(json_object_get(e, "type"));
        double t = num(e, "t");
        if (strcmp(type, "disconnected") == 0 && lost < 0)
            lost = t;
        else if (strcmp(type, "map_changed") == 0 && lost >= 0 && map < 0)
            map = t;
        else if (strcmp(type, "failover") == 0 && map >= 0 && fo < 0)
            fo = t;
    }
    if (lost < 0 || map < 0 || fo < 0)
        fail_msg("cluster case: want disconnected, map_changed, failover in the bench's events "
                 "(got %g, %g, %g)",
                 lost, map, fo);
    assert_double_le(lost, map);
    assert_double_le(map, fo);
    /* open loop: offered half the capacity the calibration measured, and the worst second's
     * share of it is reported (its value depends on the machine: not asserted) */
    const json_t *ol = find_case(doc, "cluster open loop");
    double cap = num(ol, "calibration.ops_per_sec"), rate = num(ol, "summary.offered_rate");
    assert_double_gt(cap, 0);
    assert_double_lt(fabs(rate - cap / 2), 1);
    double share = num(ol, "summary.min_answered_share");
    assert_double_ge(share, 0);
    assert_double_lt(share, 2);
    assert_double_gt(num(ol, "bench.workload.rate"), 0);
    /* without ejection, a dead server's requests fail until it is back */
    assert_double_gt(num(find_case(doc, "twemproxy no-eject"), "summary.failed_ops"), 0);

    char *md = report_md(&r);
    assert_non_null(strstr(md, "**twemproxy eject**"));
    assert_non_null(strstr(md, "acknowledged writes lost"));
    free(md);
    json_decref(doc);
    cp_clirun_free(&r);
}

/* The fault's probes: the faulted shard's and the least any other shard answered. */
static void probes(const json_t *c, double *faulted_answered, double *faulted_p99,
                   double *others_min_answered) {
    size_t i;
    const json_t *p;
    *others_min_answered = -1;
    json_array_foreach(json_object_get(json_object_get(c, "fault"), "probes"), i, p) {
        double answered = num(p, "answered");
        if (json_is_true(json_object_get(p, "faulted"))) {
            *faulted_answered = answered;
            *faulted_p99 = num(p, "p99_us");
        } else if (*others_min_answered < 0 || answered < *others_min_answered)
            *others_min_answered = answered;
    }
    assert_int_equal(i, 4); /* a probe per shard */
}

static void test_partition(void **state) {
    (void)state;
    cp_clirun r;
    cp_clirun_init(&r);
    char out[1024];
    snprintf(out, sizeof(out), "%s/out", r.scratch);
    const char *args[] = {"scenario",   "partition", "--out",     out, "--keys", "20000",
                          "--duration", "6",         "--warmup",  "2", "--down", "3",
                          "--threads",  "2",         "--clients", "4", "-q",     NULL};
    json_t *doc = run_scenario(&r, args, 150);
    static const char *const names[] = {"cluster", "cluster open loop", "twemproxy timeout",
                                        "twemproxy no-timeout"};
    assert_int_equal(json_array_size(json_object_get(doc, "cases")), 4);
    for (size_t i = 0; i < 4; i++) {
        const json_t *c = find_case(doc, names[i]);
        assert_null(json_object_get(c, "error"));
        assert_outcomes(c);
        assert_double_ge(num(c, "summary.event_seconds"), 3 - 0.05);
        /* blocked: not a byte either way; healed: the link carries again */
        assert_double_eq(num(c, "fault.bytes_during"), 0);
        assert_double_gt(num(c, "fault.bytes_after_heal"), 0);
        double fa = -1, fp99 = -1, others = -1;
        probes(c, &fa, &fp99, &others);
        assert_double_eq(fa, 0);     /* the faulted shard: nothing through the cut path */
        assert_double_ge(others, 1); /* every other shard kept answering */
        assert_double_ge(num(c, "fault.recovered_after"), 0); /* and the faulted one after */
        assert_double_eq(num(c, "summary.acked_writes_lost"), 0);
    }
    /* the bus is direct: the nodes never saw the partition, nothing failed over */
    assert_double_eq(num(find_case(doc, "cluster"), "fault.still_master"), 1);
    /* open loop, the library kept serving the other masters while one was cut off */
    assert_double_gt(num(find_case(doc, "cluster open loop"), "summary.fault_window.median_ops"),
                     0);
    /* nutcracker's timeout: fails the cut server's requests; without it they wait */
    assert_double_gt(num(find_case(doc, "twemproxy timeout"), "summary.failed_ops"), 0);
    assert_double_eq(num(find_case(doc, "twemproxy no-timeout"), "summary.failed_ops"), 0);
    assert_double_eq(num(find_case(doc, "twemproxy timeout"), "topology.timeout_ms"), 500);
    char *md = report_md(&r);
    assert_non_null(strstr(md, "## The fault, probed"));
    assert_non_null(strstr(md, "**twemproxy no-timeout**"));
    assert_non_null(strstr(md, "no failover follows"));
    free(md);
    json_decref(doc);
    cp_clirun_free(&r);
}

static void test_slow_link(void **state) {
    (void)state;
    cp_clirun r;
    cp_clirun_init(&r);
    char out[1024];
    snprintf(out, sizeof(out), "%s/out", r.scratch);
    const char *args[] = {"scenario", "slow-link",  "--out",   out,        "--keys",
                          "20000",    "--duration", "5",       "--warmup", "2",
                          "--down",   "2",          "--delay", "20ms",     "--threads",
                          "2",        "--clients",  "4",       "-q",       NULL};
    json_t *doc = run_scenario(&r, args, 150);
    assert_int_equal(json_array_size(json_object_get(doc, "cases")), 4);
    /* the cluster: the client's link to one master; twemproxy: one proxy's link to one redis */
    static const char *const names[] = {"cluster", "cluster open loop", "twemproxy timeout",
                                        "twemproxy no-timeout"};
    for (size_t i = 0; i < 4; i++) {
        const json_t *c = find_case(doc, names[i]);
        assert_null(json_object_get(c, "error"));
        assert_outcomes(c);
        assert_double_eq(num(c, "fault.delay_ns"), 20e6);
        assert_double_gt(num(c, "fault.bytes_during"), 0); /* slow, not cut */
        double fa = -1, fp99 = -1, others = -1;
        probes(c, &fa, &fp99, &others);
        assert_double_ge(fa, 1);
        assert_double_ge(fp99, 20000); /* 20 ms more each way: at least the delay */
        assert_double_ge(others, 1);
        assert_double_eq(num(c, "summary.acked_writes_lost"), 0);
    }
    char *md = report_md(&r);
    assert_non_null(strstr(md, "## The fault, probed"));
    assert_non_null(strstr(md, "was slowed"));
    free(md);
    json_decref(doc);
    cp_clirun_free(&r);
}

static void test_usage(void **state) {
    (void)state;
    cp_clirun r;
    cp_clirun_init(&r);
    const char *none[] = {"scenario", NULL};
    assert_int_equal(cp_clirun_run(&r, none), 2);
    const char *bad[] = {"scenario", "rebalance", NULL};
    assert_int_equal(cp_clirun_run(&r, bad), 2);
    const char *warm[] = {"scenario", "reshard", "--duration", "5", "--warmup", "5", NULL};
    assert_int_equal(cp_clirun_run(&r, warm), 2);
    const char *only[] = {"scenario", "failover", "--only", "memcached", NULL};
    assert_int_equal(cp_clirun_run(&r, only), 2);
    const char *keys[] = {"scenario", "failover", "--keys", "2", "--clients", "4", NULL};
    assert_int_equal(cp_clirun_run(&r, keys), 2);
    const char *rtt0[] = {"scenario", "partition", "--rtt", "0", NULL};
    assert_int_equal(cp_clirun_run(&r, rtt0), 2);
    const char *delay0[] = {"scenario", "slow-link", "--delay", "0", NULL};
    assert_int_equal(cp_clirun_run(&r, delay0), 2);
    const char *delay_where[] = {"scenario", "reshard", "--delay", "10ms", NULL};
    assert_int_equal(cp_clirun_run(&r, delay_where), 2);
    const char *no_heal[] = {"scenario", "partition", "--duration", "6", "--warmup",
                             "2",        "--down",    "4",          NULL};
    assert_int_equal(cp_clirun_run(&r, no_heal), 2);
    const char *help[] = {"scenario", "--help", NULL};
    assert_int_equal(cp_clirun_run(&r, help), 0);
    assert_non_null(strstr(r.out, "reshard"));
    assert_non_null(strstr(r.out, "failover"));
    assert_non_null(strstr(r.out, "partition"));
    assert_non_null(strstr(r.out, "slow-link"));
    assert_non_null(strstr(r.out, "100us"));
    cp_clirun_free(&r);
}

/* tests/CMakeLists.txt runs the cases as ctest tests of their own (usage and reshard; failover;
 * partition; slow-link: CP_TEST_ONLY, testonly.h), so that they run beside each other: together
 * they take about two minutes, mostly their runs' durations. */
int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_usage),     cmocka_unit_test(test_reshard),
        cmocka_unit_test(test_failover),  cmocka_unit_test(test_partition),
        cmocka_unit_test(test_slow_link),
    };
    struct CMUnitTest tests[sizeof(all) / sizeof(all[0])];
    size_t n = cp_test_only(all, sizeof(all) / sizeof(all[0]), tests);
    return _cmocka_run_group_tests("test_scenario", tests, n, NULL, NULL);
}
