/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integration tests of the cluster operations on real redis-server processes: slot migration
 * with every key and value intact, adding a master and a replica, rebalancing, manual failover,
 * kill and restart (with and without persistence). Each test owns an ephemeral cluster from the
 * fixture, stopped and checked by PID in the teardown even when an assertion failed.
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "fixture.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 3000

static char err[4096];

/* Writes keys k:0..n-1 with values that embed the key, through the cluster. */
static void write_keys(cp_fixture *f, int n) {
    for (int i = 0; i < n; i++) {
        redisReply *r = cp_fixture_command(f, "SET k:%d value-of-k:%d-%0100d", i, i, i);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STATUS)
            fail_msg("SET k:%d: %s", i, r->str ? r->str : "?");
        freeReplyObject(r);
    }
}

/* Reads every key back and compares it with what write_keys stored. */
static void check_keys(cp_fixture *f, int n) {
    char want[256];
    for (int i = 0; i < n; i++) {
        redisReply *r = cp_fixture_command(f, "GET k:%d", i);
        assert_non_null(r);
        snprintf(want, sizeof(want), "value-of-k:%d-%0100d", i, i);
        if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0)
            fail_msg("GET k:%d returned %s", i, r->str ? r->str : "nil");
        freeReplyObject(r);
    }
}

/* Sum of DBSIZE over the masters. */
static long long keys_on_masters(cp_fixture *f) {
    long long sum = 0;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        if (cp_topo_proc(f->topo, i)->role != CP_ROLE_MASTER)
            continue;
        cp_proc_stats st;
        assert_int_equal(cp_topo_proc_stats(f->topo, i, &st), 0);
        assert_int_ge(st.keys, 0);
        sum += st.keys;
    }
    return sum;
}

/* Slots owned by the node on `port`, per CLUSTER SLOTS as seen by node `via`. */
static int slots_of(cp_fixture *f, int via, int port) {
    redisContext *c = cp_fixture_conn(f, via);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    int n = 0;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i];
        if (e->elements >= 3 && e->element[2]->element[1]->integer == port)
            n += (int)(e->element[1]->integer - e->element[0]->integer + 1);
    }
    freeReplyObject(r);
    return n;
}

static int port_of(cp_fixture *f, size_t i) {
    return cp_topo_proc(f->topo, i)->port;
}

static void test_migrate_add_rebalance(void **state) {
    cp_fixture *f = *state;
    cp_topo *t = f->topo;
    write_keys(f, NKEYS);
    assert_int_equal(keys_on_masters(f), NKEYS);
    cp_proc_stats before;
    assert_int_equal(cp_topo_proc_stats(t, 0, &before), 0);

    /* 300 slots with their keys from master 0 to master 1. */
    assert_op(cp_topo_migrate_slots(t, 0, 1, 300, err, sizeof(err)));
    assert_op(cp_topo_check(t, err, sizeof(err)));
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(slots_of(f, port_of(f, i), port_of(f, 0)), 5461 - 300);
        assert_int_equal(slots_of(f, port_of(f, i), port_of(f, 1)), 5461 + 300);
    }
    cp_proc_stats after;
    assert_int_equal(cp_topo_proc_stats(t, 0, &after), 0);
    assert_int_lt(after.keys, before.keys);
    assert_int_equal(keys_on_masters(f), NKEYS);
    check_keys(f, NKEYS);

    /* An empty master joins, then rebalancing gives every master 4096 slots. */
    size_t m = 0;
    assert_op(cp_topo_add_node(t, -1, &m, err, sizeof(err)));
    assert_int_equal(m, 3);
    assert_int_equal(cp_topo_proc(t, m)->role, CP_ROLE_MASTER);
    assert_int_equal(slots_of(f, port_of(f, 0), port_of(f, m)), 0);
    assert_op(cp_topo_rebalance(t, err, sizeof(err)));
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(slots_of(f, port_of(f, 0), port_of(f, i)), 4096);
    assert_int_equal(keys_on_masters(f), NKEYS);
    check_keys(f, NKEYS);
    cp_proc_stats nm;
    assert_int_equal(cp_topo_proc_stats(t, m, &nm), 0);
    assert_int_gt(nm.keys, 0);

    /* A replica for the new master. */
    size_t r = 0;
    assert_op(cp_topo_add_node(t, (int)m, &r, err, sizeof(err)));
    assert_int_equal(cp_topo_proc(t, r)->role, CP_ROLE_REPLICA);
    assert_int_equal(cp_topo_proc(t, r)->master, (int)m);
    assert_op(cp_topo_check(t, err, sizeof(err)));
    cp_proc_stats rs;
    assert_int_equal(cp_topo_proc_stats(t, r, &rs), 0);
    assert_string_equal(rs.reported_role, "slave");
    assert_int_equal(rs.keys, nm.keys);
    /* Every process ever started, added ones included, is recorded for the teardown check. */
    assert_int_equal(f->nspawned, 5);
}

static void test_failover_kill_restart(void **state) {
    cp_fixture *f = *state;
    cp_topo *t = f->topo;
    write_keys(f, 300);
    /* procs: masters 0..2, replicas 3..5 (replica 3 follows master 0). */
    assert_int_equal(cp_topo_proc(t, 3)->master, 0);
    assert_op(cp_topo_failover(t, 3, err, sizeof(err)));
    assert_int_equal(cp_topo_proc(t, 3)->role, CP_ROLE_MASTER);
    assert_int_equal(cp_topo_proc(t, 0)->role, CP_ROLE_REPLICA);
    assert_int_equal(cp_topo_proc(t, 0)->master, 3);
    char eps[256], want[32];
    assert_int_equal(cp_topo_endpoints(t, eps, sizeof(eps)), 0);
    snprintf(want, sizeof(want), ":%d", port_of(f, 3));
    assert_non_null(strstr(eps, want));
    assert_op(cp_topo_check(t, err, sizeof(err)));
    check_keys(f, 300);
    /* The swap is in state.json for other processes. */
    cp_topo *t2 = NULL;
    assert_op(cp_topo_open(f->dir, &t2, err, sizeof(err)));
    assert_int_equal(cp_topo_proc(t2, 3)->role, CP_ROLE_MASTER);
    cp_topo_free(t2);

    /* A replica crashes and comes back with its data. */
    size_t rep = 4; /* replica of master 1 */
    pid_t old = cp_topo_proc(t, rep)->pid;
    assert_op(cp_topo_kill(t, rep, SIGKILL, err, sizeof(err)));
    assert_false(cp_topo_alive(t, rep));
    assert_int_not_equal(cp_topo_kill(t, rep, SIGKILL, err, sizeof(err)), 0);
    assert_op(cp_topo_restart(t, rep, err, sizeof(err)));
    assert_true(cp_topo_alive(t, rep));
    assert_int_not_equal(cp_topo_proc(t, rep)->pid, old);
    assert_op(cp_topo_check(t, err, sizeof(err)));
    assert_int_equal(cp_topo_proc(t, rep)->role, CP_ROLE_REPLICA);
    check_keys(f, 300);

    /* A master restarted in place (SIGTERM, start again) rejoins with its node id. */
    char id[48];
    snprintf(id, sizeof(id), "%s", cp_topo_proc(t, 2)->id);
    assert_op(cp_topo_restart(t, 2, err, sizeof(err)));
    assert_op(cp_topo_check(t, err, sizeof(err)));
    assert_string_equal(cp_topo_proc(t, 2)->id, id);
    assert_int_equal(f->nspawned, 8);
}

static int setup_persistent(void **state) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.shards = 1;
    o.persistence = 1;
    o.password = "s3cret pw";
    *state = cp_fixture_start(&o);
    return *state ? 0 : -1;
}

/* With --persistence (and a password), a master stopped with SIGTERM keeps its data. */
static void test_persistence_restart(void **state) {
    cp_fixture *f = *state;
    cp_topo *t = f->topo;
    assert_string_equal(cp_topo_password(t), "s3cret pw");
    write_keys(f, 200);
    assert_op(cp_topo_kill(t, 0, SIGTERM, err, sizeof(err)));
    assert_false(cp_topo_alive(t, 0));
    assert_op(cp_topo_restart(t, 0, err, sizeof(err)));
    assert_op(cp_topo_check(t, err, sizeof(err)));
    check_keys(f, 200);
    /* Wrong index / wrong kind are refused, not crashed on. */
    assert_int_equal(cp_topo_restart(t, 99, err, sizeof(err)), CP_EINVAL);
    assert_int_equal(cp_topo_failover(t, 0, err, sizeof(err)), CP_EINVAL);
    assert_int_equal(cp_topo_add_shard(t, NULL, err, sizeof(err)), CP_EINVAL);
    assert_int_equal(cp_topo_migrate_slots(t, 0, 0, 1, err, sizeof(err)), CP_EINVAL);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_add_rebalance, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_failover_kill_restart, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_persistence_restart, setup_persistent,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests_name("orch_ops", tests, NULL, NULL);
}
