/* SPDX-License-Identifier: BSD-3-Clause
 *
 * One key's commands reach the server in the order they were sent, through every wait, against
 * scripted fake nodes on the built-in loop (docs/pipeline.md, "Ordering"). Each case makes an
 * earlier SET of a key wait in the client at a moment the test controls, sends a later SET of
 * the same key while it waits, and checks the order in which the node that finally ran them
 * logged them, and the value left:
 *
 *   - a CLUSTERDOWN answer puts SET v1 aside for a retry round that waits for the slot map, whose
 *     request the node holds back; SET v2 is sent meanwhile (as an async command, and again as a
 *     second cp_exec_async pipeline);
 *   - a refused connection (the key's master is gone) puts SET v1 aside until a new map names
 *     another master; SET v2, sent meanwhile, meets the same refusal in a later loop turn;
 *   - a new slot map moves the key's slot while SET v1 is still unanswered on the old master;
 *     SET v2, routed by the new map, must wait until the old master answered v1 (MOVED);
 *   - a node that refused commands lately (cautious) gets a slot's commands one at a time: it
 *     refuses SET v1 and would run SET v2, sent in the same turn, right after.
 *
 * Without the fences that hold a slot's later commands (fence.h), v2 runs first in each.
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
#include "fakenode.h"
#include "fakeset.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* An event-loop client on `seeds`, on a new cp_loop. */
static cp_client *loop_client(const char *seeds, cp_loop **loop) {
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.retry_budget_ms = 10000; /* the waits below are the test's, never the budget's end */
    o.io_timeout_ms = 10000;
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    *loop = cp_loop_new();
    assert_non_null(*loop);
    assert_int_equal(cp_loop_attach(*loop, c), 0);
    return c;
}

/* Turns the loop until done(arg) or max_ms, 1 ms apart. Returns done(arg). */
static int turn_until(cp_loop *l, int (*done)(void *), void *arg, int max_ms) {
    uint64_t end = now_ns() + (uint64_t)max_ms * 1000000ull;
    while (!done(arg) && now_ns() < end) {
        assert_int_ge(cp_loop_run_once(l, 0), 0);
        sleep_ms(1);
    }
    return done(arg);
}

/* ---- replies ----------------------------------------------------------------------------------
 */

typedef struct answer {
    int calls;
    cp_outcome outcome;
    char value[32];
} answer;

static void on_reply(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    answer *a = data;
    a->calls++;
    a->outcome = r->outcome;
    if (r->reply != NULL && r->reply->type == REDIS_REPLY_STRING)
        snprintf(a->value, sizeof(a->value), "%s", r->reply->str);
}

static int answered(void *arg) {
    return ((answer *)arg)->calls > 0;
}

typedef struct both {
    answer *a, *b;
} both;

static int both_answered(void *arg) {
    both *x = arg;
    return x->a->calls > 0 && x->b->calls > 0;
}

/* The key's value, read through the client. */
static void assert_value(cp_client *c, cp_loop *l, const char *key, const char *want) {
    answer a = {0};
    assert_int_equal(cp_async_command(c, on_reply, &a, "GET %s", key), 0);
    assert_true(turn_until(l, answered, &a, 5000));
    assert_int_equal(a.outcome, CP_DONE);
    assert_string_equal(a.value, want);
}

/* ---- the node logs -----------------------------------------------------------------------------
 */

typedef struct log_count {
    fake_node *node;
    const char *line;
    size_t want;
} log_count;

static size_t count_lines(fake_node *node, const char *line) {
    size_t n = 0;
    for (long at = 0; (at = fake_node_log_find(node, (size_t)at, line)) >= 0; at++)
        n++;
    return n;
}

static int logged(void *arg) {
    log_count *w = arg;
    return count_lines(w->node, w->line) >= w->want;
}

/* The node logged SET key v1 (its last time) before SET key v2; prints its log when not. */
static void assert_ran_in_order(fake_node *node, const char *key) {
    char v1[64], v2[64];
    snprintf(v1, sizeof(v1), "SET %s v1", key);
    snprintf(v2, sizeof(v2), "SET %s v2", key);
    long last1 = -1, first2 = fake_node_log_find(node, 0, v2);
    for (long at = 0; (at = fake_node_log_find(node, (size_t)at, v1)) >= 0; at++)
        last1 = at;
    if (last1 < 0 || first2 < 0 || last1 > first2) {
        for (size_t j = 0; j < fake_node_log_len(node); j++) {
            char entry[96];
            fake_node_log(node, j, entry, sizeof(entry));
            print_message("log %zu: %s\n", j, entry);
        }
        fail_msg("the node ran \"%s\" at %ld and \"%s\" at %ld", v1, last1, v2, first2);
    }
}

/* ---- a retry round waiting for the map ----------------------------------------------------------
 */

/* SET v1 is answered CLUSTERDOWN, so its retry round waits for a new slot map, whose request node
 * 0 holds back until the test lets it go. SET v2 is sent while v1 waits: as an async command,
 * or (pipelines) each SET as a cp_exec_async pipeline of its own. Node 0 must run v1 again
 * before v2. */
static void retry_round(fakeset *f, int pipelines) {
    char seed[32];
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", f->port[0]);
    cp_loop *l;
    cp_client *c = loop_client(seed, &l);
    const char *key = "order:cd";
    answer warm = {0};
    assert_int_equal(cp_async_command(c, on_reply, &warm, "GET %s", key), 0);
    assert_true(turn_until(l, answered, &warm, 5000)); /* the map is read, node 0 connected */
    sleep_ms(60); /* past the spacing between refreshes: the round's refresh starts at once */

    fakeset_rule(f->node[0], "SET", key, 0, 1, FAKE_REPLY, "-CLUSTERDOWN The cluster is down\r\n");
    int held = fake_node_rule(
        f->node[0],
        &(fake_rule){
            .cmd = "CLUSTER", .key = "SHARDS", .times = 1, .action = FAKE_DELAY, .delay_ms = -1});
    assert_int_ge(held, 0);
    answer a1 = {0}, a2 = {0};
    cp_pipeline *p1 = cp_pipeline_new(c), *p2 = cp_pipeline_new(c);
    assert_non_null(p1);
    assert_non_null(p2);
    if (pipelines) {
        assert_int_equal(cp_append(p1, "SET %s v1", key), 0);
        assert_int_equal(cp_exec_async(p1, NULL, NULL), 0);
    } else {
        assert_int_equal(cp_async_command(c, on_reply, &a1, "SET %s v1", key), 0);
    }
    log_count refresh = {f->node[0], "CLUSTER SHARDS", 2}; /* the first one gave the first map */
    assert_true(turn_until(l, logged, &refresh, 5000));
    assert_int_equal(fake_node_rule_fired(f->node[0], held), 1);

    if (pipelines) {
        assert_int_equal(cp_append(p2, "SET %s v2", key), 0);
        assert_int_equal(cp_exec_async(p2, NULL, NULL), 0);
    } else {
        assert_int_equal(cp_async_command(c, on_reply, &a2, "SET %s v2", key), 0);
    }
    char v2[64];
    snprintf(v2, sizeof(v2), "SET %s v2", key);
    log_count sent2 = {f->node[0], v2, 1};
    assert_false(turn_until(l, logged, &sent2, 100)); /* v2 waits behind v1 in the client */

    fake_node_release(f->node[0]);
    if (pipelines) {
        for (uint64_t end = now_ns() + 5000000000ull;
             (cp_running(p1) || cp_running(p2)) && now_ns() < end;)
            assert_int_ge(cp_loop_run_once(l, 10), 0);
        assert_int_equal(cp_running(p1), 0);
        assert_int_equal(cp_running(p2), 0);
        assert_int_equal(cp_get_outcome(p1, 0), CP_DONE);
        assert_int_equal(cp_get_outcome(p2, 0), CP_DONE);
    } else {
        both x = {&a1, &a2};
        assert_true(turn_until(l, both_answered, &x, 5000));
        assert_int_equal(a1.outcome, CP_DONE);
        assert_int_equal(a2.outcome, CP_DONE);
    }
    assert_ran_in_order(f->node[0], key);
    assert_value(c, l, key, "v2");
    cp_pipeline_free(p1);
    cp_pipeline_free(p2);
    cp_free(c);
    cp_loop_free(l);
}

static void retry_round_holds_later_async_commands(void **state) {
    retry_round(*state, 0);
}

static void retry_round_holds_later_pipelines(void **state) {
    retry_round(*state, 1);
}

/* ---- a node whose state changes between two commands ------------------------------------------
 */

/* Node 0 has answered CLUSTERDOWN lately (a key of another slot), so it is cautious. Then SET v1
 * and SET v2 of one key go out in one turn, and node 0 refuses v1 (CLUSTERDOWN once more) but
 * would run v2 right after it, as a node whose cluster came back between the two does. While
 * cautious, v2 is not sent until v1's answer is in: it waits behind v1's retry, and node 0 runs
 * v1 before v2. */
static void cautious_node_sends_one_at_a_time(void **state) {
    fakeset *f = *state;
    char seed[32];
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", f->port[0]);
    cp_loop *l;
    cp_client *c = loop_client(seed, &l);
    const char *key = "order:flip", *other = "order:other";
    answer warm = {0};
    assert_int_equal(cp_async_command(c, on_reply, &warm, "GET %s", key), 0);
    assert_true(turn_until(l, answered, &warm, 5000));
    fakeset_rule(f->node[0], "GET", other, 0, 1, FAKE_REPLY,
                 "-CLUSTERDOWN The cluster is down\r\n");
    answer o = {0};
    assert_int_equal(cp_async_command(c, on_reply, &o, "GET %s", other), 0);
    log_count asked = {f->node[0], "GET order:other", 2}; /* refused once, then answered */
    assert_true(turn_until(l, logged, &asked, 5000));

    fakeset_rule(f->node[0], "SET", key, 0, 1, FAKE_REPLY, "-CLUSTERDOWN The cluster is down\r\n");
    answer a1 = {0}, a2 = {0};
    assert_int_equal(cp_async_command(c, on_reply, &a1, "SET %s v1", key), 0);
    assert_int_equal(cp_async_command(c, on_reply, &a2, "SET %s v2", key), 0);
    both x = {&a1, &a2};
    assert_true(turn_until(l, both_answered, &x, 5000));
    assert_int_equal(a1.outcome, CP_DONE);
    assert_int_equal(a2.outcome, CP_DONE);
    assert_ran_in_order(f->node[0], key);
    assert_value(c, l, key, "v2");
    cp_free(c);
    cp_loop_free(l);
}

/* ---- a refused connection -------------------------------------------------------------------- */

/* The key's master (node 0) is gone: its port refuses. SET v1 goes aside until a new map, which
 * node 1 (a seed) gives but holds back until the test lets it go: it names node 1 the owner of
 * every slot. SET v2 is sent in a later loop turn and refused the same way. Node 1 must run v1
 * before v2. */
static void refused_connection_keeps_order(void **state) {
    fakeset *f = *state;
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d,127.0.0.1:%d", f->port[0], f->port[1]);
    cp_loop *l;
    cp_client *c = loop_client(seeds, &l);
    const char *key = "order:refused";
    answer warm = {0};
    assert_int_equal(cp_async_command(c, on_reply, &warm, "GET %s", key), 0);
    assert_true(turn_until(l, answered, &warm, 5000));
    sleep_ms(60);

    char map[1024];
    int start = 0, end = 16383;
    assert_int_gt(fake_cluster_shards(map, sizeof(map), 1, &start, &end, &f->port[1]), 0);
    fake_node_set_cluster_reply(f->node[1], "SHARDS", map);
    int held = fake_node_rule(
        f->node[1],
        &(fake_rule){
            .cmd = "CLUSTER", .key = "SHARDS", .times = 1, .action = FAKE_DELAY, .delay_ms = -1});
    assert_int_ge(held, 0);
    fake_node_stop(f->node[0]);
    f->node[0] = NULL;

    answer a1 = {0}, a2 = {0};
    assert_int_equal(cp_async_command(c, on_reply, &a1, "SET %s v1", key), 0);
    log_count refresh = {f->node[1], "CLUSTER SHARDS", 1};
    assert_true(turn_until(l, logged, &refresh, 5000));
    for (int i = 0; i < 20; i++) { /* v1 has met its refusal by now: loopback refuses at once */
        assert_int_ge(cp_loop_run_once(l, 0), 0);
        sleep_ms(1);
    }
    assert_int_equal(a1.calls, 0);
    assert_int_equal(cp_async_command(c, on_reply, &a2, "SET %s v2", key), 0);
    for (int i = 0; i < 50; i++) {
        assert_int_ge(cp_loop_run_once(l, 0), 0);
        sleep_ms(1);
    }
    fake_node_release(f->node[1]);
    both x = {&a1, &a2};
    assert_true(turn_until(l, both_answered, &x, 5000));
    assert_int_equal(a1.outcome, CP_DONE);
    assert_int_equal(a2.outcome, CP_DONE);
    assert_ran_in_order(f->node[1], key);
    assert_value(c, l, key, "v2");
    cp_free(c);
    cp_loop_free(l);
}

/* ---- a new map while a command is still on the old owner
 * ----------------------------------------- */

typedef struct owner_wait {
    cp_client *c;
    int port;
} owner_wait;

/* The client's map gives the node at port some slots. */
static int serves(void *arg) {
    owner_wait *w = arg;
    for (int i = 0; i < cp_node_count(w->c); i++) {
        cp_node_info info;
        if (cp_node_get(w->c, i, &info) == 0 && info.port == w->port && info.nslots > 0)
            return 1;
    }
    return 0;
}

/* Node 0 serves slots 0..8191 and node 2 the rest. SET v1 of a key of node 0 is sent, and node 0
 * holds its answer (a MOVED to node 1) back. Meanwhile a MOVED from node 2 for another key has
 * the map read again, from node 2 (the idle master): it names node 1 the key's owner. SET v2,
 * routed by that map to node 1, must wait until node 0 has answered v1 and v1 has gone to node 1
 * first. */
static void new_map_fences_old_owner(void **state) {
    fakeset *f = *state;
    const char *key = "order:map1", *other = "order:other{x}";
    unsigned slot = cp_keyslot(key, strlen(key)), oslot = cp_keyslot(other, strlen(other));
    assert_int_gt(slot, 0);
    assert_int_lt(slot, 8191);
    assert_int_gt(oslot, 8191);
    char map[2048];
    int s1[2] = {0, 8192}, e1[2] = {8191, 16383}, p1[2] = {f->port[0], f->port[2]};
    assert_int_gt(fake_cluster_shards(map, sizeof(map), 2, s1, e1, p1), 0);
    for (int i = 0; i < FAKESET_N; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", map);
    char seed[32];
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", f->port[0]);
    cp_loop *l;
    cp_client *c = loop_client(seed, &l);
    answer w1 = {0}, w2 = {0};
    assert_int_equal(cp_async_command(c, on_reply, &w1, "GET %s", key), 0);
    assert_int_equal(cp_async_command(c, on_reply, &w2, "GET %s", other), 0);
    both warm = {&w1, &w2};
    assert_true(turn_until(l, both_answered, &warm, 5000)); /* nodes 0 and 2 connected */
    sleep_ms(60);

    int s2[4] = {0, (int)slot, (int)slot + 1, 8192};
    int e2[4] = {(int)slot - 1, (int)slot, 8191, 16383};
    int p2[4] = {f->port[0], f->port[1], f->port[0], f->port[2]};
    assert_int_gt(fake_cluster_shards(map, sizeof(map), 4, s2, e2, p2), 0);
    for (int i = 0; i < FAKESET_N; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", map);
    char moved[128], self[128];
    snprintf(moved, sizeof(moved), "-MOVED %u 127.0.0.1:%d\r\n", slot, f->port[1]);
    snprintf(self, sizeof(self), "-MOVED %u 127.0.0.1:%d\r\n", oslot, f->port[2]);
    int held = fake_node_rule(f->node[0], &(fake_rule){.cmd = "SET",
                                                       .key = key,
                                                       .times = 1,
                                                       .action = FAKE_DELAY,
                                                       .payload = moved,
                                                       .delay_ms = -1});
    assert_int_ge(held, 0);
    fakeset_rule(f->node[0], NULL, key, 0, -1, FAKE_REPLY, moved);
    fakeset_rule(f->node[2], "GET", other, 0, 1, FAKE_REPLY, self);

    answer a1 = {0}, a2 = {0}, a3 = {0};
    assert_int_equal(cp_async_command(c, on_reply, &a1, "SET %s v1", key), 0);
    assert_int_equal(cp_async_command(c, on_reply, &a3, "GET %s", other), 0);
    owner_wait moved_to = {c, f->port[1]};
    assert_true(turn_until(l, serves, &moved_to, 5000)); /* the new map is the client's */
    assert_int_equal(fake_node_rule_fired(f->node[0], held), 1);
    assert_int_equal(a1.calls, 0);

    assert_int_equal(cp_async_command(c, on_reply, &a2, "SET %s v2", key), 0);
    char v2[64];
    snprintf(v2, sizeof(v2), "SET %s v2", key);
    log_count sent2 = {f->node[1], v2, 1};
    assert_false(turn_until(l, logged, &sent2, 100)); /* v2 waits for node 0's answer to v1 */

    fake_node_release(f->node[0]);
    both x = {&a1, &a2};
    assert_true(turn_until(l, both_answered, &x, 5000));
    assert_int_equal(a1.outcome, CP_DONE);
    assert_int_equal(a2.outcome, CP_DONE);
    assert_ran_in_order(f->node[1], key);
    assert_value(c, l, key, "v2");
    cp_free(c);
    cp_loop_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(retry_round_holds_later_async_commands, fakeset_setup,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(retry_round_holds_later_pipelines, fakeset_setup,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(cautious_node_sends_one_at_a_time, fakeset_setup,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(refused_connection_keeps_order, fakeset_setup,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(new_map_fences_old_owner, fakeset_setup, fakeset_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
