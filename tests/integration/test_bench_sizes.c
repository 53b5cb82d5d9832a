/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Values of several sizes and Gaussian keys through the binary, against a real 3-master cluster
 * and a real twemproxy (ephemeral fixtures, stopped by PID in the teardown): `load --value-size
 * 100:7,1000:2,10000:1` (or a MIN-MAX range) writes every key at the length its bytes pick, in
 * the shares asked for (read back with STRLEN from the servers themselves); `bench` with the same
 * sizes, SETs among the GETs and --key-dist gaussian verifies every reply with no mismatch; its
 * --hdr-file parses as HdrHistogram's text and holds the JSON's percentiles, max and count; a
 * value of a size the list has but not this key's, and a truncated one, are caught (exit 1,
 * "wrong size"). Single-threaded test code.
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
#include "hgrm.h"
#include "jsoncheck.h"
#include "util/file.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIXED "100:7,1000:2,10000:1"

static int setup_cluster(void **state) {
    return cp_fixture_setup_cluster3(state);
}

static int setup_twemproxy(void **state) {
    return cp_fixture_setup_twemproxy2(state);
}

static int teardown(void **state) {
    return cp_fixture_teardown(state);
}

/* Every key's length on the servers is the one its bytes pick for `sizes`; returns how many
 * keys have each size of the list (counts[i] for sizes->size[i]). */
static void check_lengths(cp_fixture *f, const char *spec, int keys, int *counts) {
    cp__value_sizes z;
    assert_int_equal(cp__value_sizes_parse(spec, &z, NULL, 0), 0);
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, 12, true), 0);
    for (int k = 0; k < keys; k++) {
        char key[32];
        size_t kl = (size_t)snprintf(key, sizeof(key), "key:%d", k);
        redisReply *r = cp_fixture_command(f, "STRLEN %s", key);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        long long want = (long long)cp__value_len(&vf, key, kl);
        if (r->integer != want)
            fail_msg("%s: %lld bytes on the server, its size is %lld", key, r->integer, want);
        for (unsigned i = 0; counts != NULL && i < z.n; i++)
            counts[i] += z.size[i] == (size_t)r->integer;
        freeReplyObject(r);
    }
    cp__valuefmt_free(&vf);
}

/* The .hgrm file of a run against its JSON's latency_us and request count. */
static void check_hgrm(const char *hpath, const json_t *j) {
    cp_hgrm_check_json(hpath, json_object_get(j, "latency_us"),
                       (unsigned long long)cp_json_num(j, "ops"));
}

/* Writes key's value as if its size were `size` (a well-formed header for the key), or only the
 * first `keep` bytes of its own value. */
static void corrupt(cp_fixture *f, const char *key, size_t size, size_t keep) {
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init(&vf, size, 12, true), 0);
    char *val = malloc(size);
    assert_non_null(val);
    cp__value_fill(&vf, key, strlen(key), 1, val);
    redisReply *r = cp_fixture_command(f, "SET %s %b", key, val, keep);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    free(val);
    cp__valuefmt_free(&vf);
}

/* The first key in [0, keys) whose size under spec is `size`. */
static int key_of_size(const char *spec, size_t size, int keys, char *key, size_t cap) {
    cp__value_sizes z;
    assert_int_equal(cp__value_sizes_parse(spec, &z, NULL, 0), 0);
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, 12, true), 0);
    for (int k = 0; k < keys; k++) {
        size_t kl = (size_t)snprintf(key, cap, "key:%d", k);
        if (cp__value_len(&vf, key, kl) == size) {
            cp__valuefmt_free(&vf);
            return k;
        }
    }
    fail_msg("no key of %zu bytes", size);
    return -1;
}

static void test_cluster_mixed_sizes(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *load[] = {"load", "--dir", f->dir, "--keys", "4000", "--value-size", MIXED, NULL};
    cp_clirun_expect(&run, load, 0);
    assert_non_null(strstr(run.out, "loaded 4,000 keys of " MIXED " B"));
    assert_non_null(strstr(run.out, "the servers hold 4000 keys, as expected"));
    int counts[3] = {0};
    check_lengths(f, MIXED, 4000, counts);
    /* 70% / 20% / 10% of the keys, within 3% of all keys */
    const double want[3] = {0.7, 0.2, 0.1};
    for (int i = 0; i < 3; i++)
        if (fabs(counts[i] / 4000.0 - want[i]) > 0.03)
            fail_msg("size %d: %d of 4000 keys, want %.0f%%", i, counts[i], want[i] * 100);

    char jpath[4096], hpath[4096], cpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "b.json"));
    snprintf(hpath, sizeof(hpath), "%s", cp_clirun_path(&run, "b.hgrm"));
    snprintf(cpath, sizeof(cpath), "%s", cp_clirun_path(&run, "b.csv"));
    const char *bench[] = {"bench",    "--dir",      f->dir, "--keys",     "4000",  "--value-size",
                           MIXED,      "--ratio",    "1:3",  "--requests", "30000", "--key-dist",
                           "gaussian", "--clients",  "4",    "--pipeline", "8",     "--json",
                           jpath,      "--hdr-file", hpath,  "--csv",      cpath,   NULL};
    cp_clirun_expect(&run, bench, 0);
    json_t *j = cp_json_load(jpath);
    const json_t *wl = json_object_get(j, "workload");
    assert_string_equal(json_string_value(json_object_get(wl, "value_sizes")), MIXED);
    assert_int_equal(json_integer_value(json_object_get(wl, "value_size")), 1270);
    assert_string_equal(json_string_value(json_object_get(wl, "key_dist")), "gaussian");
    const json_t *v = json_object_get(j, "verify");
    assert_int_equal(json_integer_value(json_object_get(v, "mismatches")), 0);
    assert_int_gt(json_integer_value(json_object_get(v, "checked")), 20000);
    assert_double_gt(cp_json_num(j, "sets"), 7000);
    assert_double_eq(cp_json_num(j, "failed_ops"), 0);
    const json_t *tl = json_object_get(j, "timeline");
    assert_int_ge(json_array_size(tl), 1);
    for (size_t i = 0; i < json_array_size(tl); i++) {
        const json_t *s = json_array_get(tl, i);
        if (cp_json_num(s, "ops") == 0)
            continue;
        assert_double_gt(cp_json_num(s, "p50_us"), 0);
        assert_double_le(cp_json_num(s, "p50_us"), cp_json_num(s, "p99_us"));
        assert_double_le(cp_json_num(s, "p99_us"), cp_json_num(s, "p999_us"));
    }
    check_hgrm(hpath, j);
    json_decref(j);
    /* the SETs of the run wrote every key at its own size again */
    check_lengths(f, MIXED, 4000, NULL);
    size_t clen = 0;
    char *csv = cp__read_file(cpath, 1u << 20, &clen);
    assert_non_null(csv);
    /* value_sizes, then the six client-side cache columns, empty without the cache */
    assert_non_null(strstr(csv, ",\"" MIXED "\",,,,,,\n"));
    assert_non_null(strstr(csv, "t,ops,errors,p99_us,p50_us,p999_us\n"));
    free(csv);

    /* a 100-byte key given its 1000-byte value (header intact), a 10000-byte one truncated */
    char k1[32], k2[32];
    key_of_size(MIXED, 100, 4000, k1, sizeof(k1));
    key_of_size(MIXED, 10000, 4000, k2, sizeof(k2));
    corrupt(f, k1, 1000, 1000);
    corrupt(f, k2, 10000, 9999);
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "c.json"));
    const char *again[] = {"bench", "--dir",      f->dir,       "--keys",    "4000", "--requests",
                           "4000",  "--key-dist", "sequential", "--clients", "2",    "--value-size",
                           MIXED,   "--json",     jpath,        NULL};
    cp_clirun_expect(&run, again, 1);
    assert_non_null(strstr(run.out, "mismatches 2"));
    assert_non_null(strstr(run.err, k1));
    assert_non_null(strstr(run.err, k2));
    assert_non_null(strstr(run.err, "wrong size"));
    j = cp_json_load(jpath);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 2);
    json_decref(j);
    cp_clirun_free(&run);
}

static void test_twemproxy_range_sizes(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *spec = "50-3000";
    const char *load[] = {"load", "--dir", f->dir, "--keys", "2000", "--value-size", spec, NULL};
    cp_clirun_expect(&run, load, 0);
    assert_non_null(strstr(run.out, "the servers hold 2000 keys, as expected"));
    check_lengths(f, spec, 2000, NULL);
    char jpath[4096], hpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "t.json"));
    snprintf(hpath, sizeof(hpath), "%s", cp_clirun_path(&run, "t.hgrm"));
    const char *bench[] = {"bench",
                           "--dir",
                           f->dir,
                           "--keys",
                           "2000",
                           "--ratio",
                           "1:4",
                           "--requests",
                           "20000",
                           "--value-size",
                           spec,
                           "--key-dist",
                           "gaussian:1000,300",
                           "--clients",
                           "4",
                           "--pipeline",
                           "4",
                           "--json",
                           jpath,
                           "--hdr-file",
                           hpath,
                           NULL};
    cp_clirun_expect(&run, bench, 0);
    json_t *j = cp_json_load(jpath);
    assert_string_equal(json_string_value(json_object_get(j, "topology")), "twemproxy");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 0);
    assert_int_gt(json_integer_value(json_object_get(json_object_get(j, "verify"), "checked")),
                  12000);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "workload"), "key_dist")),
        "gaussian:1000,300");
    check_hgrm(hpath, j);
    json_decref(j);
    check_lengths(f, spec, 2000, NULL);

    /* through the proxy: a key's value one byte short, its header intact */
    char key[32];
    cp__value_sizes z;
    assert_int_equal(cp__value_sizes_parse(spec, &z, NULL, 0), 0);
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, 12, true), 0);
    size_t len = cp__value_len(&vf, "key:77", 6);
    cp__valuefmt_free(&vf);
    snprintf(key, sizeof(key), "key:77");
    corrupt(f, key, len, len - 1);
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "tc.json"));
    const char *again[] = {"bench",      "--dir",  f->dir,       "--keys",     "2000",
                           "--requests", "2000",   "--key-dist", "sequential", "--value-size",
                           spec,         "--json", jpath,        NULL};
    cp_clirun_expect(&run, again, 1);
    assert_non_null(strstr(run.err, "key:77"));
    assert_non_null(strstr(run.err, "wrong size"));
    j = cp_json_load(jpath);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 1);
    json_decref(j);
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cluster_mixed_sizes, setup_cluster, teardown),
        cmocka_unit_test_setup_teardown(test_twemproxy_range_sizes, setup_twemproxy, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
