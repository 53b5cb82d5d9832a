/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Pipeline semantics against scripted fake nodes (tests/support/fakenode.h), where every fault
 * is deterministic: MOVED and ASK mid-batch, a wrong caller-given slot, TRYAGAIN then success,
 * CLUSTERDOWN outlasting the budget, a connection closed after k of n replies, a partial reply then
 * close, a stalled node, a malformed reply, a slot moving to a node not yet known, all seeds down,
 * AUTH, splitting and client-side CROSSSLOT refusal. The same behaviours are proven on a real
 * cluster in tests/integration/test_pipeline_real.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fakenode.h"
#include "fakeset.h"
#include "testutil.h"

/* Longer than the spacing between refreshes (REFRESH_SPACING_NS, 50 ms). */
static void past_refresh_spacing(void) {
    struct timespec ts = {0, 80 * 1000000L};
    nanosleep(&ts, NULL);
}

static void moved_mid_batch(void **state) {
    fakeset *f = *state;
    for (int i = 0; i < 10; i++) {
        char k[8], v[8];
        sprintf(k, "k%d", i);
        sprintf(v, "v%d", i);
        fakeset_put(f, i == 5 ? 1 : 0, k, v);
    }
    char buf[128];
    fakeset_rule(f->node[0], "GET", "k5", 0, 1, FAKE_REPLY,
                 fakeset_redirect(buf, "MOVED", "k5", f->port[1]));
    fakeset_connect(f, 2000, 1000, 0);
    size_t shards_before = fake_node_count(f->node[0], "CLUSTER");
    fakeset_shards_with_slot_of_on_node1(f, "k5");
    fakeset_append_gets(f->p, 10);
    assert_int_equal(cp_exec(f->p), 0);
    for (int i = 0; i < 10; i++) {
        char v[8];
        sprintf(v, "v%d", i);
        fakeset_assert_str(f->p, (size_t)i, v);
    }
    cp_stats st;
    cp_get_stats(f->c, &st);
    assert_int_equal(st.moved, 1);
    /* The slot was patched at once, and the map is re-read in-band, once: never a refresh per
     * MOVED, never one that the batch waits for. */
    assert_int_le(fake_node_count(f->node[0], "CLUSTER"), shards_before + 1);
    past_refresh_spacing();
    cp_pipeline_reset(f->p);
    fakeset_append_gets(f->p, 10);
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_equal(fake_node_count(f->node[0], "CLUSTER"), shards_before + 1);
    assert_int_equal(fake_node_count(f->node[1], "GET"), 2);
    cp_get_stats(f->c, &st);
    assert_int_equal(st.moved, 1); /* the second batch went straight to node 1 */
}

/* MOVEDs and retry rounds in one batch ask for one refresh, not one per redirect or round. */
static void moved_with_retries_refreshes_once(void **state) {
    fakeset *f = *state;
    char buf[128];
    fakeset_rule(f->node[0], "GET", "k1", 0, 1, FAKE_REPLY,
                 fakeset_redirect(buf, "MOVED", "k1", f->port[1]));
    fakeset_rule(f->node[0], "GET", "k2", 0, 3, FAKE_REPLY, "-TRYAGAIN Multiple keys request\r\n");
    fakeset_connect(f, 2000, 2000, 0);
    size_t before = fake_node_count(f->node[0], "CLUSTER");
    fakeset_append_gets(f->p, 4);
    assert_int_equal(cp_exec(f->p), 0);
    past_refresh_spacing();
    cp_pipeline_reset(f->p);
    fakeset_append_gets(f->p, 4);
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_equal(fake_node_count(f->node[0], "CLUSTER"), before + 1);
}

static void ask_mid_batch(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 0, "k1", "v1");
    fakeset_put(f, 2, "k3", "moving");
    char buf[128];
    fakeset_rule(f->node[0], "GET", "k3", 0, 1, FAKE_REPLY,
                 fakeset_redirect(buf, "ASK", "k3", f->port[2]));
    fakeset_connect(f, 2000, 1000, 0);
    fakeset_append_gets(f->p, 5);
    assert_int_equal(cp_exec(f->p), 0);
    fakeset_assert_str(f->p, 1, "v1");
    fakeset_assert_str(f->p, 3, "moving");
    assert_int_equal(cp_reply(f->p, 0)->type, REDIS_REPLY_NIL);
    assert_int_equal(fake_node_log_follows(f->node[2], "ASKING", "GET k3"), 1);
    cp_stats st;
    cp_get_stats(f->c, &st);
    assert_int_equal(st.ask, 1);
    /* ASK leaves the map alone: the next GET k3 goes to node 0 again. */
    cp_pipeline_reset(f->p);
    fakeset_append_gets(f->p, 5);
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_ge(fake_node_log_find(f->node[0], 0, "GET k3"), 0);
    assert_int_equal(fake_node_count(f->node[2], "GET"), 1);
}

/* A caller's slot (cp_append_argv_slot) is trusted: a wrong one sends the command to that
 * slot's node, whose MOVED is followed, and from then on the command goes by the slot the server
 * named: the TRYAGAIN that follows is retried on the right node, not on the hinted one. */
static void wrong_slot_hint_follows_moved(void **state) {
    fakeset *f = *state;
    unsigned s1 = cp_keyslot("k1", 2), hint = (s1 + 1) % CP_SLOTS;
    int start[3] = {0, (int)hint, (int)hint + 1}, end[3] = {(int)hint - 1, (int)hint, 16383};
    int ports[3] = {f->port[0], f->port[1], f->port[0]};
    char shards[2048], buf[128];
    assert_int_gt(hint, 0);
    assert_int_lt(hint, 16383); /* k1's slot is 12706: three non-empty ranges */
    assert_int_gt(fake_cluster_shards(shards, sizeof(shards), 3, start, end, ports), 0);
    for (int i = 0; i < FAKESET_N; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", shards);
    fakeset_put(f, 0, "k1", "v1");
    fakeset_rule(f->node[1], "GET", "k1", 0, 1, FAKE_REPLY,
                 fakeset_redirect(buf, "MOVED", "k1", f->port[0]));
    /* node 0 first gets the right-slot GET (sent directly), then the redirected one */
    fakeset_rule(f->node[0], "GET", "k1", 1, 1, FAKE_REPLY, "-TRYAGAIN Multiple keys request\r\n");
    fakeset_connect(f, 2000, 2000, 0);
    const char *argv[2] = {"GET", "k1"};
    size_t lens[2] = {3, 2};
    assert_int_equal(cp_append_argv_slot(f->p, 2, argv, lens, hint), 0);
    assert_int_equal(cp_append_argv_slot(f->p, 2, argv, lens, s1), 0); /* the right slot */
    assert_int_equal(cp_exec(f->p), 0);
    fakeset_assert_str(f->p, 0, "v1");
    fakeset_assert_str(f->p, 1, "v1");
    cp_stats st;
    cp_get_stats(f->c, &st);
    assert_int_equal(st.moved, 1);
    assert_int_equal(st.tryagain, 1);
    assert_int_equal(fake_node_count(f->node[1], "GET"), 1); /* only the hinted first try */
    assert_int_equal(fake_node_count(f->node[0], "GET"), 3); /* right one, TRYAGAIN, retry */
}

static void tryagain_then_success(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 0, "k2", "v2");
    fakeset_rule(f->node[0], "GET", "k2", 0, 2, FAKE_REPLY, "-TRYAGAIN Multiple keys request\r\n");
    fakeset_connect(f, 2000, 2000, 0);
    fakeset_append_gets(f->p, 4);
    assert_int_equal(cp_exec(f->p), 0);
    fakeset_assert_str(f->p, 2, "v2");
    cp_stats st;
    cp_get_stats(f->c, &st);
    assert_int_equal(st.tryagain, 2);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void clusterdown_outlasts_budget(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 0, "k0", "v0");
    fakeset_rule(f->node[0], "GET", "k1", 0, -1, FAKE_REPLY,
                 "-CLUSTERDOWN The cluster is down\r\n");
    fakeset_connect(f, 2000, 300, 0);
    fakeset_append_gets(f->p, 3);
    double t0 = now_s();
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    double took = now_s() - t0;
    fakeset_assert_str(f->p, 0, "v0");
    assert_int_equal(cp_get_outcome(f->p, 1), CP_NOT_EXECUTED);
    assert_non_null(cp_reply(f->p, 1));
    assert_non_null(strstr(cp_reply(f->p, 1)->str, "CLUSTERDOWN"));
    assert_int_equal(cp_get_outcome(f->p, 2), CP_DONE);
    /* It retried (more than once) and then gave up at the budget rather than hanging. */
    assert_int_ge(fake_node_count(f->node[0], "GET"), 4);
    assert_double_lt(took, 5.0);
    assert_non_null(strstr(cp_pipeline_errstr(f->p), "CLUSTERDOWN"));
    /* a reset pipeline has no error, and no message left from the last one */
    cp_pipeline_reset(f->p);
    assert_int_equal(cp_pipeline_err(f->p), 0);
    assert_string_equal(cp_pipeline_errstr(f->p), "");
}

/* The node closes the connection on the 4th command: three answers arrive; the commands written
 * after them have an unknown outcome, except those safe to re-send, which are re-sent. */
static void closed_after_k_of_n(void **state) {
    fakeset *f = *state;
    fakeset_rule(f->node[0], "INCR", NULL, 3, 1, FAKE_CLOSE, NULL);
    fakeset_connect(f, 2000, 1000, 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(cp_append(f->p, "INCR c%d", i), 0);
    assert_int_equal(cp_append(f->p, "GET c0"), 0);
    assert_int_equal(cp_append(f->p, "INCR c9"), 0);
    assert_int_equal(cp_set_flags(f->p, 7, CP_CMD_IDEMPOTENT), 0);
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cp_get_outcome(f->p, (size_t)i), CP_DONE);
        assert_int_equal(cp_reply(f->p, (size_t)i)->integer, 1);
    }
    for (int i = 3; i < 6; i++) {
        assert_int_equal(cp_get_outcome(f->p, (size_t)i), CP_UNKNOWN);
        assert_null(cp_reply(f->p, (size_t)i));
    }
    /* Read-only GET and the INCR flagged idempotent were re-sent on a new connection. */
    fakeset_assert_str(f->p, 6, "1");
    assert_int_equal(cp_get_outcome(f->p, 7), CP_DONE);
    assert_int_ge(fake_node_connections(f->node[0]), 2);
    cp_stats st;
    cp_get_stats(f->c, &st);
    assert_int_equal(st.io_retries, 2);
}

static void partial_reply_then_close(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 0, "k0", "v0");
    fakeset_rule(f->node[0], "INCR", "n", 0, 1, FAKE_PARTIAL_CLOSE, ":4");
    fakeset_connect(f, 2000, 1000, 0);
    assert_int_equal(cp_append(f->p, "GET k0"), 0);
    assert_int_equal(cp_append(f->p, "INCR n"), 0);
    assert_int_equal(cp_append(f->p, "SET x y"), 0);
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    fakeset_assert_str(f->p, 0, "v0");
    assert_int_equal(cp_get_outcome(f->p, 1), CP_UNKNOWN);
    assert_int_equal(cp_get_outcome(f->p, 2), CP_UNKNOWN);
    assert_non_null(strstr(cp_pipeline_errstr(f->p), "closed"));
}

static void stalled_node_times_out(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 0, "k0", "v0");
    fakeset_put(f, 0, "k2", "v2");
    fakeset_rule(f->node[0], "GET", "k1", 0, -1, FAKE_STALL, NULL);
    fakeset_connect(f, 300, CP_RETRY_NONE, 0);
    fakeset_append_gets(f->p, 3);
    double t0 = now_s();
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    assert_double_lt(now_s() - t0, 5.0);
    fakeset_assert_str(f->p, 0, "v0");
    /* Written, never answered, no budget to retry: unknown, for it and the one behind it. */
    assert_int_equal(cp_get_outcome(f->p, 1), CP_UNKNOWN);
    assert_int_equal(cp_get_outcome(f->p, 2), CP_UNKNOWN);
    assert_int_equal(cp_pipeline_err(f->p), CP_ETIMEDOUT);
}

/* A unit whose EXEC is never answered (a server whose writes are paused answers MULTI and the
 * members, and holds EXEC): the I/O timeout ends the whole unit unknown, the MULTI answered
 * before it too, and cp_exec returns. The alarm fails the test should it hang instead. */
static void unit_stalled_at_exec_ends_unknown(void **state) {
    fakeset *f = *state;
    fakeset_rule(f->node[0], "MULTI", NULL, 0, -1, FAKE_REPLY, "+OK\r\n");
    fakeset_rule(f->node[0], "INCR", NULL, 0, -1, FAKE_REPLY, "+QUEUED\r\n");
    fakeset_rule(f->node[0], "EXEC", NULL, 0, -1, FAKE_STALL, NULL);
    fakeset_connect(f, 300, CP_RETRY_NONE, 0);
    assert_int_equal(cp_append(f->p, "MULTI"), 0);
    assert_int_equal(cp_append(f->p, "INCR {t}a"), 0);
    assert_int_equal(cp_append(f->p, "INCR {t}b"), 0);
    assert_int_equal(cp_append(f->p, "EXEC"), 0);
    alarm(10);
    double t0 = now_s();
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    alarm(0);
    assert_double_lt(now_s() - t0, 5.0);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(cp_get_outcome(f->p, i), CP_UNKNOWN);
    assert_int_equal(cp_pipeline_err(f->p), CP_ETIMEDOUT);
}

/* Garbage from one node: that connection fails cleanly; replies from the other node and those
 * before the garbage are intact. */
static void malformed_reply(void **state) {
    fakeset *f = *state;
    char buf[2048];
    int start[2] = {0, 8192}, end[2] = {8191, 16383}, ports[2] = {f->port[0], f->port[1]};
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 2, start, end, ports), 0);
    fake_node_set_cluster_reply(f->node[0], "SHARDS", buf);
    /* Keys: "foo" -> 12182 (node 1), "bar" -> 5061 (node 0). */
    fakeset_put(f, 1, "foo", "F");
    fakeset_put(f, 0, "bar", "B");
    fakeset_rule(f->node[0], "INCR", NULL, 0, 1, FAKE_GARBAGE, "%%%garbage\r\n");
    fakeset_connect(f, 2000, 200, 0);
    assert_int_equal(cp_append(f->p, "GET bar"), 0);
    assert_int_equal(cp_append(f->p, "GET foo"), 0);
    assert_int_equal(cp_append(f->p, "INCR n1"), 0); /* slot 3671: node 0 */
    assert_int_equal(cp_append(f->p, "GET foo"), 0);
    assert_int_lt(cp_keyslot("n1", 2), 8192);
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    fakeset_assert_str(f->p, 0, "B");
    fakeset_assert_str(f->p, 1, "F");
    assert_int_equal(cp_get_outcome(f->p, 2), CP_UNKNOWN);
    fakeset_assert_str(f->p, 3, "F");
    assert_int_equal(cp_pipeline_err(f->p), CP_EPROTO);
}

static void slot_moves_to_unknown_node(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 2, "k1", "on-node-2");
    char buf[128];
    fakeset_rule(f->node[0], "GET", "k1", 0, -1, FAKE_REPLY,
                 fakeset_redirect(buf, "MOVED", "k1", f->port[2]));
    fakeset_connect(f, 2000, 1000, 0);
    fakeset_append_gets(f->p, 3);
    assert_int_equal(cp_exec(f->p), 0);
    fakeset_assert_str(f->p, 1, "on-node-2");
    assert_int_ge(fake_node_connections(f->node[2]), 1);
}

/* Appends to buf (cap bytes, *len used) one CLUSTER SHARDS shard: slots start..end (none when
 * start < 0) and its master on master_port, with a replica on replica_port (0: none). */
static void put_shard(char *buf, size_t cap, size_t *len, int start, int end, int master_port,
                      int replica_port) {
    int ports[2] = {master_port, replica_port}, nnodes = replica_port ? 2 : 1;
    *len += (size_t)snprintf(buf + *len, cap - *len, "*4\r\n$5\r\nslots\r\n");
    *len += start < 0
                ? (size_t)snprintf(buf + *len, cap - *len, "*0\r\n")
                : (size_t)snprintf(buf + *len, cap - *len, "*2\r\n:%d\r\n:%d\r\n", start, end);
    *len += (size_t)snprintf(buf + *len, cap - *len, "$5\r\nnodes\r\n*%d\r\n", nnodes);
    for (int i = 0; i < nnodes; i++) {
        char id[41];
        const char *role = i == 0 ? "master" : "replica";
        *len += (size_t)snprintf(buf + *len, cap - *len,
                                 "*14\r\n$2\r\nid\r\n$40\r\n%s\r\n$4\r\nport\r\n:%d\r\n$2\r\nip\r\n"
                                 "$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
                                 "$4\r\nrole\r\n$%zu\r\n%s\r\n$18\r\nreplication-offset\r\n:0\r\n"
                                 "$6\r\nhealth\r\n$6\r\nonline\r\n",
                                 fake_node_id(id, ports[i]), ports[i], strlen(role), role);
    }
    assert_int_lt(*len, cap); /* it fit */
}

/* A failover: node 2, node 1's replica, takes its slots. Node 0 has heard from node 2 and not yet
 * from node 1, so its map calls node 1 a master with no slot; node 1 knows it is node 2's
 * replica. The client, whose map comes from node 0 after node 1's MOVED, asks node 1 next and
 * takes it as the replica it is: a fan-out (DBSIZE) then counts node 2's keys once, not twice.
 * (A client that kept the map would keep node 1 as a master for as long as no redirect asks for
 * another map: never, its routes being right.) */
static void former_master_of_a_stale_map_asked_again(void **state) {
    fakeset *f = *state;
    int p0 = f->port[0], p1 = f->port[1], p2 = f->port[2];
    char before[1024], stale[4096], fresh[4096];
    int start[2] = {0, 8192}, end[2] = {8191, 16383}, ports[2] = {p0, p1};
    assert_int_gt(fake_cluster_shards(before, sizeof(before), 2, start, end, ports), 0);
    for (int i = 0; i < FAKESET_N; i++)
        assert_int_equal(fake_node_set_cluster_reply(f->node[i], "SHARDS", before), 0);
    char key[16], key0[16]; /* of node 1's half, and of node 0's */
    for (int i = 0;; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        if (cp_keyslot(key, strlen(key)) >= 8192)
            break;
    }
    for (int i = 0;; i++) {
        snprintf(key0, sizeof(key0), "k%d", i);
        if (cp_keyslot(key0, strlen(key0)) < 8192)
            break;
    }
    fakeset_put(f, 2, key, "v");
    fakeset_put(f, 0, key0, "v0");
    fakeset_connect(f, 2000, 1000, 0);
    /* The first map; node 1 has no such key yet. Node 0 is read from in every batch: its
     * connection is ready and idle when the map is asked for, so it is asked first. */
    assert_int_equal(cp_append(f->p, "GET %s", key0), 0);
    assert_int_equal(cp_append(f->p, "GET %s", key), 0);
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_equal(cp_test_role_at(f->c, p1), CP_NODE_MASTER);

    size_t n = (size_t)snprintf(stale, sizeof(stale), "*3\r\n");
    put_shard(stale, sizeof(stale), &n, 0, 8191, p0, 0);
    put_shard(stale, sizeof(stale), &n, 8192, 16383, p2, 0);
    put_shard(stale, sizeof(stale), &n, -1, -1, p1, 0);
    n = (size_t)snprintf(fresh, sizeof(fresh), "*2\r\n");
    put_shard(fresh, sizeof(fresh), &n, 0, 8191, p0, 0);
    put_shard(fresh, sizeof(fresh), &n, 8192, 16383, p2, p1);
    assert_int_equal(fake_node_set_cluster_reply(f->node[0], "SHARDS", stale), 0);
    assert_int_equal(fake_node_set_cluster_reply(f->node[1], "SHARDS", fresh), 0);
    assert_int_equal(fake_node_set_cluster_reply(f->node[2], "SHARDS", fresh), 0);
    char buf[128];
    fakeset_rule(f->node[1], "GET", key, 0, -1, FAKE_REPLY,
                 fakeset_redirect(buf, "MOVED", key, p2));
    fakeset_rule(f->node[0], "DBSIZE", NULL, 0, -1, FAKE_REPLY, ":5\r\n");
    fakeset_rule(f->node[1], "DBSIZE", NULL, 0, -1, FAKE_REPLY, ":7\r\n");
    fakeset_rule(f->node[2], "DBSIZE", NULL, 0, -1, FAKE_REPLY, ":7\r\n");
    size_t asked_node1 = fake_node_count(f->node[1], "CLUSTER");

    /* The MOVED, then batches until the maps it asked for have come (or 2 s). */
    for (int i = 0; i < 25 && (i < 3 || cp_test_role_at(f->c, p1) == CP_NODE_MASTER); i++) {
        /* The MOVED's batch leaves node 0 alone: idle whenever the map is asked for. */
        cp_pipeline_reset(f->p);
        if (i > 0)
            assert_int_equal(cp_append(f->p, "GET %s", key0), 0);
        assert_int_equal(cp_append(f->p, "GET %s", key), 0);
        assert_int_equal(cp_exec(f->p), 0);
        fakeset_assert_str(f->p, i > 0, "v");
        past_refresh_spacing();
    }
    assert_int_ge(fake_node_count(f->node[0], "CLUSTER"), 2); /* the stale map was read */
    if (cp_test_role_at(f->c, p1) != CP_NODE_REPLICA)
        fail_msg("node 1, the old master, is not a replica in the client's map");
    assert_int_gt(fake_node_count(f->node[1], "CLUSTER"), asked_node1);
    redisReply *r = cp_command(f->c, "DBSIZE");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 12);
    freeReplyObject(r);
}

static void all_seeds_down(void **state) {
    fakeset *f = *state;
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d,127.0.0.1:%d", f->port[1], f->port[2]);
    fake_node_stop(f->node[1]);
    fake_node_stop(f->node[2]);
    f->node[1] = f->node[2] = NULL;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    f->c = cp_connect(&o);
    assert_non_null(f->c);
    assert_int_equal(f->c->err, CP_ECONNECT);
    assert_non_null(strstr(f->c->errstr, "refused"));
}

static void seed_not_a_cluster(void **state) {
    fakeset *f = *state;
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", f->port[1]);
    fake_node_set_cluster_reply(f->node[1], "SHARDS", NULL);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    f->c = cp_connect(&o);
    assert_int_equal(f->c->err, CP_ETOPOLOGY);
    assert_non_null(strstr(f->c->errstr, "cluster support disabled"));
}

static void slots_fallback(void **state) {
    fakeset *f = *state;
    char buf[512];
    int start = 0, end = 16383;
    fake_node_set_cluster_reply(f->node[0], "SHARDS", NULL);
    assert_int_gt(fake_cluster_slots(buf, sizeof(buf), 1, &start, &end, &f->port[0]), 0);
    fake_node_set_cluster_reply(f->node[0], "SLOTS", buf);
    fakeset_connect(f, 2000, CP_RETRY_NONE, 0);
    redisReply *r = cp_command(f->c, "SET %s %s", "a", "1");
    assert_non_null(r);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
}

static void auth(void **state) {
    fakeset *f = *state;
    fake_node_require_password(f->node[0], "alice", "s3cret");
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", f->port[0]);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.username = "alice";
    o.password = "wrong";
    cp_client *c = cp_connect(&o);
    assert_int_equal(c->err, CP_EAUTH);
    assert_non_null(strstr(c->errstr, "WRONGPASS"));
    cp_free(c);
    o.password = NULL;
    o.username = NULL;
    c = cp_connect(&o);
    assert_int_equal(c->err, CP_EAUTH);
    assert_non_null(strstr(c->errstr, "NOAUTH"));
    cp_free(c);
    o.username = "alice";
    o.password = "s3cret";
    f->c = cp_connect(&o);
    assert_int_equal(f->c->err, 0);
    redisReply *r = cp_command(f->c, "PING");
    assert_non_null(r);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(r);
}

static void crossslot_refused_client_side(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 2000, CP_RETRY_NONE, 0);
    assert_int_equal(cp_append(f->p, "MGET foo bar"), 0);
    assert_int_equal(cp_append(f->p, "MGET {t}a {t}b"), 0);
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    assert_int_equal(cp_get_outcome(f->p, 0), CP_NOT_EXECUTED);
    assert_non_null(strstr(cp_reply(f->p, 0)->str, "CROSSSLOT"));
    assert_int_equal(cp_get_outcome(f->p, 1), CP_DONE);
    assert_int_equal(cp_pipeline_err(f->p), CP_ECROSSSLOT);
    /* Only the same-slot MGET reached the node. */
    assert_int_equal(fake_node_count(f->node[0], "MGET"), 1);
}

static void split_multikey(void **state) {
    fakeset *f = *state;
    char buf[2048];
    int start[2] = {0, 8192}, end[2] = {8191, 16383}, ports[2] = {f->port[0], f->port[1]};
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 2, start, end, ports), 0);
    fake_node_set_cluster_reply(f->node[0], "SHARDS", buf);
    fakeset_connect(f, 2000, CP_RETRY_NONE, CP_OPT_SPLIT_MULTIKEY);
    /* foo -> node 1, bar -> node 0, {foo}x -> node 1. The fake node has no MSET: the MSET split
     * is proven on a real cluster (test_pipeline_real). */
    fakeset_put(f, 1, "foo", "1");
    fakeset_put(f, 0, "bar", "2");
    fakeset_put(f, 1, "{foo}x", "3");
    assert_int_equal(cp_append(f->p, "PING"), 0);
    assert_int_equal(cp_append(f->p, "MGET bar foo missing {foo}x"), 0);
    assert_int_equal(cp_append(f->p, "EXISTS foo bar nope {foo}x"), 0);
    assert_int_equal(cp_append(f->p, "DEL foo bar"), 0);
    assert_int_equal(cp_exec(f->p), 0);
    assert_string_equal(cp_reply(f->p, 0)->str, "PONG");
    const redisReply *m = cp_reply(f->p, 1);
    assert_int_equal(m->type, REDIS_REPLY_ARRAY);
    assert_int_equal(m->elements, 4);
    assert_string_equal(m->element[0]->str, "2");
    assert_string_equal(m->element[1]->str, "1");
    assert_int_equal(m->element[2]->type, REDIS_REPLY_NIL);
    assert_string_equal(m->element[3]->str, "3");
    assert_int_equal(cp_reply(f->p, 2)->integer, 3);
    assert_int_equal(cp_reply(f->p, 3)->integer, 2);
    /* One part per slot: bar (5061) and missing (5513) on node 0; foo and {foo}x share 12182. */
    assert_int_equal(cp_keyslot("missing", 7), 5513);
    assert_int_equal(fake_node_count(f->node[0], "MGET"), 2);
    assert_int_equal(fake_node_count(f->node[1], "MGET"), 1);
}

/* Per-key order survives a redirect: SET k then GET k, both moved, arrive in order. */
static void per_key_order_across_moved(void **state) {
    fakeset *f = *state;
    char buf[128];
    fakeset_rule(f->node[0], NULL, "k", 0, -1, FAKE_REPLY,
                 fakeset_redirect(buf, "MOVED", "k", f->port[1]));
    fakeset_connect(f, 2000, CP_RETRY_NONE, 0);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(cp_append(f->p, "SET k %d", i), 0);
        assert_int_equal(cp_append(f->p, "GET k"), 0);
    }
    assert_int_equal(cp_exec(f->p), 0);
    for (int i = 0; i < 20; i++) {
        char v[8];
        sprintf(v, "%d", i);
        fakeset_assert_str(f->p, (size_t)(2 * i + 1), v);
    }
}

static void endpoint_mode(void **state) {
    fakeset *f = *state;
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", f->port[1]);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    f->c = cp_connect(&o);
    assert_int_equal(f->c->err, 0);
    assert_int_equal(cp_is_cluster(f->c), 0);
    f->p = cp_pipeline_new(f->c);
    /* In endpoint mode no reply is interpreted: a MOVED is the caller's answer. */
    fakeset_rule(f->node[1], "GET", "k1", 0, 1, FAKE_REPLY, "-MOVED 1 127.0.0.1:1\r\n");
    for (int i = 0; i < 100; i++)
        assert_int_equal(cp_append(f->p, "SET k%d %d", i, i), 0);
    fakeset_append_gets(f->p, 3);
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_equal(cp_count(f->p), 103);
    assert_int_equal(cp_get_outcome(f->p, 101), CP_DONE);
    assert_int_equal(cp_reply(f->p, 101)->type, REDIS_REPLY_ERROR);
    fakeset_assert_str(f->p, 102, "2");
    /* Reset reuses the buffers; a pipeline executes once per reset. */
    assert_int_equal(cp_exec(f->p), CP_EINVAL);
    cp_pipeline_reset(f->p);
    assert_int_equal(cp_count(f->p), 0);
    fakeset_append_gets(f->p, 1);
    assert_int_equal(cp_exec(f->p), 0);
    fakeset_assert_str(f->p, 0, "0");
}

/* A pipeline much larger than the output buffer: bounded buffering still delivers all. */
static void large_pipeline(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, CP_RETRY_NONE, 0);
    for (int i = 0; i < 50000; i++)
        assert_int_equal(cp_append(f->p, "SET key:%d value-%d", i, i), 0);
    for (int i = 0; i < 50000; i += 7)
        assert_int_equal(cp_append(f->p, "GET key:%d", i), 0);
    assert_int_equal(cp_exec(f->p), 0);
    size_t j = 50000;
    for (int i = 0; i < 50000; i += 7, j++) {
        char v[32];
        sprintf(v, "value-%d", i);
        fakeset_assert_str(f->p, j, v);
    }
}

static void bad_input(void **state) {
    (void)state;
    cp_options o = CP_OPTIONS_INIT;
    cp_client *c = cp_connect(&o);
    assert_int_equal(c->err, CP_EINVAL);
    cp_free(c);
    o.seeds = "nohostport";
    c = cp_connect(&o);
    assert_int_equal(c->err, CP_EINVAL);
    assert_non_null(strstr(c->errstr, "nohostport"));
    cp_free(c);
    o.seeds = NULL;
    o.endpoint = "127.0.0.1:1";
    c = cp_connect(&o);
    assert_int_equal(c->err, CP_ECONNECT);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append_formatted(p, "GET x\r\n", 7), CP_EINVAL);
    assert_int_equal(cp_append_formatted(p, "*1\r\n$3\r\nGET\r\n", 13), 0);
    assert_int_equal(cp_append_argv(p, 0, NULL, NULL), CP_EINVAL);
    const char *get[2] = {"GET", "x"};
    assert_int_equal(cp_append_argv_slot(p, 2, get, NULL, CP_SLOTS), CP_EINVAL);
    const char *empty[1] = {""}; /* an empty command name is the server's to refuse */
    assert_int_equal(cp_append_argv(p, 1, empty, NULL), 0);
    assert_int_equal(cp_append_argv(p, 1, empty, NULL), 0);
    assert_int_equal(cp_set_flags(p, 5, CP_CMD_IDEMPOTENT), CP_EINVAL);
    assert_int_equal(cp_count(p), 3);
    assert_int_equal(cp_exec(p), CP_EPARTIAL);
    assert_int_equal(cp_get_outcome(p, 0), CP_NOT_EXECUTED);
    cp_pipeline_free(p);
    cp_free(c);
    assert_string_equal(cp_strerror(CP_EAUTH), "authentication failed");
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fakeset_setup, fakeset_teardown)
    const struct CMUnitTest tests[] = {
        T(moved_mid_batch),
        T(moved_with_retries_refreshes_once),
        T(ask_mid_batch),
        T(wrong_slot_hint_follows_moved),
        T(tryagain_then_success),
        T(clusterdown_outlasts_budget),
        T(closed_after_k_of_n),
        T(partial_reply_then_close),
        T(stalled_node_times_out),
        T(unit_stalled_at_exec_ends_unknown),
        T(malformed_reply),
        T(slot_moves_to_unknown_node),
        T(former_master_of_a_stale_map_asked_again),
        T(all_seeds_down),
        T(seed_not_a_cluster),
        T(slots_fallback),
        T(auth),
        T(crossslot_refused_client_side),
        T(split_multikey),
        T(per_key_order_across_moved),
        T(endpoint_mode),
        T(large_pipeline),
        cmocka_unit_test(bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
