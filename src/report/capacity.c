/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The capacity plan (capacity.h): group a compare document's successful runs into measured
 * points, take the median CPU per op of each component, scale it to the asked rate and
 * utilisation, and write the markdown with its assumptions. Pure; any thread.
 */
#include "report/capacity.h"

#include "clusterpipe/clusterpipe.h"
#include "report/io.h"
#include "report/summary.h"
#include "util/dur.h"
#include "util/errmsg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cp__rpt_metric component_metric[CP__PLAN_COMPONENTS] = {CP__M_US_REDIS, CP__M_US_PROXY,
                                                                     CP__M_US_CLIENT};

static int int_of(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? (int)json_number_value(v) : 0;
}

/* The point a run measured: its names and workload; shards from the run (a shards sweep records
 * them per run), else the document's settings. */
static void point_of(const json_t *doc, const json_t *run, cp__plan_point *p) {
    memset(p, 0, sizeof(*p));
    const json_t *wl = json_object_get(run, "workload");
    const char *setup = json_string_value(json_object_get(run, "setup"));
    const char *call = json_string_value(json_object_get(run, "call_type"));
    snprintf(p->setup, sizeof(p->setup), "%s", setup ? setup : "?");
    snprintf(p->call, sizeof(p->call), "%s", call ? call : "?");
    p->pipeline = int_of(wl, "pipeline");
    p->clients = int_of(wl, "clients");
    const json_t *vs = json_object_get(wl, "value_size");
    p->value_size = json_is_number(vs) ? json_number_value(vs) : 0;
    const json_t *rtt = json_object_get(run, "rtt_ns");
    p->rtt_ns = json_is_number(rtt) ? json_number_value(rtt) : 0;
    const char *mode = json_string_value(json_object_get(run, "mode"));
    p->lanes = mode != NULL && strcmp(mode, "cluster") == 0 ? int_of(wl, "masters") : 1;
    if (p->lanes < 1)
        p->lanes = 1;
    p->shards = int_of(run, "shards");
    if (p->shards == 0)
        p->shards = int_of(json_object_get(doc, "settings"), "shards");
}

static int same_point(const cp__plan_point *a, const cp__plan_point *b) {
    return strcmp(a->setup, b->setup) == 0 && strcmp(a->call, b->call) == 0 &&
           a->pipeline == b->pipeline && a->clients == b->clients && a->shards == b->shards &&
           a->value_size == b->value_size && a->rtt_ns == b->rtt_ns;
}

/* |log(asked / measured)| summed over the dimensions asked for: a point twice too deep counts
 * as much as one half as deep, and any dimension as much as any other. */
static double distance(const cp__plan_workload *w, const cp__plan_point *p) {
    double d = 0;
    const double asked[] = {w->pipeline, w->clients, w->shards, w->value_size};
    const double have[] = {p->pipeline, p->clients, p->shards, p->value_size};
    for (size_t i = 0; i < 4; i++)
        if (asked[i] > 0)
            d += have[i] > 0 ? fabs(log(asked[i] / have[i])) : INFINITY;
    return d;
}

static int wants_workload(const cp__plan_workload *w) {
    return w->pipeline > 0 || w->clients > 0 || w->shards > 0 || w->value_size > 0;
}

/* Medians of the point's successful runs, and its cores for o. */
static void measure(const json_t *doc, const cp__plan_opts *o, cp__plan_point *p) {
    const json_t *runs = json_object_get(doc, "runs"), *run;
    size_t i, n = 0, cap = json_array_size(runs);
    double *v = calloc(cap * (CP__PLAN_COMPONENTS + 2) + 1, sizeof(double));
    if (v == NULL) {
        for (int c = 0; c < CP__PLAN_COMPONENTS; c++)
            p->us[c] = p->cores[c] = NAN;
        p->ops_per_sec = p->latency_us = NAN;
        return;
    }
    json_array_foreach(runs, i, run) {
        cp__plan_point q;
        point_of(doc, run, &q);
        if (cp__rpt_run_failed(run) || !same_point(p, &q))
            continue;
        for (int c = 0; c < CP__PLAN_COMPONENTS; c++)
            v[c * cap + n] = cp__rpt_run_value(run, component_metric[c]);
        v[CP__PLAN_COMPONENTS * cap + n] = cp__rpt_run_value(run, CP__M_OPS_PER_SEC);
        const json_t *mean = json_object_get(json_object_get(run, "latency_us"), "mean");
        v[(CP__PLAN_COMPONENTS + 1) * cap + n] =
            json_is_number(mean) ? json_number_value(mean) : NAN;
        n++;
    }
    p->nruns = (int)n;
    for (int c = 0; c <= CP__PLAN_COMPONENTS + 1; c++) {
        cp__rpt_stat st;
        cp__rpt_stat_of(v + (size_t)c * cap, n, &st);
        double med = st.n > 0 ? st.med : NAN;
        if (c == CP__PLAN_COMPONENTS + 1) {
            p->latency_us = med;
            break;
        }
        if (c == CP__PLAN_COMPONENTS) {
            p->ops_per_sec = med;
            continue;
        }
        p->us[c] = med;
        p->cores[c] = isnan(med) ? NAN : o->rate * med / 1e6 / o->target_util;
        p->whole[c] = isnan(med) ? 0 : (int)ceil(p->cores[c] - 1e-9);
    }
    free(v);
}

int cp__plan_points(const json_t *doc, const cp__plan_opts *o, cp__plan_point *out, size_t max,
                    size_t *n, char *err, size_t errlen) {
    *n = 0;
    if (!(o->rate > 0) || !(o->target_util > 0) || o->target_util > 1) {
        cp__seterr(err, errlen, "the rate must be > 0 and the target utilisation in (0, 1]");
        return CP_EINVAL;
    }
    const json_t *runs = json_object_get(doc, "runs"), *run;
    size_t i;
    json_array_foreach(runs, i, run) {
        if (cp__rpt_run_failed(run))
            continue;
        cp__plan_point p;
        point_of(doc, run, &p);
        if (o->at_zero_only && p.rtt_ns > 0)
            continue;
        int seen = 0;
        for (size_t k = 0; k < *n && !seen; k++)
            seen = same_point(&out[k], &p);
        if (!seen && *n < max)
            out[(*n)++] = p;
    }
    for (size_t k = 0; k < *n; k++)
        measure(doc, o, &out[k]);
    if (wants_workload(&o->want)) { /* keep each setup's closest point, in order of appearance */
        size_t kept = 0;
        for (size_t k = 0; k < *n; k++) {
            int best = 1;
            for (size_t j = 0; j < *n && best; j++) {
                if (j == k || strcmp(out[j].setup, out[k].setup) != 0)
                    continue;
                double dj = distance(&o->want, &out[j]), dk = distance(&o->want, &out[k]);
                best = dk < dj || (dk == dj && k < j);
            }
            if (best)
                out[kept++] = out[k];
        }
        *n = kept;
    }
    if (*n == 0) {
        cp__seterr(err, errlen,
                   o->at_zero_only ? "no successful run at RTT 0 (without a wire) to predict from"
                                   : "no successful run to plan from");
        return CP_EINVAL;
    }
    return 0;
}

/* "8.33 -> 9" or "n/a". */
static void cores_cell(char *buf, size_t len, const cp__plan_point *p, int c) {
    if (isnan(p->cores[c]))
        snprintf(buf, len, "n/a");
    else
        snprintf(buf, len, "%.2f -> %d", p->cores[c], p->whole[c]);
}

static void us_cell(char *buf, size_t len, double us) {
    if (isnan(us))
        snprintf(buf, len, "n/a");
    else
        snprintf(buf, len, "%.2f", us);
}

static void add_table(cp__sbuf *b, const cp__plan_point *pts, size_t n) {
    cp__sbuf_puts(b, "| setup | workload | measured ops/s | CPU us/op redis / proxy / client "
                     "| redis cores | proxy cores | client cores | total cores |\n"
                     "| :-- | :-- | --: | --: | --: | --: | --: | --: |\n");
    for (size_t k = 0; k < n; k++) {
        const cp__plan_point *p = &pts[k];
        char cell[CP__PLAN_COMPONENTS][48], us[CP__PLAN_COMPONENTS][24];
        double exact = 0;
        int whole = 0, complete = 1;
        for (int c = 0; c < CP__PLAN_COMPONENTS; c++) {
            cores_cell(cell[c], sizeof(cell[c]), p, c);
            us_cell(us[c], sizeof(us[c]), p->us[c]);
            if (isnan(p->cores[c]))
                complete = 0;
            else
                exact += p->cores[c], whole += p->whole[c];
        }
        /* a sweep point's call type is its parameter ("pipeline=5"), which the rest repeats */
        char call[40] = "";
        if (strchr(p->call, '=') == NULL)
            snprintf(call, sizeof(call), "%s, ", p->call);
        char rtt[48] = "";
        if (p->rtt_ns > 0) {
            char d[32];
            snprintf(rtt, sizeof(rtt), ", RTT %s",
                     cp__dur_format((uint64_t)p->rtt_ns, d, sizeof(d)));
        }
        cp__sbuf_printf(b,
                        "| %s | %spipeline %d, %d connections, %.0f B values, %d shards%s | %.0f "
                        "| %s / %s / %s | %s | %s | %s | %s%.2f -> %d |\n",
                        p->setup, call, p->pipeline, p->clients, p->value_size, p->shards, rtt,
                        p->ops_per_sec, us[0], us[1], us[2], cell[0], cell[1], cell[2],
                        complete ? "" : ">= ", exact, whole);
    }
}

static void add_assumptions(cp__sbuf *b, const json_t *doc, const cp__plan_opts *o) {
    const json_t *env = json_object_get(doc, "environment");
    const char *model = json_string_value(json_object_get(env, "cpu_model"));
    const json_t *cores = json_object_get(env, "cores");
    char ncores[16] = "?";
    if (json_is_number(cores))
        snprintf(ncores, sizeof(ncores), "%.0f", json_number_value(cores));
    cp__sbuf_printf(
        b,
        "\nEach cell: rate x CPU-us per op / 1,000,000 / %.2f, then rounded up to whole cores "
        "(components live on separate hosts, so their cores add up whole). CPU-us per op is the "
        "median over the point's successful runs; failed runs are left out.\n\n"
        "Assumptions:\n\n"
        "- target utilisation %.0f%%: every core is planned %.0f%% busy, the rest is headroom "
        "(peaks, a failover moving load, background saves).\n"
        "- the unit is one core of the measuring machine (%s, %s cores): other CPUs do more or "
        "less per core.\n"
        "- loopback hides the network: the runs had no NIC, no interrupts or softirq of real "
        "traffic, no cross-host latency. On real hosts every hop adds kernel network CPU on both "
        "ends, and twemproxy puts two hops on each request where the cluster has one.\n"
        "- CPU per op is taken as constant with the rate: it was measured at the throughput "
        "shown, with the connections and pipeline depth shown; batching changes it (a sweep "
        "shows how much).\n"
        "- a redis-server and a nutcracker each serve from one event loop, so redis cores is also "
        "the fewest shards (or masters), proxy cores the fewest nutcracker processes; replicas "
        "are not counted.\n"
        "- the client's cores are clusterpipe's engine (C, epoll); an application's client "
        "library costs what it costs.\n",
        o->target_util, o->target_util * 100, o->target_util * 100, model ? model : "CPU unknown",
        ncores);
}

char *cp__plan_md(const json_t *doc, const cp__plan_opts *o, const char *heading, char *err,
                  size_t errlen) {
    cp__plan_point *pts = calloc(CP__PLAN_MAX_POINTS, sizeof(*pts));
    size_t n = 0;
    if (pts == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return NULL;
    }
    if (cp__plan_points(doc, o, pts, CP__PLAN_MAX_POINTS, &n, err, errlen) != 0) {
        free(pts);
        return NULL;
    }
    cp__sbuf b = CP__SBUF_INIT;
    cp__sbuf_printf(&b, "%s Capacity plan: %.0f ops/s at %.0f%% CPU utilisation\n\n", heading,
                    o->rate, o->target_util * 100);
    if (wants_workload(&o->want)) {
        cp__sbuf_puts(&b, "For the workload asked (");
        int first = 1;
        if (o->want.pipeline > 0)
            cp__sbuf_printf(&b, "%spipeline %d", first ? "" : ", ", o->want.pipeline), first = 0;
        if (o->want.clients > 0)
            cp__sbuf_printf(&b, "%s%d connections", first ? "" : ", ", o->want.clients), first = 0;
        if (o->want.value_size > 0)
            cp__sbuf_printf(&b, "%s%.0f B values", first ? "" : ", ", o->want.value_size),
                first = 0;
        if (o->want.shards > 0)
            cp__sbuf_printf(&b, "%s%d shards", first ? "" : ", ", o->want.shards);
        cp__sbuf_puts(&b, "), each setup's closest measured point:\n\n");
    }
    add_table(&b, pts, n);
    add_assumptions(&b, doc, o);
    free(pts);
    return cp__sbuf_take(&b);
}
