/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe compare --rtt`: the experiment end to end with the wire in both setups (the real
 * binary, CP_BINARY, on real servers). results.json records the RTT, the wire among each
 * setup's processes and every link; each run reports the wire's CPU as its own component, never
 * inside redis, proxy, client or the total; a GET at depth 1 takes the RTT (each request
 * crosses a link in both setups); nothing it started is left running. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "jsoncheck.h"
#include "clirun.h"

#include "orch/orch.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Runs the command line args (a compare writing into out), expecting exit 0, and returns its
 * results.json once every process it recorded is gone (json_decref it). */
static json_t *compare_results(cp_clirun *run, const char **args, const char *out) {
    cp_clirun_expect(run, args, 0);
    char path[4300];
    snprintf(path, sizeof(path), "%s/results.json", out);
    json_t *doc = cp_json_load(path);
    assert_int_equal(cp_json_kill_recorded(doc, "topologies", NULL), 0);
    return doc;
}

/* The wire processes a topology of results.json recorded. */
static int wires_of(const json_t *topo) {
    int wires = 0;
    size_t j;
    const json_t *p;
    json_array_foreach(json_object_get(topo, "processes"), j, p) wires +=
        strcmp(json_string_value(json_object_get(p, "role")), "wire") == 0;
    return wires;
}

static double num(const json_t *o, const char *a, const char *b) {
    const json_t *v = json_object_get(json_object_get(o, a), b);
    if (!json_is_number(v))
        fail_msg("%s.%s is not a number", a, b);
    return json_number_value(v);
}

static void test_compare_at_rtt(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    cp_clirun run;
    cp_clirun_init(&run);
    char out[4200];
    snprintf(out, sizeof(out), "%s", cp_clirun_path(&run, "out"));
    const char *args[] = {"compare", "--out",     out, "--rtt",   "1ms", "--threads",
                          "1",       "--clients", "6", "--keys",  "500", "--requests",
                          "6000",    "--repeat",  "1", "--quiet", NULL};
    json_t *doc = compare_results(&run, args, out);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(doc, "settings"), "rtt_ns")), 1000000);

    /* Each setup ran with one wire, its links recorded, those that cross with a port of it. */
    const json_t *topos = json_object_get(doc, "topologies");
    assert_int_equal(json_array_size(topos), 2);
    size_t i, j;
    const json_t *t, *p;
    json_array_foreach(topos, i, t) {
        int wires = wires_of(t), crossing = 0;
        assert_int_equal(wires, 1);
        const json_t *links = json_object_get(t, "links");
        assert_int_gt(json_array_size(links), 0);
        json_array_foreach(links, j, p) {
            if (!json_is_true(json_object_get(p, "crosses")))
                continue;
            crossing++;
            assert_int_gt(json_integer_value(json_object_get(p, "wire_port")), 0);
            assert_int_equal(json_integer_value(json_object_get(p, "rtt_ns")), 1000000);
        }
        assert_int_gt(crossing, 0);
    }

    /* The wire's CPU is its own: measured, and outside redis + proxy + client = total. A GET at
     * depth 1 crosses at least one link each way (client -> node; client -> proxy), so its
     * median is at least about the RTT; on loopback alone it is tens of microseconds. */
    const json_t *runs = json_object_get(doc, "runs");
    assert_int_equal(json_array_size(runs), 4);
    json_array_foreach(runs, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        assert_int_equal(json_integer_value(json_object_get(t, "failed_ops")), 0);
        double wire = num(t, "cpu_seconds", "wire");
        double total = num(t, "cpu_seconds", "total");
        double parts = num(t, "cpu_seconds", "redis") + num(t, "cpu_seconds", "proxy") +
                       num(t, "cpu_seconds", "client");
        assert_double_ge(wire, 0);
        assert_double_lt(fabs(total - parts), 1e-9);
        assert_double_ge(num(t, "cpu_us_per_op", "wire"), 0);
        if (strstr(name, "pipelined") != NULL)
            continue;
        assert_double_gt(wire, 0); /* 6000 requests, each through the wire both ways */
        assert_double_ge(num(t, "latency_us", "p50"), 800);
    }
    json_decref(doc);
    cp_clirun_free(&run);
}

/* DIR/NAME into buf (of len), NUL-terminated; 0 when it cannot be read. */
static size_t read_text(const char *dir, const char *name, char *buf, size_t len) {
    char path[4300];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

/* `compare --sweep rtt=0,1ms`: a setup per point and architecture, a wire only at 1 ms, every
 * run marked with its point's round trip; a GET at depth 1 takes at least about the RTT at 1 ms;
 * the latency chart is drawn and report.md's "The network" gives the hops per request read from
 * the links (the cluster's client crosses once; twemproxy's servers placement, 4 proxies on the
 * 4 redis hosts, once to a proxy and for 3 servers in 4 once more: 1.75). */
static void test_rtt_sweep(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    cp_clirun run;
    cp_clirun_init(&run);
    char out[4200];
    snprintf(out, sizeof(out), "%s", cp_clirun_path(&run, "sweep"));
    const char *args[] = {"compare",    "--out",  out,         "--sweep",    "rtt=0,1ms",
                          "--pipeline", "1",      "--threads", "1",          "--clients",
                          "4",          "--keys", "300",       "--requests", "2000",
                          "--repeat",   "1",      "--quiet",   NULL};
    json_t *doc = compare_results(&run, args, out);
    const json_t *sweep = json_object_get(json_object_get(doc, "settings"), "sweep");
    assert_string_equal(json_string_value(json_object_get(sweep, "param")), "rtt");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(sweep, "values"), 1)),
                     1000000);

    /* one topology per point and architecture; the wire only where the point has an RTT */
    const json_t *topos = json_object_get(doc, "topologies");
    assert_int_equal(json_array_size(topos), 4);
    size_t i;
    const json_t *t;
    int with_wire = 0;
    json_array_foreach(topos, i, t) {
        int wires = wires_of(t);
        assert_int_equal(wires, json_array_size(json_object_get(t, "links")) > 0 ? 1 : 0);
        with_wire += wires;
    }
    assert_int_equal(with_wire, 2);

    int seen[2][2] = {{0}}; /* [cluster][at 1 ms] */
    const json_t *runs = json_object_get(doc, "runs");
    assert_int_equal(json_array_size(runs), 4);
    json_array_foreach(runs, i, t) {
        int cluster = strcmp(json_string_value(json_object_get(t, "setup")), "cluster") == 0;
        json_int_t rtt = json_integer_value(json_object_get(t, "rtt_ns"));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "sweep"), "value")),
                         rtt);
        assert_int_equal(json_integer_value(json_object_get(t, "failed_ops")), 0);
        if (rtt != 0 && rtt != 1000000)
            fail_msg("rtt_ns %lld, neither 0 nor 1 ms", (long long)rtt);
        seen[cluster][rtt != 0]++;
        if (rtt != 0)
            assert_double_ge(num(t, "latency_us", "p50"), 800);
        else /* no wire: no wire CPU either (null, never 0) */
            assert_false(
                json_is_number(json_object_get(json_object_get(t, "cpu_seconds"), "wire")));
    }
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            assert_int_equal(seen[a][b], 1);
    json_decref(doc);

    struct stat st;
    char path[4300];
    snprintf(path, sizeof(path), "%s/sweep_latency.png", out);
    assert_int_equal(stat(path, &st), 0);
    assert_int_gt(st.st_size, 0);
    static char report[262144];
    assert_int_gt(read_text(out, "report.md", report, sizeof(report)), 0);
    assert_contains(report, "## The network");
    assert_contains(report, "| twemproxy | servers | rtt=1ms | 1ms | 1.75 | 1750 |");
    assert_contains(report, "| cluster | - | rtt=1ms | 1ms | 1.00 | 1000 |");
    static char table[65536];
    assert_int_gt(read_text(out, "table.md", table, sizeof(table)), 0);
    assert_contains(table, "wire CPU-s (not in total)");
    cp_clirun_free(&run);
}

/* `compare --setups twemproxy --rtt 1ms --proxy-placement P`: the hops per request report.md
 * reads from the links are the placement's (a sidecar: only the proxy's link to a server
 * crosses, 1; a tier of its own: both links cross, 2), and a GET at depth 1 takes at least
 * about hops x RTT. */
static void test_placements_at_rtt(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    static const struct {
        const char *placement;
        const char *row; /* report.md's row of the GET case, up to RTT x hops */
        double min_p50;  /* us: 0.8 x hops x RTT */
    } cases[] = {
        {"clients", "| twemproxy | clients | GET | 1ms | 1.00 | 1000 |", 800},
        {"tier", "| twemproxy | tier | GET | 1ms | 2.00 | 2000 |", 1600},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        cp_clirun run;
        cp_clirun_init(&run);
        char out[4200];
        snprintf(out, sizeof(out), "%s", cp_clirun_path(&run, cases[k].placement));
        const char *args[] = {"compare",
                              "--out",
                              out,
                              "--setups",
                              "twemproxy",
                              "--rtt",
                              "1ms",
                              "--proxy-placement",
                              cases[k].placement,
                              "--threads",
                              "1",
                              "--clients",
                              "4",
                              "--keys",
                              "300",
                              "--requests",
                              "2000",
                              "--repeat",
                              "1",
                              "--quiet",
                              NULL};
        json_t *doc = compare_results(&run, args, out);
        const json_t *topo = json_array_get(json_object_get(doc, "topologies"), 0);
        assert_string_equal(json_string_value(json_object_get(topo, "proxy_placement")),
                            cases[k].placement);
        size_t i;
        const json_t *r;
        json_array_foreach(json_object_get(doc, "runs"), i, r) {
            assert_int_equal(json_integer_value(json_object_get(r, "failed_ops")), 0);
            if (strcmp(json_string_value(json_object_get(r, "call_type")), "GET") == 0)
                assert_double_ge(num(r, "latency_us", "p50"), cases[k].min_p50);
        }
        json_decref(doc);
        static char report[262144];
        assert_int_gt(read_text(out, "report.md", report, sizeof(report)), 0);
        assert_contains(report, cases[k].row);
        cp_clirun_free(&run);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_at_rtt),
        cmocka_unit_test(test_rtt_sweep),
        cmocka_unit_test(test_placements_at_rtt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
