/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Blocking commands on a real cluster (docs/commands.md, "Blocking commands"). They run on
 * connections of their own (pool.h), so a command waiting on the server holds back nothing:
 *
 *  - a 3 s BLPOP on a master: 10 GETs of the same hash tag, sent right after it, are answered
 *    while it waits (they took 3.06 s when the BLPOP shared their connection);
 *  - a 3 s BLPOP, longer than the client's 1 s I/O timeout, ends done with nil after 3 s, and
 *    an XREAD BLOCK 2000 with nil after 2 s;
 *  - a BLPOP served by an LPUSH from another client answers the value pushed;
 *  - the pool is bounded (cp_options.blocking_conns): past it BLPOPs wait, in order, and the
 *    server never sees more of them blocked at once;
 *  - a BLPOP waiting while its slot migrates (the server answers MOVED) is sent again at the new
 *    owner and served there; one waiting through a CLUSTER FAILOVER (the old master answers
 *    UNBLOCKED) is sent again to the promoted replica and served there; one waiting when its
 *    master is killed ends CP_UNKNOWN (it was written: it may have popped);
 *  - cp_free with a BLPOP waiting calls its callback (CP_ECANCELED) and closes its connection:
 *    the server has no blocked client left;
 *  - a WAIT, which stays on its command connection, is not cut by the I/O timeout while its
 *    own timeout runs (it was, as "no reply within the I/O timeout", CP_UNKNOWN), and the
 *    connection's I/O timeout is its own again once it is answered.
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
#include "fixture.h"
#include "testutil.h"
#include "util/clock.h"

/* ---- one async client on the built-in loop ----------------------------------------------------
 */

typedef struct answer {
    int calls;
    cp_outcome outcome;
    int err;
    int type;
    char value[64];
    uint64_t at;
} answer;

static void on_answer(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    answer *a = data;
    a->calls++;
    a->outcome = r->outcome;
    a->err = r->err;
    a->at = cp__now_ns();
    a->type = r->reply != NULL ? r->reply->type : -1;
    if (r->reply == NULL)
        return;
    const redisReply *v = r->reply;
    if (v->type == REDIS_REPLY_ARRAY && v->elements == 2) /* BLPOP: [key, value] */
        v = v->element[1];
    if (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS ||
        v->type == REDIS_REPLY_ERROR)
        snprintf(a->value, sizeof(a->value), "%s", v->str);
}

static cp_client *loop_client(cp_fixture *f, int blocking_conns, cp_loop **l) {
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.blocking_conns = blocking_conns;
    o.retry_budget_ms = 20000; /* a failover's wait for the new master */
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    *l = cp_loop_new();
    assert_non_null(*l);
    assert_int_equal(cp_loop_attach(*l, c), 0);
    return c;
}

/* Turns the loop until done(arg) or max_ms. */
static int turn_until(cp_loop *l, int (*done)(void *), void *arg, int max_ms) {
    uint64_t end = cp__now_ns() + (uint64_t)max_ms * 1000000ull;
    while (!done(arg) && cp__now_ns() < end)
        assert_int_ge(cp_loop_run_once(l, 5), 0);
    return done(arg);
}

static int answered(void *arg) {
    return ((answer *)arg)->calls > 0;
}

/* ---- the servers ------------------------------------------------------------------------------
 */

/* A field of the server's INFO (section clients), or -1. */
static long info_field(cp_fixture *f, size_t proc, const char *field) {
    redisContext *hc = cp_fixture_conn(f, cp_topo_proc(f->topo, proc)->port);
    if (hc == NULL)
        return -1;
    redisReply *r = redisCommand(hc, "INFO clients");
    long v = -1;
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, field);
        if (p != NULL)
            v = atol(p + strlen(field) + 1);
    }
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

typedef struct blocked_wait {
    cp_fixture *f;
    size_t proc;
    long want;
} blocked_wait;

static int blocked_reached(void *arg) {
    blocked_wait *w = arg;
    return info_field(w->f, w->proc, "blocked_clients") == w->want;
}

/* Turns the loop until the server has `want` blocked clients (they are on it). */
static void until_blocked(cp_loop *l, cp_fixture *f, size_t proc, long want) {
    blocked_wait w = {f, proc, want};
    if (!turn_until(l, blocked_reached, &w, 10000))
        fail_msg("the server never had %ld blocked clients (it has %ld)", want,
                 info_field(f, proc, "blocked_clients"));
}

/* The master serving a slot, per the fixture's layout at start (three equal ranges). */
static size_t master_of(cp_fixture *f, const char *tag) {
    unsigned s = cp_keyslot(tag, strlen(tag));
    return cp_fixture_master(f, s <= 5460 ? 0 : s <= 10922 ? 1 : 2);
}

/* A hash tag whose slot is `slot`, written into tag (32 bytes). */
static void tag_of_slot(char *tag, unsigned slot) {
    for (int i = 0;; i++) {
        snprintf(tag, 32, "b%d", i);
        if (cp_keyslot(tag, strlen(tag)) == slot)
            return;
    }
}

static void push(cp_fixture *f, const char *key, const char *value) {
    redisReply *r = cp_fixture_command(f, "LPUSH %s %s", key, value);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

/* ---- the cases ----------------------------------------------------------------------------------
 */

typedef struct gets_wait {
    answer *a;
    int n;
} gets_wait;

static int gets_done(void *arg) {
    gets_wait *w = arg;
    for (int i = 0; i < w->n; i++)
        if (w->a[i].calls == 0)
            return 0;
    return 1;
}

static void blpop_holds_back_nothing(void **state) {
    cp_fixture *f = *state;
    cp_loop *l;
    cp_client *c = loop_client(f, 0, &l);
    redisReply *r = cp_fixture_command(f, "SET {t}k v");
    assert_non_null(r);
    freeReplyObject(r);
    answer warm = {0};
    assert_int_equal(cp_async_command(c, on_answer, &warm, "GET {t}k"), 0);
    assert_true(turn_until(l, answered, &warm, 10000)); /* the map, the command connection */

    answer bl = {0}, gets[10];
    memset(gets, 0, sizeof(gets));
    uint64_t t0 = cp__now_ns();
    assert_int_equal(cp_async_command(c, on_answer, &bl, "BLPOP {t}empty 3"), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(cp_async_command(c, on_answer, &gets[i], "GET {t}k"), 0);
    gets_wait w = {gets, 10};
    assert_true(turn_until(l, gets_done, &w, 10000));
    uint64_t gets_ns = cp__now_ns() - t0;
    assert_int_equal(bl.calls, 0); /* still waiting on the server */
    for (int i = 0; i < 10; i++) {
        assert_int_equal(gets[i].outcome, CP_DONE);
        assert_string_equal(gets[i].value, "v");
    }
    assert_true(turn_until(l, answered, &bl, 10000));
    uint64_t bl_ns = bl.at - t0;
    print_message("10 GETs of the BLPOP's hash tag answered in %.2f ms; the BLPOP in %.2f s\n",
                  (double)gets_ns / 1e6, (double)bl_ns / 1e9);
    assert_int_lt(gets_ns, 1000000000ull); /* far under the BLPOP's 3 s (3.06 s shared) */
    assert_int_equal(bl.outcome, CP_DONE);
    assert_int_equal(bl.type, REDIS_REPLY_NIL);
    assert_int_ge(bl_ns, 2900000000ull);
    cp_free(c);
    cp_loop_free(l);
}

static void blpop_longer_than_io_timeout(void **state) {
    cp_fixture *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.io_timeout_ms = 1000;
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    uint64_t t0 = cp__now_ns();
    redisReply *r = cp_command(c, "BLPOP {t}empty3 3");
    uint64_t took = cp__now_ns() - t0;
    if (r == NULL)
        fail_msg("BLPOP 3 failed: %s", c->errstr);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    print_message("BLPOP {t}empty3 3 answered nil after %.2f s (I/O timeout 1 s)\n",
                  (double)took / 1e9);
    assert_int_ge(took, 2900000000ull);
    /* XREAD BLOCK, in milliseconds */
    t0 = cp__now_ns();
    r = cp_command(c, "XREAD BLOCK 2000 STREAMS {t}stream $");
    took = cp__now_ns() - t0;
    if (r == NULL)
        fail_msg("XREAD BLOCK failed: %s", c->errstr);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    print_message("XREAD BLOCK 2000 answered nil after %.2f s\n", (double)took / 1e9);
    assert_int_ge(took, 1900000000ull);
    cp_free(c);
}

static void wait_longer_than_io_timeout(void **state) {
    cp_fixture *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.io_timeout_ms = 1000;
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "SET {w}k v"), 0);
    assert_int_equal(cp_append(p, "WAIT 1 2500"), 0); /* no replica: it waits it all */
    assert_int_equal(cp_append(p, "GET {w}k"), 0);
    uint64_t t0 = cp__now_ns();
    assert_int_equal(cp_exec(p), 0);
    uint64_t took = cp__now_ns() - t0;
    for (size_t i = 0; i < 3; i++)
        if (cp_get_outcome(p, i) != CP_DONE)
            fail_msg("command %zu ended %d: %s", i, cp_get_outcome(p, i), cp_pipeline_errstr(p));
    assert_int_equal(cp_reply(p, 1)->type, REDIS_REPLY_INTEGER);
    assert_int_equal(cp_reply(p, 1)->integer, 0);
    assert_string_equal(cp_reply(p, 2)->str, "v");
    print_message("SET, WAIT 1 2500, GET with a 1 s I/O timeout: done after %.2f s\n",
                  (double)took / 1e9);
    assert_int_ge(took, 2400000000ull);
    cp_pipeline_free(p);
    /* The same with the caller's slot (the append's fast path): WAIT still holds its
     * connection's deadline. */
    unsigned slot = cp_keyslot("{w}k", 4);
    p = cp_pipeline_new(c);
    const char *wait[] = {"WAIT", "1", "1500"};
    assert_int_equal(cp_append_argv_slot(p, 3, wait, NULL, slot), 0);
    assert_int_equal(cp_append_argv_slot(p, 3, wait, NULL, slot), 0); /* memoised: the fast path */
    t0 = cp__now_ns();
    assert_int_equal(cp_exec(p), 0);
    took = cp__now_ns() - t0;
    for (size_t i = 0; i < 2; i++)
        if (cp_get_outcome(p, i) != CP_DONE)
            fail_msg("WAIT %zu by slot ended %d: %s", i, cp_get_outcome(p, i),
                     cp_pipeline_errstr(p));
    assert_int_ge(took, 2900000000ull); /* one after the other, on one connection */
    cp_pipeline_free(p);
    /* Answered: a silent node is cut after 1 s again (CLIENT PAUSE holds the SET). */
    int port = cp_topo_proc(f->topo, cp_fixture_master(f, slot <= 5460    ? 0
                                                          : slot <= 10922 ? 1
                                                                          : 2))
                   ->port;
    redisContext *hc = cp_fixture_conn(f, port);
    assert_non_null(hc);
    redisReply *rep = redisCommand(hc, "CLIENT PAUSE 4000 WRITE");
    assert_non_null(rep);
    freeReplyObject(rep);
    t0 = cp__now_ns();
    redisReply *r = cp_command(c, "SET {w}k v2");
    took = cp__now_ns() - t0;
    rep = redisCommand(hc, "CLIENT UNPAUSE");
    assert_non_null(rep);
    freeReplyObject(rep);
    assert_null(r);
    assert_int_equal(c->err, CP_ETIMEDOUT);
    print_message("then a SET held by CLIENT PAUSE: cut after %.2f s\n", (double)took / 1e9);
    assert_int_lt(took, 2500000000ull);
    cp_free(c);
}

/* Two BLPOP 1 of one slot through cp_append_argv_slot, twice: each time on a pool connection of
 * its own (the second append of a name takes a shortcut that used to drop the pool flag, so the
 * BLPOPs went one after the other on the command connection: 2 s). */
static void blpop_by_slot_runs_in_the_pool(void **state) {
    cp_fixture *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    const char *argv[3] = {"BLPOP", "{t}slotted", "1"};
    int slot = (int)cp_keyslot(argv[1], strlen(argv[1]));
    cp_pipeline *p = cp_pipeline_new(c);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(cp_append_argv_slot(p, 3, argv, NULL, slot), 0);
        assert_int_equal(cp_append_argv_slot(p, 3, argv, NULL, slot), 0);
        uint64_t t0 = cp__now_ns();
        assert_int_equal(cp_exec(p), 0);
        uint64_t took = cp__now_ns() - t0;
        for (size_t i = 0; i < 2; i++) {
            assert_int_equal(cp_get_outcome(p, i), CP_DONE);
            assert_int_equal(cp_reply(p, i)->type, REDIS_REPLY_NIL);
        }
        print_message("round %d: two BLPOP 1 by slot answered after %.2f s\n", round,
                      (double)took / 1e9);
        assert_int_lt(took, 1800000000ull); /* side by side, not one after the other */
        cp_pipeline_reset(p);
    }
    cp_pipeline_free(p);
    cp_free(c);
}

static void blpop_served_by_lpush(void **state) {
    cp_fixture *f = *state;
    cp_loop *l;
    cp_client *c = loop_client(f, 0, &l);
    answer bl = {0};
    assert_int_equal(cp_async_command(c, on_answer, &bl, "BLPOP {t}q 30"), 0);
    size_t m = master_of(f, "t");
    until_blocked(l, f, m, 1);
    push(f, "{t}q", "pushed");
    assert_true(turn_until(l, answered, &bl, 10000));
    assert_int_equal(bl.outcome, CP_DONE);
    assert_string_equal(bl.value, "pushed");
    cp_free(c);
    cp_loop_free(l);
}

static void pool_is_bounded(void **state) {
    cp_fixture *f = *state;
    cp_loop *l;
    cp_client *c = loop_client(f, 2, &l);
    size_t m = master_of(f, "t");
    answer bl[3];
    memset(bl, 0, sizeof(bl));
    for (int i = 0; i < 3; i++)
        assert_int_equal(cp_async_command(c, on_answer, &bl[i], "BLPOP {t}q%d 30", i), 0);
    until_blocked(l, f, m, 2);
    for (int i = 0; i < 50; i++) /* the third waits in the client, not on the server */
        assert_int_ge(cp_loop_run_once(l, 2), 0);
    assert_int_equal(info_field(f, m, "blocked_clients"), 2);
    push(f, "{t}q2", "third"); /* not on the server yet: it waits in the list */
    push(f, "{t}q0", "first");
    assert_true(turn_until(l, answered, &bl[0], 10000));
    assert_string_equal(bl[0].value, "first");
    assert_true(turn_until(l, answered, &bl[2], 10000)); /* it took the freed connection */
    assert_string_equal(bl[2].value, "third");
    assert_int_equal(bl[1].calls, 0);
    push(f, "{t}q1", "second");
    assert_true(turn_until(l, answered, &bl[1], 10000));
    assert_string_equal(bl[1].value, "second");
    for (int i = 0; i < 3; i++)
        assert_int_equal(bl[i].outcome, CP_DONE);
    cp_free(c);
    cp_loop_free(l);
}

static void blpop_through_migration(void **state) {
    cp_fixture *f = *state;
    cp_loop *l;
    cp_client *c = loop_client(f, 0, &l);
    size_t m0 = cp_fixture_master(f, 0), m1 = cp_fixture_master(f, 1);
    char tag[32], key[48];
    tag_of_slot(tag, 5460); /* master 0's highest: the one migrate_slots moves */
    snprintf(key, sizeof(key), "{%s}:list", tag);
    answer bl = {0};
    assert_int_equal(cp_async_command(c, on_answer, &bl, "BLPOP %s 30", key), 0);
    until_blocked(l, f, m0, 1);
    char err[512];
    if (cp_topo_migrate_slots(f->topo, m0, m1, 1, err, sizeof(err)) != 0)
        fail_msg("migrate: %s", err);
    until_blocked(l, f, m1, 1); /* MOVED: sent again to the new owner, waiting there */
    assert_int_equal(bl.calls, 0);
    push(f, key, "after-move");
    assert_true(turn_until(l, answered, &bl, 10000));
    assert_int_equal(bl.outcome, CP_DONE);
    assert_string_equal(bl.value, "after-move");
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_ge(st.moved, 1);
    cp_free(c);
    cp_loop_free(l);
}

static size_t replica_of(cp_fixture *f, size_t m) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_REPLICA &&
            cp_topo_proc(f->topo, i)->master == (int)m)
            return i;
    return SIZE_MAX;
}

static void blpop_through_failover(void **state) {
    cp_fixture *f = *state;
    cp_loop *l;
    cp_client *c = loop_client(f, 0, &l);
    size_t m0 = cp_fixture_master(f, 0), r0 = replica_of(f, m0);
    assert_int_not_equal(r0, SIZE_MAX);
    char tag[32], key[48];
    tag_of_slot(tag, 100);
    snprintf(key, sizeof(key), "{%s}:list", tag);
    answer bl = {0};
    assert_int_equal(cp_async_command(c, on_answer, &bl, "BLPOP %s 30", key), 0);
    until_blocked(l, f, m0, 1);
    char err[512];
    if (cp_topo_failover(f->topo, r0, err, sizeof(err)) != 0)
        fail_msg("failover: %s", err);
    /* the old master let it go (UNBLOCKED); it waits again on the promoted replica */
    until_blocked(l, f, r0, 1);
    assert_int_equal(bl.calls, 0);
    push(f, key, "after-failover");
    assert_true(turn_until(l, answered, &bl, 10000));
    assert_int_equal(bl.outcome, CP_DONE);
    assert_string_equal(bl.value, "after-failover");

    /* Now the new master is killed while another BLPOP waits on it: it was written, so it ends
     * unknown (it may have popped before the connection broke). */
    answer b2 = {0};
    assert_int_equal(cp_async_command(c, on_answer, &b2, "BLPOP %s 30", key), 0);
    until_blocked(l, f, r0, 1);
    assert_int_equal(cp_topo_kill(f->topo, r0, SIGKILL, err, sizeof(err)), 0);
    assert_true(turn_until(l, answered, &b2, 10000));
    assert_int_equal(b2.outcome, CP_UNKNOWN);
    cp_free(c);
    cp_loop_free(l);
}

static void free_cancels_blpop(void **state) {
    cp_fixture *f = *state;
    cp_loop *l;
    cp_client *c = loop_client(f, 0, &l);
    size_t m = master_of(f, "t");
    answer bl = {0};
    assert_int_equal(cp_async_command(c, on_answer, &bl, "BLPOP {t}never 0"), 0);
    until_blocked(l, f, m, 1);
    cp_free(c);
    assert_int_equal(bl.calls, 1);
    assert_int_equal(bl.outcome, CP_UNKNOWN); /* written: the client cannot know */
    assert_int_equal(bl.err, CP_ECANCELED);
    cp_loop_free(l);
    for (int i = 0; i < 200 && info_field(f, m, "blocked_clients") != 0; i++)
        cp__sleep_ms(5);
    assert_int_equal(info_field(f, m, "blocked_clients"), 0); /* its connection is gone */
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const char *only = getenv("CP_TEST_ONLY");
    if (only != NULL)
        cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(blpop_holds_back_nothing, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(blpop_longer_than_io_timeout,
                                        cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(wait_longer_than_io_timeout,
                                        cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(blpop_by_slot_runs_in_the_pool,
                                        cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(blpop_served_by_lpush, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(pool_is_bounded, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(blpop_through_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(free_cancels_blpop, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(blpop_through_failover, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
