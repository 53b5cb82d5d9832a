/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `load` and a verified `bench`, run as a user runs them (the command, --cluster SEEDS), through
 * clusters whose nodes are addressed three ways, with slots moving under the bench. The command
 * takes its masters and slot owners from the library's map (bench/nodes.c: cp_node_get,
 * cp_node_slots), so it reaches every cluster the library reaches:
 * - host_names: every master announces `localhost` (cluster-announce-hostname,
 *   cluster-preferred-endpoint-type hostname), seeded by "localhost:P": the map and each MOVED
 *   name the host, resolved from the hosts file.
 * - ipv6_only: every server bound to ::1 only (cp_up_opts.host), seeds "[::1]:P,...". Skipped,
 *   saying why, only when this machine cannot bind ::1.
 * - unknown_endpoints: cluster-preferred-endpoint-type unknown-endpoint, as behind NAT: CLUSTER
 *   SLOTS gives each node a nil host and MOVED an empty one, "the address you reached me on".
 *
 * Each: `load` (its key count checked through the library), then `bench --ratio 1:4` for 1 s;
 * once its measured GETs reach the servers, 32 slots move with their keys from master 0 to master
 * 1, then 32 from master 2 to master 0 (cp_topo_migrate_slots), while it runs: the run exits 0 with
 * every GET checked and none mismatched, missed, failed or unknown, redirects seen (the slots did
 * move under it), 3 masters, and the servers' CPU read with INFO CPU at the addresses of the map.
 * One 3-master cluster per test, stopped and checked by PID.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"
#include "fixture.h"
#include "util/clock.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#define KEYS "3000"
#define MOVE 32 /* slots per move */

static json_int_t int_at(json_t *j, const char *obj, const char *field) {
    json_t *o = obj != NULL ? json_object_get(j, obj) : j;
    json_t *v = json_object_get(o, field);
    if (!json_is_integer(v))
        fail_msg("bench JSON: %s%s%s is not an integer", obj ? obj : "", obj ? "." : "", field);
    return json_integer_value(v);
}

/* GETs the masters have run so far (INFO commandstats; `load` writes with MSET only). */
static long long masters_gets(cp_fixture *f) {
    long long sum = 0;
    for (int k = 0; cp_fixture_master(f, k) != SIZE_MAX; k++) {
        redisContext *c = cp_fixture_conn(f, cp_topo_proc(f->topo, cp_fixture_master(f, k))->port);
        assert_non_null(c);
        redisReply *r = redisCommand(c, "INFO commandstats");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        const char *at = strstr(r->str, "cmdstat_get:calls=");
        sum += at != NULL ? atoll(at + strlen("cmdstat_get:calls=")) : 0;
        freeReplyObject(r);
    }
    return sum;
}

static void load_and_bench_while_slots_move(cp_fixture *f, const char *seeds) {
    cp_clirun run;
    cp_clirun_init(&run);
    const char *load[] = {"load", "--cluster", seeds, "--keys", KEYS, NULL};
    cp_clirun_expect(&run, load, 0);
    assert_contains(run.out, "the servers hold " KEYS " keys, as expected");

    char json[4096];
    snprintf(json, sizeof(json), "%s", cp_clirun_path(&run, "bench.json"));
    const char *bench[] = {"bench", "--cluster", seeds, "--keys",     KEYS, "--ratio",
                           "1:4",   "--clients", "4",   "--pipeline", "8",  "--duration",
                           "1",     "--json",    json,  "-q",         NULL};
    pid_t pid = cp_clirun_start(&run, bench);
    /* No slot moves twice: slots bounced straight back and forth (tests/support/slotmover.c)
     * have been seen to end owned by no node's own account, in Redis 7.0.15, about once in a
     * few hundred moves; that is the orchestration's and the server's matter, not this test's. */
    uint64_t until = cp__now_ns() + 30000000000ull;
    while (masters_gets(f) < 1000) { /* past the warm-up's GET per lane: the measured run */
        if (cp__now_ns() > until)
            fail_msg("no GET reached the masters in 30 s");
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    char err[512];
    int moved_ok = cp_topo_migrate_slots(f->topo, cp_fixture_master(f, 0), cp_fixture_master(f, 1),
                                         MOVE, err, sizeof(err)) == 0 &&
                   cp_topo_migrate_slots(f->topo, cp_fixture_master(f, 2), cp_fixture_master(f, 0),
                                         MOVE, err, sizeof(err)) == 0;
    int still_running = waitpid(pid, NULL, WNOHANG) == 0;
    int rc = cp_clirun_finish(&run, pid, 60);
    if (!moved_ok)
        fail_msg("moving slots: %s", err);
    if (rc != 0)
        fail_msg("bench exited %d: %s%s", rc, run.out, run.err);
    if (!still_running)
        fail_msg("the bench had ended before the slots had moved");

    json_t *j = json_load_file(json, 0, NULL);
    if (j == NULL)
        fail_msg("bench wrote no JSON: %s%s", run.out, run.err);
    json_int_t gets = int_at(j, NULL, "gets"), moved = int_at(j, "redirects", "moved"),
               ask = int_at(j, "redirects", "ask");
    print_message("%s: %lld ops, %lld GETs verified, %lld MOVED + %lld ASK\n", seeds,
                  (long long)int_at(j, NULL, "ops"), (long long)gets, (long long)moved,
                  (long long)ask);
    assert_int_gt(gets, 0);
    assert_int_gt(int_at(j, NULL, "sets"), 0);
    assert_int_equal(int_at(j, "verify", "checked"), gets);
    assert_int_equal(int_at(j, "verify", "mismatches"), 0);
    assert_int_equal(int_at(j, NULL, "misses"), 0);
    assert_int_equal(int_at(j, NULL, "failed_ops"), 0);
    assert_int_equal(int_at(j, NULL, "unknown_ops"), 0);
    assert_int_gt(moved + ask, 0); /* the slots moved under the run */
    assert_int_equal(int_at(j, "workload", "masters"), 3);
    json_t *redis_cpu = json_object_get(json_object_get(j, "cpu_seconds"), "redis");
    assert_true(json_is_number(redis_cpu)); /* INFO CPU answered at every master's address */
    json_decref(j);
    cp_clirun_free(&run);
}

static void host_names(void **state) {
    cp_fixture *f = *state;
    cp_fixture_announce(f, "localhost");
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "localhost:%d",
             cp_topo_proc(f->topo, cp_fixture_master(f, 0))->port);
    load_and_bench_while_slots_move(f, seeds);
}

static void ipv6_only(void **state) {
    cp_fixture *f = *state;
    if (f == NULL) {
        skip();
        return;
    }
    assert_contains(f->endpoints, "[::1]:");
    load_and_bench_while_slots_move(f, f->endpoints);
}

static void unknown_endpoints(void **state) {
    cp_fixture *f = *state;
    cp_fixture_announce(f, NULL);
    load_and_bench_while_slots_move(f, f->endpoints);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(host_names, cp_fixture_setup_cluster3, cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(ipv6_only, cp_fixture_setup_cluster3_v6,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(unknown_endpoints, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
