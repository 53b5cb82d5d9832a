/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RTT model (rttmodel.h): the prediction, each measured point matched with its run at RTT 0,
 * and the two tables, plan --rtt's and report.md's. Pure; any thread.
 */
#include "report/rttmodel.h"

#include "report/network.h"
#include "report/summary.h"
#include "util/dur.h"
#include "util/errmsg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp__rtt_predict(const cp__rtt_base *b, double hops, double rtt_ns, cp__rtt_prediction *out) {
    if (!(b->ops_per_sec > 0) || !(b->in_flight > 0) || !(hops >= 0) || !(rtt_ns >= 0))
        return -1;
    out->service_us = b->in_flight / b->ops_per_sec * 1e6;
    out->latency_us = out->service_us + hops * rtt_ns / 1000;
    out->cpu_bound =
        b->cpu_us_per_op > 0 && b->cores > 0 ? b->cores * 1e6 / b->cpu_us_per_op : INFINITY;
    out->ops_per_sec = fmin(b->in_flight / out->latency_us * 1e6, out->cpu_bound);
    return 0;
}

void cp__rtt_base_of(const json_t *doc, const cp__plan_point *p, cp__rtt_base *out) {
    out->ops_per_sec = p->ops_per_sec;
    out->in_flight = (double)p->clients * p->lanes * p->pipeline;
    out->cpu_us_per_op = 0;
    for (int c = 0; c < CP__PLAN_COMPONENTS; c++)
        out->cpu_us_per_op += p->us[c]; /* NaN when one was not measured: no CPU bound */
    const json_t *cores = json_object_get(json_object_get(doc, "environment"), "cores");
    out->cores = json_is_number(cores) ? json_number_value(cores) : 0;
}

/* The same workload of the same setup: a sweep names its points by their parameter
 * ("rtt=1ms"), so two such call types match whatever their values. */
static int same_workload(const cp__plan_point *a, const cp__plan_point *b) {
    int calls = strcmp(a->call, b->call) == 0 ||
                (strchr(a->call, '=') != NULL && strchr(b->call, '=') != NULL);
    return calls && strcmp(a->setup, b->setup) == 0 && a->pipeline == b->pipeline &&
           a->clients == b->clients && a->shards == b->shards && a->value_size == b->value_size;
}

/* The point of pts like p measured at rtt_ns, NULL when none. */
static const cp__plan_point *find_at(const cp__plan_point *pts, size_t n, const cp__plan_point *p,
                                     double rtt_ns) {
    for (size_t k = 0; k < n; k++)
        if (pts[k].rtt_ns == rtt_ns && same_workload(&pts[k], p))
            return &pts[k];
    return NULL;
}

/* p's prediction at rtt_ns from base (a point at RTT 0) and the hops of p's setup in doc; *hops
 * gets those hops per batch. -1 when either cannot be had. */
static int predict_point(const json_t *doc, const cp__plan_point *base, double rtt_ns, double *hops,
                         int *from_links, cp__rtt_prediction *out) {
    cp__rpt_hops h;
    if (cp__rpt_hops_of(doc, base->setup, &h) != 0)
        return -1;
    *hops = cp__rpt_hops_per_batch(&h, base->pipeline);
    *from_links = h.from_links;
    cp__rtt_base b;
    cp__rtt_base_of(doc, base, &b);
    return cp__rtt_predict(&b, *hops, rtt_ns, out);
}

/* "GET, pipeline 10, 4 connections" (a sweep point's call type is its parameter: left out). */
static void workload_of(const cp__plan_point *p, char *buf, size_t len) {
    char call[40] = "";
    if (strchr(p->call, '=') == NULL)
        snprintf(call, sizeof(call), "%s, ", p->call);
    snprintf(buf, len, "%spipeline %d, %d connections", call, p->pipeline, p->clients);
}

static void fmt(char *buf, size_t len, double v, int decimals) {
    cp__rpt_fmt_value(buf, len, v, decimals);
}

/* Every successful point of doc (at_zero_only as asked), NULL with err when none. */
static cp__plan_point *points_of(const json_t *doc, const cp__plan_opts *o, size_t *n, char *err,
                                 size_t errlen) {
    cp__plan_point *pts = calloc(CP__PLAN_MAX_POINTS, sizeof(*pts));
    if (pts == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (cp__plan_points(doc, o, pts, CP__PLAN_MAX_POINTS, n, err, errlen) != 0) {
        free(pts);
        return NULL;
    }
    return pts;
}

static const char *const MODEL_TEXT =
    "The model: a closed loop keeps its requests in flight (connections x lanes x pipeline "
    "depth; a cluster client has a lane per master). By Little's law each took in flight / "
    "throughput at RTT 0, the service time L0. Through a network each batch also waits hops x "
    "RTT, so latency = L0 + hops x RTT and throughput = min(in flight / latency, cores x "
    "1,000,000 / CPU-us per op). Hops per batch: the client's link when it crosses, plus the "
    "proxy's link to a server when any key of the batch crosses (a proxy answers a connection "
    "in order, so a batch waits for its slowest key): 1 for the cluster, 1 + 1 - (1/N)^depth "
    "for twemproxy with a proxy on each of N redis hosts (1.75 at depth 1 with 4), 1 with the "
    "proxy beside the client, 2 with proxies on hosts of their own. L0 keeps the waiting the "
    "RTT-0 run did behind other requests on a busy CPU, which a network partly hides: where "
    "that run was CPU-bound, the prediction is a floor.\n\n";

char *cp__rtt_plan_md(const json_t *doc, const cp__plan_opts *o, double rtt_ns, const char *heading,
                      char *err, size_t errlen) {
    cp__plan_opts all = {o->rate, o->target_util, {0, 0, 0, 0}, 0};
    size_t nb = 0, na = 0;
    cp__plan_point *bases = points_of(doc, o, &nb, err, errlen);
    if (bases == NULL)
        return NULL;
    cp__plan_point *pts = points_of(doc, &all, &na, err, errlen);
    if (pts == NULL) {
        free(bases);
        return NULL;
    }
    char d[32];
    cp__dur_format((uint64_t)rtt_ns, d, sizeof(d));
    cp__sbuf b = CP__SBUF_INIT;
    cp__sbuf_printf(&b, "%s At RTT %s: predicted from RTT 0\n\n", heading, d);
    cp__sbuf_puts(&b, MODEL_TEXT);
    cp__sbuf_printf(&b,
                    "| setup | workload | hops per batch | ops/s at RTT 0 | L0 (us) | latency at "
                    "%s (us) | ops/s at %s | measured at %s: ops/s | in flight for %.0f ops/s "
                    "| connections | total cores |\n"
                    "| :-- | :-- | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n",
                    d, d, d, o->rate);
    int rule = 0;
    for (size_t k = 0; k < nb; k++) {
        const cp__plan_point *p = &bases[k];
        double hops = NAN;
        int from_links = 0;
        cp__rtt_prediction pr;
        char w[96], h[16], x0[24], l0[24], lat[24], x[24], meas[24], fl[24], conns[24];
        workload_of(p, w, sizeof(w));
        if (predict_point(doc, p, rtt_ns, &hops, &from_links, &pr) != 0)
            pr.service_us = pr.latency_us = pr.ops_per_sec = NAN;
        rule |= !from_links;
        const cp__plan_point *m = find_at(pts, na, p, rtt_ns);
        double in_flight = ceil(o->rate * pr.latency_us / 1e6 - 1e-9);
        double per_conn = (double)p->lanes * p->pipeline;
        fmt(h, sizeof(h), hops, 2);
        fmt(x0, sizeof(x0), p->ops_per_sec, 0);
        fmt(l0, sizeof(l0), pr.service_us, 0);
        fmt(lat, sizeof(lat), pr.latency_us, 0);
        fmt(x, sizeof(x), pr.ops_per_sec, 0);
        fmt(meas, sizeof(meas), m != NULL && rtt_ns > 0 ? m->ops_per_sec : NAN, 0);
        fmt(fl, sizeof(fl), in_flight, 0);
        fmt(conns, sizeof(conns), ceil(in_flight / per_conn), 0);
        int whole = 0, complete = 1;
        for (int c = 0; c < CP__PLAN_COMPONENTS; c++) {
            complete &= !isnan(p->cores[c]);
            whole += p->whole[c];
        }
        cp__sbuf_printf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%d |\n",
                        p->setup, w, h, x0, l0, lat, x, meas, fl, conns,
                        complete ? "" : ">= ", whole);
    }
    cp__sbuf_printf(&b,
                    "\nIn flight for %.0f ops/s: the rate x the latency at %s; connections: that "
                    "over a connection's lanes x depth, rounded up (the rate also needs its "
                    "cores, the capacity plan's, whatever the connections). Measured at %s: a "
                    "run of the same workload through the wire in these results, else n/a.%s\n",
                    o->rate, d, d,
                    rule ? " Hops from the placement (these runs had no wire): every redis-server "
                           "a host of its own, the client one more."
                         : "");
    free(bases);
    free(pts);
    return cp__sbuf_take(&b);
}

void cp__rtt_report_md(cp__sbuf *b, const json_t *doc) {
    cp__plan_opts all = {1, 1, {0, 0, 0, 0}, 0};
    char err[256];
    size_t n = 0;
    cp__plan_point *pts = points_of(doc, &all, &n, err, sizeof(err));
    if (pts == NULL)
        return;
    int any = 0, missing = 0;
    for (size_t k = 0; k < n; k++)
        any |= pts[k].rtt_ns > 0;
    if (!any) {
        free(pts);
        return;
    }
    cp__sbuf_puts(b, "### Predicted beside measured\n\n");
    cp__sbuf_puts(b, MODEL_TEXT);
    cp__sbuf_puts(b, "| setup | workload | RTT | hops per batch | latency (us) predicted / "
                     "measured | ops/s predicted / measured | measured / predicted |\n"
                     "| :-- | :-- | --: | --: | --: | --: | --: |\n");
    for (size_t k = 0; k < n; k++) {
        const cp__plan_point *p = &pts[k];
        if (p->rtt_ns <= 0)
            continue;
        const cp__plan_point *base = find_at(pts, n, p, 0);
        double hops = NAN;
        int from_links = 0;
        cp__rtt_prediction pr = {NAN, NAN, NAN, NAN};
        if (base != NULL && predict_point(doc, base, p->rtt_ns, &hops, &from_links, &pr) != 0)
            pr.latency_us = pr.ops_per_sec = NAN;
        missing |= base == NULL;
        char w[96], d[32], h[16], lp[24], lm[24], xp[24], xm[24], r[24];
        workload_of(p, w, sizeof(w));
        cp__dur_format((uint64_t)p->rtt_ns, d, sizeof(d));
        fmt(h, sizeof(h), hops, 2);
        fmt(lp, sizeof(lp), pr.latency_us, 0);
        fmt(lm, sizeof(lm), p->latency_us, 0);
        fmt(xp, sizeof(xp), pr.ops_per_sec, 0);
        fmt(xm, sizeof(xm), p->ops_per_sec, 0);
        fmt(r, sizeof(r), p->ops_per_sec / pr.ops_per_sec, 2);
        if (base == NULL)
            cp__sbuf_printf(b,
                            "| %s | %s | %s | - | no run at RTT 0 / %s | no run at RTT 0 / %s "
                            "| - |\n",
                            p->setup, w, d, lm, xm);
        else
            cp__sbuf_printf(b, "| %s | %s | %s | %s | %s / %s | %s / %s | %s |\n", p->setup, w, d,
                            h, lp, lm, xp, xm, r);
    }
    if (missing)
        cp__sbuf_puts(b, "\nA point without a run of the same workload at RTT 0 in these results "
                         "has no prediction: `compare --sweep rtt=0,D` measures both, and "
                         "`clusterpipe plan DIR --rtt D` predicts from another run's RTT 0.\n");
    cp__sbuf_puts(b, "\n");
    free(pts);
}
