/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Hash slots: the spec's CRC16 vector, every {hashtag} edge case the spec describes, and the
 * fast scan for '{' against the plain rule at every position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "clusterpipe/clusterpipe.h"
#include "lib/proto/slot.h"

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

/* The spec's rule written the plain way: the first '{', then the first '}' after it. */
static unsigned reference_slot(const char *k, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (k[i] != '{')
            continue;
        for (size_t j = i + 1; j < len; j++)
            if (k[j] == '}') {
                if (j > i + 1)
                    return cp__crc16_bytewise(k + i + 1, j - i - 1) & 16383;
                break;
            }
        break;
    }
    return cp__crc16_bytewise(k, len) & 16383;
}

/* The word-at-a-time scan for '{' agrees with the plain rule for every length up to past the
 * memchr cutoff and every position of '{' and '}', including bytes just below and above '{'
 * (0x7a, 0x7c, and 0xfb: '{' with the top bit set), 0x00 and 0xff around it (the zero-byte
 * test's borrows). */
static void tag_at_every_position(void **state) {
    (void)state;
    static const char fill[] = {'a', 0x7a, 0x7c, 0, (char)0xff, (char)0x80, '}', (char)0xfb};
    char k[48];
    for (size_t len = 0; len <= 40; len++)
        for (size_t f = 0; f < sizeof(fill); f++)
            for (size_t open = 0; open <= len; open++)
                for (size_t close = 0; close <= len; close += 3) {
                    for (size_t i = 0; i < len; i++)
                        k[i] = fill[(f + i) % sizeof(fill)];
                    if (open < len)
                        k[open] = '{';
                    if (close < len && close != open)
                        k[close] = '}';
                    assert_int_equal(cp_keyslot(k, len), reference_slot(k, len));
                }
}

static void binary_keys(void **state) {
    (void)state;
    const char k[] = {'a', '\0', 'b'};
    assert_int_equal(cp_keyslot(k, 3), cp__crc16(k, 3) & 16383);
    assert_int_not_equal(cp_keyslot(k, 3), cp_keyslot(k, 1));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_spec_vector), cmocka_unit_test(crc16_sliced_matches_bytewise),
        cmocka_unit_test(known_slots),       cmocka_unit_test(hashtags),
        cmocka_unit_test(binary_keys),       cmocka_unit_test(tag_at_every_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
