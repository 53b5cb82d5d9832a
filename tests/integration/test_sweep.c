/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe compare --sweep` end to end through the binary, small and fast: a two-point
 * pipeline sweep on both architectures (every point run on each, its charts and report section,
 * and `plan` picking the point closest to a workload); the connection sweep at 200 clients,
 * where the redis servers behind twemproxy hold only the proxies' connections (4 proxies x
 * server_connections 1 each) while every cluster master holds one per client, started with a
 * soft file-descriptor limit too low for it (the command raises it itself); the hard limit too
 * low (a clear failure before anything starts); bad sweeps exit 2.
 *
 * Connection counts are read by the command at the start gate (every client connected, none
 * sending), so they are exact. Single-threaded; the binary runs as a child (clirun.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static json_t *results(const char *dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", dir);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (doc == NULL)
        fail_msg("%s: %s", path, je.text);
    return doc;
}

static int nonempty(const char *dir, const char *name) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* DIR/report.md into buf (of len), NUL-terminated. */
static void read_report(const char *dir, char *buf, size_t len) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/report.md", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static double num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_pipeline_sweep_both_architectures(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&c, "out"));
    const char *args[] = {
        "compare",   "--sweep", "pipeline=1,4", "--requests", "2000",  "--keys", "500",
        "--threads", "2",       "--repeat",     "1",          "--out", dir,      "-q",
        NULL};
    int rc = cp_clirun_run(&c, args);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, c.err);
    json_t *doc = results(dir);
    const json_t *runs = json_object_get(doc, "runs"), *r;
    assert_int_equal(json_array_size(runs), 4);
    int seen[2][2] = {{0}}; /* [setup][point] */
    size_t i;
    json_array_foreach(runs, i, r) {
        const char *setup = json_string_value(json_object_get(r, "setup"));
        int s = strcmp(setup, "cluster") == 0;
        double value = num(json_object_get(r, "sweep"), "value");
        double pipeline = num(json_object_get(r, "workload"), "pipeline");
        assert_double_eq(value, pipeline); /* the point is what the engine ran */
        if (value != 1 && value != 4)
            fail_msg("sweep value %g, neither 1 nor 4", value);
        assert_double_eq(num(r, "ops"), 2000);
        seen[s][value == 4]++;
    }
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < 2; p++)
            assert_int_equal(seen[s][p], 1);
    json_decref(doc);
    assert_true(nonempty(dir, "sweep_cpu.png"));
    assert_true(nonempty(dir, "sweep_perf.svg"));
    assert_false(nonempty(dir, "sweep_connections.png")); /* a clients sweep's chart only */
    /* plan: pipeline 3 is closer to the point at 4 than to the one at 1 */
    const char *plan[] = {"plan", dir, "--rate", "100000", "--pipeline", "3", NULL};
    assert_int_equal(cp_clirun_run(&c, plan), 0);
    assert_non_null(strstr(c.out, "| twemproxy | pipeline 4, 2 connections,"));
    assert_non_null(strstr(c.out, "| cluster | pipeline 4, 2 connections,"));
    assert_null(strstr(c.out, "pipeline 1,"));
    char buf[65536];
    read_report(dir, buf, sizeof(buf));
    assert_non_null(strstr(buf, "## Sweep: pipeline"));
    assert_non_null(strstr(buf, "sweep_cpu.png"));
    cp_clirun_free(&c);
}

static void test_connection_sweep_200_clients(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    /* 200 clients x 4 masters is more than 256 descriptors: the command must raise its soft
     * limit itself */
    c.nofile_soft = 256;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&c, "out"));
    const char *args[] = {"compare", "--sweep", "clients=200", "--requests", "2000",
                          "--keys",  "500",     "--threads",   "2",          "--repeat",
                          "1",       "--out",   dir,           "-q",         NULL};
    int rc = cp_clirun_run(&c, args);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, c.err);
    json_t *doc = results(dir);
    const json_t *fd = json_object_get(json_object_get(doc, "settings"), "fd_limit");
    assert_double_eq(num(fd, "soft_before"), 256);
    assert_double_gt(num(fd, "soft"), 200 * 4);
    const json_t *runs = json_object_get(doc, "runs"), *r;
    assert_int_equal(json_array_size(runs), 2);
    size_t i, k;
    json_array_foreach(runs, i, r) {
        const char *setup = json_string_value(json_object_get(r, "setup"));
        int cluster = strcmp(setup, "cluster") == 0;
        int nredis = 0;
        const json_t *sv;
        json_array_foreach(json_object_get(r, "servers"), k, sv) {
            const json_t *cc = json_object_get(sv, "connected_clients");
            if (!json_is_number(cc))
                continue; /* a nutcracker */
            nredis++;
            double held = json_number_value(cc) - 1; /* the probe's own connection */
            if (cluster)
                assert_double_eq(held, 200); /* every client connects to every master */
            else {                           /* 4 proxies x server_connections 1 */
                assert_double_ge(held, 1);
                assert_double_le(held, 4);
            }
        }
        assert_int_equal(nredis, 4);
    }
    json_decref(doc);
    assert_true(nonempty(dir, "sweep_connections.png"));
    char buf[65536];
    read_report(dir, buf, sizeof(buf));
    assert_non_null(strstr(buf, "the soft limit was 256 and is"));
    cp_clirun_free(&c);
}

/* The sweeps that change the servers or the dataset: shards (a setup per point, each with its
 * own number of servers) and value size (the dataset loaded again per point). */
static void test_shards_and_value_size_sweeps(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&c, "shards"));
    const char *shards[] = {"compare", "--sweep", "shards=2,3", "--requests", "1000",
                            "--keys",  "300",     "--threads",  "2",          "--repeat",
                            "1",       "--out",   dir,          "-q",         NULL};
    int rc = cp_clirun_run(&c, shards);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, c.err);
    json_t *doc = results(dir);
    const json_t *t, *r, *p;
    size_t i, k;
    /* one setup per point and architecture, each with as many redis servers as its point */
    assert_int_equal(json_array_size(json_object_get(doc, "topologies")), 4);
    int want[] = {2, 3, 2, 3}; /* twemproxy's points, then the cluster's */
    json_array_foreach(json_object_get(doc, "topologies"), i, t) {
        int nredis = 0;
        json_array_foreach(json_object_get(t, "processes"), k, p) {
            nredis += strcmp(json_string_value(json_object_get(p, "role")), "redis") == 0;
        }
        assert_int_equal(nredis, want[i]);
    }
    json_array_foreach(json_object_get(doc, "runs"), i, r) {
        assert_double_eq(num(r, "shards"), num(json_object_get(r, "sweep"), "value"));
        if (strcmp(json_string_value(json_object_get(r, "setup")), "cluster") == 0)
            assert_double_eq(num(json_object_get(r, "workload"), "masters"), num(r, "shards"));
    }
    json_decref(doc);

    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&c, "values"));
    const char *values[] = {
        "compare",   "--sweep", "value-size=64,1000", "--requests", "1000",  "--keys", "300",
        "--threads", "2",       "--repeat",           "1",          "--out", dir,      "-q",
        NULL};
    rc = cp_clirun_run(&c, values);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, c.err);
    doc = results(dir);
    /* loaded once per point and architecture, each at its point's size, every GET verified */
    const json_t *loads = json_object_get(doc, "load"), *l;
    assert_int_equal(json_array_size(loads), 4);
    json_array_foreach(loads, i, l) {
        assert_double_eq(num(l, "value_size"), i % 2 == 0 ? 64 : 1000);
    }
    json_array_foreach(json_object_get(doc, "runs"), i, r) {
        assert_double_eq(num(json_object_get(r, "workload"), "value_size"),
                         num(json_object_get(r, "sweep"), "value"));
        assert_double_eq(num(json_object_get(r, "verify"), "mismatches"), 0);
        assert_double_eq(num(json_object_get(r, "verify"), "checked"), 1000);
    }
    json_decref(doc);
    cp_clirun_free(&c);
}

static void test_hard_limit_fails_before_starting(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    c.nofile_soft = 512;
    c.nofile_hard = 1024;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&c, "out"));
    const char *args[] = {"compare", "--sweep", "clients=10,1000", "--out", dir, "-q", NULL};
    assert_int_equal(cp_clirun_run(&c, args), 1);
    assert_non_null(strstr(c.err, "hard limit is 1024"));
    assert_non_null(strstr(c.err, "nothing was started"));
    assert_false(nonempty(dir, "results.json"));
    cp_clirun_free(&c);
}

static void test_bad_sweeps_exit_2(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&c, "out"));
    const char *bad[] = {"depth=1,2",    "pipeline=", "pipeline=1,,2",     "pipeline=0,1",
                         "pipeline=2,2", "shards=0",  "pipeline=1,100001", "shards=2,65",
                         "rtt=-1ms",     "rtt=1",     "rtt=0,2s",          "rtt=0,0us",
                         "rtt=1ms,abc",  "rtt=",      "rtt=1ms,,2ms"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *args[] = {"compare", "--sweep", bad[i], "--out", dir, NULL};
        int rc = cp_clirun_run(&c, args);
        if (rc != 2)
            fail_msg("--sweep %s: exit %d", bad[i], rc);
        assert_non_null(strstr(c.err, "--"));
    }
    const char *two[] = {"compare", "--sweep", "pipeline=1,2", "--sweep", "clients=1,2", "--out",
                         dir,       NULL};
    assert_int_equal(cp_clirun_run(&c, two), 2);
    assert_non_null(strstr(c.err, "one sweep per run"));
    const char *both[] = {"compare", "--sweep", "rtt=0,1ms", "--rtt", "1ms", "--out", dir, NULL};
    assert_int_equal(cp_clirun_run(&c, both), 2);
    assert_non_null(strstr(c.err, "not with --rtt"));
    const char *far[] = {"compare", "--sweep", "rtt=0,1.5s", "--out", dir, NULL};
    assert_int_equal(cp_clirun_run(&c, far), 2);
    assert_non_null(strstr(c.err, "more than the largest round trip a sweep takes, 1s"));
    cp_clirun_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_sweep_both_architectures),
        cmocka_unit_test(test_connection_sweep_200_clients),
        cmocka_unit_test(test_shards_and_value_size_sweeps),
        cmocka_unit_test(test_hard_limit_fails_before_starting),
        cmocka_unit_test(test_bad_sweeps_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
