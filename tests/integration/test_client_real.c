/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client against real servers (Debian's redis-server and nutcracker on free loopback ports):
 * a 3-master cluster (routing by slot, slots given by the caller, MOVED after a live slot
 * migration, ASK during one, AUTH with a password and with an ACL user, the commands that would
 * change a shared connection refused: no master ever runs one, and GETs keep their answers) and
 * one nutcracker in front of 2 redis-servers (the same calls in endpoint mode). Each test has its
 * own topology, stopped by PID in its teardown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "testutil.h"
#include "refused.h"

static cp_client *connect_seeds(const char *seeds, const char *user, const char *pass) {
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.username = user;
    o.password = pass;
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    return c;
}

/* Index in f->topo of the master listening on port. */
static size_t proc_at(cp_fixture *f, int port) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->port == port)
            return i;
    fail_msg("no process on port %d", port);
    return 0;
}

static void routes_by_slot(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_seeds(f->endpoints, NULL, NULL);
    assert_int_equal(c->err, 0);
    assert_int_equal(cp_is_cluster(c), 1);
    for (int i = 0; i < 300; i++) {
        redisReply *r = cp_command(c, "SET key:%d v%d", i, i);
        assert_non_null(r);
        assert_string_equal(r->str, "OK");
        freeReplyObject(r);
    }
    for (int i = 0; i < 300; i++) {
        redisReply *r = cp_command(c, "GET key:%d", i);
        char want[16];
        snprintf(want, sizeof(want), "v%d", i);
        assert_non_null(r);
        assert_string_equal(r->str, want);
        freeReplyObject(r);
    }
    /* Routed by slot from the start: no server had to redirect anything. */
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_equal(st.moved, 0);
    assert_int_equal(st.ask, 0);
    /* Keys really are spread: every master holds some. */
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        redisReply *r = redisCommand(cp_fixture_conn(f, cp_topo_proc(f->topo, i)->port), "DBSIZE");
        assert_non_null(r);
        assert_int_gt(r->integer, 50);
        freeReplyObject(r);
    }
    /* An error reply is a reply, not a failure. */
    redisReply *r = cp_command(c, "INCR key:1");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    cp_free(c);
}

/* Slots the caller computed (cp_append_argv_slot): right ones route with no redirect; wrong
 * ones (the opposite half of the slot space, another master for most keys) still get every
 * right value, through the MOVED replies of the masters they were sent to. */
static void slot_hints_real(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_seeds(f->endpoints, NULL, NULL);
    assert_int_equal(c->err, 0);
    cp_pipeline *p = cp_pipeline_new(c);
    char keys[300][16];
    for (int i = 0; i < 300; i++) {
        snprintf(keys[i], sizeof(keys[i]), "hint:%d", i);
        assert_int_equal(cp_append(p, "SET %s v%d", keys[i], i), 0);
    }
    assert_int_equal(cp_exec(p), 0);
    for (int wrong = 0; wrong <= 1; wrong++) {
        cp_stats before, after;
        cp_get_stats(c, &before);
        cp_pipeline_reset(p);
        for (int i = 0; i < 300; i++) {
            const char *argv[2] = {"GET", keys[i]};
            unsigned slot = cp_keyslot(keys[i], strlen(keys[i]));
            assert_int_equal(cp_append_argv_slot(p, 2, argv, NULL, wrong ? slot ^ 0x2000 : slot),
                             0);
        }
        assert_int_equal(cp_exec(p), 0);
        for (int i = 0; i < 300; i++) {
            char want[16];
            snprintf(want, sizeof(want), "v%d", i);
            assert_int_equal(cp_get_outcome(p, (size_t)i), CP_DONE);
            assert_string_equal(cp_reply(p, (size_t)i)->str, want);
        }
        cp_get_stats(c, &after);
        if (wrong)
            assert_int_ge(after.moved - before.moved, 100);
        else
            assert_int_equal(after.moved, before.moved);
    }
    cp_pipeline_free(p);
    cp_free(c);
}

/* The client's map is taken before 200 slots move; its next commands on those slots are
 * answered MOVED, followed, and the map is re-read in-band once (not once per MOVED). */
static void follows_moved_after_migration(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_seeds(f->endpoints, NULL, NULL);
    assert_int_equal(c->err, 0);
    cp_stats st;
    cp_get_stats(c, &st);
    uint64_t refreshes = st.refreshes; /* the connect's */
    /* migrate_slots moves the top of master 0's range (0..5460) first: 5261..5460. */
    char err[512];
    int p0 = cp_topo_proc(f->topo, 0)->port;
    assert_int_equal(cp_topo_migrate_slots(f->topo, proc_at(f, p0), 1, 200, err, sizeof(err)), 0);
    cp_pipeline *p = cp_pipeline_new(c);
    int n = 0;
    for (int i = 0; n < 50; i++) {
        char k[32];
        snprintf(k, sizeof(k), "m:%d", i);
        unsigned s = cp_keyslot(k, strlen(k));
        if (s >= 5461 - 200 && s <= 5460) {
            assert_int_equal(cp_append(p, "SET %s %s", k, k), 0);
            n++;
        }
    }
    assert_int_equal(cp_exec(p), 0);
    cp_get_stats(c, &st);
    assert_int_ge(st.moved, 1);
    struct timespec spacing = {0, 80 * 1000000L}; /* past the 50 ms between refreshes */
    nanosleep(&spacing, NULL);
    cp_pipeline_reset(p);
    assert_int_equal(cp_append(p, "GET m:0"), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_get_stats(c, &st);
    assert_int_equal(st.refreshes, refreshes + 1);
    /* After the refresh, no more redirects for the moved slots. */
    uint64_t moved = st.moved;
    cp_pipeline_reset(p);
    for (int i = 0; i < 200; i++)
        assert_int_equal(cp_append(p, "GET m:%d", i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_get_stats(c, &st);
    assert_int_equal(st.moved, moved);
    cp_pipeline_free(p);
    cp_free(c);
}

/* A slot half-way through migration (MIGRATING on the source, IMPORTING on the target) with the
 * key already on the target: the source answers ASK, the client sends ASKING + the command. */
static void follows_ask_during_migration(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_seeds(f->endpoints, NULL, NULL);
    assert_int_equal(c->err, 0);
    const char *key = "foo"; /* slot 12182: master 2 */
    const cp_proc *src = cp_topo_proc(f->topo, 2), *dst = cp_topo_proc(f->topo, 0);
    redisContext *s = cp_fixture_conn(f, src->port), *d = cp_fixture_conn(f, dst->port);
    freeReplyObject(redisCommand(s, "SET foo before"));
    freeReplyObject(redisCommand(d, "CLUSTER SETSLOT 12182 IMPORTING %s", src->id));
    freeReplyObject(redisCommand(s, "CLUSTER SETSLOT 12182 MIGRATING %s", dst->id));
    redisReply *r = redisCommand(s, "MIGRATE 127.0.0.1 %d foo 0 5000", dst->port);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    r = cp_command(c, "GET %s", key);
    assert_non_null(r);
    assert_string_equal(r->str, "before");
    freeReplyObject(r);
    r = cp_command(c, "SET %s after", key);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_equal(st.ask, 2);
    assert_int_equal(st.moved, 0);
    /* The target really got it. */
    r = redisCommand(d, "ASKING");
    freeReplyObject(r);
    r = redisCommand(d, "GET foo");
    assert_string_equal(r->str, "after");
    freeReplyObject(r);
    /* Finish the migration so teardown sees a healthy cluster. */
    freeReplyObject(redisCommand(d, "CLUSTER SETSLOT 12182 NODE %s", dst->id));
    freeReplyObject(redisCommand(s, "CLUSTER SETSLOT 12182 NODE %s", dst->id));
    cp_free(c);
}

static int setup_cluster_password(void **state) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_CLUSTER;
    o.shards = 3;
    o.password = "pw-cluster";
    *state = cp_fixture_start(&o);
    return *state ? 0 : -1;
}

/* The name INFO commandstats gives cmd's calls ("cmdstat_select:", "cmdstat_client|reply:"). */
static void stat_name(const char *cmd, char *out, size_t len) {
    size_t n = snprintf(out, len, "cmdstat_");
    for (const char *p = cmd; *p != '\0' && n + 2 < len; p++) {
        if (*p == ' ' && strncasecmp(cmd, "CLIENT ", 7) != 0)
            break;
        if (*p == ' ' && strchr(out + 8, '|') != NULL)
            break;
        out[n++] = *p == ' ' ? '|' : (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    }
    snprintf(out + n, len - n, ":");
}

static void refusals_on_a_real_cluster(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_seeds(f->endpoints, NULL, NULL);
    assert_int_equal(c->err, 0);
    redisReply *r = cp_command(c, "SET rk rv");
    assert_string_equal(r->str, "OK");
    cp_reply_free(r);
    cp_reply_free(cp_command_all(c, "CONFIG RESETSTAT"));
    for (size_t i = 0; i < NREFUSED; i++) {
        c->err = 0;
        assert_null(cp_command(c, refused[i].cmd));
        assert_int_equal(c->err, CP_EINVAL);
        if (strstr(c->errstr, refused[i].word) == NULL)
            fail_msg("\"%s\": the message \"%s\" does not name %s", refused[i].cmd, c->errstr,
                     refused[i].word);
        r = cp_command(c, "GET rk"); /* the connection answers as before */
        assert_non_null(r);
        assert_string_equal(r->str, "rv");
        cp_reply_free(r);
    }
    r = cp_command(c, "GET rk"); /* SELECT 1 ran nowhere: still database 0 */
    assert_string_equal(r->str, "rv");
    cp_reply_free(r);
    r = cp_command_all(c, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    for (size_t i = 0; i < NREFUSED; i++) {
        char name[64];
        stat_name(refused[i].cmd, name, sizeof(name));
        for (size_t m = 0; m < r->elements; m++)
            if (strstr(r->element[m]->str, name) != NULL)
                fail_msg("a master ran %s (%s)", refused[i].cmd, name);
    }
    int gets = 0; /* the stats are read right: the GETs are in them */
    for (size_t m = 0; m < r->elements; m++)
        gets += strstr(r->element[m]->str, "cmdstat_get:calls=") != NULL;
    assert_int_equal(gets, 1);
    cp_reply_free(r);
    cp_free(c);
}

static void auth_password_and_acl_user(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_seeds(f->endpoints, NULL, NULL);
    assert_int_equal(c->err, CP_EAUTH);
    assert_non_null(strstr(c->errstr, "NOAUTH"));
    cp_free(c);
    c = connect_seeds(f->endpoints, NULL, "wrong");
    assert_int_equal(c->err, CP_EAUTH);
    cp_free(c);
    c = connect_seeds(f->endpoints, NULL, "pw-cluster");
    assert_int_equal(c->err, 0);
    redisReply *r = cp_command(c, "SET acl:key 1");
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    cp_free(c);
    /* An ACL user that may run commands and read the topology, on every node. */
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        r = redisCommand(cp_fixture_conn(f, cp_topo_proc(f->topo, i)->port),
                         "ACL SETUSER bench on >pw-bench ~* &* +@all");
        assert_non_null(r);
        assert_string_equal(r->str, "OK");
        freeReplyObject(r);
    }
    c = connect_seeds(f->endpoints, "bench", "pw-wrong");
    assert_int_equal(c->err, CP_EAUTH);
    assert_non_null(strstr(c->errstr, "WRONGPASS"));
    cp_free(c);
    c = connect_seeds(f->endpoints, "bench", "pw-bench");
    assert_int_equal(c->err, 0);
    r = cp_command(c, "GET acl:key");
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    r = cp_command(c, "ACL WHOAMI");
    assert_string_equal(r->str, "bench");
    freeReplyObject(r);
    cp_free(c);
}

/* Async answers of split commands, as text: an array's elements joined by spaces. */
typedef struct split_seen {
    int n;
    char text[2][64];
} split_seen;

static void on_split_mget(cp_client *c, const cp_response *r, void *data) {
    split_seen *s = data;
    (void)c;
    assert_int_equal(r->outcome, CP_DONE);
    char *t = s->text[s->n++];
    size_t len = 0;
    if (r->reply->type == REDIS_REPLY_INTEGER)
        snprintf(t, 64, "%lld", r->reply->integer);
    for (size_t i = 0; r->reply->type == REDIS_REPLY_ARRAY && i < r->reply->elements; i++) {
        const redisReply *e = r->reply->element[i];
        len += (size_t)snprintf(t + len, 64 - len, "%s%s", i ? " " : "",
                                e->type == REDIS_REPLY_NIL ? "(nil)" : e->str);
    }
}

/* CP_OPT_SPLIT_MULTIKEY on a real cluster: MSET/MGET/DEL across slots and masters, through
 * pipelines and async commands. */
static void split_multikey_real(void **state) {
    cp_fixture *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints; /* for the event-loop client below (cp_fixture_client sets its own) */
    o.flags = CP_OPT_SPLIT_MULTIKEY;
    cp_client *c = cp_fixture_client(f, &o);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "MSET a 1 b 2 c 3 d 4 e 5 {a}x 6"), 0);
    assert_int_equal(cp_append(p, "MGET e d c b a {a}x nope"), 0);
    assert_int_equal(cp_append(p, "DEL a b c nope"), 0);
    assert_int_equal(cp_append(p, "EXISTS a b c d e"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_string_equal(cp_reply(p, 0)->str, "OK");
    const redisReply *m = cp_reply(p, 1);
    assert_int_equal(m->elements, 7);
    const char *want[] = {"5", "4", "3", "2", "1", "6"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(m->element[i]->str, want[i]);
    assert_int_equal(m->element[6]->type, REDIS_REPLY_NIL);
    assert_int_equal(cp_reply(p, 2)->integer, 3);
    assert_int_equal(cp_reply(p, 3)->integer, 2);
    cp_pipeline_free(p);
    cp_free(c);

    /* The same split through the async API, on the built-in loop. */
    cp_loop *l = cp_loop_new();
    cp_test_protocol(&o);
    cp_client *a = cp_client_new(&o);
    assert_int_equal(a->err, 0);
    assert_int_equal(cp_loop_attach(l, a), 0);
    split_seen seen = {0, {{0}}};
    assert_int_equal(cp_async_command(a, on_split_mget, &seen, "MGET e d {a}x a nope"), 0);
    assert_int_equal(cp_async_command(a, on_split_mget, &seen, "EXISTS a b c d e"), 0);
    assert_int_equal(cp_loop_run(l), 0);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.text[0], "5 4 6 (nil) (nil)"); /* a was deleted above */
    assert_string_equal(seen.text[1], "2");
    cp_free(a);
    cp_loop_free(l);
}

/* Endpoint mode through nutcracker: the same pipeline calls, replies in order. nutcracker speaks
 * RESP2 only: under RESP3 the client refuses it clearly (HELLO 3 closes the connection), and the
 * pipeline runs with protocol 2, as a program talking to twemproxy must ask. */
static void twemproxy_endpoint(void **state) {
    cp_fixture *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = f->endpoints;
    o.protocol = 3;
    cp_client *c = cp_connect(&o);
    assert_int_equal(c->err, CP_EPROTO);
    assert_contains(c->errstr, "HELLO 3 refused by");
    assert_contains(c->errstr, "twemproxy does not");
    cp_free(c);
    o.protocol = 2;
    c = cp_connect(&o);
    assert_int_equal(c->err, 0);
    assert_int_equal(cp_is_cluster(c), 0);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < 2000; i++)
        assert_int_equal(cp_append(p, "SET tw:%d val:%d", i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_reset(p);
    for (int i = 1999; i >= 0; i--)
        assert_int_equal(cp_append(p, "GET tw:%d", i), 0);
    assert_int_equal(cp_exec(p), 0);
    for (int i = 0; i < 2000; i++) {
        char want[32];
        snprintf(want, sizeof(want), "val:%d", 1999 - i);
        assert_int_equal(cp_get_outcome(p, (size_t)i), CP_DONE);
        assert_string_equal(cp_reply(p, (size_t)i)->str, want);
    }
    cp_pipeline_free(p);
    /* nutcracker spread the keys over both servers. */
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role != CP_ROLE_SHARD)
            continue;
        redisReply *r = redisCommand(cp_fixture_conn(f, pr->port), "DBSIZE");
        assert_int_gt(r->integer, 500);
        freeReplyObject(r);
    }
    cp_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(routes_by_slot, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(slot_hints_real, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(follows_moved_after_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(follows_ask_during_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(split_multikey_real, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(refusals_on_a_real_cluster,
                                        cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(auth_password_and_acl_user, setup_cluster_password,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(twemproxy_endpoint, cp_fixture_setup_twemproxy2,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
