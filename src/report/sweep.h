/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A compare sweep in the report (private to src/report/): when results.json's settings carry a
 * "sweep" {param, values}, every case is one point of one setup ("twemproxy pipeline=5"), and
 * this module draws them against the swept value (log x when the values span 10x or more):
 *   sweep_cpu.{png,svg}          CPU-us per op of each component, both setups
 *   sweep_perf.{png,svg}         ops/s and p99 latency
 *   sweep_connections.{png,svg}  clients sweeps only: the client connections the redis servers
 *                                hold, and what each costs them
 *   sweep_latency.{png,svg}      rtt sweeps only: p50 and p99 against the round trip (x in us)
 * and writes report.md's "Sweep" section (the charts and a table of the points). Pure over the
 * borrowed document and summary, except the drawing, which runs gnuplot through charts.h. Any
 * thread; never prints.
 */
#ifndef CLUSTERPIPE_REPORT_SWEEP_H
#define CLUSTERPIPE_REPORT_SWEEP_H

#include <stddef.h>

#include <jansson.h>

#include "report/charts.h"
#include "report/summary.h"
#include "util/sbuf.h"

/* The swept parameter's name ("pipeline", ...), NULL when doc is not a sweep. */
const char *cp__rpt_sweep_param(const json_t *doc);

/* The gnuplot script of the sweep charts (malloc'd), NULL when doc is not a sweep or OOM. */
char *cp__rpt_sweep_script(const json_t *doc, const cp__rpt_summary *s);

/* Draws the sweep charts into dir. Returns 0 (also when doc is not a sweep: nothing to draw),
 * else as cp__rpt_gnuplot. */
int cp__rpt_sweep_charts(const char *dir, const json_t *doc, const cp__rpt_summary *s,
                         const cp__rpt_chart_opts *o, char *err, size_t errlen);

/* report.md's "Sweep" section into b (nothing when doc is not a sweep); chart_err non-NULL:
 * the charts could not be drawn, said instead of the images. */
void cp__rpt_sweep_md(cp__sbuf *b, const json_t *doc, const cp__rpt_summary *s,
                      const char *chart_err);

#endif /* CLUSTERPIPE_REPORT_SWEEP_H */
