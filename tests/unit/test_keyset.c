/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The key set of migrate's marked keys (src/migrate/keyset.h): binary keys added, found, walked
 * and deleted, through growth, against a plain array as the model; a deletion inside a probe run
 * keeps every other key of the run findable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"

#include "migrate/keyset.h"

enum { N = 5000 };

/* Key i: "key:<i>", every 7th with a NUL in place of its colon (keys are binary). */
static size_t key_of(int i, char *buf) {
    int n = snprintf(buf, 32, "key:%d", i);
    if (i % 7 == 0)
        buf[3] = '\0';
    return (size_t)n;
}

static void matches_a_model_through_adds_and_deletes(void **state) {
    (void)state;
    static char in[N];
    cp__keyset s = {0};
    char k[32];
    uint32_t x = 1;
    for (int step = 0; step < 40000; step++) {
        x = x * 1103515245u + 12345u;
        int i = (int)((x >> 8) % N);
        size_t len = key_of(i, k);
        if ((x >> 4) % 3 == 0) {
            cp__keyset_del(&s, k, len);
            in[i] = 0;
        } else {
            assert_int_equal(cp__keyset_add(&s, k, len), 0);
            in[i] = 1;
        }
        if (step % 997 == 0) {
            size_t count = 0;
            for (int j = 0; j < N; j++) {
                len = key_of(j, k);
                assert_int_equal(cp__keyset_has(&s, k, len), in[j]);
                count += in[j];
            }
            assert_int_equal(s.count, count);
            size_t at = 0, walked = 0, klen;
            const char *key;
            while (cp__keyset_walk(&s, &at, &key, &klen))
                walked++;
            assert_int_equal(walked, count);
        }
    }
    cp__keyset_clear(&s);
    assert_int_equal(s.count, 0);
    assert_int_equal(cp__keyset_has(&s, "key:1", 5), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_a_model_through_adds_and_deletes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
