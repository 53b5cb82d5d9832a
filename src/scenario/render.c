/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Rendering a scenario document (scenario.h): the timeline chart's gnuplot script (data inline,
 * so `gnuplot timeline.gp` redraws it by hand) drawn with src/report/'s gnuplot runner, and
 * report.md (a factual summary per case, a table of the numbers, the chart, how to read it, the
 * command and the environment), each written atomically with src/report/'s helpers.
 *
 * Reads the document only (borrowed); strings are built in cp__sbuf buffers and handed to the
 * caller (free()) or written and freed here. Never prints. Any thread; blocks while gnuplot runs.
 */
#include "scenario/scenario.h"

#include "report/io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const chart_names[] = {"timeline", NULL};
static const unsigned colors[] = {0x1b9e77, 0xd95f02, 0x7570b3, 0xe7298a};
#define NCOLORS (sizeof(colors) / sizeof(colors[0]))

/* ---- reading the document ------------------------------------------------------------------- */

/* The value at a dotted path ("summary.error_window.first") as a number; NaN when absent/null. */
static double num(const json_t *o, const char *path) {
    char key[64];
    while (o != NULL && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        o = json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return json_is_number(o) ? json_number_value(o) : NAN;
}

static const char *str(const json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* 1 for a fault on the wire (partition, slow-link). */
static int wire_kind(const json_t *doc) {
    const char *k = str(doc, "scenario");
    return strcmp(k, "partition") == 0 || strcmp(k, "slow-link") == 0;
}

/* The scenario's title: what it does under load. */
static const char *title_of(const json_t *doc) {
    const char *k = str(doc, "scenario");
    return strcmp(k, "reshard") == 0     ? "adding a fifth shard under load"
           : strcmp(k, "failover") == 0  ? "killing a server under load"
           : strcmp(k, "partition") == 0 ? "a link that carries nothing, under load"
                                         : "a slow link under load";
}

/* t of the named event of a case, NaN when it did not happen. */
static double event_t(const json_t *c, const char *name) {
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(c, "events"), i, e) {
        if (strcmp(str(e, "name"), name) == 0)
            return num(e, "t");
    }
    return NAN;
}

/* ---- number formatting ---------------------------------------------------------------------- */

typedef struct fbuf {
    char s[64];
} fbuf;

/* Integers with thousands separators (readable at a glance), "n/a" for NaN. */
static fbuf fint(double v) {
    fbuf b;
    if (isnan(v)) {
        snprintf(b.s, sizeof(b.s), "n/a");
        return b;
    }
    char raw[32];
    snprintf(raw, sizeof(raw), "%.0f", fabs(v));
    size_t n = strlen(raw), o = 0;
    if (v < 0)
        b.s[o++] = '-';
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            b.s[o++] = ',';
        b.s[o++] = raw[i];
    }
    b.s[o] = '\0';
    return b;
}

static fbuf fnum(double v, int decimals) {
    fbuf b;
    if (isnan(v))
        snprintf(b.s, sizeof(b.s), "n/a");
    else
        snprintf(b.s, sizeof(b.s), "%.*f", decimals, v);
    return b;
}

static fbuf fpct(double v) {
    fbuf b;
    if (isnan(v))
        snprintf(b.s, sizeof(b.s), "n/a");
    else
        snprintf(b.s, sizeof(b.s), "%.1f%%", v * 100);
    return b;
}

/* ---- chart ---------------------------------------------------------------------------------- */

/* One data block per case: mid-second time, ops, failed, misses, stale. The last entry is left
 * out when it is a partial second (its small count would draw a drop that did not happen). */
static int data_block(cp__sbuf *b, const json_t *c, size_t idx, double *tmax) {
    const json_t *tl = json_object_get(json_object_get(c, "bench"), "timeline");
    size_t n = json_array_size(tl);
    if (n == 0)
        return 0;
    cp__sbuf_printf(b, "# %s: t (middle of the second), ops, failed, misses, stale\n$d%zu << EOD\n",
                    str(c, "name"), idx);
    double prev = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(tl, i);
        double t = num(e, "t");
        if (i + 1 == n && t - prev < 0.999)
            break;
        cp__sbuf_printf(b, "%.3f %.0f %.0f %.0f %.0f\n", (prev + t) / 2, num(e, "ops"),
                        num(e, "errors"), num(e, "misses"), num(e, "stale"));
        prev = t;
        if (t > *tmax)
            *tmax = t;
    }
    cp__sbuf_puts(b, "EOD\n");
    return 1;
}

static void quoted_title(cp__sbuf *b, const char *s) {
    cp__sbuf_puts(b, "'");
    for (; *s; s++)
        cp__sbuf_printf(b, "%c", *s == '\'' ? '"' : *s);
    cp__sbuf_puts(b, "'");
}

/* One panel: column col of every case with data, in the case's colour; with stale (panel 3)
 * stale reads are drawn dashed next to the misses. */
static void panel(cp__sbuf *b, const json_t *cases, const int *has, int col, int stale,
                  const char *title, const char *ylabel) {
    cp__sbuf_printf(b, "set title '%s'\nset ylabel '%s'\nplot ", title, ylabel);
    int first = 1;
    size_t i;
    const json_t *c;
    json_array_foreach(cases, i, c) {
        if (!has[i])
            continue;
        unsigned col_rgb = colors[i % NCOLORS];
        cp__sbuf_printf(b, "%s$d%zu using 1:%d with histeps lw 2 lc rgb '#%06x' title ",
                        first ? "" : ", \\\n     ", i, col, col_rgb);
        quoted_title(b, str(c, "name"));
        if (stale) {
            cp__sbuf_printf(
                b, ", \\\n     $d%zu using 1:5 with histeps lw 2 dt 2 lc rgb '#%06x' title ", i,
                col_rgb);
            char t[96];
            snprintf(t, sizeof(t), "%s stale", str(c, "name"));
            quoted_title(b, t);
        }
        first = 0;
    }
    cp__sbuf_puts(b, "\n");
}

char *cp__scn_chart_script(const json_t *doc) {
    const json_t *cases = json_object_get(doc, "cases");
    size_t n = json_array_size(cases);
    if (n == 0)
        return NULL;
    int *has = calloc(n, sizeof(int));
    if (has == NULL)
        return NULL;
    cp__sbuf b = CP__SBUF_INIT;
    double tmax = 1;
    int any = 0;
    cp__sbuf_printf(&b,
                    "# Timeline of `clusterpipe scenario %s`, written by clusterpipe.\n"
                    "# Redraw by hand: cd to this directory, then `gnuplot timeline.gp`.\n"
                    "if (!exists('suffix')) suffix = ''\n\n",
                    str(doc, "scenario"));
    for (size_t i = 0; i < n; i++)
        any |= has[i] = data_block(&b, json_array_get(cases, i), i, &tmax);
    if (!any) {
        free(has);
        cp__sbuf_free(&b);
        return NULL;
    }
    int reshard = strcmp(str(doc, "scenario"), "reshard") == 0;
    for (int svg = 0; svg < 2; svg++) {
        if (svg)
            cp__sbuf_puts(&b, "\nset terminal svg size 1150,860 dynamic background rgb 'white' "
                              "font 'sans,11' noenhanced\n");
        else
            cp__sbuf_puts(&b, "\nif (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                              "    set terminal pngcairo size 1150,860 background rgb 'white' "
                              "font 'sans,10' noenhanced\n"
                              "} else {\n"
                              "    set terminal png size 1150,860 background rgb 'white' "
                              "noenhanced\n}\n");
        cp__sbuf_printf(&b,
                        "set output 'timeline.%s'.suffix\n"
                        "reset\n"
                        "set grid\n"
                        "set key outside right top vertical\n"
                        "set xrange [0:%g]\n"
                        "set yrange [0:*]\n"
                        "set lmargin at screen 0.08\n"
                        "set rmargin at screen 0.79\n",
                        svg ? "svg" : "png", ceil(tmax));
        /* the events: dashed when the change begins, dotted when it is over */
        size_t i;
        const json_t *c;
        json_array_foreach(cases, i, c) {
            double t0 = num(c, "summary.event_start"), t1 = num(c, "summary.event_end");
            unsigned rgb = colors[i % NCOLORS];
            if (!isnan(t0))
                cp__sbuf_printf(&b,
                                "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead lw 1.5 "
                                "dt 2 lc rgb '#%06x'\n",
                                t0, t0, rgb);
            if (!isnan(t1) && t1 > t0 + 0.05)
                cp__sbuf_printf(&b,
                                "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead lw 1.5 "
                                "dt 3 lc rgb '#%06x'\n",
                                t1, t1, rgb);
        }
        /* the client's lifecycle events (the run's "events"): a thin grey mark each, the
         * failovers and map changes labelled at the top, in the case's colour */
        json_array_foreach(cases, i, c) {
            const json_t *evs = json_object_get(json_object_get(c, "bench"), "events");
            size_t k;
            const json_t *e;
            unsigned rgb = colors[i % NCOLORS];
            json_array_foreach(evs, k, e) {
                double t = num(e, "t");
                const char *type = str(e, "type");
                if (isnan(t))
                    continue;
                cp__sbuf_printf(&b,
                                "set arrow from %.3f, graph 0.9 to %.3f, graph 1 nohead lw 1 "
                                "lc rgb '#%06x'\n",
                                t, t, rgb);
                if (strcmp(type, "failover") == 0 || strcmp(type, "map_changed") == 0 ||
                    strcmp(type, "disconnected") == 0)
                    cp__sbuf_printf(&b,
                                    "set label '%s' at %.3f, graph 0.98 right rotate by 90 "
                                    "font ',7' tc rgb '#%06x'\n",
                                    type, t, rgb);
            }
        }
        cp__sbuf_printf(&b,
                        "set multiplot layout 3,1 title '%s (vertical lines: dashed = %s, "
                        "dotted = %s)'\n"
                        "set xlabel ''\n",
                        title_of(doc),
                        reshard          ? "the change begins"
                        : wire_kind(doc) ? "the fault begins"
                                         : "kill -9",
                        reshard          ? "migration done / proxies back"
                        : wire_kind(doc) ? "healed"
                                         : "the killed server is back");
        panel(&b, cases, has, 2, 0, "answered requests per second", "ops/s");
        panel(&b, cases, has, 3, 0, "failed or unknown requests per second", "requests/s");
        cp__sbuf_puts(&b, "set xlabel 'seconds since the measured run began'\n");
        panel(&b, cases, has, 4, 1, "GETs answered nil (misses) and stale reads per second",
              "GETs/s");
        cp__sbuf_puts(&b, "unset multiplot\nunset output\n");
    }
    free(has);
    return cp__sbuf_take(&b);
}

/* ---- report.md ------------------------------------------------------------------------------ */

/* One sentence (or three) per case saying what happened, with the numbers that say it. */
static void case_story(cp__sbuf *b, const json_t *doc, const json_t *c) {
    const char *name = str(c, "name");
    int reshard = strcmp(str(doc, "scenario"), "reshard") == 0;
    int cluster = strcmp(str(c, "setup"), "cluster") == 0;
    const json_t *err = json_object_get(c, "error");
    cp__sbuf_printf(b, "- **%s**: ", name);
    if (json_object_get(c, "summary") == NULL) {
        cp__sbuf_printf(b, "did not run to the end: %s.\n",
                        json_is_string(err) ? json_string_value(err) : "no measurement");
        return;
    }
    double t0 = num(c, "summary.event_start"), secs = num(c, "summary.event_seconds");
    double failed = num(c, "summary.failed_ops"), unknown = num(c, "summary.unknown_ops");
    double first = num(c, "summary.error_window.first"), last = num(c, "summary.error_window.last");
    if (reshard && cluster)
        cp__sbuf_printf(b,
                        "at %s s a fifth master was added and %s slots moved to it with their "
                        "keys, done %s s later; the client followed %s MOVED and %s ASK "
                        "redirects. ",
                        fnum(t0, 1).s, fint(num(c, "slots_moved")).s, fnum(secs, 1).s,
                        fint(num(c, "summary.redirects.moved")).s,
                        fint(num(c, "summary.redirects.ask")).s);
    else if (reshard)
        cp__sbuf_printf(
            b,
            "at %s s a fifth server was added and the 4 proxies restarted one by one, "
            "all back %s s later. Of the keys nobody wrote after the change began, "
            "%s are no longer found (ketama predicts about 20%% for 4 -> 5 servers); "
            "after the change %s of GETs answered nil, and %s reads returned an "
            "older value than one already acknowledged. ",
            fnum(t0, 1).s, fnum(secs, 1).s, fpct(num(c, "summary.miss_fraction_keys")).s,
            fpct(num(c, "summary.miss_fraction_after")).s, fint(num(c, "summary.stale_reads")).s);
    else if (wire_kind(doc)) {
        const json_t *f = json_object_get(c, "fault");
        int partition = strcmp(str(doc, "scenario"), "partition") == 0;
        cp__sbuf_printf(b,
                        "at %s s the link %s (%s to the %s on port %s) %s for %s s, then "
                        "healed. ",
                        fnum(t0, 1).s, str(f, "link"), str(f, "from"), str(f, "to"),
                        fnum(num(f, "to_port"), 0).s, partition ? "carried nothing" : "was slowed",
                        fnum(secs, 2).s);
        if (partition)
            cp__sbuf_printf(b,
                            "The wire delivered %s bytes on it during the block and %s after "
                            "the heal. ",
                            fint(num(f, "bytes_during")).s, fint(num(f, "bytes_after_heal")).s);
        if (!isnan(num(f, "still_master")))
            cp__sbuf_printf(b,
                            "The master %s master afterwards (the cluster bus is direct: "
                            "the nodes did not see the partition). ",
                            num(f, "still_master") == 1 ? "was still" : "was no longer");
        cp__sbuf_printf(b,
                        "In the seconds wholly inside the fault the load's p99 was %s ms "
                        "(median of the seconds; warm-up %s ms) at a median %s ops/s. ",
                        fnum(num(c, "summary.fault_window.median_p99_us") / 1000, 2).s,
                        fnum(num(c, "summary.fault_window.warmup_median_p99_us") / 1000, 2).s,
                        fint(num(c, "summary.fault_window.median_ops")).s);
    } else {
        double promoted = event_t(c, "replica promoted");
        cp__sbuf_printf(b, "the %s on port %s was killed (SIGKILL) at %s s",
                        cluster ? "master" : "server", fnum(num(c, "killed.port"), 0).s,
                        fnum(t0, 1).s);
        if (!isnan(promoted))
            cp__sbuf_printf(b, "; its replica was master %s s later", fnum(promoted - t0, 2).s);
        cp__sbuf_printf(b, "; it was restarted and back at %s s. ",
                        fnum(num(c, "summary.event_end"), 1).s);
        cp__sbuf_printf(
            b,
            "%s GETs answered nil while it was down and %s after it came back "
            "(%s of GETs), %s stale reads after its return. ",
            fint(num(c, "summary.phases.during.misses")).s, fint(num(c, "summary.misses_after")).s,
            fpct(num(c, "summary.miss_fraction_after")).s, fint(num(c, "summary.stale_after")).s);
    }
    double low = num(c, "summary.below_half.seconds");
    if (low > 0)
        cp__sbuf_printf(b,
                        "Throughput was below half the warm-up median for %s s (from %s s to "
                        "%s s). ",
                        fint(low).s, fnum(num(c, "summary.below_half.from"), 0).s,
                        fnum(num(c, "summary.below_half.to"), 0).s);
    if (failed + unknown > 0 && !isnan(first))
        cp__sbuf_printf(b,
                        "%s requests failed and %s had an unknown outcome, from %s s to %s s "
                        "(a %s s error window). ",
                        fint(failed).s, fint(unknown).s, fnum(first, 2).s, fnum(last, 2).s,
                        fnum(last - first, 2).s);
    else
        cp__sbuf_puts(b, "No request failed. ");
    double offered = num(c, "summary.offered_rate");
    if (!isnan(offered))
        cp__sbuf_printf(b,
                        "Open loop at %s ops/s (half the capacity a closed-loop run measured): "
                        "the worst second after the event answered %s of the offered load. ",
                        fint(offered).s, fpct(num(c, "summary.min_answered_share")).s);
    cp__sbuf_printf(b, "Lowest second: %s ops/s, %s below the warm-up median of %s ops/s. ",
                    fint(num(c, "summary.min_ops")).s, fpct(num(c, "summary.dip")).s,
                    fint(num(c, "summary.warmup_median_ops")).s);
    double lost = num(c, "summary.acked_writes_lost");
    if (!isnan(lost))
        cp__sbuf_printf(b,
                        "Read back afterwards: %s keys lost their last acknowledged write (%s "
                        "of them written during the run). ",
                        fint(lost).s, fint(num(c, "summary.acked_run_writes_lost")).s);
    cp__sbuf_printf(b, "%s replies did not belong to their key.",
                    fint(num(c, "summary.mismatches")).s);
    if (json_is_string(err))
        cp__sbuf_printf(b, " **Error**: %s.", json_string_value(err));
    cp__sbuf_puts(b, "\n");
}

typedef struct row {
    const char *label;
    const char *path;
    int kind; /* 0 integer, 1 seconds (2 decimals), 2 percent, 3 event time, 4 window,
                 5 integer that an older document left out when 0, 6 us shown as ms */
    int when; /* 0 always, 1 reshard only, 2 failover only, 3 partition and slow-link only */
} row;

static const row rows[] = {
    {"requests (every one ended with an outcome)", "summary.requests", 0, 0},
    {"answered", "summary.ops", 0, 0},
    {"failed (not executed or error reply)", "summary.failed_ops", 0, 0},
    {"unknown outcome (connection lost)", "summary.unknown_ops", 0, 0},
    {"wrong replies (verification)", "summary.mismatches", 0, 0},
    {"GETs answered nil (misses)", "summary.misses", 0, 0},
    {"stale reads (older than an acknowledged write)", "summary.stale_reads", 0, 0},
    {"redirects followed: MOVED", "summary.redirects.moved", 0, 0},
    {"redirects followed: ASK", "summary.redirects.ask", 0, 0},
    {"event at (s)", "summary.event_start", 1, 0},
    {"migration done / proxies back after (s)", "summary.event_seconds", 1, 1},
    {"replica master after (s)", "replica promoted", 3, 2},
    {"killed server back after (s)", "summary.event_seconds", 1, 2},
    {"fault lasted (s)", "summary.event_seconds", 1, 3},
    {"bytes through the faulted link during the fault", "fault.bytes_during", 0, 3},
    {"bytes through it after the heal", "fault.bytes_after_heal", 0, 3},
    {"faulted shard's first answer after the heal (s)", "fault.recovered_after", 1, 3},
    {"load p99 in the seconds inside the fault (ms, median)", "summary.fault_window.median_p99_us",
     6, 3},
    {"... the worst of those seconds (ms)", "summary.fault_window.worst_p99_us", 6, 3},
    {"load p99 during the warm-up (ms, median of seconds)",
     "summary.fault_window.warmup_median_p99_us", 6, 3},
    {"load ops/s in the seconds inside the fault (median)", "summary.fault_window.median_ops", 0,
     3},
    {"error window: first to last failure (s)", "summary.error_window", 4, 0},
    {"offered load, open loop (ops/s)", "summary.offered_rate", 0, 2},
    {"worst second's share of the offered load answered", "summary.min_answered_share", 2, 2},
    {"warm-up median (ops/s)", "summary.warmup_median_ops", 0, 0},
    {"lowest second during the event (ops/s)", "summary.min_ops", 0, 0},
    {"throughput dip", "summary.dip", 2, 0},
    {"median after the event (ops/s)", "summary.after_median_ops", 0, 0},
    {"seconds below half the warm-up median (during the event)", "summary.below_half.seconds", 5,
     0},
    {"misses while down", "summary.phases.during.misses", 0, 2},
    {"misses after the event", "summary.misses_after", 0, 0},
    {"GET miss fraction after the event", "summary.miss_fraction_after", 2, 0},
    {"stale reads after the event", "summary.stale_after", 0, 0},
    {"keys unreachable after the change (untouched keys, read back)", "summary.miss_fraction_keys",
     2, 1},
    {"keys read back", "readback.keys", 0, 0},
    {"acknowledged writes lost (read back)", "summary.acked_writes_lost", 0, 0},
    {"... of which written during the run", "summary.acked_run_writes_lost", 0, 0},
    {"keys holding a newer, unacknowledged write", "readback.newer", 0, 0},
};

static void table(cp__sbuf *b, const json_t *doc) {
    const json_t *cases = json_object_get(doc, "cases");
    int reshard = strcmp(str(doc, "scenario"), "reshard") == 0;
    size_t i;
    const json_t *c;
    cp__sbuf_puts(b, "| |");
    json_array_foreach(cases, i, c) cp__sbuf_printf(b, " %s |", str(c, "name"));
    cp__sbuf_puts(b, "\n|---|");
    json_array_foreach(cases, i, c) cp__sbuf_puts(b, "---:|");
    cp__sbuf_puts(b, "\n");
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        const row *w = &rows[r];
        int failover = !reshard && !wire_kind(doc);
        if ((w->when == 1 && !reshard) || (w->when == 2 && !failover) ||
            (w->when == 3 && !wire_kind(doc)))
            continue;
        cp__sbuf_printf(b, "| %s |", w->label);
        json_array_foreach(cases, i, c) {
            if (json_object_get(c, "summary") == NULL) {
                cp__sbuf_puts(b, " n/a |");
                continue;
            }
            double v = w->kind == 3   ? event_t(c, w->path) - num(c, "summary.event_start")
                       : w->kind == 4 ? num(c, "summary.error_window.seconds")
                                      : num(c, w->path);
            if (w->kind == 4 && !isnan(v))
                cp__sbuf_printf(b, " %s (%s - %s) |", fnum(v, 2).s,
                                fnum(num(c, "summary.error_window.first"), 2).s,
                                fnum(num(c, "summary.error_window.last"), 2).s);
            else if (w->kind == 4)
                cp__sbuf_puts(b, " none |");
            else
                cp__sbuf_printf(b, " %s |",
                                w->kind == 5   ? fint(isnan(v) ? 0 : v).s
                                : w->kind == 0 ? fint(v).s
                                : w->kind == 2 ? fpct(v).s
                                : w->kind == 6 ? fnum(v / 1000, 2).s
                                               : fnum(v, 2).s);
        }
        cp__sbuf_puts(b, "\n");
    }
}

/* partition / slow-link: the fault's settings, and each case's probes: every shard's GET round
 * trips through the load's path while the fault lasted. */
static void fault_section(cp__sbuf *b, const json_t *doc) {
    const json_t *set = json_object_get(doc, "settings");
    int partition = strcmp(str(doc, "scenario"), "partition") == 0;
    cp__sbuf_printf(b,
                    "Every link between hosts went through the wire, adding %s ms of round trip; "
                    "the fault lasted %s s. A partition leaves the connections open and new "
                    "ones through the link get no bytes either. In the cluster the client's "
                    "link to a master is also the port its replica replicates from (the nodes "
                    "announce the wire's port), so the partition cuts that master's replication "
                    "too; the cluster bus is direct, so the nodes never see the partition and no "
                    "failover follows, however long it lasts. twemproxy: nutcracker's timeout: "
                    "fails a request its server did not answer in time and closes that server "
                    "connection; without it a request waits as long as the link is cut.\n\n",
                    fnum(num(set, "rtt_ns") / 1e6, 3).s, fnum(num(set, "down"), 0).s);
    if (!partition)
        cp__sbuf_printf(b, "The slowed link gained %s ms each way.\n\n",
                        fnum(num(set, "delay_ns") / 1e6, 1).s);
    cp__sbuf_puts(b, "\n## The fault, probed\n\n"
                     "During the fault every shard got a GET every 50 ms through the load's path "
                     "(cluster: the client's link to its master; twemproxy: the faulted proxy), "
                     "each by its own connection with a 250 ms timeout.\n\n"
                     "| case | shard port | faulted | GETs | answered | unanswered | p50 (ms) | "
                     "p99 (ms) |\n|---|---:|---|---:|---:|---:|---:|---:|\n");
    size_t i, k;
    const json_t *c, *p;
    json_array_foreach(json_object_get(doc, "cases"), i, c) {
        json_array_foreach(json_object_get(json_object_get(c, "fault"), "probes"), k, p) {
            cp__sbuf_printf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", str(c, "name"),
                            fnum(num(p, "port"), 0).s,
                            json_is_true(json_object_get(p, "faulted")) ? "yes" : "no",
                            fint(num(p, "gets")).s, fint(num(p, "answered")).s,
                            fint(num(p, "unanswered")).s, fnum(num(p, "p50_us") / 1000, 2).s,
                            fnum(num(p, "p99_us") / 1000, 2).s);
        }
    }
    cp__sbuf_puts(b, "\n");
}

char *cp__scn_report_md(const json_t *doc, const char *chart_err) {
    cp__sbuf b = CP__SBUF_INIT;
    int reshard = strcmp(str(doc, "scenario"), "reshard") == 0;
    const json_t *set = json_object_get(doc, "settings");
    cp__sbuf_printf(&b, "# clusterpipe scenario %s: %s\n\n", str(doc, "scenario"), title_of(doc));
    /* --command: the templates, and what is not measured without SETs */
    const json_t *cmds = json_object_get(set, "commands");
    char traffic[1024] = "";
    size_t tl = 0;
    for (size_t k = 0; k < json_array_size(cmds) && tl < sizeof(traffic); k++)
        tl += (size_t)snprintf(traffic + tl, sizeof(traffic) - tl, "%s`%s`", k ? ", " : "",
                               json_string_value(json_array_get(cmds, k)));
    char mix[1200];
    if (json_array_size(cmds) > 0)
        snprintf(mix, sizeof(mix), "the commands %.1024s (weights %s)", traffic,
                 str(set, "command_ratio"));
    else
        snprintf(mix, sizeof(mix), "verified SET:GET %s traffic", str(set, "ratio"));
    cp__sbuf_printf(
        &b,
        "Each setup ran alone on this machine: %s keys of %s bytes loaded, then %s s of "
        "%s (%s threads, %s connections, pipeline %s); after %s s %s. %s\n\n",
        fint(num(set, "keys")).s, fint(num(set, "value_size")).s, fnum(num(set, "duration"), 0).s,
        mix, fint(num(set, "threads")).s, fint(num(set, "clients")).s, fint(num(set, "pipeline")).s,
        fnum(num(set, "warmup"), 0).s,
        reshard ? "a fifth shard was added: Redis Cluster got a new master and a fifth of the "
                  "slots moved to it live (from each of the 4 masters); twemproxy got a fifth "
                  "server in every proxy's config and its 4 proxies were restarted one by one "
                  "(nutcracker cannot reload its config or move keys)"
        : wire_kind(doc)
            ? "one link of the emulated network (the wire) was faulted, its connections "
              "left open: Redis Cluster's (one replica per master; closed, then open loop) "
              "link from the client to one master, and twemproxy's link from one proxy to one "
              "redis (with "
              "nutcracker's timeout: set, then without it)"
            : "one master (Redis Cluster, one replica per master) or one server "
              "(twemproxy, with auto_eject_hosts true and false) was killed with SIGKILL, "
              "and restarted later",
        json_array_size(cmds) > 0
            ? "Replies of reads of the keys' values and of counters are checked (the bench's "
              "JSON says which command was verified); without SETs no version is tracked and "
              "nothing is read back, so stale reads and lost writes are not measured."
            : "Every GET reply is checked to belong to its key, every SET's version is tracked "
              "per key, and afterwards every key is read back and compared with its last "
              "acknowledged version.");
    if (!wire_kind(doc) && num(set, "rtt_ns") > 0)
        cp__sbuf_printf(&b,
                        "Every link between hosts went through the wire (`--rtt`), adding %s ms "
                        "of round trip.\n\n",
                        fnum(num(set, "rtt_ns") / 1e6, 3).s);
    if (!reshard && !wire_kind(doc))
        cp__sbuf_printf(&b,
                        "The killed server was restarted %s s after the kill (the cluster's not "
                        "before its replica had taken over). %s\n\n",
                        fnum(num(set, "down"), 0).s,
                        json_is_true(json_object_get(set, "persistence"))
                            ? "Every server keeps an append-only file (appendfsync everysec), so "
                              "a restarted server comes back with what it had written to disk."
                            : "The servers run without persistence, as in the published "
                              "experiment: a restarted server comes back empty.");
    cp__sbuf_puts(&b, "## What happened\n\n");
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(doc, "cases"), i, c) case_story(&b, doc, c);
    if (wire_kind(doc))
        fault_section(&b, doc);
    cp__sbuf_puts(&b, "\n## Timeline\n\n");
    if (chart_err != NULL)
        cp__sbuf_printf(&b, "The chart could not be drawn: %s\n\n", chart_err);
    else
        cp__sbuf_puts(&b, "![timeline](timeline.png)\n\n(also timeline.svg; the data and the "
                          "script are in timeline.gp)\n\n");
    cp__sbuf_puts(&b, "## Numbers\n\n");
    table(&b, doc);
    cp__sbuf_puts(
        &b,
        "\n## How to read this\n\n"
        "- Times are seconds since the measured run began; the per-second counts are of the "
        "requests that ended in that second.\n"
        "- *failed* requests were refused or answered with an error; *unknown* ones were "
        "written and then lost with their connection (they may or may not have run). Both are "
        "what an application would see as errors.\n"
        "- A *miss* is a GET answered nil: every key exists after the load, so a miss is data "
        "the client cannot reach (moved, lost, or on a server that restarted empty). A *stale "
        "read* returned a value older than a write to that key that had been acknowledged before "
        "the read was sent.\n"
        "- *acknowledged writes lost*: keys whose read-back does not show their last "
        "acknowledged version (nil or older). The load's writes count too.\n"
        "- *throughput dip*: the lowest full second from the event until a second after it was "
        "over, against the median of the warm-up seconds.\n");
    if (wire_kind(doc))
        cp__sbuf_puts(&b, "- *load p99 in the seconds inside the fault*: the median (and worst) of "
                          "the per-second p99s of the seconds that lie wholly inside the fault. "
                          "A request counts when it is answered, so in a cluster partition these "
                          "are the other masters' requests (none can reach the blocked one); its "
                          "own requests wait and are answered at the heal, or fail.\n"
                          "- *faulted shard's first answer after the heal*: the probe of the "
                          "faulted shard, GET after GET from the heal on, until one is "
                          "answered.\n");
    if (reshard)
        cp__sbuf_puts(&b, "- *keys unreachable after the change* counts only keys nobody wrote "
                          "after the change began, so writes that recreate keys at their new "
                          "place do not hide the keys ketama moved.\n");
    cp__sbuf_puts(&b, "\n## Reproduce\n\n");
    if (json_is_string(json_object_get(doc, "command")))
        cp__sbuf_printf(&b, "```\n%s\n```\n\n", str(doc, "command"));
    const json_t *env = json_object_get(doc, "environment");
    if (json_is_object(env))
        cp__sbuf_printf(&b,
                        "clusterpipe %s, redis %s, nutcracker %s; %s cores (%s); %s; %s. The "
                        "results are in results.json (schema %s).\n",
                        str(env, "clusterpipe"), str(env, "redis"), str(env, "nutcracker"),
                        fint(num(env, "cores")).s, str(env, "cpu_model"), str(env, "kernel"),
                        str(env, "date"), CP__SCENARIO_SCHEMA);
    return cp__sbuf_take(&b);
}

int cp__scn_render(const char *dir, const json_t *doc, const cp__rpt_chart_opts *co, int *charts_ok,
                   char *chart_err, size_t chart_errlen, char *err, size_t errlen) {
    *charts_ok = 0;
    chart_err[0] = '\0';
    char *script = cp__scn_chart_script(doc);
    if (script == NULL)
        snprintf(chart_err, chart_errlen, "no timeline in the results");
    else if (cp__rpt_gnuplot(dir, "timeline.gp", script, chart_names, co, chart_err,
                             chart_errlen) == 0)
        *charts_ok = 1;
    free(script);
    char *md = cp__scn_report_md(doc, *charts_ok ? NULL : chart_err);
    if (md == NULL) {
        snprintf(err, errlen, "out of memory writing report.md");
        return CP_ENOMEM;
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/report.md", dir);
    int rc = (cp__write_text(path, md, strlen(md), err, errlen) ? CP_EIO : 0);
    free(md);
    return rc;
}
