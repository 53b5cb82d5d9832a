/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The .hgrm reader of the tests (hgrm.h): line by line, strict about the layout HdrHistogram's
 * outputPercentileDistribution writes. Allocates the rows; single-threaded.
 */
#include "hgrm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "util/file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        cp_hgrm_free(out);                                                                         \
        return -1;                                                                                 \
    } while (0)

int cp_hgrm_parse(const char *text, cp_hgrm *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    size_t cap = 0;
    int lineno = 0, footer = 0;
    char line[512];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        if (len >= sizeof(line))
            BAD("line %d: too long", lineno + 1);
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (p[len] == '\n');
        lineno++;
        if (lineno == 1) {
            if (strcmp(line, "       Value     Percentile TotalCount 1/(1-Percentile)") != 0)
                BAD("line 1: not the .hgrm header: '%s'", line);
            continue;
        }
        if (lineno == 2) {
            if (line[0] != '\0')
                BAD("line 2: not empty: '%s'", line);
            continue;
        }
        if (line[0] == '#') {
            footer++;
            int ok = footer == 1   ? sscanf(line, "#[Mean    = %lf, StdDeviation   = %lf]",
                                            &out->mean, &out->stddev) == 2
                     : footer == 2 ? sscanf(line, "#[Max     = %lf, Total count    = %llu]",
                                            &out->max, &out->total) == 2
                     : footer == 3 ? sscanf(line, "#[Buckets = %u, SubBuckets     = %u]",
                                            &out->buckets, &out->subbuckets) == 2
                                   : 0;
            if (!ok)
                BAD("line %d: bad footer line '%s'", lineno, line);
            continue;
        }
        if (footer > 0)
            BAD("line %d: a row after the footer", lineno);
        if (out->n == cap) {
            cap = cap ? cap * 2 : 256;
            cp_hgrm_row *n = realloc(out->rows, cap * sizeof(*n));
            if (n == NULL)
                BAD("out of memory");
            out->rows = n;
        }
        cp_hgrm_row *r = &out->rows[out->n++];
        char extra;
        int got =
            sscanf(line, "%lf %lf %llu %lf %c", &r->value, &r->pct, &r->total, &r->inv, &extra);
        if (got == 3 && r->pct == 1.0)
            r->inv = 0;
        else if (got != 4)
            BAD("line %d: not a row of four numbers (three at 100%%): '%s'", lineno, line);
    }
    if (footer != 3)
        BAD("%d footer lines, want 3", footer);
    if (out->n > 0 && out->rows[out->n - 1].pct != 1.0)
        BAD("the last row is not at 100%%");
    return 0;
}

void cp_hgrm_free(cp_hgrm *h) {
    free(h->rows);
    h->rows = NULL;
    h->n = 0;
}

double cp_hgrm_value_at(const cp_hgrm *h, double p) {
    for (size_t i = 0; i < h->n; i++)
        if (h->rows[i].pct >= p - 1e-12)
            return h->rows[i].value;
    return h->n ? h->rows[h->n - 1].value : 0;
}

static double lat_num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        fail_msg("latency_us.%s is not a number", k);
    return json_number_value(v);
}

void cp_hgrm_check_json(const char *path, const json_t *lat, unsigned long long count) {
    size_t len = 0;
    char *text = cp__read_file(path, 1u << 24, &len);
    if (text == NULL)
        fail_msg("%s: cannot be read", path);
    cp_hgrm h;
    char err[512];
    if (cp_hgrm_parse(text, &h, err, sizeof(err)) != 0)
        fail_msg("%s: %s", path, err);
    if (h.total != count)
        fail_msg("%s: %llu values, the JSON has %llu", path, h.total, count);
    assert_double_lt(fabs(h.max - lat_num(lat, "max")), 0.0005);
    /* The file prints the mean to three decimals and the JSON in full: a mean whose fourth
     * decimal is 5 (sum/count in ns ending in .5) rounds by up to half a unit either way. */
    assert_double_le(fabs(h.mean - lat_num(lat, "mean")), 0.0005 + 1e-9);
    assert_int_equal(h.buckets, 29);
    assert_int_equal(h.subbuckets, 256);
    assert_double_lt(fabs(cp_hgrm_value_at(&h, 0.5) - lat_num(lat, "p50")), 0.0005);
    assert_double_lt(fabs(cp_hgrm_value_at(&h, 0.9) - lat_num(lat, "p90")), 0.0005);
    assert_double_lt(fabs(h.rows[0].value - lat_num(lat, "min")), 0.0005);
    static const struct {
        double p;
        const char *k;
    } around[] = {{0.99, "p99"}, {0.999, "p999"}};
    for (size_t a = 0; a < 2; a++) {
        size_t i = 0;
        while (i < h.n && h.rows[i].pct < around[a].p)
            i++;
        assert_int_gt(i, 0);
        assert_int_lt(i, h.n);
        double v = lat_num(lat, around[a].k);
        if (!(h.rows[i - 1].value <= v + 0.0005 && v <= h.rows[i].value + 0.0005))
            fail_msg("%s: %s %.3f is not between the rows at %.6f (%.3f) and %.6f (%.3f)", path,
                     around[a].k, v, h.rows[i - 1].pct, h.rows[i - 1].value, h.rows[i].pct,
                     h.rows[i].value);
    }
    cp_hgrm_free(&h);
    free(text);
}
