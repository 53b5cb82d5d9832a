/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scripts (clusterpipe/script.h) on a real cluster: EVALSHA first, EVAL on NOSCRIPT, every
 * outcome exact and cp_get_script_stats' noscript counted each time the path is taken:
 *
 *   - a fresh cluster lacks the script (NOSCRIPT, EVAL), then has it (EVALSHA answers); after
 *     SCRIPT FLUSH on every master it is reloaded transparently, and a GET of the key appended
 *     after the script reads what the script wrote;
 *   - a master killed with SIGKILL: its replica takes over. Redis 7 replicates a script's effects,
 *     not the script, so the promoted replica lacks it: the first run there goes NOSCRIPT, EVAL;
 *   - a shard added and a slot moved to it: a script on a key of that slot is answered MOVED by
 *     the old owner and NOSCRIPT by the new one, where the EVAL then runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "orch/orch.h"
#include "util/clock.h"

/* Sets KEYS[1] to ARGV[1] and answers what it left there. */
#define BODY "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])"

static uint64_t noscripts(cp_client *c) {
    cp_script_stats st;
    cp_get_script_stats(c, &st);
    return st.noscript;
}

/* Runs the script on key with value, blocking; asserts the reply is the value. */
static void run(cp_client *c, const cp_script *s, const char *key, const char *value) {
    const char *argv[] = {key, value};
    redisReply *r = cp_command_script(c, s, 1, 2, argv, NULL);
    if (r == NULL)
        fail_msg("script on %s: %s", key, c->errstr);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, value);
    cp_reply_free(r);
}

static void flush_all(cp_client *c) {
    redisReply *r = cp_command_all(c, "SCRIPT FLUSH");
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    cp_reply_free(r);
}

static void reloaded_after_flush(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_script *s = cp_script_new(BODY, strlen(BODY));
    assert_non_null(s);
    run(c, s, "sr:a", "v1"); /* a fresh cluster has no script */
    assert_int_equal(noscripts(c), 1);
    run(c, s, "sr:a", "v2");
    assert_int_equal(noscripts(c), 1);
    redisReply *sha = cp_fixture_command(f, "SCRIPT EXISTS %s", cp_script_sha(s));
    assert_non_null(sha);
    assert_int_equal(sha->type, REDIS_REPLY_ARRAY);
    freeReplyObject(sha);

    flush_all(c);
    /* [script on sr:a, GET sr:a, script on sr:b (another master), GET sr:b], one pipeline. */
    assert_int_not_equal(cp_keyslot("sr:a", 4) / 5462, cp_keyslot("sr:b", 4) / 5462);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_non_null(p);
    const char *a[] = {"sr:a", "v3"}, *b[] = {"sr:b", "w1"};
    assert_int_equal(cp_append_script(p, s, 1, 2, a, NULL), 0);
    assert_int_equal(cp_append(p, "GET sr:a"), 0);
    assert_int_equal(cp_append_script(p, s, 1, 2, b, NULL), 0);
    assert_int_equal(cp_append(p, "GET sr:b"), 0);
    assert_int_equal(cp_exec(p), 0);
    const char *want[] = {"v3", "v3", "w1", "w1"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(cp_get_outcome(p, i), CP_DONE);
        const redisReply *r = cp_reply(p, i);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, want[i]);
    }
    assert_int_equal(noscripts(c), 3); /* each master answered NOSCRIPT once */
    cp_pipeline_free(p);
    cp_script_free(s);
    cp_free(c);
}

static void promoted_replica_lacks_it(void **state) {
    cp_fixture *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.retry_budget_ms = 1000;
    cp_client *c = cp_fixture_client(f, &o);
    cp_script *s = cp_script_new(BODY, strlen(BODY));
    assert_non_null(s);
    const char *key = "sr:{m1}";
    size_t m1 = cp_fixture_master(f, 1), r1 = cp_fixture_replica(f, m1, 0);
    assert_int_not_equal(r1, SIZE_MAX);
    assert_int_equal(cp_keyslot(key, strlen(key)) / 5462, 1); /* master 1's third of the slots */
    run(c, s, key, "v1");
    assert_int_equal(noscripts(c), 1);
    redisContext *mc = cp_fixture_conn(f, cp_topo_proc(f->topo, m1)->port);
    assert_non_null(mc);
    redisReply *w = redisCommand(mc, "WAIT 1 10000"); /* the replica has v1 */
    assert_non_null(w);
    assert_int_equal(w->type, REDIS_REPLY_INTEGER);
    assert_int_equal(w->integer, 1);
    freeReplyObject(w);
    char err[512];
    assert_int_equal(cp_topo_kill(f->topo, m1, SIGKILL, err, sizeof(err)), 0);

    /* Until the replica took over, the shard answers nothing (or CLUSTERDOWN): tried again, as
     * a program would, within a deadline far above the cluster's node timeout. */
    const char *argv[] = {key, "v2"};
    redisReply *r = NULL;
    uint64_t end = cp__now_ns() + 60ull * 1000000000ull;
    while (r == NULL && cp__now_ns() < end) {
        r = cp_command_script(c, s, 1, 2, argv, NULL);
        if (r != NULL && r->type == REDIS_REPLY_ERROR) {
            print_message("before the failover: %s\n", r->str);
            cp_reply_free(r);
            r = NULL;
        }
        if (r == NULL)
            cp__sleep_ms(200);
    }
    if (r == NULL)
        fail_msg("no answer from the promoted replica: %s", c->errstr);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "v2");
    cp_reply_free(r);
    assert_int_equal(noscripts(c), 2); /* Redis 7: the replica never had the script */
    redisContext *rc = cp_fixture_conn(f, cp_topo_proc(f->topo, r1)->port);
    assert_non_null(rc);
    redisReply *role = redisCommand(rc, "ROLE");
    assert_non_null(role);
    assert_int_equal(role->type, REDIS_REPLY_ARRAY);
    assert_string_equal(role->element[0]->str, "master");
    freeReplyObject(role);
    run(c, s, key, "v3");
    assert_int_equal(noscripts(c), 2);
    cp_script_free(s);
    cp_free(c);
}

/* The first slot range CLUSTER SLOTS names for port, or -1. */
static int first_slot_of(cp_fixture *f, int port) {
    redisReply *r = cp_fixture_command(f, "CLUSTER SLOTS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    int slot = -1;
    for (size_t i = 0; i < r->elements && slot < 0; i++) {
        const redisReply *e = r->element[i];
        if (e->elements >= 3 && e->element[2]->element[1]->integer == port)
            slot = (int)e->element[0]->integer;
    }
    freeReplyObject(r);
    return slot;
}

static void added_shard_gets_it(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_script *s = cp_script_new(BODY, strlen(BODY));
    assert_non_null(s);
    char err[512];
    size_t added;
    assert_int_equal(cp_topo_add_node(f->topo, -1, &added, err, sizeof(err)), 0);
    assert_int_equal(
        cp_topo_migrate_slots(f->topo, cp_fixture_master(f, 0), added, 4, err, sizeof(err)), 0);
    int port = cp_topo_proc(f->topo, added)->port;
    int slot = first_slot_of(f, port);
    assert_int_ge(slot, 0);
    char key[32];
    for (int i = 0;; i++) { /* a key of that slot */
        snprintf(key, sizeof(key), "sr:%d", i);
        if ((int)cp_keyslot(key, strlen(key)) == slot)
            break;
    }
    cp_stats before;
    cp_get_stats(c, &before);
    /* The client's map is from before the move: MOVED, then NOSCRIPT from the new shard. */
    run(c, s, key, "v1");
    cp_stats after;
    cp_get_stats(c, &after);
    assert_int_equal(noscripts(c), 1);
    assert_int_ge(after.moved, before.moved + 1);
    redisContext *nc = cp_fixture_conn(f, port);
    assert_non_null(nc);
    redisReply *g = redisCommand(nc, "GET %s", key);
    assert_non_null(g);
    assert_int_equal(g->type, REDIS_REPLY_STRING);
    assert_string_equal(g->str, "v1");
    freeReplyObject(g);
    run(c, s, key, "v2");
    assert_int_equal(noscripts(c), 1);
    cp_script_free(s);
    cp_free(c);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reloaded_after_flush, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(promoted_replica_lacks_it, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(added_shard_gets_it, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
