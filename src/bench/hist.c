/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Log-linear latency histogram (see hist.h for the error bound and units). This file owns the
 * bucket index math and the readers; it allocates nothing and frees nothing: the caller owns
 * every cp__hist. A histogram is written by one thread at a time; merge after join.
 *
 * Bucket layout: a value v (ns) keeps its top 8 significant bits. With shift = max(0, msb - 7)
 * and sub = v >> shift (in [128, 256) once v >= 256, or v itself below), the bucket index is
 * shift * 128 + sub: one formula for both the exact low range and the log-linear rest, and
 * contiguous indices (255 -> 255, 256 -> 256).
 */
#include "bench/hist.h"

#include "util/sbuf.h"

#include <math.h>
#include <string.h>

/* Inverse of cp__hist_bucket_of: smallest value of bucket i and its width (both ns). */
static void bucket_range(size_t i, uint64_t *lower, uint64_t *width) {
    if (i < 2 * CP__HIST_SUB_COUNT) {
        *lower = i;
        *width = 1;
        return;
    }
    unsigned shift = (unsigned)(i >> CP__HIST_SUB_BITS) - 1u;
    uint64_t sub = i - ((size_t)shift << CP__HIST_SUB_BITS);
    *lower = sub << shift;
    *width = 1ull << shift;
}

/* The value reported for bucket i: its middle, so the error is at most half a bucket, kept
 * inside [min, max] so that the extremes never look worse (or better) than what was seen. */
static double bucket_value_us(const cp__hist *h, size_t i) {
    uint64_t lower, width;
    bucket_range(i, &lower, &width);
    uint64_t v = lower + width / 2;
    if (v < h->min_ns)
        v = h->min_ns;
    if (v > h->max_ns)
        v = h->max_ns;
    return (double)v / 1000.0;
}

void cp__hist_init(cp__hist *h) {
    memset(h, 0, sizeof(*h));
    h->min_ns = UINT64_MAX;
}

void cp__hist_reset(cp__hist *h) {
    cp__hist_init(h);
}

/* Bucket-wise sum: both histograms share one layout, so merging loses nothing. */
void cp__hist_merge(cp__hist *dst, const cp__hist *src) {
    if (src->count == 0)
        return;
    for (size_t i = 0; i < CP__HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->clamped += src->clamped;
    dst->sum_ns += src->sum_ns;
    if (src->min_ns < dst->min_ns)
        dst->min_ns = src->min_ns;
    if (src->max_ns > dst->max_ns)
        dst->max_ns = src->max_ns;
}

uint64_t cp__hist_count(const cp__hist *h) {
    return h->count;
}

uint64_t cp__hist_clamped(const cp__hist *h) {
    return h->clamped;
}

double cp__hist_min_us(const cp__hist *h) {
    return h->count ? (double)h->min_ns / 1000.0 : 0.0;
}

double cp__hist_max_us(const cp__hist *h) {
    return h->count ? (double)h->max_ns / 1000.0 : 0.0;
}

double cp__hist_mean_us(const cp__hist *h) {
    return h->count ? (double)h->sum_ns / (double)h->count / 1000.0 : 0.0;
}

/* Rank (1-based) of the p-th percentile: ceil(p/100 * count), at least 1. The tiny relative
 * slack keeps 99.9% of 1000 at rank 999 despite 99.9 not being exact in binary. */
static uint64_t rank_of(const cp__hist *h, double p) {
    if (!(p > 0.0)) /* also NaN */
        return 1;
    if (p >= 100.0)
        return h->count;
    double r = p / 100.0 * (double)h->count;
    r = ceil(r - r * 1e-12);
    if (r < 1.0)
        return 1;
    if (r >= (double)h->count)
        return h->count;
    return (uint64_t)r;
}

/* Value of the given rank: exact at both ends (min and max are tracked), the middle of the
 * bucket holding that rank elsewhere. */
static double value_at_rank(const cp__hist *h, uint64_t rank) {
    if (rank <= 1)
        return (double)h->min_ns / 1000.0;
    if (rank >= h->count)
        return (double)h->max_ns / 1000.0;
    uint64_t cum = 0;
    for (size_t i = cp__hist_bucket_of(h->min_ns); i < CP__HIST_BUCKETS; i++) {
        cum += h->buckets[i];
        if (cum >= rank)
            return bucket_value_us(h, i);
    }
    return (double)h->max_ns / 1000.0; /* unreachable when counts are consistent */
}

double cp__hist_percentile_us(const cp__hist *h, double p) {
    if (h->count == 0)
        return 0.0;
    return value_at_rank(h, rank_of(h, p));
}

void cp__hist_iter_init(cp__hist_iter *it, const cp__hist *h) {
    it->h = h;
    it->idx = h->count ? cp__hist_bucket_of(h->min_ns) : CP__HIST_BUCKETS;
    it->cum = 0;
}

bool cp__hist_iter_next(cp__hist_iter *it, cp__hist_point *pt) {
    const cp__hist *h = it->h;
    while (it->idx < CP__HIST_BUCKETS && h->buckets[it->idx] == 0)
        it->idx++;
    if (it->idx >= CP__HIST_BUCKETS)
        return false;
    size_t i = it->idx++;
    it->cum += h->buckets[i];
    pt->count = it->cum;
    pt->percentile = 100.0 * (double)it->cum / (double)h->count;
    /* The last bucket holds the max: report it exactly. */
    pt->value_us = it->cum == h->count ? (double)h->max_ns / 1000.0 : bucket_value_us(h, i);
    return true;
}

/* Points evenly spaced in "number of nines", the usual latency-by-percentile chart, so the tail
 * gets as many points as the body. Stops before the rank reaches count, then adds the max. */
size_t cp__hist_curve(const cp__hist *h, unsigned per_decade, cp__hist_point *out, size_t cap) {
    if (h->count == 0 || cap == 0)
        return 0;
    if (per_decade == 0)
        per_decade = 1;
    size_t n = 0;
    /* 20 decades is beyond the precision of a double anyway: a hard bound on the loop. */
    for (unsigned i = 0; i < per_decade * 20u && n + 1 < cap; i++) {
        double p = 100.0 * (1.0 - pow(10.0, -(double)i / (double)per_decade));
        uint64_t rank = rank_of(h, p);
        if (rank >= h->count)
            break;
        out[n].percentile = p;
        out[n].value_us = value_at_rank(h, rank);
        out[n].count = rank;
        n++;
    }
    out[n].percentile = 100.0;
    out[n].value_us = (double)h->max_ns / 1000.0;
    out[n].count = h->count;
    return n + 1;
}

/* The standard deviation of the recorded values, each taken at its bucket's reported value (as
 * HdrHistogram computes it from its buckets' values). */
static double stddev_us(const cp__hist *h) {
    if (h->count == 0)
        return 0.0;
    double mean = cp__hist_mean_us(h), sq = 0.0;
    for (size_t i = cp__hist_bucket_of(h->min_ns); i < CP__HIST_BUCKETS; i++) {
        if (h->buckets[i] == 0)
            continue;
        double d = bucket_value_us(h, i) - mean;
        sq += d * d * (double)h->buckets[i];
    }
    return sqrt(sq / (double)h->count);
}

/* HdrHistogram's percentile iterator: levels start at 0, and each step is 100 / (ticks *
 * 2^(floor(log2(100 / (100 - level))) + 1)), so every half of the distance left to 100% gets
 * `ticks` rows. A bucket yields a row for every level its cumulative count reaches; the walk ends
 * after the first row of the bucket that holds the max, and a last row at 100%. */
void cp__hist_hgrm(const cp__hist *h, unsigned ticks_per_half, cp__sbuf *out) {
    if (ticks_per_half == 0)
        ticks_per_half = 5;
    cp__sbuf_printf(out, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
                    "1/(1-Percentile)");
    double level = 0.0;
    uint64_t cum = 0;
    for (size_t i = h->count ? cp__hist_bucket_of(h->min_ns) : CP__HIST_BUCKETS;
         i < CP__HIST_BUCKETS && cum < h->count; i++) {
        if (h->buckets[i] == 0)
            continue;
        cum += h->buckets[i];
        double reached = 100.0 * (double)cum / (double)h->count;
        while (level <= reached) {
            cp__sbuf_printf(out, "%12.3f %2.12f %10llu %14.2f\n",
                            value_at_rank(h, rank_of(h, level)), level / 100.0,
                            (unsigned long long)cum, 1.0 / (1.0 - level / 100.0));
            double half = pow(2.0, floor(log(100.0 / (100.0 - level)) / log(2.0)) + 1.0);
            level += 100.0 / ((double)ticks_per_half * half);
            if (cum == h->count)
                break; /* the max's bucket: one row, then the 100% row */
        }
    }
    if (h->count > 0)
        cp__sbuf_printf(out, "%12.3f %2.12f %10llu\n", cp__hist_max_us(h), 1.0,
                        (unsigned long long)h->count);
    cp__sbuf_printf(out, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", cp__hist_mean_us(h),
                    stddev_us(h));
    cp__sbuf_printf(out, "#[Max     = %12.3f, Total count    = %12llu]\n", cp__hist_max_us(h),
                    (unsigned long long)h->count);
    cp__sbuf_printf(out, "#[Buckets = %12u, SubBuckets     = %12u]\n",
                    (unsigned)(CP__HIST_BUCKETS / CP__HIST_SUB_COUNT - 1), 2u * CP__HIST_SUB_COUNT);
}
