/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The assertions of asserts.h: a comparison, and on failure both values and the expression
 * through cmocka's print_error and _fail. No state; any thread cmocka allows.
 */
#include "asserts.h"

#include <stdio.h>
#include <string.h>

static const char *const op_str[] = {">=", ">", "<=", "<"};

cp_test_int cp_test_int_signed(intmax_t v) {
    cp_test_int r;
    r.neg = v < 0;
    /* -(v + 1) + 1 is |v| without overflowing on INTMAX_MIN */
    r.mag = v < 0 ? (uintmax_t)(-(v + 1)) + 1 : (uintmax_t)v;
    return r;
}

cp_test_int cp_test_int_unsigned(uintmax_t v) {
    cp_test_int r = {0, v};
    return r;
}

/* -1, 0 or 1 as a is less than, equal to or greater than b, by value. */
static int int_order(cp_test_int a, cp_test_int b) {
    if (a.neg != b.neg)
        return a.neg ? -1 : 1;
    int mag = a.mag < b.mag ? -1 : a.mag > b.mag ? 1 : 0;
    return a.neg ? -mag : mag;
}

static int holds(int order, cp_test_op op) {
    switch (op) {
    case CP_TEST_GE:
        return order >= 0;
    case CP_TEST_GT:
        return order > 0;
    case CP_TEST_LE:
        return order <= 0;
    case CP_TEST_LT:
        return order < 0;
    }
    return 0;
}

void cp_test_assert_int(cp_test_int a, cp_test_op op, cp_test_int b, const char *ea, const char *eb,
                        const char *file, int line) {
    if (holds(int_order(a, b), op))
        return;
    print_error("%s %s %s: %s%ju is not %s %s%ju\n", ea, op_str[op], eb, a.neg ? "-" : "", a.mag,
                op_str[op], b.neg ? "-" : "", b.mag);
    _fail(file, line);
}

void cp_test_assert_double(double a, cp_test_op op, double b, const char *ea, const char *eb,
                           const char *file, int line) {
    int ok = 0;
    switch (op) { /* as C compares: false when either is NaN */
    case CP_TEST_GE:
        ok = a >= b;
        break;
    case CP_TEST_GT:
        ok = a > b;
        break;
    case CP_TEST_LE:
        ok = a <= b;
        break;
    case CP_TEST_LT:
        ok = a < b;
        break;
    }
    if (ok)
        return;
    print_error("%s %s %s: %.17g is not %s %.17g\n", ea, op_str[op], eb, a, op_str[op], b);
    _fail(file, line);
}

void cp_test_assert_double_eq(double a, int equal, double b, const char *ea, const char *eb,
                              const char *file, int line) {
    if ((a == b) == (equal != 0))
        return;
    const char *op = equal ? "==" : "!=";
    print_error("%s %s %s: %.17g is not %s %.17g\n", ea, op, eb, a, op, b);
    _fail(file, line);
}

void cp_test_assert_contains(const char *haystack, const char *needle, int want, const char *eh,
                             const char *en, const char *file, int line) {
    int found = haystack != NULL && strstr(haystack, needle) != NULL;
    if (found == (want != 0))
        return;
    if (haystack == NULL) {
        print_error("%s is NULL, so it does not contain %s (\"%s\")\n", eh, en, needle);
    } else {
        size_t len = strlen(haystack);
        print_error("%s %s %s\n--- %s (\"%s\")\n--- in %s (%zu bytes%s):\n%.*s\n---\n", eh,
                    want ? "does not contain" : "contains", en, en, needle, eh, len,
                    len > 2000 ? ", the first 2000" : "", (int)(len > 2000 ? 2000 : len), haystack);
    }
    _fail(file, line);
}
