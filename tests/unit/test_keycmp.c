/* SPDX-License-Identifier: BSD-3-Clause
 *
 * One key's comparison (src/migrate/keycmp.h) fed scripted replies: each step's commands to
 * either side are checked, then the replies given (RESP text) are taken. A string equal with
 * expiries within the tolerance; an expiry past it; a key missing, gone from the source, or
 * expiring and gone on the target; another type; a list whose second piece differs; a set whose
 * SSCAN piece came whole (2,500 members) asked of the target 1,000 at a time; sorted-set scores
 * compared as numbers; a hash field missing; a stream group's last-delivered-id; and replies of
 * the wrong shape or errors, which are differences named, never a crash.
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
#include "testutil.h"

#include "migrate/keycmp.h"

#define NOW 100000
#define TOLERANCE 1000

/* The commands a step appended to one side: joined "CMD arg ...;CMD ...", and the last one's
 * argument count. */
typedef struct side_log {
    char text[512];
    int n, last_argc;
} side_log;

static int record(void *arg, int argc, const char **argv, const size_t *argvlen) {
    side_log *l = arg;
    size_t at = strlen(l->text);
    for (int i = 0; i < argc && at + 1 < sizeof l->text; i++)
        at += (size_t)snprintf(l->text + at, sizeof l->text - at, "%s%.*s",
                               i ? " " : (l->n ? ";" : ""),
                               (int)(argvlen[i] > 40 ? 40 : argvlen[i]), argv[i]);
    l->n++;
    l->last_argc = argc;
    return 0;
}

static redisReply *parse(const char *resp) {
    redisReply *r = cp_test_parse_reply(resp, strlen(resp));
    if (r == NULL)
        fail_msg("not one reply: %s", resp);
    return r;
}

/* One step: the commands appended must be want_src and want_dst ("" for none); then the replies
 * (as many as commands) are taken. Returns cp__kc_take's result. */
static int step(cp__keycmp *k, const char *want_src, const char *want_dst, const char *const *src,
                const char *const *dst, side_log *ls, side_log *ld) {
    memset(ls, 0, sizeof *ls);
    memset(ld, 0, sizeof *ld);
    cp__kc_side s = {record, ls}, d = {record, ld};
    int ns, nd;
    assert_int_equal(cp__kc_append(k, &s, &d, &ns, &nd), 0);
    assert_int_equal(ns, ls->n);
    assert_int_equal(nd, ld->n);
    if (want_src != NULL)
        assert_string_equal(ls->text, want_src);
    if (want_dst != NULL)
        assert_string_equal(ld->text, want_dst);
    redisReply *sr[4] = {0}, *dr[4] = {0};
    for (int i = 0; i < ns; i++)
        sr[i] = parse(src[i]);
    for (int i = 0; i < nd; i++)
        dr[i] = parse(dst[i]);
    int rc = cp__kc_take(k, sr, (const redisReply *const *)dr);
    for (int i = 0; i < 4; i++) {
        freeReplyObject(sr[i]);
        freeReplyObject(dr[i]);
    }
    return rc;
}

#define STEP(k, ws, wd, src, dst) step(k, ws, wd, src, dst, &ls, &ld)
#define R(...) ((const char *const[]){__VA_ARGS__})

static cp__keycmp *key(void) {
    cp__keycmp *k = cp__kc_new("k", 1, TOLERANCE, NOW);
    assert_non_null(k);
    return k;
}

static cp__kc_reason result(cp__keycmp *k, const char **detail) {
    cp__kc_reason r = cp__kc_result(k, detail);
    return r;
}

static void string_equal_within_the_tolerance(void **state) {
    (void)state;
    side_log ls, ld;
    cp__keycmp *k = key();
    assert_int_equal(STEP(k, "TYPE k;PEXPIRETIME k", "TYPE k;PEXPIRETIME k",
                          R("+string\r\n", ":100500\r\n"), R("+string\r\n", ":101400\r\n")),
                     0);
    assert_int_equal(STEP(k, "STRLEN k", "STRLEN k", R(":5\r\n"), R(":5\r\n")), 0);
    assert_int_equal(STEP(k, "GETRANGE k 0 1048575", "GETRANGE k 0 1048575", R("$5\r\nhello\r\n"),
                          R("$5\r\nhello\r\n")),
                     1);
    assert_int_equal(result(k, NULL), CP__KC_SAME);
    assert_int_equal(cp__kc_type_of(k), CP__KC_STRING);
    cp__kc_free(k);
}

static void an_expiry_past_the_tolerance(void **state) {
    (void)state;
    side_log ls, ld;
    cp__keycmp *k = key();
    STEP(k, NULL, NULL, R("+string\r\n", ":100500\r\n"), R("+string\r\n", ":102000\r\n"));
    STEP(k, NULL, NULL, R(":1\r\n"), R(":1\r\n"));
    assert_int_equal(STEP(k, NULL, NULL, R("$1\r\nx\r\n"), R("$1\r\nx\r\n")), 1);
    const char *why;
    assert_int_equal(result(k, &why), CP__KC_TTL);
    assert_contains(why, "expires in 500 ms at the source, 2000 ms on the target");
    cp__kc_free(k);
    /* No expiry on one side. */
    k = key();
    STEP(k, NULL, NULL, R("+string\r\n", ":-1\r\n"), R("+string\r\n", ":200000\r\n"));
    STEP(k, NULL, NULL, R(":1\r\n"), R(":1\r\n"));
    STEP(k, NULL, NULL, R("$1\r\nx\r\n"), R("$1\r\nx\r\n"));
    assert_int_equal(result(k, &why), CP__KC_TTL);
    assert_contains(why, "expires in none at the source, 100000 ms on the target");
    cp__kc_free(k);
}

static void missing_gone_or_expiring(void **state) {
    (void)state;
    side_log ls, ld;
    static const struct {
        const char *src_type, *src_exp;
        cp__kc_reason want;
    } cases[] = {
        {"+string\r\n", ":-1\r\n", CP__KC_MISSING},
        {"+string\r\n", ":200000\r\n", CP__KC_MISSING},  /* expiring past the tolerance */
        {"+string\r\n", ":100900\r\n", CP__KC_VANISHED}, /* within it: it may be gone */
        {"+none\r\n", ":-2\r\n", CP__KC_VANISHED},       /* gone from the source */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cp__keycmp *k = key();
        assert_int_equal(
            STEP(k, NULL, NULL, R(cases[i].src_type, cases[i].src_exp), R("+none\r\n", ":-2\r\n")),
            1);
        assert_int_equal(result(k, NULL), cases[i].want);
        cp__kc_free(k);
    }
    cp__keycmp *k = key();
    assert_int_equal(STEP(k, NULL, NULL, R("+list\r\n", ":-1\r\n"), R("+set\r\n", ":-1\r\n")), 1);
    const char *why;
    assert_int_equal(result(k, &why), CP__KC_TYPE);
    assert_string_equal(why, "list at the source, set on the target");
    cp__kc_free(k);
}

/* "*n\r\n" and n bulk strings: prefix then the index, the one at `odd` (if >= 0) "other". */
static char *array_of(const char *prefix, int from, int n, int odd) {
    size_t cap = (size_t)n * 40 + 32, at = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    at += (size_t)snprintf(s, cap, "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        char e[32];
        int len = i == odd ? snprintf(e, sizeof e, "other")
                           : snprintf(e, sizeof e, "%s%d", prefix, from + i);
        at += (size_t)snprintf(s + at, cap - at, "$%d\r\n%s\r\n", len, e);
    }
    return s;
}

static void a_list_differs_in_its_second_piece(void **state) {
    (void)state;
    side_log ls, ld;
    cp__keycmp *k = key();
    STEP(k, NULL, NULL, R("+list\r\n", ":-1\r\n"), R("+list\r\n", ":-1\r\n"));
    assert_int_equal(STEP(k, "LLEN k", "LLEN k", R(":1500\r\n"), R(":1500\r\n")), 0);
    char *a = array_of("e", 0, 1000, -1);
    assert_int_equal(STEP(k, "LRANGE k 0 999", "LRANGE k 0 999", R(a), R(a)), 0);
    free(a);
    a = array_of("e", 1000, 500, -1);
    char *b = array_of("e", 1000, 500, 3);
    assert_int_equal(STEP(k, "LRANGE k 1000 1999", "LRANGE k 1000 1999", R(a), R(b)), 1);
    const char *why;
    assert_int_equal(result(k, &why), CP__KC_VALUE);
    assert_string_equal(why, "element 1003 differs (list)");
    free(a);
    free(b);
    cp__kc_free(k);
}

/* "*2\r\n$1\r\n0\r\n" + an array of members m0..m(n-1): an SSCAN reply, the scan done. */
static char *sscan_reply(int n) {
    char *members = array_of("m", 0, n, -1);
    size_t len = strlen(members) + 32;
    char *s = malloc(len);
    assert_non_null(s);
    snprintf(s, len, "*2\r\n$1\r\n0\r\n%s", members);
    free(members);
    return s;
}

/* ":1" n times, ":0" at odd. */
static char *ones(int n, int odd) {
    char *s = malloc((size_t)n * 5 + 16);
    assert_non_null(s);
    size_t at = (size_t)sprintf(s, "*%d\r\n", n);
    for (int i = 0; i < n; i++)
        at += (size_t)sprintf(s + at, ":%d\r\n", i == odd ? 0 : 1);
    return s;
}

static void a_set_piece_that_came_whole_is_asked_1000_at_a_time(void **state) {
    (void)state;
    side_log ls, ld;
    cp__keycmp *k = key();
    STEP(k, NULL, NULL, R("+set\r\n", ":-1\r\n"), R("+set\r\n", ":-1\r\n"));
    assert_int_equal(STEP(k, "SCARD k", "SCARD k", R(":2500\r\n"), R(":2500\r\n")), 0);
    char *piece = sscan_reply(2500);
    assert_int_equal(STEP(k, "SSCAN k 0 COUNT 1000", "", R(piece), R(NULL)), 0);
    free(piece);
    char *yes = ones(1000, -1);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(STEP(k, "", NULL, R(NULL), R(yes)), 0);
        assert_int_equal(ld.last_argc, 1002); /* SMISMEMBER k and 1,000 members */
    }
    free(yes);
    char *last = ones(500, 100);
    assert_int_equal(STEP(k, "", NULL, R(NULL), R(last)), 1);
    assert_int_equal(ld.last_argc, 502);
    free(last);
    const char *why;
    assert_int_equal(result(k, &why), CP__KC_VALUE);
    assert_string_equal(why, "member \"m2100\" is not on the target (set)");
    cp__kc_free(k);
}

static void sorted_set_scores_compare_as_numbers(void **state) {
    (void)state;
    side_log ls, ld;
    for (int differ = 0; differ < 2; differ++) {
        cp__keycmp *k = key();
        STEP(k, NULL, NULL, R("+zset\r\n", ":-1\r\n"), R("+zset\r\n", ":-1\r\n"));
        STEP(k, "ZCARD k", "ZCARD k", R(":1\r\n"), R(":1\r\n"));
        const char *dst =
            differ ? "*2\r\n$1\r\na\r\n$3\r\n2.6\r\n" : "*2\r\n$1\r\na\r\n$4\r\n2.50\r\n";
        assert_int_equal(STEP(k, "ZRANGE k 0 999 WITHSCORES", "ZRANGE k 0 999 WITHSCORES",
                              R("*2\r\n$1\r\na\r\n$3\r\n2.5\r\n"), R(dst)),
                         1);
        assert_int_equal(result(k, NULL), differ ? CP__KC_VALUE : CP__KC_SAME);
        cp__kc_free(k);
    }
}

static void a_hash_field_missing_on_the_target(void **state) {
    (void)state;
    side_log ls, ld;
    cp__keycmp *k = key();
    STEP(k, NULL, NULL, R("+hash\r\n", ":-1\r\n"), R("+hash\r\n", ":-1\r\n"));
    STEP(k, "HLEN k", "HLEN k", R(":2\r\n"), R(":2\r\n"));
    assert_int_equal(
        STEP(k, "HSCAN k 0 COUNT 1000", "",
             R("*2\r\n$1\r\n0\r\n*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n"), R(NULL)),
        0);
    assert_int_equal(STEP(k, "", "HMGET k f1 f2", R(NULL), R("*2\r\n$2\r\nv1\r\n$-1\r\n")), 1);
    const char *why;
    assert_int_equal(result(k, &why), CP__KC_VALUE);
    assert_string_equal(why, "field \"f2\" is not on the target (hash)");
    cp__kc_free(k);
}

static void a_stream_groups_last_delivered_id(void **state) {
    (void)state;
    side_log ls, ld;
    cp__keycmp *k = key();
    STEP(k, NULL, NULL, R("+stream\r\n", ":-1\r\n"), R("+stream\r\n", ":-1\r\n"));
    static const char info[] = "*2\r\n$17\r\nlast-generated-id\r\n$3\r\n5-0\r\n";
    static const char g_src[] = "*1\r\n*8\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n"
                                "$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$3\r\n3-0\r\n";
    static const char g_dst[] = "*1\r\n*8\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n"
                                "$7\r\npending\r\n:3\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n";
    assert_int_equal(STEP(k, "XLEN k;XINFO STREAM k;XINFO GROUPS k",
                          "XLEN k;XINFO STREAM k;XINFO GROUPS k", R(":5\r\n", info, g_src),
                          R(":5\r\n", info, g_dst)),
                     1);
    const char *why;
    assert_int_equal(result(k, &why), CP__KC_VALUE);
    assert_string_equal(why, "consumer group 0: its last-delivered-id differs (stream)");
    cp__kc_free(k);
}

static void replies_of_the_wrong_shape_are_differences(void **state) {
    (void)state;
    side_log ls, ld;
    cp__keycmp *k = key();
    STEP(k, NULL, NULL, R("+set\r\n", ":-1\r\n"), R("+set\r\n", ":-1\r\n"));
    STEP(k, NULL, NULL, R(":2\r\n"), R(":2\r\n"));
    assert_int_equal(STEP(k, NULL, NULL, R("*2\r\n$1\r\n0\r\n*2\r\n:1\r\n:2\r\n"), R(NULL)), 1);
    const char *why;
    assert_int_equal(result(k, &why), CP__KC_VALUE);
    assert_contains(why, "the source answered an unexpected reply");
    cp__kc_free(k);
    k = key();
    STEP(k, NULL, NULL, R("+string\r\n", ":-1\r\n"), R("+string\r\n", ":-1\r\n"));
    STEP(k, NULL, NULL, R(":1\r\n"), R(":1\r\n"));
    assert_int_equal(STEP(k, NULL, NULL, R("$1\r\nx\r\n"), R("-ERR broken\r\n")), 1);
    assert_int_equal(result(k, &why), CP__KC_VALUE);
    assert_contains(why, "the target answered ERR broken");
    cp__kc_free(k);
    k = key();
    assert_int_equal(STEP(k, NULL, NULL, R(":1\r\n", ":-1\r\n"), R("+string\r\n", ":-1\r\n")), 1);
    assert_int_equal(result(k, &why), CP__KC_VALUE);
    cp__kc_free(k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(string_equal_within_the_tolerance),
        cmocka_unit_test(an_expiry_past_the_tolerance),
        cmocka_unit_test(missing_gone_or_expiring),
        cmocka_unit_test(a_list_differs_in_its_second_piece),
        cmocka_unit_test(a_set_piece_that_came_whole_is_asked_1000_at_a_time),
        cmocka_unit_test(sorted_set_scores_compare_as_numbers),
        cmocka_unit_test(a_hash_field_missing_on_the_target),
        cmocka_unit_test(a_stream_groups_last_delivered_id),
        cmocka_unit_test(replies_of_the_wrong_shape_are_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
