/* SPDX-License-Identifier: BSD-3-Clause
 *
 * RESP3 against a real cluster (docs/api.md, "Replies"): the same commands through a client of
 * each protocol answer the types each protocol has. Under RESP3 a hash is a map, a set a set, a
 * score a double, INFO a verbatim string of format "txt", a missing key a null; under RESP2 the
 * array, bulk string and nil of hiredis's five types. The server itself says which protocol each
 * connection speaks (CLIENT INFO: resp=3). A HELLO sent by the program is refused, never sent: the
 * library owns each connection's protocol. (The real-server tests whose subject the protocol
 * changes run under both as NAME@resp3, tests/README.md; this one holds the differences.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "fixture.h"

static cp_client *client_of(cp_fixture *f, int protocol) {
    cp_options o = CP_OPTIONS_INIT;
    o.protocol = protocol;
    return cp_fixture_client(f, &o);
}

/* One pipeline of reads over a hash, a set and a sorted set of one slot, and a missing key. */
static void read_all(cp_client *c, cp_pipeline *p) {
    assert_int_equal(cp_append(p, "HGETALL {r3}h"), 0);
    assert_int_equal(cp_append(p, "SMEMBERS {r3}s"), 0);
    assert_int_equal(cp_append(p, "ZSCORE {r3}z m"), 0);
    assert_int_equal(cp_append(p, "GET {r3}missing"), 0);
    assert_int_equal(cp_append(p, "HGET {r3}h f1"), 0);
    assert_int_equal(cp_exec(p), 0);
    for (size_t i = 0; i < cp_count(p); i++)
        assert_int_equal(cp_get_outcome(p, i), CP_DONE);
    (void)c;
}

static void types_of_each_protocol(void **state) {
    cp_fixture *f = *state;
    cp_client *c3 = client_of(f, 3), *c2 = client_of(f, 2);
    redisReply *r = cp_command(c3, "HSET {r3}h f1 v1 f2 v2");
    assert_non_null(r);
    assert_int_equal(r->type, CP_REPLY_INTEGER);
    assert_int_equal(r->integer, 2);
    cp_reply_free(r);
    r = cp_command(c3, "SADD {r3}s a b c");
    assert_int_equal(r->integer, 3);
    cp_reply_free(r);
    r = cp_command(c3, "ZADD {r3}z 1.5 m");
    assert_int_equal(r->integer, 1);
    cp_reply_free(r);

    cp_pipeline *p3 = cp_pipeline_new(c3), *p2 = cp_pipeline_new(c2);
    read_all(c3, p3);
    read_all(c2, p2);
    const redisReply *h3 = cp_reply(p3, 0), *h2 = cp_reply(p2, 0);
    assert_int_equal(h3->type, CP_REPLY_MAP);
    assert_int_equal(h2->type, CP_REPLY_ARRAY);
    assert_int_equal(h3->elements, 4); /* key, value, key, value: the array's layout */
    assert_int_equal(h2->elements, 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(h3->element[i]->str, h2->element[i]->str);
    assert_int_equal(cp_reply(p3, 1)->type, CP_REPLY_SET);
    assert_int_equal(cp_reply(p2, 1)->type, CP_REPLY_ARRAY);
    assert_int_equal(cp_reply(p3, 1)->elements, 3);
    const redisReply *z3 = cp_reply(p3, 2), *z2 = cp_reply(p2, 2);
    assert_int_equal(z3->type, CP_REPLY_DOUBLE);
    assert_int_equal(z2->type, CP_REPLY_STRING);
    assert_double_eq(cp_reply_double(z3), 1.5);
    assert_double_eq(cp_reply_double(z2), 1.5);
    assert_int_equal(cp_reply(p3, 3)->type, CP_REPLY_NIL);
    assert_int_equal(cp_reply(p2, 3)->type, CP_REPLY_NIL);
    assert_int_equal(cp_reply(p3, 4)->type, CP_REPLY_STRING);
    assert_string_equal(cp_reply(p3, 4)->str, "v1");
    cp_pipeline_free(p3);
    cp_pipeline_free(p2);

    /* INFO: verbatim text under RESP3, a bulk string under RESP2; the same text either way. */
    r = cp_command_node(c3, 0, "INFO server");
    assert_non_null(r);
    assert_int_equal(r->type, CP_REPLY_VERB);
    char fmt[4];
    assert_int_equal(cp_reply_verbatim_format(r, fmt), 0);
    assert_string_equal(fmt, "txt");
    assert_contains(r->str, "redis_version:");
    assert_int_not_equal(strncmp(r->str, "txt:", 4), 0); /* the prefix is not in the text */
    cp_reply_free(r);
    r = cp_command_node(c2, 0, "INFO server");
    assert_int_equal(r->type, CP_REPLY_STRING);
    assert_int_equal(cp_reply_verbatim_format(r, fmt), CP_EINVAL);
    cp_reply_free(r);
    cp_free(c3);
    cp_free(c2);
}

/* The server's own view of each connection: CLIENT INFO names the protocol it speaks. */
static void server_sees_the_protocol(void **state) {
    cp_fixture *f = *state;
    for (int protocol = 2; protocol <= 3; protocol++) {
        cp_client *c = client_of(f, protocol);
        for (int n = 0; n < cp_node_count(c); n++) {
            redisReply *r = cp_command_node(c, n, "CLIENT INFO");
            assert_non_null(r);
            if (protocol == 3)
                assert_int_equal(r->type, CP_REPLY_VERB);
            else
                assert_int_equal(r->type, CP_REPLY_STRING);
            assert_contains(r->str, protocol == 3 ? " resp=3" : " resp=2");
            cp_reply_free(r);
        }
        cp_free(c);
    }
}

/* HELLO by the program would change a shared connection's protocol under the library's reader:
 * refused with a reason, never sent; the connection goes on in its own protocol. */
static void hello_refused(void **state) {
    cp_fixture *f = *state;
    cp_client *c = client_of(f, 3);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "HELLO 2"), CP_EINVAL);
    assert_contains(cp_pipeline_errstr(p), "HELLO: the library sets each connection's protocol");
    assert_int_equal(cp_count(p), 0); /* refused at the append: nothing to send */
    cp_pipeline_reset(p);
    assert_int_equal(cp_append(p, "HGETALL {r3}none"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(cp_get_outcome(p, 0), CP_DONE);
    assert_int_equal(cp_reply(p, 0)->type, CP_REPLY_MAP); /* still RESP3: an empty map */
    assert_int_equal(cp_reply(p, 0)->elements, 0);
    cp_pipeline_free(p);
    cp_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(types_of_each_protocol),
        cmocka_unit_test(server_sees_the_protocol),
        cmocka_unit_test(hello_refused),
    };
    return cmocka_run_group_tests(tests, cp_fixture_setup_cluster3, cp_fixture_teardown);
}
