/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The glob matcher the cluster SCAN filters re-listed keys with (lib/proto/glob.h): the pattern
 * forms, Redis's odd cases (each checked against redis-server 7.0's KEYS, see test_scan_real's
 * glob_matches_server), binary keys, and patterns that would take exponential time or deep
 * recursion with a naive matcher.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/proto/glob.h"

static int m(const char *pattern, const char *s) {
    return cp__glob_match(pattern, strlen(pattern), s, strlen(s));
}

static void forms(void **state) {
    (void)state;
    static const struct {
        const char *pattern, *s;
        int want;
    } cases[] = {
        {"hello", "hello", 1},
        {"hello", "hell", 0},
        {"h?llo", "hallo", 1},
        {"h?llo", "hllo", 0},
        {"h*llo", "hllo", 1},
        {"h*llo", "heeeello", 1},
        {"h[ae]llo", "hello", 1},
        {"h[ae]llo", "hillo", 0},
        {"h[^e]llo", "hallo", 1},
        {"h[^e]llo", "hello", 0},
        {"h[a-b]llo", "hbllo", 1},
        {"h[b-a]llo", "hallo", 1},
        {"a\\*c", "a*c", 1},
        {"a\\*c", "abc", 0},
        {"a[\\]]c", "a]c", 1},
        {"*", "", 0},
        {"**", "x", 1},
        {"a*", "a", 1},
        {"a**b", "ab", 1},
        {"*c", "abc", 1},
        {"*c", "abd", 0},
        /* An unterminated class ends the pattern; "[" alone matches nothing, "[^" any byte. */
        {"a[bc", "ab", 1},
        {"a[bc", "abc", 0},
        {"[", "[", 0},
        {"[^", "x", 1},
        {"[]", "]", 0},
        {"[]]", "]", 0}, /* empty class */
        /* A trailing backslash is a backslash; "[a-]" is the range a..']'. */
        {"a\\", "a\\", 1},
        {"[a-]", "b", 0},
        {"[a-]", "^", 1},
        {"[-a]", "-", 1},
        {"a]c", "a]c", 1},
        {"AbC", "abc", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (m(cases[i].pattern, cases[i].s) != cases[i].want)
            fail_msg("'%s' against '%s': want %d", cases[i].pattern, cases[i].s, cases[i].want);
}

/* Lengths, not NULs, end patterns and keys. */
static void binary(void **state) {
    (void)state;
    assert_int_equal(cp__glob_match("a\0*", 3, "a\0bc", 4), 1);
    assert_int_equal(cp__glob_match("a\0*", 3, "a\1bc", 4), 0);
    assert_int_equal(cp__glob_match("a?c", 3, "a\0c", 3), 1);
    assert_int_equal(cp__glob_match("a*", 2, "abc", 2), 1); /* "ab" */
    assert_int_equal(cp__glob_match("[\x80-\xff]", 5, "\x90", 1), 1);
}

/* "*a*a*...*b" against a run of a's gives up at once instead of trying every split; a pattern
 * nesting '*' more than 1000 deep matches nothing (as the server answers), without recursing
 * further. */
static void hostile(void **state) {
    (void)state;
    char s[201];
    memset(s, 'a', 200);
    s[200] = '\0';
    assert_int_equal(m("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", s), 0);
    assert_int_equal(m("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a", s), 1);
    size_t n = 1002;
    char *deep = malloc(n * 2 + 1), *key = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        deep[2 * i] = '*';
        deep[2 * i + 1] = 'x';
        key[i] = 'x';
    }
    assert_int_equal(cp__glob_match(deep, n * 2, key, n), 0);
    assert_int_equal(cp__glob_match(deep, 20, key, 10), 1);
    free(deep);
    free(key);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forms),
        cmocka_unit_test(binary),
        cmocka_unit_test(hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
