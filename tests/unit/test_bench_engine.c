/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests of the bench engine's pure parts (no server): --ratio parsing and the SET/GET
 * spread, batch composition (size per mode, clients per thread, requests per client), config
 * validation with messages naming the flag, endpoint lists, target helpers, and the JSON / CSV
 * reports built from a synthetic result (every contract field present, unmeasurable CPU as null,
 * files written atomically). Single-threaded; temporary files live in a scratch directory that
 * is removed at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "bench/engine.h"
#include "util/jsonfile.h"
#include "bench/nodes.h"
#include "bench/plan.h"
#include "bench/report.h"
#include "bench/target.h"
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_ratio_parse(void **state) {
    (void)state;
    unsigned s = 99, g = 99;
    assert_int_equal(cp__ratio_parse("1:10", &s, &g), 0);
    assert_int_equal(s, 1);
    assert_int_equal(g, 10);
    assert_int_equal(cp__ratio_parse("0:1", &s, &g), 0);
    assert_int_equal(s, 0);
    assert_int_equal(g, 1);
    assert_int_equal(cp__ratio_parse("1:0", &s, &g), 0);
    assert_int_equal(cp__ratio_parse("1000000:1", &s, &g), 0);
    const char *bad[] = {"",     ":",    "1",     "1:",        ":1",
                         "0:0",  "a:b",  "1:2:3", "-1:2",      "1:-2",
                         " 1:2", "1:2 ", "1.5:2", "1000001:1", "99999999999999999999:1",
                         NULL};
    for (int i = 0; bad[i] != NULL; i++) {
        s = g = 7;
        if (cp__ratio_parse(bad[i], &s, &g) != CP_EINVAL)
            fail_msg("--ratio '%s' was accepted", bad[i]);
        assert_int_equal(s, 7); /* untouched on error */
    }
    assert_int_equal(cp__ratio_parse(NULL, &s, &g), CP_EINVAL);
}

/* Exactly set/(set+get) of every period are SETs, spread out rather than bunched. */
static void test_ratio_spread(void **state) {
    (void)state;
    const unsigned mixes[][2] = {{1, 10}, {1, 1}, {3, 7}, {0, 1}, {1, 0}, {5, 3}, {1, 99}};
    for (size_t m = 0; m < sizeof(mixes) / sizeof(mixes[0]); m++) {
        unsigned rs = mixes[m][0], rg = mixes[m][1];
        uint64_t period = rs + rg, sets = 0, run = 0, max_run = 0;
        for (uint64_t n = 0; n < period * 100; n++) {
            bool s = cp__ratio_is_set(n, rs, rg);
            sets += s;
            run = s ? run + 1 : 0;
            max_run = run > max_run ? run : max_run;
        }
        assert_int_equal(sets, (uint64_t)rs * 100);
        if (rs <= rg) /* with fewer SETs than GETs, no two SETs in a row */
            assert_int_le(max_run, 1);
    }
    /* 1:10 -> one SET per 11 requests, at the same place each period */
    int first = -1;
    for (int n = 0; n < 11; n++)
        if (cp__ratio_is_set((uint64_t)n, 1, 10))
            first = first < 0 ? n : 100;
    assert_int_ge(first, 0);
    assert_int_lt(first, 11);
    for (int k = 1; k < 5; k++)
        assert_true(cp__ratio_is_set((uint64_t)(first + 11 * k), 1, 10));
}

static void test_batch_composition(void **state) {
    (void)state;
    /* --pipeline P = P in flight per connection: a lane per master in cluster mode */
    assert_int_equal(cp__lane_count(CP__TARGET_CLUSTER, 4), 4);
    assert_int_equal(cp__lane_count(CP__TARGET_CLUSTER, 1), 1);
    assert_int_equal(cp__lane_count(CP__TARGET_PROXY, 4), 1);

    /* clients spread over threads: all of them, the first threads get the remainder */
    int total = 0;
    for (int t = 0; t < 3; t++)
        total += cp__clients_of_thread(10, 3, t);
    assert_int_equal(total, 10);
    assert_int_equal(cp__clients_of_thread(10, 3, 0), 4);
    assert_int_equal(cp__clients_of_thread(10, 3, 2), 3);
    assert_int_equal(cp__clients_of_thread(10, 3, 3), 0);

    /* requests spread over clients: exactly the total, off by at most one */
    const uint64_t totals[] = {0, 1, 7, 100, 1000003, UINT64_MAX / 3};
    for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++) {
        uint64_t sum = 0, lo = UINT64_MAX, hi = 0;
        for (int c = 0; c < 7; c++) {
            uint64_t q = cp__client_quota(totals[k], 7, c);
            sum += q;
            lo = q < lo ? q : lo;
            hi = q > hi ? q : hi;
        }
        assert_int_equal(sum, totals[k]);
        assert_int_le(hi - lo, 1);
    }
}

static void expect_bad(const cp__bench_config *cfg, const char *needle) {
    char err[256] = "";
    assert_int_equal(cp__bench_config_check(cfg, err, sizeof(err)), CP_EINVAL);
    if (strstr(err, needle) == NULL)
        fail_msg("message '%s' does not name '%s'", err, needle);
}

static void test_config_check(void **state) {
    (void)state;
    cp__bench_config cfg, c;
    char err[256];
    cp__bench_config_init(&cfg);
    assert_int_equal(cp__bench_config_check(&cfg, err, sizeof(err)), 0);
    assert_true(cfg.verify);
    assert_int_equal(cfg.ratio_set, 0);
    assert_int_equal(cfg.ratio_get, 1);

    c = cfg, c.threads = 0, expect_bad(&c, "--threads");
    c = cfg, c.threads = 4, c.clients = 2, expect_bad(&c, "--clients");
    c = cfg, c.pipeline = 0, expect_bad(&c, "--pipeline");
    c = cfg, c.requests = 0, c.duration_s = 0, expect_bad(&c, "--duration");
    c = cfg, c.requests = 0, c.duration_s = 2.5;
    assert_int_equal(cp__bench_config_check(&c, err, sizeof(err)), 0);
    c = cfg, c.ratio_set = 0, c.ratio_get = 0, expect_bad(&c, "--ratio");
    c = cfg, c.keys = 0, expect_bad(&c, "--keys");
    c = cfg, cp__value_sizes_fixed(&c.value_size, 0), expect_bad(&c, "--value-size");
    c = cfg, c.rate = -1, expect_bad(&c, "--rate");
    /* the open loop's bound holds at least a batch */
    c = cfg, c.pipeline = 8, c.max_inflight = 7, expect_bad(&c, "--max-inflight");
    c = cfg, c.pipeline = 8, c.max_inflight = 8;
    assert_int_equal(cp__bench_config_check(&c, err, sizeof(err)), 0);
    /* a value too small to carry "key:99999|version|" cannot be verified ... */
    c = cfg, cp__value_sizes_fixed(&c.value_size, 8), expect_bad(&c, "--no-verify");
    /* ... but is fine without verification */
    c.verify = false;
    assert_int_equal(cp__bench_config_check(&c, err, sizeof(err)), 0);
    /* several sizes: the smallest must hold the header */
    c = cfg;
    assert_int_equal(cp__value_sizes_parse("8:1,1000:1", &c.value_size, NULL, 0), 0);
    expect_bad(&c, "--no-verify");
    assert_int_equal(cp__value_sizes_parse("30-5000", &c.value_size, NULL, 0), 0);
    assert_int_equal(cp__bench_config_check(&c, err, sizeof(err)), 0);
    /* a Gaussian's centre must be a key of the key space */
    c = cfg;
    assert_int_equal(cp__dist_parse("gaussian:100000,10", &c.dist), 0);
    expect_bad(&c, "gaussian:C,S");
    assert_int_equal(cp__dist_parse("gaussian:99999,10", &c.dist), 0);
    assert_int_equal(cp__bench_config_check(&c, err, sizeof(err)), 0);
}

static void test_addr_list(void **state) {
    (void)state;
    cp__node_addr a[4];
    assert_int_equal(cp__addr_list_parse("127.0.0.1:7000", a, 4), 1);
    assert_string_equal(a[0].host, "127.0.0.1");
    assert_int_equal(a[0].port, 7000);
    assert_int_equal(cp__addr_list_parse("h1:1,h2:65535,[::1]:6379", a, 4), 3);
    assert_string_equal(a[2].host, "::1");
    assert_int_equal(a[2].port, 6379);
    const char *bad[] = {"",      "h",    "h:",   ":1",       "h:0",  "h:65536",
                         "h:12a", "h:1,", ",h:1", "h:1,,h:2", "h:-1", "a:1,b:2,c:3,d:4,e:5",
                         NULL};
    for (int i = 0; bad[i] != NULL; i++)
        if (cp__addr_list_parse(bad[i], a, 4) > 0)
            fail_msg("'%s' was accepted", bad[i]);

    cp__bench_target t;
    assert_int_equal(cp__bench_target_external(&t, CP__TARGET_CLUSTER, "127.0.0.1:1", NULL, NULL),
                     0);
    assert_string_equal(cp__bench_target_topology(&t), "external");
    assert_int_equal(cp__bench_target_external(&t, CP__TARGET_PROXY, "nope", NULL, NULL),
                     CP_EINVAL);
}

/* A result as a run over an external twemproxy would leave it: server CPU unknown. */
static void fake_result(cp__bench_result *r) {
    memset(r, 0, sizeof(*r));
    cp__hist_init(&r->latency);
    for (uint64_t i = 1; i <= 1000; i++)
        cp__hist_record_ns(&r->latency, i * 1000);
    r->ops = 1000;
    r->gets = 900;
    r->sets = 100;
    r->seconds = 2.0;
    r->ops_per_sec = 500;
    r->verify_checked = 900;
    r->has_cpu_client = true;
    r->cpu_client = 0.5;
    r->masters = 2;
    r->cores = 2;
    r->ntimeline = 2;
    r->timeline = calloc(2, sizeof(*r->timeline));
    assert_non_null(r->timeline);
    r->timeline[0] = (cp__bench_second){.t = 1.0, .ops = 600, .errors = 0, .p99_us = 900.0};
    r->timeline[1] = (cp__bench_second){.t = 2.0, .ops = 400, .errors = 0, .p99_us = 990.0};
}

static void test_json_contract(void **state) {
    (void)state;
    cp__bench_target t;
    assert_int_equal(cp__bench_target_external(&t, CP__TARGET_PROXY, "127.0.0.1:22121", NULL, NULL),
                     0);
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.command_line = "clusterpipe bench --proxy 127.0.0.1:22121";
    cp__bench_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    fake_result(r);
    json_t *j = cp__bench_json(&t, &cfg, r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "clusterpipe.bench/1");
    assert_string_equal(json_string_value(json_object_get(j, "topology")), "external");
    const char *top[] = {
        "workload",    "ops",           "seconds",      "ops_per_sec", "latency_us",
        "cpu_seconds", "cpu_us_per_op", "redirects",    "retries",     "failed_ops",
        "unknown_ops", "verify",        "misses",       "timeline",    "latency_curve",
        "versions",    "machine",       "command_line", NULL};
    for (int i = 0; top[i]; i++)
        if (json_object_get(j, top[i]) == NULL)
            fail_msg("missing %s", top[i]);
    const char *wl[] = {"threads",    "clients",  "pipeline",   "ratio", "keys",
                        "value_size", "key_dist", "key_layout", NULL};
    for (int i = 0; wl[i]; i++)
        assert_non_null(json_object_get(json_object_get(j, "workload"), wl[i]));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "workload"), "ratio")),
                        "0:1");
    const char *lat[] = {"p50", "p90", "p99", "p999", "max", NULL};
    double prev = 0;
    for (int i = 0; lat[i]; i++) {
        double v = json_real_value(json_object_get(json_object_get(j, "latency_us"), lat[i]));
        assert_double_ge(v, prev);
        prev = v;
    }
    assert_double_gt(prev, 990);
    assert_double_lt(prev, 1010);
    /* unmeasurable CPU is null, never 0 */
    json_t *cs = json_object_get(j, "cpu_seconds"), *cu = json_object_get(j, "cpu_us_per_op");
    assert_true(json_is_null(json_object_get(cs, "redis")));
    assert_true(json_is_null(json_object_get(cs, "proxy")));
    assert_true(json_is_null(json_object_get(cs, "total")));
    assert_true(json_is_null(json_object_get(cu, "proxy")));
    assert_double_eq(json_real_value(json_object_get(cs, "client")), 0.5);
    assert_double_eq(json_real_value(json_object_get(cu, "client")), 500.0);
    assert_non_null(json_object_get(json_object_get(j, "redirects"), "moved"));
    assert_non_null(json_object_get(json_object_get(j, "redirects"), "ask"));
    const char *rt[] = {"tryagain", "clusterdown", "io", NULL};
    for (int i = 0; rt[i]; i++)
        assert_non_null(json_object_get(json_object_get(j, "retries"), rt[i]));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "verify"), "checked")),
                     900);
    assert_int_equal(json_array_size(json_object_get(j, "timeline")), 2);
    json_t *curve = json_object_get(j, "latency_curve");
    assert_int_ge(json_array_size(curve), 3);
    json_t *last = json_array_get(curve, json_array_size(curve) - 1);
    assert_double_eq(json_real_value(json_object_get(last, "percentile")), 100.0);
    assert_non_null(json_object_get(json_object_get(j, "versions"), "clusterpipe"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "machine"), "cores")),
                     2);

    /* atomic writes: the final files exist, no temporary file is left behind */
    char *dir = cp_test_mkdtemp("benchjson");
    char path[4096], csv[4096], e[256];
    snprintf(path, sizeof(path), "%s/out.json", dir);
    snprintf(csv, sizeof(csv), "%s/out.csv", dir);
    assert_int_equal(cp__json_write_file(path, j, e, sizeof(e)), 0);
    assert_int_equal(cp__bench_write_csv(csv, &t, &cfg, r, e, sizeof(e)), 0);
    json_t *back = json_load_file(path, 0, NULL);
    assert_non_null(back);
    assert_true(json_equal(back, j));
    json_decref(back);
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    char line[2048];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_non_null(strstr(line, "ops_per_sec"));
    assert_non_null(fgets(line, sizeof(line), f));
    assert_non_null(strstr(line, "external,proxy,1,50,1,0:1"));
    fclose(f);
    snprintf(e, sizeof(e), "%s/missing/out.json", dir);
    assert_int_not_equal(cp__json_write_file(e, j, line, sizeof(line)), 0);
    DIR *d = opendir(dir);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        files++;
        assert_null(strstr(de->d_name, ".tmp"));
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
    assert_int_equal(files, 2);
    rmdir(dir);
    free(dir);
    json_decref(j);
    cp__bench_result_free(r);
    cp__bench_result_free(r); /* twice is fine */
    free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ratio_parse),       cmocka_unit_test(test_ratio_spread),
        cmocka_unit_test(test_batch_composition), cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_addr_list),         cmocka_unit_test(test_json_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
