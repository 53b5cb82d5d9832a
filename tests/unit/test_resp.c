/* SPDX-License-Identifier: BSD-3-Clause
 *
 * RESP glue: argv formatting matches hiredis byte for byte, formatted commands parse back,
 * redirect and retry errors are classified (and malformed ones are not trusted), addresses parse.
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
#include "lib/cmd/command.h"
#include "lib/proto/replyarena.h"
#include "lib/proto/resp.h"

static void format_matches_hiredis(void **state) {
    (void)state;
    static const char binary[] = "with\r\nCRLF and \0 byte";
    const char *argv[] = {"SET", "key:1", "", binary};
    size_t len[] = {3, 5, 0, sizeof(binary) - 1};
    cp__buf b = {0};
    assert_int_equal(cp__format_argv(&b, 4, argv, len), 0);
    char *ref = NULL;
    int n = redisFormatCommandArgv(&ref, 4, argv, len);
    assert_int_equal((size_t)n, b.len);
    assert_memory_equal(ref, b.data, b.len);
    redisFreeCommand(ref);

    const char *pa[8];
    size_t pl[8];
    assert_int_equal(cp__parse_command(b.data, b.len, pa, pl, 8), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pl[i], len[i]);
        assert_memory_equal(pa[i], argv[i], len[i]);
    }
    /* Only the first max arguments are filled, the count is still the total. */
    assert_int_equal(cp__parse_command(b.data, b.len, pa, pl, 2), 4);
    /* Truncated, trailing junk, wrong shapes. */
    assert_int_equal(cp__parse_command(b.data, b.len - 1, pa, pl, 8), -1);
    cp__buf_append(&b, "x", 1);
    assert_int_equal(cp__parse_command(b.data, b.len, pa, pl, 8), -1);
    assert_int_equal(cp__parse_command("PING\r\n", 6, pa, pl, 8), -1);
    assert_int_equal(cp__parse_command("*1\r\n:1\r\n", 8, pa, pl, 8), -1);
    assert_int_equal(cp__parse_command("*0\r\n", 4, pa, pl, 8), -1);
    assert_int_equal(cp__parse_command("*1\r\n$99999999999999999999999\r\n", 30, pa, pl, 8), -1);
    cp__buf_free(&b);
}

/* Argument counts and lengths on both sides of the one- and two-digit headers and of the short
 * copies (every length up to 40), byte for byte as hiredis formats them. Arguments are distinct
 * stretches of a varied pattern, so a byte copied from the wrong place shows. */
static void format_header_lengths(void **state) {
    (void)state;
    static char big[1200];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7 + 3);
    size_t lens[48], nlens = 0;
    for (size_t l = 0; l <= 40; l++)
        lens[nlens++] = l;
    static const size_t longer[] = {99, 100, 101, 999, 1000};
    for (size_t l = 0; l < sizeof(longer) / sizeof(longer[0]); l++)
        lens[nlens++] = longer[l];
    const char *argv[12];
    size_t len[12];
    for (size_t argc = 1; argc <= 12; argc++)
        for (size_t l = 0; l < nlens; l++) {
            for (size_t i = 0; i < argc; i++) {
                argv[i] = big + (l * 5 + i * 13) % 150;
                len[i] = lens[(l + i) % nlens];
            }
            cp__buf b = {0};
            assert_int_equal(cp__format_argv(&b, (int)argc, argv, len), 0);
            char *ref = NULL;
            int n = redisFormatCommandArgv(&ref, (int)argc, argv, len);
            assert_int_equal((size_t)n, b.len);
            assert_memory_equal(ref, b.data, b.len);
            redisFreeCommand(ref);
            cp__buf_free(&b);
        }
}

/* cp__format_va against hiredis's redisvFormatCommand on the same format and arguments: the
 * same bytes, or both refusing. Returns what cp__format_va returned. */
static int format_both(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    cp__buf b = {0};
    cp__buf_append(&b, "prefix", 6); /* appends after what the buffer holds */
    const char *av[8], *pa[8];
    size_t al[8], pl[8];
    int rc = cp__format_va(&b, fmt, ap, av, al, 8);
    char *ref = NULL;
    int n = redisvFormatCommand(&ref, fmt, ap2);
    va_end(ap2);
    va_end(ap);
    if (n < 0) {
        assert_int_equal(rc, CP_EINVAL);
        assert_int_equal(b.len, 6);
    } else {
        assert_int_ge(rc, 0);
        assert_int_equal(b.len, 6 + (size_t)n);
        assert_memory_equal(b.data, "prefix", 6);
        assert_memory_equal(b.data + 6, ref, (size_t)n);
        /* The arguments it reports are where a parse of the bytes finds them. */
        assert_int_equal(cp__parse_command(b.data + 6, (size_t)n, pa, pl, 8), rc == 0 ? -1 : rc);
        for (int i = 0; i < rc && i < 8; i++) {
            assert_ptr_equal(av[i], pa[i]);
            assert_int_equal(al[i], pl[i]);
        }
    }
    redisFreeCommand(ref);
    cp__buf_free(&b);
    return rc < 0 ? rc : 0;
}

static int format_max(cp__buf *b, const char **av, size_t *al, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__format_va(b, fmt, ap, av, al, 2);
    va_end(ap);
    return rc;
}

static void printf_format(void **state) {
    (void)state;
    static const char binary[] = "a\r\n\0b c";
    static char big[1500];
    memset(big, 'x', sizeof(big) - 1);
    assert_int_equal(format_both("SET %s %s", "k", "v"), 0);
    assert_int_equal(format_both("SET %s %s", "a b", ""), 0); /* a space inside, an empty arg */
    assert_int_equal(format_both("SET %b %b", binary, sizeof(binary) - 1, "", (size_t)0), 0);
    assert_int_equal(format_both("  GET    k  "), 0);
    assert_int_equal(format_both("SET k%sv x%%y{%s}", "-mid-", "tag"), 0);
    assert_int_equal(format_both("GET k%"), 0); /* a last '%' is a byte */
    assert_int_equal(format_both("GET %"), 0);
    assert_int_equal(format_both("%s%s %b%s", "a", "b", "c", (size_t)1, ""), 0);
    assert_int_equal(format_both("%s", ""), 0);
    assert_int_equal(format_both("INCRBY k %d %i %u %x %X %o", -42, 7, 3u, 255u, 255u, 8u), 0);
    assert_int_equal(format_both("X %lld %llu %ld %lu", (long long)INT64_MIN,
                                 (unsigned long long)UINT64_MAX, -5L, 6UL),
                     0);
    assert_int_equal(format_both("X %hhd %hu %hd", 300, 70000, -3), 0);
    /* The plain integer conversions written without snprintf, at their limits. */
    assert_int_equal(
        format_both("X %d %d %d %u %u k%dv", INT32_MIN, INT32_MAX, 0, 0u, UINT32_MAX, -1), 0);
    assert_int_equal(format_both("X %ld %lu %li %lld %llu %lli", (long)INT64_MIN,
                                 (unsigned long)UINT64_MAX, -1L, (long long)INT64_MAX, 0ULL, -10LL),
                     0);
    assert_int_equal(format_both("X %05.2f %e %g %-8d| %+d %#x", 3.14159, 1e300, 0.5, 12, 5, 17u),
                     0);
    assert_int_equal(format_both("X %f", 1e300), 0); /* 301 digits: longer than the first try */
    assert_int_equal(format_both("SET %s %s", big, big + 1400), 0);
    assert_int_equal(format_both("SET k%dv%s %b", 99, big + 1000, big, (size_t)150), 0);
    assert_int_equal(format_both("GET %q", "k"), CP_EINVAL);
    assert_int_equal(format_both("GET %lq", 1L), CP_EINVAL);
    /* A conversion cut off by the end: refused. (Not asked of hiredis 0.14: it hands "%5" to
     * vsnprintf, which AddressSanitizer's interceptor rejects.) */
    cp__buf cut = {0};
    const char *cav[2];
    size_t cal[2];
    assert_int_equal(format_max(&cut, cav, cal, "GET %5"), CP_EINVAL);
    assert_int_equal(cut.len, 0);
    cp__buf_free(&cut);
    assert_int_equal(format_both("GET %hf", 1.0), CP_EINVAL);
    assert_int_equal(format_both(""), 0);
    /* More arguments than the caller's arrays hold: counted, the arrays untouched past max. */
    cp__buf b = {0};
    const char *av[2] = {NULL, NULL};
    size_t al[2] = {0, 0};
    assert_int_equal(format_max(&b, av, al, "A B C D"), 4);
    assert_null(av[0]);
    cp__buf_free(&b);
}

static cp__reply_arena arena; /* replies made here live until the test resets it */

static redisReply *err(const char *s) {
    redisReply *r = cp__arena_error(&arena, s);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    return r;
}

static void classify(void **state) {
    (void)state;
    int slot = -1, port = -1;
    char host[64];
    redisReply *r = err("MOVED 3999 127.0.0.1:6381");
    assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_MOVED);
    assert_int_equal(slot, 3999);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 6381);

    r = err("ASK 16383 [::1]:7000");
    assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_ASK);
    assert_int_equal(slot, 16383);
    assert_string_equal(host, "::1");

    r = err("MOVED 12 :7001"); /* Redis leaves the host out when it does not know it */
    assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_MOVED);
    assert_string_equal(host, "");
    assert_int_equal(port, 7001);

    const char *other[] = {"MOVED",        "MOVED x 1.2.3.4:5",  "MOVED 16384 h:1", "MOVED 1 h",
                           "MOVED 1 h:0",  "MOVED 1 h:99999",    "ASKING is fine",  "ERR boom",
                           "MOVEDX 1 h:1", "WRONGTYPE Operation"};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        r = err(other[i]);
        assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_OTHER);
    }
    r = err("TRYAGAIN Multiple keys request during rehashing of slot");
    assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_TRYAGAIN);
    r = err("CLUSTERDOWN The cluster is down");
    assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_CLUSTERDOWN);
    r = err("LOADING Redis is loading the dataset in memory");
    assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_LOADING);
    r = cp__arena_status(&arena, "OK");
    assert_int_equal(cp__classify(r, &slot, host, sizeof(host), &port), CP__ERR_NONE);
    /* CR/LF inside a locally made error cannot break the line. */
    r = err("bad\r\nthing");
    assert_string_equal(r->str, "bad  thing");
    cp__arena_free(&arena);
}

static void commands(void **state) {
    (void)state;
    const cp__cmdinfo *ci = cp__cmd_lookup("get", 3);
    assert_string_equal(ci->name, "GET");
    assert_true(ci->flags & CP__CMD_READONLY);
    assert_string_equal(cp__cmd_lookup("EVAL_RO", 7)->name, "EVAL_RO");
    assert_string_equal(cp__cmd_lookup("evalsha", 7)->name, "EVALSHA");
    assert_string_equal(cp__cmd_lookup("Set", 3)->name, "SET");
    assert_false(cp__cmd_lookup("SET", 3)->flags & CP__CMD_READONLY);
    assert_string_equal(cp__cmd_lookup("NOSUCH", 6)->name, "");
    assert_string_equal(cp__cmd_lookup("GE", 2)->name, "");
    assert_string_equal(cp__cmd_lookup("GETX", 4)->name, "");

    int first, step;
    const char *mset[] = {"MSET", "a", "1", "b", "2"};
    size_t msl[] = {4, 1, 1, 1, 1};
    ci = cp__cmd_lookup("MSET", 4);
    assert_int_equal(cp__cmd_keyspan(ci, 5, mset, msl, &first, &step), 2);
    assert_int_equal(first, 1);
    assert_int_equal(step, 2);
    const char *eval[] = {"EVAL", "return 1", "2", "k1", "k2", "arg"};
    size_t el[] = {4, 8, 1, 2, 2, 3};
    ci = cp__cmd_lookup("EVAL", 4);
    assert_int_equal(cp__cmd_keyspan(ci, 6, eval, el, &first, &step), 2);
    assert_int_equal(first, 3);
    eval[2] = "9";
    assert_int_equal(cp__cmd_keyspan(ci, 6, eval, el, &first, &step), 0);
    eval[2] = "x";
    assert_int_equal(cp__cmd_keyspan(ci, 6, eval, el, &first, &step), 0);
    const char *ping[] = {"PING"};
    size_t pl[] = {4};
    assert_int_equal(cp__cmd_keyspan(cp__cmd_lookup("PING", 4), 1, ping, pl, &first, &step), 0);
    const char *get[] = {"GET"};
    assert_int_equal(cp__cmd_keyspan(cp__cmd_lookup("GET", 3), 1, get, pl, &first, &step), 0);
}

static void addresses(void **state) {
    (void)state;
    char host[16];
    int port;
    assert_int_equal(cp__parse_addr("127.0.0.1:7000", 14, host, sizeof(host), &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 7000);
    assert_int_equal(cp__parse_addr("localhost", 9, host, sizeof(host), &port), -1);
    assert_int_equal(cp__parse_addr("h:", 2, host, sizeof(host), &port), -1);
    assert_int_equal(cp__parse_addr("h:65536", 7, host, sizeof(host), &port), -1);
    assert_int_equal(cp__parse_addr("h:12a", 5, host, sizeof(host), &port), -1);
    assert_int_equal(cp__parse_addr("averyveryverylonghostname:1", 27, host, sizeof(host), &port),
                     -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_matches_hiredis),
        cmocka_unit_test(format_header_lengths),
        cmocka_unit_test(printf_format),
        cmocka_unit_test(classify),
        cmocka_unit_test(commands),
        cmocka_unit_test(addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
