/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integration tests of cp_topo_up / cp_topo_down on real redis-server and nutcracker processes:
 * both topologies at two sizes, nothing left running (checked by PID), the state file read from
 * another handle, a busy fixed port, a server killed during up, a missing binary, a directory
 * that already holds a running topology. Every topology is ephemeral and stopped in the
 * teardown, even when an assertion failed. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "fixture.h"
#include "testutil.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"
#include "orch/ports.h"
#include "orch/proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Everything a test started outside a fixture, for the teardown to clean up by PID. */
typedef struct rec {
    size_t n;
    pid_t pids[64];
    unsigned long long starts[64];
    int kill_at;   /* SIGKILL the kill_at-th spawned process (1-based) from the hook; 0: none */
    char dir[512]; /* a directory to remove in the teardown */
    int listen_fd[2];
    int steal_port;  /* bind the first spawned process's port from the hook, then let the held
                        servers start (hold_servers) */
    int stolen;      /* the port taken, 0 when it could not be bound */
    char hold[512];  /* hold_servers' directory: its redis-server waits for <hold>/go */
    char moved[256]; /* the orchestration's first "lost its port" line */
    cp_fixture *fx;
} rec;

/* Lets the servers held by hold_servers start (they wait for this file). */
static void release_servers(const rec *r) {
    char go[600];
    snprintf(go, sizeof(go), "%s/go", r->hold);
    FILE *f = fopen(go, "w");
    if (f != NULL)
        fclose(f);
}

static void rec_spawn(void *ud, const cp_proc *p) {
    rec *r = ud;
    if (r->n < 64) {
        r->pids[r->n] = p->pid;
        r->starts[r->n] = p->start_time;
        r->n++;
    }
    if (r->kill_at > 0 && (int)r->n == r->kill_at)
        kill(p->pid, SIGKILL); /* simulate a crash right after start */
    if (r->steal_port && r->n == 1) {
        /* Another program grabs the port between the orchestration's check and redis's bind:
         * the server is held (hold_servers), so it cannot have bound it yet. Then it starts. */
        r->listen_fd[0] = cp_test_listen(p->port);
        if (r->listen_fd[0] >= 0)
            r->stolen = p->port;
        release_servers(r);
    }
}

static void rec_log(void *ud, const char *line) {
    rec *r = ud;
    if (r->moved[0] == '\0' && strstr(line, "lost its port") != NULL)
        snprintf(r->moved, sizeof(r->moved), "%s", line);
}

/* Makes r->hold a directory with a redis-server that waits until release_servers lets it start,
 * then runs the real one (found as the orchestration finds it); its path into bin. */
static void hold_servers(rec *r, char *bin, size_t len) {
    char real[4096], err[512];
    if (cp__find_binary(NULL, "redis-server", "redis-server", real, sizeof(real), err,
                        sizeof(err)) != 0)
        fail_msg("%s", err);
    char *d = cp_test_mkdtemp("hold");
    snprintf(r->hold, sizeof(r->hold), "%s", d);
    free(d);
    snprintf(bin, len, "%s/redis-server", r->hold);
    FILE *f = fopen(bin, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "# test_orch_up.c: held until the test lets it start\n"
            "while [ ! -e '%s/go' ]; do sleep 0.01; done\n"
            "exec '%s' \"$@\"\n",
            r->hold, real);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(bin, 0755), 0);
}

static size_t rec_alive(const rec *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += cp_orch_pid_alive(r->pids[i], r->starts[i]) ? 1 : 0;
    return n;
}

static int rec_setup(void **state) {
    signal(SIGPIPE, SIG_IGN);
    rec *r = calloc(1, sizeof(*r));
    r->listen_fd[0] = r->listen_fd[1] = -1;
    *state = r;
    return 0;
}

static int rec_teardown(void **state) {
    rec *r = *state;
    int rc = 0;
    for (size_t i = 0; i < r->n; i++)
        if (cp_orch_pid_alive(r->pids[i], r->starts[i])) {
            kill(r->pids[i], SIGKILL);
            rc = -1;
        }
    if (r->dir[0]) {
        cp_topo *t = NULL;
        char err[256];
        if (cp_topo_open(r->dir, &t, err, sizeof(err)) == 0) {
            cp_topo_down(t, 0, err, sizeof(err));
            cp_topo_free(t);
        }
        rmdir(r->dir);
    }
    for (int k = 0; k < 2; k++)
        if (r->listen_fd[k] >= 0)
            close(r->listen_fd[k]);
    if (r->hold[0]) {
        char path[600];
        snprintf(path, sizeof(path), "%s/go", r->hold);
        unlink(path);
        snprintf(path, sizeof(path), "%s/redis-server", r->hold);
        unlink(path);
        rmdir(r->hold);
    }
    if (cp_fixture_stop(r->fx) != 0)
        rc = -1;
    free(r);
    return rc;
}

static void set_dir(rec *r, const char *tag) {
    char *d = cp_test_mkdtemp(tag);
    snprintf(r->dir, sizeof(r->dir), "%s", d);
    free(d);
}

/* Counts comma-separated entries. */
static size_t count_endpoints(const char *eps) {
    size_t n = *eps ? 1 : 0;
    for (; *eps; eps++)
        n += *eps == ',';
    return n;
}

/* Starts a cluster through a fixture, checks its shape and health, a second handle from
 * state.json, then stops it and proves every PID is gone and the directory removed. */
static void cluster_up_down(rec *rc, int shards, int replicas) {
    cp_fixture *f = rc->fx = cp_fixture_cluster(shards, replicas);
    assert_non_null(f);
    size_t n = cp_topo_nprocs(f->topo);
    assert_int_equal(n, (size_t)(shards * (1 + replicas)));
    assert_int_equal(f->nspawned, n);
    assert_int_equal(count_endpoints(f->endpoints), (size_t)shards);
    char err[1024];
    assert_int_equal(cp_topo_check(f->topo, err, sizeof(err)), 0);
    for (size_t i = 0; i < n; i++) {
        const cp_proc *p = cp_topo_proc(f->topo, i);
        assert_true(cp_topo_alive(f->topo, i));
        assert_int_equal(strlen(p->id), 40);
        cp_proc_stats st;
        assert_int_equal(cp_topo_proc_stats(f->topo, i, &st), 0);
        assert_true(st.reachable);
        assert_int_gt(st.used_memory, 0);
        assert_int_equal(st.keys, 0);
        if (p->role == CP_ROLE_REPLICA) {
            assert_int_ge(p->master, 0);
            assert_int_lt((size_t)p->master, n);
            assert_int_equal(cp_topo_proc(f->topo, (size_t)p->master)->role, CP_ROLE_MASTER);
            assert_string_equal(st.reported_role, "slave");
        } else {
            assert_int_equal(p->role, CP_ROLE_MASTER);
            assert_string_equal(st.reported_role, "master");
        }
    }
    /* Data goes in and comes out through the cluster. */
    for (int k = 0; k < 20; k++) {
        redisReply *r = cp_fixture_command(f, "SET key:%d val:%d", k, k);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    /* Another process would see the same topology through state.json. */
    cp_topo *t2 = NULL;
    assert_int_equal(cp_topo_open(f->dir, &t2, err, sizeof(err)), 0);
    assert_int_equal(cp_topo_nprocs(t2), n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(cp_topo_proc(t2, i)->pid, cp_topo_proc(f->topo, i)->pid);
        assert_true(cp_topo_alive(t2, i));
    }
    char eps2[1024];
    assert_int_equal(cp_topo_endpoints(t2, eps2, sizeof(eps2)), 0);
    assert_string_equal(eps2, f->endpoints);
    char tiny[8];
    assert_int_equal(cp_topo_endpoints(t2, tiny, sizeof(tiny)), CP_EINVAL);
    /* Down through the second handle, as `clusterpipe down` would; twice is fine. */
    assert_int_equal(cp_topo_down(t2, 1, err, sizeof(err)), 0);
    assert_int_equal(cp_fixture_alive(f), 0);
    assert_int_equal(cp_topo_down(t2, 0, err, sizeof(err)), 0);
    cp_topo_free(t2);
    struct stat st;
    assert_int_not_equal(stat(f->dir, &st), 0);
    rc->fx = NULL;
    assert_int_equal(cp_fixture_stop(f), 0);
}

static void test_cluster_3_masters(void **state) {
    cluster_up_down(*state, 3, 0);
}

static void test_cluster_4_masters_1_replica(void **state) {
    cluster_up_down(*state, 4, 1);
}

static void test_busy_fixed_port(void **state) {
    rec *r = *state;
    set_dir(r, "busy");
    int base = cp_test_fixed_base(4, r->dir);
    assert_int_gt(base, 0);
    r->listen_fd[0] = cp_test_listen(base + 1);
    assert_int_ge(r->listen_fd[0], 0);
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.shards = 3;
    o.base_port = base;
    o.dir = r->dir;
    o.ephemeral = 1;
    o.quiet = 1;
    o.on_spawn = rec_spawn;
    o.hook_ud = r;
    cp_topo *t = NULL;
    char err[1024], want[32];
    assert_int_not_equal(cp_topo_up(&o, &t, err, sizeof(err)), 0);
    assert_null(t);
    snprintf(want, sizeof(want), "port %d", base + 1);
    assert_contains(err, want);
    assert_int_equal(r->n, 0); /* ports are checked before anything starts */

    /* The cluster bus port (port + 10000) counts too. The failed up gave its claims back: the
     * ports are claimed again. */
    close(r->listen_fd[0]);
    r->listen_fd[0] = -1;
    base = cp_test_fixed_base(4, r->dir);
    assert_int_gt(base, 0);
    o.base_port = base;
    r->listen_fd[1] = cp_test_listen(base + CP__BUS_OFFSET);
    assert_int_ge(r->listen_fd[1], 0);
    assert_int_not_equal(cp_topo_up(&o, &t, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "port %d", base + CP__BUS_OFFSET);
    assert_contains(err, want);
    assert_contains(err, "bus");
    assert_int_equal(rec_alive(r), 0);
}

/* A server killed right after it started: up fails naming it, with its log tail, and stops
 * everything already started. */
static void killed_during_up(rec *r, cp_topo_kind kind, int kill_at, const char *want_name) {
    set_dir(r, "killed");
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = kind;
    o.shards = 3;
    o.replicas = kind == CP_TOPO_CLUSTER ? 1 : 0;
    o.proxies = 2;
    o.dir = r->dir;
    o.ephemeral = 1;
    o.quiet = 1;
    o.on_spawn = rec_spawn;
    o.hook_ud = r;
    r->kill_at = kill_at;
    cp_topo *t = NULL;
    char err[4096];
    int rc = cp_topo_up(&o, &t, err, sizeof(err));
    assert_int_not_equal(rc, 0);
    assert_null(t);
    print_message("expected failure: %s\n", err);
    assert_int_ge(r->n, (size_t)kill_at);
    char want[64];
    /* The victim is named with its address. */
    cp_topo *dead = NULL;
    char e2[256];
    assert_int_equal(cp_topo_open(r->dir, &dead, e2, sizeof(e2)), 0);
    int port = 0;
    for (size_t i = 0; i < cp_topo_nprocs(dead); i++)
        if (cp_topo_proc(dead, i)->pid == r->pids[kill_at - 1])
            port = cp_topo_proc(dead, i)->port;
    cp_topo_free(dead);
    assert_int_gt(port, 0);
    snprintf(want, sizeof(want), "%s 127.0.0.1:%d", want_name, port);
    if (strstr(err, want) == NULL)
        fail_msg("error does not name %s: %s", want, err);
    assert_non_null(strstr(err, "signal 9"));
    assert_non_null(strstr(err, "last lines of"));
    assert_int_equal(rec_alive(r), 0);
}

static void test_cluster_node_killed_during_up(void **state) {
    killed_during_up(*state, CP_TOPO_CLUSTER, 2, "redis-server");
}

static void test_proxy_killed_during_up(void **state) {
    /* 3 shards first, then the proxies: the 5th spawn is the second nutcracker. */
    killed_during_up(*state, CP_TOPO_TWEMPROXY, 5, "nutcracker");
}

/* With automatic ports, a server that loses its port to another program is moved to a fresh
 * port and the topology still comes up. The race is provoked every time: the servers are held
 * before they start (hold_servers) while the spawn hook takes the first one's port. */
static void test_port_lost_is_replaced(void **state) {
    rec *r = *state;
    set_dir(r, "steal");
    r->steal_port = 1;
    char bin[600];
    hold_servers(r, bin, sizeof(bin));
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.shards = 2;
    o.dir = r->dir;
    o.ephemeral = 1;
    o.redis_server = bin;
    o.log = rec_log;
    o.on_spawn = rec_spawn;
    o.hook_ud = r;
    cp_topo *t = NULL;
    char err[2048];
    if (cp_topo_up(&o, &t, err, sizeof(err)) != 0)
        fail_msg("up: %s", err);
    print_message("port stolen: %d; %s\n", r->stolen, r->moved);
    assert_int_gt(r->stolen, 0);
    char want[96];
    snprintf(want, sizeof(want), ":%d (master) lost its port to another program", r->stolen);
    assert_contains(r->moved, want);
    /* the two servers, and the first again, its first start dead (it could not bind) */
    assert_int_equal(r->n, 3);
    assert_false(cp_orch_pid_alive(r->pids[0], r->starts[0]));
    int respawned = 0;
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        assert_true(cp_topo_alive(t, i));
        assert_int_not_equal(p->port, r->stolen);
        if (p->pid == r->pids[2]) { /* on the port the line names */
            snprintf(want, sizeof(want), "moving it to port %d", p->port);
            assert_contains(r->moved, want);
            respawned++;
        }
    }
    assert_int_equal(respawned, 1);
    assert_int_equal(cp_topo_check(t, err, sizeof(err)), 0);
    assert_int_equal(cp_topo_down(t, 0, err, sizeof(err)), 0);
    cp_topo_free(t);
    assert_int_equal(rec_alive(r), 0);
}

static void test_missing_binary(void **state) {
    rec *r = *state;
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.quiet = 1;
    o.redis_server = "/nonexistent/redis-server";
    cp_topo *t = NULL;
    char err[1024];
    assert_int_equal(cp_topo_up(&o, &t, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "apt-get install redis-server"));
    o.redis_server = NULL;
    o.kind = CP_TOPO_TWEMPROXY;
    o.nutcracker = "/nonexistent/nutcracker";
    assert_int_equal(cp_topo_up(&o, &t, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "apt-get install nutcracker"));
    assert_int_equal(r->n, 0);
}

static void test_bad_options(void **state) {
    (void)state;
    cp_up_opts o = CP_UP_OPTS_INIT;
    cp_topo *t = NULL;
    char err[256];
    o.shards = 0;
    assert_int_equal(cp_topo_up(&o, &t, err, sizeof(err)), CP_EINVAL);
    o.shards = 2;
    o.kind = CP_TOPO_TWEMPROXY;
    o.hash = "sha1";
    assert_int_equal(cp_topo_up(&o, &t, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "sha1"));
    assert_true(cp_orch_twemproxy_hash_valid("murmur"));
    assert_false(cp_orch_twemproxy_distribution_valid("consistent"));
}

/* A directory holding a running topology is refused; the running one is not disturbed. */
static void test_dir_in_use(void **state) {
    rec *r = *state;
    r->fx = cp_fixture_cluster(1, 0);
    assert_non_null(r->fx);
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.shards = 1;
    o.dir = r->fx->dir;
    o.quiet = 1;
    o.ephemeral = 1;
    o.on_spawn = rec_spawn;
    o.hook_ud = r;
    cp_topo *t = NULL;
    char err[1024];
    assert_int_equal(cp_topo_up(&o, &t, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "already holds a running topology"));
    assert_int_equal(r->n, 0);
    assert_int_equal(cp_fixture_alive(r->fx), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cluster_3_masters, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_cluster_4_masters_1_replica, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_busy_fixed_port, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_cluster_node_killed_during_up, rec_setup,
                                        rec_teardown),
        cmocka_unit_test_setup_teardown(test_proxy_killed_during_up, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_port_lost_is_replaced, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_missing_binary, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_dir_in_use, rec_setup, rec_teardown),
    };
    return cmocka_run_group_tests_name("orch_up", tests, NULL, NULL);
}
