/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Every-master commands and node iteration on a real cluster of 3 masters with a replica each:
 * DBSIZE and KEYS answer for the whole cluster (summed, concatenated), SCRIPT LOAD reaches every
 * master so EVALSHA works on every slot (and FUNCTION LOAD so FCALL does), FLUSHDB empties all of
 * it, cp_command_all gives one INFO per master, and the nodes, their roles, masters and slot ranges
 * are what the map says; cp_command_node reaches the node chosen. A master that refuses makes
 * the combined answer its error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "util/clock.h"
#include "testutil.h"

#define KEYS 1000

static long long integer_of(cp_client *c, const char *cmd) {
    redisReply *r = cp_command(c, cmd);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER)
        fail_msg("%s: %s", cmd, r != NULL && r->str != NULL ? r->str : c->errstr);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* Writes KEYS keys fan:0 .. fan:KEYS-1 (value: their number) through p, and resets it. */
static void set_keys(cp_pipeline *p) {
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(cp_append(p, "SET fan:%d %d", i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_reset(p);
}

static void every_master(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    set_keys(p);

    assert_int_equal(integer_of(c, "DBSIZE"), KEYS); /* one master alone holds about a third */
    redisReply *r = cp_command(c, "KEYS fan:*");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, KEYS);
    freeReplyObject(r);

    r = cp_command(c, "SCRIPT LOAD %s", "return redis.call('GET', KEYS[1])");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char sha[64];
    snprintf(sha, sizeof(sha), "%s", r->str);
    freeReplyObject(r);
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(cp_append(p, "EVALSHA %s 1 fan:%d", sha, i), 0);
    assert_int_equal(cp_exec(p), 0);
    for (int i = 0; i < KEYS; i++) {
        const redisReply *e = cp_reply(p, (size_t)i);
        if (e->type != REDIS_REPLY_STRING || atoi(e->str) != i)
            fail_msg("EVALSHA fan:%d: %s", i, e->str ? e->str : "?");
    }
    cp_pipeline_reset(p);

    /* FUNCTION LOAD too: a library on every master, so FCALL works on every slot. */
    r = cp_command(c, "FUNCTION LOAD %s",
                   "#!lua name=fanlib\n"
                   "redis.register_function('fanget', function(k) return redis.call('GET', k[1]) "
                   "end)");
    assert_non_null(r);
    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, "fanlib") != 0)
        fail_msg("FUNCTION LOAD: %s", r->str != NULL ? r->str : "?");
    freeReplyObject(r);
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(cp_append(p, "FCALL fanget 1 fan:%d", i), 0);
    assert_int_equal(cp_exec(p), 0);
    for (int i = 0; i < KEYS; i++) {
        const redisReply *e = cp_reply(p, (size_t)i);
        if (e->type != REDIS_REPLY_STRING || atoi(e->str) != i)
            fail_msg("FCALL fan:%d: %s", i, e->str ? e->str : "?");
    }
    cp_pipeline_reset(p);

    /* Anything else, asked of every master: one reply each. Also from a pipeline. */
    r = cp_command_all(c, "INFO server");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    for (size_t i = 0; i < 3; i++)
        assert_non_null(strstr(r->element[i]->str, "redis_version"));
    freeReplyObject(r);
    assert_int_equal(cp_append_all(p, "PING"), 0);
    assert_int_equal(cp_append(p, "DBSIZE"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(cp_reply(p, 0)->elements, 3);
    assert_string_equal(cp_reply(p, 0)->element[2]->str, "PONG");
    assert_int_equal(cp_reply(p, 1)->integer, KEYS);
    cp_pipeline_reset(p);

    r = cp_command(c, "FLUSHDB");
    assert_non_null(r);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    assert_int_equal(integer_of(c, "DBSIZE"), 0);
    cp_pipeline_free(p);
    cp_free(c);
}

static void assert_error(const redisReply *r, const char *needle) {
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ERROR || strstr(r->str, needle) == NULL)
        fail_msg("want an error naming %s, got type %d: %s", needle, r->type,
                 r->str != NULL ? r->str : "");
}

/* One master refuses (its ACL takes FLUSHDB and SCRIPT LOAD away): the combined answer is that
 * master's error, as docs/commands.md says, while the others did run it; DBSIZE then counts
 * what the refusing master kept. */
static void one_master_refuses(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    set_keys(p);
    int m = 0;
    cp_node_info n;
    while (cp_node_get(c, m, &n) == 0 && n.role != CP_NODE_MASTER)
        m++;
    redisReply *r = cp_command_node(c, m, "ACL SETUSER default -flushdb -script|load");
    assert_non_null(r);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    r = cp_command_node(c, m, "DBSIZE");
    long long kept = r->integer;
    freeReplyObject(r);
    assert_int_gt(kept, 0);
    assert_int_lt(kept, KEYS);

    r = cp_command(c, "FLUSHDB");
    assert_error(r, "NOPERM");
    freeReplyObject(r);
    assert_int_equal(integer_of(c, "DBSIZE"), kept); /* the other masters did flush */
    assert_int_equal(cp_append(p, "FLUSHDB"), 0); /* every master answered: done, with the error */
    assert_int_equal(cp_append(p, "SCRIPT LOAD %s", "return 1"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(cp_get_outcome(p, 0), CP_DONE);
    assert_error(cp_reply(p, 0), "NOPERM");
    assert_int_equal(cp_get_outcome(p, 1), CP_DONE);
    assert_error(cp_reply(p, 1), "NOPERM");
    cp_pipeline_reset(p);

    r = cp_command_node(c, m, "ACL SETUSER default +@all");
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    r = cp_command(c, "SCRIPT LOAD %s", "return 1");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING); /* the same SHA from every master */
    freeReplyObject(r);
    r = cp_command(c, "FLUSHDB");
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    assert_int_equal(integer_of(c, "DBSIZE"), 0);
    cp_pipeline_free(p);
    cp_free(c);
}

/* A split or every-master command's parts go where it stands in the pipeline, between the
 * commands before and after it on every node: FLUSHDB after a SET removes that key before a GET
 * after it reads, and a split MGET reads the value of the SET before it, not after. */
static void parts_in_append_order(void **state) {
    cp_fixture *f = *state;
    cp_options opt = CP_OPTIONS_INIT;
    opt.flags |= CP_OPT_SPLIT_MULTIKEY;
    cp_client *c = cp_fixture_client(f, &opt);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < 30; i++)
        assert_int_equal(cp_append(p, "SET ord:%d before", i), 0);
    assert_int_equal(cp_append(p, "FLUSHDB"), 0);
    for (int i = 0; i < 30; i++)
        assert_int_equal(cp_append(p, "GET ord:%d", i), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_string_equal(cp_reply(p, 30)->str, "OK");
    for (int i = 0; i < 30; i++)
        assert_int_equal(cp_reply(p, 31 + (size_t)i)->type, REDIS_REPLY_NIL);
    cp_pipeline_reset(p);

    assert_int_not_equal(cp_keyslot("ord:a", 5), cp_keyslot("ord:b", 5));
    assert_int_equal(cp_append(p, "SET ord:a 1"), 0);
    assert_int_equal(cp_append(p, "SET ord:b 1"), 0);
    assert_int_equal(cp_append(p, "MGET ord:a ord:b"), 0); /* split: one part per slot */
    assert_int_equal(cp_append(p, "SET ord:a 2"), 0);
    assert_int_equal(cp_append(p, "SET ord:b 2"), 0);
    assert_int_equal(cp_exec(p), 0);
    const redisReply *r = cp_reply(p, 2);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str, "1");
    assert_string_equal(r->element[1]->str, "1");
    cp_pipeline_free(p);
    cp_free(c);
}

static void nodes(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(cp_append(p, "SET node:%d %d", i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);

    int masters = 0, replicas = 0, slots = 0;
    long long held = 0;
    for (int i = 0; i < cp_node_count(c); i++) {
        cp_node_info n;
        assert_int_equal(cp_node_get(c, i, &n), 0);
        char want[64];
        redisReply *r = cp_command_node(c, i, "ROLE");
        assert_non_null(r);
        snprintf(want, sizeof(want), "%s", r->element[0]->str);
        freeReplyObject(r);
        if (n.role == CP_NODE_MASTER) {
            masters++;
            slots += n.nslots;
            assert_string_equal(want, "master");
            int ranges[4][2];
            int nr = cp_node_slots(c, i, ranges, 4);
            assert_int_ge(nr, 1);
            int sum = 0;
            for (int k = 0; k < nr && k < 4; k++)
                sum += ranges[k][1] - ranges[k][0] + 1;
            assert_int_equal(sum, n.nslots);
            r = cp_command_node(c, i, "DBSIZE");
            held += r->integer;
            freeReplyObject(r);
        } else if (n.role == CP_NODE_REPLICA) {
            replicas++;
            assert_string_equal(want, "slave");
            cp_node_info m;
            assert_int_equal(cp_node_get(c, n.master, &m), 0);
            assert_int_equal(m.role, CP_NODE_MASTER);
            assert_int_equal(n.nslots, 0);
        }
    }
    assert_int_equal(masters, 3);
    assert_int_equal(replicas, 3);
    assert_int_equal(slots, CP_SLOTS);
    assert_int_equal(held, KEYS);
    cp_node_info none;
    assert_int_equal(cp_node_get(c, cp_node_count(c), &none), CP_EINVAL);
    assert_null(cp_command_node(c, cp_node_count(c), "PING"));
    assert_int_equal(c->err, CP_EINVAL);
    /* -1 is "none" (a master's cp_node_info.master): never a node, never slot-routed */
    assert_int_equal(cp_node_get(c, -1, &none), CP_EINVAL);
    assert_int_equal(cp_node_slots(c, -1, NULL, 0), CP_EINVAL);
    assert_null(cp_command_node(c, -1, "PING"));
    assert_int_equal(c->err, CP_EINVAL);
    assert_string_equal(c->errstr, "no such node");
    p = cp_pipeline_new(c);
    assert_int_equal(cp_append_node(p, -1, "PING"), CP_EINVAL);
    assert_int_equal(cp_append_node(p, -2, "PING"), CP_EINVAL);
    assert_int_equal(cp_count(p), 0);
    cp_pipeline_free(p);
    cp_free(c);
}

typedef struct got {
    int n;
    long long dbsize;
} got;

static void on_dbsize(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    got *g = data;
    g->n++;
    if (r->outcome == CP_DONE && r->reply->type == REDIS_REPLY_INTEGER)
        g->dbsize = r->reply->integer;
}

typedef struct replies {
    int n, bad, arrays, nints;
    long long ints[16];
} replies;

static void on_any(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    replies *k = data;
    k->n++;
    if (r->outcome != CP_DONE || r->reply->type == REDIS_REPLY_ERROR)
        k->bad++;
    else if (r->reply->type == REDIS_REPLY_ARRAY && r->reply->elements == 3)
        k->arrays++;
    else if (r->reply->type == REDIS_REPLY_INTEGER && k->nints < 16)
        k->ints[k->nints++] = r->reply->integer;
}

/* The async API fans out too (once the map is there). */
static void every_master_async(void **state) {
    cp_fixture *f = *state;
    cp_client *b = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(b);
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(cp_append(p, "SET async:%d %d", i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
    cp_free(b);
    cp_options opt = CP_OPTIONS_INIT;
    opt.seeds = f->endpoints;
    cp_test_protocol(&opt);
    cp_client *c = cp_client_new(&opt);
    cp_loop *l = cp_loop_new();
    assert_int_equal(cp_loop_attach(l, c), 0);
    got g = {0, -1};
    assert_int_equal(cp_async_command(c, on_dbsize, &g, "GET async:1"), 0);
    for (int i = 0; i < 1000 && g.n < 1; i++)
        cp_loop_run_once(l, 10);
    assert_int_equal(cp_async_command(c, on_dbsize, &g, "DBSIZE"), 0);
    for (int i = 0; i < 1000 && g.n < 2; i++)
        cp_loop_run_once(l, 10);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.dbsize, KEYS);
    /* Explicitly to every master (one reply each), and to each node in turn (their DBSIZEs add
     * up to the keys). */
    replies all = {0};
    assert_int_equal(cp_async_command_all(c, on_any, &all, "PING"), 0);
    long long sum = 0;
    int masters = 0;
    for (int i = 0; i < cp_node_count(c); i++) {
        cp_node_info n;
        assert_int_equal(cp_node_get(c, i, &n), 0);
        if (n.role != CP_NODE_MASTER)
            continue;
        masters++;
        assert_int_equal(cp_async_command_node(c, i, on_any, &all, "DBSIZE"), 0);
    }
    assert_int_equal(cp_async_command_node(c, cp_node_count(c), on_any, &all, "PING"), CP_EINVAL);
    for (int i = 0; i < 1000 && all.n < 1 + masters; i++)
        cp_loop_run_once(l, 10);
    assert_int_equal(all.n, 1 + masters);
    assert_int_equal(all.bad, 0);
    assert_int_equal(all.arrays, 1);
    for (int i = 0; i < all.nints; i++)
        sum += all.ints[i];
    assert_int_equal(sum, KEYS);
    cp_free(c);
    cp_loop_free(l);
}

/* WAIT to every master holds each master's connection's I/O deadline for its timeout, as a WAIT
 * to one node does: past io_timeout_ms no connection is taken for silent (each shard has one
 * replica, so WAIT 3 waits its whole timeout). Its parts used to go without that: closed at the
 * I/O timeout, CP_UNKNOWN. */
static void wait_to_every_master(void **state) {
    cp_fixture *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.io_timeout_ms = 500;
    cp_client *c = cp_fixture_client(f, &o);
    uint64_t t0 = cp__now_ns();
    redisReply *r = cp_command_all(c, "WAIT 3 1500");
    uint64_t took = cp__now_ns() - t0;
    if (r == NULL)
        fail_msg("WAIT to every master: %s", c->errstr);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    for (size_t i = 0; i < r->elements; i++) {
        assert_int_equal(r->element[i]->type, REDIS_REPLY_INTEGER);
        assert_int_equal(r->element[i]->integer, 1);
    }
    assert_int_ge(took, 1400000000ull);
    cp_reply_free(r);
    cp_free(c);
}

/* GETs of every key through p (the values set_keys wrote), and resets it. */
static void get_keys(cp_pipeline *p) {
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(cp_append(p, "GET fan:%d", i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_reset(p);
}

/* Right after a CLUSTER FAILOVER, a master that has heard from the promoted replica but not yet
 * from the old master calls the old one a master with no slot. CLIENTS clients meet the
 * failover's MOVED at once, and some read their next map from such a master (seen in the soak,
 * bench/soak.sh: 46 to 56 clients of 150). Each must end with the old master as a replica: DBSIZE
 * then counts each key once (with it as a master, its copy of a third of the keys was counted
 * too, for as long as the client lived). The same on scripted nodes, deterministically:
 * unit/test_pipeline_fake former_master_of_a_stale_map_asked_again. */
#define CLIENTS 24
static void failover_old_master_ends_a_replica(void **state) {
    cp_fixture *f = *state;
    cp_client *c[CLIENTS];
    cp_pipeline *p[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        c[i] = cp_fixture_client(f, NULL);
        p[i] = cp_pipeline_new(c[i]);
        assert_non_null(p[i]);
    }
    set_keys(p[0]);
    for (int i = 0; i < CLIENTS; i++)
        get_keys(p[i]); /* every client knows the map and holds a connection to each master */
    /* The last master's: the seed, asked first for a map, is master 0. */
    size_t m = cp_fixture_master(f, 2), r = cp_fixture_replica(f, m, 0);
    assert_int_not_equal(r, SIZE_MAX);
    int old_master = cp_topo_proc(f->topo, m)->port;
    /* Not cp_topo_failover: it waits until the cluster agrees, and the clients are to meet the
     * failover while it does not yet. */
    redisReply *fo =
        redisCommand(cp_fixture_conn(f, cp_topo_proc(f->topo, r)->port), "CLUSTER FAILOVER");
    assert_non_null(fo);
    assert_int_equal(fo->type, REDIS_REPLY_STATUS);
    freeReplyObject(fo);
    uint64_t deadline = cp__now_ns() + 10000000000ull;
    for (int moved = 0; moved < CLIENTS && cp__now_ns() < deadline;) { /* every client's MOVED */
        moved = 0;
        for (int i = 0; i < CLIENTS; i++) {
            get_keys(p[i]);
            cp_stats st;
            cp_get_stats(c[i], &st);
            moved += st.moved > 0;
        }
    }
    /* Batches past the spacing until each client's maps, asked for, have come (or 5 s): a map
     * read before its node heard of the failover at all meets one more MOVED first. */
    deadline = cp__now_ns() + 5000000000ull;
    for (int i = 0; i < CLIENTS; i++)
        while (cp_test_role_at(c[i], old_master) != CP_NODE_REPLICA && cp__now_ns() < deadline) {
            cp__sleep_ms(60);
            get_keys(p[i]);
        }
    for (int i = 0; i < CLIENTS; i++) {
        cp_stats st;
        cp_get_stats(c[i], &st);
        assert_int_ge(st.moved, 1);
        if (cp_test_role_at(c[i], old_master) != CP_NODE_REPLICA)
            fail_msg("client %d: the old master (port %d) is not a replica in its map", i,
                     old_master);
        assert_int_equal(integer_of(c[i], "DBSIZE"), KEYS);
        cp_pipeline_free(p[i]);
        cp_free(c[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_master, cp_fixture_setup_shared_cluster3x1,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(one_master_refuses, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(failover_old_master_ends_a_replica,
                                        cp_fixture_setup_cluster3x1, cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(parts_in_append_order, cp_fixture_setup_shared_cluster3x1,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(nodes, cp_fixture_setup_shared_cluster3x1,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(wait_to_every_master, cp_fixture_setup_shared_cluster3x1,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(every_master_async, cp_fixture_setup_shared_cluster3x1,
                                        cp_fixture_teardown_shared),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
