/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Timeline analysis of a scenario case (scenario.h): phase sums around the event, the warm-up
 * median, the throughput dip and what the traffic looks like after the event. Pure functions on
 * caller memory; nothing allocates except a bounded scratch copy freed before returning. Any
 * thread.
 */
#include "scenario/scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double cp__scn_median(double *v, size_t n) {
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void phase_add(cp__scn_phase *p, const cp__bench_second *s) {
    p->seconds++;
    p->ops += s->ops;
    p->errors += s->errors;
    p->gets += s->gets;
    p->misses += s->misses;
    p->stale += s->stale;
    p->moved += s->moved;
    p->ask += s->ask;
}

/* A second is full when it spans a whole second: every entry but a short last one. */
static int full_second(const cp__bench_second *tl, size_t i, size_t n) {
    double prev = i > 0 ? tl[i - 1].t : 0;
    return i + 1 < n || tl[i].t - prev > 0.999;
}

/* The sums, medians and the minimum: the dip is measured against the warm-up median because
 * that is the throughput the traffic had before anything happened; the minimum is searched
 * from the event until a second after its effects were over, since a per-second count lags. */
void cp__scn_analyze(const cp__bench_second *tl, size_t n, double event, double back,
                     cp__scn_stats *out) {
    memset(out, 0, sizeof(*out));
    double end = n > 0 ? tl[n - 1].t : 0;
    if (back < event)
        back = event;
    out->before.from = 0;
    out->before.to = out->during.from = event;
    out->during.to = out->after.from = back;
    out->after.to = end;
    out->min_ops = NAN;
    out->min_ops_t = NAN;
    double *warm = calloc(n ? n : 1, sizeof(double));
    double *post = calloc(n ? n : 1, sizeof(double));
    size_t nwarm = 0, npost = 0;
    for (size_t i = 0; i < n; i++) {
        const cp__bench_second *s = &tl[i];
        double start = i > 0 ? tl[i - 1].t : 0;
        double mid = (start + s->t) / 2;
        phase_add(mid < event ? &out->before : mid < back ? &out->during : &out->after, s);
        if (!full_second(tl, i, n))
            continue;
        if (s->t <= event + 1e-9 && warm != NULL)
            warm[nwarm++] = (double)s->ops;
        if (s->t > event && start < back + 1 && (isnan(out->min_ops) || s->ops < out->min_ops)) {
            out->min_ops = (double)s->ops;
            out->min_ops_t = s->t;
        }
        if (start >= back + 1 && post != NULL)
            post[npost++] = (double)s->ops;
    }
    out->warmup_median_ops = cp__scn_median(warm, nwarm);
    out->after_median_ops = cp__scn_median(post, npost);
    out->low_from = out->low_to = NAN;
    for (size_t i = 0; i < n && out->warmup_median_ops > 0; i++) {
        double start = i > 0 ? tl[i - 1].t : 0;
        if (!full_second(tl, i, n) || tl[i].t <= event || start >= back + 1 ||
            (double)tl[i].ops >= out->warmup_median_ops / 2)
            continue;
        out->low_seconds++;
        if (isnan(out->low_from))
            out->low_from = start;
        out->low_to = tl[i].t;
    }
    out->dip = NAN;
    if (!isnan(out->min_ops) && out->warmup_median_ops > 0) {
        out->dip = 1 - out->min_ops / out->warmup_median_ops;
        if (out->dip < 0)
            out->dip = 0;
    }
    free(warm);
    free(post);
}

double cp__scn_min_answered_share(const cp__bench_second *tl, size_t n, double event, double rate,
                                  double *at) {
    double min = NAN;
    *at = NAN;
    for (size_t i = 0; i < n && rate > 0; i++) {
        if (!full_second(tl, i, n) || tl[i].t <= event)
            continue;
        double share = (double)tl[i].ops / rate;
        if (isnan(min) || share < min) {
            min = share;
            *at = tl[i].t;
        }
    }
    return min;
}
