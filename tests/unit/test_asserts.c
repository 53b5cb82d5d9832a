/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The assertions of tests/support/asserts.h: each holds when its comparison does, by value
 * whatever the operands' integer types (a negative value below any unsigned one, the extremes of
 * intmax_t and uintmax_t), evaluates its operands once, and when it fails, fails the test with
 * the expression and both values. A failing assertion is run as the one test of a cmocka group in
 * a child process, whose output and result the parent reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"

typedef enum colour { RED, GREEN, BLUE } colour;

static void ints_hold(void **state) {
    (void)state;
    assert_int_ge(-1, -1);
    assert_int_gt(0, -1);
    assert_int_lt(-1, 0u); /* by value, not as C converts -1 to unsigned */
    assert_int_lt(-1, (size_t)1);
    assert_int_gt(SIZE_MAX, -1);
    assert_int_le(INTMAX_MIN, INTMAX_MIN);
    assert_int_lt(INTMAX_MIN, INTMAX_MIN + 1);
    assert_int_lt(INTMAX_MIN, UINTMAX_MAX);
    assert_int_gt((uintmax_t)INTMAX_MAX + 1, INTMAX_MAX);
    assert_int_ge(UINTMAX_MAX, UINTMAX_MAX);
    assert_int_le((unsigned char)255, 255);
    assert_int_gt((signed char)-1, -2);
    assert_int_ge((char)'a', 'a');
    assert_int_gt(BLUE, RED);
    assert_int_ge(true, false);
    assert_int_gt((uint64_t)1 << 63, (int64_t)INT64_MAX);
    long long n = -5;
    assert_int_le(n, -5);
}

static void operands_evaluated_once(void **state) {
    (void)state;
    int k = 0, m = 10;
    assert_int_ge(k++, 0);
    assert_int_lt(k++, m--);
    assert_int_equal(k, 2);
    assert_int_equal(m, 9);
    double d = 0.5;
    assert_double_lt(d += 1, 2);
    assert_double_eq(d, 1.5);
}

static void doubles_and_strings_hold(void **state) {
    (void)state;
    assert_double_ge(0.5, 0.5);
    assert_double_gt(0.5, 0);
    assert_double_le(-0.25, 0);
    assert_double_lt(1e-9, 1e-8);
    assert_double_eq(0.1 + 0.2, 0.1 + 0.2);
    assert_double_ne(0.1 + 0.2, 0.3);       /* exact, as C's != */
    assert_double_eq(16777217, 16777217.0); /* no rounding to float */
    assert_contains("port 6379 is busy", "6379");
    assert_contains("abc", "");
    assert_not_contains("abc", "abcd");
}

/* ---- failures, each in a child ---------------------------------------------------------- */

typedef void (*body_fn)(void);
static body_fn child_body;

static void run_child_body(void **state) {
    (void)state;
    child_body();
}

/* Runs body as the only test of a cmocka group in a child process, its stdout and stderr into
 * out; returns the number of failed tests (0 or 1), or -1 when the child ended otherwise. */
static int run_in_child(body_fn body, char *out, size_t len) {
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        dup2(pfd[1], STDERR_FILENO);
        close(pfd[0]);
        close(pfd[1]);
        child_body = body;
        const struct CMUnitTest one[] = {cmocka_unit_test(run_child_body)};
        int failed = cmocka_run_group_tests_name("child", one, NULL, NULL);
        fflush(stdout);
        fflush(stderr);
        _exit(failed == 0 || failed == 1 ? failed : 2);
    }
    close(pfd[1]);
    size_t n = 0;
    ssize_t got;
    while ((got = read(pfd[0], out + n, len - 1 - n)) > 0 && n + (size_t)got < len - 1)
        n += (size_t)got;
    if (got > 0)
        n += (size_t)got;
    out[n] = '\0';
    close(pfd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
        return -1;
    return WEXITSTATUS(status);
}

/* body fails its test, saying want. */
static void assert_fails_with(body_fn body, const char *want) {
    char out[8192];
    int failed = run_in_child(body, out, sizeof(out));
    if (failed != 1)
        fail_msg("the child's test did not fail (%d):\n%s", failed, out);
    assert_contains(out, want);
}

static void ge_negative_unsigned(void) {
    assert_int_ge(-1, 0u);
}
static void gt_equal(void) {
    int connections = 2;
    assert_int_gt(connections, 2);
}
static void le_big(void) {
    assert_int_le(UINTMAX_MAX, INTMAX_MAX);
}
static void lt_min(void) {
    assert_int_lt(INTMAX_MIN, INTMAX_MIN);
}
static void double_ge(void) {
    double seconds = 0.25;
    assert_double_ge(seconds, 0.5);
}
static void double_eq(void) {
    assert_double_eq(0.1 + 0.2, 0.3);
}
static void double_nan(void) {
    double nan = 0.0 / 0.0;
    assert_double_le(nan, 1); /* as C: no ordering holds for NaN */
}
static void contains_missing(void) {
    const char *out = "usage: clusterpipe bench";
    assert_contains(out, "--threads");
}
static void contains_null(void) {
    const char *out = NULL;
    assert_contains(out, "x");
}
static void not_contains_present(void) {
    assert_not_contains("a busy port", "busy");
}

static void failures_name_both_sides(void **state) {
    (void)state;
    assert_fails_with(ge_negative_unsigned, "-1 >= 0u: -1 is not >= 0");
    assert_fails_with(gt_equal, "connections > 2: 2 is not > 2");
    assert_fails_with(le_big, ": 18446744073709551615 is not <= 9223372036854775807");
    assert_fails_with(lt_min, ": -9223372036854775808 is not < -9223372036854775808");
    assert_fails_with(double_ge, "seconds >= 0.5: 0.25 is not >= 0.5");
    assert_fails_with(double_eq,
                      "0.1 + 0.2 == 0.3: 0.30000000000000004 is not == 0.2999999999999999");
    assert_fails_with(double_nan, "nan <= 1: ");
    assert_fails_with(contains_missing, "out does not contain \"--threads\"");
    assert_fails_with(contains_missing, "usage: clusterpipe bench");
    assert_fails_with(contains_null, "out is NULL");
    assert_fails_with(not_contains_present, "\"a busy port\" contains \"busy\"");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ints_hold),
        cmocka_unit_test(operands_evaluated_once),
        cmocka_unit_test(doubles_and_strings_hold),
        cmocka_unit_test(failures_name_both_sides),
    };
    return cmocka_run_group_tests_name("asserts", tests, NULL, NULL);
}
