/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A subscriber's keepalive PING on the scripted fake node (docs/async.md, "Pub/sub"): the link
 * matches each answer to what it wrote, the PING included. A PING answered with an error (a
 * server loading, an ACL that forbids PING) is the PING's answer: it ends no subscription, and
 * a SUBSCRIBE written behind it still gets its own confirmation. (The library used to take that
 * error for the answer of the oldest SUBSCRIBE in flight and end it with CP_ESERVER.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "clusterpipe/clusterpipe.h"

#include "asserts.h"
#include "fakenode.h"
#include "util/clock.h"

typedef struct events {
    int subscribed, ended, err;
} events;

static void on_sub(cp_client *c, const cp_sub_msg *m, void *data) {
    (void)c;
    events *e = data;
    if (m->event == CP_SUB_SUBSCRIBED)
        e->subscribed++;
    if (m->event == CP_SUB_ENDED) {
        e->ended++;
        e->err = m->err;
    }
}

/* Turns the loop until *flag reaches want or 5 s pass. */
static void run_until(cp_loop *l, const int *flag, int want) {
    uint64_t deadline = cp__now_ns() + 5000000000ull;
    while (*flag < want && cp__now_ns() < deadline)
        assert_int_ge(cp_loop_run_once(l, 20), 0);
    assert_int_ge(*flag, want);
}

static void confirmation_rule(fake_node *n, const char *channel, char *buf, size_t len) {
    snprintf(buf, len, "*3\r\n$9\r\nsubscribe\r\n$%zu\r\n%s\r\n:1\r\n", strlen(channel), channel);
    fake_rule r = {.cmd = "SUBSCRIBE", .key = channel, .action = FAKE_REPLY, .payload = buf};
    assert_int_ge(fake_node_rule(n, &r), 0);
}

static void ping_error_ends_no_subscription(void **state) {
    (void)state;
    fake_node *n = fake_node_start();
    assert_non_null(n);
    char ca[64], cb[64], ep[32];
    confirmation_rule(n, "a", ca, sizeof(ca));
    confirmation_rule(n, "b", cb, sizeof(cb));
    /* the keepalive PING's answer: an error, held until the second SUBSCRIBE is written behind
     * it (the replies after a held one wait for it, as on a real server) */
    fake_rule ping = {.cmd = "PING",
                      .action = FAKE_DELAY,
                      .payload = "-LOADING Redis is loading the dataset in memory\r\n",
                      .delay_ms = -1};
    assert_int_ge(fake_node_rule(n, &ping), 0);
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", fake_node_port(n));
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    o.io_timeout_ms = 10000; /* the held PING must not fail the link meanwhile */
    cp_client *c = cp_client_new(&o);
    cp_loop *l = cp_loop_new();
    assert_int_equal(cp_loop_attach(l, c), 0);
    events a = {0}, b = {0};
    assert_int_equal(cp_subscribe(c, CP_SUB_CHANNEL, "a", 1, on_sub, &a), 0);
    run_until(l, &a.subscribed, 1);
    /* quiet for 1 s: the link PINGs */
    uint64_t deadline = cp__now_ns() + 5000000000ull;
    while (fake_node_count(n, "PING") == 0 && cp__now_ns() < deadline)
        assert_int_ge(cp_loop_run_once(l, 20), 0);
    assert_int_equal(fake_node_count(n, "PING"), 1);
    assert_int_equal(cp_subscribe(c, CP_SUB_CHANNEL, "b", 1, on_sub, &b), 0);
    deadline = cp__now_ns() + 5000000000ull;
    while (fake_node_count(n, "SUBSCRIBE") < 2 && cp__now_ns() < deadline)
        assert_int_ge(cp_loop_run_once(l, 20), 0);
    assert_int_equal(fake_node_count(n, "SUBSCRIBE"), 2);
    fake_node_release(n);
    run_until(l, &b.subscribed, 1);
    for (int i = 0; i < 10; i++) /* anything late would show now */
        assert_int_ge(cp_loop_run_once(l, 10), 0);
    assert_int_equal(a.ended, 0);
    assert_int_equal(b.ended, 0);
    assert_int_equal(b.subscribed, 1);
    assert_int_equal(a.subscribed, 1);
    cp_free(c);
    cp_loop_free(l);
    fake_node_stop(n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ping_error_ends_no_subscription),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
