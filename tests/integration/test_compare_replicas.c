/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe compare --replica-reads`, small: after twemproxy and the cluster a third setup,
 * cluster-replicas (4 masters, a replica each), whose runs read from the replicas. Checked
 * from what is deterministic, not from CPU comparisons a shared 2-core machine cannot make
 * reliably: the setup and its processes with replica roles (all gone afterwards), the
 * reproducing commands, the replicas caught up before the read-back (every key found there),
 * read_from "replica", the replicas' CPU present (and above zero for plain GETs), the worker
 * connections on the replicas and none on the masters at the start gate, no miss, and the
 * table's and report's new rows. With --cluster/--proxy the flag is refused (exit 2).
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

static void compare_replica_reads(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    cp_clirun run;
    cp_clirun_init(&run);
    char out[4096];
    snprintf(out, sizeof(out), "%s", cp_clirun_path(&run, "out"));
    const char *args[] = {"compare",    "--out",           out,      "--threads", "2",
                          "--requests", "20000",           "--keys", "5000",      "--repeat",
                          "1",          "--replica-reads", NULL};
    pid_t pid = cp_clirun_start(&run, args);
    int rc = cp_clirun_finish(&run, pid, 240);
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", out);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (doc == NULL)
        fail_msg("compare exited %d, no results.json: %s", rc, run.err);
    /* every recorded process is gone, whatever else failed */
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
    assert_int_equal(alive, 0);
    if (rc != 0)
        fail_msg("compare exited %d: %s", rc, run.err);
    assert_true(json_is_true(get(doc, "settings", "replica_reads")));

    /* the third setup: 4 masters ("redis") and 4 replicas */
    const json_t *topos = json_object_get(doc, "topologies");
    assert_int_equal(json_array_size(topos), 3);
    const json_t *rt = json_array_get(topos, 2);
    assert_string_equal(json_string_value(json_object_get(rt, "setup")), "cluster-replicas");
    int roles[2] = {0, 0};
    json_array_foreach(json_object_get(rt, "processes"), k, p) {
        const char *role = json_string_value(json_object_get(p, "role"));
        roles[0] += strcmp(role, "redis") == 0;
        roles[1] += strcmp(role, "replica") == 0;
    }
    assert_int_equal(roles[0], 4);
    assert_int_equal(roles[1], 4);
    assert_true(has_command(doc, "clusterpipe up cluster --shards 4 --replicas 1 --dir DIR"));
    assert_true(has_command(doc, "clusterpipe bench --dir DIR --threads 2 --clients 2 --pipeline "
                                 "1 --requests 20000 --keys 5000 --value-size 100 --key-dist "
                                 "uniform --read-from replica"));

    /* its load: the replicas caught up, then every sampled key was read back from them */
    const json_t *l = json_array_get(json_object_get(doc, "load"), 2);
    assert_string_equal(json_string_value(json_object_get(l, "setup")), "cluster-replicas");
    assert_true(json_is_number(json_object_get(l, "replicas_synced_s")));
    assert_int_equal(json_integer_value(get(l, "readback", "ok")), 5000);

    const json_t *runs = json_object_get(doc, "runs"), *r;
    assert_int_equal(json_array_size(runs), 6);
    json_array_foreach(runs, i, r) {
        const char *setup = json_string_value(json_object_get(r, "setup"));
        const json_t *rep = get(r, "cpu_seconds", "replicas");
        if (i < 4) { /* twemproxy and the plain cluster: no replicas, masters read */
            assert_string_equal(json_string_value(get(r, "workload", "read_from")), "master");
            assert_true(json_is_null(rep));
            continue;
        }
        assert_string_equal(setup, "cluster-replicas");
        assert_string_equal(json_string_value(get(r, "workload", "read_from")), "replica");
        assert_int_equal(json_integer_value(json_object_get(r, "ops")), 20000);
        assert_int_equal(json_integer_value(json_object_get(r, "misses")), 0);
        assert_int_equal(json_integer_value(get(r, "verify", "mismatches")), 0);
        assert_true(json_is_number(rep));
        assert_double_le(json_number_value(rep), json_number_value(get(r, "cpu_seconds", "redis")));
        if (i == 4 && !(json_number_value(rep) > 0)) /* 20,000 GETs one by one: many ticks */
            fail_msg("cluster-replicas GET: cpu_seconds.replicas %.3f", json_number_value(rep));
        /* at the start gate the workers' connections are on the replicas, none on a master
         * (connected_clients counts the probe's own) */
        const json_t *s;
        int nrep = 0;
        json_array_foreach(json_object_get(r, "servers"), k, s) {
            const char *role = json_string_value(json_object_get(s, "role"));
            long long cc = json_integer_value(json_object_get(s, "connected_clients"));
            if (strcmp(role, "replica") == 0) {
                assert_int_ge(cc, 2);
                nrep++;
            } else
                assert_int_equal(cc, 1);
        }
        assert_int_equal(nrep, 4);
    }
    json_decref(doc);

    snprintf(path, sizeof(path), "%s/table.md", out);
    char *table = cp__read_file(path, 1u << 20, NULL);
    assert_non_null(table);
    assert_non_null(strstr(table, "| cluster-replicas | GET           |"));
    assert_non_null(strstr(table, "Reads on replicas (cluster-replicas"));
    assert_non_null(strstr(table, "masters us/op vs cluster"));
    assert_non_null(strstr(table, "| GET           | cluster-replicas |"));
    free(table);
    snprintf(path, sizeof(path), "%s/report.md", out);
    char *report = cp__read_file(path, 1u << 20, NULL);
    assert_non_null(report);
    assert_non_null(strstr(report, "## Reads on replicas"));
    free(report);
    cp_clirun_free(&run);
}

/* External endpoints: refused before anything starts. */
static void replica_reads_external_refused(void **state) {
    (void)state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"compare",     "--cluster",
                          "127.0.0.1:1", "--replica-reads",
                          "--out",       cp_clirun_path(&run, "x"),
                          NULL};
    cp_clirun_expect(&run, args, 2);
    assert_non_null(strstr(run.err, "--replica-reads"));
    assert_non_null(strstr(run.err, "--cluster/--proxy"));
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replica_reads_external_refused),
        cmocka_unit_test(compare_replica_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
