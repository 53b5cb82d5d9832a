/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RESP2 reader: every reply type, nesting, several replies per read, replies split at every
 * byte (the same trees as whole), big bulk strings arriving in pieces, and each malformed input
 * rejected as a protocol error.
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
#include "lib/reader.h"

/* A compact rendering of a reply tree, to compare trees: S"..", E"..", +"..", :n, nil, [a,b]. */
static void render(const redisReply *r, char *out, size_t cap) {
    size_t n = strlen(out);
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        snprintf(out + n, cap - n, "%c\"%.*s\"",
                 r->type == REDIS_REPLY_STRING   ? 'S'
                 : r->type == REDIS_REPLY_STATUS ? '+'
                                                 : 'E',
                 (int)r->len, r->str);
        assert_int_equal(r->str[r->len], '\0');
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(out + n, cap - n, ":%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        snprintf(out + n, cap - n, "nil");
        break;
    case REDIS_REPLY_ARRAY:
        snprintf(out + n, cap - n, "[");
        for (size_t i = 0; i < r->elements; i++) {
            if (i > 0)
                strncat(out, ",", cap - strlen(out) - 1);
            render(r->element[i], out, cap);
        }
        strncat(out, "]", cap - strlen(out) - 1);
        break;
    default:
        fail_msg("unexpected type %d", r->type);
    }
}

static const char stream[] = "+OK\r\n"
                             "-ERR bad\rthing\r\n"
                             ":-9223372036854775808\r\n"
                             ":42\r\n"
                             "$5\r\na\r\nbc\r\n"
                             "$12\r\n0123456789ab\r\n"
                             "$0\r\n\r\n"
                             "$-1\r\n"
                             "*-1\r\n"
                             "*0\r\n"
                             "*3\r\n*2\r\n:1\r\n*1\r\n$1\r\nx\r\n$-1\r\n+s\r\n";
static const char *const expect[] = {
    "+\"OK\"",
    "E\"ERR bad\rthing\"",
    ":-9223372036854775808",
    ":42",
    "S\"a\r\nbc\"",
    "S\"0123456789ab\"",
    "S\"\"",
    "nil",
    "nil",
    "[]",
    "[[:1,[S\"x\"]],nil,+\"s\"]",
};
#define NEXPECT (sizeof(expect) / sizeof(expect[0]))

/* Feeds the stream in pieces of `step` bytes and renders every reply that comes out. */
static void read_stream(size_t step) {
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    size_t got = 0, len = sizeof(stream) - 1;
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        assert_int_equal(cp__reader_feed(&rd, stream + off, n), 0);
        redisReply *r;
        int rc;
        while ((rc = cp__reader_next(&rd, &a, &r)) == 1) {
            char buf[256] = "";
            render(r, buf, sizeof(buf));
            assert_int_lt(got, NEXPECT);
            assert_string_equal(buf, expect[got]);
            got++;
        }
        assert_int_equal(rc, 0);
    }
    assert_int_equal(got, NEXPECT);
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

static void every_type_whole_and_split(void **state) {
    (void)state;
    for (size_t step = 1; step <= sizeof(stream); step++)
        read_stream(step);
}

/* A 1 MB value arriving 1000 bytes at a time is taken once, when complete. */
static void big_bulk_in_pieces(void **state) {
    (void)state;
    size_t n = 1000 * 1000;
    char *resp = malloc(n + 32);
    int h = snprintf(resp, 32, "$%zu\r\n", n);
    for (size_t i = 0; i < n; i++)
        resp[h + i] = (char)('a' + i % 26);
    memcpy(resp + h + n, "\r\n", 2);
    size_t total = (size_t)h + n + 2;
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    redisReply *r = NULL;
    for (size_t off = 0; off < total; off += 1000) {
        assert_null(r);
        size_t k = total - off < 1000 ? total - off : 1000;
        assert_int_equal(cp__reader_feed(&rd, resp + off, k), 0);
        int rc = cp__reader_next(&rd, &a, &r);
        assert_int_equal(rc, off + k == total ? 1 : 0);
    }
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, n);
    assert_memory_equal(r->str, resp + h, n);
    free(resp);
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

/* An array longer than its first slots grows as elements arrive; a header announcing far more
 * elements than ever come allocates nothing up front (a fuzzer found "*399999999" did). */
static void long_arrays(void **state) {
    (void)state;
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    redisReply *r = NULL;
    assert_int_equal(cp__reader_feed(&rd, "*1000\r\n", 7), 0);
    for (int i = 0; i < 1000; i++) {
        char el[16];
        int n = snprintf(el, sizeof(el), ":%d\r\n", i);
        assert_int_equal(cp__reader_next(&rd, &a, &r), 0);
        assert_int_equal(cp__reader_feed(&rd, el, (size_t)n), 0);
    }
    assert_int_equal(cp__reader_next(&rd, &a, &r), 1);
    assert_int_equal(r->elements, 1000);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(r->element[i]->integer, i);
    assert_int_equal(cp__reader_feed(&rd, "*999999999\r\n:1\r\n", 17), 0);
    assert_int_equal(cp__reader_next(&rd, &a, &r), 0);
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

static void malformed(void **state) {
    (void)state;
    const char *bad[] = {
        "?x\r\n",                   /* unknown type byte */
        "%1\r\n",                   /* RESP3 map: not without HELLO 3 */
        ":12a\r\n",                 /* integer with junk */
        ":\r\n",                    /* empty integer */
        ":-\r\n",                   /* sign only */
        ":9223372036854775808\r\n", /* overflows long long */
        "$-2\r\n",                  /* negative length */
        "$x\r\n",                   /* length not a number */
        "$12a\r\n",                 /* length with junk */
        "$\r\n",                    /* empty length */
        "$3\rabc\r\n",              /* header without its LF */
        "$3\r\nabcde\r\n",          /* payload longer than announced */
        "*-5\r\n",                  /* negative count */
        "*2\r\n:1\r\n!\r\n",        /* bad element inside an array */
        "*4294967296000\r\n",       /* absurd count */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cp__reader rd = {0};
        cp__reply_arena a = {0};
        redisReply *r;
        assert_int_equal(cp__reader_feed(&rd, bad[i], strlen(bad[i])), 0);
        int rc = cp__reader_next(&rd, &a, &r);
        if (rc == 1) /* "*2\r\n:1..." yields nothing before the bad element */
            fail_msg("accepted: %s", bad[i]);
        assert_int_equal(rc, CP_EPROTO);
        assert_int_not_equal(rd.errstr[0], '\0');
        cp__reader_free(&rd);
        cp__arena_free(&a);
    }
    /* Nesting deeper than the stack is refused, not overflowed. */
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    for (int i = 0; i <= CP__READER_DEPTH; i++)
        assert_int_equal(cp__reader_feed(&rd, "*1\r\n", 4), 0);
    redisReply *r;
    assert_int_equal(cp__reader_next(&rd, &a, &r), CP_EPROTO);
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

/* Bulk headers of up to 9 digits are read in one pass, longer ones by the general parser: both
 * wait for the rest of a reply announced but not all in yet, and neither takes a length whose
 * CRLF has not arrived. */
static void bulk_headers_incomplete(void **state) {
    (void)state;
    const char *partial[] = {
        "$", "$6", "$64\r", "$64\r\nabc", "$123456789\r\nab", "$1234567890\r\nab", "$12345678901"};
    for (size_t i = 0; i < sizeof(partial) / sizeof(partial[0]); i++) {
        cp__reader rd = {0};
        cp__reply_arena a = {0};
        redisReply *r = NULL;
        assert_int_equal(cp__reader_feed(&rd, partial[i], strlen(partial[i])), 0);
        if (cp__reader_next(&rd, &a, &r) != 0)
            fail_msg("not waiting for more after %s", partial[i]);
        cp__reader_free(&rd);
        cp__arena_free(&a);
    }
}

/* Reset drops a half-read reply: the next bytes start a new one. */
static void reset_drops_partial(void **state) {
    (void)state;
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    redisReply *r;
    assert_int_equal(cp__reader_feed(&rd, "*2\r\n:1\r\n$5\r\nab", 15), 0);
    assert_int_equal(cp__reader_next(&rd, &a, &r), 0);
    cp__reader_reset(&rd);
    assert_int_equal(cp__reader_feed(&rd, ":7\r\n", 4), 0);
    assert_int_equal(cp__reader_next(&rd, &a, &r), 1);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 7);
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_type_whole_and_split),
        cmocka_unit_test(big_bulk_in_pieces),
        cmocka_unit_test(long_arrays),
        cmocka_unit_test(malformed),
        cmocka_unit_test(bulk_headers_incomplete),
        cmocka_unit_test(reset_drops_partial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
