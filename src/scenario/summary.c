/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The numbers of a scenario case (scenario.h): its summary (what the report shows, from the
 * bench result, its timeline analysed around the event, and the read-back) and the read-back
 * itself, as JSON. Pure: each returns a new jansson reference, the caller's (NULL on OOM); the
 * inputs are borrowed. Any thread.
 */
#include "scenario/scenario.h"

#include <math.h>

static json_t *num_or_null(double v) {
    return isnan(v) ? json_null() : json_real(v);
}

static json_t *phase_json(const cp__scn_phase *p) {
    return json_pack("{s:f,s:f,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "from", p->from, "to", p->to,
                     "seconds", p->seconds, "ops", (json_int_t)p->ops, "errors",
                     (json_int_t)p->errors, "gets", (json_int_t)p->gets, "misses",
                     (json_int_t)p->misses, "stale", (json_int_t)p->stale, "moved",
                     (json_int_t)p->moved, "ask", (json_int_t)p->ask);
}

static double frac(uint64_t a, uint64_t b) {
    return b ? (double)a / (double)b : NAN;
}

/* The seconds wholly inside a fault [from, to] (a partition, a slow link): their median ops/s,
 * the median and worst of their p99s (of the seconds that answered something), against the
 * warm-up's median p99. With the cluster's client link to one master blocked, every request
 * answered in such a second went to another master (none can reach the blocked one), so these
 * p99s are the other shards'. */
#define FAULT_SECONDS_MAX 4096
static json_t *fault_window_json(const cp__bench_second *tl, size_t n, double from, double to) {
    double ops[FAULT_SECONDS_MAX], p99[FAULT_SECONDS_MAX], wp99[FAULT_SECONDS_MAX];
    size_t k = 0, kp = 0, w = 0;
    double worst = NAN;
    for (size_t i = 0; i + 1 < n; i++) { /* the last second may be partial */
        double t = tl[i].t;
        if (t <= from && tl[i].ops > 0 && w < FAULT_SECONDS_MAX)
            wp99[w++] = tl[i].p99_us;
        if (t - 1 < from || t > to || k == FAULT_SECONDS_MAX)
            continue;
        ops[k++] = (double)tl[i].ops;
        if (tl[i].ops == 0)
            continue;
        p99[kp++] = tl[i].p99_us;
        if (isnan(worst) || tl[i].p99_us > worst)
            worst = tl[i].p99_us;
    }
    return json_pack("{s:i,s:o,s:o,s:o,s:o}", "seconds", (int)k, "median_ops",
                     num_or_null(cp__scn_median(ops, k)), "median_p99_us",
                     num_or_null(cp__scn_median(p99, kp)), "worst_p99_us", num_or_null(worst),
                     "warmup_median_p99_us", num_or_null(cp__scn_median(wp99, w)));
}

json_t *cp__scn_summary_json(cp__scn_kind kind, const cp__bench_result *r,
                             const cp__readback_result *rb, int have_rb, double t_start,
                             double t_end, double rate) {
    cp__scn_stats st;
    cp__scn_analyze(r->timeline, r->ntimeline, t_start, t_end, &st);
    json_t *o = json_object();
    if (rate > 0) { /* open loop: what share of the offered load each second answered */
        double at;
        double share = cp__scn_min_answered_share(r->timeline, r->ntimeline, t_start, rate, &at);
        json_object_set_new(o, "offered_rate", json_real(rate));
        json_object_set_new(o, "min_answered_share", num_or_null(share));
        json_object_set_new(o, "min_answered_share_t", num_or_null(at));
    }
    json_object_set_new(o, "requests",
                        json_integer((json_int_t)(r->ops + r->failed_ops + r->unknown_ops)));
    json_object_set_new(o, "ops", json_integer((json_int_t)r->ops));
    json_object_set_new(o, "failed_ops", json_integer((json_int_t)r->failed_ops));
    json_object_set_new(o, "unknown_ops", json_integer((json_int_t)r->unknown_ops));
    json_object_set_new(o, "error_replies", json_integer((json_int_t)r->error_replies));
    json_object_set_new(o, "mismatches", json_integer((json_int_t)r->verify_mismatches));
    json_object_set_new(o, "gets", json_integer((json_int_t)r->gets));
    json_object_set_new(o, "misses", json_integer((json_int_t)r->misses));
    json_object_set_new(o, "stale_reads", json_integer((json_int_t)r->stale_reads));
    json_object_set_new(o, "redirects",
                        json_pack("{s:I,s:I}", "moved", (json_int_t)r->stats.moved, "ask",
                                  (json_int_t)r->stats.ask));
    json_object_set_new(o, "event_start", json_real(t_start));
    json_object_set_new(o, "event_end", json_real(t_end));
    json_object_set_new(o, "event_seconds", json_real(t_end - t_start));
    json_object_set_new(o, "run_seconds", json_real(r->seconds));
    json_object_set_new(o, "event_outlasted_run", json_boolean(t_end > r->seconds));
    json_object_set_new(o, "warmup_median_ops", num_or_null(st.warmup_median_ops));
    json_object_set_new(o, "min_ops", num_or_null(st.min_ops));
    json_object_set_new(o, "min_ops_t", num_or_null(st.min_ops_t));
    json_object_set_new(o, "dip", num_or_null(st.dip));
    json_object_set_new(o, "after_median_ops", num_or_null(st.after_median_ops));
    json_object_set_new(o, "below_half",
                        json_pack("{s:i,s:o,s:o}", "seconds", st.low_seconds, "from",
                                  num_or_null(st.low_from), "to", num_or_null(st.low_to)));
    if (r->first_failure_s >= 0)
        json_object_set_new(o, "error_window",
                            json_pack("{s:f,s:f,s:f}", "first", r->first_failure_s, "last",
                                      r->last_failure_s, "seconds",
                                      r->last_failure_s - r->first_failure_s));
    else
        json_object_set_new(o, "error_window", json_null());
    json_object_set_new(o, "phases",
                        json_pack("{s:o,s:o,s:o}", "before", phase_json(&st.before), "during",
                                  phase_json(&st.during), "after", phase_json(&st.after)));
    /* GET-level: the share of GETs answered nil once the change was over */
    json_object_set_new(o, "miss_fraction_after",
                        num_or_null(frac(st.after.misses, st.after.gets)));
    json_object_set_new(o, "stale_after", json_integer((json_int_t)st.after.stale));
    json_object_set_new(o, "misses_after", json_integer((json_int_t)st.after.misses));
    if (cp__scn_kind_wire(kind))
        json_object_set_new(o, "fault_window",
                            fault_window_json(r->timeline, r->ntimeline, t_start, t_end));
    if (have_rb) {
        /* key-level: of the keys nobody wrote since the change began, the share now unreachable */
        json_object_set_new(o, "miss_fraction_keys",
                            kind == CP__SCN_RESHARD
                                ? num_or_null(frac(rb->untouched_missing, rb->untouched))
                                : json_null());
        json_object_set_new(o, "acked_writes_lost",
                            json_integer((json_int_t)(rb->missing + rb->stale)));
        json_object_set_new(o, "acked_run_writes_lost", json_integer((json_int_t)rb->lost_run));
    }
    return o;
}

json_t *cp__scn_readback_json(const cp__readback_result *rb) {
    json_t *o =
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "keys", (json_int_t)rb->keys,
                  "ok", (json_int_t)rb->ok, "missing", (json_int_t)rb->missing, "stale",
                  (json_int_t)rb->stale, "newer", (json_int_t)rb->newer, "mismatched",
                  (json_int_t)rb->mismatched, "failed", (json_int_t)rb->failed, "lost_run",
                  (json_int_t)rb->lost_run, "untouched", (json_int_t)rb->untouched,
                  "untouched_missing", (json_int_t)rb->untouched_missing, "seconds", rb->seconds);
    if (o != NULL && rb->first_error[0])
        json_object_set_new(o, "first_error", json_string(rb->first_error));
    return o;
}
