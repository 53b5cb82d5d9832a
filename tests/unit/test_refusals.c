/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Commands that would change what a shared connection answers are refused before anything is
 * sent (docs/commands.md, "Commands that change a connection"), through every way of sending
 * one: cp_command, cp_command_argv, a pipeline's cp_append, and cp_async_command. Each refusal
 * is CP_EINVAL with a message that names the command; the scripted fake node logs none of
 * them; and the connection keeps answering the other commands right, a GET sent after each
 * refusal included. The forms that change nothing (SELECT 0, CLIENT SETNAME) go through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterpipe/clusterpipe.h"
#include "fakenode.h"
#include "fakeset.h"
#include "refused.h"

/* The fake node never saw a command of that name. */
static void assert_never_sent(fakeset *f, const char *cmd) {
    char name[32];
    size_t n = strcspn(cmd, " ");
    snprintf(name, sizeof(name), "%.*s", (int)n, cmd);
    for (size_t i = 0; i < n; i++)
        name[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
    if (fake_node_count(f->node[0], name) != 0)
        fail_msg("\"%s\" reached the node", cmd);
}

static void assert_get(cp_client *c, const char *want) {
    redisReply *r = cp_command(c, "GET rk");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, want);
    freeReplyObject(r);
}

static void blocking_calls_refuse(void **state) {
    fakeset *f = *state;
    fakeset_connect(f, 2000, 2000, 0);
    fakeset_put(f, 0, "rk", "rv");
    for (size_t i = 0; i < NREFUSED; i++) {
        f->c->err = 0;
        assert_null(cp_command(f->c, refused[i].cmd));
        assert_int_equal(f->c->err, CP_EINVAL);
        if (strstr(f->c->errstr, refused[i].word) == NULL)
            fail_msg("\"%s\": the message \"%s\" does not name %s", refused[i].cmd, f->c->errstr,
                     refused[i].word);
        assert_never_sent(f, refused[i].cmd);
        assert_get(f->c, "rv");
    }
    /* argv and a pipeline refuse the same way */
    const char *argv[3] = {"CLIENT", "REPLY", "OFF"};
    assert_null(cp_command_argv(f->c, 3, argv, NULL));
    assert_int_equal(f->c->err, CP_EINVAL);
    assert_int_equal(cp_append(f->p, "GET rk"), 0);
    assert_int_equal(cp_append(f->p, "SUBSCRIBE chan"), CP_EINVAL);
    assert_non_null(strstr(cp_pipeline_errstr(f->p), "cp_subscribe"));
    assert_int_equal(cp_append(f->p, "GET rk"), 0);
    assert_int_equal(cp_count(f->p), 2); /* the refused one is not in the pipeline */
    assert_int_equal(cp_exec(f->p), 0);
    fakeset_assert_str(f->p, 0, "rv");
    fakeset_assert_str(f->p, 1, "rv");
    assert_never_sent(f, "SUBSCRIBE");
    assert_never_sent(f, "CLIENT");
    /* what changes nothing goes through */
    redisReply *r = cp_command(f->c, "SELECT 0");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(fake_node_count(f->node[0], "SELECT"), 1);
    r = cp_command(f->c, "CLIENT SETNAME me");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(fake_node_count(f->node[0], "CLIENT"), 1);
    assert_get(f->c, "rv");
}

typedef struct got {
    int calls;
    char value[16];
} got;

static void on_get(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    got *g = data;
    g->calls++;
    if (r->outcome == CP_DONE && r->reply->type == REDIS_REPLY_STRING)
        snprintf(g->value, sizeof(g->value), "%s", r->reply->str);
}

static void async_commands_refuse(void **state) {
    fakeset *f = *state;
    char seed[32];
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", f->port[0]);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seed;
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    cp_loop *l = cp_loop_new();
    assert_non_null(l);
    assert_int_equal(cp_loop_attach(l, c), 0);
    fakeset_put(f, 0, "rk", "rv");
    got g[NREFUSED];
    memset(g, 0, sizeof(g));
    for (size_t i = 0; i < NREFUSED; i++) {
        assert_int_equal(cp_async_command(c, on_get, &g[i], refused[i].cmd), CP_EINVAL);
        if (strstr(c->errstr, refused[i].word) == NULL)
            fail_msg("async \"%s\": the message \"%s\" does not name %s", refused[i].cmd, c->errstr,
                     refused[i].word);
        assert_int_equal(cp_async_command(c, on_get, &g[i], "GET rk"), 0);
    }
    assert_int_equal(cp_loop_run(l), 0);
    for (size_t i = 0; i < NREFUSED; i++) {
        assert_int_equal(g[i].calls, 1); /* the GET's, and never the refused command's */
        assert_string_equal(g[i].value, "rv");
        assert_never_sent(f, refused[i].cmd);
    }
    cp_free(c);
    cp_loop_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(blocking_calls_refuse, fakeset_setup, fakeset_teardown),
        cmocka_unit_test_setup_teardown(async_commands_refuse, fakeset_setup, fakeset_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
