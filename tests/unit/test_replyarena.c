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
#include "clusterpipe/clusterpipe.h"
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
    assert_int_gt(a.spare_bytes, 0);
    assert_int_le(a.spare_bytes, 256 * 1024);
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

/* The arena's chunks come from the library's allocator: this one counts the bytes asked for
 * (malloc only: the arena neither callocs nor reallocs). */
static size_t asked;

static void *counting_malloc(size_t n) {
    asked += n;
    return malloc(n);
}

static void *plain_calloc(size_t n, size_t size) {
    return calloc(n, size);
}

static void *plain_realloc(void *p, size_t n) {
    return realloc(p, n);
}

/* One reply takes a small chunk, not a batch's 32 KiB (an open-loop client has a pipeline per
 * request in flight: thousands while a master is down, issue 45); the chunks grow with the
 * batch, and reset keeps them for the next batch, which allocates nothing more. */
static void chunks_grow_with_the_batch(void **state) {
    (void)state;
    cp_allocators mine = {counting_malloc, plain_calloc, plain_realloc, free}, old;
    assert_int_equal(cp_set_allocators(&mine, &old), 0);
    asked = 0;
    cp__reply_arena a = {0};
    assert_non_null(cp__arena_status(&a, "OK"));
    assert_int_le(asked, 1024 + 64); /* a chunk of 1 KiB and its header */
    size_t one = asked;
    cp__arena_reset(&a);
    assert_int_equal(a.spare_bytes, 1024);
    assert_non_null(cp__arena_status(&a, "OK")); /* the spare chunk again */
    assert_int_equal(asked, one);
    for (int i = 0; i < 1000; i++) /* 48-byte replies: about 48 KB */
        assert_non_null(cp__arena_integer(&a, i));
    size_t batch = asked;
    assert_int_ge(batch, 1000 * sizeof(redisReply));
    assert_int_le(batch, 1024 + 2048 + 4096 + 8192 + 16384 + 32768 + 6 * 64);
    cp__arena_reset(&a);
    assert_int_gt(a.spare_bytes, 1000 * sizeof(redisReply));
    for (int i = 0; i < 1000; i++)
        assert_non_null(cp__arena_integer(&a, i));
    assert_int_equal(asked, batch); /* the same chunks: nothing new */
    assert_int_equal(a.spare_bytes, 0);
    cp__arena_free(&a);
    assert_null(a.spare);
    assert_int_equal(cp_set_allocators(&old, NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reader_builds_trees),
        cmocka_unit_test(big_and_many),
        cmocka_unit_test(chunks_grow_with_the_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
