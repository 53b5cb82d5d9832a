/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis's CRC64 (src/migrate/crc64.h): cp__crc64 (PCLMULQDQ folding where the CPU has it) and
 * its tables alone (cp__crc64_table) against a bit-at-a-time reference written here: Redis's
 * check value; every length 0..4096 at every start offset 0..15, from random sums over random
 * bytes; a sum continued piece by piece equals the sum over the whole; buffers that end at the
 * end of their allocation (read past, ASan says so). The PCLMULQDQ way is the one taken on an
 * x86-64 CPU that has it, checked here against the CPU's own flags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"

#include "migrate/crc64.h"

#define MAX_LEN 4096
#define OFFSETS 16

/* The Jones polynomial 0xad93d23594c935a9, bit-reversed, its x^64 term left out. */
#define POLY_REFLECTED 0x95ac9329ac4bc9b5ULL

/* The definition, one bit at a time (as Redis's crc64.c's generic loop: reflected in and out). */
static uint64_t reference_byte(uint64_t crc, unsigned char byte) {
    crc ^= byte;
    for (int bit = 0; bit < 8; bit++)
        crc = (crc & 1) ? (crc >> 1) ^ POLY_REFLECTED : crc >> 1;
    return crc;
}

static uint64_t reference(uint64_t crc, const unsigned char *p, size_t len) {
    for (size_t i = 0; i < len; i++)
        crc = reference_byte(crc, p[i]);
    return crc;
}

/* xorshift64: the same "random" bytes every run, so a failure repeats. */
static uint64_t rand_state = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void) {
    rand_state ^= rand_state << 13;
    rand_state ^= rand_state >> 7;
    rand_state ^= rand_state << 17;
    return rand_state;
}

static void fill_random(unsigned char *p, size_t len) {
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)next_random();
}

static void redis_check_value(void **state) {
    (void)state;
    assert_int_equal(reference(0, (const unsigned char *)"123456789", 9), 0xe9c6d914c4b8d9caULL);
    assert_int_equal(cp__crc64(0, "123456789", 9), 0xe9c6d914c4b8d9caULL);
    assert_int_equal(cp__crc64_table(0, "123456789", 9), 0xe9c6d914c4b8d9caULL);
    /* Long enough for the folding and its reduction: 9 bytes are all tail. */
    const char *text = "123456789 123456789 123456789 123456789 123456789 123456789 123456789 ";
    size_t len = strlen(text);
    uint64_t want = reference(0, (const unsigned char *)text, len);
    assert_int_equal(cp__crc64(0, text, len), want);
    assert_int_equal(cp__crc64_table(0, text, len), want);
}

static void way_taken_follows_the_cpu(void **state) {
    (void)state;
#if defined(__x86_64__)
    __builtin_cpu_init();
    int has_pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    assert_string_equal(cp__crc64_impl(), has_pclmul ? "pclmul" : "table");
#else
    assert_string_equal(cp__crc64_impl(), "table");
#endif
}

/* Every length at every start offset (the folding's 16-byte loads land anywhere), each series
 * from its own random sum; the reference continues from the previous length, one byte on. */
static void every_length_and_offset_agree_with_bits(void **state) {
    (void)state;
    unsigned char *buf = malloc(MAX_LEN + OFFSETS);
    assert_non_null(buf);
    fill_random(buf, MAX_LEN + OFFSETS);
    for (size_t offset = 0; offset < OFFSETS; offset++) {
        for (int series = 0; series < 2; series++) {
            const unsigned char *p = buf + offset;
            uint64_t start = series == 0 ? 0 : next_random();
            uint64_t want = start;
            for (size_t len = 0; len <= MAX_LEN; len++) {
                if (len > 0)
                    want = reference_byte(want, p[len - 1]);
                uint64_t got = cp__crc64(start, p, len);
                uint64_t table = cp__crc64_table(start, p, len);
                if (got != want || table != want)
                    print_error("offset %zu len %zu start %016llx\n", offset, len,
                                (unsigned long long)start);
                assert_int_equal(got, want);
                assert_int_equal(table, want);
            }
        }
    }
    free(buf);
}

/* The sum of A, continued over B, is the sum of A||B: every split of 300 bytes, and splits of
 * 4096 bytes around the 16- and 64-byte steps. */
static void continued_sum_equals_whole(void **state) {
    (void)state;
    unsigned char *buf = malloc(MAX_LEN);
    assert_non_null(buf);
    fill_random(buf, MAX_LEN);
    uint64_t start = next_random();
    for (size_t whole = 300; whole <= MAX_LEN; whole += MAX_LEN - 300) {
        uint64_t want = reference(start, buf, whole);
        for (size_t split = 0; split <= whole; split += whole == 300 ? 1 : 61) {
            uint64_t got = cp__crc64(cp__crc64(start, buf, split), buf + split, whole - split);
            uint64_t table =
                cp__crc64_table(cp__crc64_table(start, buf, split), buf + split, whole - split);
            if (got != want || table != want)
                print_error("whole %zu split %zu\n", whole, split);
            assert_int_equal(got, want);
            assert_int_equal(table, want);
        }
    }
    free(buf);
}

/* Each buffer is its own allocation of exactly len bytes: a load past its end is a heap overflow
 * under ASan. */
static void buffers_ending_at_their_allocation_end(void **state) {
    (void)state;
    for (size_t len = 0; len <= 300; len++) {
        unsigned char *p = malloc(len ? len : 1);
        assert_non_null(p);
        fill_random(p, len);
        uint64_t start = next_random();
        uint64_t want = reference(start, p, len);
        assert_int_equal(cp__crc64(start, p, len), want);
        assert_int_equal(cp__crc64_table(start, p, len), want);
        free(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(redis_check_value),
        cmocka_unit_test(way_taken_follows_the_cpu),
        cmocka_unit_test(every_length_and_offset_agree_with_bits),
        cmocka_unit_test(continued_sum_equals_whole),
        cmocka_unit_test(buffers_ending_at_their_allocation_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
