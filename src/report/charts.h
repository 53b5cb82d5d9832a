/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Charts of a compare run (private to src/report/), drawn by gnuplot (Debian gnuplot-nox) run as
 * a child process: this module writes DIR/charts.gp (a self-contained script with the data
 * inline, so `cd DIR && gnuplot charts.gp` redraws them by hand), runs gnuplot on it with a
 * timeout, and renames the finished files into place. Charts, each as PNG (pngcairo when the
 * gnuplot build has it, else png) and SVG:
 *   cpu.{png,svg}             CPU-seconds stacked by component (redis, twemproxy, client) per case
 *   throughput_p99.{png,svg}  ops/s and p99 latency per case, with min-max bars over repeats
 *   latency.{png,svg}         latency by percentile (median run of each case), log scales
 *
 * The gnuplot child is tracked by its PID only: it gets PR_SET_PDEATHSIG SIGKILL (it dies with
 * the calling thread), is waited for, and on timeout or cancel is killed by that PID and reaped.
 * Blocks the calling thread while gnuplot runs (well under a second for these charts). Never
 * prints; gnuplot's stderr is captured into err on failure.
 */
#ifndef CLUSTERPIPE_REPORT_CHARTS_H
#define CLUSTERPIPE_REPORT_CHARTS_H

#include <signal.h>
#include <stddef.h>

#include "report/summary.h"
#include "util/sbuf.h"

typedef struct cp__rpt_chart_opts {
    const char *gnuplot; /* binary; NULL: "gnuplot" from $PATH */
    int timeout_ms;      /* 0: 60000 */
    /* non-NULL and non-zero: stop gnuplot (by PID) and fail with "interrupted" */
    const volatile sig_atomic_t *cancel;
} cp__rpt_chart_opts;

/* The colour every chart gives a setup ("twemproxy", "cluster", else a third), 0xRRGGBB. */
unsigned cp__rpt_setup_color(const char *setup);

/* The lines of a script that send the next plot to NAME.svg (svg) or NAME.png (pngcairo when
 * the gnuplot build has it) of w x h pixels, with the `suffix` variable appended. */
void cp__rpt_chart_terminal(cp__sbuf *b, int svg, const char *name, int w, int h);

/* Base names of the charts, NULL-terminated: "cpu", "throughput_p99", "latency". */
extern const char *const cp__rpt_chart_names[];

/* The gnuplot script for s, drawing into the current directory; output names get the gnuplot
 * variable `suffix` appended (empty unless set with -e). malloc'd, NULL on OOM. Pure. */
char *cp__rpt_chart_script(const cp__rpt_summary *s);

/* Writes DIR/charts.gp and draws every chart into DIR (atomically: gnuplot writes NAME.tmp,
 * renamed on success; on failure no partial chart is left). Returns 0, CP_EIO (gnuplot missing,
 * failed or timed out; err holds its message) or CP_ENOMEM. */
int cp__rpt_charts(const char *dir, const cp__rpt_summary *s, const cp__rpt_chart_opts *o,
                   char *err, size_t errlen);

/* The drawing step of cp__rpt_charts for any script (scenario charts use it too): writes
 * DIR/script_name atomically, runs gnuplot on it in DIR with -e "suffix='.tmp'" (so the script's
 * outputs must be NAME.png.tmp and NAME.svg.tmp for every NAME in `names`, NULL-terminated, via
 * the `suffix` variable), then renames every output into place once all exist and are
 * non-empty; on failure none is left. Returns 0, CP_EIO (err holds gnuplot's message) or
 * CP_ENOMEM. Blocks while gnuplot runs. */
int cp__rpt_gnuplot(const char *dir, const char *script_name, const char *script,
                    const char *const *names, const cp__rpt_chart_opts *o, char *err,
                    size_t errlen);

#endif /* CLUSTERPIPE_REPORT_CHARTS_H */
