/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Summary math of a compare run (report/summary.h): grouping runs into cases, median/min/max
 * per metric, ratios and noise overlap. Works on borrowed jansson values and caller-allocated
 * structs; allocates nothing, keeps no state, any thread.
 */
#include "report/summary.h"

#include "clusterpipe/clusterpipe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cp__rpt_metric_desc metrics[CP__NMETRIC] = {
    [CP__M_SECONDS] = {"time taken (s)", "time taken", NULL, "seconds", 2, 0},
    [CP__M_CPU_REDIS] = {"Redis CPU-s", "Redis CPU", "cpu_seconds", "redis", 2, 0},
    [CP__M_CPU_CLIENT] = {"client CPU-s", "client CPU", "cpu_seconds", "client", 2, 0},
    [CP__M_CPU_PROXY] = {"twemproxy CPU-s", "twemproxy CPU", "cpu_seconds", "proxy", 2, 0},
    [CP__M_CPU_TOTAL] = {"total CPU-s", "total CPU", "cpu_seconds", "total", 2, 0},
    [CP__M_OPS_PER_SEC] = {"ops/s", "throughput", NULL, "ops_per_sec", 0, 1},
    [CP__M_P50] = {"p50 (us)", "p50 latency", "latency_us", "p50", -1, 0},
    [CP__M_P99] = {"p99 (us)", "p99 latency", "latency_us", "p99", -1, 0},
    [CP__M_US_REDIS] = {"Redis us/op", "Redis CPU per op", "cpu_us_per_op", "redis", 2, 0},
    [CP__M_US_PROXY] = {"twemproxy us/op", "twemproxy CPU per op", "cpu_us_per_op", "proxy", 2, 0},
    [CP__M_US_CLIENT] = {"client us/op", "client CPU per op", "cpu_us_per_op", "client", 2, 0},
    [CP__M_US_TOTAL] = {"total us/op", "total CPU per op", "cpu_us_per_op", "total", 2, 0},
    [CP__M_OPS] = {"ops", "operations", NULL, "ops", 0, 1},
    [CP__M_CPU_REPLICAS] = {"replicas CPU-s", "replicas' CPU", "cpu_seconds", "replicas", 2, 0},
    [CP__M_CPU_MASTERS] = {"masters CPU-s", "masters' CPU", "cpu_seconds", "redis", 2, 0},
    [CP__M_US_REPLICAS] = {"replicas us/op", "replicas' CPU per op", "cpu_us_per_op", "replicas", 2,
                           0},
    [CP__M_US_MASTERS] = {"masters us/op", "masters' CPU per op", "cpu_us_per_op", "redis", 2, 0},
    [CP__M_CACHE_HIT_RATIO] = {"hit ratio", "cache hit ratio", "client_cache", "hit_ratio", 3, 1},
    [CP__M_CACHE_INVALIDATIONS] = {"invalidations", "invalidations", "client_cache",
                                   "invalidations", 0, 0},
    [CP__M_CPU_WIRE] = {"wire CPU-s", "wire CPU", "cpu_seconds", "wire", 2, 0},
    [CP__M_US_WIRE] = {"wire us/op", "wire CPU per op", "cpu_us_per_op", "wire", 2, 0},
};

const cp__rpt_metric_desc *cp__rpt_metric_info(cp__rpt_metric m) {
    return (unsigned)m < CP__NMETRIC ? &metrics[m] : NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cp__rpt_stat_of(const double *v, size_t n, cp__rpt_stat *out) {
    double tmp[1024];
    size_t k = 0;
    for (size_t i = 0; i < n && k < sizeof(tmp) / sizeof(tmp[0]); i++)
        if (!isnan(v[i]))
            tmp[k++] = v[i];
    out->n = (int)k;
    if (k == 0) {
        out->med = out->min = out->max = NAN;
        return;
    }
    qsort(tmp, k, sizeof(tmp[0]), cmp_double);
    out->min = tmp[0];
    out->max = tmp[k - 1];
    out->med = (k % 2) ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2.0;
}

int cp__rpt_overlap(const cp__rpt_stat *a, const cp__rpt_stat *b) {
    if (a->n == 0 || b->n == 0)
        return 0;
    return a->min <= b->max && b->min <= a->max;
}

double cp__rpt_ratio(const cp__rpt_stat *num, const cp__rpt_stat *den) {
    if (num->n == 0 || den->n == 0 || den->med == 0.0)
        return NAN;
    return num->med / den->med;
}

void cp__rpt_fmt_value(char *buf, size_t len, double v, int decimals) {
    if (isnan(v)) {
        snprintf(buf, len, "n/a");
        return;
    }
    if (decimals < 0) {
        /* three significant figures, never scientific notation: 1234, 123, 12.3, 1.23, 0.123 */
        double a = fabs(v);
        decimals = a >= 100 || a == 0 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    }
    snprintf(buf, len, "%.*f", decimals, v);
}

void cp__rpt_fmt_stat(char *buf, size_t len, const cp__rpt_stat *s, int decimals, int spread) {
    if (s->n == 0) {
        snprintf(buf, len, "n/a");
        return;
    }
    char med[32], lo[32], hi[32];
    cp__rpt_fmt_value(med, sizeof(med), s->med, decimals);
    if (!spread || s->n < 2) {
        snprintf(buf, len, "%s", med);
        return;
    }
    cp__rpt_fmt_value(lo, sizeof(lo), s->min, decimals);
    cp__rpt_fmt_value(hi, sizeof(hi), s->max, decimals);
    if (strcmp(lo, hi) == 0) /* no visible spread: "3.10 [3.10-3.10]" says nothing more */
        snprintf(buf, len, "%s", med);
    else
        snprintf(buf, len, "%s [%s-%s]", med, lo, hi);
}

/* A number or NaN: JSON null and absent fields mean "not measured", never 0. */
static double num_or_nan(const json_t *v) {
    return json_is_number(v) ? json_number_value(v) : NAN;
}

double cp__rpt_run_value(const json_t *run, cp__rpt_metric m) {
    const cp__rpt_metric_desc *d = cp__rpt_metric_info(m);
    if (d == NULL || !json_is_object(run))
        return NAN;
    const json_t *obj = d->obj ? json_object_get(run, d->obj) : run;
    double v = num_or_nan(json_object_get(obj, d->key));
    if (m == CP__M_CPU_MASTERS || m == CP__M_US_MASTERS) { /* redis less the replicas' part */
        double rep = num_or_nan(json_object_get(obj, "replicas"));
        return isnan(rep) ? v : v - rep > 0 ? v - rep : 0; /* never -0.00 from rounding */
    }
    if (!isnan(v) || (m != CP__M_CPU_TOTAL && m != CP__M_US_TOTAL) || !json_is_object(obj))
        return v;
    /* total absent: the sum of the components that were measured */
    static const char *const parts[] = {"redis", "proxy", "client"};
    double sum = 0;
    int any = 0;
    for (size_t i = 0; i < 3; i++) {
        double p = num_or_nan(json_object_get(obj, parts[i]));
        if (!isnan(p))
            sum += p, any = 1;
    }
    return any ? sum : NAN;
}

int cp__rpt_case_partial(const cp__rpt_case *c, cp__rpt_metric m) {
    return c->total_partial && (m == CP__M_CPU_TOTAL || m == CP__M_US_TOTAL);
}

double cp__rpt_case_ratio(const cp__rpt_case *num, const cp__rpt_case *den, cp__rpt_metric m) {
    if (cp__rpt_case_partial(num, m) || cp__rpt_case_partial(den, m))
        return NAN;
    return cp__rpt_ratio(&num->m[m], &den->m[m]);
}

int cp__rpt_run_failed(const json_t *run) {
    if (json_object_get(run, "error") != NULL && !json_is_null(json_object_get(run, "error")))
        return 1;
    double f = num_or_nan(json_object_get(run, "failed_ops"));
    double u = num_or_nan(json_object_get(run, "unknown_ops"));
    double mm = num_or_nan(json_object_get(json_object_get(run, "verify"), "mismatches"));
    return (!isnan(f) && f > 0) || (!isnan(u) && u > 0) || (!isnan(mm) && mm > 0);
}

/* setup / call type come from the run when compare wrote them; results from elsewhere only
 * have a name like "twemproxy pipelined GET", which is split at the first space. */
static void case_names(const json_t *run, const char *name, cp__rpt_case *c) {
    snprintf(c->name, sizeof(c->name), "%s", name);
    const char *setup = json_string_value(json_object_get(run, "setup"));
    const char *call = json_string_value(json_object_get(run, "call_type"));
    size_t sp = strcspn(name, " ");
    if (setup)
        snprintf(c->setup, sizeof(c->setup), "%s", setup);
    else
        snprintf(c->setup, sizeof(c->setup), "%.*s", (int)sp, name);
    if (call)
        snprintf(c->call, sizeof(c->call), "%s", call);
    else
        snprintf(c->call, sizeof(c->call), "%s", name[sp] ? name + sp + 1 : name);
}

/* Case c's commands (--command runs): the first run that has them names them (one that could
 * not run has none), every run adds its values. */
static void case_commands(const json_t *const *runs, size_t nruns, cp__rpt_case *c) {
    const json_t *first = NULL;
    for (size_t j = 0; j < nruns && json_array_size(first) == 0; j++)
        first = json_object_get(runs[j], "commands");
    c->ncmds = json_array_size(first) < CP__RPT_MAX_COMMANDS ? json_array_size(first)
                                                             : CP__RPT_MAX_COMMANDS;
    for (size_t k = 0; k < c->ncmds; k++) {
        cp__rpt_cmd *m = &c->cmd[k];
        const json_t *e = json_array_get(first, k);
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *text = json_string_value(json_object_get(e, "command"));
        snprintf(m->name, sizeof(m->name), "%s", name ? name : "?");
        snprintf(m->text, sizeof(m->text), "%s", text ? text : "?");
        m->verified = json_is_true(json_object_get(e, "verified"));
        double ops[256], p50[256], p99[256];
        for (size_t j = 0; j < nruns; j++) {
            const json_t *x = json_array_get(json_object_get(runs[j], "commands"), k);
            const json_t *lat = json_object_get(x, "latency_us");
            ops[j] = num_or_nan(json_object_get(x, "ops_per_sec"));
            p50[j] = num_or_nan(json_object_get(lat, "p50"));
            p99[j] = num_or_nan(json_object_get(lat, "p99"));
            double f = num_or_nan(json_object_get(x, "failed_ops"));
            double u = num_or_nan(json_object_get(x, "unknown_ops"));
            double mm = num_or_nan(json_object_get(json_object_get(x, "verify"), "mismatches"));
            m->failed += (isnan(f) ? 0 : f) + (isnan(u) ? 0 : u);
            m->mismatches += isnan(mm) ? 0 : mm;
        }
        cp__rpt_stat_of(ops, nruns, &m->ops_per_sec);
        cp__rpt_stat_of(p50, nruns, &m->p50);
        cp__rpt_stat_of(p99, nruns, &m->p99);
    }
}

/* Fills the stats of case c from the runs named c->name. */
static void case_stats(const json_t *runs, cp__rpt_case *c) {
    double vals[CP__NMETRIC][256];
    const json_t *members[256];
    size_t k = 0, i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        if (strcmp(json_string_value(json_object_get(run, "name")), c->name) != 0 || k >= 256)
            continue;
        if (k == 0) {
            const json_t *p = json_object_get(json_object_get(run, "workload"), "pipeline");
            c->pipeline = json_is_integer(p) ? (int)json_integer_value(p) : 0;
        }
        members[k] = run;
        for (int m = 0; m < CP__NMETRIC; m++)
            vals[m][k] = cp__rpt_run_value(run, (cp__rpt_metric)m);
        int has_proxy = !cp__rpt_setup_is_cluster(c->setup);
        if (isnan(vals[CP__M_CPU_REDIS][k]) || isnan(vals[CP__M_CPU_CLIENT][k]) ||
            (has_proxy && isnan(vals[CP__M_CPU_PROXY][k])))
            c->total_partial = 1;
        if (cp__rpt_run_failed(run)) {
            c->nfailed++;
            if (c->first_error == NULL) {
                c->first_error = json_string_value(json_object_get(run, "error"));
                if (c->first_error == NULL)
                    c->first_error = json_string_value(json_object_get(run, "first_error"));
            }
        }
        k++;
    }
    c->nruns = k;
    for (int m = 0; m < CP__NMETRIC; m++)
        cp__rpt_stat_of(vals[m], k, &c->m[m]);
    if (k > 0)
        case_commands(members, k, c);
    /* The representative run: the one whose time is nearest the median (the first run when
     * no run has a time), so the latency curve drawn belongs to a typical repeat. */
    c->median_run = k ? members[0] : NULL;
    double best = INFINITY;
    for (size_t j = 0; j < k && c->m[CP__M_SECONDS].n > 0; j++) {
        double dist = fabs(vals[CP__M_SECONDS][j] - c->m[CP__M_SECONDS].med);
        if (!isnan(dist) && dist < best)
            best = dist, c->median_run = members[j];
    }
}

int cp__rpt_summarize(const json_t *doc, cp__rpt_summary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    const json_t *runs = json_object_get(doc, "runs");
    if (!json_is_array(runs) || json_array_size(runs) == 0) {
        snprintf(err, errlen, "results hold no runs");
        return CP_EINVAL;
    }
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        const char *name = json_string_value(json_object_get(run, "name"));
        if (name == NULL) {
            snprintf(err, errlen, "runs[%zu] has no name", i);
            return CP_EINVAL;
        }
        size_t c;
        for (c = 0; c < out->ncases; c++)
            if (strcmp(out->cases[c].name, name) == 0)
                break;
        if (c < out->ncases)
            continue;
        if (out->ncases == CP__RPT_MAX_CASES) {
            snprintf(err, errlen, "more than %d different run names", CP__RPT_MAX_CASES);
            return CP_EINVAL;
        }
        case_names(run, name, &out->cases[out->ncases++]);
    }
    int most = 0;
    for (size_t c = 0; c < out->ncases; c++) {
        case_stats(runs, &out->cases[c]);
        out->nruns += out->cases[c].nruns;
        out->nfailed += out->cases[c].nfailed;
        if ((int)out->cases[c].nruns > most)
            most = (int)out->cases[c].nruns;
    }
    const json_t *rep = json_object_get(doc, "repeat");
    out->repeat =
        json_is_integer(rep) && json_integer_value(rep) > 0 ? (int)json_integer_value(rep) : most;
    return 0;
}

const cp__rpt_case *cp__rpt_find(const cp__rpt_summary *s, const char *setup, const char *call) {
    for (size_t i = 0; i < s->ncases; i++)
        if (strcmp(s->cases[i].setup, setup) == 0 && strcmp(s->cases[i].call, call) == 0)
            return &s->cases[i];
    return NULL;
}

int cp__rpt_setup_is_cluster(const char *setup) {
    return strcmp(setup, "cluster") == 0 || strcmp(setup, CP__RPT_SETUP_REPLICAS) == 0 ||
           strcmp(setup, CP__RPT_SETUP_CACHED) == 0;
}
