/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Lifecycle events on a real cluster (clusterpipe/event.h): a master killed with kill -9 and
 * replaced by its replica (its connection's loss with the reason, the map changed with the
 * master's slots, the failover from it to the replica, the new master connected), and slots
 * migrated between two masters (the map changed, version one more, slots = the count moved);
 * each expected event exactly once and in order, nothing else in between but the first
 * connection to a node the refresh asked. Per-node stats against known traffic. The blocking
 * client does nothing between its calls, so each step waits for the cluster to settle first
 * (every live node agreeing on the failover) and the client's events follow from its calls.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "evlog.h"
#include "fixture.h"
#include "slotmover.h"
#include "testutil.h"
#include "util/clock.h"

static evlog g_log;

static size_t replica_of(cp_fixture *f, size_t m) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role == CP_ROLE_REPLICA && pr->master == (int)m)
            return i;
    }
    fail_msg("master %zu has no replica", m);
    return SIZE_MAX;
}

/* A key whose slot node n serves. */
static void key_of_node(cp_client *c, int n, char *key, size_t len) {
    int ranges[8][2];
    assert_int_gt(cp_node_slots(c, n, ranges, 8), 0);
    for (int i = 0; i < 1000000; i++) {
        snprintf(key, len, "ev:%d", i);
        int s = (int)cp_keyslot(key, strlen(key));
        if (s >= ranges[0][0] && s <= ranges[0][1])
            return;
    }
    fail_msg("no key for node %d", n);
}

/* 1 when the CLUSTER NODES of every live node says proc `promoted` is a master and `dead` has
 * failed (FAIL, not just PFAIL). */
static int cluster_agrees(cp_fixture *f, size_t promoted, size_t dead) {
    char want_up[32], want_dead[32];
    snprintf(want_up, sizeof(want_up), ":%d@", cp_topo_proc(f->topo, promoted)->port);
    snprintf(want_dead, sizeof(want_dead), ":%d@", cp_topo_proc(f->topo, dead)->port);
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (i == dead || (pr->role != CP_ROLE_MASTER && pr->role != CP_ROLE_REPLICA))
            continue;
        redisContext *ctx = cp_fixture_conn(f, pr->port);
        redisReply *r = ctx ? redisCommand(ctx, "CLUSTER NODES") : NULL;
        int ok = r != NULL && r->type == REDIS_REPLY_STRING;
        const char *up = ok ? strstr(r->str, want_up) : NULL;
        const char *dn = ok ? strstr(r->str, want_dead) : NULL;
        if (up != NULL) {
            const char *eol = strchr(up, '\n');
            const char *m = strstr(up, "master");
            ok = m != NULL && (eol == NULL || m < eol);
        } else {
            ok = 0;
        }
        if (ok && dn != NULL) {
            const char *eol = strchr(dn, '\n');
            const char *fl = strstr(dn, "fail");
            ok = fl != NULL && (eol == NULL || fl < eol) && fl[4] != '?';
        } else {
            ok = 0;
        }
        if (r != NULL)
            freeReplyObject(r);
        if (!ok)
            return 0;
    }
    return 1;
}

/* The log without the first CONNECTED of nodes other than a and b (the refresh may ask any
 * master for the map), each of which must come once and never be followed by a DISCONNECTED
 * of that node. */
static void without_other_connects(const evlog *in, evlog *out, int a, int b) {
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < in->n; i++) {
        const cp_event *ev = &in->e[i].ev;
        if (ev->node >= 0 && ev->node != a && ev->node != b) {
            assert_int_equal(ev->type, CP_EVENT_NODE_CONNECTED);
            assert_int_equal(evlog_count(in, CP_EVENT_NODE_CONNECTED, ev->node), 1);
            continue;
        }
        out->e[out->n++] = in->e[i];
    }
}

static void kill9_failover_events(void **state) {
    cp_fixture *f = *state;
    memset(&g_log, 0, sizeof(g_log));
    cp_options o = CP_OPTIONS_INIT;
    o.retry_budget_ms = 20000;
    cp_client *c = cp_fixture_client(f, &o);
    size_t m0 = cp_fixture_master(f, 0), r0 = replica_of(f, m0);
    int n0 = slot_node_of(c, f, m0), nr = slot_node_of(c, f, r0);
    cp_node_info info;
    assert_int_equal(cp_node_get(c, n0, &info), 0);
    int slots0 = info.nslots;
    assert_int_gt(slots0, 0);
    char key[32];
    key_of_node(c, n0, key, sizeof(key));
    evlog_attach(c, &g_log);
    redisReply *r = cp_command(c, "SET %s before", key);
    assert_non_null(r);
    cp_reply_free(r);
    cp_node_stats st0;
    assert_int_equal(cp_node_get_stats(c, n0, &st0), 0);
    char err[512];
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGKILL, err, sizeof(err)), 0);
    uint64_t end = cp__now_ns() + 30000000000ull;
    while (!cluster_agrees(f, r0, m0) && cp__now_ns() < end)
        cp__sleep_ms(100);
    assert_int_equal(cluster_agrees(f, r0, m0), 1);
    int ok = 0;
    for (int i = 0; i < 20 && !ok; i++) { /* the first SET may be lost with the connection */
        r = cp_command(c, "SET %s after", key);
        ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        cp_reply_free(r);
    }
    assert_int_equal(ok, 1);
    r = cp_command(c, "GET %s", key);
    assert_non_null(r);
    assert_string_equal(r->str, "after");
    cp_reply_free(r);
    assert_int_equal(cp_node_get(c, nr, &info), 0);
    assert_int_equal(info.role, CP_NODE_MASTER);
    assert_int_equal(cp_node_get(c, n0, &info), 0);
    int removed = info.role == CP_NODE_OTHER; /* whether the map still names the dead node */

    evlog mine;
    without_other_connects(&g_log, &mine, n0, nr);
    cp_event_type want[] = {CP_EVENT_NODE_CONNECTED, CP_EVENT_NODE_DISCONNECTED,
                            CP_EVENT_MAP_CHANGED,    CP_EVENT_NODE_REMOVED,
                            CP_EVENT_FAILOVER,       CP_EVENT_NODE_CONNECTED};
    int nodes[] = {n0, n0, -1, n0, nr, nr};
    if (!removed) {
        memmove(&want[3], &want[4], 2 * sizeof(want[0]));
        memmove(&nodes[3], &nodes[4], 2 * sizeof(nodes[0]));
    }
    int nwant = removed ? 6 : 5;
    char buf[8192];
    evlog_format(&g_log, buf, sizeof(buf));
    print_message("events:\n%s", buf);
    evlog_assert_seq(&mine, want, nodes, nwant);
    const cp_event *lost = &mine.e[1].ev, *map = &mine.e[2].ev, *fo = &mine.e[nwant - 2].ev;
    if (lost->code != CP_ECLOSED && lost->code != CP_EIO)
        fail_msg("disconnected with %s (%s)", cp_err_name(lost->code), lost->text);
    char addr[64];
    snprintf(addr, sizeof(addr), "%s:%d", lost->host, lost->port);
    assert_contains(lost->text, addr);
    assert_int_equal(map->version, 2); /* cp_connect applied the first */
    assert_int_equal(map->slots, slots0);
    assert_int_equal(fo->old_node, n0);
    assert_int_equal(fo->slots, slots0);
    assert_int_equal(fo->version, 2);
    cp_node_stats st;
    assert_int_equal(cp_node_get_stats(c, n0, &st), 0);
    assert_int_equal(st.connects, st0.connects); /* never ready again */
    assert_int_not_equal(st.last_err, 0);
    assert_int_equal(cp_node_get_stats(c, nr, &st), 0);
    assert_int_equal(st.connects, 1);
    assert_int_equal(st.reconnects, 0);
    cp_free(c);
}

static void on_ping(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    assert_int_equal(r->outcome, CP_DONE);
    *(int *)data = 1;
}

static void migration_events(void **state) {
    cp_fixture *f = *state;
    memset(&g_log, 0, sizeof(g_log));
    cp_client *c = cp_fixture_client(f, NULL);
    size_t m0 = cp_fixture_master(f, 0), m1 = cp_fixture_master(f, 1);
    int n0 = slot_node_of(c, f, m0), n1 = slot_node_of(c, f, m1);
    cp_node_info i0, i1;
    assert_int_equal(cp_node_get(c, n0, &i0), 0);
    assert_int_equal(cp_node_get(c, n1, &i1), 0);
    evlog_attach(c, &g_log);
    redisReply *r = cp_command_all(c, "PING"); /* every master connected: 3 CONNECTED */
    assert_non_null(r);
    cp_reply_free(r);
    assert_int_equal(g_log.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(g_log.e[i].ev.type, CP_EVENT_NODE_CONNECTED);
        assert_int_equal(evlog_count(&g_log, CP_EVENT_NODE_CONNECTED, g_log.e[i].ev.node), 1);
    }
    cp_node_stats before;
    assert_int_equal(cp_node_get_stats(c, n0, &before), 0);
    enum { MOVE = 100 };
    char err[512];
    if (cp_topo_migrate_slots(f->topo, m0, m1, MOVE, err, sizeof(err)) != 0)
        fail_msg("migrate: %s", err);
    assert_int_equal(cp_refresh(c), 0);
    assert_int_equal(g_log.n, 4);
    const cp_event *map = &g_log.e[3].ev;
    assert_int_equal(map->type, CP_EVENT_MAP_CHANGED);
    assert_int_equal(map->version, 2);
    assert_int_equal(map->slots, MOVE);
    cp_node_info a0, a1;
    assert_int_equal(cp_node_get(c, n0, &a0), 0);
    assert_int_equal(cp_node_get(c, n1, &a1), 0);
    assert_int_equal(i0.nslots - a0.nslots, MOVE);
    assert_int_equal(a1.nslots - i1.nslots, MOVE);
    /* The same map again changes nothing: no event, and the version stays. */
    assert_int_equal(cp_refresh(c), 0);
    assert_int_equal(g_log.n, 4);
    /* Known traffic on n0: 50 SETs of its keys. */
    char key[32];
    key_of_node(c, n0, key, sizeof(key));
    cp_pipeline *p = cp_pipeline_new(c);
    assert_non_null(p);
    size_t formatted = 0;
    for (int i = 0; i < 50; i++) {
        assert_int_equal(cp_append(p, "SET %s v%02d", key, i), 0);
        formatted += (size_t)snprintf(NULL, 0, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$3\r\nv%02d\r\n",
                                      strlen(key), key, i);
    }
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
    cp_node_stats after;
    assert_int_equal(cp_node_get_stats(c, n0, &after), 0);
    assert_int_ge(after.bytes_out - before.bytes_out, formatted);
    assert_int_ge(after.bytes_in - before.bytes_in, 50 * 5);
    assert_int_equal(after.queued, 0);
    assert_int_equal(after.in_flight, 0);
    assert_int_equal(after.moved, 0);
    assert_int_equal(after.reconnects, 0);
    assert_int_equal(g_log.n, 4);
    cp_free(c);
}

/* Endpoint mode (one redis-server, as for twemproxy): CONNECTED, then READY once, at the first
 * connection; a connection killed by the server (CLIENT KILL) gives DISCONNECTED with the
 * reason and, on the next command, CONNECTED again, never a second READY; the node's stats count
 * the reconnect. */
static void endpoint_ready_once(void **state) {
    cp_fixture *f = *state;
    memset(&g_log, 0, sizeof(g_log));
    char ep[64];
    int port = cp_topo_proc(f->topo, cp_fixture_master(f, 0))->port;
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", port);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    o.retry_budget_ms = 5000;
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    assert_int_equal(c->err, 0);
    evlog_attach(c, &g_log);
    cp_loop *l = cp_loop_new();
    assert_int_equal(cp_loop_attach(l, c), 0);
    for (int round = 0; round < 2; round++) {
        int done = 0;
        assert_int_equal(cp_async_command(c, on_ping, &done, "PING"), 0);
        while (!done)
            assert_int_ge(cp_loop_run_once(l, 100), 0);
        if (round == 0) { /* the server drops every normal client but its own checker's */
            redisReply *r = cp_fixture_command(f, "CLIENT KILL TYPE normal SKIPME yes");
            assert_non_null(r);
            assert_int_ge(r->integer, 1);
            freeReplyObject(r);
            uint64_t until = cp__now_ns() + 5000000000ull; /* the close is read by the loop */
            while (evlog_count(&g_log, CP_EVENT_NODE_DISCONNECTED, 0) == 0) {
                assert_int_lt(cp__now_ns(), until);
                assert_int_ge(cp_loop_run_once(l, 100), 0);
            }
        }
    }
    static const cp_event_type want[] = {CP_EVENT_NODE_CONNECTED, CP_EVENT_READY,
                                         CP_EVENT_NODE_DISCONNECTED, CP_EVENT_NODE_CONNECTED};
    static const int nodes[] = {0, 0, 0, 0};
    evlog_assert_seq(&g_log, want, nodes, 4);
    cp_node_stats st;
    assert_int_equal(cp_node_get_stats(c, 0, &st), 0);
    assert_int_equal(st.connects, 2);
    assert_int_equal(st.reconnects, 1);
    cp_free(c);
    cp_loop_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(kill9_failover_events, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(migration_events, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(endpoint_ready_once, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
