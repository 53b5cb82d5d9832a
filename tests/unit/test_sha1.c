/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The in-house SHA-1 (src/lib/proto/sha1.h) against the FIPS 180 test vectors: "abc", the empty
 * string, the 448-bit message "abcdbcde...nopq", a million 'a', and lengths around the padding's
 * block edges (55, 56, 63, 64 bytes), whose digests were taken from sha1sum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/proto/sha1.h"

static void check(const char *data, size_t len, const char *want) {
    char hex[CP__SHA1_HEXLEN + 1];
    cp__sha1_hex(data, len, hex);
    assert_string_equal(hex, want);
}

static void fips_vectors(void **state) {
    (void)state;
    check("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    check("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(strlen(m448), 56);
    check(m448, 56, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

static void a_million_a(void **state) {
    (void)state;
    size_t n = 1000000;
    char *a = malloc(n);
    assert_non_null(a);
    memset(a, 'a', n);
    check(a, n, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    free(a);
}

static void block_edges(void **state) {
    (void)state;
    char a[64];
    memset(a, 'a', sizeof(a));
    check(a, 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
    check(a, 56, "c2db330f6083854c99d4b5bfb6e8f29f201be699");
    check(a, 63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5");
    check(a, 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
    uint8_t raw[CP__SHA1_LEN];
    cp__sha1("abc", 3, raw);
    assert_int_equal(raw[0], 0xa9);
    assert_int_equal(raw[19], 0x9d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fips_vectors),
        cmocka_unit_test(a_million_a),
        cmocka_unit_test(block_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
