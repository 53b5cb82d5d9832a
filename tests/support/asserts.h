/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The assertions cmocka lacks, each printing both sides and the expression when it fails:
 * orderings of integers and of doubles, doubles compared exactly, and a string found in another.
 * (For == and != of integers, pointers, strings and memory, cmocka's own assert_int_equal,
 * assert_ptr_equal, assert_null, assert_string_equal and assert_memory_equal print both sides.)
 *
 *     assert_int_ge(fake_node_connections(n), 2);
 *     // fails with: fake_node_connections(n) >= 2: 1 is not >= 2
 *
 * assert_int_ge/gt/le/lt compare two integers of any integer types by their values, each
 * evaluated once: a negative value is less than any unsigned one (as C compares two signed, or two
 * unsigned, operands; C's conversions of a mixed pair, which -Wsign-compare flags, are not
 * followed). A floating-point operand is a compile error ("too many arguments to function
 * cp_test_not_an_integer"): use assert_double_ge and the like, which compare as C compares a
 * double with anything (the other operand converted to double).
 *
 * assert_contains(haystack, needle) fails when haystack is NULL or does not contain needle, and
 * prints both (a long haystack cut at 2,000 characters); assert_not_contains is its opposite.
 *
 * Failures are cmocka failures (print_error and _fail, as cmocka's own assertions): the test
 * stops there. No state; any thread cmocka allows.
 */
#ifndef CLUSTERPIPE_TEST_ASSERTS_H
#define CLUSTERPIPE_TEST_ASSERTS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* An integer's value whatever its type: its sign and magnitude. */
typedef struct cp_test_int {
    int neg;
    uintmax_t mag;
} cp_test_int;

typedef enum cp_test_op { CP_TEST_GE, CP_TEST_GT, CP_TEST_LE, CP_TEST_LT } cp_test_op;

cp_test_int cp_test_int_signed(intmax_t v);
cp_test_int cp_test_int_unsigned(uintmax_t v);
void cp_test_not_an_integer(void); /* never defined: what a floating operand selects */

/* The value of x, of any integer type. Types narrower than int promote to int, so only the
 * unsigned types of int's rank and above take the unsigned path. (Left as written: clang-format
 * cannot lay out _Generic's associations.) */
/* clang-format off */
#define CP_TEST_INT(x)                                                                             \
    _Generic((x),                                                                                  \
        unsigned int: cp_test_int_unsigned,                                                        \
        unsigned long: cp_test_int_unsigned,                                                       \
        unsigned long long: cp_test_int_unsigned,                                                  \
        float: cp_test_not_an_integer,                                                             \
        double: cp_test_not_an_integer,                                                            \
        long double: cp_test_not_an_integer,                                                       \
        default: cp_test_int_signed)(x)
/* clang-format on */

void cp_test_assert_int(cp_test_int a, cp_test_op op, cp_test_int b, const char *ea, const char *eb,
                        const char *file, int line);
void cp_test_assert_double(double a, cp_test_op op, double b, const char *ea, const char *eb,
                           const char *file, int line);
void cp_test_assert_double_eq(double a, int equal, double b, const char *ea, const char *eb,
                              const char *file, int line);
void cp_test_assert_contains(const char *haystack, const char *needle, int want, const char *eh,
                             const char *en, const char *file, int line);

#define assert_int_ge(a, b)                                                                        \
    cp_test_assert_int(CP_TEST_INT(a), CP_TEST_GE, CP_TEST_INT(b), #a, #b, __FILE__, __LINE__)
#define assert_int_gt(a, b)                                                                        \
    cp_test_assert_int(CP_TEST_INT(a), CP_TEST_GT, CP_TEST_INT(b), #a, #b, __FILE__, __LINE__)
#define assert_int_le(a, b)                                                                        \
    cp_test_assert_int(CP_TEST_INT(a), CP_TEST_LE, CP_TEST_INT(b), #a, #b, __FILE__, __LINE__)
#define assert_int_lt(a, b)                                                                        \
    cp_test_assert_int(CP_TEST_INT(a), CP_TEST_LT, CP_TEST_INT(b), #a, #b, __FILE__, __LINE__)

#define assert_double_ge(a, b)                                                                     \
    cp_test_assert_double((a), CP_TEST_GE, (b), #a, #b, __FILE__, __LINE__)
#define assert_double_gt(a, b)                                                                     \
    cp_test_assert_double((a), CP_TEST_GT, (b), #a, #b, __FILE__, __LINE__)
#define assert_double_le(a, b)                                                                     \
    cp_test_assert_double((a), CP_TEST_LE, (b), #a, #b, __FILE__, __LINE__)
#define assert_double_lt(a, b)                                                                     \
    cp_test_assert_double((a), CP_TEST_LT, (b), #a, #b, __FILE__, __LINE__)
/* Exact, as C's == and != of doubles (cmocka 1.1's assert_float_equal rounds to float). */
#define assert_double_eq(a, b) cp_test_assert_double_eq((a), 1, (b), #a, #b, __FILE__, __LINE__)
#define assert_double_ne(a, b) cp_test_assert_double_eq((a), 0, (b), #a, #b, __FILE__, __LINE__)

#define assert_contains(haystack, needle)                                                          \
    cp_test_assert_contains((haystack), (needle), 1, #haystack, #needle, __FILE__, __LINE__)
#define assert_not_contains(haystack, needle)                                                      \
    cp_test_assert_contains((haystack), (needle), 0, #haystack, #needle, __FILE__, __LINE__)

#endif
