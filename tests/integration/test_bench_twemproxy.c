/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `load` and `bench` against a real twemproxy topology (one nutcracker in front of two
 * redis-servers, ephemeral, stopped and checked by PID in the teardown): load checks the key
 * count on the shards, bench verifies every reply with 0 mismatches and measures redis and proxy
 * CPU from the topology's processes; a value corrupted through the proxy is caught (exit code 1);
 * the same proxy as an external --proxy target reports server CPU as null (not measurable), never
 * 0, and load skips the count with a note. Single-threaded test code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "bench/keyspace.h"
#include "clirun.h"
#include "fixture.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int setup(void **state) {
    return cp_fixture_setup_twemproxy2(state);
}

static int teardown(void **state) {
    return cp_fixture_teardown(state);
}

static json_t *run_json(cp_clirun *run, const char *const *args, int want_rc, const char *jpath) {
    int rc = cp_clirun_run(run, args);
    if (rc != want_rc)
        fail_msg("%s exited %d, want %d: %s%s", args[0], rc, want_rc, run->out, run->err);
    json_error_t je;
    json_t *j = json_load_file(jpath, 0, &je);
    if (j == NULL)
        fail_msg("%s: %s", jpath, je.text);
    return j;
}

static void test_load_and_bench(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *load[] = {"load", "--dir", f->dir, "--keys", "3000", "--pipeline", "16", NULL};
    int rc = cp_clirun_run(&run, load);
    if (rc != 0)
        fail_msg("load exited %d: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "the servers hold 3000 keys, as expected"));
    assert_non_null(strstr(run.out, "(twemproxy, pipeline 16, SET per key)")); /* --pipeline wins */
    const char *st[] = {"status", "--dir", f->dir, NULL};
    assert_int_equal(cp_clirun_run(&run, st), 0);
    assert_non_null(strstr(run.out, "keys: 3000 (the shards' counts summed)"));
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "tw.json"));
    /* 80,000 requests: enough that both redis-servers and nutcracker use many clock ticks of
     * CPU (/proc/PID/stat counts in 10 ms ticks; at 8,000 the servers sometimes read 0). */
    const char *args[] = {"bench", "--dir",  f->dir, "--clients", "4",   "--pipeline",
                          "8",     "--keys", "3000", "--ratio",   "1:3", "--requests",
                          "80000", "--json", jpath,  NULL};
    json_t *j = run_json(&run, args, 0, jpath);
    assert_string_equal(json_string_value(json_object_get(j, "topology")), "twemproxy");
    assert_int_equal(json_integer_value(json_object_get(j, "ops")), 80000);
    json_t *v = json_object_get(j, "verify");
    assert_int_equal(json_integer_value(json_object_get(v, "checked")), 60000);
    assert_int_equal(json_integer_value(json_object_get(v, "mismatches")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "misses")), 0);
    json_t *cs = json_object_get(j, "cpu_seconds");
    assert_double_gt(json_number_value(json_object_get(cs, "redis")), 0);
    assert_double_gt(json_number_value(json_object_get(cs, "proxy")), 0);
    assert_double_gt(json_number_value(json_object_get(cs, "client")), 0);
    assert_true(json_is_number(json_object_get(cs, "total")));
    const char *nv =
        json_string_value(json_object_get(json_object_get(j, "versions"), "nutcracker"));
    assert_non_null(nv);
    json_decref(j);
    cp_clirun_free(&run);
}

static void test_corrupted_value_caught(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *load[] = {"load", "--dir", f->dir, "--keys", "500", NULL};
    assert_int_equal(cp_clirun_run(&run, load), 0);
    assert_non_null(
        strstr(run.out, "(twemproxy, pipeline 64, SET per key)")); /* the proxy's default depth */
    cp__keyfmt kf;
    cp__valuefmt vf;
    assert_int_equal(cp__keyfmt_init(&kf, NULL, 0), 0);
    assert_int_equal(cp__valuefmt_init(&vf, 64, cp__key_max_len(&kf, 500), true), 0);
    char val[64];
    cp__value_fill(&vf, "key:43", 6, 1, val);
    redisReply *rep = cp_fixture_command(f, "SET key:42 %b", val, (size_t)64);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    cp__valuefmt_free(&vf);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "c.json"));
    const char *args[] = {"bench", "--dir",      f->dir,       "--keys", "500", "--requests",
                          "500",   "--key-dist", "sequential", "--json", jpath, NULL};
    json_t *j = run_json(&run, args, 1, jpath);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 1);
    assert_non_null(strstr(run.err, "key:42"));
    assert_non_null(strstr(run.err, "wrong key"));
    json_decref(j);
    cp_clirun_free(&run);
}

/* An external proxy: its backends are unknown, so their CPU is null, and so is the proxy's. */
static void test_external_proxy(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *load[] = {"load", "--proxy", f->endpoints, "--keys", "800", NULL};
    int rc = cp_clirun_run(&run, load);
    if (rc != 0)
        fail_msg("load exited %d: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "not checked"));
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "x.json"));
    const char *args[] = {"bench",      "--proxy", f->endpoints, "--keys", "800",
                          "--requests", "3000",    "--json",     jpath,    NULL};
    json_t *j = run_json(&run, args, 0, jpath);
    assert_string_equal(json_string_value(json_object_get(j, "topology")), "external");
    json_t *cs = json_object_get(j, "cpu_seconds"), *cu = json_object_get(j, "cpu_us_per_op");
    assert_true(json_is_null(json_object_get(cs, "redis")));
    assert_true(json_is_null(json_object_get(cs, "proxy")));
    assert_true(json_is_null(json_object_get(cs, "total")));
    assert_true(json_is_null(json_object_get(cu, "proxy")));
    assert_true(json_is_null(json_object_get(cs, "replicas"))); /* external: unknown */
    assert_double_gt(json_number_value(json_object_get(cs, "client")), 0);
    assert_non_null(strstr(run.out, "n/a"));
    json_decref(j);
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_and_bench, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupted_value_caught, setup, teardown),
        cmocka_unit_test_setup_teardown(test_external_proxy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
