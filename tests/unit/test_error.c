/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The error table (CP_ERRNO_MAP): every code has its own name and message, and cp_strerror /
 * cp_err_name agree with the table for every code and say "unknown" for anything else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"

static const struct {
    int code;
    const char *name, *msg;
} table[] = {
#define ROW(name, value, msg) {value, "CP_" #name, msg},
    CP_ERRNO_MAP(ROW)
#undef ROW
};
#define NCODES (sizeof(table) / sizeof(table[0]))

static void names_and_messages(void **state) {
    (void)state;
    assert_int_equal(NCODES, 16);
    for (size_t i = 0; i < NCODES; i++) {
        assert_string_equal(cp_err_name(table[i].code), table[i].name);
        assert_string_equal(cp_strerror(table[i].code), table[i].msg);
        assert_int_le(table[i].code, 0);
        for (size_t j = 0; j < i; j++) {
            assert_int_not_equal(table[i].code, table[j].code);
            assert_string_not_equal(table[i].msg, table[j].msg);
        }
    }
    /* The values callers may have compiled in never change. */
    assert_int_equal(CP_OK, 0);
    assert_int_equal(CP_ENOMEM, -1);
    assert_int_equal(CP_ETIMEDOUT, -6);
    assert_int_equal(CP_ESERVER, -13);
    assert_string_equal(cp_err_name(CP_ETIMEDOUT), "CP_ETIMEDOUT");
    assert_string_equal(cp_strerror(1), "unknown error");
    assert_string_equal(cp_err_name(-1000), "CP_UNKNOWN");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
