/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests of the report layer (src/report/): median/spread/overlap/ratio math, grouping runs
 * into cases, the table's n/a handling (never 0 for an unmeasured proxy), ratios next to the
 * published ones, the noise sentence, results.json loading, and a full render into a scratch
 * directory (table.md, report.md, PNG and SVG charts from gnuplot). No server is started. Each
 * test builds its own documents; single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "testutil.h"

#include "clusterpipe/clusterpipe.h"
#include "report/charts.h"
#include "report/io.h"
#include "report/render.h"
#include "report/summary.h"
#include "report/table.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- building documents --------------------------------------------------------------------- */

static json_t *num_or_null(double v) {
    return isnan(v) ? json_null() : json_real(v);
}

/* One bench object as compare writes it; NaN fields become JSON null. */
static json_t *make_run(const char *setup, const char *call, int pipeline, double seconds,
                        double redis, double proxy, double client, double p99, int failed) {
    char name[64];
    snprintf(name, sizeof(name), "%s %s", setup, call);
    double ops = 10000;
    json_t *r = json_object();
    json_object_set_new(r, "name", json_string(name));
    json_object_set_new(r, "setup", json_string(setup));
    json_object_set_new(r, "call_type", json_string(call));
    json_object_set_new(r, "schema", json_string("clusterpipe.bench/1"));
    json_object_set_new(
        r, "workload",
        json_pack("{s:i,s:i,s:i}", "threads", 2, "clients", 4, "pipeline", pipeline));
    json_object_set_new(r, "ops", json_integer((json_int_t)ops));
    json_object_set_new(r, "seconds", json_real(seconds));
    json_object_set_new(r, "ops_per_sec", json_real(ops / seconds));
    json_object_set_new(r, "latency_us", json_pack("{s:f,s:f}", "p50", p99 / 3, "p99", p99));
    json_t *cpu = json_object(), *per = json_object();
    json_object_set_new(cpu, "redis", num_or_null(redis));
    json_object_set_new(cpu, "proxy", num_or_null(proxy));
    json_object_set_new(cpu, "client", num_or_null(client));
    json_object_set_new(per, "redis", num_or_null(redis / ops * 1e6));
    json_object_set_new(per, "proxy", num_or_null(proxy / ops * 1e6));
    json_object_set_new(per, "client", num_or_null(client / ops * 1e6));
    json_object_set_new(r, "cpu_seconds", cpu);
    json_object_set_new(r, "cpu_us_per_op", per);
    json_object_set_new(r, "failed_ops", json_integer(failed));
    json_object_set_new(r, "unknown_ops", json_integer(0));
    json_object_set_new(r, "verify", json_pack("{s:i,s:i}", "checked", 10000, "mismatches", 0));
    json_t *curve = json_array();
    static const double ps[] = {0, 50, 90, 99, 99.9, 100};
    for (size_t i = 0; i < 6; i++)
        json_array_append_new(curve, json_pack("{s:f,s:f}", "percentile", ps[i], "value_us",
                                               p99 / 4 * (1 + (double)i)));
    json_object_set_new(r, "latency_curve", curve);
    return r;
}

static json_t *make_doc(int repeat) {
    json_t *d = json_object();
    json_object_set_new(d, "schema", json_string(CP__COMPARE_SCHEMA));
    json_object_set_new(d, "runs", json_array());
    json_object_set_new(d, "repeat", json_integer(repeat));
    json_object_set_new(d, "command", json_string("clusterpipe compare --quick"));
    return d;
}

static void add(json_t *d, json_t *run) {
    json_array_append_new(json_object_get(d, "runs"), run);
}

/* The four cases once each; cluster time and CPU are half of twemproxy's. */
static json_t *four_cases(double cluster_proxy) {
    json_t *d = make_doc(1);
    add(d, make_run("twemproxy", "GET", 1, 10, 4, 3, 2, 400, 0));
    add(d, make_run("twemproxy", "pipelined GET", 10, 4, 1, 1, 1, 900, 0));
    add(d, make_run("cluster", "GET", 1, 5, 2, cluster_proxy, 1, 200, 0));
    add(d, make_run("cluster", "pipelined GET", 10, 3, 1, cluster_proxy, 0.5, 800, 0));
    return d;
}

/* ---- math ------------------------------------------------------------------------------------ */

static void test_stat_median_spread(void **state) {
    (void)state;
    cp__rpt_stat s;
    double odd[] = {3, 1, 2};
    cp__rpt_stat_of(odd, 3, &s);
    assert_int_equal(s.n, 3);
    assert_double_eq(s.med, 2);
    assert_double_eq(s.min, 1);
    assert_double_eq(s.max, 3);
    double even[] = {4, 1, 3, 2};
    cp__rpt_stat_of(even, 4, &s);
    assert_double_eq(s.med, 2.5);
    assert_double_eq(s.min, 1);
    assert_double_eq(s.max, 4);
    double holes[] = {NAN, 5, NAN, 7};
    cp__rpt_stat_of(holes, 4, &s);
    assert_int_equal(s.n, 2);
    assert_double_eq(s.med, 6);
    double none[] = {NAN, NAN};
    cp__rpt_stat_of(none, 2, &s);
    assert_int_equal(s.n, 0);
    cp__rpt_stat_of(NULL, 0, &s);
    assert_int_equal(s.n, 0);
    if (!isnan(holes[0])) /* input untouched (still NaN) */
        fail_msg("holes[0] is %g, no longer NaN", holes[0]);
}

static void test_overlap_and_ratio(void **state) {
    (void)state;
    cp__rpt_stat a = {1.5, 1, 2, 3}, b = {2.5, 2, 3, 3}, c = {2.5, 2.1, 3, 3},
                 na = {NAN, NAN, NAN, 0};
    assert_true(cp__rpt_overlap(&a, &b));
    assert_true(cp__rpt_overlap(&b, &a));
    assert_false(cp__rpt_overlap(&a, &c));
    assert_false(cp__rpt_overlap(&a, &na));
    cp__rpt_stat t = {140, 140, 140, 1}, k = {67, 67, 67, 1}, zero = {0, 0, 0, 1};
    assert_double_lt(fabs(cp__rpt_ratio(&k, &t) - 67.0 / 140), 1e-12);
    assert_true(isnan(cp__rpt_ratio(&k, &zero)));
    assert_true(isnan(cp__rpt_ratio(&na, &t)));
    assert_true(isnan(cp__rpt_ratio(&t, &na)));
}

static void test_format(void **state) {
    (void)state;
    char buf[64];
    cp__rpt_stat na = {NAN, NAN, NAN, 0}, one = {12.345, 12.345, 12.345, 1},
                 three = {12.345, 11.9, 12.8, 3};
    cp__rpt_fmt_stat(buf, sizeof(buf), &na, 2, 1);
    assert_string_equal(buf, "n/a");
    cp__rpt_fmt_stat(buf, sizeof(buf), &one, 2, 1);
    assert_string_equal(buf, "12.35");
    cp__rpt_fmt_stat(buf, sizeof(buf), &three, 2, 1);
    assert_string_equal(buf, "12.35 [11.90-12.80]");
    cp__rpt_fmt_stat(buf, sizeof(buf), &three, 2, 0);
    assert_string_equal(buf, "12.35");
    cp__rpt_fmt_value(buf, sizeof(buf), 1234.5, -1);
    assert_string_equal(buf, "1234");
    cp__rpt_fmt_value(buf, sizeof(buf), 12.34, -1);
    assert_string_equal(buf, "12.3");
    cp__rpt_fmt_value(buf, sizeof(buf), 0.1234, -1);
    assert_string_equal(buf, "0.123");
}

/* ---- summary --------------------------------------------------------------------------------- */

static void test_summarize_repeats(void **state) {
    (void)state;
    json_t *d = make_doc(3);
    double tw[] = {10, 12, 11}, cl[] = {5, 6, 7};
    for (int i = 0; i < 3; i++) {
        add(d, make_run("twemproxy", "GET", 1, tw[i], 4, 3, 2, 400, 0));
        add(d, make_run("cluster", "GET", 1, cl[i], 2, NAN, 1, 200, i == 2));
    }
    cp__rpt_summary s;
    char err[256];
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    assert_int_equal(s.ncases, 2);
    assert_int_equal(s.repeat, 3);
    assert_int_equal(s.nruns, 6);
    assert_int_equal(s.nfailed, 1);
    const cp__rpt_case *t = cp__rpt_find(&s, "twemproxy", "GET");
    const cp__rpt_case *c = cp__rpt_find(&s, "cluster", "GET");
    assert_non_null(t);
    assert_non_null(c);
    assert_null(cp__rpt_find(&s, "cluster", "pipelined GET"));
    assert_double_eq(t->m[CP__M_SECONDS].med, 11);
    assert_double_eq(t->m[CP__M_SECONDS].min, 10);
    assert_double_eq(t->m[CP__M_SECONDS].max, 12);
    assert_int_equal(c->nfailed, 1);
    assert_int_equal(c->m[CP__M_CPU_PROXY].n, 0); /* null stays n/a, never 0 */
    /* total CPU absent: the sum of what was measured */
    assert_double_lt(fabs(t->m[CP__M_CPU_TOTAL].med - 9), 1e-9);
    assert_double_lt(fabs(c->m[CP__M_CPU_TOTAL].med - 3), 1e-9);
    /* the representative run is the one with the median time */
    assert_double_eq(json_real_value(json_object_get(c->median_run, "seconds")), 6);
    json_decref(d);
}

static void test_summarize_names_only(void **state) {
    (void)state;
    json_t *d = make_doc(1);
    json_t *r = make_run("twemproxy", "pipelined GET", 10, 3, 1, 1, 1, 100, 0);
    json_object_del(r, "setup");
    json_object_del(r, "call_type");
    add(d, r);
    cp__rpt_summary s;
    char err[256];
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    assert_string_equal(s.cases[0].setup, "twemproxy");
    assert_string_equal(s.cases[0].call, "pipelined GET");
    json_decref(d);
    d = make_doc(1);
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), CP_EINVAL);
    json_decref(d);
}

/* ---- table ----------------------------------------------------------------------------------- */

/* The cell of `line` (a Markdown row) in column col (0-based), trimmed, into out. */
static void cell(const char *line, int col, char *out, size_t len) {
    const char *p = line;
    for (int i = 0; i <= col; i++) {
        p = strchr(p, '|');
        assert_non_null(p);
        p++;
    }
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, "|");
    while (n > 0 && p[n - 1] == ' ')
        n--;
    snprintf(out, len, "%.*s", (int)n, p);
}

/* The first table row after the first occurrence of `after` whose first two cells are c0 and
 * c1 (c1 NULL: any). */
static const char *row(const char *text, const char *after, const char *c0, const char *c1) {
    const char *p = strstr(text, after);
    assert_non_null(p);
    char a[64], b[64];
    for (p = strstr(p, "\n| "); p != NULL; p = strstr(p + 1, "\n| ")) {
        cell(p + 1, 0, a, sizeof(a));
        cell(p + 1, 1, b, sizeof(b));
        if (strcmp(a, c0) == 0 && (c1 == NULL || strcmp(b, c1) == 0))
            return p + 1;
    }
    fail_msg("no row '%s | %s' after '%s' in:\n%s", c0, c1 ? c1 : "*", after, text);
    return NULL;
}

static void test_table_columns_and_na(void **state) {
    (void)state;
    json_t *d = four_cases(NAN);
    cp__rpt_summary s;
    char err[256], c[64];
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    char *t = cp__rpt_table_md(&s);
    assert_non_null(t);
    const char *hdr = strstr(t, "| setup");
    assert_non_null(hdr);
    static const char *cols[] = {
        "setup",        "call type",       "time taken (s)", "Redis CPU-s",
        "client CPU-s", "twemproxy CPU-s", "total CPU-s",    "total CPU (%CPU x s)",
        "ops/s",        "p50 (us)",        "p99 (us)"};
    for (int i = 0; i < 11; i++) {
        cell(hdr, i, c, sizeof(c));
        assert_string_equal(c, cols[i]);
    }
    const char *tg = row(t, "| setup", "twemproxy", "GET");
    cell(tg, 2, c, sizeof(c));
    assert_string_equal(c, "10.00");
    cell(tg, 5, c, sizeof(c));
    assert_string_equal(c, "3.00");
    cell(tg, 6, c, sizeof(c));
    assert_string_equal(c, "9.00");
    cell(tg, 7, c, sizeof(c));
    assert_string_equal(c, "900");
    cell(tg, 8, c, sizeof(c));
    assert_string_equal(c, "1000");
    const char *cg = row(t, "| setup", "cluster", "GET");
    cell(cg, 5, c, sizeof(c));
    assert_string_equal(c, "-"); /* a cluster has no proxy: "-", not 0 */
    cell(cg, 6, c, sizeof(c));
    assert_string_equal(c, "3.00");
    /* CPU per op: 4 CPU-s redis over 10000 ops = 400 us */
    const char *pg = row(t, "per operation", "twemproxy", "GET");
    cell(pg, 2, c, sizeof(c));
    assert_string_equal(c, "1");
    cell(pg, 3, c, sizeof(c));
    assert_string_equal(c, "400.00");
    cell(pg, 7, c, sizeof(c));
    assert_string_equal(c, "1 ok");
    /* ratios: GET time 5/10, CPU 3/9; published 67/140 and 24522/52920 */
    const char *rg = row(t, "cluster / twemproxy", "GET", NULL);
    cell(rg, 1, c, sizeof(c));
    assert_string_equal(c, "0.50x");
    cell(rg, 2, c, sizeof(c));
    assert_string_equal(c, "0.33x");
    cell(rg, 3, c, sizeof(c));
    assert_string_equal(c, "2.00x");
    cell(rg, 5, c, sizeof(c));
    assert_string_equal(c, "0.48x");
    cell(rg, 6, c, sizeof(c));
    assert_string_equal(c, "0.46x");
    const char *rp = row(t, "cluster / twemproxy", "pipelined GET", NULL);
    cell(rp, 5, c, sizeof(c));
    assert_string_equal(c, "0.83x");
    cell(rp, 6, c, sizeof(c));
    assert_string_equal(c, "0.80x");
    assert_non_null(strstr(t, "each case ran once"));
    free(t);
    json_decref(d);
}

static void test_noise_sentence(void **state) {
    (void)state;
    json_t *d = make_doc(3);
    /* time: twemproxy 10..12 vs cluster 11..13 overlaps; p99 400 vs 200 does not */
    for (int i = 0; i < 3; i++) {
        add(d, make_run("twemproxy", "GET", 1, 10 + i, 4, 3, 2, 400, 0));
        add(d, make_run("cluster", "GET", 1, 11 + i, 2, NAN, 1, 200, 0));
    }
    cp__rpt_summary s;
    char err[256];
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    cp__sbuf b = CP__SBUF_INIT;
    cp__rpt_noise(&s, &b);
    char *txt = cp__sbuf_take(&b);
    assert_non_null(strstr(txt, "inside the noise (spreads overlap): GET time taken"));
    const char *out = strstr(txt, "outside it:");
    assert_non_null(out);
    assert_non_null(strstr(out, "GET p99 latency"));
    assert_null(strstr(out, "time taken"));
    free(txt);
    char *t = cp__rpt_table_md(&s);
    assert_non_null(strstr(t, "median of 3 runs"));
    assert_non_null(strstr(t, "11.00 [10.00-12.00]"));
    free(t);
    json_decref(d);
}

/* An external proxy: its CPU is null in every twemproxy run; the table must say n/a. */
static void test_external_proxy_na(void **state) {
    (void)state;
    json_t *d = make_doc(1);
    add(d, make_run("twemproxy", "GET", 1, 10, 4, NAN, 2, 400, 0));
    add(d, make_run("cluster", "GET", 1, 5, 2, NAN, 1, 200, 0));
    cp__rpt_summary s;
    char err[256], c[64];
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    char *t = cp__rpt_table_md(&s);
    cell(row(t, "| setup", "twemproxy", "GET"), 5, c, sizeof(c));
    assert_string_equal(c, "n/a");
    cell(row(t, "per operation", "twemproxy", "GET"), 4, c, sizeof(c));
    assert_string_equal(c, "n/a");
    /* its total lacks the proxy: a lower bound, and no total-CPU ratio against a full total */
    cell(row(t, "| setup", "twemproxy", "GET"), 6, c, sizeof(c));
    assert_string_equal(c, ">= 6.00");
    cell(row(t, "| setup", "cluster", "GET"), 6, c, sizeof(c));
    assert_string_equal(c, "3.00");
    cell(row(t, "cluster / twemproxy", "GET", NULL), 2, c, sizeof(c));
    assert_string_equal(c, "n/a");
    cell(row(t, "cluster / twemproxy", "GET", NULL), 1, c, sizeof(c));
    assert_string_equal(c, "0.50x");
    free(t);
    char *script = cp__rpt_chart_script(&s);
    assert_non_null(strstr(script, "n/a: not measurable"));
    free(script);
    json_decref(d);
}

/* compare --rtt: the emulated wire's CPU stacks in cpu.png's script as its own hatched
 * component, in a column of its own after the total, which does not include it; without a wire
 * the chart has no such component. */
static void test_wire_in_cpu_chart(void **state) {
    (void)state;
    cp__rpt_summary s;
    char err[256];
    json_t *d = four_cases(NAN);
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    char *plain = cp__rpt_chart_script(&s);
    assert_not_contains(plain, "title 'wire");
    free(plain);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(d, "runs"), i, r)
        json_object_set_new(json_object_get(r, "cpu_seconds"), "wire", json_real(0.75));
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    char *script = cp__rpt_chart_script(&s);
    assert_contains(script, "using 7 title 'wire (emulated network; not in the total)'");
    /* twemproxy GET: redis 4, proxy 3, client 2, total 9 (the wire not in it), then the wire */
    assert_contains(script, "\"twemproxy\" \"GET\" 4 3 2 9 0.75\n");
    free(script);
    json_decref(d);
}

/* ---- io and rendering ------------------------------------------------------------------------ */

/* compare --replica-reads: the cluster-replicas rows, their Redis CPU split into the masters'
 * (Redis less replicas) and the replicas' part beside the plain cluster's masters, in table.md
 * and report.md; a document without them gets none of it. */
static void with_replicas(json_t *run, double seconds, double us) {
    json_object_set_new(json_object_get(run, "cpu_seconds"), "replicas", json_real(seconds));
    json_object_set_new(json_object_get(run, "cpu_us_per_op"), "replicas", json_real(us));
}

/* The table.md of the four plain cases (the caller frees it), checked first: neither it nor
 * report.md has the section titled title, nor table.md the column. */
static char *plain_table_lacking(const char *title, const char *column) {
    json_t *plain = four_cases(NAN);
    cp__rpt_summary s;
    char err[256];
    assert_int_equal(cp__rpt_summarize(plain, &s, err, sizeof(err)), 0);
    char *t0 = cp__rpt_table_md(&s);
    assert_null(strstr(t0, title));
    assert_null(strstr(t0, column));
    char *md0 = cp__rpt_report_md(plain, &s, t0, NULL);
    assert_null(strstr(md0, title));
    free(md0);
    json_decref(plain);
    return t0;
}

static void test_replica_reads_rows(void **state) {
    (void)state;
    char *t0 = plain_table_lacking("Reads on replicas", "masters");
    cp__rpt_summary s;
    char err[256];

    json_t *d = four_cases(NAN);
    /* redis 2 s = 200 us/op of which the replicas 1.5 s = 150 us/op: masters 0.5 s, 50 us/op,
     * a quarter of the plain cluster's 200 */
    json_t *g = make_run("cluster-replicas", "GET", 1, 4, 2, NAN, 1, 100, 0);
    with_replicas(g, 1.5, 150);
    add(d, g);
    json_t *pg = make_run("cluster-replicas", "pipelined GET", 10, 3, 1, NAN, 0.5, 700, 0);
    with_replicas(pg, 1, 100); /* all of it: the masters 0 */
    add(d, pg);
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    char *t = cp__rpt_table_md(&s);
    assert_non_null(t);
    /* the first tables are the plain document's, with the new setup's rows (no proxy: "-") */
    const char *end0 = strstr(t0, "| cluster   | pipelined GET |");
    assert_non_null(end0);
    assert_non_null(strstr(t, "| cluster-replicas | GET           |"));
    const char *row = strstr(t, "| cluster-replicas | GET           |");
    char line[512];
    snprintf(line, sizeof(line), "%.*s", (int)strcspn(row, "\n"), row);
    assert_non_null(strstr(line, "|               - |")); /* twemproxy CPU-s */
    /* the replicas table */
    const char *rt = strstr(t, "Reads on replicas (cluster-replicas");
    assert_non_null(rt);
    assert_non_null(strstr(rt, "| call type     | setup            | ops/s | p50 (us) | p99 (us) "
                               "| masters CPU-s | replicas CPU-s | masters us/op | replicas us/op "
                               "| masters us/op vs cluster |"));
    assert_non_null(strstr(rt, "| GET           | cluster          |  2000 |     66.7 |      200 "
                               "|          2.00 |              - |        200.00 |              - "
                               "|                        - |"));
    assert_non_null(strstr(rt, "| GET           | cluster-replicas |  2500 |     33.3 |      100 "
                               "|          0.50 |           1.50 |         50.00 |         150.00 "
                               "|                    0.25x |"));
    assert_non_null(strstr(rt, "| pipelined GET | cluster-replicas |  3333 |      233 |      700 "
                               "|          0.00 |           1.00 |          0.00 |         100.00 "
                               "|                    0.00x |"));
    char *md = cp__rpt_report_md(d, &s, t, NULL);
    assert_non_null(strstr(md, "## Reads on replicas"));
    assert_non_null(strstr(md, "- GET: the masters spend 50.00 us of CPU per op with reads on the "
                               "replicas against 200.00 us when they serve the reads (0.25x), "
                               "the replicas 150.00 us; ops/s 1.25x the plain cluster's."));
    free(md);
    free(t);
    free(t0);
    json_decref(d);
}

/* compare --setups ...,cluster-cached: the cluster-cached rows beside the plain cluster's, with
 * the cache's hit ratio and invalidations and the Redis CPU per op against the cluster's; a
 * document without them gets no such table. */
static void with_cache(json_t *run, double hit_ratio, int invalidations) {
    json_object_set_new(
        run, "client_cache",
        json_pack("{s:f,s:i}", "hit_ratio", hit_ratio, "invalidations", invalidations));
}

static void test_cached_rows(void **state) {
    (void)state;
    free(plain_table_lacking("Client-side cache", "hit ratio"));
    cp__rpt_summary s;
    char err[256];

    json_t *d = four_cases(NAN);
    /* redis 1 s = 100 us/op against the plain cluster's 200: 0.50x */
    json_t *g = make_run("cluster-cached", "GET", 1, 4, 1, NAN, 1, 100, 0);
    with_cache(g, 0.75, 120);
    add(d, g);
    json_t *pg = make_run("cluster-cached", "pipelined GET", 10, 3, 0.25, NAN, 0.5, 700, 0);
    with_cache(pg, 0.5, 0);
    add(d, pg);
    assert_int_equal(cp__rpt_summarize(d, &s, err, sizeof(err)), 0);
    /* a cluster setup: no proxy, so its total CPU is complete */
    const cp__rpt_case *c = cp__rpt_find(&s, "cluster-cached", "GET");
    assert_non_null(c);
    assert_int_equal(c->total_partial, 0);
    assert_double_eq(c->m[CP__M_CACHE_HIT_RATIO].med, 0.75);
    assert_double_eq(c->m[CP__M_CACHE_INVALIDATIONS].med, 120);
    char *t = cp__rpt_table_md(&s);
    assert_non_null(t);
    const char *ct = strstr(t, "Client-side cache (cluster-cached");
    assert_non_null(ct);
    assert_non_null(strstr(ct, "| call type     | setup          | ops/s | p50 (us) | p99 (us) | "
                               "hit ratio | invalidations | Redis us/op | client us/op | Redis "
                               "us/op vs cluster |"));
    assert_non_null(strstr(ct, "| GET           | cluster        |  2000 |     66.7 |      200 | "
                               "        - |             - |      200.00 |       100.00 |         "
                               "             - |"));
    assert_non_null(strstr(ct, "| GET           | cluster-cached |  2500 |     33.3 |      100 | "
                               "    0.750 |           120 |      100.00 |       100.00 |         "
                               "         0.50x |"));
    assert_non_null(strstr(ct, "| pipelined GET | cluster-cached |  3333 |      233 |      700 | "
                               "    0.500 |             0 |       25.00 |        50.00 |         "
                               "         0.25x |"));
    char *md = cp__rpt_report_md(d, &s, t, NULL);
    assert_non_null(strstr(md, "## Client-side cache"));
    assert_non_null(strstr(md, "- GET: the cache answered 75.0% of the reads, the servers "
                               "invalidated 120 keys; Redis spends 100.00 us of CPU per op against "
                               "200.00 us without the cache (0.50x); ops/s 1.25x the plain "
                               "cluster's."));
    free(md);
    free(t);
    json_decref(d);
}

static void test_load_checks_shape(void **state) {
    (void)state;
    char *dir = cp_test_mkdtemp("report-load");
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/results.json", dir);
    json_t *d = four_cases(0), *back = NULL;
    assert_int_equal(cp__json_write_file(path, d, err, sizeof(err)), 0);
    assert_int_equal(cp__rpt_load(path, &back, err, sizeof(err)), 0);
    assert_true(json_equal(d, back));
    json_decref(back);
    json_object_set_new(d, "schema", json_string("clusterpipe.bench/1"));
    assert_int_equal(cp__json_write_file(path, d, err, sizeof(err)), 0);
    assert_int_equal(cp__rpt_load(path, &back, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "not a clusterpipe.compare/1 file"));
    assert_int_equal(cp__write_text(path, "{\"schema\":", 10, err, sizeof(err)), 0);
    assert_int_equal(cp__rpt_load(path, &back, err, sizeof(err)), CP_EIO);
    unlink(path);
    assert_int_equal(cp__rpt_load(path, &back, err, sizeof(err)), CP_EIO);
    json_decref(d);
    rmdir(dir);
    free(dir);
}

static int file_starts_ends(const char *path, const char *start, const char *start2,
                            const char *end) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    int ok_start = strncmp(buf, start, strlen(start)) == 0 ||
                   (start2 && strncmp(buf, start2, strlen(start2)) == 0);
    int ok_end = end == NULL || (n >= strlen(end) && strcmp(buf + n - strlen(end), end) == 0);
    return ok_start && ok_end;
}

static void rm_dir(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_render_all(void **state) {
    (void)state;
    char *dir = cp_test_mkdtemp("report-render");
    json_t *d = four_cases(0);
    cp__rpt_render_out out;
    char err[1024], path[1024];
    assert_int_equal(cp__rpt_render(dir, d, NULL, &out, err, sizeof(err)), 0);
    if (!out.charts_ok)
        fail_msg("charts: %s", out.chart_err);
    for (size_t i = 0; cp__rpt_chart_names[i]; i++) {
        snprintf(path, sizeof(path), "%s/%s.png", dir, cp__rpt_chart_names[i]);
        assert_true(file_starts_ends(path, "\x89PNG\r\n\x1a\n", NULL, NULL));
        snprintf(path, sizeof(path), "%s/%s.svg", dir, cp__rpt_chart_names[i]);
        assert_true(file_starts_ends(path, "<?xml", "<svg", "</svg>"));
        snprintf(path, sizeof(path), "%s/%s.png.tmp", dir, cp__rpt_chart_names[i]);
        assert_int_equal(access(path, F_OK), -1);
    }
    snprintf(path, sizeof(path), "%s/table.md", dir);
    assert_true(file_starts_ends(path, "| setup", NULL, NULL));
    snprintf(path, sizeof(path), "%s/report.md", dir);
    assert_true(file_starts_ends(path, "# Twemproxy vs Redis Cluster", NULL, NULL));
    char *md0 = cp__rpt_report_md(d, &out.summary, out.table_md, NULL);
    assert_non_null(strstr(md0, "](cpu.png)"));
    assert_non_null(strstr(md0, "52920"));
    /* GET: 3/9 CPU here vs 0.46 published; pipelined 1.5/3 vs 0.80 */
    assert_non_null(strstr(md0, "- GET: total CPU cluster/twemproxy 0.33x here vs 0.46x "
                                "published: the same direction as, and a larger gap than"));
    assert_non_null(strstr(md0, "- pipelined GET: total CPU cluster/twemproxy 0.50x here"));
    free(md0);
    cp__rpt_render_out_free(&out);

    /* gnuplot missing: table and report still written, the report says why */
    cp__rpt_chart_opts o = {"/nonexistent/gnuplot", 0, NULL};
    assert_int_equal(cp__rpt_render(dir, d, &o, &out, err, sizeof(err)), 0);
    assert_false(out.charts_ok);
    assert_non_null(strstr(out.chart_err, "gnuplot"));
    char *md = cp__rpt_report_md(d, &out.summary, out.table_md, out.chart_err);
    assert_non_null(strstr(md, "Charts could not be drawn"));
    assert_null(strstr(md, "](cpu.png)"));
    free(md);
    cp__rpt_render_out_free(&out);
    json_decref(d);
    rm_dir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_median_spread),
        cmocka_unit_test(test_overlap_and_ratio),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_summarize_repeats),
        cmocka_unit_test(test_summarize_names_only),
        cmocka_unit_test(test_table_columns_and_na),
        cmocka_unit_test(test_noise_sentence),
        cmocka_unit_test(test_external_proxy_na),
        cmocka_unit_test(test_wire_in_cpu_chart),
        cmocka_unit_test(test_replica_reads_rows),
        cmocka_unit_test(test_cached_rows),
        cmocka_unit_test(test_load_checks_shape),
        cmocka_unit_test(test_render_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
