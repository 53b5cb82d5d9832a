/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The wire's delay queue (wire/delayq.h): bytes held until due, in the order read whatever their
 * due times, partial deliveries, the end of the stream behind the bytes; and the link specs the
 * wire takes (wire/wire.h). No sockets. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include "wire/delayq.h"
#include "wire/wire.h"

#include <errno.h>
#include <string.h>

/* The bytes due at now, concatenated into out (NUL-terminated). */
static size_t due_text(const cp__delayq *q, uint64_t now, char *out, size_t cap) {
    struct iovec iov[8];
    int n = cp__delayq_due(q, now, iov, 8);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        assert_int_lt(len + iov[i].iov_len, cap);
        memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    out[len] = '\0';
    return len;
}

static void test_held_until_due(void **state) {
    (void)state;
    cp__delayq q = {0};
    char out[64];
    assert_int_equal(cp__delayq_next_due(&q), CP__DQ_NEVER);
    assert_int_equal(cp__delayq_push(&q, "abc", 3, 100), 0);
    assert_int_equal(cp__delayq_push(&q, "de", 2, 200), 0);
    assert_int_equal(q.bytes, 5);
    assert_int_equal(cp__delayq_next_due(&q), 100);
    assert_int_equal(due_text(&q, 99, out, sizeof(out)), 0);
    assert_int_equal(due_text(&q, 100, out, sizeof(out)), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(due_text(&q, 250, out, sizeof(out)), 5);
    assert_string_equal(out, "abcde");
    cp__delayq_clear(&q);
    assert_int_equal(q.bytes, 0);
}

static void test_never_reordered(void **state) {
    (void)state;
    cp__delayq q = {0};
    char out[64];
    /* A run read later with a shorter delay (jitter, a link that stopped being slow) waits for the
     * one before it. */
    assert_int_equal(cp__delayq_push(&q, "first", 5, 1000), 0);
    assert_int_equal(cp__delayq_push(&q, "second", 6, 400), 0);
    assert_int_equal(due_text(&q, 999, out, sizeof(out)), 0);
    assert_int_equal(due_text(&q, 1000, out, sizeof(out)), 11);
    assert_string_equal(out, "firstsecond");
    cp__delayq_clear(&q);
}

static void test_partial_consume(void **state) {
    (void)state;
    cp__delayq q = {0};
    char out[64];
    assert_int_equal(cp__delayq_push(&q, "hello", 5, 10), 0);
    assert_int_equal(cp__delayq_push(&q, "world", 5, 10), 0);
    cp__delayq_consume(&q, 3); /* a short write */
    assert_int_equal(q.bytes, 7);
    due_text(&q, 10, out, sizeof(out));
    assert_string_equal(out, "loworld");
    cp__delayq_consume(&q, 4);
    due_text(&q, 10, out, sizeof(out));
    assert_string_equal(out, "rld");
    cp__delayq_consume(&q, 3);
    assert_int_equal(q.bytes, 0);
    assert_int_equal(cp__delayq_next_due(&q), CP__DQ_NEVER);
}

static void test_eof_behind_the_bytes(void **state) {
    (void)state;
    cp__delayq q = {0};
    char out[64];
    assert_int_equal(cp__delayq_push(&q, "tail", 4, 500), 0);
    cp__delayq_push_eof(&q, 100); /* read later, due earlier: still after the bytes */
    assert_int_equal(cp__delayq_push(&q, "x", 1, 600), -EINVAL);
    assert_false(cp__delayq_eof_due(&q, 1000)); /* the bytes are not delivered yet */
    assert_int_equal(due_text(&q, 500, out, sizeof(out)), 4);
    cp__delayq_consume(&q, 4);
    assert_int_equal(cp__delayq_next_due(&q), 500);
    assert_false(cp__delayq_eof_due(&q, 499));
    assert_true(cp__delayq_eof_due(&q, 500));
    cp__delayq_clear(&q);
    assert_false(q.eof);
}

static void test_link_specs(void **state) {
    (void)state;
    cp__wire_link_spec l;
    char err[256];
    assert_int_equal(cp__wire_link_parse("m0=7001:127.0.0.1:6379", &l, err, sizeof(err)), 0);
    assert_string_equal(l.name, "m0");
    assert_int_equal(l.listen_port, 7001);
    assert_string_equal(l.host, "127.0.0.1");
    assert_int_equal(l.port, 6379);
    assert_int_equal(cp__wire_link_parse("v6=7002:[::1]:6380", &l, err, sizeof(err)), 0);
    assert_string_equal(l.host, "::1");
    assert_int_equal(l.port, 6380);
    const char *bad[] = {"",
                         "m0",
                         "=7001:127.0.0.1:6379",
                         "m0=:127.0.0.1:6379",
                         "m0=7001:127.0.0.1",
                         "m0=7001:127.0.0.1:0",
                         "m0=70000:127.0.0.1:1",
                         "m0=7001:[::1:6380",
                         "m0=7001::6379",
                         "m0=7001:h:6379x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(cp__wire_link_parse(bad[i], &l, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "NAME=LISTEN_PORT:HOST:PORT"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_until_due),  cmocka_unit_test(test_never_reordered),
        cmocka_unit_test(test_partial_consume), cmocka_unit_test(test_eof_behind_the_bytes),
        cmocka_unit_test(test_link_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
