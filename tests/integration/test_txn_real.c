/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Transactions on a real 3-master cluster (Debian's redis-server): MULTI ... EXEC goes to the
 * node of its keys' slot as one unit, through a pipeline and through the async API; keys in two
 * slots refuse the unit before anything is sent, as does a MULTI without its EXEC; after a
 * MOVED the unit is re-sent once to the new owner, unless a WATCH on the old connection guards
 * it (then it is handed back); a WATCH before a unit in the same batch routes it, or refuses it
 * when in another slot, and UNWATCH reaches every master; DISCARD ends a unit on its node as EXEC
 * does; and units of INCRs under live slot migration count every increment exactly once. The
 * issue's measurement (100 tags, pipelined) runs on 4 masters, as measured there; the rest on 3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"
#include "fixture.h"
#include "testutil.h"

#define TAGS 100

static int setup_cluster4(void **state) {
    *state = cp_fixture_cluster(4, 0);
    return *state == NULL ? -1 : 0;
}

/* An event-loop client of the fixture's cluster on a built-in loop of its own (*l). */
static cp_client *connect_async(cp_fixture *f, cp_loop **l) {
    cp_options opt = CP_OPTIONS_INIT;
    opt.seeds = f->endpoints;
    cp_test_protocol(&opt);
    cp_client *c = cp_client_new(&opt);
    *l = cp_loop_new();
    assert_non_null(c);
    assert_non_null(*l);
    assert_int_equal(cp_loop_attach(*l, c), 0);
    return c;
}

/* A hash tag whose slot is `slot`: "{tN}". */
static void tag_of_slot(int slot, char *tag, size_t len) {
    for (int i = 0;; i++) {
        snprintf(tag, len, "t%d", i);
        if ((int)cp_keyslot(tag, strlen(tag)) == slot)
            return;
    }
}

static void assert_status(const redisReply *r, const char *s) {
    assert_non_null(r);
    if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, s) != 0)
        fail_msg("want +%s, got type %d: %s", s, r->type, r->str ? r->str : "");
}

/* The unit's replies as a transaction that ran gives them: +OK, +QUEUED..., EXEC's array. */
static void assert_ran(const cp_pipeline *p, size_t at, size_t queued) {
    assert_status(cp_reply(p, at), "OK");
    for (size_t i = 1; i <= queued; i++) {
        assert_int_equal(cp_get_outcome(p, at + i), CP_DONE);
        assert_status(cp_reply(p, at + i), "QUEUED");
    }
    const redisReply *e = cp_reply(p, at + queued + 1);
    assert_int_equal(cp_get_outcome(p, at + queued + 1), CP_DONE);
    assert_non_null(e);
    assert_int_equal(e->type, REDIS_REPLY_ARRAY);
    assert_int_equal(e->elements, queued);
}

/* The measurement: MULTI; SET {t}x; SET {t}y; EXEC for 100 tags in one pipeline. Before
 * transactions were routed as units, most of them ran their SETs outside any transaction and
 * got an empty array from EXEC on another master. */
static void transactions_in_a_pipeline(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int t = 0; t < TAGS; t++) {
        assert_int_equal(cp_append(p, "MULTI"), 0);
        assert_int_equal(cp_append(p, "SET {tx%d}x %d", t, t), 0);
        assert_int_equal(cp_append(p, "SET {tx%d}y %d", t, t + 1), 0);
        assert_int_equal(cp_append(p, "EXEC"), 0);
    }
    assert_int_equal(cp_exec(p), 0);
    for (int t = 0; t < TAGS; t++)
        assert_ran(p, (size_t)t * 4, 2);
    cp_pipeline_free(p);
    redisReply *r = cp_command(c, "GET {tx%d}y", TAGS - 1);
    assert_non_null(r);
    assert_string_equal(r->str, "100");
    freeReplyObject(r);
    cp_free(c);
}

typedef struct answers {
    int n, bad;
    char why[256];
} answers;

static void on_answer(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    answers *a = data;
    a->n++;
    if (r->outcome != CP_DONE && a->bad++ == 0)
        snprintf(a->why, sizeof(a->why), "outcome %d: %s", r->outcome, r->errstr);
}

/* Every reply checked in order: +OK, +QUEUED, +QUEUED, [OK, OK] per unit. */
typedef struct unit_check {
    answers *a;
    int step; /* 0 MULTI, 1-2 SET, 3 EXEC */
} unit_check;

static void on_unit(cp_client *c, const cp_response *r, void *data) {
    unit_check *u = data;
    on_answer(c, r, u->a);
    const redisReply *x = r->reply;
    int ok = r->outcome == CP_DONE && x != NULL &&
             (u->step == 0  ? x->type == REDIS_REPLY_STATUS && strcmp(x->str, "OK") == 0
              : u->step < 3 ? x->type == REDIS_REPLY_STATUS && strcmp(x->str, "QUEUED") == 0
                            : x->type == REDIS_REPLY_ARRAY && x->elements == 2);
    if (!ok && u->a->bad++ == 0)
        snprintf(u->a->why, sizeof(u->a->why), "step %d: unexpected reply", u->step);
}

static void transactions_async(void **state) {
    cp_fixture *f = *state;
    cp_loop *l;
    cp_client *c = connect_async(f, &l);
    answers a = {0};
    unit_check u[TAGS][4];
    for (int t = 0; t < TAGS; t++) {
        for (int s = 0; s < 4; s++)
            u[t][s] = (unit_check){&a, s};
        assert_int_equal(cp_async_command(c, on_unit, &u[t][0], "MULTI"), 0);
        assert_int_equal(cp_async_command(c, on_unit, &u[t][1], "SET {ta%d}x %d", t, t), 0);
        assert_int_equal(cp_async_command(c, on_unit, &u[t][2], "SET {ta%d}y %d", t, t), 0);
        assert_int_equal(cp_async_command(c, on_unit, &u[t][3], "EXEC"), 0);
    }
    /* A unit left open at the end of the turn is refused: nothing of it runs. */
    assert_int_equal(cp_async_command(c, on_answer, &a, "MULTI"), 0);
    assert_int_equal(cp_async_command(c, on_answer, &a, "SET {open}k 1"), 0);
    for (int i = 0; i < 2000 && a.n < TAGS * 4 + 2; i++)
        assert_int_ge(cp_loop_run_once(l, 10), 0);
    assert_int_equal(a.n, TAGS * 4 + 2);
    assert_int_equal(a.bad, 2); /* the open unit's two commands, not executed */
    redisReply *r = cp_fixture_command(f, "CLUSTER COUNTKEYSINSLOT %u", cp_keyslot("open", 4));
    freeReplyObject(r);
    cp_free(c);
    cp_loop_free(l);
    c = cp_fixture_client(f, NULL);
    r = cp_command(c, "EXISTS {open}k");
    assert_non_null(r);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    r = cp_command(c, "GET {ta%d}y", TAGS - 1);
    assert_non_null(r);
    assert_int_equal(atoi(r->str), TAGS - 1);
    freeReplyObject(r);
    cp_free(c);
}

/* Keys in two slots, or a MULTI without EXEC: refused, nothing sent. */
static void refused_units(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append(p, "SET cross:a 1"), 0);
    assert_int_equal(cp_append(p, "SET cross:b 1"), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_append(p, "SET after 1"), 0); /* outside the unit: runs */
    assert_int_not_equal(cp_keyslot("cross:a", 7), cp_keyslot("cross:b", 7));
    assert_int_equal(cp_exec(p), CP_EPARTIAL);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(cp_get_outcome(p, i), CP_NOT_EXECUTED);
        assert_non_null(strstr(cp_reply(p, i)->str, "CROSSSLOT"));
    }
    assert_int_equal(cp_get_outcome(p, 4), CP_DONE);
    cp_pipeline_reset(p);
    assert_int_equal(cp_append(p, "GET after"), 0);
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append(p, "SET {u}k 1"), 0);
    assert_int_equal(cp_exec(p), CP_EPARTIAL);
    assert_int_equal(cp_get_outcome(p, 0), CP_DONE);
    assert_int_equal(cp_get_outcome(p, 1), CP_NOT_EXECUTED);
    assert_int_equal(cp_get_outcome(p, 2), CP_NOT_EXECUTED);
    cp_pipeline_free(p);
    redisReply *r = cp_command(c, "EXISTS cross:a");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    r = cp_command(c, "EXISTS {u}k");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    cp_free(c);
}

/* DISCARD ends a unit as EXEC does: it goes with the unit to its keys' node, which then drops
 * what was queued. Pipeline and async. */
static void discarded_units(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int t = 0; t < TAGS; t++) {
        assert_int_equal(cp_append(p, "MULTI"), 0);
        assert_int_equal(cp_append(p, "SET {td%d}x 1", t), 0);
        assert_int_equal(cp_append(p, "DISCARD"), 0);
        assert_int_equal(cp_append(p, "EXISTS {td%d}x", t), 0);
    }
    assert_int_equal(cp_exec(p), 0);
    for (int t = 0; t < TAGS; t++) {
        size_t at = (size_t)t * 4;
        assert_status(cp_reply(p, at), "OK");
        assert_status(cp_reply(p, at + 1), "QUEUED");
        assert_status(cp_reply(p, at + 2), "OK"); /* a DISCARD on a node with no MULTI errs */
        assert_int_equal(cp_reply(p, at + 3)->integer, 0);
    }
    cp_pipeline_free(p);
    cp_free(c);

    cp_loop *l;
    c = connect_async(f, &l);
    answers a = {0};
    for (int t = 0; t < TAGS; t++) {
        assert_int_equal(cp_async_command(c, on_answer, &a, "MULTI"), 0);
        assert_int_equal(cp_async_command(c, on_answer, &a, "SET {tda%d}x 1", t), 0);
        assert_int_equal(cp_async_command(c, on_answer, &a, "DISCARD"), 0);
    }
    for (int i = 0; i < 2000 && a.n < TAGS * 3; i++)
        assert_int_ge(cp_loop_run_once(l, 10), 0);
    assert_int_equal(a.n, TAGS * 3);
    if (a.bad != 0)
        fail_msg("%d of the async DISCARD units' commands did not run: %s", a.bad, a.why);
    cp_free(c);
    cp_loop_free(l);
    c = cp_fixture_client(f, NULL);
    for (int t = 0; t < TAGS; t++) {
        redisReply *r = cp_command(c, "EXISTS {tda%d}x", t);
        assert_non_null(r);
        assert_int_equal(r->integer, 0);
        freeReplyObject(r);
    }
    cp_free(c);
}

/* What a refused command's callback is told. */
typedef struct refusal {
    int n, not_executed, crossslot;
} refusal;

static void on_refused(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    refusal *x = data;
    x->n++;
    x->not_executed += r->outcome == CP_NOT_EXECUTED;
    x->crossslot +=
        (r->reply != NULL && r->reply->str != NULL && strstr(r->reply->str, "CROSSSLOT") != NULL) ||
        strstr(r->errstr, "CROSSSLOT") != NULL;
}

/* A WATCH guards only EXEC on its own connection, so in one batch the WATCHes before a unit count
 * among its keys: the unit goes to their node (a keyless one too), and is refused when they are
 * in another slot. UNWATCH reaches every master. The watches fire on the client's own SET: an
 * EXEC answered nil proves the unit ran on the WATCH's connection. */
static void watch_and_its_unit(void **state) {
    cp_fixture *f = *state;
    char a[16], b[16];
    tag_of_slot(8000, a, sizeof(a));  /* master 1 */
    tag_of_slot(16000, b, sizeof(b)); /* master 2: not slot 0's master, where keyless units go */
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "WATCH {%s}k", b), 0);
    assert_int_equal(cp_append(p, "SET {%s}k 1", b), 0); /* fires the watch */
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append(p, "PING"), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_status(cp_reply(p, 0), "OK");
    assert_status(cp_reply(p, 3), "QUEUED");
    assert_int_equal(cp_reply(p, 4)->type, REDIS_REPLY_NIL); /* on the WATCH's node: aborted */
    cp_pipeline_reset(p);

    assert_int_equal(cp_append(p, "WATCH {%s}k", a), 0);
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append(p, "SET {%s}k 2", b), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_exec(p), CP_EPARTIAL);
    assert_int_equal(cp_get_outcome(p, 0), CP_DONE); /* the WATCH itself ran */
    for (size_t i = 1; i < 4; i++) {
        assert_int_equal(cp_get_outcome(p, i), CP_NOT_EXECUTED);
        assert_non_null(strstr(cp_reply(p, i)->str, "CROSSSLOT"));
    }
    cp_pipeline_reset(p);

    /* Both masters watch, both watches fire, UNWATCH ends them: both units run. */
    assert_int_equal(cp_append(p, "WATCH {%s}k", a), 0);
    assert_int_equal(cp_append(p, "WATCH {%s}k", b), 0);
    assert_int_equal(cp_append(p, "SET {%s}k 3", a), 0);
    assert_int_equal(cp_append(p, "SET {%s}k 3", b), 0);
    assert_int_equal(cp_append(p, "UNWATCH"), 0);
    for (int u = 0; u < 2; u++) {
        assert_int_equal(cp_append(p, "MULTI"), 0);
        assert_int_equal(cp_append(p, "INCR {%s}k", u == 0 ? a : b), 0);
        assert_int_equal(cp_append(p, "EXEC"), 0);
    }
    assert_int_equal(cp_exec(p), 0);
    assert_status(cp_reply(p, 4), "OK");
    assert_ran(p, 5, 1);
    assert_ran(p, 8, 1);
    assert_int_equal(cp_reply(p, 7)->element[0]->integer, 4);
    cp_pipeline_free(p);
    cp_free(c);
}

/* Through the async API too, in one turn: a unit whose keys span slots is refused whole, nothing
 * sent, and so is one after a WATCH in another slot (the WATCH runs); the command after them
 * runs. */
static void refused_units_async(void **state) {
    cp_fixture *f = *state;
    char ta[16], tb[16];
    tag_of_slot(8000, ta, sizeof(ta));
    tag_of_slot(16000, tb, sizeof(tb));
    cp_loop *l;
    cp_client *c = connect_async(f, &l);
    refusal x = {0};
    answers a = {0};
    assert_int_equal(cp_async_command(c, on_refused, &x, "MULTI"), 0);
    assert_int_equal(cp_async_command(c, on_refused, &x, "SET cross:a 1"), 0);
    assert_int_equal(cp_async_command(c, on_refused, &x, "SET cross:b 1"), 0);
    assert_int_equal(cp_async_command(c, on_refused, &x, "EXEC"), 0);
    assert_int_equal(cp_async_command(c, on_answer, &a, "WATCH {%s}k", ta), 0);
    assert_int_equal(cp_async_command(c, on_refused, &x, "MULTI"), 0);
    assert_int_equal(cp_async_command(c, on_refused, &x, "SET {%s}k 5", tb), 0);
    assert_int_equal(cp_async_command(c, on_refused, &x, "EXEC"), 0);
    assert_int_equal(cp_async_command(c, on_answer, &a, "SET after:async 1"), 0);
    for (int i = 0; i < 2000 && (x.n < 7 || a.n < 2); i++)
        assert_int_ge(cp_loop_run_once(l, 10), 0);
    assert_int_equal(x.n, 7);
    assert_int_equal(x.not_executed, 7);
    assert_int_equal(x.crossslot, 7);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.bad, 0);
    cp_free(c);
    cp_loop_free(l);
    c = cp_fixture_client(f, NULL);
    static const char *const keys[] = {"cross:a", "cross:b"};
    for (size_t i = 0; i < 2; i++) {
        redisReply *r = cp_command(c, "EXISTS %s", keys[i]);
        assert_non_null(r);
        assert_int_equal(r->integer, 0);
        freeReplyObject(r);
    }
    cp_free(c);
}

/* Master 0's highest slot (the tag's) moves to master 1 behind the client's back; then the unit
 * MULTI; SET {tag}w 1; EXEC runs through p. */
static void move_then_unit(cp_fixture *f, cp_pipeline *p, const char *tag) {
    char err[512];
    if (cp_topo_migrate_slots(f->topo, cp_fixture_master(f, 0), cp_fixture_master(f, 1), 1, err,
                              sizeof(err)))
        fail_msg("migrate: %s", err);
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append(p, "SET {%s}w 1", tag), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_exec(p), 0);
}

/* A slot moves behind the client's back; a unit for it then meets MOVED on its queued command
 * and EXECABORT. After a WATCH answered on the old connection it is handed back as the server
 * answered (that WATCH does not hold on the other node); unwatched, it is re-sent to the new
 * owner and runs there. */
static void unit_after_moved(void **state) {
    cp_fixture *f = *state;
    char tag[16], err[512];
    tag_of_slot(5460, tag, sizeof(tag));
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "WATCH {%s}w", tag), 0);
    assert_int_equal(cp_append(p, "SET {%s}before 1", tag), 0);
    assert_int_equal(cp_exec(p), 0); /* the map is read; WATCH holds on master 0's connection */
    cp_pipeline_reset(p);
    move_then_unit(f, p, tag);
    const redisReply *e = cp_reply(p, 2);
    assert_int_equal(e->type, REDIS_REPLY_ERROR); /* handed back: EXECABORT */
    assert_non_null(strstr(e->str, "EXECABORT"));
    assert_non_null(strstr(cp_reply(p, 1)->str, "MOVED"));
    cp_pipeline_reset(p);

    /* Without a WATCH: slot 5459 (master 0's highest now) moves to master 2 behind the client's
     * back; its unit meets MOVED, is re-sent to master 2 and runs there, once. */
    char tag2[16];
    tag_of_slot(5459, tag2, sizeof(tag2));
    assert_int_equal(cp_refresh(c), 0); /* the first MOVED's refresh, done before the move */
    cp_stats before, st;
    cp_get_stats(c, &before);
    if (cp_topo_migrate_slots(f->topo, cp_fixture_master(f, 0), cp_fixture_master(f, 2), 1, err,
                              sizeof(err)))
        fail_msg("migrate: %s", err);
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append(p, "INCR {%s}n", tag2), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_ran(p, 0, 1);
    assert_int_equal(cp_reply(p, 2)->element[0]->integer, 1);
    cp_get_stats(c, &st);
    assert_int_equal(st.moved, before.moved + 1); /* INCR's MOVED; EXEC answered EXECABORT */
    cp_pipeline_free(p);
    redisReply *r = cp_command(c, "GET {%s}n", tag2);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    r = cp_command(c, "EXISTS {%s}w", tag);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    cp_free(c);
}

/* UNWATCH's answers end the WATCH mark on its node: a unit there that meets MOVED afterwards is
 * re-sent to the new owner and runs, as an unwatched one does (not handed back). */
static void unit_after_unwatch(void **state) {
    cp_fixture *f = *state;
    char tag[16];
    tag_of_slot(5460, tag, sizeof(tag));
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "WATCH {%s}w", tag), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_reset(p);
    assert_int_equal(cp_append(p, "UNWATCH"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_status(cp_reply(p, 0), "OK");
    cp_pipeline_reset(p);
    move_then_unit(f, p, tag);
    assert_ran(p, 0, 1);
    cp_pipeline_free(p);
    redisReply *r = cp_command(c, "GET {%s}w", tag);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    cp_free(c);
}

/* Units of two INCRs on tags in the migrating slots while 250 slots move back and forth: every
 * EXEC that answered its array counted both increments, and the servers hold exactly that. */
typedef struct migrator {
    cp_fixture *f;
    atomic_int stop, rounds;
    char err[512];
} migrator;

static void *migrate(void *arg) {
    migrator *m = arg;
    size_t m0 = cp_fixture_master(m->f, 0), m1 = cp_fixture_master(m->f, 1);
    for (int round = 0; round < 4 && !atomic_load(&m->stop); round++) {
        int rc = round % 2 == 0
                     ? cp_topo_migrate_slots(m->f->topo, m0, m1, 250, m->err, sizeof(m->err))
                     : cp_topo_migrate_slots(m->f->topo, m1, m0, 250, m->err, sizeof(m->err));
        if (rc != 0)
            break;
        atomic_fetch_add(&m->rounds, 1);
    }
    atomic_store(&m->stop, 1);
    return NULL;
}

#define HOT 20

static void units_through_migration(void **state) {
    cp_fixture *f = *state;
    char tags[HOT][16];
    for (int i = 0; i < HOT; i++)
        tag_of_slot(5211 + i * 12, tags[i], sizeof(tags[i]));
    cp_client *c = cp_fixture_client(f, NULL);
    migrator m = {.f = f};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, migrate, &m), 0);
    long acked[HOT] = {0}, ran = 0, aborted = 0, other = 0;
    cp_pipeline *p = cp_pipeline_new(c);
    while (!atomic_load(&m.stop)) {
        cp_pipeline_reset(p);
        for (int i = 0; i < HOT; i++) {
            cp_append(p, "MULTI");
            cp_append(p, "INCR {%s}a", tags[i]);
            cp_append(p, "INCR {%s}b", tags[i]);
            cp_append(p, "EXEC");
        }
        cp_exec(p);
        for (int i = 0; i < HOT; i++) {
            size_t e = (size_t)i * 4 + 3;
            const redisReply *r = cp_reply(p, e);
            if (cp_get_outcome(p, e) == CP_DONE && r->type == REDIS_REPLY_ARRAY &&
                r->elements == 2) {
                acked[i]++;
                ran++;
            } else if (cp_get_outcome(p, e) == CP_DONE && r->type == REDIS_REPLY_ERROR) {
                aborted++; /* nothing ran: e.g. redirected twice within the unit */
            } else {
                other++;
                print_message("unit %d: outcome %d, reply type %d %s\n", i, cp_get_outcome(p, e),
                              r ? r->type : -1, r && r->str ? r->str : "");
            }
        }
    }
    pthread_join(th, NULL);
    cp_pipeline_free(p);
    if (atomic_load(&m.rounds) != 4)
        fail_msg("migration: %s", m.err);
    cp_stats st;
    cp_get_stats(c, &st);
    print_message("units: %ld ran, %ld handed back; moved %llu, ask %llu\n", ran, aborted,
                  (unsigned long long)st.moved, (unsigned long long)st.ask);
    assert_int_equal(other, 0);
    assert_int_gt(ran, 100);
    assert_int_gt(st.moved + st.ask, 0);
    for (int i = 0; i < HOT; i++) {
        redisReply *a = cp_command(c, "GET {%s}a", tags[i]);
        redisReply *b = cp_command(c, "GET {%s}b", tags[i]);
        long va = a->type == REDIS_REPLY_STRING ? atol(a->str) : 0;
        long vb = b->type == REDIS_REPLY_STRING ? atol(b->str) : 0;
        assert_int_equal(va, acked[i]);
        assert_int_equal(vb, acked[i]);
        freeReplyObject(a);
        freeReplyObject(b);
    }
    cp_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(transactions_in_a_pipeline, setup_cluster4,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(transactions_async, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(refused_units, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(discarded_units, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(refused_units_async, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(watch_and_its_unit, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(unit_after_moved, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(unit_after_unwatch, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(units_through_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
