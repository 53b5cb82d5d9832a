/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scripts (clusterpipe/script.h) against scripted fake nodes: EVALSHA first; a NOSCRIPT answer
 * sends the same command again as EVAL to the node that answered, once (a second NOSCRIPT is the
 * outcome); the slot's later commands of the batch run after that EVAL, other slots' do not
 * wait; after a MOVED the EVAL goes to the new owner; inside MULTI the script goes as EVAL from
 * the start; the blocking and async forms; a single endpoint; refusals. The fake nodes know no
 * EVAL: rules answer it and EVALSHA, and the nodes' logs show what was sent, in which order.
 * The same behaviour on a real cluster: tests/integration/test_script_real.c.
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
#include "util/clock.h"

#define BODY "return redis.call('SET', KEYS[1], ARGV[1])"
#define SHA "d8f2fad9f8e86a53d2a6ebd960b33c4972cacc37" /* sha1sum of BODY */
#define NOSCRIPT "-NOSCRIPT No matching script. Please use EVAL.\r\n"

static const char *script_args[] = {"sk", "v1"};

/* The log lines of the script's two forms, as the fake node writes them (arguments over 64
 * bytes are cut: the body is shorter). */
static const char evalsha_line[] = "EVALSHA " SHA " 1 sk v1";
static const char eval_line[] = "EVAL " BODY " 1 sk v1";

static cp_script *new_script(void) {
    cp_script *s = cp_script_new(BODY, strlen(BODY));
    assert_non_null(s);
    assert_string_equal(cp_script_sha(s), SHA);
    return s;
}

static uint64_t noscripts(cp_client *c) {
    cp_script_stats st;
    cp_get_script_stats(c, &st);
    return st.noscript;
}

/* Prints a node's log (a failed order check shows what was sent). */
static void print_log(fake_node *n) {
    for (size_t j = 0; j < fake_node_log_len(n); j++) {
        char entry[160];
        fake_node_log(n, j, entry, sizeof(entry));
        print_message("log %zu: %s\n", j, entry);
    }
}

static void assert_status(const redisReply *r, const char *want) {
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->str, want);
}

static void noscript_then_eval(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, 5000, 0);
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, 1, FAKE_REPLY, NOSCRIPT);
    fakeset_rule(f->node[0], "EVAL", NULL, 0, 1, FAKE_REPLY, "+ran\r\n");
    cp_script *s = new_script();
    assert_int_equal(cp_append_script(f->p, s, 1, 2, script_args, NULL), 0);
    cp_script_free(s); /* the pipeline keeps both forms */
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_equal(cp_get_outcome(f->p, 0), CP_DONE);
    assert_status(cp_reply(f->p, 0), "ran");
    assert_int_equal(fake_node_count(f->node[0], "EVALSHA"), 1);
    assert_int_equal(fake_node_count(f->node[0], "EVAL"), 1);
    long a = fake_node_log_find(f->node[0], 0, evalsha_line);
    long b = fake_node_log_find(f->node[0], 0, eval_line);
    if (a < 0 || b < a)
        print_log(f->node[0]);
    assert_int_ge(a, 0);
    assert_int_gt(b, a);
    assert_int_equal(noscripts(f->c), 1);
}

/* The script known: EVALSHA answers, nothing else is sent. */
static void evalsha_answers(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, 5000, 0);
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, 1, FAKE_REPLY, "+ran\r\n");
    cp_script *s = new_script();
    assert_int_equal(cp_append_script(f->p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_exec(f->p), 0);
    assert_status(cp_reply(f->p, 0), "ran");
    assert_int_equal(fake_node_count(f->node[0], "EVAL"), 0);
    assert_int_equal(noscripts(f->c), 0);
    cp_script_free(s);
}

/* The EVAL answered NOSCRIPT too (never from a real server): no third send, that reply is the
 * outcome. */
static void noscript_twice_is_the_outcome(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, 5000, 0);
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, -1, FAKE_REPLY, NOSCRIPT);
    fakeset_rule(f->node[0], "EVAL", NULL, 0, -1, FAKE_REPLY, NOSCRIPT);
    cp_script *s = new_script();
    assert_int_equal(cp_append_script(f->p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_exec(f->p), 0);
    assert_int_equal(cp_get_outcome(f->p, 0), CP_DONE);
    const redisReply *r = cp_reply(f->p, 0);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_contains(r->str, "NOSCRIPT");
    assert_int_equal(fake_node_count(f->node[0], "EVALSHA"), 1);
    assert_int_equal(fake_node_count(f->node[0], "EVAL"), 1);
    assert_int_equal(noscripts(f->c), 1);
    cp_script_free(s);
}

/* [script on sk (NOSCRIPT), GET sk, GET of another slot, SET sk]: the node runs the EVAL before
 * GET sk and SET sk, which wait for the EVALSHA's answer; without that wait they went in the same
 * write as the EVALSHA and ran before the script. */
static void later_commands_of_the_slot_wait(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, 5000, 0);
    fakeset_put(f, 0, "sk", "old");
    assert_int_not_equal(cp_keyslot("sk", 2), cp_keyslot("other", 5));
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, 1, FAKE_REPLY, NOSCRIPT);
    fakeset_rule(f->node[0], "EVAL", NULL, 0, 1, FAKE_REPLY, "+ran\r\n");
    cp_script *s = new_script();
    assert_int_equal(cp_append_script(f->p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_append(f->p, "GET sk"), 0);
    assert_int_equal(cp_append(f->p, "GET other"), 0);
    assert_int_equal(cp_append(f->p, "SET sk v2"), 0);
    assert_int_equal(cp_exec(f->p), 0);
    assert_status(cp_reply(f->p, 0), "ran");
    fakeset_assert_str(f->p, 1, "old"); /* the fake's EVAL sets nothing: the order is the log's */
    assert_int_equal(cp_get_outcome(f->p, 2), CP_DONE);
    assert_status(cp_reply(f->p, 3), "OK");
    long eval = fake_node_log_find(f->node[0], 0, eval_line);
    long get = fake_node_log_find(f->node[0], 0, "GET sk");
    long set = fake_node_log_find(f->node[0], 0, "SET sk v2");
    long sha = fake_node_log_find(f->node[0], 0, evalsha_line);
    long other = fake_node_log_find(f->node[0], 0, "GET other");
    if (eval < 0 || get < eval || set < get)
        print_log(f->node[0]);
    assert_int_gt(eval, sha);
    assert_int_gt(get, eval);
    assert_int_gt(set, get);
    assert_int_gt(other, sha);  /* another slot's command went out with the EVALSHA: */
    assert_int_lt(other, eval); /* it never waited for the script's answer */
    assert_int_equal(noscripts(f->c), 1);
    cp_script_free(s);
}

/* EVALSHA answered MOVED by node 0 and NOSCRIPT by node 1, the slot's new owner: the EVAL goes
 * to node 1. */
static void eval_goes_to_the_new_owner(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, 5000, 0);
    int s5 = (int)cp_keyslot("sk", 2);
    int start[3] = {0, s5, s5 + 1}, end[3] = {s5 - 1, s5, 16383};
    int ports[3] = {f->port[0], f->port[1], f->port[0]};
    char shards[2048];
    assert_int_gt(fake_cluster_shards(shards, sizeof(shards), 3, start, end, ports), 0);
    for (int i = 0; i < 2; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", shards);
    char moved[128];
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, -1, FAKE_REPLY,
                 fakeset_redirect(moved, "MOVED", "sk", f->port[1]));
    fakeset_rule(f->node[1], "EVALSHA", NULL, 0, 1, FAKE_REPLY, NOSCRIPT);
    fakeset_rule(f->node[1], "EVAL", NULL, 0, 1, FAKE_REPLY, "+ran\r\n");
    cp_script *s = new_script();
    assert_int_equal(cp_append_script(f->p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_append(f->p, "SET sk v2"), 0);
    assert_int_equal(cp_exec(f->p), 0);
    assert_status(cp_reply(f->p, 0), "ran");
    assert_status(cp_reply(f->p, 1), "OK");
    assert_int_equal(fake_node_count(f->node[0], "EVAL"), 0);
    assert_int_equal(fake_node_count(f->node[1], "EVALSHA"), 1);
    assert_int_equal(fake_node_count(f->node[1], "EVAL"), 1);
    long eval = fake_node_log_find(f->node[1], 0, eval_line);
    long set = fake_node_log_find(f->node[1], 0, "SET sk v2");
    if (eval < 0 || set < eval)
        print_log(f->node[1]);
    assert_int_ge(eval, 0);
    assert_int_gt(set, eval);
    assert_int_equal(noscripts(f->c), 1);
    cp_script_free(s);
}

/* Inside MULTI ... EXEC the script goes as EVAL: the node never sees the EVALSHA. */
static void transaction_sends_eval(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, 5000, 0);
    fakeset_rule(f->node[0], "MULTI", NULL, 0, 1, FAKE_REPLY, "+OK\r\n");
    fakeset_rule(f->node[0], "EVAL", NULL, 0, 1, FAKE_REPLY, "+QUEUED\r\n");
    fakeset_rule(f->node[0], "EXEC", NULL, 0, 1, FAKE_REPLY, "*1\r\n+ran\r\n");
    cp_script *s = new_script();
    assert_int_equal(cp_append(f->p, "MULTI"), 0);
    assert_int_equal(cp_append_script(f->p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_append(f->p, "EXEC"), 0);
    /* After the unit, EVALSHA again. */
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, 1, FAKE_REPLY, "+again\r\n");
    assert_int_equal(cp_append_script(f->p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_exec(f->p), 0);
    assert_status(cp_reply(f->p, 1), "QUEUED");
    const redisReply *r = cp_reply(f->p, 2);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_status(r->element[0], "ran");
    assert_status(cp_reply(f->p, 3), "again");
    assert_int_ge(fake_node_log_find(f->node[0], 0, eval_line), 0);
    assert_int_equal(fake_node_count(f->node[0], "EVALSHA"), 1);
    assert_int_equal(fake_node_count(f->node[0], "EVAL"), 1);
    assert_int_equal(noscripts(f->c), 0);
    cp_script_free(s);
}

static void blocking_form(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 5000, 5000, 0);
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, 1, FAKE_REPLY, NOSCRIPT);
    fakeset_rule(f->node[0], "EVAL", NULL, 0, 1, FAKE_REPLY, "+ran\r\n");
    cp_script *s = new_script();
    redisReply *r = cp_command_script(f->c, s, 1, 2, script_args, NULL);
    assert_status(r, "ran");
    cp_reply_free(r);
    assert_int_equal(noscripts(f->c), 1);
    /* Refusals: the reason on the client, nothing sent. */
    assert_null(cp_command_script(f->c, s, 3, 2, script_args, NULL));
    assert_int_equal(f->c->err, CP_EINVAL);
    assert_contains(f->c->errstr, "numkeys");
    assert_null(cp_command_script(f->c, NULL, 0, 0, NULL, NULL));
    assert_int_equal(f->c->err, CP_EINVAL);
    assert_int_equal(cp_append_script(f->p, s, -1, 2, script_args, NULL), CP_EINVAL);
    assert_int_equal(cp_count(f->p), 0);
    assert_int_equal(fake_node_count(f->node[0], "EVALSHA"), 1);
    cp_script_free(s);
}

/* ---- async ---- */

typedef struct answer {
    int calls;
    cp_outcome outcome;
    char status[32];
} answer;

static void on_answer(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    answer *a = data;
    a->calls++;
    a->outcome = r->outcome;
    if (r->reply != NULL && r->reply->type == REDIS_REPLY_STATUS)
        snprintf(a->status, sizeof(a->status), "%s", r->reply->str);
}

static void async_form(void **state) {
    fakeset *f = *state;
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", f->port[0]);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.retry_budget_ms = 10000;
    o.io_timeout_ms = 10000;
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    cp_loop *l = cp_loop_new();
    assert_non_null(l);
    assert_int_equal(cp_loop_attach(l, c), 0);
    fakeset_rule(f->node[0], "EVALSHA", NULL, 0, 1, FAKE_REPLY, NOSCRIPT);
    fakeset_rule(f->node[0], "EVAL", NULL, 0, 1, FAKE_REPLY, "+ran\r\n");
    cp_script *s = new_script();
    answer a = {0}, g = {0};
    assert_int_equal(cp_async_command_script(c, on_answer, &a, 0, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_async_command(c, on_answer, &g, "SET sk v2"), 0);
    cp_script_free(s);
    uint64_t end = cp__now_ns() + 10000000000ull;
    while ((a.calls == 0 || g.calls == 0) && cp__now_ns() < end)
        assert_int_ge(cp_loop_run_once(l, 10), 0);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.outcome, CP_DONE);
    assert_string_equal(a.status, "ran");
    assert_int_equal(g.calls, 1);
    assert_string_equal(g.status, "OK");
    long eval = fake_node_log_find(f->node[0], 0, eval_line);
    long set = fake_node_log_find(f->node[0], 0, "SET sk v2");
    assert_int_ge(eval, 0);
    assert_int_gt(set, eval);
    assert_int_equal(noscripts(c), 1);
    assert_int_equal(cp_async_command_script(c, on_answer, &a, 0, NULL, 0, 0, NULL, NULL),
                     CP_EINVAL);
    cp_free(c);
    cp_loop_free(l);
}

/* A single endpoint (not a cluster): the same NOSCRIPT retry, and the order behind it. */
static void single_endpoint(void **state) {
    fakeset *f = *state;
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", f->port[2]);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    fakeset_rule(f->node[2], "EVALSHA", NULL, 0, 1, FAKE_REPLY, NOSCRIPT);
    fakeset_rule(f->node[2], "EVAL", NULL, 0, 1, FAKE_REPLY, "+ran\r\n");
    cp_pipeline *p = cp_pipeline_new(c);
    assert_non_null(p);
    cp_script *s = new_script();
    assert_int_equal(cp_append_script(p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_append(p, "SET sk v2"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_status(cp_reply(p, 0), "ran");
    assert_status(cp_reply(p, 1), "OK");
    long eval = fake_node_log_find(f->node[2], 0, eval_line);
    long set = fake_node_log_find(f->node[2], 0, "SET sk v2");
    assert_int_ge(eval, 0);
    assert_int_gt(set, eval);
    assert_int_equal(noscripts(c), 1);
    /* MULTI at an endpoint: EVAL from the start too. */
    cp_pipeline_reset(p);
    fakeset_rule(f->node[2], "MULTI", NULL, 0, 1, FAKE_REPLY, "+OK\r\n");
    fakeset_rule(f->node[2], "EVAL", NULL, 0, 1, FAKE_REPLY, "+QUEUED\r\n");
    fakeset_rule(f->node[2], "EXEC", NULL, 0, 1, FAKE_REPLY, "*1\r\n+ran\r\n");
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append_script(p, s, 1, 2, script_args, NULL), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_status(cp_reply(p, 1), "QUEUED");
    assert_int_equal(fake_node_count(f->node[2], "EVALSHA"), 1);
    assert_int_equal(fake_node_count(f->node[2], "EVAL"), 2);
    cp_script_free(s);
    cp_pipeline_free(p);
    cp_free(c);
}

static void script_object(void **state) {
    (void)state;
    cp_script *e = cp_script_new("", 0);
    assert_non_null(e);
    assert_string_equal(cp_script_sha(e), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    cp_script_free(e);
    assert_null(cp_script_new(NULL, 3));
    cp_script_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(script_object),
        cmocka_unit_test_setup_teardown(noscript_then_eval, fakeset_setup, fakeset_teardown),
        cmocka_unit_test_setup_teardown(evalsha_answers, fakeset_setup, fakeset_teardown),
        cmocka_unit_test_setup_teardown(noscript_twice_is_the_outcome, fakeset_setup,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(later_commands_of_the_slot_wait, fakeset_setup,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(eval_goes_to_the_new_owner, fakeset_setup,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(transaction_sends_eval, fakeset_setup, fakeset_teardown),
        cmocka_unit_test_setup_teardown(blocking_form, fakeset_setup, fakeset_teardown),
        cmocka_unit_test_setup_teardown(async_form, fakeset_setup, fakeset_teardown),
        cmocka_unit_test_setup_teardown(single_endpoint, fakeset_setup, fakeset_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
