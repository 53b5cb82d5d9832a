/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for the latency histogram (src/bench/hist.c): the relative error bound over the
 * whole 1 us .. 60 s range against exact order statistics, merge, clamping and the empty /
 * single-value edges. Single-threaded; histograms are heap-allocated (30 KiB each).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "asserts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hist.h"
#include "hgrm.h"
#include "util/sbuf.h"

#include <stdio.h>

/* Test-local PRNG (splitmix64) so runs are reproducible. */
static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Log-uniform value in [1 us, 60 s], in ns. */
static uint64_t rnd_latency_ns(void) {
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    double lo = log(1000.0), hi = log(60e9);
    uint64_t v = (uint64_t)exp(lo + u * (hi - lo));
    if (v < 1000)
        v = 1000;
    if (v > CP__HIST_MAX_NS)
        v = CP__HIST_MAX_NS;
    return v;
}

static cp__hist *new_hist(void) {
    cp__hist *h = malloc(sizeof(*h));
    assert_non_null(h);
    cp__hist_init(h);
    return h;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void assert_rel_close(double got, double want, double rel) {
    double err = fabs(got - want) / want;
    if (err > rel)
        fail_msg("got %.6f want %.6f: relative error %.5f > %.5f", got, want, err, rel);
}

/* Every single value in range reads back within 1% (in fact 1/256): put it between a smaller
 * and a larger value so the median is its bucket, not the exact min/max. */
static void test_each_value_within_one_percent(void **state) {
    (void)state;
    cp__hist *h = new_hist();
    for (int i = 0; i < 200000; i++) {
        uint64_t v = rnd_latency_ns();
        if (v <= 1000 || v >= CP__HIST_MAX_NS)
            continue;
        cp__hist_reset(h);
        cp__hist_record_ns(h, 1);
        cp__hist_record_ns(h, v);
        cp__hist_record_ns(h, CP__HIST_MAX_NS);
        double got = cp__hist_percentile_us(h, 50.0);
        assert_rel_close(got, (double)v / 1000.0, 1.0 / 256.0 + 1e-12);
    }
    /* Boundaries of the range and of bucket octaves. */
    uint64_t edges[] = {1000, 1023, 1024,  1025,  255,    256,     257,
                        511,  512,  65535, 65536, 999999, 1000000, 59999999999ull};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        cp__hist_reset(h);
        cp__hist_record_ns(h, 1);
        cp__hist_record_ns(h, edges[i]);
        cp__hist_record_ns(h, CP__HIST_MAX_NS);
        assert_rel_close(cp__hist_percentile_us(h, 50.0), (double)edges[i] / 1000.0,
                         1.0 / 256.0 + 1e-12);
    }
    free(h);
}

/* Percentiles of a large random sample match the exact order statistics within 1%. */
static void test_percentiles_match_exact(void **state) {
    (void)state;
    enum { N = 500000 };
    uint64_t *vals = malloc(N * sizeof(*vals));
    assert_non_null(vals);
    cp__hist *h = new_hist();
    uint64_t sum = 0;
    for (size_t i = 0; i < N; i++) {
        vals[i] = rnd_latency_ns();
        sum += vals[i];
        cp__hist_record_ns(h, vals[i]);
    }
    qsort(vals, N, sizeof(*vals), cmp_u64);
    assert_int_equal(cp__hist_count(h), N);
    assert_int_equal(cp__hist_clamped(h), 0);
    assert_double_eq(cp__hist_min_us(h), (double)vals[0] / 1000.0);
    assert_double_eq(cp__hist_max_us(h), (double)vals[N - 1] / 1000.0);
    assert_rel_close(cp__hist_mean_us(h), (double)sum / N / 1000.0, 1e-9);

    double ps[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 99.999, 100};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        uint64_t rank = (uint64_t)ceil(ps[i] / 100.0 * N - 1e-6);
        if (rank < 1)
            rank = 1;
        double want = (double)vals[rank - 1] / 1000.0;
        assert_rel_close(cp__hist_percentile_us(h, ps[i]), want, 0.01);
    }
    free(vals);
    free(h);
}

/* Percentile rank rule on a small exact set: 1..1000 us, p99.9 is the 999th value. */
static void test_percentile_ranks(void **state) {
    (void)state;
    cp__hist *h = new_hist();
    for (uint64_t v = 1; v <= 1000; v++)
        cp__hist_record_ns(h, v * 1000);
    assert_rel_close(cp__hist_percentile_us(h, 50.0), 500.0, 1.0 / 256);
    assert_rel_close(cp__hist_percentile_us(h, 90.0), 900.0, 1.0 / 256);
    assert_rel_close(cp__hist_percentile_us(h, 99.0), 990.0, 1.0 / 256);
    assert_rel_close(cp__hist_percentile_us(h, 99.9), 999.0, 1.0 / 256);
    assert_double_eq(cp__hist_percentile_us(h, 100.0), 1000.0);
    assert_double_eq(cp__hist_percentile_us(h, 0.0), 1.0);
    /* Out-of-range p is clamped. */
    assert_double_eq(cp__hist_percentile_us(h, -5.0), 1.0);
    assert_double_eq(cp__hist_percentile_us(h, 150.0), 1000.0);
    /* Monotonic in p. */
    double prev = 0;
    for (double p = 0; p <= 100.0; p += 0.37) {
        double v = cp__hist_percentile_us(h, p);
        assert_double_ge(v, prev);
        prev = v;
    }
    free(h);
}

/* Merging per-thread histograms equals recording everything into one. */
static void test_merge(void **state) {
    (void)state;
    cp__hist *a = new_hist(), *b = new_hist(), *all = new_hist(), *empty = new_hist();
    for (int i = 0; i < 100000; i++) {
        uint64_t v = rnd_latency_ns();
        cp__hist_record_ns((i % 3) ? a : b, v);
        cp__hist_record_ns(all, v);
    }
    cp__hist_record_ns(b, 2 * CP__HIST_MAX_NS);
    cp__hist_record_ns(all, 2 * CP__HIST_MAX_NS);
    cp__hist_merge(a, b);
    cp__hist_merge(a, empty);
    assert_memory_equal(a, all, sizeof(*a));
    assert_int_equal(cp__hist_clamped(a), 1);

    /* Merging into an empty histogram copies. */
    cp__hist_merge(empty, all);
    assert_memory_equal(empty, all, sizeof(*a));
    free(a);
    free(b);
    free(all);
    free(empty);
}

static void test_empty(void **state) {
    (void)state;
    cp__hist *h = new_hist();
    assert_int_equal(cp__hist_count(h), 0);
    assert_double_eq(cp__hist_min_us(h), 0.0);
    assert_double_eq(cp__hist_max_us(h), 0.0);
    assert_double_eq(cp__hist_mean_us(h), 0.0);
    assert_double_eq(cp__hist_percentile_us(h, 50.0), 0.0);
    assert_double_eq(cp__hist_percentile_us(h, 100.0), 0.0);
    cp__hist_iter it;
    cp__hist_point pt;
    cp__hist_iter_init(&it, h);
    assert_false(cp__hist_iter_next(&it, &pt));
    cp__hist_point pts[8];
    assert_int_equal(cp__hist_curve(h, 5, pts, 8), 0);
    free(h);
}

static void test_one_value(void **state) {
    (void)state;
    cp__hist *h = new_hist();
    cp__hist_record_ns(h, 123456789); /* 123456.789 us, inside a wide bucket */
    assert_int_equal(cp__hist_count(h), 1);
    double ps[] = {0, 50, 99.9, 100};
    for (size_t i = 0; i < 4; i++)
        assert_double_eq(cp__hist_percentile_us(h, ps[i]), 123456.789);
    assert_double_eq(cp__hist_min_us(h), 123456.789);
    assert_double_eq(cp__hist_max_us(h), 123456.789);
    assert_double_eq(cp__hist_mean_us(h), 123456.789);
    cp__hist_point pts[4];
    assert_int_equal(cp__hist_curve(h, 3, pts, 4), 1);
    assert_double_eq(pts[0].percentile, 100.0);
    assert_double_eq(pts[0].value_us, 123456.789);
    free(h);
}

/* Above 60 s: clamped to 60 s and counted; 0 ns and huge values do not crash. */
static void test_clamp_and_extremes(void **state) {
    (void)state;
    cp__hist *h = new_hist();
    cp__hist_record_ns(h, 0);
    cp__hist_record_ns(h, UINT64_MAX);
    cp__hist_record_ns(h, CP__HIST_MAX_NS);
    cp__hist_record_ns(h, CP__HIST_MAX_NS + 1);
    assert_int_equal(cp__hist_count(h), 4);
    assert_int_equal(cp__hist_clamped(h), 2);
    assert_double_eq(cp__hist_min_us(h), 0.0);
    assert_double_eq(cp__hist_max_us(h), 60e6);
    assert_rel_close(cp__hist_percentile_us(h, 50.0), 60e6, 1.0 / 256);
    assert_double_eq(cp__hist_percentile_us(h, 100.0), 60e6);

    cp__hist_reset(h);
    assert_int_equal(cp__hist_count(h), 0);
    assert_int_equal(cp__hist_clamped(h), 0);
    cp__hist_record_n_ns(h, 5000, 10);
    cp__hist_record_n_ns(h, 7000, 0);
    assert_int_equal(cp__hist_count(h), 10);
    assert_double_eq(cp__hist_mean_us(h), 5.0);
    free(h);
}

/* The iterator walks the exact CDF: increasing values, cumulative counts, ends at 100%. */
static void test_iterator(void **state) {
    (void)state;
    cp__hist *h = new_hist();
    for (int i = 0; i < 20000; i++)
        cp__hist_record_ns(h, rnd_latency_ns());
    cp__hist_iter it;
    cp__hist_point pt, last = {0, 0, 0};
    cp__hist_iter_init(&it, h);
    size_t n = 0;
    while (cp__hist_iter_next(&it, &pt)) {
        assert_double_ge(pt.value_us, last.value_us);
        assert_int_gt(pt.count, last.count);
        assert_double_gt(pt.percentile, last.percentile);
        last = pt;
        n++;
    }
    assert_int_gt(n, 100);
    assert_int_le(n, CP__HIST_BUCKETS);
    assert_int_equal(last.count, 20000);
    assert_double_eq(last.percentile, 100.0);
    assert_double_eq(last.value_us, cp__hist_max_us(h));
    free(h);
}

/* The chart curve: starts at p0 = min, spaced in nines, ends at 100 = max, monotonic. */
static void test_curve(void **state) {
    (void)state;
    cp__hist *h = new_hist();
    for (uint64_t i = 1; i <= 100000; i++)
        cp__hist_record_ns(h, i * 100);
    cp__hist_point pts[64];
    size_t n = cp__hist_curve(h, 2, pts, 64);
    /* p = 0, 68.4, 90, 96.8, 99, ..., 99.999 (rank 99999.x rounds up to count, stops) */
    assert_int_ge(n, 10);
    assert_int_lt(n, 64);
    assert_double_eq(pts[0].percentile, 0.0);
    assert_double_eq(pts[0].value_us, cp__hist_min_us(h));
    assert_rel_close(pts[2].percentile, 90.0, 1e-12);
    assert_rel_close(pts[2].value_us, 9000.0, 1.0 / 256);
    assert_rel_close(pts[4].value_us, 9900.0, 1.0 / 256);
    for (size_t i = 1; i < n; i++) {
        assert_double_gt(pts[i].percentile, pts[i - 1].percentile);
        assert_double_ge(pts[i].value_us, pts[i - 1].value_us);
    }
    assert_double_eq(pts[n - 1].percentile, 100.0);
    assert_double_eq(pts[n - 1].value_us, 10000.0);
    assert_int_equal(pts[n - 1].count, 100000);

    /* A small cap still ends with the max. */
    n = cp__hist_curve(h, 2, pts, 3);
    assert_int_equal(n, 3);
    assert_double_eq(pts[2].percentile, 100.0);
    free(h);
}

/* The .hgrm text: HdrHistogram's layout and percentile levels, each row's value the histogram's
 * own percentile (so the JSON's p50, p90, p99, p99.9 are read off it), counts that only grow to
 * the total, and a footer with the mean, the max and the count. */
static void test_hgrm(void **state) {
    (void)state;
    cp__hist *h = malloc(sizeof(*h));
    cp__hist_init(h);
    for (int i = 0; i < 100000; i++)
        cp__hist_record_ns(h, rnd_latency_ns() / 1000); /* 1 ns .. 60 ms */
    cp__sbuf b = CP__SBUF_INIT;
    cp__hist_hgrm(h, 5, &b);
    assert_false(b.oom);
    cp_hgrm g;
    char err[256];
    if (cp_hgrm_parse(b.buf, &g, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    size_t n = g.n;
    const cp_hgrm_row *rows = g.rows;
    assert_int_gt(n, 50);
    /* HdrHistogram's levels for 5 ticks per half distance */
    static const double levels[] = {0,      0.1, 0.2,    0.3,   0.4,    0.5,    0.55, 0.6,
                                    0.65,   0.7, 0.75,   0.775, 0.8,    0.825,  0.85, 0.875,
                                    0.8875, 0.9, 0.9125, 0.925, 0.9375, 0.94375};
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (fabs(rows[i].pct - levels[i]) > 1e-12)
            fail_msg("row %zu: percentile %.12f, want %.12f", i, rows[i].pct, levels[i]);
    for (size_t i = 0; i < n; i++) {
        double want = cp__hist_percentile_us(h, rows[i].pct * 100.0);
        if (fabs(rows[i].value - want) > 0.0005 + 1e-9 * want)
            fail_msg("row %zu (%.12f): value %.3f, the histogram says %.3f", i, rows[i].pct,
                     rows[i].value, want);
        if (i > 0) {
            assert_double_gt(rows[i].pct, rows[i - 1].pct);
            assert_int_ge(rows[i].total, rows[i - 1].total);
            assert_double_ge(rows[i].value, rows[i - 1].value);
        }
        if (i + 1 < n)
            assert_double_lt(fabs(rows[i].inv - 1.0 / (1.0 - rows[i].pct)),
                             0.005 + 1e-6 * rows[i].inv);
        /* the count up to the row's bucket covers the row's percentile */
        assert_double_ge((double)rows[i].total, rows[i].pct * 100000.0 - 1e-6);
    }
    assert_double_eq(rows[n - 1].pct, 1.0);
    assert_double_eq(rows[n - 1].inv, 0);
    assert_int_equal(rows[n - 1].total, 100000);
    assert_double_lt(fabs(rows[n - 1].value - cp__hist_max_us(h)), 0.0005);
    assert_double_lt(fabs(rows[5].value - cp__hist_percentile_us(h, 50)), 0.0005);
    assert_double_lt(fabs(rows[17].value - cp__hist_percentile_us(h, 90)), 0.0005);
    assert_double_lt(fabs(g.mean - cp__hist_mean_us(h)), 0.0005);
    assert_double_gt(g.stddev, 0);
    assert_double_lt(fabs(g.max - cp__hist_max_us(h)), 0.0005);
    assert_int_equal(g.total, 100000);
    assert_int_equal(g.buckets, 29);
    assert_int_equal(g.subbuckets, 256);
    cp_hgrm_free(&g);
    cp__sbuf_free(&b);

    /* one value: a 0% row, its one bucket's row, the 100% row; the deviation is 0 */
    cp__hist_init(h);
    cp__hist_record_n_ns(h, 5000, 3);
    b = (cp__sbuf)CP__SBUF_INIT;
    cp__hist_hgrm(h, 0, &b);
    assert_int_equal(cp_hgrm_parse(b.buf, &g, err, sizeof(err)), 0);
    assert_int_equal(g.n, 2);
    assert_double_eq(g.rows[0].pct, 0);
    assert_double_eq(g.rows[0].value, 5.0);
    assert_int_equal(g.rows[0].total, 3);
    assert_double_eq(g.rows[1].pct, 1.0);
    assert_double_eq(g.rows[1].value, 5.0);
    assert_double_eq(g.mean, 5.0);
    assert_double_eq(g.stddev, 0.0);
    assert_int_equal(g.total, 3);
    cp_hgrm_free(&g);
    cp__sbuf_free(&b);

    /* empty: header and footer only */
    cp__hist_init(h);
    b = (cp__sbuf)CP__SBUF_INIT;
    cp__hist_hgrm(h, 5, &b);
    assert_int_equal(cp_hgrm_parse(b.buf, &g, err, sizeof(err)), 0);
    assert_int_equal(g.n, 0);
    assert_int_equal(g.total, 0);
    cp_hgrm_free(&g);
    cp__sbuf_free(&b);
    free(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hgrm),
        cmocka_unit_test(test_each_value_within_one_percent),
        cmocka_unit_test(test_percentiles_match_exact),
        cmocka_unit_test(test_percentile_ranks),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_one_value),
        cmocka_unit_test(test_clamp_and_extremes),
        cmocka_unit_test(test_iterator),
        cmocka_unit_test(test_curve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
