/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Rendering a compare run (private to src/report/; used by `clusterpipe compare` and
 * `clusterpipe report`): from a "clusterpipe.compare/1" document, writes table.md, the charts
 * (report/charts.h) and report.md into one directory, each file atomically. report.md embeds
 * the table and the charts and carries what makes the numbers reproducible and readable: the
 * workload, versions, core count, CPU model, the exact commands, the published experiment being
 * reproduced, and a short "how to read this".
 *
 * Optional fields of the document the renderer uses when present (compare writes them):
 * "command" (string), "repeat" (int), "preset", "mode" ("local" | "external"), "settings"
 * {threads, clients, requests, keys, value_size, pipeline, key_dist, verify, shards, proxies},
 * "environment" {clusterpipe, redis, nutcracker, cores, cpu_model, kernel, date}, "commands"
 * [strings], "load" [{setup, keys, seconds, keys_per_sec}]. Missing ones fall back to the
 * first run's "versions", "machine" and "workload", or are left out.
 *
 * Memory: the caller owns the document; cp__rpt_render_out owns table_md (free it with
 * cp__rpt_render_out_free). Blocks while gnuplot runs. Never prints. One thread per call.
 */
#ifndef CLUSTERPIPE_REPORT_RENDER_H
#define CLUSTERPIPE_REPORT_RENDER_H

#include <stddef.h>

#include <jansson.h>

#include "report/charts.h"
#include "report/summary.h"

typedef struct cp__rpt_render_out {
    cp__rpt_summary summary; /* the cases, for the caller's exit code and messages */
    char *table_md;          /* the table text as written to table.md (caller frees) */
    int charts_ok;           /* 0: charts missing, chart_err says why (table/report still ok) */
    char chart_err[1024];
} cp__rpt_render_out;

/* report.md for the document; chart_err non-NULL: charts could not be drawn, say so instead of
 * embedding them. malloc'd, NULL on OOM. Pure. */
char *cp__rpt_report_md(const json_t *doc, const cp__rpt_summary *s, const char *table_md,
                        const char *chart_err);

/* Writes DIR/table.md, the charts and DIR/report.md. A chart failure (gnuplot missing or
 * failing) is not fatal: out->charts_ok = 0, out->chart_err says why, and report.md says the
 * charts are missing. Returns 0, or CP_EINVAL (no runs, too many cases), CP_EIO (a file could
 * not be written), CP_ENOMEM, with err set. out is always initialised; free it. */
int cp__rpt_render(const char *dir, const json_t *doc, const cp__rpt_chart_opts *chart_opts,
                   cp__rpt_render_out *out, char *err, size_t errlen);

void cp__rpt_render_out_free(cp__rpt_render_out *out);

#endif /* CLUSTERPIPE_REPORT_RENDER_H */
