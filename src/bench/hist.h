/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Log-linear latency histogram for the bench engine (private to src/bench/).
 *
 * Values are recorded in nanoseconds (what CLOCK_MONOTONIC differences give, so the hot path
 * does no division) and read back in microseconds as doubles. Every power-of-two range of
 * nanoseconds is split into 128 linear sub-buckets, values below 256 ns are exact; a value read
 * back is the middle of its bucket, clamped to the recorded [min, max], so its relative error is
 * at most 1/256 (0.4%) over the whole range 1 us .. 60 s (design rule: <= 1%). Values above
 * 60 s are recorded as 60 s and counted in `clamped`.
 *
 * Memory: the struct is fixed size (about 30 KiB) and caller-allocated; nothing in this module
 * allocates. Threads: one histogram per worker thread, written only by that thread; after the
 * workers are joined, the main thread merges them with cp__hist_merge(). No locking anywhere.
 */
#ifndef CLUSTERPIPE_HIST_H
#define CLUSTERPIPE_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sub-buckets per power of two: 2^7 = 128, so each bucket is at most 1/128 of its value wide. */
#define CP__HIST_SUB_BITS 7
#define CP__HIST_SUB_COUNT (1u << CP__HIST_SUB_BITS)
/* Highest recordable value: 60 s. Larger values are clamped to it. */
#define CP__HIST_MAX_NS 60000000000ull
/* Values below 2 * CP__HIST_SUB_COUNT ns are exact; above, 36 - 8 = 28 octaves of 128. */
#define CP__HIST_BUCKETS (2 * CP__HIST_SUB_COUNT + 28 * CP__HIST_SUB_COUNT)

typedef struct cp__hist {
    uint64_t count;   /* values recorded, including clamped ones */
    uint64_t clamped; /* values above CP__HIST_MAX_NS, recorded as CP__HIST_MAX_NS */
    uint64_t min_ns;  /* UINT64_MAX when empty */
    uint64_t max_ns;  /* 0 when empty */
    uint64_t sum_ns;  /* for the mean; overflows only after ~3e8 values of 60 s */
    uint64_t buckets[CP__HIST_BUCKETS];
} cp__hist;

/* One point of the latency-by-percentile curve. */
typedef struct cp__hist_point {
    double percentile; /* in [0, 100]: share of values <= value_us */
    double value_us;
    uint64_t count; /* values at or below value_us (cumulative) */
} cp__hist_point;

/* Walks the non-empty buckets in increasing value order (the exact CDF, at most
 * CP__HIST_BUCKETS points). Plain data: copy freely; valid while the histogram is unchanged. */
typedef struct cp__hist_iter {
    const cp__hist *h;
    size_t idx;
    uint64_t cum;
} cp__hist_iter;

/* Empties h (also the initializer: a zeroed struct is NOT a valid empty histogram, since min
 * starts at UINT64_MAX). Never fails. */
void cp__hist_init(cp__hist *h);
void cp__hist_reset(cp__hist *h);

/* Bucket index of a value already clamped to CP__HIST_MAX_NS (the layout is described in
 * hist.c). In the header so that recording inlines into the caller. */
static inline size_t cp__hist_bucket_of(uint64_t v) {
    /* v | 1 keeps clzll defined for v = 0. */
    unsigned msb = 63u - (unsigned)__builtin_clzll(v | 1u);
    unsigned shift = msb > CP__HIST_SUB_BITS ? msb - CP__HIST_SUB_BITS : 0;
    return ((size_t)shift << CP__HIST_SUB_BITS) + (size_t)(v >> shift);
}

/* Records n occurrences of one value in nanoseconds (n = 0 records nothing). O(1), no
 * allocation. Values > 60 s are clamped and counted in h->clamped. Inline: the bench engine
 * records every run of equal latencies in a batch, and a call costs as much as the recording. */
static inline void cp__hist_record_n_ns(cp__hist *h, uint64_t ns, uint64_t n) {
    if (n == 0)
        return;
    if (ns > CP__HIST_MAX_NS) {
        ns = CP__HIST_MAX_NS;
        h->clamped += n;
    }
    h->buckets[cp__hist_bucket_of(ns)] += n;
    h->count += n;
    h->sum_ns += ns * n;
    h->min_ns = ns < h->min_ns ? ns : h->min_ns;
    h->max_ns = ns > h->max_ns ? ns : h->max_ns;
}

/* Records one value in nanoseconds. */
static inline void cp__hist_record_ns(cp__hist *h, uint64_t ns) {
    cp__hist_record_n_ns(h, ns, 1);
}

/* Adds every value of src to dst (src unchanged). Used after joining the worker threads. */
void cp__hist_merge(cp__hist *dst, const cp__hist *src);

/* Readers. On an empty histogram min/max/mean/percentile all return 0. */
uint64_t cp__hist_count(const cp__hist *h);
uint64_t cp__hist_clamped(const cp__hist *h);
double cp__hist_min_us(const cp__hist *h);
double cp__hist_max_us(const cp__hist *h);
double cp__hist_mean_us(const cp__hist *h);

/* The value v (us) such that at least p% of the values are <= v: the value of rank
 * ceil(p/100 * count) (rank 1 for p = 0, so p = 0 is the min and p = 100 the max).
 * p outside [0, 100] is clamped. Relative error <= 1/256 against the exact order statistic. */
double cp__hist_percentile_us(const cp__hist *h, double p);

/* Exact-CDF iteration: one point per non-empty bucket, increasing value, last point has
 * percentile 100 and value max. Returns false when done (pt untouched). */
void cp__hist_iter_init(cp__hist_iter *it, const cp__hist *h);
bool cp__hist_iter_next(cp__hist_iter *it, cp__hist_point *pt);

/* Chart curve: values at percentiles 100 * (1 - 10^(-i / per_decade)) for i = 0, 1, ... (0, then
 * per_decade points per "nine": 90, 99, 99.9, ...) while the rank stays below count, then one
 * final point at 100 (the max). Writes at most cap points to out and returns how many it wrote.
 * per_decade 0 is taken as 1. Empty histogram: returns 0. */
size_t cp__hist_curve(const cp__hist *h, unsigned per_decade, cp__hist_point *out, size_t cap);

/* Appends h as HdrHistogram's percentile distribution text (a ".hgrm" file, as its
 * outputPercentileDistribution writes with a scaling ratio of 1000: values in microseconds):
 * the header "Value Percentile TotalCount 1/(1-Percentile)", a row per percentile level of
 * HdrHistogram's percentile iterator with ticks_per_half (0: 5, its usual) ticks per half
 * distance (0%, 10%, ... 50%, 55%, ... halving the step as each half of the remaining distance
 * to 100% is passed), a last row at 100% (the max, without 1/(1-Percentile)), and the footer
 * "#[Mean = ..., StdDeviation = ...]", "#[Max = ..., Total count = ...]", "#[Buckets = ...,
 * SubBuckets = ...]" (this histogram's layout in HdrHistogram's terms: 29 buckets of 256
 * sub-buckets). A row's value is cp__hist_percentile_us at its percentile, so a row at 50% holds
 * the p50 the JSON reports; TotalCount is the values recorded up to that row's bucket. An empty
 * histogram gives the header and the footer only. An out-of-memory sbuf keeps its oom flag. */
struct cp__sbuf;
void cp__hist_hgrm(const cp__hist *h, unsigned ticks_per_half, struct cp__sbuf *out);

#endif /* CLUSTERPIPE_HIST_H */
