/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The reader: every RESP2 and RESP3 reply type, nesting, several replies per read, replies split
 * at every byte (the same trees as whole), big bulk strings arriving in pieces, attributes
 * dropped, the values of RESP3's types read back, and each malformed input rejected as a
 * protocol error.
 */
#include <math.h>
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

/* A compact rendering of a reply tree, to compare trees: S"..", E"..", +"..", :n, nil, [a,b];
 * RESP3: ,"1.5" (double), #1 (bool), ("123" (big number), V"txt:.." (verbatim), %[k,v] (map),
 * ~[..] (set), >[..] (push). */
static void render(const redisReply *r, char *out, size_t cap) {
    size_t n = strlen(out);
    char fmt[4];
    switch (r->type) {
    case CP_REPLY_STRING:
    case CP_REPLY_STATUS:
    case CP_REPLY_ERROR:
    case CP_REPLY_DOUBLE:
    case CP_REPLY_BIGNUM:
        snprintf(out + n, cap - n, "%c\"%.*s\"",
                 r->type == CP_REPLY_STRING   ? 'S'
                 : r->type == CP_REPLY_STATUS ? '+'
                 : r->type == CP_REPLY_DOUBLE ? ','
                 : r->type == CP_REPLY_BIGNUM ? '('
                                              : 'E',
                 (int)r->len, r->str);
        assert_int_equal(r->str[r->len], '\0');
        break;
    case CP_REPLY_VERB:
        assert_int_equal(cp_reply_verbatim_format(r, fmt), 0);
        snprintf(out + n, cap - n, "V\"%s:%.*s\"", fmt, (int)r->len, r->str);
        assert_int_equal(r->str[r->len], '\0');
        break;
    case CP_REPLY_INTEGER:
        snprintf(out + n, cap - n, ":%lld", r->integer);
        break;
    case CP_REPLY_BOOL:
        snprintf(out + n, cap - n, "#%lld", r->integer);
        break;
    case CP_REPLY_NIL:
        snprintf(out + n, cap - n, "nil");
        break;
    case CP_REPLY_ARRAY:
    case CP_REPLY_MAP:
    case CP_REPLY_SET:
    case CP_REPLY_PUSH:
        snprintf(out + n, cap - n, "%s[",
                 r->type == CP_REPLY_MAP    ? "%"
                 : r->type == CP_REPLY_SET  ? "~"
                 : r->type == CP_REPLY_PUSH ? ">"
                                            : "");
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

static const char stream2[] = "+OK\r\n"
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
static const char *const expect2[] = {
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
    NULL,
};

/* Every RESP3 type, nested in each other, and attributes in front of a reply and of an element
 * (dropped: the reply they describe is what comes out). */
static const char stream3[] =
    "_\r\n"
    "#t\r\n"
    "#f\r\n"
    ",1.5\r\n"
    ",-2e-3\r\n"
    ",inf\r\n"
    ",-inf\r\n"
    ",nan\r\n"
    "(3492890328409238509324850943850943825024385\r\n"
    "(-1\r\n"
    "!22\r\nSYNTAX invalid\r\nsyntax\r\n"
    "=15\r\ntxt:Some string\r\n"
    "=4\r\nmkd:\r\n"
    "%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n%1\r\n_\r\n~0\r\n"
    "%0\r\n"
    "~3\r\n:1\r\n#f\r\n,0.25\r\n"
    ">3\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n_\r\n"
    "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.19\r\n$1\r\nb\r\n,0.6\r\n"
    "*2\r\n:2039123\r\n:9543892\r\n"
    "*3\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n:3\r\n"
    "|0\r\n:7\r\n";
static const char *const expect3[] = {
    "nil",
    "#1",
    "#0",
    ",\"1.5\"",
    ",\"-2e-3\"",
    ",\"inf\"",
    ",\"-inf\"",
    ",\"nan\"",
    "(\"3492890328409238509324850943850943825024385\"",
    "(\"-1\"",
    "E\"SYNTAX invalid\r\nsyntax\"",
    "V\"txt:Some string\"",
    "V\"mkd:\"",
    "%[+\"first\",:1,S\"second\",%[nil,~[]]]",
    "%[]",
    "~[:1,#0,,\"0.25\"]",
    ">[S\"invalidate\",[S\"key\"],nil]",
    "[:2039123,:9543892]",
    "[:1,:2,:3]",
    ":7",
    NULL,
};

/* Feeds a stream in pieces of `step` bytes and renders every reply that comes out. */
static void read_stream(const char *stream, const char *const *expect, size_t step) {
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    size_t got = 0, len = strlen(stream);
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        assert_int_equal(cp__reader_feed(&rd, stream + off, n), 0);
        redisReply *r;
        int rc;
        while ((rc = cp__reader_next(&rd, &a, &r)) == 1) {
            char buf[512] = "";
            render(r, buf, sizeof(buf));
            assert_non_null(expect[got]);
            assert_string_equal(buf, expect[got]);
            got++;
        }
        assert_int_equal(rc, 0);
    }
    assert_null(expect[got]);
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

static void every_type_whole_and_split(void **state) {
    (void)state;
    for (size_t step = 1; step <= sizeof(stream2); step++)
        read_stream(stream2, expect2, step);
}

static void resp3_whole_and_split(void **state) {
    (void)state;
    for (size_t step = 1; step <= sizeof(stream3); step++)
        read_stream(stream3, expect3, step);
}

/* The values the struct has no field for, read back; cp_reply_double reads RESP2's text too. */
static void resp3_values(void **state) {
    (void)state;
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    const char *in = ",1.5\r\n,-inf\r\n,nan\r\n$4\r\n2.25\r\n:-3\r\n#t\r\n(12\r\n$3\r\nabc\r\n"
                     "=7\r\nmkd:# a\r\n";
    assert_int_equal(cp__reader_feed(&rd, in, strlen(in)), 0);
    redisReply *r[9];
    for (int i = 0; i < 9; i++)
        assert_int_equal(cp__reader_next(&rd, &a, &r[i]), 1);
    assert_double_eq(cp_reply_double(r[0]), 1.5);
    assert_double_eq(cp_reply_double(r[1]), -INFINITY);
    assert_true(isnan(cp_reply_double(r[2])));
    assert_double_eq(cp_reply_double(r[3]), 2.25);
    assert_double_eq(cp_reply_double(r[4]), -3.0);
    assert_double_eq(cp_reply_double(r[5]), 1.0);
    assert_double_eq(cp_reply_double(r[6]), 12.0);
    assert_true(isnan(cp_reply_double(r[7])));
    assert_true(isnan(cp_reply_double(NULL)));
    char fmt[4];
    assert_int_equal(cp_reply_verbatim_format(r[7], fmt), CP_EINVAL);
    assert_int_equal(cp_reply_verbatim_format(r[8], fmt), 0);
    assert_string_equal(fmt, "mkd");
    assert_string_equal(r[8]->str, "# a");
    /* A copy the caller owns keeps all of it. */
    redisReply *d = cp_reply_dup(r[8]);
    assert_int_equal(d->type, CP_REPLY_VERB);
    assert_int_equal(cp_reply_verbatim_format(d, fmt), 0);
    assert_string_equal(fmt, "mkd");
    assert_string_equal(d->str, "# a");
    cp_reply_free(d);
    d = cp_reply_dup(r[0]);
    assert_double_eq(cp_reply_double(d), 1.5);
    cp_reply_free(d);
    cp__reader_free(&rd);
    cp__arena_free(&a);
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
    assert_int_equal(r->type, CP_REPLY_STRING);
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
        "_x\r\n",                   /* RESP3: null with bytes */
        "#x\r\n",                   /* boolean neither t nor f */
        "#tt\r\n",
        ",\r\n",     /* empty double */
        ",1.5x\r\n", /* double with junk */
        ",0x10\r\n", /* hex: strtod's, not RESP3's */
        ",1e\r\n",   /* exponent without digits */
        ",infinity\r\n",
        "(\r\n", /* empty big number */
        "(12a\r\n",
        "!-1\r\n",         /* null blob error */
        "=-1\r\n",         /* null verbatim */
        "=3\r\ntxt\r\n",   /* verbatim shorter than its format */
        "=5\r\ntxt-x\r\n", /* format not ended by ':' */
        "%-1\r\n",         /* null map */
        "%-2\r\n",
        "~-1\r\n",
        ">-1\r\n",
        "|-1\r\n",
        "%536870913\r\n", /* pairs past the element bound */
        "*?\r\n",         /* streamed aggregate */
        "$?\r\n",         /* streamed string */
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
    assert_int_equal(r->type, CP_REPLY_INTEGER);
    assert_int_equal(r->integer, 7);
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

/* A buffer starts at one page and doubles when a read fills it: a connection that reads a few
 * replies at a time holds 4 KiB, a busy one grows to its bursts (issue 45: a 64 KiB first buffer
 * written a page deep left untouched pages that made the process's RSS creep). */
static void buffer_grows_with_its_reads(void **state) {
    (void)state;
    cp__reader r = {0};
    char *space;
    size_t room = cp__reader_space(&r, &space);
    assert_int_equal(room, 4096);
    assert_int_equal(r.cap, 4096);
    memset(space, 'x', room);
    cp__reader_commit(&r, room); /* a read that filled it; nothing parsed yet */
    room = cp__reader_space(&r, &space);
    assert_int_equal(r.cap, 8192);
    assert_int_equal(room, 4096);
    cp__reader_reset(&r); /* read through: the next read starts at the front */
    room = cp__reader_space(&r, &space);
    assert_int_equal(room, 8192);
    cp__reader_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_type_whole_and_split),
        cmocka_unit_test(resp3_whole_and_split),
        cmocka_unit_test(resp3_values),
        cmocka_unit_test(big_bulk_in_pieces),
        cmocka_unit_test(long_arrays),
        cmocka_unit_test(malformed),
        cmocka_unit_test(bulk_headers_incomplete),
        cmocka_unit_test(reset_drops_partial),
        cmocka_unit_test(buffer_grows_with_its_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
