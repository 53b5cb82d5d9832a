/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `bench --client-cache` against a real 3-master Redis Cluster (one ephemeral topology per test,
 * stopped and checked by PID in the teardown), through the binary as a user runs it: a
 * read-only zipf:0.99 run verifies every GET (the cache's hits included: checked == gets, no
 * mismatch) with a hit ratio above 0, every GET counted once by the library (hits + misses ==
 * gets), the split of the latencies matching the library's counters (as many hit latencies as
 * hits) and no invalidation; a 1:4 SET:GET mix still verifies every GET, and its writes
 * invalidate (invalidations > 0, entries dropped). Through the engine with per-key versions
 * (the scenarios' check), a read older than the last acknowledged SET can only be a hit: the
 * servers answer misses from the master. The engine refuses a cache for a proxy target and
 * under RESP2 before connecting. Requests are kept small: seconds per test, no timing asserted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "bench/engine.h"
#include "bench/target.h"
#include "clirun.h"
#include "fixture.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 2000
#define KEYS_ARG "2000"

static int setup(void **state) {
    return cp_fixture_setup_cluster3(state);
}

static int teardown(void **state) {
    return cp_fixture_teardown(state);
}

static void load_keys(cp_clirun *r, cp_fixture *f) {
    const char *args[] = {"load", "--dir", f->dir, "--keys", KEYS_ARG, NULL};
    cp_clirun_expect(r, args, 0);
    assert_non_null(strstr(r->out, "as expected"));
}

static long long num(const json_t *o, const char *a, const char *b) {
    const json_t *v = json_object_get(o, a);
    if (b != NULL)
        v = json_object_get(v, b);
    if (!json_is_integer(v))
        fail_msg("%s%s%s is not an integer", a, b ? "." : "", b ? b : "");
    return (long long)json_integer_value(v);
}

/* Runs bench --client-cache with ratio (SET:GET) on the fixture, expects exit 0, returns its
 * JSON report (caller json_decref()s) after the checks every cached run must pass. */
static json_t *cached_run(cp_clirun *r, cp_fixture *f, const char *ratio) {
    char json[4096];
    snprintf(json, sizeof(json), "%s", cp_clirun_path(r, "bench.json"));
    const char *args[] = {
        "bench",     "--dir",  f->dir,       "--keys", KEYS_ARG,         "--requests", "30000",
        "--clients", "4",      "--pipeline", "4",      "--key-dist",     "zipf:0.99",  "--ratio",
        ratio,       "--json", json,         "-q",     "--client-cache", NULL};
    cp_clirun_expect(r, args, 0);
    assert_non_null(strstr(r->out, "cache        hit ratio"));
    assert_non_null(strstr(r->out, "all ops, hits included"));
    json_error_t je;
    json_t *o = json_load_file(json, 0, &je);
    if (o == NULL)
        fail_msg("bench --json: %s", je.text);
    /* every request ended with a verified reply */
    assert_int_equal(num(o, "failed_ops", NULL), 0);
    assert_int_equal(num(o, "unknown_ops", NULL), 0);
    assert_int_equal(num(o, "verify", "mismatches"), 0);
    assert_int_equal(num(o, "misses", NULL), 0); /* every key was loaded */
    assert_int_equal(num(o, "verify", "checked"), num(o, "gets", NULL));
    assert_int_equal(num(o, "ops", NULL), 30000);
    assert_int_equal(num(o, "workload", "protocol"), 3);
    const json_t *wc = json_object_get(json_object_get(o, "workload"), "client_cache");
    assert_true(json_is_object(wc));
    assert_int_equal(num(wc, "max_entries", NULL), CP_DEFAULT_CACHE_ENTRIES);
    const json_t *c = json_object_get(o, "client_cache");
    assert_true(json_is_object(c));
    /* every GET is a cacheable read, counted once by the library */
    assert_int_equal(num(c, "hits", NULL) + num(c, "misses", NULL), num(o, "gets", NULL));
    /* cp_reply_cached agrees with the library's counters */
    assert_int_equal(num(c, "hit_reads", NULL), num(c, "hits", NULL));
    assert_int_equal(num(c, "miss_reads", NULL), num(c, "misses", NULL));
    assert_int_gt(num(c, "hits", NULL), 0);
    double ratio_v = json_number_value(json_object_get(c, "hit_ratio"));
    assert_double_gt(ratio_v, 0.0);
    assert_double_le(ratio_v, 1.0);
    /* a hit takes no round trip: its latency is below a miss's */
    const json_t *hl = json_object_get(c, "hit_latency_us"),
                 *ml = json_object_get(c, "miss_latency_us");
    assert_double_lt(json_number_value(json_object_get(hl, "p50")),
                     json_number_value(json_object_get(ml, "p50")));
    assert_int_gt(num(c, "entries", NULL), 0);
    assert_int_le(num(c, "entries", NULL), 4 * 3 * (long long)KEYS); /* 12 clients, one lane each */
    return o;
}

/* Reads only, zipf:0.99: hits, every one verified; nothing written, nothing invalidated. */
static void test_cache_read_only(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_keys(&run, f);
    json_t *o = cached_run(&run, f, "0:1");
    const json_t *c = json_object_get(o, "client_cache");
    assert_int_equal(num(o, "sets", NULL), 0);
    assert_int_equal(num(c, "invalidations", NULL), 0);
    assert_int_equal(num(c, "dropped", NULL), 0);
    /* the hot keys repeat: most GETs are hits */
    assert_double_gt(json_number_value(json_object_get(c, "hit_ratio")), 0.5);
    json_decref(o);
    cp_clirun_free(&run);
}

/* One SET in five: the writes invalidate the other clients' entries, every GET still verifies. */
static void test_cache_write_mix(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_keys(&run, f);
    json_t *o = cached_run(&run, f, "1:4");
    const json_t *c = json_object_get(o, "client_cache");
    assert_int_equal(num(o, "sets", NULL), 6000);
    assert_int_gt(num(c, "invalidations", NULL), 0);
    assert_int_gt(num(c, "dropped", NULL), 0);
    json_decref(o);
    cp_clirun_free(&run);
}

/* Per-key versions (what scenarios check): a GET older than the SET acknowledged for its key
 * before it was sent. A miss is read on the key's master, after that acknowledgement: only a
 * hit, served before the server's invalidation reached its client, can be one. */
static void versions_under(cp_fixture *f, int protocol) {
    cp_clirun run;
    cp_clirun_init(&run);
    load_keys(&run, f);
    cp_clirun_free(&run);
    cp__bench_target t;
    assert_int_equal(cp__bench_target_from_topo(&t, f->topo, NULL, NULL), 0);
    t.protocol = protocol;
    static const cp_cache_options cache; /* zeros: the library's defaults */
    _Atomic uint32_t *acked = calloc(KEYS, sizeof(*acked));
    assert_non_null(acked);
    for (size_t i = 0; i < KEYS; i++)
        atomic_init(&acked[i], 1); /* load writes version 1 */
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.keys = KEYS;
    cfg.requests = 30000;
    cfg.clients = 4;
    cfg.pipeline = 4;
    cfg.ratio_set = 1;
    cfg.ratio_get = 4;
    cfg.dist.kind = CP__DIST_ZIPF;
    cfg.dist.zipf_s = 0.99;
    cfg.acked_versions = acked;
    cfg.client_cache = &cache;
    cp__bench_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    char err[1024];
    if (cp__bench_run(&t, &cfg, r, err, sizeof(err)) != 0)
        fail_msg("bench: %s", err);
    assert_int_equal(r->failed_ops, 0);
    assert_int_equal(r->unknown_ops, 0);
    assert_int_equal(r->verify_mismatches, 0);
    assert_int_equal(r->verify_checked, r->gets);
    assert_true(r->cache.on);
    assert_int_gt(r->cache.stats.hits, 0);
    /* Only the cache may answer older than an acknowledged SET of another client (its
     * invalidation still on its way); a server never does. */
    assert_int_equal(r->stale_reads, r->stale_cached);
    print_message("versions, RESP%d: %llu GETs, %llu hits, %llu stale reads (all cached), "
                  "%llu invalidations\n",
                  protocol, (unsigned long long)r->gets, (unsigned long long)r->cache.stats.hits,
                  (unsigned long long)r->stale_reads,
                  (unsigned long long)r->cache.stats.invalidations);
    cp__bench_result_free(r);
    free(r);
    free(acked);
}

/* Under both protocols: RESP2's invalidations come on a tracking link per node, in no order
 * with the replies. */
static void test_cache_versions(void **state) {
    versions_under(*state, 3);
    versions_under(*state, 2);
}

/* The engine's own refusal, before anything connects: a proxy target. */
static void test_cache_refused(void **state) {
    (void)state;
    static const cp_cache_options cache; /* zeros: the library's defaults */
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.client_cache = &cache;
    cp__bench_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    char err[1024];
    cp__bench_target t;
    assert_int_equal(cp__bench_target_external(&t, CP__TARGET_PROXY, "127.0.0.1:1", NULL, NULL), 0);
    t.protocol = 3;
    assert_int_equal(cp__bench_run(&t, &cfg, r, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "twemproxy"));
    cp__bench_result_free(r);
    free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_refused),
        cmocka_unit_test_setup_teardown(test_cache_read_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_write_mix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_versions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
