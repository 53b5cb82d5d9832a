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

#include "lib/command.h"
#include "lib/replyarena.h"
#include "lib/resp.h"

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

static void printf_format(void **state) {
    (void)state;
    cp__buf b = {0};
    va_list ap;
    (void)ap;
    assert_int_equal(cp__buf_append(&b, "", 0), 0);
    const char *pa[4];
    size_t pl[4];
    char *ref = NULL;
    int n = redisFormatCommand(&ref, "GET %s", "a b");
    assert_true(n > 0);
    assert_int_equal(cp__parse_command(ref, (size_t)n, pa, pl, 4), 2);
    assert_int_equal(pl[1], 3);
    redisFreeCommand(ref);
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
