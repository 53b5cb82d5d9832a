/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Durations as typed (util/dur.h): units, an RTT with its jitter, what is refused, and the text
 * written back. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/dur.h"

#include <errno.h>

static void test_parse(void **state) {
    (void)state;
    uint64_t ns;
    struct {
        const char *in;
        uint64_t ns;
    } ok[] = {{"0", 0},
              {"0us", 0},
              {"250ns", 250},
              {"100us", 100000},
              {"0.5ms", 500000},
              {"1ms", 1000000},
              {"0.25ms", 250000},
              {"2s", 2000000000},
              {"1.5s", 1500000000},
              {"3600s", 3600000000000ull}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(cp__dur_parse(ok[i].in, &ns), 0);
        assert_int_equal(ns, ok[i].ns);
    }
    const char *bad[] = {"",     "1",  "ms", "-1ms",  "+1ms",  " 1ms",  "1ms ",
                         "1 ms", "1m", "1h", "3601s", "nanms", "infms", "1e400ms"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(cp__dur_parse(bad[i], &ns), -EINVAL);
}

static void test_jitter(void **state) {
    (void)state;
    uint64_t ns, j;
    assert_int_equal(cp__dur_parse_jitter("500us~50us", &ns, &j), 0);
    assert_int_equal(ns, 500000);
    assert_int_equal(j, 50000);
    assert_int_equal(cp__dur_parse_jitter("1ms", &ns, &j), 0);
    assert_int_equal(ns, 1000000);
    assert_int_equal(j, 0);
    const char *bad[] = {"~1ms", "1ms~", "1ms~2ms", "1ms~x", "x~1us"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(cp__dur_parse_jitter(bad[i], &ns, &j), -EINVAL);
}

static void test_format(void **state) {
    (void)state;
    char buf[32];
    assert_string_equal(cp__dur_format(0, buf, sizeof(buf)), "0");
    assert_string_equal(cp__dur_format(250, buf, sizeof(buf)), "250ns");
    assert_string_equal(cp__dur_format(100000, buf, sizeof(buf)), "100us");
    assert_string_equal(cp__dur_format(250000, buf, sizeof(buf)), "250us");
    assert_string_equal(cp__dur_format(1500000, buf, sizeof(buf)), "1.5ms");
    assert_string_equal(cp__dur_format(2000000000, buf, sizeof(buf)), "2s");
    /* What it writes, it reads back. */
    uint64_t vals[] = {1, 999, 1000, 123456, 5000000, 61000000000ull};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        uint64_t back;
        assert_int_equal(cp__dur_parse(cp__dur_format(vals[i], buf, sizeof(buf)), &back), 0);
        assert_int_equal(back, vals[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_jitter),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
