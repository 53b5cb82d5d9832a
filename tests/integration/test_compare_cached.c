/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe compare --setups cluster,cluster-cached --key-dist zipf:0.99 --ratio 1:4
 * --protocol 3`, small: the plain cluster, then cluster-cached (the same 4-master cluster,
 * every case's clients with the client-side cache), nothing else. Checked from what is
 * deterministic, not from CPU or throughput comparisons a shared 2-core machine cannot make
 * reliably: only those two setups ran (their processes all gone afterwards), both speaking
 * RESP3, the reproducing commands (--ratio, --protocol 3 for the plain cluster and
 * --client-cache for cluster-cached), every run verified, the cached runs with a hit ratio
 * above 0 and invalidations from the mix's writes, the plain ones without a cache, and the
 * table's client-side cache rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"
#include "testutil.h"

#include "orch/orch.h"
#include "util/file.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const json_t *get(const json_t *o, const char *a, const char *b) {
    const json_t *v = json_object_get(o, a);
    return b ? json_object_get(v, b) : v;
}

static int has_command(const json_t *doc, const char *text) {
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(doc, "commands"), i, c) {
        if (strcmp(json_string_value(c), text) == 0)
            return 1;
    }
    return 0;
}

/* Kills and counts the document's processes still alive. */
static int alive_processes(const json_t *doc) {
    size_t i, k;
    const json_t *t, *p;
    int alive = 0;
    json_array_foreach(json_object_get(doc, "topologies"), i, t) {
        json_array_foreach(json_object_get(t, "processes"), k, p) {
            pid_t pp = (pid_t)json_integer_value(json_object_get(p, "pid"));
            if (cp_orch_pid_alive(
                    pp, (unsigned long long)json_integer_value(json_object_get(p, "start_time")))) {
                kill(pp, SIGKILL);
                alive++;
            }
        }
    }
    return alive;
}

static void compare_cluster_cached(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    cp_clirun run;
    cp_clirun_init(&run);
    char out[4096];
    snprintf(out, sizeof(out), "%s", cp_clirun_path(&run, "out"));
    const char *args[] = {"compare",
                          "--out",
                          out,
                          "--threads",
                          "2",
                          "--requests",
                          "10000",
                          "--keys",
                          "2000",
                          "--repeat",
                          "1",
                          "--key-dist",
                          "zipf:0.99",
                          "--ratio",
                          "1:4",
                          "--setups",
                          "cluster,cluster-cached",
                          "--protocol",
                          "3",
                          NULL};
    pid_t pid = cp_clirun_start(&run, args);
    int rc = cp_clirun_finish(&run, pid, 240);
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", out);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (doc == NULL)
        fail_msg("compare exited %d, no results.json: %s", rc, run.err);
    assert_int_equal(alive_processes(doc), 0);
    if (rc != 0)
        fail_msg("compare exited %d: %s", rc, run.err);
    assert_true(json_is_true(get(doc, "settings", "client_cache")));
    assert_int_equal(json_integer_value(get(doc, "settings", "protocol")), 3);
    assert_string_equal(json_string_value(get(doc, "settings", "ratio")), "1:4");
    const json_t *setups = get(doc, "settings", "setups");
    assert_int_equal(json_array_size(setups), 2);
    assert_string_equal(json_string_value(json_array_get(setups, 1)), "cluster-cached");

    /* two clusters, no twemproxy */
    const json_t *topos = json_object_get(doc, "topologies");
    assert_int_equal(json_array_size(topos), 2);
    assert_string_equal(json_string_value(get(json_array_get(topos, 0), "setup", NULL)), "cluster");
    assert_string_equal(json_string_value(get(json_array_get(topos, 1), "setup", NULL)),
                        "cluster-cached");
    assert_true(has_command(doc, "clusterpipe bench --dir DIR --threads 2 --clients 2 --pipeline "
                                 "10 --requests 10000 --keys 2000 --value-size 100 --key-dist "
                                 "zipf:0.99 --ratio 1:4 --client-cache"));
    assert_true(has_command(doc, "clusterpipe bench --dir DIR --threads 2 --clients 2 --pipeline "
                                 "10 --requests 10000 --keys 2000 --value-size 100 --key-dist "
                                 "zipf:0.99 --ratio 1:4 --protocol 3"));

    const json_t *runs = json_object_get(doc, "runs"), *r;
    assert_int_equal(json_array_size(runs), 4);
    size_t i;
    json_array_foreach(runs, i, r) {
        const char *setup = json_string_value(json_object_get(r, "setup"));
        assert_string_equal(setup, i < 2 ? "cluster" : "cluster-cached");
        assert_string_equal(json_string_value(json_object_get(r, "call_type")),
                            i % 2 == 0 ? "SET:GET 1:4" : "pipelined SET:GET 1:4");
        assert_int_equal(json_integer_value(json_object_get(r, "ops")), 10000);
        assert_int_equal(json_integer_value(json_object_get(r, "sets")), 2000);
        assert_int_equal(json_integer_value(json_object_get(r, "failed_ops")), 0);
        assert_int_equal(json_integer_value(get(r, "verify", "mismatches")), 0);
        assert_int_equal(json_integer_value(get(r, "verify", "checked")),
                         json_integer_value(json_object_get(r, "gets")));
        const json_t *c = json_object_get(r, "client_cache");
        /* --protocol 3: the two setups differ by the cache alone */
        assert_int_equal(json_integer_value(get(r, "workload", "protocol")), 3);
        if (i < 2) { /* the plain cluster: no cache */
            assert_null(c);
            assert_true(json_is_null(get(r, "workload", "client_cache")));
            continue;
        }
        assert_true(json_is_object(c));
        assert_double_gt(json_number_value(json_object_get(c, "hit_ratio")), 0.0);
        assert_int_gt(json_integer_value(json_object_get(c, "invalidations")), 0);
        assert_int_equal(json_integer_value(json_object_get(c, "hits")) +
                             json_integer_value(json_object_get(c, "misses")),
                         json_integer_value(json_object_get(r, "gets")));
    }
    json_decref(doc);

    snprintf(path, sizeof(path), "%s/table.md", out);
    char *table = cp__read_file(path, 1u << 20, NULL);
    assert_non_null(table);
    const char *ct = strstr(table, "Client-side cache (cluster-cached");
    assert_non_null(ct);
    assert_non_null(strstr(ct, "| hit ratio | invalidations |"));
    assert_non_null(strstr(ct, "| SET:GET 1:4           | cluster        |"));
    assert_non_null(strstr(ct, "| SET:GET 1:4           | cluster-cached |"));
    assert_non_null(strstr(ct, "| pipelined SET:GET 1:4 | cluster-cached |"));
    free(table);
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compare_cluster_cached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
