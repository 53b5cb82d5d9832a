/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Routing by the server's key specs on a real 3-master cluster: commands whose keys are not
 * argv[1] (XREAD's after STREAMS, ZUNIONSTORE's destination and sources, OBJECT ENCODING's and
 * MEMORY USAGE's after a subcommand, BLMPOP's after numkeys, SORT ... STORE's destination) reach
 * the node of their keys at once, without a MOVED, through a pipeline and through the async API;
 * a command whose keys span slots only by its key specs (LMOVE, ZUNIONSTORE) is refused before
 * it is sent. With only the built-in table these went by argv[1] and met MOVED or CROSSSLOT;
 * masters that refuse COMMAND leave the client that table, and it still works.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "testutil.h"

static const char *const commands[] = {
    "XADD {s}stream * f v",
    "XREAD COUNT 1 STREAMS {s}stream 0",
    "ZADD {z}a 1 m",
    "ZUNIONSTORE {z}dst 2 {z}a {z}b",
    "SET {o}k 12345",
    "OBJECT ENCODING {o}k",
    "MEMORY USAGE {o}k",
    "RPUSH {l}list 3 1 2",
    "SORT {l}list STORE {l}sorted",
    "BLMPOP 0.01 1 {l}list LEFT", /* on a connection of its own: after the two before it */
    "EVAL return 1 1 {e}k",
    "GEOADD {g}geo 13.36 38.11 palermo",
    "GEOSEARCHSTORE {g}dst {g}geo FROMLONLAT 13 38 BYRADIUS 200 km",
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void by_key_specs(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    for (size_t i = 0; i < NCOMMANDS; i++)
        assert_int_equal(cp_append(p, commands[i]), 0);
    assert_int_equal(cp_append(p, "LMOVE {l}list {x}other LEFT RIGHT"), 0);
    assert_int_equal(cp_append(p, "ZUNIONSTORE {z}dst 2 {z}a {y}b"), 0);
    assert_int_equal(cp_exec(p), CP_EPARTIAL);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const redisReply *r = cp_reply(p, i);
        if (cp_get_outcome(p, i) != CP_DONE || r->type == REDIS_REPLY_ERROR)
            fail_msg("%s: outcome %d, %s", commands[i], cp_get_outcome(p, i),
                     r != NULL && r->str != NULL ? r->str : "");
    }
    for (size_t i = NCOMMANDS; i < NCOMMANDS + 2; i++) {
        assert_int_equal(cp_get_outcome(p, i), CP_NOT_EXECUTED);
        assert_non_null(strstr(cp_reply(p, i)->str, "refused by the client"));
    }
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_equal(st.command_tables, 1);
    assert_int_equal(st.moved, 0);
    assert_int_equal(st.ask, 0);
    cp_pipeline_free(p);
    redisReply *r = cp_command(c, "LLEN {l}sorted");
    assert_non_null(r);
    assert_int_equal(r->integer, 3); /* SORT saw the three RPUSH wrote */
    freeReplyObject(r);
    r = cp_command(c, "LLEN {l}list");
    assert_non_null(r);
    assert_int_equal(r->integer, 2); /* BLMPOP took one of them */
    freeReplyObject(r);

    /* A second client shares the first one's table (read no second time), and keeps it after
     * the first is freed. */
    cp_options opt = CP_OPTIONS_INIT;
    opt.commands_from = c;
    cp_client *c2 = cp_fixture_client(f, &opt);
    cp_free(c);
    p = cp_pipeline_new(c2);
    for (size_t i = 0; i < NCOMMANDS; i++)
        assert_int_equal(cp_append(p, commands[i]), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_get_stats(c2, &st);
    assert_int_equal(st.command_tables, 0);
    assert_int_equal(st.moved, 0);
    cp_pipeline_free(p);
    cp_free(c2);
}

/* Masters that refuse COMMAND (their ACL takes it away): the client connects all the same and
 * routes with the built-in table, whose commands reach their node at once; the ones it lacks go
 * by argv[1] and are redirected, and still end done. */
static void builtin_table_when_command_refused(void **state) {
    cp_fixture *f = *state;
    cp_client *admin = cp_fixture_client(f, NULL);
    redisReply *r = cp_command_all(admin, "ACL SETUSER default -command");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++)
        assert_string_equal(r->element[i]->str, "OK");
    freeReplyObject(r);
    cp_free(admin);

    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < 300; i++)
        assert_int_equal(cp_append(p, "SET builtin:%d %d", i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_equal(st.command_tables, 0);
    assert_int_equal(st.moved, 0);
    cp_pipeline_reset(p);
    for (size_t i = 0; i < NCOMMANDS; i++)
        assert_int_equal(cp_append(p, commands[i]), 0);
    assert_int_equal(cp_exec(p), 0);
    for (size_t i = 0; i < NCOMMANDS; i++)
        assert_int_equal(cp_get_outcome(p, i), CP_DONE);
    cp_pipeline_free(p);
    cp_free(c);
}

typedef struct count {
    int n, bad;
} count;

static void on_reply(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    count *k = data;
    k->n++;
    if (r->outcome != CP_DONE || r->reply->type == REDIS_REPLY_ERROR) {
        k->bad++;
        print_message("async: outcome %d %s\n", r->outcome,
                      r->reply != NULL && r->reply->str != NULL ? r->reply->str : r->errstr);
    }
}

/* An event-loop client reads the table in-band after its first map: commands sent once the map
 * is there go by the key specs too. */
static void by_key_specs_async(void **state) {
    cp_fixture *f = *state;
    cp_options opt = CP_OPTIONS_INIT;
    opt.seeds = f->endpoints;
    cp_test_protocol(&opt);
    cp_client *c = cp_client_new(&opt);
    cp_loop *l = cp_loop_new();
    assert_int_equal(cp_loop_attach(l, c), 0);
    count k = {0};
    cp_stats st = {0};
    assert_int_equal(cp_async_command(c, on_reply, &k, "PING"), 0);
    for (int i = 0; i < 3000 && (k.n < 1 || st.command_tables == 0); i++) {
        cp_loop_run_once(l, 10); /* the map, then the table from the same node */
        cp_get_stats(c, &st);
    }
    assert_int_equal(st.command_tables, 1);
    for (size_t i = 0; i < NCOMMANDS; i++)
        assert_int_equal(cp_async_command(c, on_reply, &k, commands[i]), 0);
    for (int i = 0; i < 1000 && k.n < 1 + (int)NCOMMANDS; i++)
        cp_loop_run_once(l, 10);
    assert_int_equal(k.n, 1 + (int)NCOMMANDS);
    assert_int_equal(k.bad, 0);
    cp_get_stats(c, &st);
    assert_int_equal(st.command_tables, 1);
    assert_int_equal(st.moved, 0);
    cp_free(c);
    cp_loop_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(by_key_specs, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(builtin_table_when_command_refused,
                                        cp_fixture_setup_cluster3, cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(by_key_specs_async, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
