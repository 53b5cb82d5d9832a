/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for the bench's command templates (src/bench/template.c): redis-cli's splitting
 * (spaces, "..." with escapes, '...'), every placeholder expanded to the bytes it stands for
 * (__key__, __data__, __tag__ in __key__'s slot for both key layouts, __otherkey__ per
 * occurrence), the templates refused and why, which templates are routed by __key__'s slot and
 * which replies get which check, the weights and the schedule (any prefix of a stream within one
 * request of each template's share), and the shell-quoted flags that reproduce a set.
 * Single-threaded, no I/O.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "asserts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/keyspace.h"
#include "bench/template.h"
#include "clusterpipe/clusterpipe.h"

static void parse_ok(const char *text, cp__template *t) {
    char err[256] = "";
    if (cp__template_parse(text, t, err, sizeof(err)) != 0)
        fail_msg("'%s' refused: %s", text, err);
}

static void parse_bad(const char *text, const char *why) {
    cp__template t;
    char err[256] = "";
    if (cp__template_parse(text, &t, err, sizeof(err)) != CP_EINVAL)
        fail_msg("'%s' was accepted", text);
    if (strstr(err, why) == NULL)
        fail_msg("'%s': '%s' does not say '%s'", text, err, why);
}

/* Expands t for key (with value `data`, other keys o1, o2) and checks argv against want[]
 * (NULL-terminated, compared byte for byte with explicit lengths from wantlen when given). */
static void expand_is(const cp__template *t, const char *key, const char *data, const char *o1,
                      const char *o2, const char *const *want) {
    char tag[128], scratch[4096];
    size_t taglen = cp__key_tag(key, strlen(key), tag);
    const char *other[2] = {o1, o2};
    size_t otherlen[2] = {o1 ? strlen(o1) : 0, o2 ? strlen(o2) : 0};
    cp__tmpl_subst sub = {key, strlen(key), data,  data ? strlen(data) : 0,
                          tag, taglen,      other, otherlen};
    assert_int_le(cp__template_scratch(t, strlen(key), data ? strlen(data) : 0), sizeof(scratch));
    const char *argv[CP__TEMPLATE_ARGS_MAX];
    size_t argvlen[CP__TEMPLATE_ARGS_MAX];
    int argc = cp__template_expand(t, &sub, scratch, argv, argvlen);
    int n = 0;
    while (want[n] != NULL)
        n++;
    assert_int_equal(argc, n);
    for (int k = 0; k < n; k++)
        if (argvlen[k] != strlen(want[k]) || memcmp(argv[k], want[k], argvlen[k]) != 0)
            fail_msg("argument %d is '%.*s', want '%s'", k, (int)argvlen[k], argv[k], want[k]);
}

static void test_split_like_redis_cli(void **state) {
    (void)state;
    cp__template t;
    parse_ok("  hset   __key__ \"a b\" 'c d'  ", &t);
    assert_string_equal(t.name, "HSET");
    expand_is(&t, "key:1", NULL, NULL, NULL, (const char *[]){"hset", "key:1", "a b", "c d", NULL});
    parse_ok("SET __key__ \"\\x41\\n\\t\\\"q\\\\\" 'it\\'s'", &t);
    expand_is(&t, "k", NULL, NULL, NULL, (const char *[]){"SET", "k", "A\n\t\"q\\", "it's", NULL});
    /* quotes inside a word start a quoted part of that word, as in redis-cli */
    parse_ok("SET pre\"fix x\" \"\"", &t);
    expand_is(&t, "k", NULL, NULL, NULL, (const char *[]){"SET", "prefix x", "", NULL});
    /* placeholders are found after unquoting, also inside quotes and inside words */
    parse_ok("HSET \"__tag__:h\" f-__key__-g __data__", &t);
    expand_is(&t, "key:7", "VAL", NULL, NULL,
              (const char *[]){"HSET", "{key:7}:h", "f-key:7-g", "VAL", NULL});
    assert_int_equal(t.nkey, 1);
    assert_int_equal(t.ntag, 1);
    assert_int_equal(t.ndata, 1);
    assert_int_equal(t.nother, 0);
}

static void test_refused(void **state) {
    (void)state;
    parse_bad("", "empty");
    parse_bad("   \t ", "empty");
    parse_bad("GET \"__key__", "unbalanced quotes");
    parse_bad("GET '__key__", "unbalanced quotes");
    parse_bad("GET \"__key__\"x", "unbalanced quotes");
    parse_bad("GET '__key__'x", "unbalanced quotes");
    parse_bad("GET __keys__", "unknown placeholder '__keys__'");
    parse_bad("GET __Key__", "unknown placeholder '__Key__'");
    parse_bad("SET __rand_int__ v", "unknown placeholder '__rand_int__'");
    parse_bad("GET x__value__y", "unknown placeholder '__value__'");
    parse_bad("__key__ x", "command name cannot be a placeholder");
    parse_bad("\"\" x", "is not a command name");
    char big[CP__TEMPLATE_LEN_MAX + 8];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    parse_bad(big, "longer than");
    char many[1024] = "MGET";
    for (int i = 0; i < CP__TEMPLATE_ARGS_MAX; i++)
        strcat(many, " k");
    parse_bad(many, "more than 64 arguments");
    /* not placeholders: no name, or no closing pair */
    cp__template t;
    parse_ok("SET ____ a__b __", &t);
    expand_is(&t, "k", NULL, NULL, NULL, (const char *[]){"SET", "____", "a__b", "__", NULL});
}

static void test_placeholders(void **state) {
    (void)state;
    cp__template t;
    /* __tag__: a hash-tagged prefix in __key__'s slot, for spread and per-master keys */
    const char *keys[] = {"key:42", "key:0", "key:{06S}:000000000042", "a{b"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char tag[64], sub[80];
        size_t n = cp__key_tag(keys[i], strlen(keys[i]), tag);
        int m = snprintf(sub, sizeof(sub), "%.*s:h", (int)n, tag);
        if (cp_keyslot(sub, (size_t)m) != cp_keyslot(keys[i], strlen(keys[i])))
            fail_msg("%s: %s is in slot %u, the key in %u", keys[i], sub,
                     cp_keyslot(sub, (size_t)m), cp_keyslot(keys[i], strlen(keys[i])));
    }
    char tag[64];
    assert_int_equal(cp__key_tag("key:42", 6, tag), 8);
    assert_memory_equal(tag, "{key:42}", 8);
    assert_int_equal(cp__key_tag("key:{06S}:000000000042", 22, tag), 22);
    /* __data__: the bench's verifiable value of __key__ */
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init(&vf, 64, 12, true), 0);
    char val[64];
    cp__value_fill(&vf, "key:5", 5, 2, val);
    parse_ok("SET __key__ __data__", &t);
    char vs[65];
    memcpy(vs, val, 64);
    vs[64] = '\0';
    expand_is(&t, "key:5", vs, NULL, NULL, (const char *[]){"SET", "key:5", vs, NULL});
    assert_int_equal(cp__value_verify(&vf, vs, 64, "key:5", 5, NULL), CP__VERIFY_OK);
    cp__valuefmt_free(&vf);
    /* __otherkey__: one key per occurrence, in order */
    parse_ok("MGET __key__ __otherkey__ x:__otherkey__", &t);
    assert_int_equal(t.nother, 2);
    expand_is(&t, "key:1", NULL, "key:8", "key:9",
              (const char *[]){"MGET", "key:1", "key:8", "x:key:9", NULL});
    /* every placeholder twice in one argument */
    parse_ok("SET __key____key__ __tag____tag__", &t);
    expand_is(&t, "k", NULL, NULL, NULL, (const char *[]){"SET", "kk", "{k}{k}", NULL});
    assert_int_equal(cp__template_scratch(&t, 10, 100), 10 + 10 + 12 + 12);
}

static void test_routing_and_checks(void **state) {
    (void)state;
    static const struct {
        const char *text;
        int by_slot;
        cp__tmpl_check check;
        int first, stride;
    } cases[] = {
        {"GET __key__", 1, CP__CHECK_VALUE, 0, 1},
        {"get __tag__:s", 1, CP__CHECK_VALUE, 0, 1},
        {"GET __key__:s", 0, CP__CHECK_VALUE, 0, 1}, /* not in __key__'s slot for spread keys */
        {"GET literal", 0, CP__CHECK_NONE, 0, 1},
        {"GET __otherkey__", 0, CP__CHECK_NONE, 0, 1},
        {"SET __key__ __data__", 1, CP__CHECK_NONE, 0, 1},
        {"HSET __tag__:h f __data__", 1, CP__CHECK_NONE, 0, 1},
        {"HGET __tag__:h f", 1, CP__CHECK_VALUE, 0, 1},
        {"HMGET __tag__:h f g", 1, CP__CHECK_VALUES, 0, 1},
        {"HGETALL __tag__:h", 1, CP__CHECK_VALUES, 1, 2},
        {"LPUSH __tag__:l __data__", 1, CP__CHECK_NONE, 0, 1},
        {"LRANGE __tag__:l 0 -1", 1, CP__CHECK_VALUES, 0, 1},
        {"LPOP __tag__:l", 1, CP__CHECK_VALUE, 0, 1},
        {"LPOP __tag__:l 2", 1, CP__CHECK_VALUES, 0, 1},
        {"ZADD __tag__:z 1 __data__", 1, CP__CHECK_NONE, 0, 1},
        {"ZRANGEBYSCORE __tag__:z -inf +inf", 1, CP__CHECK_VALUES, 0, 1},
        {"ZRANGEBYSCORE __tag__:z -inf +inf withscores", 1, CP__CHECK_VALUES, 0, 2},
        {"INCR __tag__:n", 1, CP__CHECK_COUNTER, 0, 1},
        {"INCRBY __tag__:n 5", 1, CP__CHECK_COUNTER, 0, 1},
        {"INCRBY __tag__:n -5", 1, CP__CHECK_NONE, 0, 1},
        {"INCRBY __tag__:n 0", 1, CP__CHECK_NONE, 0, 1},
        {"HINCRBY __tag__:h c 2", 1, CP__CHECK_COUNTER, 0, 1},
        {"DECR __tag__:n", 1, CP__CHECK_NONE, 0, 1},
        {"EVALSHA abc 1 __tag__:e __data__", 0, CP__CHECK_NONE, 0, 1},
        {"MGET __key__ __otherkey__", 0, CP__CHECK_NONE, 0, 1},
        {"MSET __key__ __data__ __tag__:b __data__", 1, CP__CHECK_NONE, 0, 1},
        {"PING", 0, CP__CHECK_NONE, 0, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cp__template t;
        parse_ok(cases[i].text, &t);
        if ((int)t.by_slot != cases[i].by_slot || t.check != cases[i].check ||
            t.first != cases[i].first || t.stride != cases[i].stride)
            fail_msg("'%s': by_slot %d check %s first %d stride %d", cases[i].text, t.by_slot,
                     cp__tmpl_check_str(t.check), t.first, t.stride);
        assert_int_equal(t.read,
                         cases[i].check == CP__CHECK_VALUE || cases[i].check == CP__CHECK_VALUES);
    }
}

/* Every prefix of every client's stream holds each template's share to within one request. */
static void check_schedule(const char *ratio, int n) {
    const char *texts[CP__COMMANDS_MAX];
    for (int k = 0; k < n; k++)
        texts[k] = "GET __key__";
    cp__cmdset *s;
    char err[256];
    if (cp__cmdset_new(texts, n, ratio, &s, err, sizeof(err)) != 0)
        fail_msg("%s: %s", ratio ? ratio : "(none)", err);
    double total = 0;
    for (int k = 0; k < n; k++)
        total += s->weight[k];
    uint64_t count[CP__COMMANDS_MAX] = {0};
    for (uint64_t m = 0; m < 3 * s->period + 7; m++) {
        unsigned k = cp__cmdset_pick(s, m);
        assert_int_lt(k, (unsigned)n);
        count[k]++;
        for (int j = 0; j < n; j++) {
            double want = (double)(m + 1) * s->weight[j] / total;
            if (fabs((double)count[j] - want) >= 1.0)
                fail_msg("%s: after %llu requests template %d ran %llu times, its share is %.3f",
                         ratio ? ratio : "(none)", (unsigned long long)m + 1, j,
                         (unsigned long long)count[j], want);
        }
    }
    cp__cmdset_free(s);
}

static void test_weights(void **state) {
    (void)state;
    check_schedule(NULL, 1);
    check_schedule(NULL, 3);
    check_schedule("3,1", 2);
    check_schedule("300,100", 2);
    check_schedule("5,3,1", 3);
    check_schedule("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", 16);
    check_schedule("10000,1,7", 3);
    check_schedule("997,991,983", 3);
    const char *two[] = {"GET __key__", "SET __key__ __data__"};
    cp__cmdset *s;
    char err[256];
    assert_int_equal(cp__cmdset_new(two, 2, "300,100", &s, err, sizeof(err)), 0);
    assert_int_equal(s->period, 4); /* divided by the greatest common divisor */
    assert_string_equal(s->ratio, "300,100");
    cp__cmdset_free(s);
    assert_int_equal(cp__cmdset_new(two, 2, NULL, &s, err, sizeof(err)), 0);
    assert_string_equal(s->ratio, "1,1");
    assert_int_equal(s->period, 2);
    cp__cmdset_free(s);
    static const struct {
        const char *ratio, *why;
    } bad[] = {
        {"3", "has 1 weight for 2"},
        {"3,1,1", "more weights than"},
        {"3,0", "in [1, 10000]"},
        {"3,10001", "in [1, 10000]"},
        {"3,x", "is not a list of weights"},
        {"3,", "is not a list of weights"},
        {"", "is not a list of weights"},
        {"-3,1", "is not a list of weights"},
        {"3:1", "is not a list of weights"},
        {"3,1 ", "is not a list of weights"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (cp__cmdset_new(two, 2, bad[i].ratio, &s, err, sizeof(err)) != CP_EINVAL)
            fail_msg("--command-ratio '%s' was accepted", bad[i].ratio);
        if (strstr(err, bad[i].why) == NULL)
            fail_msg("'%s': '%s' does not say '%s'", bad[i].ratio, err, bad[i].why);
        assert_null(s);
    }
    const char *one_bad[] = {"GET __key__", "GET __nope__"};
    assert_int_equal(cp__cmdset_new(one_bad, 2, NULL, &s, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "the 2. --command"));
    assert_non_null(strstr(err, "__nope__"));
}

static void test_flags_and_label(void **state) {
    (void)state;
    const char *texts[] = {"HSET __tag__:h f __data__", "HGET __tag__:h 'it''s'"};
    cp__cmdset *s;
    char err[256], buf[1024];
    /* 'it''s' is two quoted words... not valid: closing quote must be followed by a space */
    assert_int_equal(cp__cmdset_new(texts, 2, "3,1", &s, err, sizeof(err)), CP_EINVAL);
    texts[1] = "HGET __tag__:h \"it's\"";
    assert_int_equal(cp__cmdset_new(texts, 2, "3,1", &s, err, sizeof(err)), 0);
    cp__cmdset_flags(s, buf, sizeof(buf));
    assert_string_equal(buf, " --command 'HSET __tag__:h f __data__' --command 'HGET __tag__:h "
                             "\"it'\\''s\"' --command-ratio 3,1");
    cp__cmdset_label(s, buf, sizeof(buf));
    assert_string_equal(buf, "HSET/HGET");
    cp__cmdset_free(s);
    const char *many[CP__COMMANDS_MAX];
    for (int k = 0; k < CP__COMMANDS_MAX; k++)
        many[k] = "LRANGE __tag__:l 0 1";
    assert_int_equal(cp__cmdset_new(many, CP__COMMANDS_MAX, NULL, &s, err, sizeof(err)), 0);
    cp__cmdset_label(s, buf, 32);
    assert_string_equal(buf, "16 commands");
    cp__cmdset_free(s);
    const char *one[] = {"get __key__"};
    assert_int_equal(cp__cmdset_new(one, 1, NULL, &s, err, sizeof(err)), 0);
    cp__cmdset_flags(s, buf, sizeof(buf));
    assert_string_equal(buf, " --command 'get __key__'");
    cp__cmdset_label(s, buf, sizeof(buf));
    assert_string_equal(buf, "GET");
    cp__cmdset_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_like_redis_cli),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_routing_and_checks),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_flags_and_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
