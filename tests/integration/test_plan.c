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
 * cluster pipelined GET redis 2.5, proxy 0, client 1.2. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "clirun.h"

#include <stdio.h>
#include <string.h>

#define FIXTURE CP_TEST_DATA "/plan"

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cores_by_hand),
        cmocka_unit_test(test_default_util_and_closest_point),
        cmocka_unit_test(test_bad_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
