/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A source's offsets over time (src/migrate/laghist.h): the lag in seconds of an applied offset,
 * interpolated between samples, 0 when caught up, a lower bound past the history, and samples
 * closer than the spacing replacing the last.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include "migrate/laghist.h"

/* a within eps of b (both sides printed on a failure) */
#define assert_near(a, b, eps)                                                                     \
    do {                                                                                           \
        double a_ = (a);                                                                           \
        assert_double_ge(a_, (b) - (eps));                                                         \
        assert_double_le(a_, (b) + (eps));                                                         \
    } while (0)

/* A source taking 1,000 bytes a second, sampled every second from t = 0 to 10 s. */
static void steady(cp__laghist *h) {
    *h = (cp__laghist){0};
    for (int s = 0; s <= 10; s++)
        cp__laghist_note(h, s * 1000, (uint64_t)s * 1000);
}

static void lag_is_how_long_ago_the_source_was_there(void **state) {
    (void)state;
    static cp__laghist h;
    int over;
    steady(&h);
    /* applied 7,500: the source passed it at 7.5 s; at 10 s that is 2.5 s ago */
    assert_near(cp__laghist_seconds(&h, 10000, 7500, &over), 2.5, 1e-9);
    assert_int_equal(over, 0);
    /* a sample boundary: passed at 3 s exactly (the writes after 3,000 arrived after 3 s) */
    assert_near(cp__laghist_seconds(&h, 10000, 3000, &over), 7.0, 1e-9);
    /* caught up with the last sample, or past it: 0 */
    assert_near(cp__laghist_seconds(&h, 10500, 10000, &over), 0, 1e-9);
    assert_near(cp__laghist_seconds(&h, 10500, 12000, &over), 0, 1e-9);
}

static void past_the_history_is_a_lower_bound(void **state) {
    (void)state;
    static cp__laghist h;
    int over;
    assert_near(cp__laghist_seconds(&h, 0, 0, &over), -1, 1e-9); /* no sample */
    /* 200 samples a second apart: the oldest kept is t = 72 s (128 samples) */
    for (int s = 0; s < 200; s++)
        cp__laghist_note(&h, s * 1000, 1000 + (uint64_t)s * 10);
    assert_near(cp__laghist_seconds(&h, 199000, 0, &over), 199 - 72, 1e-9);
    assert_int_equal(over, 1);
    assert_near(cp__laghist_seconds(&h, 199000, 1000 + 150 * 10, &over), 49, 1e-9);
    assert_int_equal(over, 0);
}

/* A source quiet until 5 s that then writes: noted every 100 ms (the bytes as they arrive), the
 * lag of a migration a few bytes behind is the time since the writes began, not since the last
 * once-a-second sample; a sample below the newest (bytes received trail the source's INFO) does
 * not move the history back. */
static void a_quiet_source_that_starts_is_seen_when_it_starts(void **state) {
    (void)state;
    static cp__laghist h;
    int over;
    for (int t = 0; t <= 5000; t += 100)
        cp__laghist_note(&h, t, 1000);
    cp__laghist_note(&h, 5100, 2000);
    assert_near(cp__laghist_seconds(&h, 5100, 1010, &over), 0.099, 1e-9); /* passed at 5.001 s */
    cp__laghist_note(&h, 5200, 1500); /* received, behind the INFO read at 5.1 s */
    assert_near(cp__laghist_seconds(&h, 5200, 1999, &over), 0.1001, 1e-9); /* at 5.0999 s */
    assert_near(cp__laghist_seconds(&h, 5200, 2000, &over), 0, 1e-9);
}

static void close_samples_replace_the_last(void **state) {
    (void)state;
    static cp__laghist h;
    int over;
    for (int ms = 0; ms < 5000; ms += 20) /* every 20 ms: only 100 ms apart are kept */
        cp__laghist_note(&h, ms, (uint64_t)ms);
    assert_int_le(h.n, 5000 / CP__LAGHIST_SPACING_MS + 1);
    assert_int_ge(h.n, 5000 / (2 * CP__LAGHIST_SPACING_MS));
    /* offset = time in ms: applied 4,000 was passed at 4 s */
    assert_near(cp__laghist_seconds(&h, 5000, 4000, &over), 1.0, 0.05);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lag_is_how_long_ago_the_source_was_there),
        cmocka_unit_test(past_the_history_is_a_lower_bound),
        cmocka_unit_test(close_samples_replace_the_last),
        cmocka_unit_test(a_quiet_source_that_starts_is_seen_when_it_starts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
