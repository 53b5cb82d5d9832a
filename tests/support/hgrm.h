/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A reader of HdrHistogram's ".hgrm" percentile text, as its plotters read it, for the tests of
 * what `bench --hdr-file` writes: the header line, an empty line, rows of "Value Percentile
 * TotalCount 1/(1-Percentile)" (the 100% row without the last), and the three footer lines; and
 * the check of such a file against the latency_us of the bench JSON it came with.
 *
 * Ownership: cp_hgrm_parse fills a caller-allocated cp_hgrm whose rows it allocates;
 * cp_hgrm_free releases them. Single-threaded.
 */
#ifndef CLUSTERPIPE_TEST_HGRM_H
#define CLUSTERPIPE_TEST_HGRM_H

#include <stddef.h>

#include <jansson.h>

typedef struct cp_hgrm_row {
    double value;             /* microseconds */
    double pct;               /* a fraction in [0, 1] */
    unsigned long long total; /* values up to this row */
    double inv;               /* 1/(1-Percentile); 0 on the 100% row */
} cp_hgrm_row;

typedef struct cp_hgrm {
    cp_hgrm_row *rows;
    size_t n;
    double mean, stddev, max;
    unsigned long long total;
    unsigned buckets, subbuckets;
} cp_hgrm;

/* Parses text. Returns 0, or -1 with what is wrong (and the line) in err. */
int cp_hgrm_parse(const char *text, cp_hgrm *out, char *err, size_t errlen);
void cp_hgrm_free(cp_hgrm *h);

/* The value HdrHistogram readers give percentile p (a fraction): the first row at or above p. */
double cp_hgrm_value_at(const cp_hgrm *h, double p);

/* Checks the .hgrm file at path against a bench JSON latency_us object {p50, p90, p99, p999,
 * max, mean, min} of `count` requests (a cmocka failure at the first difference): HdrHistogram's
 * layout, p50 and p90 on the rows at 50% and 90%, p99 and p99.9 between the rows around them
 * (the rows are HdrHistogram's levels, not these percentiles), the same max, mean, min and count.
 */
void cp_hgrm_check_json(const char *path, const json_t *latency_us, unsigned long long count);

#endif
