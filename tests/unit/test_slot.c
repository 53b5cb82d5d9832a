/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Hash slots: the spec's CRC16 vector and every {hashtag} edge case the spec describes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "clusterpipe/clusterpipe.h"
#include "lib/slot.h"

static unsigned slot(const char *k) {
    return cp_keyslot(k, strlen(k));
}

static void crc16_spec_vector(void **state) {
    (void)state;
    assert_int_equal(cp__crc16("123456789", 9), 0x31C3);
    assert_int_equal(cp__crc16_bytewise("123456789", 9), 0x31C3);
    assert_int_equal(cp__crc16("", 0), 0);
}

/* Four bytes at a time gives the byte-at-a-time CRC for every length and any bytes. */
static void crc16_sliced_matches_bytewise(void **state) {
    (void)state;
    char buf[67];
    uint32_t x = 2463534242u;
    for (size_t len = 0; len <= sizeof(buf); len++) {
        for (int round = 0; round < 64; round++) {
            for (size_t i = 0; i < len; i++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                buf[i] = (char)(round == 0 ? 0xff : x);
            }
            assert_int_equal(cp__crc16(buf, len), cp__crc16_bytewise(buf, len));
        }
    }
}

/* Values checked against a real redis-server 7 (CLUSTER KEYSLOT). */
static void known_slots(void **state) {
    (void)state;
    assert_int_equal(slot("foo"), 12182);
    assert_int_equal(slot("bar"), 5061);
    assert_int_equal(slot("key:1"), 6657);
    assert_int_equal(slot("{user1000}.following"), 3443);
    assert_int_equal(slot("foo{}{bar}"), 8363);
    assert_int_equal(slot("foo{{bar}}zap"), 4015);
    assert_int_equal(slot("123456789"), 0x31C3 & 16383);
}

static void hashtags(void **state) {
    (void)state;
    /* {user1000}.following and {user1000}.followers share a slot: only the tag is hashed. */
    assert_int_equal(slot("{user1000}.following"), slot("user1000"));
    assert_int_equal(slot("{user1000}.followers"), slot("user1000"));
    /* foo{}{bar}: the first tag is empty, so the whole key is hashed. */
    assert_int_equal(slot("foo{}{bar}"), cp__crc16("foo{}{bar}", 10) & 16383);
    /* foo{{bar}}zap: the tag is "{bar" (from the first '{' to the first '}'). */
    assert_int_equal(slot("foo{{bar}}zap"), cp__crc16("{bar", 4) & 16383);
    assert_int_equal(slot("foo{{bar}}"), cp__crc16("{bar", 4) & 16383);
    /* foo{bar}{zap}: only the first tag counts. */
    assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
    assert_int_equal(slot("{a}{b}"), slot("a"));
    /* "{}" and an unclosed "{" hash the whole key. */
    assert_int_equal(slot("{}"), cp__crc16("{}", 2) & 16383);
    assert_int_equal(slot("{"), cp__crc16("{", 1) & 16383);
    assert_int_equal(slot("foo{bar"), cp__crc16("foo{bar", 7) & 16383);
    assert_int_equal(slot("}foo{"), cp__crc16("}foo{", 5) & 16383);
}

static void binary_keys(void **state) {
    (void)state;
    const char k[] = {'a', '\0', 'b'};
    assert_int_equal(cp_keyslot(k, 3), cp__crc16(k, 3) & 16383);
    assert_true(cp_keyslot(k, 3) != cp_keyslot(k, 1));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_spec_vector), cmocka_unit_test(crc16_sliced_matches_bytewise),
        cmocka_unit_test(known_slots),       cmocka_unit_test(hashtags),
        cmocka_unit_test(binary_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
