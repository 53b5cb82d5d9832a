/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for the plan of a topology (src/orch/plan.c) and the process records it fills
 * (cp__topo_add_proc in src/orch/topo.c): a plan that does not fit the process array fails with
 * CP_EINVAL instead of writing past it (twemproxy's stats ports were written through indexes of
 * proxies that were never recorded), the option check does not overflow on a huge replica count,
 * and plans that fit record every process with distinct ports. No server is started: ports are
 * only probed by binding them for a moment on 127.0.0.1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "asserts.h"

#include <limits.h>
#include <string.h>

#include "orch/cluster.h"
#include "orch/plan.h"
#include "orch/topo.h"
#include "orch/twemproxy.h"

static cp__role_table roles = {
    [CP_ROLE_MASTER] = &cp__cluster_master_ops,
    [CP_ROLE_REPLICA] = &cp__cluster_replica_ops,
    [CP_ROLE_SHARD] = &cp__twemproxy_shard_ops,
    [CP_ROLE_PROXY] = &cp__twemproxy_proxy_ops,
};

static cp_up_opts opts(cp_topo_kind kind, int shards, int replicas, int proxies) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = kind;
    o.shards = shards;
    o.replicas = replicas;
    o.proxies = proxies;
    return o;
}

/* Every recorded process is inside the array, and no port is handed out twice. */
static void assert_records_sane(const cp_topo *t) {
    assert_int_le(t->nprocs, CP__MAX_PROCS);
    assert_int_le(t->nprocs, t->cap);
    for (size_t i = 0; i < t->nprocs; i++) {
        assert_int_gt(t->procs[i].port, 0);
        for (size_t k = 0; k < i; k++) {
            assert_int_not_equal(t->procs[i].port, t->procs[k].port);
            if (t->procs[i].stats_port)
                assert_int_not_equal(t->procs[i].stats_port, t->procs[k].port);
        }
    }
}

/* A plan of more than CP__MAX_PROCS processes fails at the first record that does not fit. */
static void assert_plan_too_big(cp_topo_kind kind, int shards, int replicas, int proxies) {
    cp_topo *t = cp__topo_new(roles);
    assert_non_null(t);
    t->kind = kind;
    cp_up_opts o = opts(kind, shards, replicas, proxies);
    char err[256] = "";
    assert_int_equal(cp__plan_make(t, &o, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "too many processes"));
    assert_int_equal(t->nprocs, CP__MAX_PROCS);
    assert_records_sane(t);
    cp_topo_free(t);
}

/* 200 shards + 100 proxies: the 257th record fails, and so must the plan (it used to go on and
 * set stats ports of proxies 56..99 past the end of the array, then report success). */
static void test_twemproxy_plan_too_big(void **state) {
    (void)state;
    assert_plan_too_big(CP_TOPO_TWEMPROXY, 200, 0, 100);
}

/* The same for a cluster: 1 master x 300 replicas is refused, not cut to 256 processes. */
static void test_cluster_plan_too_big(void **state) {
    (void)state;
    assert_plan_too_big(CP_TOPO_CLUSTER, 1, 300, 0);
}

/* A full array refuses one more record and stays as it was. */
static void test_add_proc_full(void **state) {
    (void)state;
    cp_topo *t = cp__topo_new(roles);
    assert_non_null(t);
    char err[256] = "";
    size_t idx = 0;
    for (int i = 0; i < CP__MAX_PROCS; i++) {
        assert_int_equal(cp__topo_add_proc(t, CP_ROLE_SHARD, 20000 + i, -1, &idx, err, sizeof(err)),
                         0);
        assert_int_equal(idx, (size_t)i);
    }
    idx = 12345;
    assert_int_equal(cp__topo_add_proc(t, CP_ROLE_SHARD, 30000, -1, &idx, err, sizeof(err)),
                     CP_EINVAL);
    assert_int_equal(idx, 12345);
    assert_int_equal(t->nprocs, CP__MAX_PROCS);
    cp_topo_free(t);
}

/* shards * (1 + replicas) is computed without int overflow: INT_MAX replicas used to wrap the
 * total to a negative number that passed the limit. */
static void test_check_replica_overflow(void **state) {
    (void)state;
    char err[256] = "";
    cp_up_opts o = opts(CP_TOPO_CLUSTER, 2, INT_MAX, 0);
    assert_int_equal(cp__plan_check(&o, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "at most"));
    o = opts(CP_TOPO_CLUSTER, 128, 1, 0); /* exactly CP__MAX_PROCS */
    assert_int_equal(cp__plan_check(&o, err, sizeof(err)), 0);
    o = opts(CP_TOPO_TWEMPROXY, 1, 0, INT_MAX);
    assert_int_equal(cp__plan_check(&o, err, sizeof(err)), CP_EINVAL);
}

/* Plans that fit: every process recorded, proxies with stats ports, replicas with masters. */
static void test_plans_that_fit(void **state) {
    (void)state;
    char err[256] = "";
    cp_topo *t = cp__topo_new(roles);
    assert_non_null(t);
    t->kind = CP_TOPO_TWEMPROXY;
    cp_up_opts o = opts(CP_TOPO_TWEMPROXY, 3, 0, 2);
    assert_int_equal(cp__plan_make(t, &o, err, sizeof(err)), 0);
    assert_int_equal(t->nprocs, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(t->procs[i].role, i < 3 ? CP_ROLE_SHARD : CP_ROLE_PROXY);
        if (i >= 3) /* the proxies have a stats port, the shards none */
            assert_int_not_equal(t->procs[i].stats_port, 0);
        else
            assert_int_equal(t->procs[i].stats_port, 0);
    }
    assert_int_not_equal(t->procs[3].stats_port, t->procs[4].stats_port);
    assert_records_sane(t);
    cp_topo_free(t);

    t = cp__topo_new(roles);
    assert_non_null(t);
    o = opts(CP_TOPO_CLUSTER, 128, 1, 0);
    assert_int_equal(cp__plan_make(t, &o, err, sizeof(err)), 0);
    assert_int_equal(t->nprocs, CP__MAX_PROCS);
    for (size_t i = 0; i < t->nprocs; i++) {
        assert_int_equal(t->procs[i].role, i < 128 ? CP_ROLE_MASTER : CP_ROLE_REPLICA);
        assert_int_equal(t->procs[i].master, i < 128 ? -1 : (int)i - 128);
    }
    assert_records_sane(t);
    char eps[8];
    assert_int_equal(cp_topo_endpoints(t, eps, sizeof(eps)), CP_EINVAL); /* 128 masters */
    cp_topo_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twemproxy_plan_too_big),
        cmocka_unit_test(test_cluster_plan_too_big),
        cmocka_unit_test(test_add_proc_full),
        cmocka_unit_test(test_check_replica_overflow),
        cmocka_unit_test(test_plans_that_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
