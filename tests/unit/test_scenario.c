/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests of the scenario layer's pure parts (no server): option checks, the timeline
 * analysis (phases, warm-up median, dip, seconds below half throughput, a partial last second),
 * and the rendering of a small hand-made document into the gnuplot script and report.md.
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "scenario/scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_opts(void **state) {
    (void)state;
    cp__scn_opts o;
    char err[256];
    cp__scn_opts_init(&o, CP__SCN_RESHARD);
    assert_int_equal(cp__scn_opts_check(&o, err, sizeof(err)), 0);
    assert_false(o.persistence);
    o.warmup_s = o.duration_s;
    assert_int_equal(cp__scn_opts_check(&o, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "--warmup"));
    cp__scn_opts_init(&o, CP__SCN_FAILOVER);
    assert_true(o.persistence);
    o.keys = 3; /* fewer keys than clients: one writer per key is impossible */
    assert_int_equal(cp__scn_opts_check(&o, err, sizeof(err)), CP_EINVAL);
    cp__scn_opts_init(&o, CP__SCN_FAILOVER);
    o.only = "memcached";
    assert_int_equal(cp__scn_opts_check(&o, err, sizeof(err)), CP_EINVAL);
    assert_string_equal(cp__scn_kind_name(CP__SCN_FAILOVER), "failover");
    assert_null(cp__scn_kind_name((cp__scn_kind)7));
    /* the faults on the wire: a wire by default, never none; a delay; the heal inside the run */
    cp__scn_opts_init(&o, CP__SCN_PARTITION);
    assert_int_equal(o.rtt_ns, 100000);
    o.duration_s = 20;
    assert_int_equal(cp__scn_opts_check(&o, err, sizeof(err)), 0);
    o.rtt_ns = 0;
    assert_int_equal(cp__scn_opts_check(&o, err, sizeof(err)), CP_EINVAL);
    assert_contains(err, "--rtt");
    cp__scn_opts_init(&o, CP__SCN_SLOW_LINK);
    assert_string_equal(cp__scn_kind_name(o.kind), "slow-link");
    assert_int_equal(o.delay_ns, 50000000);
    o.duration_s = 13; /* warm-up 5 + down 8: the heal would be the run's end */
    assert_int_equal(cp__scn_opts_check(&o, err, sizeof(err)), CP_EINVAL);
    assert_contains(err, "--down");
    cp__scn_opts_init(&o, CP__SCN_RESHARD);
    assert_int_equal(o.rtt_ns, 0);
}

/* The fault window of a partition: the seconds wholly inside [2.5, 6.2] are (3,4], (4,5],
 * (5,6]; their p99s (of the seconds that answered) against the warm-up's (t <= 2.5). */
static void test_fault_window(void **state) {
    (void)state;
    cp__bench_second tl[9];
    memset(tl, 0, sizeof(tl));
    static const double p99[] = {10, 30, 20, 500, 700, 0, 900, 15, 5};
    static const uint64_t ops[] = {100, 100, 100, 80, 60, 0, 90, 100, 10};
    for (int i = 0; i < 9; i++) {
        tl[i].t = i < 8 ? i + 1 : 8.3; /* a partial last second */
        tl[i].ops = ops[i];
        tl[i].p99_us = p99[i];
    }
    cp__bench_result r;
    memset(&r, 0, sizeof(r));
    r.timeline = tl;
    r.ntimeline = 9;
    r.seconds = 8.3;
    r.first_failure_s = r.last_failure_s = -1;
    json_t *o = cp__scn_summary_json(CP__SCN_PARTITION, &r, NULL, 0, 2.5, 6.2, 0);
    const json_t *fw = json_object_get(o, "fault_window");
    assert_non_null(fw);
    assert_int_equal(json_integer_value(json_object_get(fw, "seconds")), 3);
    assert_double_eq(json_number_value(json_object_get(fw, "median_ops")), 60);
    assert_double_eq(json_number_value(json_object_get(fw, "median_p99_us")), 600);
    assert_double_eq(json_number_value(json_object_get(fw, "worst_p99_us")), 700);
    assert_double_eq(json_number_value(json_object_get(fw, "warmup_median_p99_us")), 20);
    json_decref(o);
    o = cp__scn_summary_json(CP__SCN_FAILOVER, &r, NULL, 0, 2.5, 6.2, 0);
    assert_null(json_object_get(o, "fault_window"));
    json_decref(o);
}

static void test_median(void **state) {
    (void)state;
    double a[] = {5, 1, 3};
    assert_double_eq(cp__scn_median(a, 3), 3);
    double b[] = {4, 1, 3, 2};
    assert_double_eq(cp__scn_median(b, 4), 2.5);
    assert_true(isnan(cp__scn_median(b, 0)));
}

static void test_analyze(void **state) {
    (void)state;
    /* 10 full seconds of 1000 ops, the event at 4.5 s, over at 6.2 s: second 6 drops to 300 ops
     * with errors, misses appear after; a partial last second of 40 ops. */
    cp__bench_second tl[11];
    memset(tl, 0, sizeof(tl));
    for (int i = 0; i < 10; i++) {
        tl[i].t = i + 1;
        tl[i].ops = 1000;
        tl[i].gets = 900;
    }
    tl[4].ops = 900; /* (4, 5]: the event's second, mid 4.5 */
    tl[5].ops = 300;
    tl[5].errors = 50;
    tl[6].errors = 5;
    tl[7].misses = 90;
    tl[8].stale = 3;
    tl[10].t = 10.2;
    tl[10].ops = 40;
    cp__scn_stats st;
    cp__scn_analyze(tl, 11, 4.5, 6.2, &st);
    assert_double_eq(st.warmup_median_ops, 1000); /* seconds 1..4 */
    assert_double_eq(st.min_ops, 300);
    assert_double_eq(st.min_ops_t, 6);
    assert_double_lt(fabs(st.dip - 0.7), 1e-9);
    assert_int_equal(st.low_seconds, 1);
    assert_double_eq(st.low_from, 5);
    assert_double_eq(st.low_to, 6);
    assert_double_eq(st.after_median_ops, 1000); /* seconds starting at >= 7.2: 8, 9, 10 */
    /* phases by the middle of each second: before (0.5..3.5), during (4.5, 5.5), after */
    assert_int_equal(st.before.seconds, 4);
    assert_int_equal(st.during.seconds, 2);
    assert_int_equal(st.after.seconds, 5);
    assert_int_equal(st.during.errors, 50);
    assert_int_equal(st.after.errors, 5);
    assert_int_equal(st.after.misses, 90);
    assert_int_equal(st.after.stale, 3);
    assert_int_equal(st.after.ops, 4 * 1000 + 40); /* the partial second counts in the sums */

    /* no dip at all: never negative, no low seconds */
    cp__scn_analyze(tl, 4, 2.5, 2.5, &st);
    assert_double_eq(st.dip, 0);
    assert_int_equal(st.low_seconds, 0);
    assert_true(isnan(st.low_from));
    /* nothing before the event: unknown dip */
    cp__scn_analyze(tl, 3, 0.2, 0.5, &st);
    assert_true(isnan(st.warmup_median_ops));
    assert_true(isnan(st.dip));
}

/* A document as cp__scn_run writes it, reduced to what the renderers read. */
static json_t *small_doc(void) {
    const char *text =
        "{\"schema\":\"clusterpipe.scenario/1\",\"scenario\":\"failover\","
        "\"command\":\"clusterpipe scenario failover\","
        "\"settings\":{\"keys\":20000,\"value_size\":100,\"duration\":4,\"warmup\":2,"
        "\"ratio\":\"1:9\",\"threads\":2,\"clients\":4,\"pipeline\":4,\"down\":3,"
        "\"persistence\":true},"
        "\"environment\":{\"clusterpipe\":\"0.1.0\",\"redis\":\"7.0.15\",\"cores\":2},"
        "\"cases\":["
        "{\"name\":\"cluster\",\"setup\":\"cluster\",\"killed\":{\"port\":10000,\"pid\":1},"
        "\"events\":[{\"name\":\"killed\",\"t\":2.0},{\"name\":\"replica promoted\",\"t\":5.5},"
        "{\"name\":\"back\",\"t\":6.5}],"
        "\"summary\":{\"requests\":1000,\"failed_ops\":3,\"unknown_ops\":2,\"event_start\":2.0,"
        "\"event_end\":6.5,\"event_seconds\":4.5,\"error_window\":{\"first\":2.1,\"last\":5.2,"
        "\"seconds\":3.1},\"warmup_median_ops\":123456,\"min_ops\":0,\"dip\":1,"
        "\"acked_writes_lost\":0,\"acked_run_writes_lost\":0,\"mismatches\":0},"
        "\"bench\":{\"timeline\":[{\"t\":1,\"ops\":100,\"errors\":0,\"misses\":0,\"stale\":0},"
        "{\"t\":2,\"ops\":90,\"errors\":1,\"misses\":2,\"stale\":3},"
        "{\"t\":2.3,\"ops\":9,\"errors\":0,\"misses\":0,\"stale\":0}]}},"
        "{\"name\":\"twemproxy eject\",\"setup\":\"twemproxy\",\"error\":\"up: no nutcracker\"}"
        "]}";
    json_error_t e;
    json_t *doc = json_loads(text, 0, &e);
    if (doc == NULL)
        fail_msg("%s", e.text);
    return doc;
}

static void test_chart_script(void **state) {
    (void)state;
    json_t *doc = small_doc();
    char *s = cp__scn_chart_script(doc);
    assert_non_null(s);
    assert_non_null(strstr(s, "$d0 << EOD"));
    assert_null(strstr(s, "$d1 << EOD")); /* the case that did not run has no data */
    assert_non_null(strstr(s, "0.500 100 0 0 0"));
    assert_null(strstr(s, " 9 0 0 0")); /* the partial last second is not drawn */
    assert_non_null(strstr(s, "set arrow from 2.000, graph 0"));
    assert_non_null(strstr(s, "set arrow from 6.500, graph 0"));
    assert_non_null(strstr(s, "timeline.png'.suffix"));
    assert_non_null(strstr(s, "timeline.svg'.suffix"));
    assert_null(strstr(s, "set label")); /* no events in the results: no marks */
    free(s);
    /* The run's lifecycle events: a mark each, the failover labelled, a connect not. */
    json_t *evs = json_loads("[{\"t\":3.25,\"type\":\"failover\",\"node\":\"127.0.0.1:10003\","
                             "\"clients\":2},{\"t\":4.5,\"type\":\"connected\",\"node\":"
                             "\"127.0.0.1:10003\",\"clients\":2}]",
                             0, NULL);
    assert_non_null(evs);
    json_object_set_new(json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "bench"),
                        "events", evs);
    s = cp__scn_chart_script(doc);
    assert_non_null(s);
    assert_non_null(strstr(s, "set arrow from 3.250, graph 0.9 to 3.250, graph 1"));
    assert_non_null(strstr(s, "set arrow from 4.500, graph 0.9 to 4.500, graph 1"));
    assert_non_null(strstr(s, "set label 'failover' at 3.250, graph 0.98"));
    assert_null(strstr(s, "set label 'connected'"));
    free(s);
    json_object_set_new(doc, "cases", json_array());
    assert_null(cp__scn_chart_script(doc));
    json_decref(doc);
}

static void test_report_md(void **state) {
    (void)state;
    json_t *doc = small_doc();
    char *md = cp__scn_report_md(doc, NULL);
    assert_non_null(md);
    assert_non_null(strstr(md, "# clusterpipe scenario failover"));
    assert_non_null(strstr(md, "**cluster**: the master on port 10000 was killed"));
    assert_non_null(strstr(md, "its replica was master 3.50 s later"));
    assert_non_null(strstr(md, "from 2.10 s to 5.20 s"));
    assert_non_null(strstr(md, "123,456"));
    assert_non_null(strstr(md, "**twemproxy eject**: did not run to the end: up: no nutcracker"));
    assert_non_null(strstr(md, "append-only file"));
    assert_non_null(strstr(md, "| replica master after (s) | 3.50 | n/a |"));
    assert_non_null(strstr(md, "![timeline](timeline.png)"));
    free(md);
    md = cp__scn_report_md(doc, "gnuplot missing");
    assert_non_null(strstr(md, "The chart could not be drawn: gnuplot missing"));
    assert_null(strstr(md, "![timeline]"));
    free(md);
    json_decref(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opts),      cmocka_unit_test(test_median),
        cmocka_unit_test(test_analyze),   cmocka_unit_test(test_chart_script),
        cmocka_unit_test(test_report_md), cmocka_unit_test(test_fault_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
