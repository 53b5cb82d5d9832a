/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for the key space (src/bench/keyspace.c): PRNG streams, key names, --key-dist
 * parsing, sequential coverage without overlap, uniform range, zipf against the exact
 * distribution, and value generation / verification including every failure kind.
 * Single-threaded; all randomness is seeded, so results are reproducible.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "asserts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/keyspace.h"
#include "clusterpipe/clusterpipe.h"

static void test_rng_streams(void **state) {
    (void)state;
    cp__rng a, b, c;
    cp__rng_seed(&a, 42, 0);
    cp__rng_seed(&b, 42, 0);
    cp__rng_seed(&c, 42, 1);
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = cp__rng_next(&a), y = cp__rng_next(&b), z = cp__rng_next(&c);
        same_ab += x == y;
        same_ac += x == z;
    }
    assert_int_equal(same_ab, 1000);
    assert_int_equal(same_ac, 0);

    /* Seed 0 works and below() stays in range and covers it. */
    cp__rng_seed(&a, 0, 0);
    int seen[10] = {0};
    for (int i = 0; i < 100000; i++) {
        uint64_t v = cp__rng_below(&a, 10);
        assert_int_lt(v, 10);
        seen[v]++;
        double d = cp__rng_double(&a);
        assert_double_ge(d, 0.0);
        assert_double_lt(d, 1.0);
    }
    for (int i = 0; i < 10; i++)
        assert_in_range(seen[i], 9501, 10499); /* > 9500 and < 10500 */
    assert_int_equal(cp__rng_below(&a, 0), 0);
    assert_int_equal(cp__rng_below(&a, 1), 0);
}

static void test_key_format(void **state) {
    (void)state;
    cp__keyfmt f;
    char buf[CP__KEY_MAX_LEN];
    assert_int_equal(cp__keyfmt_init(&f, NULL, 0), 0);
    size_t n = cp__key_format(&f, 0, buf);
    assert_int_equal(n, 5);
    assert_memory_equal(buf, "key:0", 5);
    n = cp__key_format(&f, 49999999, buf);
    assert_int_equal(n, 12);
    assert_memory_equal(buf, "key:49999999", 12);
    n = cp__key_format(&f, UINT64_MAX, buf);
    assert_int_equal(n, 24);
    assert_memory_equal(buf, "key:18446744073709551615", 24);
    assert_int_equal(cp__key_max_len(&f, 50000000), 12);
    assert_int_equal(cp__key_max_len(&f, 1), 5);
    assert_int_equal(cp__key_max_len(&f, 10), 5);
    assert_int_equal(cp__key_max_len(&f, 11), 6);

    assert_int_equal(cp__keyfmt_init(&f, "memtier-", 12), 0);
    n = cp__key_format(&f, 1234, buf);
    assert_int_equal(n, 20);
    assert_memory_equal(buf, "memtier-000000001234", 20);
    assert_int_equal(cp__key_max_len(&f, 100), 20);
    n = cp__key_format(&f, 1234567890123ull, buf); /* wider than the padding */
    assert_memory_equal(buf, "memtier-1234567890123", n);

    assert_int_equal(cp__keyfmt_init(&f, "", 0), 0);
    n = cp__key_format(&f, 7, buf);
    assert_int_equal(n, 1);
    assert_int_equal(buf[0], '7');

    char longp[CP__KEY_PREFIX_MAX + 2];
    memset(longp, 'p', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    assert_int_equal(cp__keyfmt_init(&f, longp, 0), CP__KS_EINVAL);
    longp[CP__KEY_PREFIX_MAX] = '\0'; /* exactly the max is fine */
    assert_int_equal(cp__keyfmt_init(&f, longp, 20), 0);
    n = cp__key_format(&f, 0, buf);
    assert_int_equal(n, CP__KEY_PREFIX_MAX + 20);
    assert_int_le(n, CP__KEY_MAX_LEN);
    assert_int_equal(cp__keyfmt_init(&f, "a|b", 0), CP__KS_EINVAL);
    assert_int_equal(cp__keyfmt_init(&f, "k", 21), CP__KS_EINVAL);
}

static void test_dist_parse(void **state) {
    (void)state;
    cp__dist d;
    char buf[32];
    assert_int_equal(cp__dist_parse("uniform", &d), 0);
    assert_int_equal(d.kind, CP__DIST_UNIFORM);
    assert_int_equal(cp__dist_parse("sequential", &d), 0);
    assert_int_equal(d.kind, CP__DIST_SEQUENTIAL);
    cp__dist_format(&d, buf, sizeof(buf));
    assert_string_equal(buf, "sequential");
    assert_int_equal(cp__dist_parse("zipf:0.99", &d), 0);
    assert_int_equal(d.kind, CP__DIST_ZIPF);
    assert_double_eq(d.zipf_s, 0.99);
    cp__dist_format(&d, buf, sizeof(buf));
    assert_string_equal(buf, "zipf:0.99");
    assert_int_equal(cp__dist_parse("zipf:2", &d), 0);
    assert_double_eq(d.zipf_s, 2.0);
    assert_int_equal(cp__dist_parse("zipf:.5", &d), 0);
    assert_double_eq(d.zipf_s, 0.5);

    const char *bad[] = {
        "",           "Uniform",  "zipf",       "zipf:",       "zipf:0",   "zipf:-1",
        "zipf:x",     "zipf:1x",  "zipf: 1",    "zipf:inf",    "zipf:nan", "zipf:101",
        "zipf:0x1p0", "zipf:1e3", "zipf:1.2.3", "sequential ", "uniform:3"};
    d.kind = CP__DIST_SEQUENTIAL;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (cp__dist_parse(bad[i], &d) != CP__KS_EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
    }
    assert_int_equal(d.kind, CP__DIST_SEQUENTIAL); /* untouched on error */
    assert_int_equal(cp__dist_parse(NULL, &d), CP__KS_EINVAL);
}

static void test_keygen_init_errors(void **state) {
    (void)state;
    cp__keygen g;
    cp__dist u = {CP__DIST_UNIFORM, 0, 0, 0}, z = {CP__DIST_ZIPF, 0, 0, 0};
    assert_int_equal(cp__keygen_init(&g, &u, 0, 1, 0, 1), CP__KS_EINVAL);
    assert_int_equal(cp__keygen_init(&g, &u, 10, 1, 0, 0), CP__KS_EINVAL);
    assert_int_equal(cp__keygen_init(&g, &u, 10, 1, 3, 3), CP__KS_EINVAL);
    assert_int_equal(cp__keygen_init(&g, &z, 10, 1, 0, 1), CP__KS_EINVAL);
    assert_int_equal(cp__keygen_init(&g, NULL, 10, 1, 0, 1), CP__KS_EINVAL);
}

/* T parts of a sequential generator cover [0, K) exactly once per lap, then wrap. */
static void check_sequential_cover(uint64_t keys, uint64_t parts) {
    cp__dist d = {CP__DIST_SEQUENTIAL, 0, 0, 0};
    unsigned char *seen = calloc(keys, 1);
    assert_non_null(seen);
    uint64_t total = 0;
    for (uint64_t p = 0; p < parts; p++) {
        cp__keygen g;
        assert_int_equal(cp__keygen_init(&g, &d, keys, 99, p, parts), 0);
        uint64_t share = cp__keygen_share(&g);
        total += share;
        uint64_t first = 0;
        for (uint64_t i = 0; i < share; i++) {
            uint64_t k = cp__keygen_next(&g);
            assert_int_lt(k, keys);
            if (i == 0)
                first = k;
            else
                assert_int_equal(k, first + i); /* contiguous, in order */
            seen[k]++;
        }
        if (share > 0)
            assert_int_equal(cp__keygen_next(&g), first); /* wraps to its own start */
        else
            assert_int_lt(cp__keygen_next(&g), keys); /* still valid indices */
    }
    assert_int_equal(total, keys);
    for (uint64_t k = 0; k < keys; k++)
        if (seen[k] != 1)
            fail_msg("keys=%lu parts=%lu: key %lu seen %u times", (unsigned long)keys,
                     (unsigned long)parts, (unsigned long)k, seen[k]);
    free(seen);
}

static void test_sequential(void **state) {
    (void)state;
    check_sequential_cover(1000, 1);
    check_sequential_cover(1000, 7);
    check_sequential_cover(1001, 10);
    check_sequential_cover(5, 8); /* more parts than keys: some own nothing */
    check_sequential_cover(1, 1);
    check_sequential_cover(100003, 40);

    /* Huge key counts split without overflow. */
    cp__dist d = {CP__DIST_SEQUENTIAL, 0, 0, 0};
    cp__keygen g;
    assert_int_equal(cp__keygen_init(&g, &d, UINT64_MAX, 1, 3, 4), 0);
    assert_int_equal(cp__keygen_next(&g), UINT64_MAX / 4 * 3 + 3 * 3 / 4);
}

static void test_uniform(void **state) {
    (void)state;
    cp__dist d = {CP__DIST_UNIFORM, 0, 0, 0};
    cp__keygen g, g2;
    assert_int_equal(cp__keygen_init(&g, &d, 1000, 5, 0, 4), 0);
    assert_int_equal(cp__keygen_init(&g2, &d, 1000, 5, 1, 4), 0);
    assert_int_equal(cp__keygen_share(&g), 1000);
    unsigned seen[1000] = {0};
    int same = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t k = cp__keygen_next(&g);
        assert_int_lt(k, 1000);
        seen[k]++;
        same += k == cp__keygen_next(&g2);
    }
    for (int i = 0; i < 1000; i++)
        assert_in_range(seen[i], 101, 299); /* > 100 and < 300: expected 200 */
    assert_int_lt(same, 1000);              /* parts draw independent streams */

    /* 50 million keys: the generator's memory is its fixed struct. */
    assert_int_equal(cp__keygen_init(&g, &d, 50000000, 5, 0, 1), 0);
    uint64_t mx = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t k = cp__keygen_next(&g);
        assert_int_lt(k, 50000000);
        if (k > mx)
            mx = k;
    }
    assert_int_gt(mx, 49000000);
}

/* Empirical zipf frequencies match p(k) = k^-s / sum_j j^-s within a small total variation
 * distance, and the top ranks match individually. */
static void check_zipf(uint64_t keys, double s) {
    cp__dist d = {CP__DIST_ZIPF, s, 0, 0};
    cp__keygen g;
    assert_int_equal(cp__keygen_init(&g, &d, keys, 7, 0, 1), 0);
    enum { N = 1000000 };
    uint64_t *cnt = calloc(keys, sizeof(*cnt));
    assert_non_null(cnt);
    for (int i = 0; i < N; i++) {
        uint64_t k = cp__keygen_next(&g);
        assert_int_lt(k, keys);
        cnt[k]++;
    }
    double norm = 0;
    for (uint64_t k = 1; k <= keys; k++)
        norm += pow((double)k, -s);
    double tv = 0;
    for (uint64_t k = 1; k <= keys; k++)
        tv += fabs((double)cnt[k - 1] / N - pow((double)k, -s) / norm);
    tv /= 2;
    if (tv > 0.01)
        fail_msg("zipf keys=%lu s=%g: total variation %.4f", (unsigned long)keys, s, tv);
    for (uint64_t k = 1; k <= 3 && k <= keys; k++) {
        double want = pow((double)k, -s) / norm, got = (double)cnt[k - 1] / N;
        if (fabs(got - want) > 0.005 + 0.02 * want)
            fail_msg("zipf keys=%lu s=%g rank %lu: %.4f want %.4f", (unsigned long)keys, s,
                     (unsigned long)k, got, want);
    }
    free(cnt);
}

static void test_zipf(void **state) {
    (void)state;
    check_zipf(100, 0.5);
    check_zipf(100, 0.99);
    check_zipf(100, 1.0);
    check_zipf(1000, 1.2);
    check_zipf(50, 2.0);
    check_zipf(10, 5.0);
    check_zipf(1, 1.0);
    check_zipf(2, 0.01);

    /* 50 million keys, s = 1: P(index 0) = 1 / H(5e7) ~= 0.0546; no table, O(1) per sample. */
    cp__dist d = {CP__DIST_ZIPF, 1.0, 0, 0};
    cp__keygen g;
    assert_int_equal(cp__keygen_init(&g, &d, 50000000, 3, 0, 1), 0);
    uint64_t zero = 0, high = 0;
    for (int i = 0; i < 1000000; i++) {
        uint64_t k = cp__keygen_next(&g);
        assert_int_lt(k, 50000000);
        zero += k == 0;
        high += k >= 25000000;
    }
    double h = log(5e7) + 0.5772156649 + 1.0 / (2 * 5e7);
    assert_double_lt(fabs((double)zero / 1e6 - 1.0 / h), 0.002);
    /* P(k >= K/2) = (H(K) - H(K/2)) / H(K) ~= ln 2 / H(K) */
    assert_double_lt(fabs((double)high / 1e6 - log(2.0) / h), 0.002);
}

static void test_value_roundtrip(void **state) {
    (void)state;
    cp__keyfmt kf;
    cp__valuefmt vf;
    char key[CP__KEY_MAX_LEN];
    assert_int_equal(cp__keyfmt_init(&kf, NULL, 0), 0);
    size_t maxk = cp__key_max_len(&kf, 1000000);
    assert_int_equal(cp__valuefmt_init(&vf, 100, maxk, true), 0);
    char buf[128];
    for (uint64_t n = 0; n < 1000000; n += 997) {
        size_t kl = cp__key_format(&kf, n, key);
        uint32_t ver = (uint32_t)(n * 2654435761u);
        memset(buf, '#', sizeof(buf));
        size_t hdr = cp__value_fill(&vf, key, kl, ver, buf);
        assert_int_gt(hdr, kl + 2);
        assert_int_equal(buf[100], '#'); /* exactly value_size bytes written */
        assert_memory_equal(buf, key, kl);
        assert_int_equal(buf[kl], '|');
        assert_int_equal(buf[hdr - 1], '|');
        assert_null(memchr(buf + hdr, '|', 100 - hdr));
        uint32_t got = 0;
        assert_int_equal(cp__value_verify(&vf, buf, 100, key, kl, &got), CP__VERIFY_OK);
        assert_int_equal(got, ver);
        assert_int_equal(cp__value_verify(&vf, buf, 100, key, kl, NULL), CP__VERIFY_OK);
    }
    cp__value_fill(&vf, "key:5", 5, 12, buf);
    assert_memory_equal(buf, "key:5|12|", 9);
    cp__valuefmt_free(&vf);
    cp__valuefmt_free(&vf); /* idempotent */
}

static void test_value_verify_failures(void **state) {
    (void)state;
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init(&vf, 64, 12, true), 0);
    char v[64], w[64], t[80];
    uint32_t ver = 0;
    cp__value_fill(&vf, "key:1", 5, 3, v);

    /* Another key's value: wrong key, including a key that extends ours. */
    cp__value_fill(&vf, "key:2", 5, 3, w);
    assert_int_equal(cp__value_verify(&vf, w, 64, "key:1", 5, &ver), CP__VERIFY_WRONG_KEY);
    cp__value_fill(&vf, "key:12", 6, 3, w);
    assert_int_equal(cp__value_verify(&vf, w, 64, "key:1", 5, &ver), CP__VERIFY_WRONG_KEY);
    assert_int_equal(cp__value_verify(&vf, v, 64, "key:12", 6, &ver), CP__VERIFY_WRONG_KEY);

    /* Wrong size: truncated or longer, header still ours; version still reported. */
    ver = 0;
    assert_int_equal(cp__value_verify(&vf, v, 63, "key:1", 5, &ver), CP__VERIFY_WRONG_SIZE);
    assert_int_equal(ver, 3);
    memcpy(t, v, 64);
    memset(t + 64, 'x', 16);
    assert_int_equal(cp__value_verify(&vf, t, 80, "key:1", 5, &ver), CP__VERIFY_WRONG_SIZE);
    assert_int_equal(cp__value_verify(&vf, v, 9, "key:1", 5, &ver), CP__VERIFY_WRONG_SIZE);

    /* Corrupted filler (the last byte, the first byte after the header). */
    memcpy(t, v, 64);
    t[63] ^= 1;
    assert_int_equal(cp__value_verify(&vf, t, 64, "key:1", 5, &ver), CP__VERIFY_BAD_FORMAT);
    memcpy(t, v, 64);
    t[8] = 'Z';
    assert_int_equal(cp__value_verify(&vf, t, 64, "key:1", 5, &ver), CP__VERIFY_BAD_FORMAT);

    /* Corrupted header: version not digits, missing separator, too many digits, > uint32. */
    const char *hdrs[] = {"key:1|x|", "key:1||", "key:1|3x", "key:1|12345678901|",
                          "key:1|4294967296|"};
    for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
        memcpy(t, v, 64);
        memcpy(t, hdrs[i], strlen(hdrs[i]));
        if (cp__value_verify(&vf, t, 64, "key:1", 5, &ver) != CP__VERIFY_BAD_FORMAT)
            fail_msg("accepted header %s", hdrs[i]);
    }
    /* The largest version fits exactly. */
    memcpy(t, v, 64);
    assert_int_equal(cp__value_fill(&vf, "key:1", 5, UINT32_MAX, t), 17);
    assert_int_equal(cp__value_verify(&vf, t, 64, "key:1", 5, &ver), CP__VERIFY_OK);
    assert_int_equal(ver, UINT32_MAX);

    /* Garbage, replies of other commands, empty. */
    assert_int_equal(cp__value_verify(&vf, "OK", 2, "key:1", 5, &ver), CP__VERIFY_BAD_FORMAT);
    assert_int_equal(cp__value_verify(&vf, "", 0, "key:1", 5, &ver), CP__VERIFY_BAD_FORMAT);
    assert_int_equal(cp__value_verify(&vf, "key:1", 5, "key:1", 5, &ver), CP__VERIFY_BAD_FORMAT);
    assert_int_equal(cp__value_verify(&vf, "|1|", 3, "key:1", 5, &ver), CP__VERIFY_BAD_FORMAT);
    assert_int_equal(cp__value_verify(&vf, "corrupted-by-hand", 17, "key:1", 5, &ver),
                     CP__VERIFY_BAD_FORMAT);

    assert_string_equal(cp__verify_result_str(CP__VERIFY_OK), "ok");
    assert_string_equal(cp__verify_result_str(CP__VERIFY_WRONG_KEY), "wrong key");
    assert_string_equal(cp__verify_result_str(CP__VERIFY_BAD_FORMAT), "bad format");
    assert_string_equal(cp__verify_result_str(CP__VERIFY_WRONG_SIZE), "wrong size");
    cp__valuefmt_free(&vf);
}

/* Size limits: the documented minimum, non-verifiable small values, bounds. */
static void test_value_sizes(void **state) {
    (void)state;
    cp__valuefmt vf;
    char buf[64];
    size_t min = cp__value_min_size(12);
    assert_int_equal(min, 24);
    assert_int_equal(cp__valuefmt_init(&vf, min - 1, 12, true), CP__KS_ETOOSMALL);
    assert_int_equal(cp__valuefmt_init(&vf, min, 12, true), 0);
    assert_int_equal(cp__value_fill(&vf, "key:49999999", 12, UINT32_MAX, buf), 24);
    assert_int_equal(cp__value_verify(&vf, buf, 24, "key:49999999", 12, NULL), CP__VERIFY_OK);
    cp__valuefmt_free(&vf);

    /* Not verifiable (--no-verify): tiny values are pure filler, header dropped. */
    assert_int_equal(cp__valuefmt_init(&vf, 3, 12, false), 0);
    memset(buf, '#', sizeof(buf));
    assert_int_equal(cp__value_fill(&vf, "key:49999999", 12, 1, buf), 0);
    assert_memory_equal(buf, "012#", 4);
    assert_int_equal(cp__value_verify(&vf, buf, 3, "key:49999999", 12, NULL),
                     CP__VERIFY_BAD_FORMAT);
    cp__valuefmt_free(&vf);
    /* ... while a short version still fits in a small non-verifiable value. */
    assert_int_equal(cp__valuefmt_init(&vf, 8, 12, false), 0);
    assert_int_equal(cp__value_fill(&vf, "k:1", 3, 7, buf), 6);
    assert_memory_equal(buf, "k:1|7|67", 8);
    cp__valuefmt_free(&vf);

    assert_int_equal(cp__valuefmt_init(&vf, 0, 0, false), CP__KS_EINVAL);
    assert_int_equal(cp__valuefmt_init(&vf, CP__VALUE_MAX_SIZE + 1, 0, false), CP__KS_ETOOBIG);
    assert_null(vf.tmpl);

    /* A large value: header then filler all the way. */
    assert_int_equal(cp__valuefmt_init(&vf, 1 << 20, 12, true), 0);
    char *big = malloc(1 << 20);
    assert_non_null(big);
    cp__value_fill(&vf, "key:7", 5, 1, big);
    assert_int_equal(cp__value_verify(&vf, big, 1 << 20, "key:7", 5, NULL), CP__VERIFY_OK);
    big[(1 << 20) - 1] = '|';
    assert_int_equal(cp__value_verify(&vf, big, 1 << 20, "key:7", 5, NULL), CP__VERIFY_BAD_FORMAT);
    free(big);
    cp__valuefmt_free(&vf);

    /* Large values land correctly at every alignment of the destination (the fill picks its
     * template source address from the destination's; see filler_src). */
    assert_int_equal(cp__valuefmt_init(&vf, 8192, 12, true), 0);
    char *area = malloc(8192 + 4096 + 64);
    assert_non_null(area);
    for (size_t off = 0; off < 4096 + 64; off++) {
        char *dst = area + off;
        cp__value_fill(&vf, "key:42", 6, (uint32_t)off, dst);
        uint32_t got = 0;
        assert_int_equal(cp__value_verify(&vf, dst, 8192, "key:42", 6, &got), CP__VERIFY_OK);
        assert_int_equal(got, off);
    }
    free(area);
    cp__valuefmt_free(&vf);
}

/* Decimal formatting of every digit count, against snprintf. */
static void test_key_digits(void **state) {
    (void)state;
    cp__keyfmt f;
    assert_int_equal(cp__keyfmt_init(&f, "k", 0), 0);
    char buf[CP__KEY_MAX_LEN], want[32];
    uint64_t n = 0;
    for (int d = 0; d < 20; d++) {
        uint64_t cases[] = {n, n + 1, n * 10 + 9, n ? n - 1 : 0};
        for (int c = 0; c < 4; c++) {
            size_t len = cp__key_format(&f, cases[c], buf);
            int wl = snprintf(want, sizeof(want), "k%llu", (unsigned long long)cases[c]);
            assert_int_equal(len, (size_t)wl);
            assert_memory_equal(buf, want, len);
        }
        n = n * 10 + 9; /* 9, 99, 999, ... */
    }
    /* both sides of 2^32, where the digits switch from 64- to 32-bit division */
    for (uint64_t v = UINT32_MAX - 300; v <= (uint64_t)UINT32_MAX + 300; v++) {
        size_t len = cp__key_format(&f, v, buf);
        int wl = snprintf(want, sizeof(want), "k%llu", (unsigned long long)v);
        assert_int_equal(len, (size_t)wl);
        assert_memory_equal(buf, want, len);
    }
    cp__rng r;
    cp__rng_seed(&r, 3, 3);
    for (int i = 0; i < 100000; i++) {
        uint64_t v = cp__rng_next(&r) >> (cp__rng_next(&r) & 63);
        size_t len = cp__key_format(&f, v, buf);
        int wl = snprintf(want, sizeof(want), "k%llu", (unsigned long long)v);
        assert_int_equal(len, (size_t)wl);
        assert_memory_equal(buf, want, len);
    }
    /* Zero-padded to every width: every length of padding (its stores overlap differently), and
     * nothing written past the key. */
    for (unsigned w = 0; w <= 20; w++) {
        assert_int_equal(cp__keyfmt_init(&f, "k", w), 0);
        for (int i = 0; i < 2000; i++) {
            uint64_t v = cp__rng_next(&r) >> (cp__rng_next(&r) & 63);
            memset(buf, '#', sizeof(buf));
            size_t len = cp__key_format(&f, v, buf);
            int wl = snprintf(want, sizeof(want), "k%0*llu", (int)w, (unsigned long long)v);
            assert_int_equal(len, (size_t)wl);
            assert_memory_equal(buf, want, len);
            assert_int_equal(buf[len], '#');
        }
    }
}

/* Writing only the digits into a buffer that holds the prefix gives the same key as a full
 * format, also after a longer key left its digits behind. */
static void test_key_format_digits(void **state) {
    (void)state;
    cp__keyfmt f;
    char buf[CP__KEY_MAX_LEN], want[CP__KEY_MAX_LEN];
    assert_int_equal(cp__keyfmt_init(&f, "user:", 0), 0);
    memcpy(buf, "user:", 5);
    const uint64_t ns[] = {1234567, 5, 99, 100, 0, UINT64_MAX, 42};
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        size_t len = cp__key_format_digits(&f, ns[i], buf);
        size_t wl = cp__key_format(&f, ns[i], want);
        assert_int_equal(len, wl);
        assert_memory_equal(buf, want, len);
    }
    assert_int_equal(cp__keyfmt_init(&f, "k-", 6), 0);
    memcpy(buf, "k-", 2);
    assert_int_equal(cp__key_format_digits(&f, 12, buf), 8);
    assert_memory_equal(buf, "k-000012", 8);
}

/* The per-master layout names keys as redis-benchmark --cluster does: the tags are its
 * crc16_slot_table's (slot 80 is "avs", not "Bbr": lowercase before uppercase; slot 1584 has a
 * one-character tag, padded with '}' as redis-benchmark pads it), key n takes tag n % M and the
 * number n / M in 12 digits, and every key lands in its master's slot. */
static void test_key_tags(void **state) {
    (void)state;
    static const char ALNUM[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    static const struct {
        uint16_t slot;
        const char *tag;
    } rb[] = {{0, "06S"},    {1, "Qi}"},    {80, "avs"},    {88, "aUo"},   {1584, "3}}"},
              {4096, "0cY"}, {8192, "8YG"}, {12288, "356"}, {16383, "6ZJ"}};
    const unsigned M = sizeof(rb) / sizeof(rb[0]);
    uint16_t slots[sizeof(rb) / sizeof(rb[0])];
    for (unsigned i = 0; i < M; i++)
        slots[i] = rb[i].slot;
    cp__keyfmt f;
    char buf[CP__KEY_MAX_LEN], want[CP__KEY_MAX_LEN], part[CP__KEY_MAX_LEN];
    assert_int_equal(cp__keyfmt_init(&f, NULL, 0), 0);
    assert_int_equal(cp__keyfmt_set_tags(&f, slots, M), 0);
    memcpy(part, "key:", 4);
    const uint64_t ns[] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 9 * 123456 + 4, 9 * 999999999999ull};
    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        uint64_t n = ns[k];
        snprintf(want, sizeof(want), "key:{%.3s}:%012llu", rb[n % M].tag,
                 (unsigned long long)(n / M));
        size_t len = cp__key_format(&f, n, buf);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(buf, want, len);
        assert_int_equal(cp_keyslot(buf, len), rb[n % M].slot);
        assert_int_equal(cp__key_slot(&f, n, buf, len), rb[n % M].slot); /* without hashing */
        assert_int_equal(cp__key_format_digits(&f, n, part), len);       /* tag + digits after it */
        assert_memory_equal(part, want, len);
    }
    assert_int_equal(cp__key_max_len(&f, 9 * 1000000000000ull), 22);
    assert_int_equal(cp__key_max_len(&f, 9 * 1000000000000ull + 1), 23);
    assert_int_equal(cp__key_max_len_of(NULL, CP__KEYS_PER_MASTER, 1000), 22);
    assert_int_equal(cp__key_max_len_of(NULL, CP__KEYS_SPREAD, 1000), 7);
    assert_int_equal(cp__key_max_len_of("a|b", CP__KEYS_SPREAD, 1000), 0);

    /* Every slot's tag hashes to it: 1 to 3 alphanumeric characters, then '}' padding. */
    for (unsigned base = 0; base < CP_SLOTS; base += CP__KEY_TAGS_MAX) {
        uint16_t all[CP__KEY_TAGS_MAX];
        for (unsigned i = 0; i < CP__KEY_TAGS_MAX; i++)
            all[i] = (uint16_t)(base + i);
        assert_int_equal(cp__keyfmt_set_tags(&f, all, CP__KEY_TAGS_MAX), 0);
        for (unsigned i = 0; i < CP__KEY_TAGS_MAX; i++) {
            const char *t = f.tags[i];
            size_t tl = 0; /* 3 bytes, no NUL */
            while (tl < 3 && t[tl] != '}' && strchr(ALNUM, t[tl]) != NULL)
                tl++;
            assert_int_ge(tl, 1);
            assert_int_le(tl, 3);
            for (size_t j = tl; j < 3; j++)
                assert_int_equal(t[j], '}');
            assert_int_equal(cp_keyslot(t, tl), base + i);
        }
        for (uint64_t n = 0; n < 2 * CP__KEY_TAGS_MAX; n += 7) { /* the slot the key hashes to */
            size_t len = cp__key_format(&f, n, buf);
            assert_int_equal(cp__key_slot(&f, n, buf, len), cp_keyslot(buf, len));
        }
    }

    uint16_t bad = CP_SLOTS;
    assert_int_equal(cp__keyfmt_set_tags(&f, slots, 0), CP__KS_EINVAL);
    assert_int_equal(cp__keyfmt_set_tags(&f, &bad, 1), CP__KS_EINVAL);
    uint16_t many[CP__KEY_TAGS_MAX + 1] = {0};
    assert_int_equal(cp__keyfmt_set_tags(&f, many, CP__KEY_TAGS_MAX + 1), CP__KS_EINVAL);
    /* a '{' in the prefix would make the key's tag the prefix's, or swallow ours */
    cp__keyfmt braced;
    assert_int_equal(cp__keyfmt_init(&braced, "a{", 0), 0);
    assert_int_equal(cp__keyfmt_set_tags(&braced, slots, M), CP__KS_EINVAL);
    assert_int_equal(cp__key_max_len_of("a{", CP__KEYS_PER_MASTER, 1000), 20);

    /* spread keys: hashed */
    cp__keyfmt sp;
    assert_int_equal(cp__keyfmt_init(&sp, NULL, 0), 0);
    for (uint64_t n = 0; n < 1000; n += 37) {
        size_t len = cp__key_format(&sp, n, buf);
        assert_int_equal(cp__key_slot(&sp, n, buf, len), cp_keyslot(buf, len));
    }

    cp__key_layout l = CP__KEYS_SPREAD;
    assert_int_equal(cp__key_layout_parse("per-master", &l), 0);
    assert_int_equal(l, CP__KEYS_PER_MASTER);
    assert_string_equal(cp__key_layout_str(l), "per-master");
    assert_int_equal(cp__key_layout_parse("spread", &l), 0);
    assert_int_equal(l, CP__KEYS_SPREAD);
    assert_string_equal(cp__key_layout_str(l), "spread");
    assert_int_equal(cp__key_layout_parse("permaster", &l), CP__KS_EINVAL);
    assert_int_equal(cp__key_layout_parse(NULL, &l), CP__KS_EINVAL);
}

/* Any single corrupted bit of a value is caught, whatever the key and value lengths (keys
 * shorter and longer than a word, fillers of a few words to a kilobyte): the value is then not
 * OK, or OK only because a version digit changed into another digit. */
static void test_value_verify_every_byte(void **state) {
    (void)state;
    const char *keys[] = {"k:1", "key:1234", "key:12345",
                          "a-rather-long-key-prefix-to-cross-several-words:7"};
    const size_t sizes[] = {70, 71, 72, 79, 100, 256, 300, 320, 1000};
    char v[1000], t[1000];
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        size_t kl = strlen(keys[k]);
        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
            cp__valuefmt vf;
            size_t size = sizes[z];
            assert_int_equal(cp__valuefmt_init(&vf, size, kl, true), 0);
            cp__value_fill(&vf, keys[k], kl, 3, v);
            uint32_t ver = 0;
            assert_int_equal(cp__value_verify(&vf, v, size, keys[k], kl, &ver), CP__VERIFY_OK);
            for (size_t i = 0; i < size; i++) {
                for (unsigned bit = 0; bit < 8; bit++) {
                    memcpy(t, v, size);
                    t[i] = (char)(t[i] ^ (1u << bit));
                    ver = 3;
                    cp__verify_result r = cp__value_verify(&vf, t, size, keys[k], kl, &ver);
                    if (r == CP__VERIFY_OK && ver == 3)
                        fail_msg("key %s size %zu: byte %zu bit %u flipped, still ok", keys[k],
                                 size, i, bit);
                }
            }
            cp__valuefmt_free(&vf);
        }
    }
}

/* --key-dist gaussian: the default and the explicit form, what is refused, the spelling. */
static void test_gaussian_parse(void **state) {
    (void)state;
    cp__dist d;
    char buf[64];
    assert_int_equal(cp__dist_parse("gaussian", &d), 0);
    assert_int_equal(d.kind, CP__DIST_GAUSSIAN);
    assert_double_eq(d.spread, 0.0); /* the defaults: keys / 2, keys / 6 */
    cp__dist_format(&d, buf, sizeof(buf));
    assert_string_equal(buf, "gaussian");
    assert_int_equal(cp__dist_parse("gaussian:500,12.5", &d), 0);
    assert_double_eq(d.centre, 500.0);
    assert_double_eq(d.spread, 12.5);
    cp__dist_format(&d, buf, sizeof(buf));
    assert_string_equal(buf, "gaussian:500,12.5");
    assert_int_equal(cp__dist_parse("gaussian:0,.5", &d), 0);
    assert_double_eq(d.centre, 0.0);
    assert_double_eq(d.spread, 0.5);
    assert_int_equal(cp__dist_check(&d, 1), 0);
    const char *bad[] = {"gaussian:",      "gaussian:5",     "gaussian:5,",    "gaussian:,5",
                         "gaussian:5,0",   "gaussian:-1,5",  "gaussian:5,-1",  "gaussian:5,x",
                         "gaussian:5,1e3", "gaussian:inf,1", "gaussian:1,nan", "gaussian:1,2,3",
                         "gaussian: 5,1",  "Gaussian",       "gauss",          "gaussian:5;1"};
    d.kind = CP__DIST_SEQUENTIAL;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (cp__dist_parse(bad[i], &d) != CP__KS_EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
    assert_int_equal(d.kind, CP__DIST_SEQUENTIAL);
    /* the centre must be a key of the key space */
    assert_int_equal(cp__dist_parse("gaussian:1000,10", &d), 0);
    assert_int_equal(cp__dist_check(&d, 1000), CP__KS_EINVAL);
    assert_int_equal(cp__dist_check(&d, 1001), 0);
    cp__keygen g;
    assert_int_equal(cp__keygen_init(&g, &d, 1000, 1, 0, 1), CP__KS_EINVAL);
}

/* Sample mean and standard deviation of n draws. */
static void gaussian_moments(cp__keygen *g, int n, uint64_t keys, double *mean, double *sd) {
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) {
        uint64_t k = cp__keygen_next(g);
        if (k >= keys)
            fail_msg("draw %llu outside [0, %llu)", (unsigned long long)k,
                     (unsigned long long)keys);
        sum += (double)k;
        sq += (double)k * (double)k;
    }
    *mean = sum / n;
    *sd = sqrt(sq / n - *mean * *mean);
}

/* For fixed seeds the draws have the asked centre and spread: the sample mean within 5 standard
 * errors, the sample deviation within 2%; two thirds of the draws within one spread of the
 * centre; a centre at the edge keeps every draw inside the key space. */
static void test_gaussian(void **state) {
    (void)state;
    const int n = 200000;
    double mean, sd;
    cp__keygen g;
    cp__dist d;
    assert_int_equal(cp__dist_parse("gaussian", &d), 0);
    assert_int_equal(cp__keygen_init(&g, &d, 1200000, 7, 0, 1), 0);
    gaussian_moments(&g, n, 1200000, &mean, &sd);
    double se = 200000.0 / sqrt(n); /* default spread keys / 6 */
    if (fabs(mean - 600000.0) > 5 * se || fabs(sd - 200000.0) > 0.02 * 200000.0)
        fail_msg("default: mean %.1f (want 600000), sd %.1f (want 200000)", mean, sd);

    assert_int_equal(cp__dist_parse("gaussian:30000,250", &d), 0);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        assert_int_equal(cp__keygen_init(&g, &d, 100000, seed, 1, 4), 0);
        gaussian_moments(&g, n, 100000, &mean, &sd);
        if (fabs(mean - 30000.0) > 5 * 250.0 / sqrt(n) || fabs(sd - 250.0) > 5.0)
            fail_msg("seed %llu: mean %.2f (want 30000), sd %.2f (want 250)",
                     (unsigned long long)seed, mean, sd);
    }
    int inside = 0;
    assert_int_equal(cp__keygen_init(&g, &d, 100000, 9, 0, 1), 0);
    for (int i = 0; i < n; i++) {
        double k = (double)cp__keygen_next(&g);
        inside += fabs(k - 30000.0) <= 250.0;
    }
    assert_double_lt(fabs((double)inside / n - 0.6827), 0.01);

    /* the centre at key 0: half the normal is cut off, nothing falls outside */
    assert_int_equal(cp__dist_parse("gaussian:0,100", &d), 0);
    assert_int_equal(cp__keygen_init(&g, &d, 1000, 3, 0, 1), 0);
    gaussian_moments(&g, n, 1000, &mean, &sd);
    assert_double_gt(mean, 70);
    assert_double_lt(mean, 90); /* half-normal: 100 * sqrt(2 / pi) = 79.8 */
    /* a spread far wider than the key space: still inside, about flat */
    assert_int_equal(cp__dist_parse("gaussian:5,1000000000", &d), 0);
    assert_int_equal(cp__keygen_init(&g, &d, 10, 3, 0, 1), 0);
    gaussian_moments(&g, 20000, 10, &mean, &sd);
    assert_double_gt(mean, 4.0);
    assert_double_lt(mean, 5.0);
}

/* --value-size: every form, its spelling, min / max / mean, and every refusal with its reason. */
static void test_value_sizes_parse(void **state) {
    (void)state;
    cp__value_sizes z;
    char buf[256], why[256];
    assert_int_equal(cp__value_sizes_parse("64", &z, why, sizeof(why)), 0);
    assert_false(cp__value_sizes_varied(&z));
    assert_int_equal(cp__value_sizes_max(&z), 64);
    cp__value_sizes_format(&z, buf, sizeof(buf));
    assert_string_equal(buf, "64");
    assert_int_equal(cp__value_sizes_parse("100-1000", &z, why, sizeof(why)), 0);
    assert_true(cp__value_sizes_varied(&z) && z.range);
    assert_int_equal(cp__value_sizes_min(&z), 100);
    assert_int_equal(cp__value_sizes_max(&z), 1000);
    assert_double_eq(cp__value_sizes_mean(&z), 550.0);
    cp__value_sizes_format(&z, buf, sizeof(buf));
    assert_string_equal(buf, "100-1000");
    assert_int_equal(cp__value_sizes_parse("100:7,1000:2,10000:1", &z, why, sizeof(why)), 0);
    assert_true(cp__value_sizes_varied(&z) && !z.range);
    assert_int_equal(z.n, 3);
    assert_int_equal(z.total, 10);
    assert_int_equal(cp__value_sizes_min(&z), 100);
    assert_int_equal(cp__value_sizes_max(&z), 10000);
    assert_double_lt(fabs(cp__value_sizes_mean(&z) - 1270.0), 1e-9);
    cp__value_sizes_format(&z, buf, sizeof(buf));
    assert_string_equal(buf, "100:7,1000:2,10000:1");
    /* one size however it is spelled */
    assert_int_equal(cp__value_sizes_parse("300-300", &z, why, sizeof(why)), 0);
    assert_false(cp__value_sizes_varied(&z));
    assert_int_equal(cp__value_sizes_max(&z), 300);
    assert_int_equal(cp__value_sizes_parse("300:5", &z, why, sizeof(why)), 0);
    assert_false(cp__value_sizes_varied(&z));
    cp__value_sizes_format(&z, buf, sizeof(buf));
    assert_string_equal(buf, "300");
    assert_int_equal(cp__value_sizes_parse("536870912", &z, NULL, 0), 0); /* the maximum */
    assert_int_equal(
        cp__value_sizes_parse("1:1,2:1,3:1,4:1,5:1,6:1,7:1,8:1,9:1,10:1,11:1,12:1,13:1,14:1,15:1,"
                              "16:1",
                              &z, NULL, 0),
        0);
    assert_int_equal(z.n, CP__VALUE_SIZES_MAX);

    static const struct {
        const char *in, *why;
    } bad[] = {
        {"", "empty"},
        {"0", "[1, 536870912]"},
        {"-5", "MIN-MAX"},
        {"536870913", "[1, 536870912]"},
        {"abc", "MIN-MAX"},
        {"10 ", "MIN-MAX"},
        {"1e3", "MIN-MAX"},
        {"100-", "MIN-MAX"},
        {"-100", "MIN-MAX"},
        {"0-100", "MIN-MAX"},
        {"1000-100", "MIN is above MAX"},
        {"100-200-300", "MIN-MAX"},
        {"100:", "weight"},
        {"100:0", "weight"},
        {"100:1000001", "weight"},
        {"100:x", "weight"},
        {":5", "SIZE:WEIGHT"},
        {"0:5", "SIZE:WEIGHT"},
        {"100:7,", "SIZE:WEIGHT"},
        {"100:7,,1000:2", "SIZE:WEIGHT"},
        {"100:7,1000", "SIZE:WEIGHT"},
        {"100:7,100:2", "listed twice"},
        {"100-200:5", "SIZE:WEIGHT"},
        {"1:1,2:1,3:1,4:1,5:1,6:1,7:1,8:1,9:1,10:1,11:1,12:1,13:1,14:1,15:1,16:1,17:1",
         "more than"},
    };
    cp__value_sizes_fixed(&z, 77);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        if (cp__value_sizes_parse(bad[i].in, &z, why, sizeof(why)) != CP__KS_EINVAL)
            fail_msg("accepted \"%s\"", bad[i].in);
        if (strstr(why, bad[i].why) == NULL)
            fail_msg("\"%s\": reason \"%s\" does not say \"%s\"", bad[i].in, why, bad[i].why);
    }
    assert_int_equal(cp__value_sizes_max(&z), 77); /* untouched on error */
    assert_int_equal(cp__value_sizes_parse(NULL, &z, NULL, 0), CP__KS_EINVAL);
}

/* Over many keys each size of a weighted list gets its share of the keys (within 1% of all
 * keys), a range's sizes are spread evenly and reach both ends, and a key's size is the same
 * every time it is asked for. */
static void test_value_sizes_shares(void **state) {
    (void)state;
    cp__keyfmt kf;
    assert_int_equal(cp__keyfmt_init(&kf, NULL, 0), 0);
    cp__valuefmt vf;
    cp__value_sizes z;
    assert_int_equal(cp__value_sizes_parse("100:7,1000:2,10000:1", &z, NULL, 0), 0);
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, cp__key_max_len(&kf, 200000), true), 0);
    assert_int_equal(vf.value_size, 10000); /* buffers: the largest */
    const int n = 200000;
    int count[3] = {0};
    double bytes = 0;
    char key[CP__KEY_MAX_LEN];
    for (int i = 0; i < n; i++) {
        size_t kl = cp__key_format(&kf, (uint64_t)i, key);
        size_t len = cp__value_len(&vf, key, kl);
        assert_int_equal(len, cp__value_len(&vf, key, kl));
        count[len == 100 ? 0 : len == 1000 ? 1 : len == 10000 ? 2 : (fail(), 0)]++;
        bytes += (double)len;
    }
    const double want[3] = {0.7, 0.2, 0.1};
    for (int i = 0; i < 3; i++)
        if (fabs((double)count[i] / n - want[i]) > 0.01)
            fail_msg("size %d: %.4f of the keys, want %.2f", i, (double)count[i] / n, want[i]);
    assert_double_lt(fabs(bytes / n - cp__value_sizes_mean(&z)), 0.02 * cp__value_sizes_mean(&z));
    cp__valuefmt_free(&vf);

    assert_int_equal(cp__value_sizes_parse("50-59", &z, NULL, 0), 0);
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, cp__key_max_len(&kf, 100000), true), 0);
    int hist[10] = {0};
    for (int i = 0; i < 100000; i++) {
        size_t kl = cp__key_format(&kf, (uint64_t)i, key);
        size_t len = cp__value_len(&vf, key, kl);
        assert_int_ge(len, 50);
        assert_int_le(len, 59);
        hist[len - 50]++;
    }
    for (int i = 0; i < 10; i++)
        assert_in_range(hist[i], 9501, 10499); /* > 9500 and < 10500: expected 10000 */
    cp__valuefmt_free(&vf);

    /* one size: cp__value_len is value_size, whatever the key */
    assert_int_equal(cp__valuefmt_init(&vf, 64, 12, true), 0);
    assert_false(vf.varied);
    assert_int_equal(cp__value_len(&vf, "key:1", 5), 64);
    cp__valuefmt_free(&vf);
    /* the smallest size must hold the header; the largest at most CP__VALUE_MAX_SIZE */
    assert_int_equal(cp__value_sizes_parse("10:1,1000:1", &z, NULL, 0), 0);
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, 12, true), CP__KS_ETOOSMALL);
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, 12, false), 0);
    cp__valuefmt_free(&vf);
}

/* Values of several sizes: each key's value has its own length, verifies, and a value of the
 * right key but another key's length (a size of the list, not this key's) is a wrong size; so
 * is a truncated one; a flipped filler byte is bad format. */
static void test_value_sizes_verify(void **state) {
    (void)state;
    cp__value_sizes z;
    assert_int_equal(cp__value_sizes_parse("40:1,300:1,5000:1", &z, NULL, 0), 0);
    cp__valuefmt vf, one;
    assert_int_equal(cp__valuefmt_init_sizes(&vf, &z, 12, true), 0);
    char *buf = malloc(vf.value_size), *t = malloc(vf.value_size);
    assert_non_null(buf);
    assert_non_null(t);
    int seen[3] = {0};
    for (int i = 0; i < 300; i++) {
        char key[32];
        size_t kl = (size_t)snprintf(key, sizeof(key), "key:%d", i);
        size_t len = cp__value_len(&vf, key, kl);
        seen[len == 40 ? 0 : len == 300 ? 1 : 2]++;
        assert_int_gt(cp__value_fill(&vf, key, kl, 7, buf), 0);
        uint32_t ver = 0;
        assert_int_equal(cp__value_verify(&vf, buf, len, key, kl, &ver), CP__VERIFY_OK);
        assert_int_equal(ver, 7);
        assert_int_equal(cp__value_verify(&vf, buf, len - 1, key, kl, NULL), CP__VERIFY_WRONG_SIZE);
        /* this key's header at each other size of the list */
        for (unsigned s = 0; s < z.n; s++) {
            if (z.size[s] == len)
                continue;
            assert_int_equal(cp__valuefmt_init(&one, z.size[s], 12, true), 0);
            cp__value_fill(&one, key, kl, 7, t);
            assert_int_equal(cp__value_verify(&vf, t, z.size[s], key, kl, NULL),
                             CP__VERIFY_WRONG_SIZE);
            cp__valuefmt_free(&one);
        }
        memcpy(t, buf, len);
        t[len - 1] ^= 1;
        assert_int_equal(cp__value_verify(&vf, t, len, key, kl, NULL), CP__VERIFY_BAD_FORMAT);
    }
    assert_int_gt(seen[0], 50);
    assert_int_gt(seen[1], 50);
    assert_int_gt(seen[2], 50);
    free(buf);
    free(t);
    cp__valuefmt_free(&vf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_streams),
        cmocka_unit_test(test_key_format),
        cmocka_unit_test(test_key_digits),
        cmocka_unit_test(test_key_format_digits),
        cmocka_unit_test(test_key_tags),
        cmocka_unit_test(test_dist_parse),
        cmocka_unit_test(test_keygen_init_errors),
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_zipf),
        cmocka_unit_test(test_value_roundtrip),
        cmocka_unit_test(test_value_verify_failures),
        cmocka_unit_test(test_value_sizes),
        cmocka_unit_test(test_value_verify_every_byte),
        cmocka_unit_test(test_gaussian_parse),
        cmocka_unit_test(test_gaussian),
        cmocka_unit_test(test_value_sizes_parse),
        cmocka_unit_test(test_value_sizes_shares),
        cmocka_unit_test(test_value_sizes_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
