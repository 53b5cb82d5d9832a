/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Lifecycle events and per-node stats (clusterpipe/event.h) against scripted fake nodes
 * (tests/support/fakeset.h), where each event's cause is deterministic: an event-loop client's
 * first map (connected, map changed with version 1 and every slot, the node added, ready, each
 * once), a connection the server closes (disconnected with CP_ECLOSED and its message, then
 * connected again, counted as a reconnect with the last error), a MOVED whose map moves one
 * slot (version 2, 1 slot, the new node added), and a node's bytes and counts for known
 * traffic. The same events through kill -9 and slot migration on a real cluster are in
 * tests/integration/test_events_real.c.
 */
#include <setjmp.h>
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
#include "fakenode.h"
#include "fakeset.h"

static evlog g_log;

static void got_reply(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    *(int *)data = r->outcome == CP_DONE ? 1 : -1;
}

/* An event-loop client hears of its first map: the seed connected, the map (every slot
 * changed owner, from none), its one node added, ready; nothing twice, nothing more after a
 * second command. */
static void first_map_events(void **state) {
    fakeset *f = *state;
    memset(&g_log, 0, sizeof(g_log));
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", f->port[0]);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    evlog_attach(c, &g_log);
    cp_loop *l = cp_loop_new();
    assert_non_null(l);
    assert_int_equal(cp_loop_attach(l, c), 0);
    for (int round = 0; round < 2; round++) {
        int done = 0;
        assert_int_equal(cp_async_command(c, got_reply, &done, "SET k1 v1"), 0);
        assert_int_equal(cp_loop_run(l), 0);
        assert_int_equal(done, 1);
    }
    cp_event_type want[] = {CP_EVENT_NODE_CONNECTED, CP_EVENT_MAP_CHANGED, CP_EVENT_NODE_ADDED,
                            CP_EVENT_READY};
    int nodes[] = {0, -1, 0, -1};
    evlog_assert_seq(&g_log, want, nodes, 4);
    assert_int_equal(g_log.e[0].ev.port, f->port[0]);
    assert_string_equal(g_log.e[0].ev.host, "127.0.0.1");
    assert_int_equal(g_log.e[0].ev.version, 0); /* connected before the first map */
    assert_int_equal(g_log.e[1].ev.version, 1);
    assert_int_equal(g_log.e[1].ev.slots, CP_SLOTS);
    assert_int_equal(g_log.e[2].ev.version, 1);
    assert_int_equal(g_log.e[3].ev.version, 1);
    for (int i = 1; i < 4; i++)
        assert_int_ge(g_log.e[i].ev.at_ns, g_log.e[i - 1].ev.at_ns);
    cp_free(c); /* tells nothing */
    assert_int_equal(g_log.n, 4);
    cp_loop_free(l);
}

/* The server closes the connection: disconnected with CP_ECLOSED and a message naming the node,
 * then connected again; the stats count one reconnect and keep the error. */
static void disconnect_says_why(void **state) {
    fakeset *f = *state;
    memset(&g_log, 0, sizeof(g_log));
    fakeset_rule(f->node[0], "GET", "k1", 0, 1, FAKE_CLOSE, NULL);
    fakeset_connect(f, 2000, 1000, 0);
    cp_node_stats st;
    assert_int_equal(cp_node_get_stats(f->c, 0, &st), 0);
    assert_int_equal(st.connects, 1); /* the map's, closed by cp_connect */
    assert_int_equal(st.reconnects, 0);
    assert_int_equal(st.last_err, 0);
    assert_string_equal(st.last_errstr, "");
    evlog_attach(f->c, &g_log);
    redisReply *r = cp_command(f->c, "GET k1"); /* closed on: a read, retried or unknown */
    cp_reply_free(r);
    r = cp_command(f->c, "SET k2 v2");
    assert_non_null(r);
    cp_reply_free(r);
    cp_event_type want[] = {CP_EVENT_NODE_CONNECTED, CP_EVENT_NODE_DISCONNECTED,
                            CP_EVENT_NODE_CONNECTED};
    int nodes[] = {0, 0, 0};
    evlog_assert_seq(&g_log, want, nodes, 3);
    assert_int_equal(g_log.e[1].ev.code, CP_ECLOSED);
    assert_contains(g_log.e[1].ev.text, "closed");
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port[0]);
    assert_contains(g_log.e[1].ev.text, addr);
    assert_int_equal(cp_node_get_stats(f->c, 0, &st), 0);
    assert_int_equal(st.connects, 3);
    assert_int_equal(st.reconnects, 1);
    assert_int_equal(st.last_err, CP_ECLOSED);
    assert_string_equal(st.last_errstr, g_log.e[1].ev.text);
    assert_int_equal(cp_node_get_stats(f->c, 3, &st), CP_EINVAL);
    assert_int_equal(cp_node_get_stats(f->c, -1, &st), CP_EINVAL);
}

/* A MOVED to a node the map did not name; the map read after it moves that one slot: version
 * 2, 1 slot, the node added; node 0 counts the MOVED. */
static void moved_changes_map(void **state) {
    fakeset *f = *state;
    memset(&g_log, 0, sizeof(g_log));
    fakeset_put(f, 1, "k5", "v5");
    char buf[128];
    fakeset_rule(f->node[0], "GET", "k5", 0, 1, FAKE_REPLY,
                 fakeset_redirect(buf, "MOVED", "k5", f->port[1]));
    fakeset_connect(f, 2000, 1000, 0);
    evlog_attach(f->c, &g_log);
    fakeset_shards_with_slot_of_on_node1(f, "k5");
    redisReply *r = cp_command(f->c, "GET k5");
    assert_non_null(r);
    assert_string_equal(r->str, "v5");
    cp_reply_free(r);
    /* The refresh the MOVED asked for is in-band: wait for its map (a generous deadline). */
    for (int i = 0; i < 500 && evlog_count(&g_log, CP_EVENT_MAP_CHANGED, -1) == 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        r = cp_command(f->c, "GET k5");
        assert_non_null(r);
        cp_reply_free(r);
    }
    /* Node 1 connects for the redirect, and the map may come before or after that. */
    assert_int_equal(evlog_count(&g_log, CP_EVENT_NODE_CONNECTED, 0), 1);
    assert_int_equal(evlog_count(&g_log, CP_EVENT_NODE_CONNECTED, 1), 1);
    assert_int_equal(evlog_count(&g_log, CP_EVENT_NODE_DISCONNECTED, -1), 0);
    assert_int_equal(evlog_count(&g_log, CP_EVENT_READY, -1), 0);
    int m = evlog_find(&g_log, 0, CP_EVENT_MAP_CHANGED, -1);
    assert_int_ge(m, 1);
    assert_int_equal(evlog_count(&g_log, CP_EVENT_MAP_CHANGED, -1), 1);
    assert_int_equal(g_log.e[m].ev.version, 2);
    assert_int_equal(g_log.e[m].ev.slots, 1);
    assert_int_lt(m + 1, g_log.n);
    assert_int_equal(g_log.e[m + 1].ev.type, CP_EVENT_NODE_ADDED);
    assert_int_equal(g_log.e[m + 1].ev.node, 1);
    assert_int_equal(g_log.e[m + 1].ev.version, 2);
    assert_int_equal(g_log.n, 4);
    cp_node_stats st;
    assert_int_equal(cp_node_get_stats(f->c, 0, &st), 0);
    assert_int_equal(st.moved, 1);
    assert_int_equal(st.ask, 0);
    assert_int_equal(cp_node_get_stats(f->c, 1, &st), 0);
    assert_int_equal(st.moved, 0);
}

/* N SETs to node 0: at least their formatted bytes out, "+OK\r\n" each in, nothing left queued
 * or in flight. */
static void stats_count_traffic(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 2000, 1000, 0);
    cp_node_stats before, after;
    assert_int_equal(cp_node_get_stats(f->c, 0, &before), 0);
    enum { N = 200 };
    size_t formatted = 0;
    for (int i = 0; i < N; i++) {
        char k[16], cmd[64];
        snprintf(k, sizeof(k), "key%d", i);
        assert_int_equal(cp_append(f->p, "SET %s value-%d", k, i), 0);
        /* *3 $3 SET $len key $len value */
        int vl = snprintf(cmd, sizeof(cmd), "value-%d", i);
        int kl = (int)strlen(k);
        formatted += (size_t)snprintf(cmd, sizeof(cmd), "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n",
                                      kl, k, vl) +
                     (size_t)vl + 2;
    }
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_equal(cp_node_get_stats(f->c, 0, &after), 0);
    assert_int_ge(after.bytes_out - before.bytes_out, formatted);
    assert_int_ge(after.bytes_in - before.bytes_in, (uint64_t)N * 5);
    assert_int_lt(after.bytes_out - before.bytes_out, formatted + 1024); /* + a handshake */
    assert_int_equal(after.queued, 0);
    assert_int_equal(after.in_flight, 0);
    assert_int_equal(after.connects, before.connects + 1);
    assert_int_equal(after.reconnects, 0);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fakeset_setup, fakeset_teardown)
    const struct CMUnitTest tests[] = {
        T(first_map_events),
        T(disconnect_says_why),
        T(moved_changes_map),
        T(stats_count_traffic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
