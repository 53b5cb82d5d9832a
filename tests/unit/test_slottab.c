/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The routing table: the run list answers exactly what the full table says, for healthy maps,
 * after MOVED patches (table lookups until a rebuild), and for maps too fragmented for runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/map/slottab.h"

static void assert_agrees(const cp__slottab *r) {
    for (int s = 0; s < CP_SLOTS; s++)
        assert_int_equal(cp__slottab_lookup(r, s), r->node[s]);
}

static void fill_even(cp__slottab *r, int masters) {
    for (int s = 0; s < CP_SLOTS; s++)
        r->node[s] = (int16_t)(s * masters / CP_SLOTS);
    cp__slottab_rebuild(r);
}

static void unknown_at_start(void **state) {
    (void)state;
    cp__slottab r;
    cp__slottab_init(&r);
    assert_int_equal(r.nruns, 1);
    assert_int_equal(cp__slottab_lookup(&r, 0), -1);
    assert_int_equal(cp__slottab_lookup(&r, CP_SLOTS - 1), -1);
}

static void healthy_maps_use_runs(void **state) {
    (void)state;
    cp__slottab r;
    cp__slottab_init(&r);
    for (int m = 1; m <= CP__SLOTTAB_RUNS; m++) {
        fill_even(&r, m);
        assert_int_equal(r.nruns, m);
        assert_agrees(&r);
    }
    /* One more owner than runs fit: the table answers. */
    fill_even(&r, CP__SLOTTAB_RUNS + 1);
    assert_int_equal(r.nruns, 0);
    assert_agrees(&r);
}

static void moved_patch_then_rebuild(void **state) {
    (void)state;
    cp__slottab r;
    cp__slottab_init(&r);
    fill_even(&r, 4);
    cp__slottab_patch(&r, 100, 3); /* inside node 0's run */
    assert_true(r.stale);
    assert_int_equal(cp__slottab_lookup(&r, 100), 3);
    assert_agrees(&r);
    cp__slottab_rebuild(&r);
    assert_false(r.stale);
    assert_int_equal(r.nruns, 6); /* 0..99, 100, 101..4095, then nodes 1..3 */
    assert_int_equal(cp__slottab_lookup(&r, 99), 0);
    assert_int_equal(cp__slottab_lookup(&r, 100), 3);
    assert_int_equal(cp__slottab_lookup(&r, 101), 0);
    assert_agrees(&r);
}

/* A migration moving every other slot fragments the map: lookups stay exact throughout. */
static void fragmented_map(void **state) {
    (void)state;
    cp__slottab r;
    cp__slottab_init(&r);
    fill_even(&r, 4);
    uint32_t x = 2463534242u;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        cp__slottab_patch(&r, (int)(x % CP_SLOTS), (int)(x % 7) - 1);
        if (i % 97 == 0) {
            cp__slottab_rebuild(&r);
            assert_agrees(&r);
        }
    }
    assert_agrees(&r);
    cp__slottab_rebuild(&r);
    assert_int_equal(r.nruns, 0);
    assert_agrees(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_at_start),
        cmocka_unit_test(healthy_maps_use_runs),
        cmocka_unit_test(moved_patch_then_rebuild),
        cmocka_unit_test(fragmented_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
