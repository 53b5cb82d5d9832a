/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The replication stream's reader (src/migrate/cmdstream.h): a stream of commands a master sends
 * (SELECT, SET with a binary value, MULTI/INCR/EXEC, PING, REPLCONF GETACK, an empty argument,
 * keepalive newlines) fed in pieces of every size gives the same commands with the same offsets;
 * every prefix asks for more and never errs; malformed streams give an error naming the offset,
 * and every corrupted byte gives an error, a command or a request for more, never a crash; a
 * command of 200k arguments fed byte by byte is read in linear time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"

#include "migrate/cmdstream.h"

#define BASE 1000 /* the stream starts at a full resync's offset, not 0 */

static const char stream[] = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"
                             "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\nb\0\r\n"
                             "\n"
                             "*1\r\n$5\r\nMULTI\r\n"
                             "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
                             "*1\r\n$4\r\nEXEC\r\n"
                             "\r\n"
                             "*1\r\n$4\r\nPING\r\n"
                             "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"
                             "*2\r\n$3\r\nDEL\r\n$0\r\n\r\n";
#define STREAM_LEN (sizeof stream - 1)

/* Appends ev, described, to log. */
static void describe(char *log, size_t cap, const cp__cmd *c) {
    size_t n = strlen(log);
    n += (size_t)snprintf(log + n, cap - n, "%llu-%llu:", (unsigned long long)c->offset,
                          (unsigned long long)c->end);
    for (int i = 0; i < c->argc; i++) {
        n += (size_t)snprintf(log + n, cap - n, " [");
        for (size_t k = 0; k < c->argvlen[i]; k++)
            n += (size_t)snprintf(log + n, cap - n, c->argv[i][k] >= 32 ? "%c" : "\\%d",
                                  c->argv[i][k]);
        n += (size_t)snprintf(log + n, cap - n, "]");
        assert_int_equal(c->argv[i][c->argvlen[i]], '\0');
    }
    snprintf(log + n, cap - n, "\n");
}

/* Feeds len bytes of data in pieces of `piece`; the commands' log into log; the last answer. */
static int run(const char *data, size_t len, size_t piece, char *log, size_t cap) {
    cp__cmdstream *s = cp__cmds_new(BASE);
    assert_non_null(s);
    log[0] = '\0';
    size_t fed = 0;
    int rc;
    cp__cmd c;
    for (;;) {
        rc = cp__cmds_next(s, &c);
        if (rc == CP__CMDS_CMD) {
            describe(log, cap, &c);
            assert_int_equal(cp__cmds_offset(s), c.end);
            continue;
        }
        if (rc == CP__CMDS_ERROR) {
            assert_non_null(cp__cmds_error(s));
            strncat(log, cp__cmds_error(s), cap - strlen(log) - 1);
            break;
        }
        if (fed == len)
            break;
        size_t n = len - fed < piece ? len - fed : piece;
        assert_int_equal(cp__cmds_feed(s, data + fed, n), 0);
        fed += n;
        assert_int_equal(cp__cmds_received(s), BASE + fed);
    }
    cp__cmds_free(s);
    return rc;
}

static void every_piece_size_reads_the_same(void **state) {
    (void)state;
    static char whole[4096], pieces[4096];
    assert_int_equal(run(stream, STREAM_LEN, STREAM_LEN, whole, sizeof whole), CP__CMDS_MORE);
    /* Offsets counted by hand: SET's is 4 + 9 + 7 + 11 bytes, REPLCONF's 4 + 14 + 12 + 7. */
    const char *want = "1000-1023: [SELECT] [0]\n"
                       "1023-1054: [SET] [k] [a\\13\\10b\\0]\n"
                       "1054-1055:\n"
                       "1055-1070: [MULTI]\n"
                       "1070-1091: [INCR] [n]\n"
                       "1091-1105: [EXEC]\n"
                       "1105-1107:\n"
                       "1107-1121: [PING]\n"
                       "1121-1158: [REPLCONF] [GETACK] [*]\n"
                       "1158-1177: [DEL] []\n";
    assert_string_equal(whole, want);
    assert_int_equal(1177 - BASE, STREAM_LEN);
    for (size_t piece = 1; piece <= STREAM_LEN; piece++) {
        assert_int_equal(run(stream, STREAM_LEN, piece, pieces, sizeof pieces), CP__CMDS_MORE);
        assert_string_equal(pieces, want);
    }
}

/* A prefix gives the commands it holds whole, then asks for more: never an error. */
static void every_prefix_asks_for_more(void **state) {
    (void)state;
    static char log[4096];
    for (size_t len = 0; len < STREAM_LEN; len++)
        for (size_t piece = 1; piece <= 7; piece += 6)
            assert_int_equal(run(stream, len, piece, log, sizeof log), CP__CMDS_MORE);
}

static void malformed_streams_are_errors(void **state) {
    (void)state;
    static const struct {
        const char *in, *says;
    } cases[] = {
        {"PING\r\n", "offset 1000: expected a command (a RESP array), found byte 0x50"},
        {"*0\r\n", "an array of 0 elements"},
        {"*-1\r\n", "an array of -1 elements"},
        {"*1x\r\n", "an array's length is not a number"},
        {"*\r\n", "an array's length is not a number"},
        {"*1\n", "an array's length is not a number"},
        {"*1\r\r", "an array's length does not end with CRLF"},
        {"*123456789012345678901234\r\n", "an array's length is not a number"},
        {"*1099511627776\r\n", "an array of 1099511627776 elements"},
        {"*99999999999999999999\r\n", "an array's length is too large"},
        {"*2\r\n$3\r\nSET\r\n:1\r\n", "offset 1013: expected a bulk string (argument 2 of 2)"},
        {"*1\r\n$-1\r\n", "a bulk string of length -1"},
        {"*1\r\n$3\r\nSETX\r\n", "offset 1011: a bulk string does not end with CRLF"},
        {"*1\r\n$3 \r\n", "offset 1005: a bulk string's length is not a number"},
        {"*1\r\n$4294967297\r\n", "a bulk string of length 4294967297"},
        {"\rX", "a CR not followed by LF"},
        {"*1\r\n$4\r\nPING\r\n+OK\r\n", "offset 1014: expected a command"},
    };
    static char log[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t piece = 1; piece <= 64; piece *= 4) {
            assert_int_equal(run(cases[i].in, strlen(cases[i].in), piece, log, sizeof log),
                             CP__CMDS_ERROR);
            assert_contains(log, cases[i].says);
        }
    }
    /* The reader stays in error: feeding more is refused, and next says error again. */
    cp__cmdstream *s = cp__cmds_new(0);
    assert_non_null(s);
    assert_int_equal(cp__cmds_feed(s, "x", 1), 0);
    cp__cmd c;
    assert_int_equal(cp__cmds_next(s, &c), CP__CMDS_ERROR);
    assert_int_equal(cp__cmds_feed(s, "*1\r\n$1\r\na\r\n", 11), -1);
    assert_int_equal(cp__cmds_next(s, &c), CP__CMDS_ERROR);
    cp__cmds_free(s);
}

/* Each byte of the stream replaced by each of a few values: an error, or commands, or a request
 * for more; fed whole or in 3-byte pieces the answer and the commands are the same. */
static void corrupted_bytes_never_crash(void **state) {
    (void)state;
    static const unsigned char values[] = {0, '\r', '\n', '*', '$', '-', '0', '9', 'A', 0xff};
    static char copy[STREAM_LEN];
    static char a[8192], b[8192];
    for (size_t at = 0; at < STREAM_LEN; at++) {
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(copy, stream, STREAM_LEN);
            copy[at] = (char)values[v];
            int whole = run(copy, STREAM_LEN, STREAM_LEN, a, sizeof a);
            int pieces = run(copy, STREAM_LEN, 3, b, sizeof b);
            assert_int_equal(whole, pieces);
            assert_string_equal(a, b);
        }
    }
}

/* 200k arguments, byte by byte: each byte is looked at a bounded number of times. */
static void a_huge_command_byte_by_byte(void **state) {
    (void)state;
    enum { N = 200000 };
    size_t cap = (size_t)N * 16 + 64, len = 0;
    char *big = malloc(cap);
    assert_non_null(big);
    len += (size_t)snprintf(big + len, cap - len, "*%d\r\n$5\r\nRPUSH\r\n", N + 1);
    for (int i = 0; i < N; i++) {
        char num[16];
        int n = snprintf(num, sizeof num, "%d", i);
        len += (size_t)snprintf(big + len, cap - len, "$%d\r\n%s\r\n", n, num);
    }
    cp__cmdstream *s = cp__cmds_new(7);
    assert_non_null(s);
    cp__cmd c;
    int got = 0;
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(cp__cmds_feed(s, big + i, 1), 0);
        int rc = cp__cmds_next(s, &c);
        if (i + 1 < len) {
            assert_int_equal(rc, CP__CMDS_MORE);
            continue;
        }
        assert_int_equal(rc, CP__CMDS_CMD);
        got = 1;
    }
    assert_int_equal(got, 1);
    assert_int_equal(c.argc, N + 1);
    assert_int_equal(c.offset, 7);
    assert_int_equal(c.end, 7 + len);
    assert_int_equal(c.argvlen[N], 6);
    assert_memory_equal(c.argv[N], "199999", 6);
    cp__cmds_free(s);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_piece_size_reads_the_same),
        cmocka_unit_test(every_prefix_asks_for_more),
        cmocka_unit_test(malformed_streams_are_errors),
        cmocka_unit_test(corrupted_bytes_never_crash),
        cmocka_unit_test(a_huge_command_byte_by_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
