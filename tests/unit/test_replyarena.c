/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The reply arena: reply trees built in it, big replies get chunks of their own, reset keeps
 * chunks for reuse, and cp__reply_dup gives a copy freeReplyObject frees (valgrind and ASan runs
 * check the memory).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "lib/proto/reader.h"
#include "lib/proto/replyarena.h"

static redisReply *parse(cp__reply_arena *a, const char *resp, size_t len) {
    cp__reader rd = {0};
    assert_int_equal(cp__reader_feed(&rd, resp, len), 0);
    redisReply *r = NULL;
    assert_int_equal(cp__reader_next(&rd, a, &r), 1);
    cp__reader_free(&rd);
    return r;
}

static void assert_tree(const redisReply *r) {
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 6);
    assert_int_equal(r->element[0]->type, REDIS_REPLY_STRING);
    assert_int_equal(r->element[0]->len, 5);
    assert_memory_equal(r->element[0]->str, "a\0b\r\n", 5);
    assert_int_equal(r->element[1]->type, REDIS_REPLY_NIL);
    assert_int_equal(r->element[2]->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->element[2]->integer, -42);
    assert_int_equal(r->element[3]->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->element[3]->str, "OK");
    assert_int_equal(r->element[4]->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[4]->elements, 0);
    assert_int_equal(r->element[5]->type, REDIS_REPLY_ERROR);
    assert_string_equal(r->element[5]->str, "ERR x");
}

static const char tree[] = "*6\r\n$5\r\na\0b\r\n\r\n$-1\r\n:-42\r\n+OK\r\n*0\r\n-ERR x\r\n";

static void reader_builds_trees(void **state) {
    (void)state;
    cp__reply_arena a = {0};
    redisReply *r = parse(&a, tree, sizeof(tree) - 1);
    assert_tree(r);
    redisReply *copy = cp__reply_dup(r);
    cp__arena_free(&a); /* the copy owns its memory */
    assert_tree(copy);
    freeReplyObject(copy);
}

static void big_and_many(void **state) {
    (void)state;
    cp__reply_arena a = {0};
    /* A 100 KB bulk string: bigger than a chunk. */
    size_t n = 100 * 1000;
    char *resp = malloc(n + 32);
    int h = snprintf(resp, 32, "$%zu\r\n", n);
    memset(resp + h, 'v', n);
    memcpy(resp + h + n, "\r\n", 2);
    redisReply *big = parse(&a, resp, (size_t)h + n + 2);
    free(resp);
    assert_int_equal(big->len, n);
    assert_int_equal(big->str[n - 1], 'v');
    assert_int_equal(big->str[n], '\0');
    /* Thousands of small replies spill over several chunks; all stay valid until reset. */
    redisReply *small[5000];
    for (int i = 0; i < 5000; i++) {
        small[i] = cp__arena_integer(&a, i);
        assert_non_null(small[i]);
    }
    for (int i = 0; i < 5000; i++)
        assert_int_equal(small[i]->integer, i);
    cp__arena_reset(&a);
    assert_null(a.used);
    assert_int_gt(a.nspare, 0);
    assert_int_le(a.nspare, 8);
    /* Reuse after reset. */
    redisReply *e = cp__arena_error(&a, "bad\r\nthing");
    assert_string_equal(e->str, "bad  thing");
    redisReply *arr = cp__arena_array(&a, 3);
    assert_int_equal(arr->elements, 3);
    assert_null(arr->element[2]);
    cp__arena_free(&a);
    assert_null(a.used);
    assert_null(a.spare);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reader_builds_trees),
        cmocka_unit_test(big_and_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
