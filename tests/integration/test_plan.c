/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe plan` on a stored results.json (tests/data/plan/, hand-made: per-op CPU chosen so
 * the plan can be worked out on paper), through the binary: the cores of every component at a
 * rate and utilisation, the medians over repeats, a failed run left out, the closest point to a
 * workload, and bad usage. No servers.
 *
 * The fixture: twemproxy GET three runs, CPU-us per op redis 10/12/11, proxy 20/22/30, client
 * 5/7/6 (medians 11, 22, 6); twemproxy pipelined GET (pipeline 10) redis 3, proxy 4, client 1,
 * plus a failed run at 1000 each that must not count; cluster GET redis 8, proxy 0, client 6.5;
 * cluster pipelined GET redis 2.5, proxy 0, client 1.2.
 *
 * tests/data/plan-rtt/ (hand-made, an rtt sweep's shape) for `plan --rtt` and report.md's
 * predicted beside measured: twemproxy (4 shards) at depth 1 over 4 connections, 10,000 ops/s at
 * RTT 0 and 1,800 at 1 ms, CPU 10 / 20 / 10 us per op; twemproxy at depth 10, 40,000 ops/s;
 * the cluster (4 masters) over 1 connection at depth 1, 20,000 ops/s; and the cluster over 2
 * connections at 1 ms only, whose RTT 0 these results lack. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define FIXTURE CP_TEST_DATA "/plan"
#define FIXTURE_RTT CP_TEST_DATA "/plan-rtt"

/* The table row of setup + call in out (NULL when absent), up to its newline, into row. */
static int find_row(const char *out, const char *setup_call, char *row, size_t len) {
    char key[128];
    snprintf(key, sizeof(key), "| %s,", setup_call);
    const char *at = strstr(out, key);
    if (at == NULL)
        return 0;
    size_t n = strcspn(at, "\n");
    snprintf(row, len, "%.*s", (int)n, at);
    return 1;
}

static void expect_row(const char *out, const char *setup_call, const char *cells) {
    char row[1024];
    if (!find_row(out, setup_call, row, sizeof(row)))
        fail_msg("no row '%s' in:\n%s", setup_call, out);
    if (strstr(row, cells) == NULL)
        fail_msg("row '%s' lacks '%s'", row, cells);
}

static void test_cores_by_hand(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    const char *args[] = {"plan", FIXTURE, "--rate", "100000", "--target-util", "0.5", NULL};
    assert_int_equal(cp_clirun_run(&c, args), 0);
    /* 100,000 ops/s x 11 us / 1e6 / 0.5 = 2.2 cores -> 3; proxy 22 us: 4.4 -> 5; client 6: 1.2
     * -> 2; the total 7.8 exact, 10 whole (separate hosts: whole cores add) */
    expect_row(c.out, "twemproxy | GET",
               "| 11.00 / 22.00 / 6.00 | 2.20 -> 3 | 4.40 -> 5 | "
               "1.20 -> 2 | 7.80 -> 10 |");
    /* the failed run (1000 us each) would make the medians 501.5; it is left out */
    expect_row(c.out, "twemproxy | pipelined GET",
               "| 3.00 / 4.00 / 1.00 | 0.60 -> 1 | "
               "0.80 -> 1 | 0.20 -> 1 | 1.60 -> 3 |");
    /* no proxy in a cluster: 0 cores, not n/a */
    expect_row(c.out, "cluster | GET",
               "| 8.00 / 0.00 / 6.50 | 1.60 -> 2 | 0.00 -> 0 | "
               "1.30 -> 2 | 2.90 -> 4 |");
    expect_row(c.out, "cluster | pipelined GET",
               "| 2.50 / 0.00 / 1.20 | 0.50 -> 1 | "
               "0.00 -> 0 | 0.24 -> 1 | 0.74 -> 2 |");
    /* the assumptions are printed */
    assert_non_null(strstr(c.out, "target utilisation 50%"));
    assert_non_null(strstr(c.out, "loopback hides the network"));
    assert_non_null(strstr(c.out, "Fixture CPU, 2 cores"));
    cp_clirun_free(&c);
}

static void test_default_util_and_closest_point(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    /* default 0.6: 100,000 x 11 / 1e6 / 0.6 = 1.833 -> 2 */
    const char *all[] = {"plan", FIXTURE, "--rate", "100000", NULL};
    assert_int_equal(cp_clirun_run(&c, all), 0);
    expect_row(c.out, "twemproxy | GET", "| 1.83 -> 2 |");
    assert_non_null(strstr(c.out, "at 60% CPU utilisation"));
    /* pipeline 8 is closest to the pipelined points (|log 8/10| < |log 8/1|): only those */
    const char *p8[] = {"plan", FIXTURE, "--rate", "100000", "--pipeline", "8", NULL};
    assert_int_equal(cp_clirun_run(&c, p8), 0);
    char row[1024];
    assert_false(find_row(c.out, "twemproxy | GET", row, sizeof(row)));
    assert_false(find_row(c.out, "cluster | GET", row, sizeof(row)));
    expect_row(c.out, "twemproxy | pipelined GET", "| 0.50 -> 1 | 0.67 -> 1 |");
    expect_row(c.out, "cluster | pipelined GET", "| 0.42 -> 1 |");
    /* pipeline 2 is closer to 1 than to 10 */
    const char *p2[] = {"plan", FIXTURE, "--rate", "100000", "--pipeline", "2", NULL};
    assert_int_equal(cp_clirun_run(&c, p2), 0);
    assert_true(find_row(c.out, "twemproxy | GET", row, sizeof(row)));
    assert_false(find_row(c.out, "twemproxy | pipelined GET", row, sizeof(row)));
    cp_clirun_free(&c);
}

static void test_bad_usage(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    const char *no_rate[] = {"plan", FIXTURE, NULL};
    assert_int_equal(cp_clirun_run(&c, no_rate), 2);
    assert_non_null(strstr(c.err, "--rate"));
    const char *util0[] = {"plan", FIXTURE, "--rate", "1000", "--target-util", "0", NULL};
    assert_int_equal(cp_clirun_run(&c, util0), 2);
    assert_non_null(strstr(c.err, "--target-util"));
    const char *util2[] = {"plan", FIXTURE, "--rate", "1000", "--target-util", "1.5", NULL};
    assert_int_equal(cp_clirun_run(&c, util2), 2);
    const char *no_dir[] = {"plan", "--rate", "1000", NULL};
    assert_int_equal(cp_clirun_run(&c, no_dir), 2);
    const char *missing[] = {"plan", c.scratch, "--rate", "1000", NULL};
    assert_int_equal(cp_clirun_run(&c, missing), 1);
    assert_non_null(strstr(c.err, "results.json"));
    cp_clirun_free(&c);
}

/* plan --rtt 1ms --rate 100000, worked on paper. twemproxy at depth 1: 4 in flight / 10,000
 * ops/s = 400 us of service; 1.75 hops (a proxy on each of 4 redis hosts: 1 + 3/4) x 1 ms: 2150
 * us; 4 / 2150 us = 1860 ops/s (CPU bound 2 cores / 40 us = 50,000: not reached); 100,000 ops/s
 * x 2150 us = 215 in flight, one per connection. At depth 10: 40 / 40,000 = 1000 us, a batch
 * waits for its slowest key: 2 - (1/4)^10 = 2.00 hops, 3000 us, 13,333 ops/s, 300 in flight over
 * 10 per connection: 30. The cluster: 4 lanes (masters) x 1 / 20,000 = 200 us, 1 hop, 1200 us,
 * 3333 ops/s, 120 in flight over 4 lanes: 30 connections. */
static void test_rtt_by_hand(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    const char *args[] = {"plan", FIXTURE_RTT, "--rate", "100000", "--rtt", "1ms", NULL};
    assert_int_equal(cp_clirun_run(&c, args), 0);
    assert_contains(c.out, "# At RTT 1ms: predicted from RTT 0");
    assert_contains(c.out, "| twemproxy | pipeline 1, 4 connections | 1.75 | 10000 | 400 | 2150 | "
                           "1860 | 1800 | 215 | 215 | 8 |");
    assert_contains(c.out, "| twemproxy | pipelined GET, pipeline 10, 4 connections | 2.00 | "
                           "40000 | 1000 | 3000 | 13333 | n/a | 300 | 30 | 3 |");
    assert_contains(c.out, "| cluster | pipeline 1, 1 connections | 1.00 | 20000 | 200 | 1200 | "
                           "3333 | n/a | 120 | 30 | 4 |");
    /* the runs through the wire are no bases: the cluster's 2 connections at 1 ms is not planned */
    assert_not_contains(c.out, "2 connections");
    assert_contains(c.out, "Hops from the placement");
    cp_clirun_free(&c);
}

/* report.md, rendered from the same document: the point at 1 ms shows the model's numbers from
 * its run at RTT 0 beside the measured (1800 / 1860 = 0.97), the point without one says so
 * instead of predicting, and the runs at RTT 0 are predicted at the reference 1 ms. */
static void test_rtt_in_report(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    char dir[4200], path[4300];
    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&c, "r"));
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof(path), "%s/results.json", dir);
    FILE *in = fopen(FIXTURE_RTT "/results.json", "r"), *out = fopen(path, "w");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    const char *args[] = {"report", dir, NULL};
    assert_int_equal(cp_clirun_run(&c, args), 0);
    snprintf(path, sizeof(path), "%s/report.md", dir);
    static char md[262144];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    md[fread(md, 1, sizeof(md) - 1, f)] = '\0';
    fclose(f);
    assert_contains(md, "### Predicted beside measured");
    assert_contains(md, "| twemproxy | pipeline 1, 4 connections | 1ms | 1.75 | 2150 / 2200 | "
                        "1860 / 1800 | 0.97 |");
    assert_contains(md, "| cluster | pipeline 1, 2 connections | 1ms | - | no run at RTT 0 / 1250 "
                        "| no run at RTT 0 / 3000 | - |");
    assert_contains(md, "has no prediction");
    /* and the runs at RTT 0 at the report's reference round trip, as plan --rtt 1ms gives them */
    assert_contains(md, "## At RTT 1ms: predicted from RTT 0");
    assert_contains(md,
                    "| cluster | pipeline 1, 1 connections | 1.00 | 20000 | 200 | 1200 | 3333 |");
    cp_clirun_free(&c);
}

static void test_rtt_usage(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    const char *no_unit[] = {"plan", FIXTURE_RTT, "--rate", "1000", "--rtt", "5", NULL};
    assert_int_equal(cp_clirun_run(&c, no_unit), 2);
    assert_contains(c.err, "--rtt");
    cp_clirun_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cores_by_hand), cmocka_unit_test(test_default_util_and_closest_point),
        cmocka_unit_test(test_bad_usage),     cmocka_unit_test(test_rtt_by_hand),
        cmocka_unit_test(test_rtt_in_report), cmocka_unit_test(test_rtt_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
