/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integration tests of twemproxy topologies on real nutcracker and redis-server processes: up and
 * down at two sizes (keys spread over the shards through every proxy, the published defaults in
 * the config), a password, adding a shard and restarting the proxies. Every topology is
 * ephemeral and stopped and checked by PID in the teardown, even when an assertion failed.
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
#include <sys/stat.h>

static char err[4096];

static int teardown(void **state) {
    return cp_fixture_teardown(state);
}

/* Index of the k-th process with the given role, or -1. */
static int nth(const cp_topo *t, cp_proc_role role, int k) {
    for (size_t i = 0; i < cp_topo_nprocs(t); i++)
        if (cp_topo_proc(t, i)->role == role && k-- == 0)
            return (int)i;
    return -1;
}

/* Up, shape, config defaults, keys spread through every proxy, down leaves nothing. */
static void up_down(void **state, int shards, int proxies) {
    cp_fixture *f = cp_fixture_twemproxy(shards, proxies);
    *state = f;
    assert_non_null(f);
    const cp_topo *t = f->topo;
    assert_int_equal(cp_topo_get_kind(t), CP_TOPO_TWEMPROXY);
    assert_int_equal(cp_topo_nprocs(t), (size_t)(shards + proxies));
    assert_op(cp_topo_check(t, err, sizeof(err)));
    for (int p = 0; p < proxies; p++) {
        const cp_proc *pp = cp_topo_proc(t, (size_t)nth(t, CP_ROLE_PROXY, p));
        assert_int_gt(pp->stats_port, 0);
        assert_int_not_equal(pp->stats_port, pp->port);
        char tag[16];
        snprintf(tag, sizeof(tag), "p%d", p);
        cp_fixture_roundtrip(f, pp->port, 200, tag);
    }
    /* Keys spread over the shards (how evenly is fnv1a_64 + ketama's business); no probe key
     * is left behind. */
    long long total = 0;
    int used = 0;
    for (int s = 0; s < shards; s++) {
        cp_proc_stats st;
        assert_int_equal(cp_topo_proc_stats(t, (size_t)nth(t, CP_ROLE_SHARD, s), &st), 0);
        assert_int_ge(st.keys, 0);
        used += st.keys > 0;
        total += st.keys;
    }
    assert_int_ge(used, 2);
    assert_int_equal(total, 200 * proxies);
    /* The published experiment's settings are in every proxy's config. */
    char path[4200];
    const cp_proc *p0 = cp_topo_proc(t, (size_t)nth(t, CP_ROLE_PROXY, 0));
    snprintf(path, sizeof(path), "%s/nutcracker-%d/nutcracker.yml", f->dir, p0->port);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char yml[4096];
    size_t n = fread(yml, 1, sizeof(yml) - 1, fp);
    fclose(fp);
    yml[n] = '\0';
    const char *want[] = {"hash: fnv1a_64",          "distribution: ketama",
                          "auto_eject_hosts: false", "server_retry_timeout: 2000",
                          "server_failure_limit: 3", "server_connections: 1",
                          "listen: 127.0.0.1:"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(yml, want[i]) == NULL)
            fail_msg("nutcracker.yml lacks '%s':\n%s", want[i], yml);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", f->dir);
    *state = NULL;
    assert_int_equal(cp_fixture_stop(f), 0);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0);
}

static void test_twemproxy_3_shards_1_proxy(void **state) {
    up_down(state, 3, 1);
}

static void test_twemproxy_4_shards_2_proxies(void **state) {
    up_down(state, 4, 2);
}

/* With a password, a non-default hash, an added shard and restarted proxies. */
static void test_add_shard_restart_proxies(void **state) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_TWEMPROXY;
    o.shards = 2;
    o.proxies = 2;
    o.password = "tw pass'word";
    o.hash = "murmur";
    o.distribution = "modula";
    o.auto_eject = 1;
    cp_fixture *f = cp_fixture_start(&o);
    *state = f;
    assert_non_null(f);
    cp_topo *t = f->topo;
    int p0 = nth(t, CP_ROLE_PROXY, 0), p1 = nth(t, CP_ROLE_PROXY, 1);
    cp_fixture_roundtrip(f, cp_topo_proc(t, (size_t)p0)->port, 100, "a");
    /* Without AUTH the proxy refuses. */
    struct timeval tv = {2, 0};
    redisContext *raw = redisConnectWithTimeout("127.0.0.1", cp_topo_proc(t, (size_t)p0)->port, tv);
    assert_non_null(raw);
    redisReply *r = redisCommand(raw, "GET a:1");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    redisFree(raw);

    size_t s = 0;
    assert_op(cp_topo_add_shard(t, &s, err, sizeof(err)));
    assert_int_equal(cp_topo_proc(t, s)->role, CP_ROLE_SHARD);
    assert_true(cp_topo_alive(t, s));
    pid_t old0 = cp_topo_proc(t, (size_t)p0)->pid, old1 = cp_topo_proc(t, (size_t)p1)->pid;
    unsigned long long st0 = cp_topo_proc(t, (size_t)p0)->start_time;
    assert_op(cp_topo_restart_proxies(t, err, sizeof(err)));
    assert_int_not_equal(cp_topo_proc(t, (size_t)p0)->pid, old0);
    assert_int_not_equal(cp_topo_proc(t, (size_t)p1)->pid, old1);
    assert_false(cp_orch_pid_alive(old0, st0));
    assert_op(cp_topo_check(t, err, sizeof(err)));
    /* The restarted proxies use three shards: new keys reach the new one. */
    cp_fixture_roundtrip(f, cp_topo_proc(t, (size_t)p1)->port, 300, "b");
    cp_proc_stats ns;
    assert_int_equal(cp_topo_proc_stats(t, s, &ns), 0);
    assert_int_gt(ns.keys, 0);
    assert_int_equal(f->nspawned, 7); /* 2 shards + 2 proxies + 1 shard + 2 restarts */
    assert_int_equal(cp_topo_migrate_slots(t, 0, 1, 1, err, sizeof(err)), CP_EINVAL);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_twemproxy_3_shards_1_proxy, teardown),
        cmocka_unit_test_teardown(test_twemproxy_4_shards_2_proxies, teardown),
        cmocka_unit_test_teardown(test_add_shard_restart_proxies, teardown),
    };
    return cmocka_run_group_tests_name("orch_twemproxy", tests, NULL, NULL);
}
